package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scrape reads GET /metrics and parses it as the Prometheus text format.
func scrape(t *testing.T, base string, hdr map[string]string) map[string]*dto.MetricFamily {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+"/metrics", nil)
	require.NoError(t, err)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode, "%s", raw)
	require.True(t, strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain"), res.Header.Get("Content-Type"))
	return parseMetrics(t, string(raw))
}

// parseMetrics parses the Prometheus text format.
func parseMetrics(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(text))
	require.NoError(t, err, "the text parses as the Prometheus text format")
	return fams
}

func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, lp := range m.GetLabel() {
		out[lp.GetName()] = lp.GetValue()
	}
	return out
}

// value sums the series of family name whose labels include want: the counter, gauge or
// histogram sample count.
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	f := fams[name]
	if f == nil {
		return 0
	}
	total := 0.0
next:
	for _, m := range f.GetMetric() {
		l := labels(m)
		for k, v := range want {
			if l[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			total += m.GetCounter().GetValue()
		case m.Gauge != nil:
			total += m.GetGauge().GetValue()
		case m.Histogram != nil:
			total += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return total
}

// TestMetricsAfterTraffic drives the server through the calls a curator, an exporter, an
// agent and an operator make, then scrapes /metrics: every family is there, with route
// templates (never a path with an id), and the counts match what was done.
func TestMetricsAfterTraffic(t *testing.T) {
	s := startServer(t, env(t.TempDir()))
	importItems(t, s, "metrics-ds", 5, "topic:alpha")
	listed := items(t, s, "metrics-ds")
	it := listed["item-001"]
	require.NotNil(t, it)
	path := fmt.Sprintf("/v1/ground-truths/metrics-ds/%s/item-001", it["bucket"])

	code, _, _ := doJSON(t, http.MethodPut, s.base+path, map[string]any{"comment": "stale"}, map[string]string{"If-Match": `"0000"`})
	require.Equal(t, http.StatusPreconditionFailed, code)
	code, body, _ := doJSON(t, http.MethodPut, s.base+path, map[string]any{"comment": "fresh"}, map[string]string{"If-Match": it["_etag"].(string)})
	require.Equal(t, http.StatusOK, code, "%v", body)
	for range 3 {
		code, _, _ = doJSON(t, http.MethodGet, s.base+path, nil, nil)
		require.Equal(t, http.StatusOK, code)
	}
	code, _, _ = doJSON(t, http.MethodGet, s.base+"/v1/ground-truths/metrics-ds/"+it["bucket"].(string)+"/no-such-item", nil, nil)
	require.Equal(t, http.StatusNotFound, code)
	code, _, _ = doJSON(t, http.MethodGet, s.base+"/v1/no/such/route/item-001", nil, nil)
	require.Equal(t, http.StatusNotFound, code)
	code, body, _ = doJSON(t, http.MethodPost, s.base+"/v1/ground-truths/snapshot",
		map[string]any{"format": "jsonl", "filters": map[string]any{"status": ""}, "delivery": map[string]any{"mode": "artifact"}}, nil)
	require.Equal(t, http.StatusOK, code, "%v", body)
	tool(t, s, "alice", "tag_stats", map[string]any{})
	tool(t, s, "alice", "manage_tags", map[string]any{"operation": "delete_tag", "tag": "topic:alpha"})
	code, body, _ = doJSON(t, http.MethodPost, s.base+"/v1/ground-truths/recompute-tags?async=true", nil, nil)
	require.Equal(t, http.StatusAccepted, code, "%v", body)
	jobID := body["id"].(string)
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, job, _ := doJSON(t, http.MethodGet, s.base+"/v1/jobs/"+jobID, nil, nil)
		if job["status"] == "succeeded" {
			break
		}
		require.NotEqual(t, "failed", job["status"], "%v", job)
		require.True(t, time.Now().Before(deadline), "the recompute job did not finish: %v", job)
		time.Sleep(20 * time.Millisecond)
	}

	fams := scrape(t, s.base, nil)
	for _, name := range []string{"gtc_http_requests_total", "gtc_http_request_duration_seconds", "gtc_http_requests_in_flight",
		"gtc_http_conflicts_total", "gtc_store_operation_duration_seconds", "gtc_store_operation_errors_total",
		"gtc_exports_total", "gtc_export_items_total", "gtc_export_bytes_total", "gtc_jobs_total", "gtc_jobs_in_flight",
		"gtc_recompute_items_total", "gtc_agent_operations_total", "gtc_build_info", "go_goroutines", "process_resident_memory_bytes",
		"gtc_sqlite_commits_total", "gtc_sqlite_commit_writes_total"} {
		_, ok := fams[name]
		assert.True(t, ok, "family %s is served", name)
	}

	itemRoute := "/v1/ground-truths/:datasetName/:bucket/:item_id"
	assert.Equal(t, 1.0, value(fams, "gtc_http_requests_total", map[string]string{"route": itemRoute, "method": "PUT", "status_class": "2xx"}))
	assert.Equal(t, 1.0, value(fams, "gtc_http_requests_total", map[string]string{"route": itemRoute, "method": "PUT", "status_class": "4xx"}))
	assert.Equal(t, 1.0, value(fams, "gtc_http_conflicts_total", map[string]string{"route": itemRoute}), "the stale If-Match is a conflict")
	assert.GreaterOrEqual(t, value(fams, "gtc_http_request_duration_seconds", map[string]string{"route": itemRoute, "method": "GET", "status_class": "2xx"}), 3.0)
	assert.Equal(t, 1.0, value(fams, "gtc_http_requests_total", map[string]string{"route": itemRoute, "method": "GET", "status_class": "4xx"}))
	assert.GreaterOrEqual(t, value(fams, "gtc_http_requests_total", map[string]string{"route": "unmatched", "status_class": "4xx"}), 1.0)

	// Labels are templates: no raw path, dataset, bucket or id appears anywhere.
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			for k, v := range labels(m) {
				for _, raw := range []string{"metrics-ds", it["bucket"].(string), "item-001", "no-such-item", "/v1/no/such"} {
					assert.NotContains(t, v, raw, "%s{%s=%q} carries a raw value", name, k, v)
				}
			}
		}
	}

	assert.GreaterOrEqual(t, value(fams, "gtc_store_operation_duration_seconds", map[string]string{"backend": "sqlite", "operation": "items.Replace"}), 1.0)
	assert.GreaterOrEqual(t, value(fams, "gtc_store_operation_errors_total", map[string]string{"backend": "sqlite", "operation": "items.Get", "reason": "not_found"}), 1.0)
	assert.Equal(t, 1.0, value(fams, "gtc_exports_total", map[string]string{"mode": "artifact", "format": "jsonl", "outcome": "ok"}))
	assert.Equal(t, 5.0, value(fams, "gtc_export_items_total", map[string]string{"mode": "artifact"}))
	assert.Greater(t, value(fams, "gtc_export_bytes_total", map[string]string{"mode": "artifact"}), 0.0)
	assert.Equal(t, 1.0, value(fams, "gtc_jobs_total", map[string]string{"type": "recompute-tags", "status": "succeeded"}))
	assert.Equal(t, 0.0, value(fams, "gtc_jobs_in_flight", map[string]string{"type": "recompute-tags"}))
	assert.Equal(t, 5.0, value(fams, "gtc_recompute_items_total", nil), "every item was looked at once")
	assert.Equal(t, 1.0, value(fams, "gtc_agent_operations_total", map[string]string{"tool": "tag_stats", "mode": "read", "outcome": "ok"}))
	assert.Equal(t, 1.0, value(fams, "gtc_agent_operations_total", map[string]string{"tool": "manage_tags", "mode": "preview", "outcome": "ok"}))
	assert.Equal(t, 1.0, value(fams, "gtc_build_info", map[string]string{"version": "9.9.9-test"}))
	commits, writes := value(fams, "gtc_sqlite_commits_total", nil), value(fams, "gtc_sqlite_commit_writes_total", nil)
	assert.GreaterOrEqual(t, commits, 3.0, "the import, the saves and the recompute committed")
	assert.GreaterOrEqual(t, writes, commits, "every commit carries at least one write")
}

