package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gtc-dev/gtc/cmd/internal/loadkit"
)

// instrumentationTarget is the most the metrics and traces may cost, in % of the list
// latency and of the PUT throughput of the uninstrumented server.
const instrumentationTarget = 3.0

// instrVariant is one way of running the server in the instrumentation suite.
type instrVariant struct {
	name    string
	env     []string
	metrics bool // GET /metrics is expected to answer 200 (404 when off)
	traces  bool // spans are expected at the OTLP sink
}

// instrRound is what one round of one variant measured.
type instrRound struct {
	round        int
	list         []time.Duration
	listMedian   time.Duration
	rate         float64
	writeErrs    int64
	wlat         []time.Duration
	sinkRequests int64
	sinkBytes    int64
	rssPeak      int64
	cpuPerList   time.Duration // server CPU time (user + system) per timed list request
	cpuPerPut    time.Duration // server CPU time per PUT, background work (commits, span export) included
}

// instrumentationSuite measures what the Prometheus metrics and the OpenTelemetry traces cost:
// the list latency and the PUT throughput of the API suite with both off, with the default
// settings (metrics on) and with traces sent to an OTLP sink in this process as well. The
// variants run in interleaved rounds whose order rotates, so that drift of the machine (page
// cache, WAL size, other load) falls on every variant alike.
func instrumentationSuite(ctx context.Context, o options, dir string, out io.Writer) error {
	if o.rounds < 1 {
		return fmt.Errorf("--rounds %d: must be at least 1", o.rounds)
	}
	// A developer's OTEL_* settings would reach every variant through the child's
	// environment (loadkit.Env keeps everything but GTC_*); only the traces variant sets them.
	var dropped []string
	for _, e := range os.Environ() {
		if k, _, _ := strings.Cut(e, "="); strings.HasPrefix(k, "OTEL_") {
			dropped = append(dropped, k)
			_ = os.Unsetenv(k)
		}
	}
	if len(dropped) > 0 {
		fmt.Fprintf(out, "ignoring %s from the environment\n", strings.Join(dropped, ", "))
	}

	start := time.Now()
	if err := seedStore(ctx, o.gtc, dir, o.items, o.datasets); err != nil {
		return err
	}
	fmt.Fprintf(out, "%-44s %s\n", fmt.Sprintf("seed %d items (or reuse)", o.items), time.Since(start).Round(time.Millisecond))

	sink, err := startOTLPSink()
	if err != nil {
		return fmt.Errorf("OTLP sink: %w", err)
	}
	defer sink.close()

	variants := []instrVariant{
		{name: "off", env: []string{"GTC_METRICS_ENABLED=false"}},
		{name: "metrics", metrics: true},
		{name: "metrics+traces", metrics: true, traces: true,
			env: []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + sink.url, "OTEL_BSP_SCHEDULE_DELAY=1000"}},
	}
	fmt.Fprintf(out, "%d rounds, order rotated per round; each: start the server, %d untimed + %d timed list requests, PUT with %d writers for %s, stop\n",
		o.rounds, o.instrWarmup, o.instrListN, o.writers, o.instrWriteTime)
	fmt.Fprintf(out, "OTLP sink (http/protobuf) at %s\n\n", sink.url)

	results := make(map[string][]instrRound, len(variants))
	for r := 0; r < o.rounds; r++ {
		for i := range variants {
			v := variants[(i+r)%len(variants)]
			res, err := instrumentationRound(ctx, o, dir, v, sink)
			if err != nil {
				return fmt.Errorf("round %d, %s: %w", r+1, v.name, err)
			}
			res.round = r + 1
			results[v.name] = append(results[v.name], res)
			ls := loadkit.Summarize(slices.Clone(res.list))
			ws := loadkit.Summarize(slices.Clone(res.wlat))
			line := fmt.Sprintf("round %d %-15s list median %s p99 %s | PUT %.0f writes/s (%d errors), median %s p99 %s | server CPU %s/list %s/PUT | RSS peak %.1f MiB",
				r+1, v.name, loadkit.MS(ls.P50), loadkit.MS(ls.P99), res.rate, res.writeErrs, loadkit.MS(ws.P50), loadkit.MS(ws.P99),
				us(res.cpuPerList), us(res.cpuPerPut), loadkit.MiB(res.rssPeak))
			if v.traces {
				line += fmt.Sprintf(" | sink %d requests, %d bytes", res.sinkRequests, res.sinkBytes)
			}
			fmt.Fprintln(out, line)
		}
	}
	printInstrumentation(out, variants, results)
	return nil
}

