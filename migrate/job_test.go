// The fuzz builds (scripts/fuzz.sh, -tags fuzzing) leave these tests out: they run on the
// SQLite store, and a fuzz build instruments every package of the test binary, modernc.org/sqlite
// the largest of them. FuzzConvertIdempotent needs no store.

//go:build !fuzzing

package migrate_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gtc "github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/migrate"
	"github.com/gtc-dev/gtc/storage/sqlite"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// openSQLite opens a store on a real file with the default settings (synchronous=FULL).
func openSQLite(t testing.TB) (*sqlite.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gtc.db")
	st, err := sqlite.Open(context.Background(), sqlite.Options{Path: path})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st, path
}

// legacyDoc is a v1 document: numeric or canonical bucket, mixed tags, question/answer.
func legacyDoc(ds string, i int) map[string]any {
	doc := map[string]any{
		"id": fmt.Sprintf("gt-%05d", i), "datasetName": ds, "status": "draft",
		"synthQuestion": fmt.Sprintf("How do I renew permit %d?", i),
		"answer":        "Use form P-12 from the permits page.",
		"refs":          []any{map[string]any{"url": fmt.Sprintf("https://support.example.com/help/p%d", i), "title": "Permits"}},
		"tags":          []any{"Source:SME", "long_doc", "turns:singleturn"},
		"comment":       nil, "totalReferences": 1,
		"updatedAt": "2025-05-01T10:00:00Z",
	}
	switch i % 3 {
	case 0:
		doc["bucket"] = i % 7 // numeric: the document moves
	case 1:
		doc["bucket"] = gtc.DeriveBucket(ds, doc["id"].(string)) // canonical: converted in place
	}
	return doc
}

func loadLegacy(t testing.TB, st *sqlite.Store, ds string, n int) {
	t.Helper()
	docs := make([]map[string]any, n)
	for i := range n {
		docs[i] = legacyDoc(ds, i)
	}
	for lo := 0; lo < n; lo += 1000 {
		require.NoError(t, st.InsertRawBatch(context.Background(), docs[lo:min(lo+1000, n)]))
	}
}

func newJob(st gtc.Store, env migrate.Env, o migrate.Options) *migrate.Job {
	return &migrate.Job{Store: st, Env: env, Opts: o, RunID: "run-1"}
}

// TestRunMigratesEverythingOnceAndSecondRunChangesNothing: a run over legacy documents
// converts every one (moving those whose bucket is not a UUID), makes them visible to the
// API, cleans the tag store, writes the marker; a second run writes nothing and says so.
func TestRunMigratesEverythingOnceAndSecondRunChangesNothing(t *testing.T) {
	ctx := context.Background()
	st, _ := openSQLite(t)
	loadLegacy(t, st, "support", 30)
	_, err := st.TagStore().Add(ctx, []string{"source:sme", "turns:multiturn", "dataset:support"})
	require.NoError(t, err)
	env := testEnv(t)

	check, err := newJob(st, env, migrate.Options{Check: true}).Run(ctx)
	require.NoError(t, err)
	assert.Equal(t, migrate.ExitWorkToDo, check.ExitCode)
	assert.Equal(t, 30, check.Migrated)
	n, err := st.Items().Count(ctx, gtc.Filter{})
	require.NoError(t, err)
	assert.Zero(t, n, "--check writes nothing")

	sum, err := newJob(st, env, migrate.Options{}).Run(ctx)
	require.NoError(t, err)
	assert.Equal(t, 30, sum.Total)
	assert.Equal(t, 30, sum.Migrated)
	assert.Equal(t, 20, sum.Moved, "numeric and absent buckets move")
	assert.Zero(t, sum.Skipped)
	assert.Empty(t, sum.Errors)
	assert.Equal(t, migrate.ExitOK, sum.ExitCode)
	assert.True(t, sum.Registry.MarkerWritten)
	assert.Equal(t, 30, sum.WarningCounts[migrate.WarnLegacyTagConverted], "long_doc → custom:long_doc in every document")
	assert.ElementsMatch(t, []string{"dataset:support", "turns:multiturn"}, sum.TagStoreRemoved)
	tags, err := st.TagStore().List(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"source:sme"}, tags)

	page, err := st.Items().Query(ctx, gtc.Query{Sort: gtc.SortID, Limit: 100})
	require.NoError(t, err)
	require.Equal(t, 30, page.Total, "every converted document is visible to the API")
	first := page.Items[0]
	assert.Equal(t, "gt-00000", first.ID)
	assert.Equal(t, gtc.DeriveBucket("support", "gt-00000"), first.Bucket)
	assert.Equal(t, []string{"custom:long_doc", "source:sme"}, first.ManualTags)
	assert.Contains(t, first.ComputedTags, "turns:singleturn")
	assert.Equal(t, "How do I renew permit 0?", gtc.QuestionText(first))
	assert.Equal(t, 1, gtc.ReferenceCount(first))
	assert.Equal(t, time.Date(2025, 5, 1, 10, 0, 0, 0, time.UTC), first.UpdatedAt, "updatedAt keeps its legacy value")

	status, err := st.Status(ctx)
	require.NoError(t, err)
	assert.True(t, status.IndexComplete)
	assert.Equal(t, 0, status.Pending)

	again, err := newJob(st, env, migrate.Options{}).Run(ctx)
	require.NoError(t, err)
	assert.Equal(t, 30, again.Total)
	assert.Zero(t, again.Migrated, "a second run changes nothing")
	assert.Equal(t, 30, again.Skipped)
	assert.Empty(t, again.TagStoreRemoved)
	page2, err := st.Items().Query(ctx, gtc.Query{Sort: gtc.SortID, Limit: 100})
	require.NoError(t, err)
	for i := range page.Items {
		assert.Equal(t, page.Items[i].ETag, page2.Items[i].ETag, "%s was not rewritten", page.Items[i].ID)
	}
}

