// The fuzz builds (scripts/fuzz.sh, -tags fuzzing) leave these span tests out: they would
// instrument the OpenTelemetry SDK too, which doubles the package's fuzz build time.

//go:build !fuzzing

package gtc_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/storage/sqlite"
)

// recordSpans installs an SDK provider feeding a SpanRecorder as the global provider for
// the test and puts the previous one back afterwards.
func recordSpans(t *testing.T) *tracetest.SpanRecorder {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	t.Cleanup(func() {
		otel.SetTracerProvider(prev)
		_ = tp.Shutdown(context.Background())
	})
	return rec
}

// tracedStore stands in for the storage decorator of cmd/gtc: every item-store call the
// tests look at gets a "store.items.<Method>" span under the caller's span.
type tracedStore struct {
	gtc.Store
}

func (s tracedStore) Items() gtc.ItemStore { return tracedItems{s.Store.Items()} }

type tracedItems struct{ gtc.ItemStore }

func storeSpan(ctx context.Context, method string) (context.Context, trace.Span) {
	return otel.Tracer("test/store").Start(ctx, "store.items."+method)
}

func (s tracedItems) Scan(ctx context.Context, spec gtc.ScanSpec, cursor string, limit int) (gtc.ScanPage, error) {
	ctx, span := storeSpan(ctx, "Scan")
	defer span.End()
	return s.ItemStore.Scan(ctx, spec, cursor, limit)
}

func (s tracedItems) Replace(ctx context.Context, prev, next *gtc.Item) (*gtc.Item, error) {
	ctx, span := storeSpan(ctx, "Replace")
	defer span.End()
	return s.ItemStore.Replace(ctx, prev, next)
}

func (s tracedItems) Create(ctx context.Context, it *gtc.Item) (*gtc.Item, error) {
	ctx, span := storeSpan(ctx, "Create")
	defer span.End()
	return s.ItemStore.Create(ctx, it)
}

func (s tracedItems) CreateEach(ctx context.Context, its []*gtc.Item) []error {
	ctx, span := storeSpan(ctx, "CreateEach")
	defer span.End()
	return s.ItemStore.CreateEach(ctx, its)
}

// lengthTagger computes one tag, "len:<number of manual tags>", and rejects the manual tag
// "Bad Tag!" as malformed: enough to make items change, stay or fail on purpose.
type lengthTagger struct{}

func (lengthTagger) NormalizeManual(raw []string) ([]string, error) {
	for _, t := range raw {
		if t == "Bad Tag!" {
			return nil, &gtc.TagFormatError{Problems: []gtc.TagProblem{{Message: "tag 'Bad Tag!' is malformed"}}}
		}
	}
	out := append([]string(nil), raw...)
	sort.Strings(out)
	return out, nil
}

func (l lengthTagger) Prepare(it *gtc.Item, raw []string, _ bool) (gtc.Prepared, error) {
	manual, err := l.NormalizeManual(raw)
	if err != nil {
		return gtc.Prepared{}, err
	}
	it.ManualTags = manual
	it.ComputedTags = []string{fmt.Sprintf("len:%d", len(manual))}
	return gtc.Prepared{ManualTags: manual, ComputedTags: it.ComputedTags, Stripped: []string{}}, nil
}

// recomputeFixture is a store of 25 items of dataset support: it-13 has a tag the tagger
// refuses, every fourth has its computed tags right already, the others are stale.
func recomputeFixture(t *testing.T) *sqlite.Store {
	t.Helper()
	st := openSQLite(t)
	for i := range 25 {
		it := gtc.NewItem("support", fmt.Sprintf("it-%02d", i))
		it.Bucket = gtc.DeriveBucket(it.DatasetName, it.ID)
		it.UpdatedAt = time.Date(2025, 1, 2, 10, 0, 0, 0, time.UTC)
		it.ManualTags = []string{"topic:a", "topic:b"}
		switch {
		case i == 13:
			it.ManualTags = []string{"Bad Tag!"} // fails: one error in the second page
		case i%4 == 0:
			it.ComputedTags = []string{"len:2"} // already right: skipped
		default:
			it.ComputedTags = []string{"len:0"} // stale: updated
		}
		_, err := st.Items().Create(context.Background(), it)
		require.NoError(t, err)
	}
	return st
}

func openSQLite(t *testing.T) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(t.TempDir(), "gtc.db"), Synchronous: "NORMAL"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func spanAttrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	out := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		out[kv.Key] = kv.Value
	}
	return out
}

