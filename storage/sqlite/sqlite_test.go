package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gtc "github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/codec"
	"github.com/gtc-dev/gtc/storage/storetest"
	"github.com/gtc-dev/gtc/storage/storetest/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func testClock() *gtc.FakeClock {
	return gtc.NewFakeClock(time.Date(2025, 3, 14, 9, 26, 53, 589793000, time.UTC))
}

func openTest(t testing.TB, opts Options) *Store {
	t.Helper()
	s, err := Open(context.Background(), opts)
	require.NoError(t, err)
	return s
}

// insertRaw stores a legacy fixture of the maintenance behaviours.
func insertRaw(t *testing.T, s gtc.Store, doc map[string]any) {
	t.Helper()
	require.NoError(t, s.(*Store).InsertRaw(t.Context(), doc))
}

// The conformance suite runs on a file and in memory. Its Queries area runs in tests of its
// own, which skip under the race detector: the norace phase of scripts/test.sh runs them
// without it (storetest.AreaQueries says why).
func TestConformanceFile(t *testing.T) { storetest.Run(t, fileHarness(storetest.ExceptQueries)) }

func TestConformanceQueriesFile(t *testing.T) {
	if testenv.RaceEnabled {
		t.Skip("sequential fixtures: run without the race detector (scripts/test.sh, norace phase)")
	}
	storetest.Run(t, fileHarness(storetest.OnlyQueries))
}

func TestConformanceMemory(t *testing.T) { storetest.Run(t, memoryHarness(storetest.ExceptQueries)) }

func TestConformanceQueriesMemory(t *testing.T) {
	if testenv.RaceEnabled {
		t.Skip("sequential fixtures: run without the race detector (scripts/test.sh, norace phase)")
	}
	storetest.Run(t, memoryHarness(storetest.OnlyQueries))
}

func fileHarness(areas func(string) bool) storetest.Harness {
	clock := testClock()
	return storetest.Harness{
		Name:  "sqlite-file",
		Clock: clock,
		Areas: areas,
		New: func(t *testing.T) gtc.Store {
			return openTest(t, Options{Path: filepath.Join(t.TempDir(), "data", "gtc.db"), Clock: clock})
		},
		NewHistory: func(t *testing.T, o gtc.HistoryOptions, c gtc.Clock) gtc.Store {
			return openTest(t, Options{Path: filepath.Join(t.TempDir(), "data", "gtc.db"), Clock: c, History: o})
		},
		Raw: insertRaw,
		// The store notices a removed database file although its descriptors still read the
		// old one (storetest behaviour 39, PingUnavailable).
		Break: func(t *testing.T, s gtc.Store) {
			st := s.(*Store)
			require.NoError(t, os.Remove(st.path))
			require.NoError(t, os.Chmod(filepath.Dir(st.path), 0o000))
			t.Cleanup(func() { _ = os.Chmod(filepath.Dir(st.path), 0o700) })
		},
	}
}

func memoryHarness(areas func(string) bool) storetest.Harness {
	clock := testClock()
	return storetest.Harness{
		Name:  "sqlite-memory",
		Clock: clock,
		Areas: areas,
		// The large fixtures run the same SQL as the file variant, which runs them at full
		// size; what differs in memory is the connection handling every behaviour exercises.
		Scale: 200,
		New: func(t *testing.T) gtc.Store {
			return openTest(t, Options{Path: MemoryPath, Clock: clock})
		},
		NewHistory: func(t *testing.T, o gtc.HistoryOptions, c gtc.Clock) gtc.Store {
			return openTest(t, Options{Path: MemoryPath, Clock: c, History: o})
		},
		Raw: insertRaw,
		// An in-memory database has no file to remove; closing its only pool is the closest
		// thing to the backend going away.
		Break: func(t *testing.T, s gtc.Store) {
			require.NoError(t, s.(*Store).wdb.Close())
		},
	}
}

