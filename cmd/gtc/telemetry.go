package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/jobs"
	"github.com/gtc-dev/gtc/migrate"
	"github.com/gtc-dev/gtc/storage/observed"
)

// metrics is the Prometheus registry of the process and every series gtc counts. It is
// the observer of the HTTP API (api.RequestObserver), of the store (observed.Recorder), of
// exports, jobs, agent tools and Azure SDK retries.
type metrics struct {
	reg *prometheus.Registry

	requests      *prometheus.CounterVec
	duration      *prometheus.HistogramVec
	inFlight      prometheus.Gauge
	conflicts     *prometheus.CounterVec
	storeDuration *prometheus.HistogramVec
	storeErrors   *prometheus.CounterVec
	retries       *prometheus.CounterVec
	exports       *prometheus.CounterVec
	exportItems   *prometheus.CounterVec
	exportBytes   *prometheus.CounterVec
	jobs          *prometheus.CounterVec
	recompute     *prometheus.CounterVec
	agentOps      *prometheus.CounterVec
}

// latencyBuckets spans a cached read (1 ms) to a long export (60 s).
var latencyBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

func newMetrics() *metrics {
	reg := prometheus.NewRegistry()
	f := func(c prometheus.Collector) { reg.MustRegister(c) }
	m := &metrics{reg: reg}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gtc_http_requests_total",
		Help: "HTTP requests answered, by route template, method and status class."}, []string{"route", "method", "status_class"})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gtc_http_request_duration_seconds",
		Help: "Time to answer an HTTP request, by route template, method and status class.", Buckets: latencyBuckets},
		[]string{"route", "method", "status_class"})
	m.inFlight = prometheus.NewGauge(prometheus.GaugeOpts{Name: "gtc_http_requests_in_flight", Help: "HTTP requests being answered."})
	m.conflicts = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gtc_http_conflicts_total",
		Help: "Requests answered 412 Precondition Failed (a stale ETag), by route template."}, []string{"route"})
	m.storeDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gtc_store_operation_duration_seconds",
		Help: "Time of a store call, by backend and operation.", Buckets: latencyBuckets}, []string{"backend", "operation"})
	m.storeErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gtc_store_operation_errors_total",
		Help: "Store calls that returned an error, by backend, operation and reason (not_found, precondition_failed, conflict, unavailable, storage_full, canceled, timeout, invalid, too_large, other)."},
		[]string{"backend", "operation", "reason"})
	m.retries = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gtc_store_retries_total",
		Help: "Azure SDK requests tried again, by service (cosmos, blob) and the status of the try that was retried (or transport)."},
		[]string{"backend", "reason"})
	m.exports = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gtc_exports_total",
		Help: "Exports run, by mode, format and outcome (ok, failed, cancelled)."}, []string{"mode", "format", "outcome"})
	m.exportItems = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gtc_export_items_total",
		Help: "Items written by exports, by mode."}, []string{"mode"})
	m.exportBytes = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gtc_export_bytes_total",
		Help: "Bytes written by exports, by mode."}, []string{"mode"})
	m.jobs = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gtc_jobs_total",
		Help: "Background jobs finished, by type and status (succeeded, failed)."}, []string{"type", "status"})
	m.recompute = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gtc_recompute_items_total",
		Help: "Items a tag recompute looked at, by result (updated, skipped, error)."}, []string{"result"})
	m.agentOps = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gtc_agent_operations_total",
		Help: "Agent tool calls, by tool, mode (preview, execute, read) and outcome (ok or the error code)."},
		[]string{"tool", "mode", "outcome"})
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.inFlight, m.conflicts, m.storeDuration, m.storeErrors,
		m.retries, m.exports, m.exportItems, m.exportBytes, m.jobs, m.recompute, m.agentOps, buildInfo(),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		f(c)
	}
	return m
}

// handler serves the registry in the Prometheus text format.
func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// RequestStarted implements api.RequestObserver.
func (m *metrics) RequestStarted() { m.inFlight.Inc() }

// RequestDone implements api.RequestObserver.
func (m *metrics) RequestDone(route, method string, status int, d time.Duration) {
	m.inFlight.Dec()
	class := statusClass(status)
	m.requests.WithLabelValues(route, method, class).Inc()
	m.duration.WithLabelValues(route, method, class).Observe(d.Seconds())
	if status == 412 {
		m.conflicts.WithLabelValues(route).Inc()
	}
}

