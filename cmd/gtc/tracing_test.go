package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// spanTree indexes the spans an in-memory exporter holds.
type spanTree struct {
	spans  tracetest.SpanStubs
	byID   map[trace.SpanID]tracetest.SpanStub
	kids   map[trace.SpanID][]tracetest.SpanStub
	traces map[trace.TraceID]bool
}

func newSpanTree(spans tracetest.SpanStubs) *spanTree {
	st := &spanTree{spans: spans, byID: map[trace.SpanID]tracetest.SpanStub{}, kids: map[trace.SpanID][]tracetest.SpanStub{},
		traces: map[trace.TraceID]bool{}}
	for _, s := range spans {
		st.byID[s.SpanContext.SpanID()] = s
		st.kids[s.Parent.SpanID()] = append(st.kids[s.Parent.SpanID()], s)
		st.traces[s.SpanContext.TraceID()] = true
	}
	return st
}

// find returns the spans named name.
func (st *spanTree) find(name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range st.spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// under returns the names of every span below s, depth first.
func (st *spanTree) under(s tracetest.SpanStub) []string {
	var out []string
	for _, k := range st.kids[s.SpanContext.SpanID()] {
		out = append(out, k.Name)
		out = append(out, st.under(k)...)
	}
	return out
}

// print renders the tree below s for the test log.
func (st *spanTree) print(s tracetest.SpanStub, depth int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s%s (%s)\n", strings.Repeat("  ", depth), s.Name, s.EndTime.Sub(s.StartTime).Round(time.Microsecond))
	for _, k := range st.kids[s.SpanContext.SpanID()] {
		b.WriteString(st.print(k, depth+1))
	}
	return b.String()
}

func attr(s tracetest.SpanStub, key string) string {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return fmt.Sprint(kv.Value.AsInterface())
		}
	}
	return ""
}

// TestTraceTreeOfPutAndExport runs the server in this process with the SDK's in-memory
// exporter: a PUT continues the caller's W3C trace, and its store calls are its children; an
// export's stages and their store calls hang under the request span; the request log line
// carries the trace id.
func TestTraceTreeOfPutAndExport(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	testSpanExporter = exp
	t.Cleanup(func() { testSpanExporter = nil })
	port := freePort(t)
	for k, v := range map[string]string{"GTC_DATA_DIR": t.TempDir(), "GTC_ADDR": fmt.Sprintf("127.0.0.1:%d", port),
		"GTC_LOG_FORMAT": "json", "GTC_REPO_BACKEND": "sqlite", "GTC_EXPORT_STORAGE_BACKEND": "local", "GTC_AUTH_MODE": "dev"} {
		t.Setenv(k, v)
	}
	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"gtc", "serve"}, nil, &syncBuffer{}, logs) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	s := &server{base: fmt.Sprintf("http://127.0.0.1:%d", port), stderr: logs}
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := http.Get(s.base + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				break
			}
		}
		require.True(t, time.Now().Before(deadline), "server not ready:\n%s", logs.String())
		time.Sleep(20 * time.Millisecond)
	}

	importItems(t, s, "trace-ds", 3)
	it := items(t, s, "trace-ds")["item-001"]
	require.NotNil(t, it)
	// The caller's trace: the PUT must join it.
	const callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	const callerSpan = "00f067aa0ba902b7"
	code, body, _ := doJSON(t, http.MethodPut, fmt.Sprintf("%s/v1/ground-truths/trace-ds/%s/item-001", s.base, it["bucket"]),
		map[string]any{"comment": "traced"}, map[string]string{"If-Match": it["_etag"].(string), "X-Request-Id": "req-put-1",
			"traceparent": "00-" + callerTrace + "-" + callerSpan + "-01"})
	require.Equal(t, http.StatusOK, code, "%v", body)
	code, body, _ = doJSON(t, http.MethodPost, s.base+"/v1/ground-truths/snapshot",
		map[string]any{"format": "jsonl", "filters": map[string]any{"status": ""}, "delivery": map[string]any{"mode": "artifact"}},
		map[string]string{"X-Request-Id": "req-export-1"})
	require.Equal(t, http.StatusOK, code, "%v", body)
	s.logContains(t, `"request_id":"req-export-1"`)

	tree := newSpanTree(exp.GetSpans())
	puts := tree.find("PUT /v1/ground-truths/:datasetName/:bucket/:item_id")
	require.Len(t, puts, 1, "one server span for the PUT")
	put := puts[0]
	t.Logf("PUT span tree:\n%s", tree.print(put, 0))
	assert.Equal(t, trace.SpanKindServer, put.SpanKind)
	assert.Equal(t, callerTrace, put.SpanContext.TraceID().String(), "the PUT continues the caller's trace")
	assert.Equal(t, callerSpan, put.Parent.SpanID().String(), "its parent is the caller's span")
	assert.Equal(t, "req-put-1", attr(put, "gtc.request_id"))
	assert.Equal(t, "200", attr(put, "http.response.status_code"))
	assert.Equal(t, "/v1/ground-truths/:datasetName/:bucket/:item_id", attr(put, "http.route"))
	below := tree.under(put)
	assert.Contains(t, below, "store.items.Get", "the save reads the item")
	assert.Contains(t, below, "store.items.Replace", "and writes it conditionally")
	for _, s := range tree.find("store.items.Replace") {
		if s.SpanContext.TraceID() == put.SpanContext.TraceID() {
			assert.Equal(t, "sqlite", attr(s, "gtc.store.backend"))
			assert.Equal(t, trace.SpanKindClient, s.SpanKind)
		}
	}
	s.logContains(t, `"trace_id":"`+callerTrace+`"`)

	posts := tree.find("POST /v1/ground-truths/snapshot")
	require.Len(t, posts, 1)
	post := posts[0]
	t.Logf("export span tree:\n%s", tree.print(post, 0))
	assert.Equal(t, "req-export-1", attr(post, "gtc.request_id"))
	below = tree.under(post)
	for _, want := range []string{"export.artifact", "export.read", "store.items.Scan", "export.manifest"} {
		assert.Contains(t, below, want)
	}
	arts := tree.find("export.artifact")
	require.Len(t, arts, 1)
	assert.Equal(t, "3", attr(arts[0], "gtc.export.items"))
	assert.Equal(t, "req-export-1", attr(arts[0], "gtc.request_id"))
	for _, sc := range tree.find("store.items.Scan") {
		p, ok := tree.byID[sc.Parent.SpanID()]
		if ok && p.SpanContext.TraceID() == post.SpanContext.TraceID() {
			assert.Equal(t, "export.read", p.Name, "the export's scans are children of its read stage")
		}
	}
}
