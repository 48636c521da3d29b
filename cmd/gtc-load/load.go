package main

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gtc-dev/gtc/cmd/internal/ledger"
	"github.com/gtc-dev/gtc/cmd/internal/loadkit"
)

// outcome is what a run found; the test asserts on it.
type outcome struct {
	totals       totals
	ledger       ledger.Report
	ledgerErr    error
	problems     int // unexpected answers, fields not echoed, agent tool errors
	serverExited error
	p99Missed    bool
	strict       bool
	elapsed      time.Duration
}

// passed applies the rules of the package comment.
func (o *outcome) passed() bool {
	return o.totals.server5xx == 0 && o.totals.transport == 0 && o.problems == 0 && o.serverExited == nil &&
		o.ledgerErr == nil && o.ledger.OK() && o.ledger.Acked > 0 && !(o.strict && o.p99Missed)
}

// roles is how the clients are split.
type roles struct{ curators, editors, explorers, exporters, agents int }

func splitRoles(clients int) roles {
	var r roles
	left := clients
	take := func(n int) int {
		n = min(n, left-1) // a curator is always left
		n = max(n, 0)
		left -= n
		return n
	}
	r.agents = take(1)
	r.exporters = take(1)
	r.editors = take(max(1, clients/16))
	r.explorers = take(max(1, clients/8))
	r.curators = left
	return r
}

func (r roles) String() string {
	return fmt.Sprintf("%d curators, %d editors, %d explorers, %d exporter, %d agent", r.curators, r.editors, r.explorers, r.exporters, r.agents)
}

// load is the state the roles share.
type load struct {
	c       *loadkit.Client // the load's requests, with --timeout
	slow    *loadkit.Client // setup, check and the agent's long calls
	led     *ledger.Ledger
	rec     *recorder
	runID   string
	queue   string
	library string
	libKeys []ledger.Key

	start, deadline time.Time
	think           time.Duration
	budget          atomic.Int64 // requests left, when capped
	capped          bool
	stopped         atomic.Bool
	seq             atomic.Int64

	claimed, approved, dry atomic.Int64
	foreignMax             atomic.Int64 // most items of other datasets one curator held
	lateClaims             atomic.Int64 // claims found only after the load (reconcileClaims)
	mu                     sync.Mutex
	curators               []*curatorState // under mu
	agentLines             []string        // under mu
}

// running reports whether the roles should go on; it stops them at the deadline.
func (l *load) running() bool {
	if l.stopped.Load() {
		return false
	}
	if time.Now().After(l.deadline) {
		l.stopped.Store(true)
		return false
	}
	return true
}

// take reserves one request of the budget; false stops the load.
func (l *load) take() bool {
	if !l.running() {
		return false
	}
	if l.capped && l.budget.Add(-1) < 0 {
		l.stopped.Store(true)
		return false
	}
	return true
}

// answer is one HTTP exchange.
type answer struct {
	status int
	body   []byte
	err    error
}

// sendMode says how a request of the load is sent.
type sendMode int

const (
	// measured requests count against --requests, are not sent once the load is over, and
	// time out after --timeout.
	measured sendMode = iota
	// long requests are measured ones that may take long by design (an agent execution
	// waits for its operation): they get the setup client's timeout.
	long
	// followUp requests are the agent's reads of its operation's results, which the
	// ledger needs: sent even after the load is over, with the long timeout.
	followUp
)

// send times one request of the load (false: the load is over, nothing was sent).
func (l *load) send(kind, method, path string, body any, user, ifMatch string, mode sendMode) (answer, bool) {
	if mode != followUp && l.think > 0 {
		l.sleep(l.think)
	}
	if mode != followUp && !l.take() {
		return answer{}, false
	}
	var raw []byte
	if body != nil {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			panic(err) // the workload's own bodies always marshal
		}
	}
	hdr := map[string]string{}
	if user != "" {
		hdr["X-User-Id"] = user
	}
	if ifMatch != "" {
		hdr["If-Match"] = ifMatch
	}
	t := time.Now()
	c := l.c
	if mode != measured {
		c = l.slow
	}
	res, data, err := c.Do(method, path, raw, hdr)
	d := time.Since(t)
	a := answer{body: data, err: err}
	if err == nil {
		a.status = res.StatusCode
	}
	l.rec.observe(kind, d, a.status, err, data)
	return a, true
}

