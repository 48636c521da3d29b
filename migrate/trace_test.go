// The fuzz builds (scripts/fuzz.sh, -tags fuzzing) leave these span tests out: they would
// instrument the OpenTelemetry SDK too, which doubles the package's fuzz build time.

//go:build !fuzzing

package migrate_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	gtc "github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/migrate"
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

// tracedMaintStore stands in for the storage decorator of cmd/gtc: the raw reads and
// writes of the job get a "store.maintenance.<Method>" span under the caller's span.
// failScanAt > 0 makes that ScanRaw call (1-based) fail as an unreachable store.
type tracedMaintStore struct {
	gtc.Store
	failScanAt int32
	scans      atomic.Int32
}

func (s *tracedMaintStore) Maintenance() gtc.Maintenance {
	return tracedMaint{Maintenance: s.Store.Maintenance(), s: s}
}

type tracedMaint struct {
	gtc.Maintenance
	s *tracedMaintStore
}

func maintSpan(ctx context.Context, method string) (context.Context, trace.Span) {
	return otel.Tracer("test/store").Start(ctx, "store.maintenance."+method)
}

func (m tracedMaint) ScanRaw(ctx context.Context, ds []string, cursor string, limit int) (gtc.RawPage, error) {
	ctx, span := maintSpan(ctx, "ScanRaw")
	defer span.End()
	if n := m.s.scans.Add(1); n == m.s.failScanAt {
		return gtc.RawPage{}, fmt.Errorf("scan: %w", gtc.ErrUnavailable)
	}
	return m.Maintenance.ScanRaw(ctx, ds, cursor, limit)
}

func (m tracedMaint) ReplaceRaw(ctx context.Context, prev gtc.RawDoc, body map[string]any) (gtc.RawDoc, error) {
	ctx, span := maintSpan(ctx, "ReplaceRaw")
	defer span.End()
	return m.Maintenance.ReplaceRaw(ctx, prev, body)
}

func (m tracedMaint) MoveRaw(ctx context.Context, prev gtc.RawDoc, body map[string]any) (gtc.RawDoc, error) {
	ctx, span := maintSpan(ctx, "MoveRaw")
	defer span.End()
	return m.Maintenance.MoveRaw(ctx, prev, body)
}

// drawTree draws the recorded spans as an indented tree (children by start time), runs of
// childless siblings of one name folded into "name ×n".
func drawTree(spans []sdktrace.ReadOnlySpan) string {
	ids := map[trace.SpanID]bool{}
	for _, s := range spans {
		ids[s.SpanContext().SpanID()] = true
	}
	byParent := map[trace.SpanID][]sdktrace.ReadOnlySpan{}
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

func batchSpans(spans []sdktrace.ReadOnlySpan) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == "migrate.batch" {
			out = append(out, s)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].StartTime().Before(out[j].StartTime()) })
	return out
}

func attrsOf(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	out := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		out[kv.Key] = kv.Value
	}
	return out
}

// children counts the children of parent whose name starts with prefix.
func children(spans []sdktrace.ReadOnlySpan, parent sdktrace.ReadOnlySpan, prefix string) int {
	n := 0
	for _, s := range spans {
		if strings.HasPrefix(s.Name(), prefix) && s.Parent().SpanID() == parent.SpanContext().SpanID() {
			n++
		}
	}
	return n
}

