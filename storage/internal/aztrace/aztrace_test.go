package aztrace_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/gtc-dev/gtc/storage/internal/aztrace"
)

// setup installs an SDK provider feeding a SpanRecorder and the W3C propagators, as
// cmd/gtc does when tracing is on, and restores the previous globals afterwards.
func setup(t *testing.T) *tracetest.SpanRecorder {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	prevTP, prevProp := otel.GetTracerProvider(), otel.GetTextMapPropagator()
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	t.Cleanup(func() {
		otel.SetTracerProvider(prevTP)
		otel.SetTextMapPropagator(prevProp)
		_ = tp.Shutdown(context.Background())
	})
	return rec
}

// fakeTransport answers the tries in turn from a script (a status code, or 0 for a
// transport error) and keeps the traceparent and tracestate headers each try carried.
type fakeTransport struct {
	mu          sync.Mutex
	script      []int
	traceparent []string
	tracestate  []string
}

func (f *fakeTransport) Do(req *http.Request) (*http.Response, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := len(f.traceparent)
	f.traceparent = append(f.traceparent, req.Header.Get("traceparent"))
	f.tracestate = append(f.tracestate, req.Header.Get("tracestate"))
	code := f.script[min(n, len(f.script)-1)]
	if code == 0 {
		return nil, errors.New("connection reset by peer")
	}
	return &http.Response{StatusCode: code, Status: http.StatusText(code), Header: http.Header{},
		Body: io.NopCloser(strings.NewReader("")), Request: req}, nil
}

// retryCounter keeps the reasons onRetry was called with.
type retryCounter struct {
	mu      sync.Mutex
	reasons []string
}

func (r *retryCounter) onRetry(reason string) {
	r.mu.Lock()
	r.reasons = append(r.reasons, reason)
	r.mu.Unlock()
}

// innerRetry retries 503 itself by calling Next again, as storage/cosmos's
// unavailableRetry does, inside azcore's retry policy.
type innerRetry struct{ attempts int }

func (p innerRetry) Do(req *policy.Request) (*http.Response, error) {
	for attempt := 1; ; attempt++ {
		resp, err := req.Next()
		if err != nil || attempt >= p.attempts || resp.StatusCode != http.StatusServiceUnavailable {
			return resp, err
		}
		if err := req.RewindBody(); err != nil {
			return nil, err
		}
	}
}

func pipeline(tr policy.Transporter, perRetry ...policy.Policy) runtime.Pipeline {
	return runtime.NewPipeline("aztrace-test", "v0.0.0", runtime.PipelineOptions{}, &policy.ClientOptions{
		Transport: tr,
		Retry: policy.RetryOptions{MaxRetries: 3, RetryDelay: time.Millisecond, MaxRetryDelay: 2 * time.Millisecond,
			StatusCodes: []int{http.StatusServiceUnavailable, http.StatusTooManyRequests}},
		PerRetryPolicies: perRetry,
	})
}

func attrsOf(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	out := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		out[kv.Key] = kv.Value
	}
	return out
}

