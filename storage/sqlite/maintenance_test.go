package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	gtc "github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/codec"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// legacyDoc is a v1 document in bucket (a number, a string, or nil for none).
func legacyDoc(ds, id string, bucket any) map[string]any {
	doc := map[string]any{
		"id": id, "datasetName": ds, "status": "draft", "synthQuestion": "Question of " + id,
		"answer": "Answer of " + id, "tags": []any{"Source:SME"}, "totalReferences": 0,
	}
	if bucket != nil {
		doc["bucket"] = bucket
	}
	return doc
}

func newItem(ds, id string) *gtc.Item {
	it := gtc.NewItem(ds, id)
	it.Bucket = gtc.DeriveBucket(ds, id)
	it.UpdatedAt = time.Date(2025, 5, 1, 10, 0, 0, 0, time.UTC)
	return it
}

// body is the canonical document of it, as gtc migrate hands it to ReplaceRaw and MoveRaw.
func body(t *testing.T, it *gtc.Item) map[string]any {
	t.Helper()
	b, err := gtc.DecodeRawObject(codec.ItemStoredJSON(it))
	require.NoError(t, err)
	return b
}

// scanAllRaw reads a raw scan to its end.
func scanAllRaw(t *testing.T, m gtc.Maintenance, datasets []string, limit int) []gtc.RawDoc {
	t.Helper()
	var out []gtc.RawDoc
	cursor := ""
	for {
		page, err := m.ScanRaw(t.Context(), datasets, cursor, limit)
		require.NoError(t, err)
		out = append(out, page.Docs...)
		if page.Next == "" {
			return out
		}
		cursor = page.Next
	}
}

func findRaw(t *testing.T, m gtc.Maintenance, ds, bucket, id string) gtc.RawDoc {
	t.Helper()
	for _, d := range scanAllRaw(t, m, nil, 100) {
		if d.DatasetName() == ds && d.BucketString() == bucket && d.ID == id {
			return d
		}
	}
	t.Fatalf("%s/%s/%s is not scanned", ds, bucket, id)
	return gtc.RawDoc{}
}

// A database written by a build of schema version 1 is upgraded at open and keeps its items.
func TestSchemaUpgradeFromV1(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "gtc.db")
	it := newItem("ds", "kept")
	it.ManualTags = []string{"topic:x"}
	p, err := (&Store{random: rand.Reader, clock: gtc.SystemClock{}}).prepareItem(context.Background(), "create", nil, it)
	require.NoError(t, err)

	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	tx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	require.NoError(t, migrations[0](ctx, tx, migrationEnv{clock: testClock(), random: rand.Reader}))
	_, err = tx.ExecContext(ctx, "PRAGMA user_version = 1")
	require.NoError(t, err)
	var pk int64
	args := append([]any{it.ID, it.DatasetName, it.Bucket}, p.columnArgs()...)
	require.NoError(t, tx.QueryRowContext(ctx, `INSERT INTO items (id, dataset_name, bucket, `+itemColumns+`)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING pk`, args...).Scan(&pk))
	_, err = tx.ExecContext(ctx, `INSERT INTO item_tags (tag, dataset_name, status, item_pk) VALUES ('topic:x', 'ds', 'draft', ?)`, pk)
	require.NoError(t, err)
	require.NoError(t, tx.Commit())
	require.NoError(t, db.Close())

	s := openTest(t, Options{Path: path})
	defer s.Close()
	var v int
	require.NoError(t, s.rdb.QueryRow("PRAGMA user_version").Scan(&v))
	assert.Equal(t, SchemaVersion, v)
	got, err := s.Items().Get(ctx, it.Key())
	require.NoError(t, err)
	assert.Equal(t, p.stored.ETag, got.ETag)
	assert.Equal(t, string(p.doc), string(codec.ItemStoredJSON(got)))
	n, err := s.Items().Count(ctx, gtc.Filter{AllTags: []string{"topic:x"}})
	require.NoError(t, err)
	assert.Equal(t, 1, n)

	require.NoError(t, s.InsertRaw(ctx, legacyDoc("ds", "legacy", 3)))
	n, err = s.Maintenance().CountRaw(ctx, nil)
	require.NoError(t, err)
	assert.Equal(t, 2, n, "the item and the legacy document")
	st, err := s.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, st.Pending)
}