// item is the part of an item answer the workload reads.
type item struct {
	ID          string   `json:"id"`
	DatasetName string   `json:"datasetName"`
	Bucket      string   `json:"bucket"`
	ETag        string   `json:"_etag"`
	Status      string   `json:"status"`
	Comment     string   `json:"comment"`
	ManualTags  []string `json:"manualTags"`
	AssignedTo  *string  `json:"assignedTo"`
}

func (it item) key() ledger.Key {
	return ledger.Key{Dataset: it.DatasetName, Bucket: it.Bucket, ID: it.ID}
}

func itemPath(prefix string, k ledger.Key) string {
	return prefix + "/" + url.PathEscape(k.Dataset) + "/" + url.PathEscape(k.Bucket) + "/" + url.PathEscape(k.ID)
}

// normETag drops a W/ prefix and one pair of quotes, as the server compares tags
// (gtc.SameETag), so the ledger sees one spelling of each.
func normETag(s string) string {
	s = strings.TrimPrefix(strings.TrimSpace(s), "W/")
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	return s
}

// getItem reads one item; ok is false when it could not be read (recorded).
func (l *load) getItem(k ledger.Key, user string) (item, bool) {
	a, sent := l.send(opGetItem, http.MethodGet, itemPath("/v1/ground-truths", k), nil, user, "", measured)
	if !sent || a.err != nil || a.status != http.StatusOK {
		return item{}, false
	}
	var it item
	if err := json.Unmarshal(a.body, &it); err != nil {
		l.rec.note("%s: answer is not an item: %v", opGetItem, err)
		return item{}, false
	}
	return it, true
}

// write sends one conditional write of fields to path with If-Match etag and records it
// in the ledger: a 200 as acknowledged (after checking the answer echoes the fields), a
// transport error or a 5xx as unknown. It returns the new raw ETag, "" when nothing is
// known to have been written.
func (l *load) write(kind, path string, k ledger.Key, etag string, fields ledger.Fields, user string) string {
	a, sent := l.send(kind, http.MethodPut, path, fields, user, etag, measured)
	switch {
	case !sent:
		return ""
	case a.err != nil || a.status/100 == 5:
		l.led.Unknown(k, normETag(etag), fields)
		return ""
	case a.status != http.StatusOK:
		return "" // 412: someone wrote first; the next round reads again
	}
	var doc map[string]any
	if err := json.Unmarshal(a.body, &doc); err != nil {
		l.rec.note("%s %s: answer is not an item: %v", kind, k, err)
		l.led.Unknown(k, normETag(etag), fields)
		return ""
	}
	after, _ := doc["_etag"].(string)
	if after == "" {
		l.rec.note("%s %s: answer has no _etag", kind, k)
		l.led.Unknown(k, normETag(etag), fields)
		return ""
	}
	for name, want := range fields {
		if !sameJSON(want, doc[name]) {
			l.rec.note("%s %s: %s answered as %s, sent %s", kind, k, name, jsonText(doc[name]), jsonText(want))
		}
	}
	l.led.Ack(k, normETag(etag), normETag(after), fields)
	return after
}