// TestDryRunReportsEveryDocumentAndWritesNothing: one diff line per document that would
// change, with its warnings; the store is untouched.
func TestDryRunReportsEveryDocumentAndWritesNothing(t *testing.T) {
	ctx := context.Background()
	st, _ := openSQLite(t)
	loadLegacy(t, st, "support", 3)
	var reports []migrate.DocReport
	job := newJob(st, testEnv(t), migrate.Options{DryRun: true})
	job.Hooks.Document = func(d migrate.DocReport) { reports = append(reports, d) }
	sum, err := job.Run(ctx)
	require.NoError(t, err)
	assert.True(t, sum.DryRun)
	assert.Equal(t, 3, sum.Migrated)
	assert.False(t, sum.Registry.MarkerWritten)
	require.Len(t, reports, 3)
	line := migrate.DiffLine(reports[0], false)
	assert.Regexp(t, `^~ support/0/gt-00000  legacy → v2`, line)
	assert.Contains(t, line, "    warning LEGACY_TAG_CONVERTED: ")
	n, err := st.Maintenance().CountRaw(ctx, nil)
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	status, err := st.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, 3, status.Pending, "a dry run writes nothing")
}

// TestInvalidDocumentIsReportedAndLeftAlone: a document error does not stop the run, the
// marker is not written, the exit code is 1.
func TestInvalidDocumentIsReportedAndLeftAlone(t *testing.T) {
	ctx := context.Background()
	st, _ := openSQLite(t)
	loadLegacy(t, st, "support", 4)
	bad := legacyDoc("support", 99)
	bad["toolCalls"] = []any{map[string]any{"name": ""}}
	require.NoError(t, st.InsertRaw(ctx, bad))
	sum, err := newJob(st, testEnv(t), migrate.Options{}).Run(ctx)
	require.NoError(t, err)
	assert.Equal(t, 5, sum.Total)
	assert.Equal(t, 4, sum.Migrated)
	require.Len(t, sum.Errors, 1)
	assert.Regexp(t, `^support/gt-00099: INVALID_DOCUMENT: toolCalls\[0\]\.name`, sum.Errors[0])
	assert.Equal(t, migrate.ExitItemsFailed, sum.ExitCode)
	assert.False(t, sum.Registry.MarkerWritten, "no marker while a document failed")
	status, err := st.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, status.Pending, "the bad document is still there, untouched")
}

// TestResumeRereadsAtMostOneBatch: a run stopped after some batches resumes from its
// checkpoint; the resumed run reads no document of a finished batch again.
func TestResumeRereadsAtMostOneBatch(t *testing.T) {
	ctx := context.Background()
	st, _ := openSQLite(t)
	const n, batch = 500, 50
	loadLegacy(t, st, "support", n)
	env := testEnv(t)
	cf := &migrate.CheckpointFile{Path: filepath.Join(t.TempDir(), "cp.json"), Scope: migrate.NewScope(nil, nil, false)}

	stopCtx, stop := context.WithCancel(ctx)
	job := newJob(st, env, migrate.Options{BatchSize: batch, Checkpoint: cf})
	batches := 0
	job.Hooks.BatchDone = func() {
		if batches++; batches == 4 {
			stop() // like Ctrl-C during the fourth batch: it finishes, then the run stops
		}
	}
	first, err := job.Run(stopCtx)
	require.NoError(t, err)
	assert.True(t, first.Interrupted)
	assert.Equal(t, 4*batch, first.Total)
	cp, ok := cf.Load()
	require.True(t, ok)
	assert.Equal(t, migrate.PhaseItems, cp.Phase)
	assert.Equal(t, 4*batch, cp.Counters.Total)

	var read atomic.Int64
	counting := &hookedStore{Store: st, afterScan: func(p gtc.RawPage) { read.Add(int64(len(p.Docs))) }}
	resumed, err := (&migrate.Job{Store: counting, Env: env, Opts: migrate.Options{BatchSize: batch, Checkpoint: cf}, RunID: "run-2"}).Run(ctx)
	require.NoError(t, err)
	require.NotNil(t, resumed.ResumedFrom)
	assert.Equal(t, "run-1", *resumed.ResumedFrom)
	assert.Equal(t, n, resumed.Total, "counters carry on")
	assert.Equal(t, n, resumed.Migrated)
	t.Logf("the resumed run read %d documents; %d were left", read.Load(), n-4*batch)
	assert.LessOrEqual(t, int(read.Load()), n-4*batch+batch, "the resumed run re-reads at most one batch")
	assert.True(t, resumed.Registry.MarkerWritten)
	cp, _ = cf.Load()
	assert.Equal(t, migrate.PhaseDone, cp.Phase)
	status, err := st.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, 0, status.Pending)
}