// drawTree draws the recorded spans as an indented tree (children by start time), runs of
// childless siblings of one name folded into "name ×n".
func drawTree(spans []sdktrace.ReadOnlySpan) string {
	byParent := map[trace.SpanID][]sdktrace.ReadOnlySpan{}
	ids := map[trace.SpanID]bool{}
	for _, s := range spans {
		ids[s.SpanContext().SpanID()] = true
	}
	var roots []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if ids[s.Parent().SpanID()] {
			byParent[s.Parent().SpanID()] = append(byParent[s.Parent().SpanID()], s)
		} else {
			roots = append(roots, s)
		}
	}
	var b strings.Builder
	var walk func(list []sdktrace.ReadOnlySpan, depth int)
	walk = func(list []sdktrace.ReadOnlySpan, depth int) {
		sort.SliceStable(list, func(i, j int) bool { return list[i].StartTime().Before(list[j].StartTime()) })
		for i := 0; i < len(list); {
			s := list[i]
			kids := byParent[s.SpanContext().SpanID()]
			j := i + 1
			for len(kids) == 0 && j < len(list) && list[j].Name() == s.Name() && len(byParent[list[j].SpanContext().SpanID()]) == 0 {
				j++
			}
			fmt.Fprintf(&b, "%s%s", strings.Repeat("  ", depth), s.Name())
			if j-i > 1 {
				fmt.Fprintf(&b, " ×%d", j-i)
			}
			for _, kv := range s.Attributes() {
				fmt.Fprintf(&b, " %s=%s", kv.Key, kv.Value.String())
			}
			if st := s.Status(); st.Code != codes.Unset {
				fmt.Fprintf(&b, " status=%s(%q)", st.Code, st.Description)
			}
			b.WriteByte('\n')
			walk(kids, depth+1)
			i = j
		}
	}
	walk(roots, 0)
	return b.String()
}

// childrenNamed counts the children of parent called name.
func childrenNamed(spans []sdktrace.ReadOnlySpan, parent sdktrace.ReadOnlySpan, name string) int {
	n := 0
	for _, s := range spans {
		if s.Name() == name && s.Parent().SpanID() == parent.SpanContext().SpanID() {
			n++
		}
	}
	return n
}

func spansNamed(spans []sdktrace.ReadOnlySpan, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].StartTime().Before(out[j].StartTime()) })
	return out
}

// TestRecomputeBatchSpans: a recompute over 25 items in pages of 10 is three
// "recompute.batch" spans under the job's span, each with its index, item count and the
// counts the job reported for that page, and the page's store calls nest under it.
func TestRecomputeBatchSpans(t *testing.T) {
	rec := recordSpans(t)
	ctx := context.Background()
	st := recomputeFixture(t)
	cur := gtc.NewCurator(gtc.CuratorDeps{Store: tracedStore{st}, Tagger: lengthTagger{}, RecomputeBatch: 10})

	// The per-page counts as the job reports them through its progress hook.
	type counts struct{ updated, skipped, errors int }
	var pages []counts
	var last counts
	jobCtx, job := otel.Tracer("test").Start(ctx, "job.recompute-tags")
	res, err := cur.RecomputeTags(jobCtx, gtc.RecomputeRequest{}, gtc.RecomputeHooks{Progress: func(p gtc.JobProgress) {
		if p.Processed+p.Errors == 0 {
			return // the first call, before any page
		}
		now := counts{p.Updated, p.Skipped, p.Errors}
		pages = append(pages, counts{now.updated - last.updated, now.skipped - last.skipped, now.errors - last.errors})
		last = now
	}})
	job.End()
	require.NoError(t, err)
	require.Equal(t, 25, res.Total)
	require.Len(t, res.Errors, 1)

	spans := rec.Ended()
	t.Logf("span tree of the recompute:\n%s", drawTree(spans))
	batches := spansNamed(spans, "recompute.batch")
	require.Len(t, batches, 3, "25 items in pages of 10")
	require.Len(t, pages, 3)
	wantItems := []int64{10, 10, 5}
	for i, b := range batches {
		a := spanAttrs(b)
		assert.Equal(t, "job.recompute-tags", parentName(spans, b), "batch %d nests under the job", i)
		assert.Equal(t, int64(i), a["gtc.batch.index"].AsInt64())
		assert.Equal(t, wantItems[i], a["gtc.batch.items"].AsInt64(), "batch %d", i)
		assert.Equal(t, int64(pages[i].updated), a["gtc.batch.updated"].AsInt64(), "batch %d", i)
		assert.Equal(t, int64(pages[i].skipped), a["gtc.batch.skipped"].AsInt64(), "batch %d", i)
		assert.Equal(t, int64(pages[i].errors), a["gtc.batch.errors"].AsInt64(), "batch %d", i)
		assert.Equal(t, codes.Unset, b.Status().Code, "a per-item error does not fail the batch")
		assert.Equal(t, 1, childrenNamed(spans, b, "store.items.Scan"), "the page's read nests under batch %d", i)
		assert.Equal(t, pages[i].updated, childrenNamed(spans, b, "store.items.Replace"), "one write per updated item of batch %d", i)
	}
	assert.Equal(t, int64(1), spanAttrs(batches[1])["gtc.batch.errors"].AsInt64(), "it-13 fails in the second page")
	assert.Len(t, spansNamed(spans, "store.items.Replace"), res.Updated, "no write outside a batch")
}

