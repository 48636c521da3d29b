package observed_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/storage/observed"
	"github.com/gtc-dev/gtc/storage/sqlite"
	"github.com/gtc-dev/gtc/storage/storetest"
	"github.com/gtc-dev/gtc/storage/storetest/testenv"
)

// calls records every store call it is told of.
type calls struct {
	mu   sync.Mutex
	seen map[string][]string // op → reasons ("" = success)
}

func (c *calls) StoreCall(backend, op string, d time.Duration, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil {
		c.seen = map[string][]string{}
	}
	reason := ""
	if err != nil {
		reason = observed.Reason(err)
	}
	c.seen[backend+" "+op] = append(c.seen[backend+" "+op], reason)
}

func (c *calls) get(key string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.seen[key]...)
}

func open(t *testing.T, clock gtc.Clock) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), sqlite.Options{Path: sqlite.MemoryPath, Clock: clock})
	require.NoError(t, err)
	return s
}

// TestConformance runs the store conformance suite through the wrapper: observing a store
// changes none of its behaviour, optional interfaces included. Its Queries area runs in
// TestConformanceQueries, which skips under the race detector: the norace phase of
// scripts/test.sh runs it without it (storetest.AreaQueries says why).
func TestConformance(t *testing.T) {
	rec := &calls{}
	storetest.Run(t, conformanceHarness(rec, storetest.ExceptQueries))
	assert.NotEmpty(t, rec.get("sqlite items.Replace"), "replaces were recorded")
	assert.Contains(t, rec.get("sqlite items.Get"), "not_found", "a missing item was recorded as not_found")
}

func TestConformanceQueries(t *testing.T) {
	if testenv.RaceEnabled {
		t.Skip("sequential fixtures: run without the race detector (scripts/test.sh, norace phase)")
	}
	rec := &calls{}
	storetest.Run(t, conformanceHarness(rec, storetest.OnlyQueries))
	assert.NotEmpty(t, rec.get("sqlite items.Query"), "queries were recorded")
}

func conformanceHarness(rec *calls, areas func(string) bool) storetest.Harness {
	clock := gtc.NewFakeClock(time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC))
	return storetest.Harness{
		Name:  "observed-sqlite",
		Clock: clock,
		Areas: areas,
		Scale: 200,
		New: func(t *testing.T) gtc.Store {
			return observed.Wrap(open(t, clock), rec)
		},
		Raw: func(t *testing.T, s gtc.Store, doc map[string]any) {
			u, ok := s.(interface{ Unwrap() gtc.Store })
			require.True(t, ok, "the observed store unwraps")
			require.NoError(t, u.Unwrap().(*sqlite.Store).InsertRaw(t.Context(), doc))
		},
	}
}

// TestOptionalInterfaces: the wrapper offers what the wrapped item store offers, and only that.
func TestOptionalInterfaces(t *testing.T) {
	s := observed.Wrap(open(t, nil), nil)
	defer s.Close()
	_, samples := s.Items().(gtc.EligibleSampler)
	_, counts := s.Items().(gtc.TagCounter)
	assert.True(t, samples, "SQLite samples the self-serve pool")
	assert.True(t, counts, "SQLite counts tags")
	gc, ok := s.(gtc.GroupCommitter)
	require.True(t, ok)
	assert.True(t, gc.GroupsCommits())
}

// TestSpans: each call is a client span under the caller's span, named after the operation,
// and only real failures mark it as an error.
func TestSpans(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	t.Cleanup(func() { otel.SetTracerProvider(prev) })

	rec := &calls{}
	s := observed.Wrap(open(t, nil), rec)
	defer s.Close()
	ctx, parent := tp.Tracer("test").Start(context.Background(), "request")
	it := gtc.NewItem("ds", "q1")
	it.Bucket = gtc.DeriveBucket("ds", "q1")
	it.UpdatedAt = time.Now()
	created, err := s.Items().Create(ctx, it)
	require.NoError(t, err)
	_, err = s.Items().Get(ctx, gtc.Key{DatasetName: "ds", Bucket: gtc.DeriveBucket("ds", "none"), ID: "none"})
	require.ErrorIs(t, err, gtc.ErrNotFound)
	stale := created.Clone()
	stale.ETag = `"stale"`
	_, err = s.Items().Replace(ctx, stale, created.Clone())
	require.ErrorIs(t, err, gtc.ErrPreconditionFailed)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = s.Items().Count(cctx, gtc.Filter{})
	require.Error(t, err)
	parent.End()

	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, sp := range sr.Ended() {
		byName[sp.Name()] = sp
	}
	for _, name := range []string{"store.items.Create", "store.items.Get", "store.items.Replace", "store.items.Count"} {
		sp, ok := byName[name]
		require.True(t, ok, "span %s", name)
		assert.Equal(t, parent.SpanContext().SpanID(), sp.Parent().SpanID(), "%s is a child of the request span", name)
		assert.Equal(t, parent.SpanContext().TraceID(), sp.SpanContext().TraceID())
		attrs := map[string]string{}
		for _, kv := range sp.Attributes() {
			attrs[string(kv.Key)] = kv.Value.AsString()
		}
		assert.Equal(t, "sqlite", attrs["gtc.store.backend"], name)
	}
	assert.Equal(t, codes.Unset, byName["store.items.Create"].Status().Code)
	assert.Equal(t, codes.Unset, byName["store.items.Get"].Status().Code, "not found is an answer, not a failure")
	assert.Equal(t, codes.Unset, byName["store.items.Replace"].Status().Code, "a lost race is an answer")
	assert.Equal(t, codes.Error, byName["store.items.Count"].Status().Code, "a cancelled call is a failure")
	assert.Equal(t, []string{"precondition_failed"}, rec.get("sqlite items.Replace"))
	assert.Equal(t, []string{"canceled"}, rec.get("sqlite items.Count"))
}

// TestNoSpans: with NoSpans the calls are still recorded, and no span is started even when a
// provider is installed.
func TestNoSpans(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	t.Cleanup(func() { otel.SetTracerProvider(prev) })

	rec := &calls{}
	s := observed.Wrap(open(t, nil), rec, observed.NoSpans())
	defer s.Close()
	_, err := s.Items().Count(context.Background(), gtc.Filter{})
	require.NoError(t, err)
	assert.Equal(t, []string{""}, rec.get("sqlite items.Count"), "the call is recorded as a success")
	assert.Empty(t, sr.Ended(), "no span")
}