// instrumentationRound starts the server for v, runs the list and the PUT phases, and stops it.
func instrumentationRound(ctx context.Context, o options, dir string, v instrVariant, sink *otlpSink) (instrRound, error) {
	var res instrRound
	reqBefore, bytesBefore := sink.requests.Load(), sink.bytes.Load()
	srv, err := loadkit.StartServer(ctx, o.gtc, dir, v.env...)
	if err != nil {
		return res, err
	}
	defer func() { _ = srv.Stop() }()
	c := &client{loadkit.NewClient(srv.Base, 128, 30*time.Second)}

	// The variant must be what it claims: /metrics answers only with metrics on.
	mres, _, err := c.Do(http.MethodGet, "/metrics", nil, nil)
	if err != nil {
		return res, err
	}
	if want := map[bool]int{true: http.StatusOK, false: http.StatusNotFound}[v.metrics]; mres.StatusCode != want {
		return res, fmt.Errorf("GET /metrics answered %d, want %d (see %s)", mres.StatusCode, want, srv.LogPath)
	}

	var datasets []string
	if err := c.GetJSON("/v1/datasets", &datasets); err != nil {
		return res, err
	}
	if len(datasets) == 0 {
		return res, errors.New("the store has no datasets")
	}
	if o.instrWarmup > 0 {
		if _, err := c.listPhase(datasets, o.instrWarmup); err != nil {
			return res, err
		}
	}
	cpu0 := procCPU(srv.Pid())
	if res.list, err = c.listPhase(datasets, o.instrListN); err != nil {
		return res, err
	}
	res.cpuPerList = (procCPU(srv.Pid()) - cpu0) / time.Duration(len(res.list))
	keys, err := c.collectKeys(datasets, max(o.writers*8, 800))
	if err != nil {
		return res, err
	}
	cpu0 = procCPU(srv.Pid())
	if res.rate, res.wlat, res.writeErrs, err = c.writePhase(keys, o.writers, o.instrWriteTime); err != nil {
		return res, err
	}
	res.cpuPerPut = (procCPU(srv.Pid()) - cpu0) / time.Duration(max(1, len(res.wlat)))
	res.listMedian = median(slices.Clone(res.list))
	res.rssPeak = srv.PeakRSS()
	if err := srv.Stop(); err != nil {
		return res, fmt.Errorf("stop: %w (see %s)", err, srv.LogPath)
	}
	// Stop waits for the process to exit, and the exporter flushes its last batch on the way out.
	res.sinkRequests, res.sinkBytes = sink.requests.Load()-reqBefore, sink.bytes.Load()-bytesBefore
	switch {
	case v.traces && res.sinkRequests == 0:
		return res, fmt.Errorf("no traces reached the OTLP sink (see %s)", srv.LogPath)
	case !v.traces && res.sinkRequests != 0:
		return res, fmt.Errorf("%d requests reached the OTLP sink with tracing off", res.sinkRequests)
	}
	if n := sink.rejected.Load(); n > 0 {
		return res, fmt.Errorf("the OTLP sink got %d requests that were not POST /v1/traces", n)
	}
	return res, nil
}