func TestReopenReadsBack(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "gtc.db")
	s := openTest(t, Options{Path: path})
	it := gtc.NewItem("ds", "keeper")
	it.Bucket = gtc.DeriveBucket("ds", "keeper")
	it.Comment = "survives a restart"
	it.ManualTags = []string{"topic:x"}
	it.UpdatedAt = time.Date(2025, 1, 1, 0, 0, 0, 123456000, time.UTC)
	created, err := s.Items().Create(ctx, it)
	require.NoError(t, err)
	cur, _, err := s.Curation().Put(ctx, &gtc.CurationInstructions{DatasetName: "ds", Instructions: "rules", UpdatedAt: it.UpdatedAt}, "")
	require.NoError(t, err)
	page, err := s.Items().Scan(ctx, gtc.ScanSpec{}, "", 1)
	require.NoError(t, err)
	_, err = s.TagStore().Add(ctx, []string{"custom:kept", "topic:x"})
	require.NoError(t, err)
	def, _, err := s.TagDefinitions().Upsert(ctx, &gtc.TagDefinition{TagKey: "custom:kept", Description: "d",
		CreatedBy: ptrTo("alice@example.com"), CreatedAt: it.UpdatedAt, UpdatedAt: it.UpdatedAt})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	_, err = os.Stat(path + "-wal")
	assert.True(t, os.IsNotExist(err) || fileSize(t, path+"-wal") == 0, "the WAL is checkpointed at close")

	s = openTest(t, Options{Path: path})
	defer s.Close()
	got, err := s.Items().Get(ctx, it.Key())
	require.NoError(t, err)
	assert.Equal(t, created.ETag, got.ETag)
	assert.Equal(t, string(codec.ItemStoredJSON(created)), string(codec.ItemStoredJSON(got)))
	n, err := s.Items().Count(ctx, gtc.Filter{AllTags: []string{"topic:x"}})
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	gotCur, err := s.Curation().Get(ctx, "ds")
	require.NoError(t, err)
	assert.Equal(t, cur.ETag, gotCur.ETag)
	_, err = s.Items().Scan(ctx, gtc.ScanSpec{}, page.Next, 1)
	assert.NoError(t, err, "cursors stay valid across restarts")
	tags, err := s.TagStore().List(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"custom:kept", "topic:x"}, tags)
	gotDef, err := s.TagDefinitions().Get(ctx, "custom:kept")
	require.NoError(t, err)
	assert.Equal(t, def, gotDef, "a definition reads back exactly as Upsert answered it")
}

func fileSize(t *testing.T, path string) int64 {
	fi, err := os.Stat(path)
	require.NoError(t, err)
	return fi.Size()
}

func TestSchemaVersionRefusal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gtc.db")
	s := openTest(t, Options{Path: path})
	require.NoError(t, s.Close())

	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	var v int
	require.NoError(t, db.QueryRow("PRAGMA user_version").Scan(&v))
	assert.Equal(t, SchemaVersion, v, "a new database is at the current schema version")
	_, err = db.Exec(fmt.Sprintf("PRAGMA user_version = %d", SchemaVersion+1))
	require.NoError(t, err)
	require.NoError(t, db.Close())

	_, err = Open(context.Background(), Options{Path: path})
	require.Error(t, err)
	assert.EqualError(t, err, fmt.Sprintf("database schema version %d is newer than this gtc supports (%d)", SchemaVersion+1, SchemaVersion))
	var sv *SchemaVersionError
	require.ErrorAs(t, err, &sv)
	assert.Equal(t, SchemaVersion+1, sv.Found)
}

func TestMigrationsMatchSchemaVersion(t *testing.T) {
	assert.Len(t, migrations, SchemaVersion)
	s := openTest(t, Options{Path: MemoryPath, Clock: testClock()})
	defer s.Close()
	var created, storeID string
	require.NoError(t, s.rdb.QueryRow(`SELECT value FROM meta WHERE key = 'created_at'`).Scan(&created))
	require.NoError(t, s.rdb.QueryRow(`SELECT value FROM meta WHERE key = 'store_id'`).Scan(&storeID))
	assert.Equal(t, "2025-03-14T09:26:53.589793Z", created, "stamped with the injected clock")
	assert.Len(t, storeID, 32)
}

func TestFileModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nested", "data")
	path := filepath.Join(dir, "gtc.db")
	s := openTest(t, Options{Path: path})
	it := gtc.NewItem("ds", "x")
	it.Bucket = gtc.DeriveBucket("ds", "x")
	_, err := s.Items().Create(context.Background(), it)
	require.NoError(t, err)

	fi, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm(), "data directory")
	for _, name := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(name)
		require.NoError(t, err, name)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), name)
	}
	require.NoError(t, s.Close())
}

func TestConnectionSettings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gtc.db")
	s := openTest(t, Options{Path: path, Synchronous: "normal", BusyTimeout: 1500 * time.Millisecond, ReadConnections: 3})
	defer s.Close()
	pragma := func(db *sql.DB, name string) string {
		var v string
		require.NoError(t, db.QueryRow("PRAGMA "+name).Scan(&v), name)
		return v
	}
	for name, db := range map[string]*sql.DB{"writer": s.wdb, "reader": s.rdb} {
		assert.Equal(t, "wal", pragma(db, "journal_mode"), name)
		assert.Equal(t, "1", pragma(db, "synchronous"), "%s: NORMAL", name)
		assert.Equal(t, "1500", pragma(db, "busy_timeout"), name)
		assert.Equal(t, "1", pragma(db, "foreign_keys"), name)
	}
	assert.Equal(t, "1", pragma(s.rdb, "query_only"))
	assert.Equal(t, "0", pragma(s.wdb, "query_only"))
	assert.Equal(t, 1, s.wdb.Stats().MaxOpenConnections)
	assert.Equal(t, 3, s.rdb.Stats().MaxOpenConnections)
	_, err := s.rdb.Exec("DELETE FROM meta")
	assert.Error(t, err, "readers cannot write")

	def := openTest(t, Options{Path: filepath.Join(t.TempDir(), "default.db")})
	defer def.Close()
	assert.Equal(t, "2", pragma(def.wdb, "synchronous"), "FULL by default")
	assert.Equal(t, "5000", pragma(def.wdb, "busy_timeout"))
	assert.Equal(t, DefaultReadConnections, def.rdb.Stats().MaxOpenConnections)

	_, err = Open(context.Background(), Options{Path: filepath.Join(t.TempDir(), "x.db"), Synchronous: "OFF"})
	assert.ErrorIs(t, err, gtc.ErrInvalidArgument)
}

func TestClosedStore(t *testing.T) {
	s := openTest(t, Options{Path: filepath.Join(t.TempDir(), "gtc.db")})
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "Close is idempotent")
	ctx := context.Background()
	it := gtc.NewItem("ds", "x")
	it.Bucket = gtc.DeriveBucket("ds", "x")
	_, err := s.Items().Create(ctx, it)
	assert.ErrorIs(t, err, gtc.ErrUnavailable)
	_, err = s.Items().Get(ctx, it.Key())
	assert.ErrorIs(t, err, gtc.ErrUnavailable)
	_, err = s.Items().Query(ctx, gtc.Query{Sort: gtc.SortID, Limit: 1})
	assert.ErrorIs(t, err, gtc.ErrUnavailable)
	assert.ErrorIs(t, s.Ping(ctx), gtc.ErrUnavailable)
	_, err = s.TagStore().List(ctx)
	assert.ErrorIs(t, err, gtc.ErrUnavailable)
	_, err = s.TagStore().Add(ctx, []string{"topic:x"})
	assert.ErrorIs(t, err, gtc.ErrUnavailable)
	_, err = s.TagDefinitions().Get(ctx, "topic:x")
	assert.ErrorIs(t, err, gtc.ErrUnavailable)
	_, _, err = s.TagDefinitions().Upsert(ctx, &gtc.TagDefinition{TagKey: "topic:x"})
	assert.ErrorIs(t, err, gtc.ErrUnavailable)
	assert.ErrorIs(t, s.TagDefinitions().Delete(ctx, "topic:x"), gtc.ErrUnavailable)
}