// describe draws the spans, one a line, the try spans indented under the caller's.
func describe(spans []sdktrace.ReadOnlySpan) string {
	sort.SliceStable(spans, func(i, j int) bool { return spans[i].StartTime().Before(spans[j].StartTime()) })
	var b strings.Builder
	ids := map[trace.SpanID]bool{}
	for _, s := range spans {
		ids[s.SpanContext().SpanID()] = true
	}
	for _, s := range spans {
		indent := ""
		if ids[s.Parent().SpanID()] {
			indent = "  "
		}
		fmt.Fprintf(&b, "%s%s kind=%s span=%s", indent, s.Name(), s.SpanKind(), s.SpanContext().SpanID())
		for _, kv := range s.Attributes() {
			fmt.Fprintf(&b, " %s=%s", kv.Key, kv.Value.String())
		}
		if st := s.Status(); st.Code != codes.Unset {
			fmt.Fprintf(&b, " status=%s(%q)", st.Code, st.Description)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// TestRetriedOperation: a Blob PUT answered 503 then 200 is two client spans under the
// caller's span, tries 1 and 2, each try's traceparent naming the caller's trace and that
// try's span; onRetry hears of the one retry with the status that caused it.
func TestRetriedOperation(t *testing.T) {
	rec := setup(t)
	tr := &fakeTransport{script: []int{503, 200}}
	retries := &retryCounter{}
	pl := pipeline(tr, aztrace.New("blob", retries.onRetry))

	ctx, parent := otel.Tracer("test").Start(context.Background(), "export.write_data")
	req, err := runtime.NewRequest(ctx, http.MethodPut, "https://acct.blob.core.windows.net/exports/a.jsonl")
	require.NoError(t, err)
	resp, err := pl.Do(req)
	parent.End()
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	var tries []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "blob PUT" {
			tries = append(tries, s)
		}
	}
	t.Logf("spans:\n%s", describe(rec.Ended()))
	t.Logf("traceparent per try: %q", tr.traceparent)
	require.Len(t, tries, 2, "one span per try")
	sort.Slice(tries, func(i, j int) bool { return tries[i].StartTime().Before(tries[j].StartTime()) })
	require.Len(t, tr.traceparent, 2)
	for i, s := range tries {
		a := attrsOf(s)
		assert.Equal(t, int64(i+1), a["gtc.azure.try"].AsInt64())
		assert.Equal(t, "PUT", a["http.request.method"].AsString())
		assert.Equal(t, "acct.blob.core.windows.net", a["server.address"].AsString())
		assert.Equal(t, trace.SpanKindClient, s.SpanKind())
		assert.Equal(t, parent.SpanContext().SpanID(), s.Parent().SpanID(), "try %d is a child of the caller's span", i+1)
		want := fmt.Sprintf("00-%s-%s-01", parent.SpanContext().TraceID(), s.SpanContext().SpanID())
		assert.Equal(t, want, tr.traceparent[i], "try %d carries the caller's trace and its own span", i+1)
	}
	assert.Equal(t, int64(503), attrsOf(tries[0])["http.response.status_code"].AsInt64())
	assert.Equal(t, codes.Error, tries[0].Status().Code, "a 5xx try is an error")
	assert.Equal(t, int64(200), attrsOf(tries[1])["http.response.status_code"].AsInt64())
	assert.Equal(t, codes.Unset, tries[1].Status().Code)
	assert.Equal(t, []string{"503"}, retries.reasons, "one retry, caused by the 503")
}

// TestTransportErrorAndInnerRetries: a transport error, then two 503s retried by an inner
// loop like storage/cosmos's, then 200: four tries numbered across both retry layers,
// three retries with their reasons.
func TestTransportErrorAndInnerRetries(t *testing.T) {
	rec := setup(t)
	tr := &fakeTransport{script: []int{0, 503, 503, 200}}
	retries := &retryCounter{}
	pl := pipeline(tr, innerRetry{attempts: 5}, aztrace.New("cosmos", retries.onRetry))

	ctx, parent := otel.Tracer("test").Start(context.Background(), "store.items.Replace")
	req, err := runtime.NewRequest(ctx, http.MethodPost, "http://127.0.0.1:8081/dbs/gtc/colls/ground_truth/docs")
	require.NoError(t, err)
	resp, err := pl.Do(req)
	parent.End()
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	t.Logf("spans:\n%s", describe(rec.Ended()))
	var got []int64
	var statuses []codes.Code
	for _, s := range rec.Ended() {
		if s.Name() != "cosmos POST" {
			continue
		}
		assert.Equal(t, parent.SpanContext().TraceID(), s.SpanContext().TraceID())
		assert.Equal(t, "127.0.0.1", attrsOf(s)["server.address"].AsString())
		got = append(got, attrsOf(s)["gtc.azure.try"].AsInt64())
		statuses = append(statuses, s.Status().Code)
	}
	assert.Equal(t, []int64{1, 2, 3, 4}, got, "the try number runs across both retry layers")
	assert.Equal(t, []codes.Code{codes.Error, codes.Error, codes.Error, codes.Unset}, statuses)
	assert.Equal(t, []string{aztrace.ReasonTransport, "503", "503"}, retries.reasons)
	for i, tp := range tr.traceparent {
		assert.True(t, strings.HasPrefix(tp, "00-"+parent.SpanContext().TraceID().String()+"-"), "try %d: %q", i+1, tp)
	}
}

// TestSeparateOperationsCountSeparately: the try number and the retries belong to one
// operation; a second request through the same pipeline starts at try 1 again.
func TestSeparateOperationsCountSeparately(t *testing.T) {
	rec := setup(t)
	tr := &fakeTransport{script: []int{200}}
	retries := &retryCounter{}
	pl := pipeline(tr, aztrace.New("blob", retries.onRetry))
	for range 2 {
		req, err := runtime.NewRequest(context.Background(), http.MethodGet, "https://acct.blob.core.windows.net/exports/a")
		require.NoError(t, err)
		_, err = pl.Do(req)
		require.NoError(t, err)
	}
	t.Logf("spans:\n%s", describe(rec.Ended()))
	require.Len(t, rec.Ended(), 2)
	for _, s := range rec.Ended() {
		assert.Equal(t, int64(1), attrsOf(s)["gtc.azure.try"].AsInt64())
		assert.False(t, s.Parent().IsValid(), "no caller span: the try span is a root")
	}
	assert.Empty(t, retries.reasons)
	assert.Len(t, tr.traceparent, 2)
	assert.NotEqual(t, tr.traceparent[0], tr.traceparent[1], "each operation starts its own trace")
}

// TestNoSDKNoHeaders: with tracing off (a no-op provider, even with the W3C propagators
// installed) and no caller trace, the policy sends no trace headers and still reports
// retries.
func TestNoSDKNoHeaders(t *testing.T) {
	prevTP, prevProp := otel.GetTracerProvider(), otel.GetTextMapPropagator()
	otel.SetTracerProvider(noop.NewTracerProvider())
	otel.SetTextMapPropagator(propagation.TraceContext{})
	t.Cleanup(func() {
		otel.SetTracerProvider(prevTP)
		otel.SetTextMapPropagator(prevProp)
	})
	tr := &fakeTransport{script: []int{429, 200}}
	retries := &retryCounter{}
	pl := pipeline(tr, aztrace.New("blob", retries.onRetry))
	req, err := runtime.NewRequest(context.Background(), http.MethodGet, "https://acct.blob.core.windows.net/exports/a")
	require.NoError(t, err)
	_, err = pl.Do(req)
	require.NoError(t, err)
	assert.Equal(t, []string{"", ""}, tr.traceparent)
	assert.Equal(t, []string{"429"}, retries.reasons)
	// A nil onRetry is allowed.
	pl = pipeline(&fakeTransport{script: []int{503, 200}}, aztrace.New("blob", nil))
	req, err = runtime.NewRequest(context.Background(), http.MethodGet, "https://acct.blob.core.windows.net/exports/a")
	require.NoError(t, err)
	_, err = pl.Do(req)
	require.NoError(t, err)
}