// TestRecomputeBatchSpanFailure: a page whose read fails is a batch span with error status.
func TestRecomputeBatchSpanFailure(t *testing.T) {
	rec := recordSpans(t)
	st := openSQLite(t)
	cur := gtc.NewCurator(gtc.CuratorDeps{Store: failingScanStore{tracedStore{st}}, Tagger: lengthTagger{}, RecomputeBatch: 10})
	_, err := cur.RecomputeTags(context.Background(), gtc.RecomputeRequest{}, gtc.RecomputeHooks{})
	require.ErrorIs(t, err, gtc.ErrUnavailable)
	spans := rec.Ended()
	t.Logf("span tree of the failed recompute:\n%s", drawTree(spans))
	batches := spansNamed(spans, "recompute.batch")
	require.Len(t, batches, 1)
	assert.Equal(t, codes.Error, batches[0].Status().Code)
	assert.Contains(t, batches[0].Status().Description, "unavailable")
}

type failingScanStore struct{ gtc.Store }

func (s failingScanStore) Items() gtc.ItemStore { return failingScan{s.Store.Items()} }

type failingScan struct{ gtc.ItemStore }

func (failingScan) Scan(context.Context, gtc.ScanSpec, string, int) (gtc.ScanPage, error) {
	return gtc.ScanPage{}, fmt.Errorf("scan: %w", gtc.ErrUnavailable)
}

func parentName(spans []sdktrace.ReadOnlySpan, s sdktrace.ReadOnlySpan) string {
	for _, p := range spans {
		if p.SpanContext().SpanID() == s.Parent().SpanID() {
			return p.Name()
		}
	}
	return ""
}

// TestImportBatchSpans: each Import call is one "import.batch" span labelled with the
// batch index gtc import passes, its item count and its imported and failed counts, with
// the creates of that batch under it.
func TestImportBatchSpans(t *testing.T) {
	rec := recordSpans(t)
	ctx := gtc.WithCaller(context.Background(), gtc.Caller{UserID: "importer@example.com"})
	st := openSQLite(t)
	cur := gtc.NewCurator(gtc.CuratorDeps{Store: tracedStore{st}, Tagger: lengthTagger{}})
	entry := func(id string) *gtc.ImportEntry {
		it := gtc.NewItem("support", id)
		it.History = []gtc.HistoryEntry{{Role: "user", Msg: "How?"}}
		return &gtc.ImportEntry{Item: it, RawManualTags: []string{"topic:a"}}
	}
	// Three batches; the third repeats an id of the first, which fails as a duplicate.
	batches := [][]string{{"a-1", "a-2", "a-3"}, {"b-1", "b-2"}, {"c-1", "a-2", "c-3", "c-4"}}
	jobCtx, job := otel.Tracer("test").Start(ctx, "job.import")
	var results []*gtc.ImportResult
	for n, ids := range batches {
		var entries []*gtc.ImportEntry
		for _, id := range ids {
			entries = append(entries, entry(id))
		}
		res, err := cur.Import(jobCtx, entries, gtc.ImportOptions{Batch: n})
		require.NoError(t, err)
		results = append(results, res)
	}
	job.End()
	require.Equal(t, 1, results[2].Failed, "a-2 exists already")

	spans := rec.Ended()
	t.Logf("span tree of the import:\n%s", drawTree(spans))
	got := spansNamed(spans, "import.batch")
	require.Len(t, got, len(batches))
	for i, b := range got {
		a := spanAttrs(b)
		assert.Equal(t, "job.import", parentName(spans, b))
		assert.Equal(t, int64(i), a["gtc.batch.index"].AsInt64())
		assert.Equal(t, int64(len(batches[i])), a["gtc.batch.items"].AsInt64())
		assert.Equal(t, int64(results[i].Imported), a["gtc.batch.imported"].AsInt64(), "batch %d", i)
		assert.Equal(t, int64(results[i].Failed), a["gtc.batch.failed"].AsInt64(), "batch %d", i)
		assert.Equal(t, 1, childrenNamed(spans, b, "store.items.CreateEach"), "the creates of batch %d nest under it, as one store call", i)
		assert.Equal(t, codes.Unset, b.Status().Code)
	}
}