func statusClass(status int) string {
	if status < 100 || status > 599 {
		return "other"
	}
	return strconv.Itoa(status/100) + "xx"
}

// StoreCall implements observed.Recorder.
func (m *metrics) StoreCall(backend, op string, d time.Duration, err error) {
	m.storeDuration.WithLabelValues(backend, op).Observe(d.Seconds())
	if err != nil {
		m.storeErrors.WithLabelValues(backend, op, observed.Reason(err)).Inc()
	}
}

// azureRetry returns the retry callback of an Azure SDK client of service.
func (m *metrics) azureRetry(service string) func(reason string) {
	if m == nil {
		return nil
	}
	return func(reason string) { m.retries.WithLabelValues(service, reason).Inc() }
}

// ExportDone implements export.Observer.
func (m *metrics) ExportDone(mode, format, outcome string, items int, bytes int64, d time.Duration) {
	m.exports.WithLabelValues(mode, format, outcome).Inc()
	m.exportItems.WithLabelValues(mode).Add(float64(items))
	m.exportBytes.WithLabelValues(mode).Add(float64(bytes))
}

// jobFinished counts a finished server job.
func (m *metrics) jobFinished(j gtc.Job) { m.jobs.WithLabelValues(j.Type, j.Status).Inc() }

// Recomputed implements api.RecomputeObserver: the items of a tag recompute, by result.
func (m *metrics) Recomputed(res *gtc.RecomputeResult) {
	m.recompute.WithLabelValues("updated").Add(float64(res.Updated))
	m.recompute.WithLabelValues("skipped").Add(float64(res.Skipped))
	m.recompute.WithLabelValues("error").Add(float64(len(res.Errors)))
}

// agentOperation counts one agent tool call (agent.Options.Observe).
func (m *metrics) agentOperation(tool, mode, outcome string) {
	m.agentOps.WithLabelValues(tool, mode, outcome).Inc()
}

// commitCounter is a store that counts its commits (the SQLite store).
type commitCounter interface {
	Commits() (commits, writes uint64)
}

// storeCommits reports the SQLite writer's commits and the writes they carried at every
// scrape: their ratio is how many writes share one fsync.
func (m *metrics) storeCommits(st commitCounter) {
	m.reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "gtc_sqlite_commits_total",
			Help: "Write transactions the SQLite store committed (one fsync each with synchronous=FULL)."},
			func() float64 { c, _ := st.Commits(); return float64(c) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "gtc_sqlite_commit_writes_total",
			Help: "Store writes those transactions carried (group commit shares a commit among the writes waiting)."},
			func() float64 { _, w := st.Commits(); return float64(w) }))
}

// jobsInFlight reports the queued and running jobs of the server at every scrape.
func (m *metrics) jobsInFlight(r *jobs.Runner) {
	m.reg.MustRegister(&jobsCollector{jobs: r, desc: prometheus.NewDesc("gtc_jobs_in_flight",
		"Background jobs queued or running, by type and state.", []string{"type", "state"}, nil)})
}

type jobsCollector struct {
	jobs *jobs.Runner
	desc *prometheus.Desc
}

func (c *jobsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *jobsCollector) Collect(ch chan<- prometheus.Metric) {
	counts := map[[2]string]int{}
	for _, j := range c.jobs.Local() {
		if j.Status == gtc.JobQueued || j.Status == gtc.JobRunning {
			counts[[2]string{j.Type, j.Status}]++
		}
	}
	// The job types the server runs are always reported, at 0 when idle.
	for _, st := range []string{gtc.JobQueued, gtc.JobRunning} {
		counts[[2]string{"recompute-tags", st}] += 0
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), k[0], k[1])
	}
}