func sameJSON(a, b any) bool {
	var x, y any
	_ = json.Unmarshal([]byte(jsonText(a)), &x)
	_ = json.Unmarshal([]byte(jsonText(b)), &y)
	return reflect.DeepEqual(x, y)
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// storeMax raises a to v when v is larger.
func storeMax(a *atomic.Int64, v int64) {
	for {
		cur := a.Load()
		if v <= cur || a.CompareAndSwap(cur, v) {
			return
		}
	}
}

// comment returns a value no other write of the run uses.
func (l *load) comment(who string) string {
	return fmt.Sprintf("gtc-load %s %s #%d", l.runID, who, l.seq.Add(1))
}

// Manual tags the writers choose from: one source (an exclusive group) plus some topics
// and intents, sorted and normalized as the server stores them, so the answer echoes them
// exactly. The agent's tags (topic:performance, intent:feedback) are left to the agent.
var (
	sources = []string{"source:sa", "source:sme", "source:sme_curated"}
	extras  = []string{"intent:action", "intent:clarification", "intent:informational", "topic:compatibility", "topic:general",
		"topic:install", "topic:license", "topic:security"}
)

func pickTags(r *rand.Rand) []string {
	tags := []string{sources[r.IntN(len(sources))]}
	for _, t := range extras {
		if r.IntN(4) == 0 {
			tags = append(tags, t)
		}
	}
	slices.Sort(tags)
	return tags
}

// runLoad sets up, runs the load, checks the ledger and prints the report.
func runLoad(ctx context.Context, o options, out io.Writer) (*outcome, error) {
	fmt.Fprintf(out, "gtc-load  %s  %d CPU  %s  %s\n", time.Now().UTC().Format("2006-01-02"), runtime.NumCPU(), loadkit.CPUModel(), runtime.Version())
	tg, err := startTarget(ctx, o, out)
	if err != nil {
		return nil, err
	}
	defer tg.close()

	var idb [4]byte
	_, _ = crand.Read(idb[:])
	l := &load{
		c: tg.client(o.clients+8, o.timeout),
		// Setup, check and the agent's long calls get a client of their own that --timeout
		// does not shorten.
		slow:  tg.client(16, max(o.timeout, 10*time.Minute)),
		led:   ledger.New(),
		rec:   newRecorder(),
		runID: hex.EncodeToString(idb[:]),
		think: o.think,
	}
	l.queue, l.library = "lt-"+l.runID+"-queue", "lt-"+l.runID+"-library"
	rs := splitRoles(o.clients)
	capText, thinkText := "no request cap", "no think time"
	if o.requests > 0 {
		capText = fmt.Sprintf("at most %d requests", o.requests)
	}
	if o.think > 0 {
		thinkText = fmt.Sprintf("%s think time", o.think)
	}
	fmt.Fprintf(out, "run       %s: %d clients (%s) for %s, %s, %s, seed %d\n", l.runID, o.clients, rs, o.duration, thinkText, capText, o.seed)

	keys, err := l.setup(o, out)
	if err != nil {
		return nil, err
	}
	res := &outcome{strict: o.strict}
	var fig rssFigures
	fig.setup = tg.resetPeak()
	res.elapsed, res.serverExited = l.run(ctx, o, rs, tg)
	fig.peak, fig.end = tg.peak(), tg.rss()

	var checkTook time.Duration
	if res.serverExited == nil {
		t := time.Now()
		res.ledger, res.ledgerErr = l.check(ctx, keys)
		checkTook = time.Since(t)
	} else {
		res.ledgerErr = errors.New("not checked: the server is gone")
	}
	res.totals = l.rec.totals()
	res.problems = l.rec.notes()
	res.p99Missed = res.totals.reads.P99 >= o.targetP99 || res.totals.writes.P99 >= o.targetP99
	l.report(out, o, res, tg.measured(), fig, checkTook)
	for _, srv := range tg.srvs {
		if err := srv.Stop(); err != nil && res.serverExited == nil {
			fmt.Fprintf(out, "%-12s stop %s: %v\n", "server", srv.Base, err)
		}
	}
	return res, nil
}

// target is the server under load: one gtc-load started, or one given with --url; or the
// replicas gtc-load started on one Cosmos DB database (--replicas).
type target struct {
	base     string
	replicas []string            // the other replicas' root URLs
	srvs     []*loadkit.Server   // every server gtc-load started
	sampler  *loadkit.RSSSampler // with --url and --pid
	pid      int
	cleanup  []func()
}

// client returns a client that sends its requests to the replicas in turn.
func (tg *target) client(conns int, timeout time.Duration) *loadkit.Client {
	c := loadkit.NewClient(tg.base, conns, timeout)
	c.Replicas = tg.replicas
	return c
}

// startReplicas starts o.replicas servers on one new Cosmos DB database.
func (tg *target) startReplicas(ctx context.Context, o options, dir string, out io.Writer) error {
	var idb [4]byte
	_, _ = crand.Read(idb[:])
	db := "gtc-load-" + hex.EncodeToString(idb[:])
	env := []string{"GTC_LOG_LEVEL=warn", "GTC_REPO_BACKEND=cosmos", "GTC_COSMOS_ENDPOINT=" + o.cosmosEndpoint,
		"GTC_COSMOS_KEY=" + o.cosmosKey, "GTC_COSMOS_DB_NAME=" + db, "GTC_COSMOS_CREATE_CONTAINERS=true"}
	if strings.HasPrefix(o.cosmosEndpoint, "https://localhost") || strings.HasPrefix(o.cosmosEndpoint, "https://127.0.0.1") {
		env = append(env, "GTC_COSMOS_CONNECTION_VERIFY=false") // a local emulator's self-signed certificate
	}
	for i := range o.replicas {
		rdir := filepath.Join(dir, fmt.Sprintf("replica-%d", i+1))
		if err := os.MkdirAll(rdir, 0o700); err != nil {
			return err
		}
		srv, err := loadkit.StartServer(ctx, o.gtc, rdir, env...)
		if err != nil {
			return fmt.Errorf("start replica %d (%s serve): %w", i+1, o.gtc, err)
		}
		tg.srvs = append(tg.srvs, srv)
		tg.cleanup = append(tg.cleanup, func() { _ = srv.Stop() })
		if i == 0 {
			tg.base = srv.Base
		} else {
			tg.replicas = append(tg.replicas, srv.Base)
		}
		fmt.Fprintf(out, "replica   %d: %s serve on Cosmos DB %s, database %s, on %s, ready after %s\n", i+1, o.gtc, o.cosmosEndpoint, db,
			srv.Base, srv.ReadyAfter.Round(time.Millisecond))
	}
	return nil
}

func startTarget(ctx context.Context, o options, out io.Writer) (*target, error) {
	tg := &target{base: strings.TrimRight(o.url, "/"), pid: o.pid}
	if tg.base != "" {
		if o.pid != 0 {
			tg.sampler = loadkit.SampleRSS(o.pid, 50*time.Millisecond)
			tg.cleanup = append(tg.cleanup, tg.sampler.Stop)
		}
		fmt.Fprintf(out, "server    %s (running; pid %s)\n", tg.base, pidText(o.pid))
		return tg, nil
	}
	dir := o.dataDir
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "gtc-load-"); err != nil {
			return nil, err
		}
		if !o.keep {
			tg.cleanup = append(tg.cleanup, func() { _ = os.RemoveAll(dir) })
		}
	}
	if o.replicas > 1 {
		if err := tg.startReplicas(ctx, o, dir, out); err != nil {
			tg.close()
			return nil, err
		}
		return tg, nil
	}
	srv, err := loadkit.StartServer(ctx, o.gtc, dir, "GTC_LOG_LEVEL=warn")
	if err != nil {
		tg.close()
		return nil, fmt.Errorf("start %s serve: %w", o.gtc, err)
	}
	tg.base, tg.srvs = srv.Base, []*loadkit.Server{srv}
	// Stop before the data directory goes (cleanups run last first).
	tg.cleanup = append(tg.cleanup, func() { _ = srv.Stop() })
	fmt.Fprintf(out, "server    %s serve (embedded SQLite) on %s, data dir %s, ready after %s\n", o.gtc, tg.base, dir, srv.ReadyAfter.Round(time.Millisecond))
	return tg, nil
}