// Another process holding the write lock longer than the busy timeout makes writes fail
// with ErrUnavailable, not hang, and the store recovers once the lock is gone.
func TestBusyIsUnavailable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gtc.db")
	s := openTest(t, Options{Path: path, BusyTimeout: 100 * time.Millisecond})
	defer s.Close()
	other, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(100)")
	require.NoError(t, err)
	defer other.Close()
	conn, err := other.Conn(context.Background())
	require.NoError(t, err)
	_, err = conn.ExecContext(context.Background(), "BEGIN IMMEDIATE")
	require.NoError(t, err)

	it := gtc.NewItem("ds", "blocked")
	it.Bucket = gtc.DeriveBucket("ds", "blocked")
	start := time.Now()
	_, err = s.Items().Create(context.Background(), it)
	assert.ErrorIs(t, err, gtc.ErrUnavailable)
	assert.Less(t, time.Since(start), 3*time.Second)

	_, err = conn.ExecContext(context.Background(), "ROLLBACK")
	require.NoError(t, err)
	require.NoError(t, conn.Close())
	_, err = s.Items().Create(context.Background(), it)
	assert.NoError(t, err)
}

// In one group-commit batch, an operation that fails, even after writing, is rolled back
// alone; the others commit.
func TestBatchIsolatesFailures(t *testing.T) {
	s := openTest(t, Options{Path: filepath.Join(t.TempDir(), "gtc.db")})
	defer s.Close()
	ctx := context.Background()
	item := func(id string) *preparedItem {
		it := gtc.NewItem("ds", id)
		it.Bucket = gtc.DeriveBucket("ds", id)
		p, err := s.prepareItem(context.Background(), "create", nil, it)
		require.NoError(t, err)
		return p
	}
	existing := item("existing")
	require.NoError(t, s.write(ctx, "create", func(w *wtx) error { return insertItem(w, &s.stmts, existing) }))

	a, dup, half, b := item("a"), item("existing"), item("half"), item("b")
	errBoom := errors.New("boom")
	ops := []*writeOp{
		{ctx: ctx, name: "a", run: func(w *wtx) error { return insertItem(w, &s.stmts, a) }},
		{ctx: ctx, name: "dup", run: func(w *wtx) error { return insertItem(w, &s.stmts, dup) }},
		{ctx: ctx, name: "half", run: func(w *wtx) error {
			if err := insertItem(w, &s.stmts, half); err != nil {
				return err
			}
			return errBoom // after writing
		}},
		{ctx: ctx, name: "b", run: func(w *wtx) error { return insertItem(w, &s.stmts, b) }},
	}
	for _, op := range ops {
		op.done = make(chan error, 1)
	}
	s.runBatch(ops)
	assert.NoError(t, <-ops[0].done)
	assert.ErrorIs(t, <-ops[1].done, gtc.ErrConflict)
	assert.ErrorIs(t, <-ops[2].done, errBoom)
	assert.NoError(t, <-ops[3].done)

	for id, want := range map[string]bool{"a": true, "b": true, "half": false, "existing": true} {
		_, err := s.Items().Locate(ctx, "ds", id)
		if want {
			assert.NoError(t, err, id)
		} else {
			assert.ErrorIs(t, err, gtc.ErrNotFound, "%s was rolled back", id)
		}
	}
}

// A write whose context ends while it waits for the writer is never run.
func TestCancelledWhileQueued(t *testing.T) {
	s := openTest(t, Options{Path: filepath.Join(t.TempDir(), "gtc.db")})
	defer s.Close()
	release := make(chan struct{})
	started := make(chan struct{})
	go func() {
		_ = s.write(context.Background(), "block", func(*wtx) error {
			close(started)
			<-release
			return nil
		})
	}()
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	it := gtc.NewItem("ds", "late")
	it.Bucket = gtc.DeriveBucket("ds", "late")
	done := make(chan error, 1)
	go func() {
		_, err := s.Items().Create(ctx, it)
		done <- err
	}()
	time.Sleep(20 * time.Millisecond) // let Create queue behind the blocked writer
	cancel()
	err := <-done
	close(release)
	assert.ErrorIs(t, err, context.Canceled)
	_, err = s.Items().Locate(context.Background(), "ds", "late")
	assert.ErrorIs(t, err, gtc.ErrNotFound)
}