// TestMigrateBatchSpans: a run over 25 documents in batches of 10 is three "migrate.batch"
// spans under the run's span, each with its index, its document count and the counts the
// job reported for it; the batch's raw reads and writes nest under it.
func TestMigrateBatchSpans(t *testing.T) {
	rec := recordSpans(t)
	ctx := context.Background()
	st, _ := openSQLite(t)
	loadLegacy(t, st, "support", 24)
	bad := legacyDoc("support", 99)
	bad["toolCalls"] = []any{map[string]any{"name": ""}} // an invalid document: one error
	require.NoError(t, st.InsertRaw(ctx, bad))
	traced := &tracedMaintStore{Store: st}

	// The per-batch counts as the job reports them through its hooks.
	type counts struct{ docs, migrated, skipped, errors int }
	var perBatch []counts
	var cur counts
	job := &migrate.Job{Store: traced, Env: testEnv(t), Opts: migrate.Options{BatchSize: 10}, RunID: "run-trace"}
	job.Hooks.Document = func(d migrate.DocReport) {
		cur.docs++
		switch d.Action {
		case migrate.ActionError:
			cur.errors++
		case migrate.ActionUnchanged:
			cur.skipped++
		default:
			cur.migrated++
		}
	}
	job.Hooks.BatchDone = func() {
		perBatch = append(perBatch, cur)
		cur = counts{}
	}
	runCtx, run := otel.Tracer("test").Start(ctx, "job.migrate")
	sum, err := job.Run(runCtx)
	run.End()
	require.NoError(t, err)
	require.Equal(t, 25, sum.Total)
	require.Equal(t, 1, sum.Failed)

	spans := rec.Ended()
	t.Logf("span tree of the migration:\n%s", drawTree(spans))
	batches := batchSpans(spans)
	require.Len(t, batches, 3, "25 documents in batches of 10")
	require.Len(t, perBatch, 3)
	errorsSeen := 0
	for i, b := range batches {
		a := attrsOf(b)
		assert.Equal(t, run.SpanContext().SpanID(), b.Parent().SpanID(), "batch %d nests under the run", i)
		assert.Equal(t, int64(i), a["gtc.batch.index"].AsInt64())
		assert.Equal(t, int64(perBatch[i].docs), a["gtc.batch.items"].AsInt64(), "batch %d", i)
		assert.Equal(t, int64(perBatch[i].migrated), a["gtc.batch.migrated"].AsInt64(), "batch %d", i)
		assert.Equal(t, int64(perBatch[i].skipped), a["gtc.batch.skipped"].AsInt64(), "batch %d", i)
		assert.Equal(t, int64(perBatch[i].errors), a["gtc.batch.errors"].AsInt64(), "batch %d", i)
		assert.Equal(t, codes.Unset, b.Status().Code, "a document error does not fail the batch")
		assert.Equal(t, 1, children(spans, b, "store.maintenance.ScanRaw"), "batch %d reads its page", i)
		writes := children(spans, b, "store.maintenance.ReplaceRaw") + children(spans, b, "store.maintenance.MoveRaw")
		assert.Equal(t, perBatch[i].migrated, writes, "one write per migrated document of batch %d, under it", i)
		errorsSeen += int(a["gtc.batch.errors"].AsInt64())
	}
	assert.Equal(t, []int64{10, 10, 5}, []int64{attrsOf(batches[0])["gtc.batch.items"].AsInt64(),
		attrsOf(batches[1])["gtc.batch.items"].AsInt64(), attrsOf(batches[2])["gtc.batch.items"].AsInt64()})
	assert.Equal(t, 1, errorsSeen, "the invalid document is counted in exactly one batch")
}

// TestMigrateBatchSpanFailure: a batch whose read fails (the store went away) ends with
// error status; the batches before it do not.
func TestMigrateBatchSpanFailure(t *testing.T) {
	rec := recordSpans(t)
	st, _ := openSQLite(t)
	loadLegacy(t, st, "support", 25)
	traced := &tracedMaintStore{Store: st, failScanAt: 2}
	_, err := newJob(traced, testEnv(t), migrate.Options{BatchSize: 10}).Run(context.Background())
	require.ErrorIs(t, err, gtc.ErrUnavailable)

	spans := rec.Ended()
	t.Logf("span tree of the failed migration:\n%s", drawTree(spans))
	batches := batchSpans(spans)
	require.Len(t, batches, 2)
	assert.Equal(t, codes.Unset, batches[0].Status().Code)
	assert.Equal(t, codes.Error, batches[1].Status().Code)
	assert.Contains(t, batches[1].Status().Description, "read the documents")
	assert.Equal(t, int64(1), attrsOf(batches[1])["gtc.batch.index"].AsInt64())
}