func (tg *target) close() {
	for i := len(tg.cleanup) - 1; i >= 0; i-- {
		tg.cleanup[i]()
	}
}

// measured reports whether the server's RSS can be read.
func (tg *target) measured() bool { return tg.srv() != nil || tg.sampler != nil }

// srv is the server whose RSS is reported: the one gtc-load started, or the first replica;
// nil with --url.
func (tg *target) srv() *loadkit.Server {
	if len(tg.srvs) == 0 {
		return nil
	}
	return tg.srvs[0]
}

func (tg *target) rss() int64 {
	switch {
	case tg.srv() != nil:
		return tg.srv().RSS()
	case tg.sampler != nil:
		return loadkit.ReadRSS(tg.pid)
	}
	return 0
}

// resetPeak starts a new RSS peak at the current reading and returns it.
func (tg *target) resetPeak() int64 {
	v := tg.rss()
	switch {
	case tg.srv() != nil:
		tg.srv().ResetPeakRSS(v)
	case tg.sampler != nil:
		tg.sampler.Reset(v)
	}
	return v
}

func (tg *target) peak() int64 {
	switch {
	case tg.srv() != nil:
		return tg.srv().PeakRSS()
	case tg.sampler != nil:
		return tg.sampler.Peak()
	}
	return 0
}

// done is closed when a server gtc-load started exits (nil otherwise: never).
func (tg *target) done() <-chan struct{} {
	if len(tg.srvs) == 0 {
		return nil
	}
	ch := make(chan struct{})
	var once sync.Once
	for _, srv := range tg.srvs {
		go func() {
			<-srv.Done()
			once.Do(func() { close(ch) })
		}()
	}
	return ch
}

// exited describes the server that exited.
func (tg *target) exited() error {
	for _, srv := range tg.srvs {
		select {
		case <-srv.Done():
			return fmt.Errorf("the server %s exited during the load: %v (see %s)", srv.Base, srv.ExitErr(), srv.LogPath)
		default:
		}
	}
	return errors.New("a server exited during the load")
}

// rssFigures are the server's resident memory after setup, at its peak during the load
// and at the end.
type rssFigures struct{ setup, peak, end int64 }

// setup imports the fixture and records every item's ETag as a base; it returns the keys
// of every item, queue first.
func (l *load) setup(o options, out io.Writer) ([]ledger.Key, error) {
	t0 := time.Now()
	r := rand.New(rand.NewPCG(o.seed, 1))
	if err := importDataset(l.slow, r, l.queue, "q", o.queueItems, false); err != nil {
		return nil, err
	}
	if err := importDataset(l.slow, r, l.library, "l", o.libraryItems, true); err != nil {
		return nil, err
	}
	imported := time.Since(t0)
	keys, err := recordBases(l.slow, l.led, l.queue, o.queueItems)
	if err != nil {
		return nil, err
	}
	if l.libKeys, err = recordBases(l.slow, l.led, l.library, o.libraryItems); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "fixture   %d drafts in %s, %d approved items in %s: imported in %s, ETags of all %d recorded in %s\n",
		o.queueItems, l.queue, o.libraryItems, l.library, imported.Round(time.Millisecond), o.queueItems+o.libraryItems,
		(time.Since(t0) - imported).Round(time.Millisecond))
	return append(keys, l.libKeys...), nil
}

// run starts the roles and waits until every one has stopped: at the deadline, when the
// request budget is spent, on an interrupt, or when the server exits (reported).
func (l *load) run(ctx context.Context, o options, rs roles, tg *target) (time.Duration, error) {
	l.start = time.Now()
	l.deadline = l.start.Add(o.duration)
	l.rec.begin(l.start)
	if o.requests > 0 {
		l.capped = true
		l.budget.Store(o.requests)
	}
	var wg sync.WaitGroup
	spawn := func(role, n int, f func(i int, r *rand.Rand)) {
		for i := range n {
			wg.Add(1)
			r := rand.New(rand.NewPCG(o.seed, uint64(role)<<32|uint64(i)))
			go func() {
				defer wg.Done()
				f(i, r)
			}()
		}
	}
	spawn(1, rs.curators, l.curator)
	spawn(2, rs.editors, l.editor)
	spawn(3, rs.explorers, l.explorer)
	spawn(4, rs.exporters, func(int, *rand.Rand) { l.exporter(o.exportEvery) })
	spawn(5, rs.agents, func(int, *rand.Rand) { l.agent() })
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	var exited error
	srvDone, ctxDone := tg.done(), ctx.Done()
	for {
		select {
		case <-done:
			return time.Since(l.start), exited
		case <-srvDone:
			exited = tg.exited()
			l.stopped.Store(true)
			srvDone = nil
		case <-ctxDone:
			l.stopped.Store(true)
			ctxDone = nil
		}
	}
}

// check reads every item (in parallel) and walks the ledger's chains.
func (l *load) check(ctx context.Context, keys []ledger.Key) (ledger.Report, error) {
	if err := l.reconcileClaims(); err != nil {
		return ledger.Report{}, err
	}
	cur, err := fetchAll(l.slow, keys, 16)
	if err != nil {
		return ledger.Report{}, err
	}
	return l.led.Check(ctx, func(_ context.Context, k ledger.Key) (ledger.Current, error) {
		c, ok := cur[k]
		if !ok {
			return ledger.Current{}, fmt.Errorf("%s was not read", k)
		}
		return c, nil
	})
}