// tracingRequested reports whether the standard OTEL_* variables ask for traces: an OTLP
// endpoint is set, and neither OTEL_SDK_DISABLED=true nor OTEL_TRACES_EXPORTER=none.
func tracingRequested(getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")), "none") {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// testSpanExporter, when set by a test, receives every span synchronously instead of an
// OTLP exporter, and tracing is on whatever the environment says.
var testSpanExporter sdktrace.SpanExporter

// startTracing installs the OpenTelemetry SDK as the global tracer provider, with the W3C
// trace-context and baggage propagators, when the OTEL_* variables ask for traces. The
// exporter, its endpoint, headers, timeout and TLS, the sampler and the resource follow the
// standard variables. It returns the function that flushes and stops it, and whether tracing
// is on; with tracing off there is nothing to stop.
func startTracing(ctx context.Context, getenv func(string) string, serviceName string, log *slog.Logger) (stop func(context.Context) error, on bool, err error) {
	var opt sdktrace.TracerProviderOption
	switch {
	case testSpanExporter != nil:
		opt = sdktrace.WithSyncer(testSpanExporter)
	case !tracingRequested(getenv):
		return nil, false, nil
	default:
		protocol := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
		if protocol == "" {
			protocol = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
		}
		var exp sdktrace.SpanExporter
		var err error
		switch strings.TrimSpace(protocol) {
		case "", "http/protobuf":
			protocol = "http/protobuf"
			exp, err = otlptracehttp.New(ctx)
		case "grpc":
			exp, err = otlptracegrpc.New(ctx)
		default:
			return nil, false, fatal(fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%q: gtc sends traces with http/protobuf or grpc", protocol))
		}
		if err != nil {
			return nil, false, fatal(fmt.Errorf("trace exporter: %w", err))
		}
		opt = sdktrace.WithBatcher(exp)
		endpoint := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
		if endpoint == "" {
			endpoint = getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
		}
		log.Info("tracing is on", "protocol", protocol, "endpoint", endpoint)
	}
	// service.name defaults to GTC_SERVICE_NAME; OTEL_SERVICE_NAME and
	// OTEL_RESOURCE_ATTRIBUTES, read last, win.
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", serviceName), attribute.String("service.version", version)),
		resource.WithTelemetrySDK(), resource.WithHost(), resource.WithFromEnv())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, false, fatal(fmt.Errorf("trace resource: %w", err))
	}
	tp := sdktrace.NewTracerProvider(opt, sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("tracing", "err", err) }))
	return tp.Shutdown, true, nil
}

// commandSpan starts the span of one run of a long command ("job.migrate"): the parent of its
// batch and store spans. Call it after the app is built (which installs the tracer) and
// defer the returned function with the command's error.
func commandSpan(ctx context.Context, name string) (context.Context, func(*error)) {
	ctx, span := otel.Tracer("github.com/gtc-dev/gtc/cmd/gtc").Start(ctx, name)
	return ctx, func(errp *error) {
		if errp != nil && *errp != nil {
			span.SetStatus(codes.Error, (*errp).Error())
		}
		span.End()
	}
}

// writeMigrateMetrics writes the counters of one gtc migrate run to file, atomically, in
// the Prometheus text format: a migration runs as a job that no scraper reaches, so its
// figures go where a textfile collector (or a person) reads them.
func writeMigrateMetrics(file string, sum *migrate.Summary) error {
	docs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gtc_migrate_documents_total",
		Help: "Documents gtc migrate looked at, by result."}, []string{"result"})
	for result, n := range map[string]int{"migrated": sum.Migrated, "skipped": sum.Skipped, "failed": sum.Failed,
		"moved": sum.Moved, "reindexed": sum.Reindexed} {
		docs.WithLabelValues(result).Add(float64(n))
	}
	run := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "gtc_migrate_last_run",
		Help: "The last gtc migrate run: exit code, duration in seconds, end as a Unix time, and whether it was a dry run or a check."},
		[]string{"field"})
	dry := 0.0
	if sum.DryRun || sum.Check {
		dry = 1
	}
	run.WithLabelValues("exit_code").Set(float64(sum.ExitCode))
	run.WithLabelValues("duration_seconds").Set(float64(sum.DurationMS) / 1000)
	run.WithLabelValues("end_time_seconds").Set(float64(time.Now().Unix()))
	run.WithLabelValues("dry_run").Set(dry)
	// Only the run's own series: the runtime and process collectors of a process that has
	// ended would mislead whoever reads the file.
	reg := prometheus.NewRegistry()
	reg.MustRegister(docs, run, buildInfo())
	return prometheus.WriteToTextfile(file, reg)
}

// buildInfo is gtc_build_info: always 1, labelled with the versions.
func buildInfo() prometheus.Collector {
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "gtc_build_info",
		Help: "Always 1: the version of gtc and of Go it was built with."}, []string{"version", "go_version"})
	build.WithLabelValues(version, runtime.Version()).Set(1)
	return build
}
