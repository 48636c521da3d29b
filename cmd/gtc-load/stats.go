package main

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gtc-dev/gtc/cmd/internal/loadkit"
)

// Operation kinds, in the order the report lists them. Item reads and item writes are the
// two classes the p99 targets are about.
const (
	opSelfServe = "POST /v1/assignments/self-serve"
	opMy        = "GET /v1/assignments/my"
	opGetItem   = "GET item"
	opEdit      = "PUT assignment (save)"
	opApprove   = "PUT assignment (approve)"
	opEditorPut = "PUT item (editor)"
	opList      = "GET /v1/ground-truths (list)"
	opExport    = "POST /v1/ground-truths/snapshot"
	opPreview   = "agent manage_tags (preview)"
	opExecute   = "agent manage_tags (execute)"
	opListOps   = "agent list_tag_operations"
)

var opOrder = []string{opSelfServe, opMy, opGetItem, opEdit, opApprove, opEditorPut, opList, opExport, opPreview, opExecute, opListOps}

func isItemRead(kind string) bool  { return kind == opGetItem }
func isItemWrite(kind string) bool { return kind == opEdit || kind == opApprove || kind == opEditorPut }

type kindStats struct {
	lat       []time.Duration
	byStatus  map[int]int
	transport int
}

// window is what the answers that arrived in one timeline window add up to.
type window struct {
	n       int
	slowest time.Duration
}

// timelineStep is the width of one timeline window.
const timelineStep = 5 * time.Second

// recorder collects every timed request; it is safe for concurrent use.
type recorder struct {
	mu       sync.Mutex
	start    time.Time     // of the load: the timeline's origin
	last     time.Duration // the last answer, after start
	windows  []window
	kinds    map[string]*kindStats
	problems []string // the first things the workload did not expect, for the report
	nNotes   int      // problems that are not a status: fields not echoed, tool errors, bad answers
}

func newRecorder() *recorder { return &recorder{kinds: map[string]*kindStats{}} }

func (r *recorder) kind(k string) *kindStats {
	ks := r.kinds[k]
	if ks == nil {
		ks = &kindStats{byStatus: map[int]int{}}
		r.kinds[k] = ks
	}
	return ks
}

// observe records one request: its latency, and its status (err != nil: a transport error,
// no status). Answers other than 2xx, 409 and 412 are kept as samples for the report.
func (r *recorder) observe(kind string, d time.Duration, status int, err error, body []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ks := r.kind(kind)
	ks.lat = append(ks.lat, d)
	if !r.start.IsZero() {
		at := time.Since(r.start)
		r.last = max(r.last, at)
		w := max(0, int(at/timelineStep))
		for len(r.windows) <= w {
			r.windows = append(r.windows, window{})
		}
		r.windows[w].n++
		r.windows[w].slowest = max(r.windows[w].slowest, d)
	}
	if err != nil {
		ks.transport++
		r.problem("%s: %v", kind, err)
		return
	}
	ks.byStatus[status]++
	if !expectedStatus(status) {
		r.problem("%s: %d %.300s", kind, status, body)
	}
}

// problem keeps a sample of something the workload did not expect (the first 20).
func (r *recorder) problem(format string, args ...any) {
	if len(r.problems) < 20 {
		r.problems = append(r.problems, fmt.Sprintf(format, args...))
	}
}

// note records a problem that is not a request's status (a field not echoed, an agent
// tool error).
func (r *recorder) note(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nNotes++
	r.problem(format, args...)
}

// notes counts the problems that are not a status.
func (r *recorder) notes() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.nNotes
}

// samples returns the first problems, for the report.
func (r *recorder) samples() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.problems)
}

// expectedStatus: success, or a conflict the workload provokes on purpose (412 on a stale
// If-Match; 409 where the server gives up a contended write of its own).
func expectedStatus(s int) bool {
	return s/100 == 2 || s == http.StatusPreconditionFailed || s == http.StatusConflict
}

// totals sums the recorder up.
type totals struct {
	requests, ok, conflicts, client4xx, server5xx, transport int
	byStatus                                                 map[int]int
	reads, writes                                            loadkit.Summary
}

func (r *recorder) totals() totals {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := totals{byStatus: map[int]int{}}
	var reads, writes []time.Duration
	for k, ks := range r.kinds {
		t.requests += len(ks.lat)
		t.transport += ks.transport
		for s, n := range ks.byStatus {
			t.byStatus[s] += n
			switch {
			case s/100 == 2:
				t.ok += n
			case s == http.StatusPreconditionFailed || s == http.StatusConflict:
				t.conflicts += n
			case s/100 == 5:
				t.server5xx += n
			default:
				t.client4xx += n
			}
		}
		if isItemRead(k) {
			reads = append(reads, ks.lat...)
		}
		if isItemWrite(k) {
			writes = append(writes, ks.lat...)
		}
	}
	t.reads, t.writes = loadkit.Summarize(reads), loadkit.Summarize(writes)
	return t
}

// printOps prints one line per operation kind.
func (r *recorder) printOps(out io.Writer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(out, "%-34s %7s %9s %9s %9s %9s  %s\n", "operation", "n", "median", "p90", "p99", "max", "answers")
	kinds := slices.Clone(opOrder)
	for k := range r.kinds {
		if !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	for _, k := range kinds {
		ks := r.kinds[k]
		if ks == nil {
			continue
		}
		s := loadkit.Summarize(slices.Clone(ks.lat))
		fmt.Fprintf(out, "%-34s %7d %9s %9s %9s %9s  %s\n", k, s.N, loadkit.MS(s.P50), loadkit.MS(s.P90), loadkit.MS(s.P99), loadkit.MS(s.Max),
			statusText(ks.byStatus, ks.transport))
	}
}

// begin sets the origin of the timeline.
func (r *recorder) begin(t time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.start = t
}

// printTimeline prints the answers per second and the slowest answer of each window, so
// a stall or a slow start shows.
func (r *recorder) printTimeline(out io.Writer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rates := make([]string, len(r.windows))
	slowest := make([]string, len(r.windows))
	for i, w := range r.windows {
		span := min(timelineStep, r.last-time.Duration(i)*timelineStep) // the last window may be shorter
		rates[i] = fmt.Sprintf("%.0f", float64(w.n)/max(span, time.Millisecond).Seconds())
		slowest[i] = loadkit.MS(w.slowest)
	}
	fmt.Fprintf(out, "%-12s answers/s per %s: %s\n", "timeline", timelineStep, strings.Join(rates, " "))
	fmt.Fprintf(out, "%-12s slowest answer per %s: %s\n", "", timelineStep, strings.Join(slowest, " "))
}

// statusText lists answers by status, e.g. "200×1234 412×5 transport×1".
func statusText(by map[int]int, transport int) string {
	codes := make([]int, 0, len(by))
	for s := range by {
		codes = append(codes, s)
	}
	slices.Sort(codes)
	parts := make([]string, 0, len(codes)+1)
	for _, s := range codes {
		parts = append(parts, fmt.Sprintf("%d×%d", s, by[s]))
	}
	if transport > 0 {
		parts = append(parts, fmt.Sprintf("transport-error×%d", transport))
	}
	return strings.Join(parts, " ")
}