// printInstrumentation prints the figures of each variant, its delta against "off" and the
// verdict against the target.
func printInstrumentation(out io.Writer, variants []instrVariant, results map[string][]instrRound) {
	type figures struct {
		listMedian, listP99 time.Duration
		roundMedians        []time.Duration
		rates               []float64
		rateMedian          float64
	}
	fig := map[string]figures{}
	for _, v := range variants {
		var f figures
		var pooled []time.Duration
		for _, r := range results[v.name] {
			pooled = append(pooled, r.list...)
			f.roundMedians = append(f.roundMedians, r.listMedian)
			f.rates = append(f.rates, r.rate)
		}
		s := loadkit.Summarize(pooled)
		f.listMedian, f.listP99 = s.P50, s.P99
		f.rateMedian = medianFloat(f.rates)
		fig[v.name] = f
	}
	off := fig["off"]
	pct := func(v, base float64) float64 { return (v - base) / base * 100 }

	fmt.Fprintf(out, "\ninstrumentation cost (list: pooled over rounds; PUT: median of the rounds)\n")
	for _, v := range variants {
		f := fig[v.name]
		meds := make([]string, len(f.roundMedians))
		for i, d := range f.roundMedians {
			meds[i] = loadkit.MS(d)
		}
		rates := make([]string, len(f.rates))
		for i, r := range f.rates {
			rates[i] = fmt.Sprintf("%.0f", r)
		}
		fmt.Fprintf(out, "%-15s list median %s p99 %s (round medians %s; spread %s) | PUT %.0f writes/s (rounds %s; spread %s)",
			v.name, loadkit.MS(f.listMedian), loadkit.MS(f.listP99), strings.Join(meds, ", "), fmtSpread(spreadDur(f.roundMedians), len(f.roundMedians)),
			f.rateMedian, strings.Join(rates, ", "), fmtSpread(spreadFloat(f.rates), len(f.rates)))
		if v.name != "off" {
			fmt.Fprintf(out, " | vs off: list median %+.1f%%, p99 %+.1f%%, PUT %+.1f%%",
				pct(float64(f.listMedian), float64(off.listMedian)), pct(float64(f.listP99), float64(off.listP99)), pct(f.rateMedian, off.rateMedian))
		}
		fmt.Fprintln(out)
	}
	for _, v := range variants {
		if !v.traces {
			continue
		}
		var req, bytes int64
		for _, r := range results[v.name] {
			req += r.sinkRequests
			bytes += r.sinkBytes
		}
		fmt.Fprintf(out, "%-15s OTLP sink received %d POST /v1/traces, %d bytes (%.1f MiB) over %d rounds\n",
			v.name, req, bytes, loadkit.MiB(bytes), len(results[v.name]))
	}

	// CPU per request hardly depends on what else the machine runs, unlike latency and
	// throughput; it shows the cost when the other two are lost in the noise.
	fmt.Fprintln(out)
	var offList, offPut []float64
	for _, r := range results["off"] {
		offList, offPut = append(offList, float64(r.cpuPerList)), append(offPut, float64(r.cpuPerPut))
	}
	for _, v := range variants {
		var cl, cp []float64
		for _, r := range results[v.name] {
			cl, cp = append(cl, float64(r.cpuPerList)), append(cp, float64(r.cpuPerPut))
		}
		fmt.Fprintf(out, "%-15s server CPU per list request %s (spread %s), per PUT %s (spread %s); medians of the rounds",
			v.name, us(time.Duration(medianFloat(cl))), fmtSpread(spreadFloat(cl), len(cl)), us(time.Duration(medianFloat(cp))), fmtSpread(spreadFloat(cp), len(cp)))
		if v.name != "off" {
			fmt.Fprintf(out, " | vs off: list %+.1f%%, PUT %+.1f%%", pct(medianFloat(cl), medianFloat(offList)), pct(medianFloat(cp), medianFloat(offPut)))
		}
		fmt.Fprintln(out)
	}

	// Paired per-round deltas: each round's variant against the "off" of the same round.
	fmt.Fprintln(out)
	for _, v := range variants[1:] {
		var dl, dp []float64
		for i, r := range results[v.name] {
			base := results["off"][i]
			dl = append(dl, pct(float64(r.listMedian), float64(base.listMedian)))
			dp = append(dp, pct(r.rate, base.rate))
		}
		fmt.Fprintf(out, "%-15s per-round delta vs off: list median %s (median %+.1f%%); PUT %s (median %+.1f%%)\n",
			v.name, signedList(dl), medianFloat(dl), signedList(dp), medianFloat(dp))
	}

	fmt.Fprintln(out)
	for _, v := range variants[1:] {
		f := fig[v.name]
		dl := pct(float64(f.listMedian), float64(off.listMedian))
		dp := pct(f.rateMedian, off.rateMedian)
		verdict := "MET"
		if dl > instrumentationTarget || dp < -instrumentationTarget {
			verdict = "MISSED"
		}
		fmt.Fprintf(out, "verdict %-15s %s (target ≤ %.0f%%): list median %s vs %s off (%+.1f%%), PUT %.0f vs %.0f writes/s off (%+.1f%%); off's own round spread: list %s, PUT %s\n",
			v.name, verdict, instrumentationTarget, loadkit.MS(f.listMedian), loadkit.MS(off.listMedian), dl,
			f.rateMedian, off.rateMedian, dp, fmtSpread(spreadDur(off.roundMedians), len(off.rates)), fmtSpread(spreadFloat(off.rates), len(off.rates)))
	}
	if sl, sp := spreadDur(off.roundMedians), spreadFloat(off.rates); sl > instrumentationTarget || sp > instrumentationTarget {
		fmt.Fprintf(out, "note: the rounds of \"off\" alone differ by %.1f%% (list median) and %.1f%% (PUT) from one another, more than the %.0f%% target; a delta smaller than that spread is within this run's noise\n",
			sl, sp, instrumentationTarget)
	}
}

// procCPU is the user + system CPU time a process has used so far, from /proc (Linux, at
// the usual 100 ticks per second); 0 when it cannot be read.
func procCPU(pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces; the fields after it start at state.
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * (time.Second / 100)
}

// us prints a duration in microseconds.
func us(d time.Duration) string { return fmt.Sprintf("%dµs", d.Microseconds()) }

func median(lat []time.Duration) time.Duration {
	slices.Sort(lat)
	return loadkit.Percentile(lat, 0.5)
}

// medianFloat is the middle value of v, the mean of the two middle ones for an even count.
func medianFloat(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// spreadFloat is (max − min) / median of v, in %.
func spreadFloat(v []float64) float64 {
	m := medianFloat(v)
	if len(v) == 0 || m == 0 {
		return 0
	}
	return (slices.Max(v) - slices.Min(v)) / m * 100
}

func spreadDur(v []time.Duration) float64 {
	f := make([]float64, len(v))
	for i, d := range v {
		f[i] = float64(d)
	}
	return spreadFloat(f)
}

// fmtSpread prints a spread in %, or says that one round has none.
func fmtSpread(pct float64, rounds int) string {
	if rounds < 2 {
		return "n/a (1 round)"
	}
	return fmt.Sprintf("%.1f%%", pct)
}

func signedList(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprintf("%+.1f%%", x)
	}
	return strings.Join(s, ", ")
}

// otlpSink stands in for an OpenTelemetry collector: it accepts OTLP/HTTP trace exports,
// discards them and counts them, so a run shows that the server really sent its spans.
type otlpSink struct {
	url      string
	srv      *http.Server
	requests atomic.Int64 // POST /v1/traces answered
	bytes    atomic.Int64 // their request bodies, as sent (compressed if they were)
	rejected atomic.Int64 // anything else
}

func startOTLPSink() (*otlpSink, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &otlpSink{url: "http://" + l.Addr().String()}
	s.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" {
			s.rejected.Add(1)
			http.NotFound(w, r)
			return
		}
		n, err := io.Copy(io.Discard, r.Body)
		if err != nil {
			s.rejected.Add(1)
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		s.bytes.Add(n)
		s.requests.Add(1)
		// An empty ExportTraceServiceResponse: everything accepted.
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	})}
	go func() { _ = s.srv.Serve(l) }()
	return s, nil
}

func (s *otlpSink) close() { _ = s.srv.Close() }