func TestInsertRawRefuses(t *testing.T) {
	s := openTest(t, Options{Path: MemoryPath})
	defer s.Close()
	ctx := t.Context()
	for name, doc := range map[string]map[string]any{
		"nil":               nil,
		"numeric id":        {"id": 7, "datasetName": "ds"},
		"no datasetName":    {"id": "x"},
		"curation document": {"id": "x", "datasetName": "ds", "docType": "curation-instructions"},
		"not encodable":     {"id": "x", "datasetName": "ds", "weight": func() {}},
	} {
		assert.ErrorIs(t, s.InsertRaw(ctx, doc), gtc.ErrInvalidArgument, name)
	}
	err := s.InsertRawBatch(ctx, []map[string]any{legacyDoc("ds", "good", 1), {"id": "bad"}})
	assert.ErrorIs(t, err, gtc.ErrInvalidArgument)
	n, err := s.Maintenance().CountRaw(ctx, nil)
	require.NoError(t, err)
	assert.Zero(t, n, "a refused batch stores nothing")

	require.NoError(t, s.InsertRaw(ctx, map[string]any{"id": "typed", "datasetName": "ds", "docType": nil}))
	require.NoError(t, s.InsertRaw(ctx, map[string]any{"id": "item", "datasetName": "ds", "docType": gtc.DocTypeItem}))
}

func TestScanRawCursors(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "gtc.db")
	s := openTest(t, Options{Path: path})
	for _, id := range []string{"i1", "i2", "i3"} {
		_, err := s.Items().Create(ctx, newItem("a", id))
		require.NoError(t, err)
	}
	require.NoError(t, s.InsertRawBatch(ctx, []map[string]any{
		legacyDoc("a", "r1", 1), legacyDoc("b", "r2", 2), legacyDoc("a", "r3", nil),
	}))
	m := s.Maintenance()

	for _, limit := range []int{0, -1, gtc.MaxQueryLimit + 1} {
		_, err := m.ScanRaw(ctx, nil, "", limit)
		assert.ErrorIs(t, err, gtc.ErrInvalidArgument, "limit %d", limit)
	}
	_, err := m.ScanRaw(ctx, nil, "", gtc.MaxQueryLimit)
	require.NoError(t, err)

	// The items fill the first page exactly; the legacy documents follow on the next.
	first, err := m.ScanRaw(ctx, nil, "", 3)
	require.NoError(t, err)
	require.Len(t, first.Docs, 3)
	require.NotEmpty(t, first.Next)
	second, err := m.ScanRaw(ctx, nil, first.Next, 3)
	require.NoError(t, err)
	assert.Empty(t, second.Next)
	ids := func(docs []gtc.RawDoc) (out []string) {
		for _, d := range docs {
			out = append(out, d.ID)
		}
		return out
	}
	assert.Equal(t, []string{"i1", "i2", "i3"}, ids(first.Docs))
	assert.Equal(t, []string{"r1", "r2", "r3"}, ids(second.Docs))
	assert.Nil(t, second.Docs[2].PartitionKey[1], "an absent bucket is nil")
	assert.Equal(t, json.Number("2"), second.Docs[1].PartitionKey[1])

	only, err := m.ScanRaw(ctx, []string{"a"}, "", 4)
	require.NoError(t, err)
	assert.Equal(t, []string{"i1", "i2", "i3", "r1"}, ids(only.Docs))
	_, err = m.ScanRaw(ctx, []string{"b"}, only.Next, 4)
	assert.ErrorIs(t, err, gtc.ErrInvalidArgument, "a cursor of another dataset list")
	rest, err := m.ScanRaw(ctx, []string{"a", "a"}, only.Next, 4)
	require.NoError(t, err, "an equivalent dataset list")
	assert.Equal(t, []string{"r3"}, ids(rest.Docs))
	assert.Empty(t, rest.Next)

	scan, err := s.Items().Scan(ctx, gtc.ScanSpec{Order: gtc.AnyOrder}, "", 1)
	require.NoError(t, err)
	for name, c := range map[string]string{"item scan cursor": scan.Next, "garbage": "not-a-cursor"} {
		_, err = m.ScanRaw(ctx, nil, c, 3)
		assert.ErrorIs(t, err, gtc.ErrInvalidArgument, name)
	}

	// A scan of nothing but items has no extra page.
	none, err := m.ScanRaw(ctx, []string{"c"}, "", 3)
	require.NoError(t, err)
	assert.Empty(t, none.Docs)
	assert.Empty(t, none.Next)

	require.NoError(t, s.Close())
	s = openTest(t, Options{Path: path})
	defer s.Close()
	again, err := s.Maintenance().ScanRaw(ctx, nil, first.Next, 3)
	require.NoError(t, err, "cursors stay valid across restarts")
	assert.Equal(t, ids(second.Docs), ids(again.Docs))
}