func TestErrorMapping(t *testing.T) {
	assert.NoError(t, wrapErr("x", nil))
	err := wrapErr("x", context.Canceled)
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorIs(t, err, gtc.ErrUnavailable)
	err = wrapErr("x", sql.ErrConnDone)
	assert.ErrorIs(t, err, gtc.ErrUnavailable)
	assert.ErrorIs(t, err, sql.ErrConnDone, "the cause is kept")
	nf := fmt.Errorf("y: %w", gtc.ErrNotFound)
	assert.Same(t, nf, wrapErr("x", nf), "store errors pass through")
}

// EXPLAIN QUERY PLAN of the explorer's common shapes: no statement the store runs
// for them may scan the items table without an index.

func explain(t *testing.T, db *sql.DB, q sqlText) []string {
	t.Helper()
	rows, err := db.Query("EXPLAIN QUERY PLAN "+q.SQL, q.Args...)
	require.NoError(t, err, q.SQL)
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		require.NoError(t, rows.Scan(&id, &parent, &notused, &detail))
		plan = append(plan, detail)
	}
	require.NoError(t, rows.Err())
	return plan
}

// fullScans returns the plan lines that read the whole items table without an index.
func fullScans(plan []string) []string {
	var out []string
	for _, line := range plan {
		if (line == "SCAN items" || strings.HasPrefix(line, "SCAN items ")) && !strings.Contains(line, " USING ") {
			out = append(out, line)
		}
	}
	return out
}

func assertIndexed(t *testing.T, db *sql.DB, name string, q sqlText) {
	t.Helper()
	plan := explain(t, db, q)
	if scans := fullScans(plan); len(scans) > 0 {
		t.Errorf("%s: full scan of items without an index:\n%s\nplan:\n  %s", name, q.SQL, strings.Join(plan, "\n  "))
	}
}