// TestMetricsAccess: in Easy Auth mode /metrics needs a principal unless it is listed as an
// anonymous path; GTC_METRICS_ENABLED=false serves no /metrics at all.
func TestMetricsAccess(t *testing.T) {
	principal := func(email string) string {
		b, _ := json.Marshal(map[string]any{"auth_typ": "aad", "claims": []map[string]string{{"typ": "preferred_username", "val": email}}})
		return base64.StdEncoding.EncodeToString(b)
	}
	get := func(s *server, hdr map[string]string) (int, string) {
		req, err := http.NewRequest(http.MethodGet, s.base+"/metrics", nil)
		require.NoError(t, err)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(raw)
	}

	closed := startServer(t, env(t.TempDir(), "GTC_AUTH_MODE=easyauth"))
	code, body := get(closed, nil)
	assert.Equal(t, http.StatusUnauthorized, code, body)
	assert.NotContains(t, body, "gtc_http_requests_total")
	fams := scrape(t, closed.base, map[string]string{"X-MS-CLIENT-PRINCIPAL": principal("ops@contoso.com")})
	_, ok := fams["gtc_http_requests_total"]
	assert.True(t, ok, "a signed-in caller reads the metrics")

	open := startServer(t, env(t.TempDir(), "GTC_AUTH_MODE=easyauth", "GTC_EZAUTH_ALLOW_ANONYMOUS_PATHS=/metrics"))
	fams = scrape(t, open.base, nil)
	_, ok = fams["gtc_build_info"]
	assert.True(t, ok, "a listed anonymous path is open")
	code, _ = get(open, nil)
	assert.Equal(t, http.StatusOK, code)
	code, _, _ = doJSON(t, http.MethodGet, open.base+"/v1/ground-truths", nil, nil)
	assert.Equal(t, http.StatusUnauthorized, code, "only /metrics is opened")

	off := startServer(t, env(t.TempDir(), "GTC_METRICS_ENABLED=false"))
	code, body = get(off, nil)
	assert.Equal(t, http.StatusNotFound, code, body)
	assert.Contains(t, body, "ROUTE_NOT_FOUND")
}