// The raw scan walks the primary key of both tables, with or without a dataset filter, so
// no page sorts and a whole scan reads every row once.
func TestScanRawPlans(t *testing.T) {
	s := openTest(t, Options{Path: MemoryPath})
	defer s.Close()
	for _, table := range []string{"items", "raw_items"} {
		for _, filtered := range []bool{false, true} {
			args := []any{int64(10), 101}
			if filtered {
				args = []any{int64(10), `["a"]`, 101}
			}
			plan := explain(t, s.rdb, sqlText{SQL: rawScanSQL(table, filtered), Args: args})
			assert.Contains(t, plan, "SEARCH "+table+" USING INTEGER PRIMARY KEY (rowid>?)", "%s filtered=%v: %v", table, filtered, plan)
			for _, line := range plan {
				assert.NotContains(t, line, "TEMP B-TREE", "%s filtered=%v", table, filtered)
			}
		}
	}
}

// Legacy documents converted while a scan runs land behind it: every document is read once.
func TestScanRawWhileMigrating(t *testing.T) {
	s := openTest(t, Options{Path: MemoryPath})
	defer s.Close()
	ctx := t.Context()
	_, err := s.Items().Create(ctx, newItem("ds", "current"))
	require.NoError(t, err)
	var docs []map[string]any
	for i, id := range []string{"a", "b", "c", "d", "e"} {
		bucket := any(i)
		if i%2 == 0 {
			bucket = gtc.DeriveBucket("ds", id)
		}
		docs = append(docs, legacyDoc("ds", id, bucket))
	}
	require.NoError(t, s.InsertRawBatch(ctx, docs))
	m := s.Maintenance()
	seen := map[string]int{}
	cursor := ""
	for {
		page, err := m.ScanRaw(ctx, nil, cursor, 2)
		require.NoError(t, err)
		for _, d := range page.Docs {
			seen[d.ID]++
			if _, legacy := d.Body["tags"]; !legacy {
				continue
			}
			conv := newItem("ds", d.ID)
			if d.BucketString() == conv.Bucket {
				_, err = m.ReplaceRaw(ctx, d, body(t, conv))
			} else {
				_, err = m.MoveRaw(ctx, d, body(t, conv))
			}
			require.NoError(t, err)
		}
		if page.Next == "" {
			break
		}
		cursor = page.Next
	}
	assert.Equal(t, map[string]int{"current": 1, "a": 1, "b": 1, "c": 1, "d": 1, "e": 1}, seen)
	n, err := s.Items().Count(ctx, gtc.Filter{})
	require.NoError(t, err)
	assert.Equal(t, 6, n)
}

func TestGetRaw(t *testing.T) {
	s := openTest(t, Options{Path: MemoryPath})
	defer s.Close()
	ctx := t.Context()
	it, err := s.Items().Create(ctx, newItem("ds", "item"))
	require.NoError(t, err)
	require.NoError(t, s.InsertRawBatch(ctx, []map[string]any{legacyDoc("ds", "num", 3), legacyDoc("ds", "none", nil)}))
	m := s.Maintenance()

	got, err := m.GetRaw(ctx, []any{"ds", it.Bucket}, "item")
	require.NoError(t, err)
	assert.Equal(t, it.ETag, got.ETag)
	assert.Equal(t, gtc.IndexVersion, got.IndexVersion)
	assert.Equal(t, body(t, it), got.Body)

	scanned := findRaw(t, m, "ds", "3", "num")
	for _, bucket := range []any{json.Number("3"), 3} {
		got, err = m.GetRaw(ctx, []any{"ds", bucket}, "num")
		require.NoError(t, err, "bucket %#v", bucket)
		assert.Equal(t, scanned, got, "as ScanRaw returns it")
		assert.Zero(t, got.IndexVersion, "a legacy document has no index fields")
	}
	got, err = m.GetRaw(ctx, []any{"ds", nil}, "none")
	require.NoError(t, err)
	assert.Equal(t, "none", got.ID)

	for name, pk := range map[string][]any{
		"another bucket":  {"ds", 4},
		"another dataset": {"other", 3},
		"no bucket":       {"ds", nil},
	} {
		_, err = m.GetRaw(ctx, pk, "num")
		assert.ErrorIs(t, err, gtc.ErrNotFound, name)
	}
	_, err = m.GetRaw(ctx, []any{"ds"}, "num")
	assert.ErrorIs(t, err, gtc.ErrInvalidArgument)
	_, err = m.GetRaw(ctx, []any{7, 3}, "num")
	assert.ErrorIs(t, err, gtc.ErrInvalidArgument)
}

// A legacy copy of an existing item cannot become a second item: nothing changes.
func TestReplaceRawConflict(t *testing.T) {
	s := openTest(t, Options{Path: MemoryPath})
	defer s.Close()
	ctx := t.Context()
	orig := newItem("ds", "x")
	orig.Comment = "the original"
	it, err := s.Items().Create(ctx, orig)
	require.NoError(t, err)
	require.NoError(t, s.InsertRaw(ctx, legacyDoc("ds", "x", it.Bucket)))
	m := s.Maintenance()
	var copyDoc gtc.RawDoc
	for _, d := range scanAllRaw(t, m, nil, 100) {
		if _, legacy := d.Body["tags"]; legacy {
			copyDoc = d
		}
	}
	require.Equal(t, it.Bucket, copyDoc.BucketString(), "the copy is scanned")

	_, err = m.ReplaceRaw(ctx, copyDoc, body(t, newItem("ds", "x")))
	var ce *gtc.ConflictError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, it.Key(), ce.Existing)
	got, err := s.Items().Get(ctx, it.Key())
	require.NoError(t, err)
	assert.Equal(t, it.ETag, got.ETag)
	n, err := m.CountRaw(ctx, nil)
	require.NoError(t, err)
	assert.Equal(t, 2, n, "the legacy copy is kept")
}

// Replacing an item raw keeps its tag rows and status in step with its new content.
func TestReplaceRawOfItemUpdatesIndexes(t *testing.T) {
	s := openTest(t, Options{Path: MemoryPath})
	defer s.Close()
	ctx := t.Context()
	orig := newItem("ds", "x")
	orig.ManualTags = []string{"topic:a", "topic:keep"}
	_, err := s.Items().Create(ctx, orig)
	require.NoError(t, err)
	m := s.Maintenance()
	cur := findRaw(t, m, "ds", orig.Bucket, "x")

	next := newItem("ds", "x")
	next.Status = gtc.StatusApproved
	next.ManualTags = []string{"topic:b", "topic:keep"}
	_, err = m.ReplaceRaw(ctx, cur, body(t, next))
	require.NoError(t, err)
	count := func(f gtc.Filter) int {
		n, err := s.Items().Count(ctx, f)
		require.NoError(t, err)
		return n
	}
	assert.Zero(t, count(gtc.Filter{AllTags: []string{"topic:a"}}))
	assert.Equal(t, 1, count(gtc.Filter{AllTags: []string{"topic:b"}, Statuses: []gtc.Status{gtc.StatusApproved}}))
	assert.Equal(t, 1, count(gtc.Filter{AllTags: []string{"topic:keep"}, Statuses: []gtc.Status{gtc.StatusApproved}}))
	assert.Zero(t, count(gtc.Filter{AllTags: []string{"topic:keep"}, Statuses: []gtc.Status{gtc.StatusDraft}}))
}

// An item can be moved to another bucket too; its tags go with it.
func TestMoveRawOfItem(t *testing.T) {
	s := openTest(t, Options{Path: MemoryPath})
	defer s.Close()
	ctx := t.Context()
	orig := newItem("ds", "x")
	orig.ManualTags = []string{"topic:a"}
	it, err := s.Items().Create(ctx, orig)
	require.NoError(t, err)
	m := s.Maintenance()
	prev := findRaw(t, m, "ds", it.Bucket, "x")
	next := it.Clone()
	next.Bucket = "00000000-0000-4000-8000-000000000001"

	stale := prev
	stale.ETag = `"00000000000000000000000000000000"`
	_, err = m.MoveRaw(ctx, stale, body(t, next))
	assert.ErrorIs(t, err, gtc.ErrPreconditionFailed)

	moved, err := m.MoveRaw(ctx, prev, body(t, next))
	require.NoError(t, err)
	assert.Equal(t, next.Bucket, moved.BucketString())
	k, err := s.Items().Locate(ctx, "ds", "x")
	require.NoError(t, err)
	assert.Equal(t, next.Key(), k)
	_, err = s.Items().Get(ctx, it.Key())
	assert.ErrorIs(t, err, gtc.ErrNotFound)
	n, err := s.Items().Count(ctx, gtc.Filter{AllTags: []string{"topic:a"}})
	require.NoError(t, err)
	assert.Equal(t, 1, n)
}

// A move whose new copy exists while the old one was replaced by another copy keeps both
// and says so.
func TestMoveRawIncomplete(t *testing.T) {
	s := openTest(t, Options{Path: MemoryPath})
	defer s.Close()
	ctx := t.Context()
	require.NoError(t, s.InsertRaw(ctx, legacyDoc("ds", "x", 3)))
	m := s.Maintenance()
	old := findRaw(t, m, "ds", "3", "x")
	conv := newItem("ds", "x")
	_, err := m.MoveRaw(ctx, old, body(t, conv))
	require.NoError(t, err)
	// Another copy appears at the old key (as foreign data can).
	require.NoError(t, s.InsertRaw(ctx, legacyDoc("ds", "x", 3)))

	_, err = m.MoveRaw(ctx, old, body(t, conv))
	var mi *gtc.MoveIncompleteError
	require.ErrorAs(t, err, &mi)
	assert.ErrorIs(t, err, gtc.ErrPreconditionFailed)
	assert.Equal(t, gtc.Key{DatasetName: "ds", Bucket: "3", ID: "x"}, mi.Old)
	assert.Equal(t, conv.Key(), mi.New)
	n, err := m.CountRaw(ctx, nil)
	require.NoError(t, err)
	assert.Equal(t, 2, n, "both copies remain")
}

func TestDuplicateIDs(t *testing.T) {
	s := openTest(t, Options{Path: MemoryPath})
	defer s.Close()
	ctx := t.Context()
	it, err := s.Items().Create(ctx, newItem("ds", "x"))
	require.NoError(t, err)
	require.NoError(t, s.InsertRawBatch(ctx, []map[string]any{
		legacyDoc("ds", "x", 9),
		legacyDoc("ds", "y", "2"), legacyDoc("ds", "y", 1),
		legacyDoc("other", "x", 3), legacyDoc("ds", "z", nil),
	}))
	m := s.Maintenance()
	collect := func(datasets []string) [][]gtc.Key {
		var out [][]gtc.Key
		for keys, err := range m.DuplicateIDs(ctx, datasets) {
			require.NoError(t, err)
			out = append(out, keys)
		}
		return out
	}
	xs := []gtc.Key{it.Key(), {DatasetName: "ds", Bucket: "9", ID: "x"}}
	slices.SortFunc(xs, func(a, b gtc.Key) int { return strings.Compare(a.Bucket, b.Bucket) })
	want := [][]gtc.Key{xs, {{DatasetName: "ds", Bucket: "1", ID: "y"}, {DatasetName: "ds", Bucket: "2", ID: "y"}}}
	assert.Equal(t, want, collect(nil))
	assert.Equal(t, want, collect([]string{"ds"}))
	assert.Empty(t, collect([]string{"other"}))

	for range m.DuplicateIDs(ctx, nil) {
		break // a caller may stop early
	}
}

// Status counts the items written by an older index format as pending, from an index.
func TestPendingCountUsesIndex(t *testing.T) {
	s := openTest(t, Options{Path: MemoryPath})
	defer s.Close()
	ctx := t.Context()
	for _, id := range []string{"old", "new"} {
		_, err := s.Items().Create(ctx, newItem("ds", id))
		require.NoError(t, err)
	}
	// As a build with an older gtc.IndexVersion left it.
	_, err := s.wdb.Exec(`UPDATE items SET index_v = ? WHERE id = 'old'`, gtc.IndexVersion-1)
	require.NoError(t, err)

	st, err := s.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, st.Pending)
	assert.False(t, st.IndexComplete)
	old := findRaw(t, s.Maintenance(), "ds", gtc.DeriveBucket("ds", "old"), "old")
	assert.Equal(t, gtc.IndexVersion-1, old.IndexVersion)

	_, err = s.Maintenance().ReplaceRaw(ctx, old, old.Body)
	require.NoError(t, err)
	st, err = s.Status(ctx)
	require.NoError(t, err)
	assert.Zero(t, st.Pending)
	assert.True(t, st.IndexComplete)

	// Raising gtc.IndexVersion needs a schema migration that recreates items_index_behind
	// with the new bound; until then the count reads the whole table.
	plan := strings.Join(explain(t, s.rdb, sqlText{SQL: pendingSQL}), "\n")
	assert.Contains(t, plan, "items_index_behind", "plan:\n%s", plan)
}