func TestExplainQueryPlans(t *testing.T) {
	s := openTest(t, Options{Path: filepath.Join(t.TempDir(), "gtc.db")})
	defer s.Close()
	ctx := context.Background()
	var items []*gtc.Item
	for i := range 300 {
		ds := []string{"alpha", "beta", "gamma"}[i%3]
		it := gtc.NewItem(ds, fmt.Sprintf("id-%03d", i))
		it.Bucket = gtc.DeriveBucket(ds, it.ID)
		it.Status = gtc.Statuses[i%4]
		it.UpdatedAt = time.Date(2025, 1, 1, 0, 0, i, 0, time.UTC)
		it.ManualTags = []string{[]string{"topic:a", "topic:b"}[i%2]}
		if i%5 == 0 {
			it.AssignedTo, it.AssignedAt = ptrTo("me@example.com"), &it.UpdatedAt
		}
		items = append(items, it)
	}
	require.NoError(t, s.items.createMany(ctx, items))

	// The check itself: a keyword count has no index to use and must be caught.
	kw, err := countSQL(gtc.Filter{Keyword: "x"})
	require.NoError(t, err)
	require.NotEmpty(t, fullScans(explain(t, s.rdb, kw)), "the detector must see a full scan")

	draft := []gtc.Status{gtc.StatusDraft}
	shapes := map[string]gtc.Query{
		"dataset":                 {Filter: gtc.Filter{DatasetNames: []string{"beta"}}, Sort: gtc.SortReviewedAt, Desc: true},
		"dataset recent":          {Filter: gtc.Filter{DatasetNames: []string{"beta"}}, Sort: gtc.SortRecent},
		"dataset by id":           {Filter: gtc.Filter{DatasetNames: []string{"beta"}}, Sort: gtc.SortID, Desc: true},
		"dataset prefix":          {Filter: gtc.Filter{DatasetPrefix: "be"}, Sort: gtc.SortUpdatedAt, Desc: true},
		"dataset, tag, no status": {Filter: gtc.Filter{DatasetNames: []string{"beta"}, AllTags: []string{"topic:b"}}, Sort: gtc.SortReviewedAt, Desc: true},
		"dataset and status":      {Filter: gtc.Filter{DatasetNames: []string{"beta"}, Statuses: draft}, Sort: gtc.SortReviewedAt, Desc: true},
		"one tag":                 {Filter: gtc.Filter{AllTags: []string{"topic:a"}}, Sort: gtc.SortReviewedAt, Desc: true},
		"dataset, status and tag": {Filter: gtc.Filter{DatasetNames: []string{"beta"}, Statuses: draft, AllTags: []string{"topic:a"}}, Sort: gtc.SortReviewedAt, Desc: true},
		"queue":                   {Filter: gtc.Filter{AssignedTo: ptrTo("me@example.com"), Statuses: draft}, Sort: gtc.SortAssignedAt},
	}
	for _, k := range []gtc.SortKey{gtc.SortReviewedAt, gtc.SortUpdatedAt, gtc.SortID, gtc.SortHasAnswer, gtc.SortTagCount, gtc.SortReferences} {
		for _, desc := range []bool{false, true} {
			shapes[fmt.Sprintf("status, %s desc=%v", k, desc)] = gtc.Query{Filter: gtc.Filter{Statuses: draft}, Sort: k, Desc: desc}
		}
	}
	for name, q := range shapes {
		q.Limit = 25
		// What the store runs now, on this data...
		page, count, err := s.querySQL(ctx, q)
		require.NoError(t, err, name)
		assertIndexed(t, s.rdb, name+" (count)", count)
		assertIndexed(t, s.rdb, name+" (page)", page)
		// ...and both page plans, whichever the data would pick.
		plans, err := pageStatements(q)
		require.NoError(t, err)
		assertIndexed(t, s.rdb, name+" (filter first)", plans.filterFirst)
		if plans.walk != nil {
			assertIndexed(t, s.rdb, name+" (ordered walk)", *plans.walk)
		}
	}

	for name, e := range map[string]gtc.EligibleSpec{
		"self-serve sample":             {User: "me@example.com"},
		"self-serve sample, one prefix": {User: "me@example.com", DatasetPrefix: "be"},
	} {
		probe := probeSQL(poolConds(e), []any{int64(1), int64(2), int64(3)})
		assert.Equal(t, []string{"SEARCH items USING INTEGER PRIMARY KEY (rowid=?)"}, explain(t, s.rdb, probe), "%s: probes are primary-key lookups", name)
		q := poolSQL(e, 10)
		assertIndexed(t, s.rdb, name, q)
		for _, line := range explain(t, s.rdb, q) {
			assert.NotContains(t, line, "SCAN items", "%s: the pool is found by index ranges, not a scan: %v", name, explain(t, s.rdb, q))
		}
	}

	for name, spec := range map[string]gtc.ScanSpec{
		"export scan":             {Order: gtc.ByDatasetID, Statuses: []gtc.Status{gtc.StatusApproved}, DatasetNames: []string{"beta"}},
		"export scan, one status": {Order: gtc.ByDatasetID, Statuses: []gtc.Status{gtc.StatusApproved}},
		"recompute scan":          {Order: gtc.ByDatasetID},
	} {
		first, err := scanSQL(spec, nil, 100)
		require.NoError(t, err)
		assertIndexed(t, s.rdb, name, first)
		next, err := scanSQL(spec, &gtc.ScanCursor{D: "beta", I: "id-100"}, 100)
		require.NoError(t, err)
		assertIndexed(t, s.rdb, name+" (resumed)", next)
		for _, line := range explain(t, s.rdb, next) {
			assert.NotContains(t, line, "TEMP B-TREE", "%s: an export scan must not sort", name)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }
