// The fuzz builds (scripts/fuzz.sh, -tags fuzzing) leave these span tests out: they would
// instrument the OpenTelemetry SDK too, which doubles the package's fuzz build time.

//go:build !fuzzing

package export

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
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
)

// recordSpans installs an SDK tracer provider feeding a SpanRecorder as the global provider
// for the test, and puts the previous provider back afterwards.
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

// storeTracer stands in for the storage decorator of cmd/gtc: a span per store call, a
// child of the caller's span.
func storeSpan(ctx context.Context, name string) (context.Context, trace.Span) {
	return otel.Tracer("test/store").Start(ctx, name)
}

// tracedItems gives every Scan a "store.items.Scan" span and counts the calls.
type tracedItems struct {
	gtc.ItemStore
	scans atomic.Int32
}

func (s *tracedItems) Scan(ctx context.Context, spec gtc.ScanSpec, cursor string, limit int) (gtc.ScanPage, error) {
	s.scans.Add(1)
	ctx, span := storeSpan(ctx, "store.items.Scan")
	defer span.End()
	return s.ItemStore.Scan(ctx, spec, cursor, limit)
}

// tracedArtifacts gives every Put and Delete a span and counts the Puts.
type tracedArtifacts struct {
	gtc.ArtifactStore
	puts atomic.Int32
}

func (s *tracedArtifacts) Put(ctx context.Context, key string, body io.Reader, o gtc.PutOptions) (gtc.ArtifactInfo, error) {
	s.puts.Add(1)
	ctx, span := storeSpan(ctx, "store.artifacts.Put")
	defer span.End()
	info, err := s.ArtifactStore.Put(ctx, key, body, o)
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	return info, err
}

func (s *tracedArtifacts) Delete(ctx context.Context, key string) error {
	_, span := storeSpan(ctx, "store.artifacts.Delete")
	defer span.End()
	return s.ArtifactStore.Delete(ctx, key)
}

// exportCall is one Observer call.
type exportCall struct {
	mode, format, outcome string
	items                 int
	bytes                 int64
	d                     time.Duration
}

type recordingObserver struct {
	mu    sync.Mutex
	calls []exportCall
}

func (o *recordingObserver) ExportDone(mode, format, outcome string, items int, bytes int64, d time.Duration) {
	o.mu.Lock()
	o.calls = append(o.calls, exportCall{mode, format, outcome, items, bytes, d})
	o.mu.Unlock()
}

func (o *recordingObserver) take() []exportCall {
	o.mu.Lock()
	defer o.mu.Unlock()
	c := o.calls
	o.calls = nil
	return c
}

// spanTree indexes the ended spans of one test by span id.
type spanTree struct {
	spans []sdktrace.ReadOnlySpan
	byID  map[trace.SpanID]sdktrace.ReadOnlySpan
}

func treeOf(spans []sdktrace.ReadOnlySpan) *spanTree {
	t := &spanTree{spans: spans, byID: map[trace.SpanID]sdktrace.ReadOnlySpan{}}
	for _, s := range spans {
		t.byID[s.SpanContext().SpanID()] = s
	}
	return t
}

// named returns the spans called name.
func (t *spanTree) named(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range t.spans {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// one returns the only span called name.
func (t *spanTree) one(tb testing.TB, name string) sdktrace.ReadOnlySpan {
	tb.Helper()
	got := t.named(name)
	require.Len(tb, got, 1, "spans named %s", name)
	return got[0]
}

// parentName is the name of s's parent among the recorded spans ("" for none).
func (t *spanTree) parentName(s sdktrace.ReadOnlySpan) string {
	if p, ok := t.byID[s.Parent().SpanID()]; ok {
		return p.Name()
	}
	return ""
}

// childNames counts the names of s's children.
func (t *spanTree) childNames(s sdktrace.ReadOnlySpan) map[string]int {
	out := map[string]int{}
	for _, c := range t.spans {
		if c.Parent().SpanID() == s.SpanContext().SpanID() {
			out[c.Name()]++
		}
	}
	return out
}

// String draws the tree, one span a line, children by start time, with attributes and
// status; runs of siblings with the same name are folded into one line with a count.
func (t *spanTree) String() string {
	var b strings.Builder
	var walk func(s sdktrace.ReadOnlySpan, depth int)
	children := func(id trace.SpanID) []sdktrace.ReadOnlySpan {
		var out []sdktrace.ReadOnlySpan
		for _, c := range t.spans {
			if c.Parent().SpanID() == id && c.Parent().IsValid() {
				out = append(out, c)
			}
		}
		sort.SliceStable(out, func(i, j int) bool { return out[i].StartTime().Before(out[j].StartTime()) })
		return out
	}
	line := func(s sdktrace.ReadOnlySpan, depth, n int) {
		fmt.Fprintf(&b, "%s%s", strings.Repeat("  ", depth), s.Name())
		if n > 1 {
			fmt.Fprintf(&b, " ×%d", n)
		}
		for _, kv := range s.Attributes() {
			fmt.Fprintf(&b, " %s=%s", kv.Key, kv.Value.String())
		}
		if st := s.Status(); st.Code != codes.Unset {
			fmt.Fprintf(&b, " status=%s", st.Code)
			if st.Description != "" {
				fmt.Fprintf(&b, "(%q)", st.Description)
			}
		}
		b.WriteByte('\n')
	}
	walk = func(s sdktrace.ReadOnlySpan, depth int) {
		kids := children(s.SpanContext().SpanID())
		for i := 0; i < len(kids); {
			j := i + 1
			for j < len(kids) && kids[j].Name() == kids[i].Name() && len(children(kids[j].SpanContext().SpanID())) == 0 {
				j++
			}
			line(kids[i], depth, j-i)
			walk(kids[i], depth+1)
			i = j
		}
	}
	for _, s := range t.spans {
		if _, ok := t.byID[s.Parent().SpanID()]; !ok {
			line(s, 0, 1)
			walk(s, 1)
		}
	}
	return b.String()
}

func attrsOf(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	out := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		out[kv.Key] = kv.Value
	}
	return out
}

// tracedHarness is the artifact harness with traced stores and a recording Observer.
type tracedHarness struct {
	*harness
	items *tracedItems
	arts  *tracedArtifacts
	obs   *recordingObserver
	x     *Exporter
}

func newTracedHarness(t *testing.T, items int) *tracedHarness {
	t.Helper()
	h := newHarness(t, items)
	th := &tracedHarness{harness: h, items: &tracedItems{ItemStore: h.st.Items()}, arts: &tracedArtifacts{ArtifactStore: h.spy},
		obs: &recordingObserver{}}
	pr, fr := Builtins([]string{"_etag"})
	var err error
	th.x, err = New(Config{Items: th.items, Artifacts: th.arts, Clock: h.clock, Processors: pr, Formatters: fr,
		PageSize: 7, WriteConcurrency: 3, TempDir: t.TempDir(), Observer: th.obs})
	require.NoError(t, err)
	return th
}

func (th *tracedHarness) plan(t *testing.T, format, mode, requestID string) *Plan {
	t.Helper()
	p, err := th.x.Resolve(&gtc.ExportRequest{Format: &format, Mode: mode}, "alice@example.com")
	require.NoError(t, err)
	p.RequestID = requestID
	return p
}

// TestArtifactSpanTree: an artifact export is one export.artifact span under the caller's
// span with the reserve, write_items and manifest stages below it; the read, build and
// write stages and every store call nest where they ran; the Observer hears of it once.
func TestArtifactSpanTree(t *testing.T) {
	rec := recordSpans(t)
	th := newTracedHarness(t, 30)
	ctx, parent := otel.Tracer("test").Start(context.Background(), "POST /v1/ground-truths/snapshot")
	ar, err := th.x.Artifact(ctx, th.plan(t, "json_snapshot_payload", gtc.DeliveryArtifact, "req-artifact-1"))
	parent.End()
	require.NoError(t, err)
	require.Equal(t, 20, ar.Count, "the approved items")

	tree := treeOf(rec.Ended())
	t.Logf("span tree of the artifact export:\n%s", tree)

	op := tree.one(t, "export.artifact")
	assert.Equal(t, "POST /v1/ground-truths/snapshot", tree.parentName(op), "the export span is a child of the caller's span")
	assert.Equal(t, parent.SpanContext().TraceID(), op.SpanContext().TraceID())
	a := attrsOf(op)
	assert.Equal(t, "artifact", a["gtc.export.mode"].AsString())
	assert.Equal(t, "json_snapshot_payload", a["gtc.export.format"].AsString())
	assert.Equal(t, "req-artifact-1", a["gtc.request_id"].AsString())
	assert.Equal(t, int64(20), a["gtc.export.items"].AsInt64())
	assert.Equal(t, ar.Bytes, a["gtc.export.bytes"].AsInt64())
	assert.Positive(t, ar.Bytes)
	assert.Equal(t, ar.SnapshotID, a["gtc.export.snapshot_id"].AsString())
	assert.Equal(t, codes.Unset, op.Status().Code)
	assert.Equal(t, map[string]int{"export.reserve": 1, "export.write_items": 1, "export.manifest": 1}, tree.childNames(op))

	reserve := tree.one(t, "export.reserve")
	assert.Equal(t, map[string]int{"store.artifacts.Put": 1}, tree.childNames(reserve), "the reservation object")
	assert.Equal(t, ar.SnapshotID, attrsOf(reserve)["gtc.export.snapshot_id"].AsString())

	wi := tree.one(t, "export.write_items")
	assert.Equal(t, map[string]int{"export.read": 1, "export.build": 1, "export.write": 1, "store.artifacts.Put": 20}, tree.childNames(wi),
		"the stages of the pipeline and one Put per item file")
	assert.Equal(t, int64(20), attrsOf(wi)["gtc.export.items"].AsInt64())
	assert.Equal(t, ar.Bytes, attrsOf(wi)["gtc.export.bytes"].AsInt64())

	read := tree.one(t, "export.read")
	assert.Equal(t, map[string]int{"store.items.Scan": int(th.items.scans.Load())}, tree.childNames(read), "every Scan nests under the read stage")
	assert.GreaterOrEqual(t, th.items.scans.Load(), int32(3), "20 items in pages of 7")
	for _, name := range []string{"export.read", "export.build", "export.write"} {
		s := tree.one(t, name)
		assert.Equal(t, int64(20), attrsOf(s)["gtc.export.items"].AsInt64(), name)
		assert.Equal(t, codes.Unset, s.Status().Code, name)
	}
	assert.Equal(t, map[string]int{"store.artifacts.Put": 1}, tree.childNames(tree.one(t, "export.manifest")))
	assert.Len(t, tree.named("store.artifacts.Put"), int(th.arts.puts.Load()), "no Put outside the tree")

	calls := th.obs.take()
	require.Len(t, calls, 1, "one Observer call per export")
	c := calls[0]
	assert.Equal(t, exportCall{"artifact", "json_snapshot_payload", "ok", 20, ar.Bytes, c.d}, c)
	t.Logf("observer: %+v", c)
}

// TestStreamAndAttachmentSpanTrees: a stream and an attachment each make one operation span
// with the read, build and write stages below it, counts and request id on it, and one
// Observer call.
func TestStreamAndAttachmentSpanTrees(t *testing.T) {
	for _, tc := range []struct {
		mode, span string
	}{{gtc.DeliveryStream, "export.stream"}, {gtc.DeliveryAttachment, "export.attachment"}} {
		t.Run(tc.mode, func(t *testing.T) {
			rec := recordSpans(t)
			th := newTracedHarness(t, 30)
			plan := th.plan(t, "jsonl", tc.mode, "req-"+tc.mode)
			var body bytes.Buffer
			var res Result
			var err error
			if tc.mode == gtc.DeliveryStream {
				res, err = th.x.Stream(context.Background(), plan, &body, nil)
			} else {
				var sp *Spool
				sp, res, err = th.x.Attachment(context.Background(), plan)
				require.NoError(t, err)
				_, err = sp.WriteTo(&body)
				sp.Close()
			}
			require.NoError(t, err)
			require.Equal(t, 20, res.Count)
			require.Equal(t, 20, bytes.Count(body.Bytes(), []byte("\n")))

			tree := treeOf(rec.Ended())
			t.Logf("span tree of the %s export:\n%s", tc.mode, tree)
			op := tree.one(t, tc.span)
			assert.Equal(t, "", tree.parentName(op), "no caller span: the export span is the root")
			a := attrsOf(op)
			assert.Equal(t, tc.mode, a["gtc.export.mode"].AsString())
			assert.Equal(t, "jsonl", a["gtc.export.format"].AsString())
			assert.Equal(t, "req-"+tc.mode, a["gtc.request_id"].AsString())
			assert.Equal(t, int64(20), a["gtc.export.items"].AsInt64())
			assert.Equal(t, int64(body.Len()), a["gtc.export.bytes"].AsInt64())
			_, hasSnapshot := a["gtc.export.snapshot_id"]
			assert.False(t, hasSnapshot, "only artifacts have a snapshot id")
			assert.Equal(t, map[string]int{"export.read": 1, "export.build": 1, "export.write": 1}, tree.childNames(op))
			read := tree.one(t, "export.read")
			assert.Equal(t, map[string]int{"store.items.Scan": int(th.items.scans.Load())}, tree.childNames(read))
			assert.Equal(t, op.SpanContext().TraceID(), read.SpanContext().TraceID())

			calls := th.obs.take()
			require.Len(t, calls, 1)
			assert.Equal(t, exportCall{tc.mode, "jsonl", "ok", 20, int64(body.Len()), calls[0].d}, calls[0])
			t.Logf("observer: %+v", calls[0])
		})
	}
}

// TestFailedExportSpans: a failed export marks its operation span (and the stage that
// failed) with error status and reports "failed"; a cancelled one reports "cancelled"
// and is not an error.
func TestFailedExportSpans(t *testing.T) {
	t.Run("artifact storage fails part-way", func(t *testing.T) {
		rec := recordSpans(t)
		th := newTracedHarness(t, 30)
		var mu sync.Mutex
		var puts int
		th.spy.failPuts = func(key string) error {
			mu.Lock()
			defer mu.Unlock()
			if strings.HasSuffix(key, ".reserved") {
				return nil
			}
			if puts++; puts > 5 {
				return fmt.Errorf("disk on fire: %w", gtc.ErrStorageUnavailable)
			}
			return nil
		}
		ar, err := th.x.Artifact(context.Background(), th.plan(t, "json_snapshot_payload", gtc.DeliveryArtifact, "req-fail-1"))
		require.ErrorIs(t, err, gtc.ErrStorageUnavailable)

		tree := treeOf(rec.Ended())
		t.Logf("span tree of the failed artifact export:\n%s", tree)
		op := tree.one(t, "export.artifact")
		assert.Equal(t, codes.Error, op.Status().Code)
		assert.Contains(t, op.Status().Description, "disk on fire")
		a := attrsOf(op)
		assert.Equal(t, "failed", a["gtc.export.outcome"].AsString())
		assert.Equal(t, "req-fail-1", a["gtc.request_id"].AsString())
		assert.Equal(t, ar.SnapshotID, a["gtc.export.snapshot_id"].AsString(), "the reserved id is on the span")
		assert.Equal(t, codes.Error, tree.one(t, "export.write_items").Status().Code, "the stage that failed")
		assert.Equal(t, codes.Unset, tree.one(t, "export.reserve").Status().Code, "the reservation succeeded")
		assert.Empty(t, tree.named("export.manifest"), "no manifest after a failure")
		assert.NotEmpty(t, tree.childNames(op)["store.artifacts.Delete"], "the clean-up's deletes nest under the export")

		calls := th.obs.take()
		require.Len(t, calls, 1)
		assert.Equal(t, "failed", calls[0].outcome)
		assert.Equal(t, ar.Count, calls[0].items)
		assert.Equal(t, ar.Bytes, calls[0].bytes)
		t.Logf("observer: %+v", calls[0])
	})

	t.Run("stream store fails on the second page", func(t *testing.T) {
		rec := recordSpans(t)
		th := newTracedHarness(t, 30)
		fx, err := New(Config{Items: &failingItems{ItemStore: th.items, failAt: 1}, Processors: th.x.processors, Formatters: th.x.formatters,
			PageSize: 7, TempDir: t.TempDir(), Clock: th.clock, Observer: th.obs})
		require.NoError(t, err)
		var body bytes.Buffer
		res, err := fx.Stream(context.Background(), th.plan(t, "jsonl", gtc.DeliveryStream, "req-fail-2"), &body, nil)
		require.ErrorIs(t, err, gtc.ErrUnavailable)

		tree := treeOf(rec.Ended())
		t.Logf("span tree of the failed stream:\n%s", tree)
		op := tree.one(t, "export.stream")
		assert.Equal(t, codes.Error, op.Status().Code)
		assert.Equal(t, int64(7), attrsOf(op)["gtc.export.items"].AsInt64(), "the first page went out")
		assert.Equal(t, codes.Error, tree.one(t, "export.read").Status().Code, "reading failed")
		assert.Equal(t, codes.Unset, tree.one(t, "export.write").Status().Code, "writing only passed the failure on")

		calls := th.obs.take()
		require.Len(t, calls, 1)
		assert.Equal(t, exportCall{"stream", "jsonl", "failed", res.Count, res.Bytes, calls[0].d}, calls[0])
		assert.Equal(t, 7, calls[0].items)
		t.Logf("observer: %+v", calls[0])
	})

	t.Run("cancelled stream", func(t *testing.T) {
		rec := recordSpans(t)
		th := newTracedHarness(t, 30)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := th.x.Stream(ctx, th.plan(t, "jsonl", gtc.DeliveryStream, "req-cancel"), io.Discard, nil)
		require.ErrorIs(t, err, context.Canceled)

		tree := treeOf(rec.Ended())
		t.Logf("span tree of the cancelled stream:\n%s", tree)
		op := tree.one(t, "export.stream")
		assert.Equal(t, codes.Unset, op.Status().Code, "a client that went away is not a server failure")
		assert.Equal(t, "cancelled", attrsOf(op)["gtc.export.outcome"].AsString())
		calls := th.obs.take()
		require.Len(t, calls, 1)
		assert.Equal(t, "cancelled", calls[0].outcome)
	})
}

// BenchmarkExportSpansNoSDK measures what the spans of one export cost with no SDK
// installed (the default): the operation span and the read, build and write stages.
func BenchmarkExportSpansNoSDK(b *testing.B) {
	plan := &Plan{Mode: gtc.DeliveryStream, Formatter: JSONL{}, RequestID: "req"}
	b.ReportAllocs()
	for b.Loop() {
		ctx, op := startSpan(context.Background(), spanStream)
		if op.IsRecording() {
			op.SetAttributes(attrMode.String(plan.Mode), attrFormat.String(plan.Formatter.Name()), attrRequestID.String(plan.RequestID))
		}
		for _, name := range []string{spanRead, spanBuild, spanWrite} {
			_, s := startSpan(ctx, name)
			endSpan(s, 20, nil)
		}
		endSpan(op, 20, nil)
	}
}