func TestMigrationMarker(t *testing.T) {
	clock := testClock()
	s := openTest(t, Options{Path: MemoryPath, Clock: clock})
	defer s.Close()
	ctx := t.Context()
	st, err := s.Status(ctx)
	require.NoError(t, err)
	assert.Nil(t, st.MigratedAt, "never migrated")
	assert.Equal(t, gtc.StoreStatus{Backend: "sqlite", IndexComplete: true, RegistryComplete: true}, st)

	m := s.Maintenance()
	require.NoError(t, m.WriteMigrationMarker(ctx, "gtc migrate 1.0.0"))
	clock.Advance(time.Hour)
	require.NoError(t, m.WriteMigrationMarker(ctx, "gtc migrate 1.0.1"))
	st, err = s.Status(ctx)
	require.NoError(t, err)
	require.NotNil(t, st.MigratedAt)
	assert.True(t, clock.Now().Truncate(time.Microsecond).Equal(*st.MigratedAt), "the last run counts")
	var v string
	require.NoError(t, s.rdb.QueryRow(`SELECT value FROM meta WHERE key = 'migration_marker'`).Scan(&v))
	var marker map[string]any
	require.NoError(t, json.Unmarshal([]byte(v), &marker))
	assert.Equal(t, "gtc migrate 1.0.1", marker["migratedBy"])
	assert.EqualValues(t, gtc.IndexVersion, marker["indexVersion"])
	require.NoError(t, m.EnsureRegistered(ctx, gtc.Key{DatasetName: "ds", Bucket: "b", ID: "x"}))
}

func TestMaintenanceOnClosedStore(t *testing.T) {
	s := openTest(t, Options{Path: MemoryPath})
	require.NoError(t, s.Close())
	ctx := context.Background()
	m := s.Maintenance()
	_, err := m.ScanRaw(ctx, nil, "", 10)
	assert.ErrorIs(t, err, gtc.ErrUnavailable)
	_, err = m.CountRaw(ctx, nil)
	assert.ErrorIs(t, err, gtc.ErrUnavailable)
	_, err = m.GetRaw(ctx, []any{"ds", "b"}, "x")
	assert.ErrorIs(t, err, gtc.ErrUnavailable)
	_, err = s.Status(ctx)
	assert.ErrorIs(t, err, gtc.ErrUnavailable)
	assert.ErrorIs(t, s.InsertRaw(ctx, legacyDoc("ds", "x", 1)), gtc.ErrUnavailable)
	it := newItem("ds", "x")
	prev := gtc.RawDoc{PartitionKey: []any{"ds", it.Bucket}, ID: "x", Body: body(t, it)}
	_, err = m.ReplaceRaw(ctx, prev, body(t, it))
	assert.ErrorIs(t, err, gtc.ErrUnavailable)
	_, err = m.MoveRaw(ctx, gtc.RawDoc{PartitionKey: []any{"ds", 3}, ID: "x", Body: body(t, it)}, body(t, it))
	assert.ErrorIs(t, err, gtc.ErrUnavailable)
	assert.ErrorIs(t, m.WriteMigrationMarker(ctx, "gtc migrate"), gtc.ErrUnavailable)
	for _, err := range m.DuplicateIDs(ctx, nil) {
		assert.ErrorIs(t, err, gtc.ErrUnavailable)
	}
}

// Deleting a dataset deletes its legacy documents too, so a later gtc migrate cannot bring
// the dataset back.
func TestDeleteDatasetDeletesLegacyDocuments(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{Path: filepath.Join(t.TempDir(), "gtc.db")})
	defer s.Close()
	_, err := s.Items().Create(ctx, newItem("gone", "current"))
	require.NoError(t, err)
	require.NoError(t, s.InsertRaw(ctx, legacyDoc("gone", "legacy", 3)))
	require.NoError(t, s.InsertRaw(ctx, legacyDoc("kept", "legacy", 3)))

	del, err := s.Items().DeleteDataset(ctx, "gone")
	require.NoError(t, err)
	assert.Equal(t, 2, del.Items, "the item and the legacy document")
	n, err := s.Maintenance().CountRaw(ctx, []string{"gone"})
	require.NoError(t, err)
	assert.Zero(t, n)
	n, err = s.Maintenance().CountRaw(ctx, []string{"kept"})
	require.NoError(t, err)
	assert.Equal(t, 1, n)
}