// TestTracingSettings: the standard OTEL_* variables turn tracing on (both protocols start,
// even with the collector not yet reachable, and the request line then carries the trace
// id); an unknown protocol stops startup with a message; without them no line has a trace id.
func TestTracingSettings(t *testing.T) {
	_, errOut, code := runGTC(t, env(t.TempDir(), "OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL=http/json"), "serve")
	assert.Equal(t, 3, code, errOut)
	assert.Contains(t, errOut, `OTEL_EXPORTER_OTLP_PROTOCOL="http/json": gtc sends traces with http/protobuf or grpc`)

	for _, protocol := range []string{"grpc", "http/protobuf"} {
		s := startServer(t, env(t.TempDir(), "OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL="+protocol))
		s.logContains(t, `"msg":"tracing is on","service":"gtc-backend","protocol":"`+protocol+`"`)
		code, _, _ := doJSON(t, http.MethodGet, s.base+"/v1/config", nil, map[string]string{"X-Request-Id": "traced-" + strings.ReplaceAll(protocol, "/", "-")})
		require.Equal(t, http.StatusOK, code)
		s.logContains(t, `"request_id":"traced-`+strings.ReplaceAll(protocol, "/", "-")+`"`)
		for _, line := range strings.Split(s.stderr.String(), "\n") {
			if strings.Contains(line, `"request_id":"traced-`) {
				assert.Regexp(t, `"trace_id":"[0-9a-f]{32}","span_id":"[0-9a-f]{16}"`, line, protocol)
			}
		}
	}

	off := startServer(t, env(t.TempDir(), "OTEL_EXPORTER_OTLP_ENDPOINT=", "OTEL_SDK_DISABLED=true"))
	code, _, _ = doJSON(t, http.MethodGet, off.base+"/v1/config", nil, map[string]string{"X-Request-Id": "untraced"})
	require.Equal(t, http.StatusOK, code)
	off.logContains(t, `"request_id":"untraced"`)
	assert.NotContains(t, off.stderr.String(), "trace_id", "no trace id without tracing")
	assert.NotContains(t, off.stderr.String(), "tracing is on")
}