// TestConcurrentAPIWriteIsNotLost: an API write that lands between the job's read and its
// write makes the conditional write fail; the job reads again and keeps the API's change.
func TestConcurrentAPIWriteIsNotLost(t *testing.T) {
	ctx := context.Background()
	st, path := openSQLite(t)
	var keys []gtc.Key
	for i := range 5 {
		it := gtc.NewItem("support", fmt.Sprintf("item-%d", i))
		it.Bucket = gtc.DeriveBucket("support", it.ID)
		it.History = []gtc.HistoryEntry{{Role: "user", Msg: "Question?"}}
		it.UpdatedAt = runStart
		out, err := st.Items().Create(ctx, it)
		require.NoError(t, err)
		keys = append(keys, out.Key())
	}
	// Documents written by an older release: their index fields are of version 0, so the
	// job rewrites them although their content is current.
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	_, err = db.Exec(`UPDATE items SET index_v = 0`)
	require.NoError(t, err)
	require.NoError(t, db.Close())

	var once sync.Once
	var raced atomic.Bool
	racer := &hookedStore{Store: st, beforeReplace: func(prev gtc.RawDoc) {
		if prev.ID != keys[2].ID {
			return
		}
		once.Do(func() {
			_, err := gtc.Update(ctx, st.Items(), keys[2], func(cur *gtc.Item) (*gtc.Item, error) {
				cur.Comment = "edited by a curator during the migration"
				return cur, nil
			})
			require.NoError(t, err)
			raced.Store(true)
		})
	}}
	sum, err := newJob(racer, testEnv(t), migrate.Options{}).Run(ctx)
	require.NoError(t, err)
	assert.Empty(t, sum.Errors)
	assert.Equal(t, 5, sum.Total)
	assert.True(t, raced.Load(), "the API write landed between the job's read and write")
	got, err := st.Items().Get(ctx, keys[2])
	require.NoError(t, err)
	assert.Equal(t, "edited by a curator during the migration", got.Comment, "the API's change survives")
	status, err := st.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, 0, status.Pending)
}

// hookedStore lets a test watch the job's raw reads and step in before its raw writes.
type hookedStore struct {
	gtc.Store
	afterScan     func(gtc.RawPage) // optional
	beforeReplace func(gtc.RawDoc)  // optional
}

func (h *hookedStore) Maintenance() gtc.Maintenance { return hookedMaint{h.Store.Maintenance(), h} }

type hookedMaint struct {
	gtc.Maintenance
	h *hookedStore
}

func (m hookedMaint) ScanRaw(ctx context.Context, ds []string, cursor string, limit int) (gtc.RawPage, error) {
	p, err := m.Maintenance.ScanRaw(ctx, ds, cursor, limit)
	if m.h.afterScan != nil {
		m.h.afterScan(p)
	}
	return p, err
}

func (m hookedMaint) ReplaceRaw(ctx context.Context, prev gtc.RawDoc, body map[string]any) (gtc.RawDoc, error) {
	if m.h.beforeReplace != nil {
		m.h.beforeReplace(prev)
	}
	return m.Maintenance.ReplaceRaw(ctx, prev, body)
}

// TestLimitStopsAfterNWritesAndTheNextRunContinues: a canary run writes exactly --limit
// documents, does not write the marker, and the next run picks up the rest.
func TestLimitStopsAfterNWritesAndTheNextRunContinues(t *testing.T) {
	ctx := context.Background()
	st, _ := openSQLite(t)
	loadLegacy(t, st, "support", 25)
	env := testEnv(t)
	cf := &migrate.CheckpointFile{Path: filepath.Join(t.TempDir(), "cp.json"), Scope: migrate.NewScope(nil, nil, false)}

	canary, err := newJob(st, env, migrate.Options{BatchSize: 10, Limit: 7, Checkpoint: cf}).Run(ctx)
	require.NoError(t, err)
	assert.Equal(t, 7, canary.Migrated)
	assert.True(t, canary.Interrupted)
	assert.False(t, canary.Registry.MarkerWritten)
	n, err := st.Items().Count(ctx, gtc.Filter{})
	require.NoError(t, err)
	assert.Equal(t, 7, n, "exactly --limit documents were written")

	rest, err := newJob(st, env, migrate.Options{BatchSize: 10, Checkpoint: cf}).Run(ctx)
	require.NoError(t, err)
	require.NotNil(t, rest.ResumedFrom)
	assert.Equal(t, 25, rest.Migrated, "the counters carry on: 7 + 18")
	assert.True(t, rest.Registry.MarkerWritten)
	n, err = st.Items().Count(ctx, gtc.Filter{})
	require.NoError(t, err)
	assert.Equal(t, 25, n)
}
