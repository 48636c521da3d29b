package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc/storage/storetest/testenv"
)

// Dependency-unreachable fault tests (the load, fault and abuse suite): the real binary
// serves while the server behind one of its dependencies goes away mid-run and comes back.
// Each test starts its own emulator process on a free port, never the shared ones that
// "make test" starts for the other tests, so that it can stop it.

// Variables that tell these tests where the emulators' programs are; scripts/test.sh sets
// both. Like the GTC_TEST_* variables of package testenv, an unset one skips the test, and
// fails it under GTC_TEST_REQUIRE_SERVERS=1.
const (
	envAzuriteBin     = "GTC_TEST_AZURITE_BIN"     // tools/test-servers/node_modules/.bin/azurite-blob
	envCosmosLauncher = "GTC_TEST_COSMOS_LAUNCHER" // tools/test-servers/cosmos-launcher.js
)

// The fixed texts a client sees when a dependency cannot be reached (api/errors.go,
// api/meta.go, export/artifact.go). Causes go to the log only.
const (
	detailStoreDown   = "The store is not reachable; retry later"
	detailStoreSlow   = "The request took too long; retry later"
	detailExportsDown = "Export storage is not reachable; retry later"
)

// depProgram returns the path held by the variable name, skipping the test when it is
// unset (failing under GTC_TEST_REQUIRE_SERVERS=1) and failing when it names nothing.
func depProgram(t *testing.T, name, what string) string {
	t.Helper()
	if testing.Short() {
		t.Skip(testenv.ShortSkipMessage)
	}
	path := os.Getenv(name)
	if path == "" {
		msg := fmt.Sprintf(`integration test skipped: %s is not set (the path of %s). Run "make test" (scripts/test.sh sets it), or set it to the installed program.`, name, what)
		if os.Getenv(testenv.EnvRequireServers) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s=%s: %v", name, path, err)
	}
	return path
}

// depServer is a test server process this test owns: started, stopped, signalled and
// restarted with the same arguments, and killed when the test ends.
type depServer struct {
	name  string
	argv  []string
	probe string                // polled until it answers
	ready func(status int) bool // whether a probe answer means ready
	log   syncBuffer
	cmd   *exec.Cmd
	done  chan struct{} // closed when cmd has exited
}

func newDepServer(t *testing.T, name, probe string, ready func(int) bool, argv ...string) *depServer {
	e := &depServer{name: name, argv: argv, probe: probe, ready: ready}
	t.Cleanup(func() {
		if e.cmd == nil {
			return
		}
		select {
		case <-e.done:
		default:
			_ = e.cmd.Process.Kill() // also ends a stopped process
			<-e.done
		}
		if t.Failed() {
			t.Logf("log of %s:\n%s", e.name, e.log.String())
		}
	})
	return e
}

// start runs the program and waits until the probe says it is ready.
func (e *depServer) start(t *testing.T) {
	t.Helper()
	cmd := exec.Command(e.argv[0], e.argv[1:]...)
	cmd.Stdout, cmd.Stderr = &e.log, &e.log
	require.NoError(t, cmd.Start(), "start %s", e.name)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	e.cmd, e.done = cmd, done
	c := &http.Client{Timeout: 2 * time.Second}
	defer c.CloseIdleConnections()
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-done:
			t.Fatalf("%s exited before it was ready; its log:\n%s", e.name, e.log.String())
		default:
		}
		if res, err := c.Get(e.probe); err == nil {
			res.Body.Close()
			if e.ready(res.StatusCode) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready at %s after 60 s; its log:\n%s", e.name, e.probe, e.log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stop ends the process with SIGTERM (SIGKILL after 5 s) and waits for it.
func (e *depServer) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, e.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-e.done:
	case <-time.After(5 * time.Second):
		_ = e.cmd.Process.Kill()
		<-e.done
	}
}

func (e *depServer) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	require.NoError(t, e.cmd.Process.Signal(sig), "signal %v to %s", sig, e.name)
}

// depProxy is an HTTP proxy between gtc and the Cosmos DB test server. The server's account
// document names the server's own address as its regional endpoint, and the SDK sends every
// data request there, so the proxy puts its own address in that document: then every
// request passes through it. Closing it refuses new connections and cuts the open ones,
// which is what an unreachable host looks like to a client; reopening listens on the same
// port again. The data stays in the server.
type depProxy struct {
	addr   string
	rp     *httputil.ReverseProxy
	mu     sync.Mutex
	srv    *http.Server
	served sync.WaitGroup

	fault  string        // what happens to the next item write (armed by arm)
	frozen chan struct{} // non-nil while every request is held
}

// Faults the proxy can inject at the next item write (isItemWrite).
const (
	faultLoseAnswer = "lose-answer" // the write reaches the server, its answer never comes back
	faultFreeze     = "freeze"      // from the write on, nothing reaches the server until thaw
)

func (p *depProxy) arm(fault string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fault = fault
}

func (p *depProxy) thaw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.frozen != nil {
		close(p.frozen)
		p.frozen = nil
	}
}

// isItemWrite reports whether r writes an item: a replace of a document, or a transactional
// batch (an item write with its revisions).
func isItemWrite(r *http.Request) bool {
	return r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/docs/") ||
		r.Method == http.MethodPost && r.Header.Get("x-ms-cosmos-is-batch-request") != ""
}

func (p *depProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	fault := ""
	if p.fault != "" && isItemWrite(r) {
		fault, p.fault = p.fault, ""
		if fault == faultFreeze {
			p.frozen = make(chan struct{})
		}
	}
	frozen := p.frozen
	p.mu.Unlock()
	if frozen != nil {
		// With the body read, the server notices when the client hangs up.
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		select {
		case <-frozen:
		case <-r.Context().Done():
			return // the client gave up; the request never reached the server
		}
	}
	if fault == faultLoseAnswer {
		p.rp.ServeHTTP(httptest.NewRecorder(), r)
		panic(http.ErrAbortHandler) // cut the connection instead of answering
	}
	p.rp.ServeHTTP(w, r)
}

func startDepProxy(t *testing.T, target string) *depProxy {
	t.Helper()
	p := &depProxy{}
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(&url.URL{Scheme: "http", Host: target})
		},
		Transport: tr,
		ModifyResponse: func(res *http.Response) error {
			if res.Request.Method != http.MethodGet || res.Request.URL.Path != "/" {
				return nil
			}
			b, err := io.ReadAll(res.Body)
			res.Body.Close()
			if err != nil {
				return err
			}
			b = bytes.ReplaceAll(b, []byte(target), []byte(p.addr))
			res.Body = io.NopCloser(bytes.NewReader(b))
			res.ContentLength = int64(len(b))
			res.Header.Set("Content-Length", strconv.Itoa(len(b)))
			return nil
		},
		ErrorLog: log.New(io.Discard, "", 0),
	}
	require.NoError(t, p.open("127.0.0.1:0"))
	t.Cleanup(func() {
		p.close()
		p.served.Wait()
		tr.CloseIdleConnections()
	})
	return p
}

func (p *depProxy) open(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: p, ErrorLog: log.New(io.Discard, "", 0)}
	p.mu.Lock()
	p.srv, p.addr = srv, ln.Addr().String()
	p.mu.Unlock()
	p.served.Go(func() { _ = srv.Serve(ln) })
	return nil
}

// close stops listening and cuts every open connection.
func (p *depProxy) close() {
	p.mu.Lock()
	srv := p.srv
	p.srv = nil
	p.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
}

// depAnswer is one HTTP exchange as a client saw it.
type depAnswer struct {
	op     string
	status int
	header http.Header
	raw    []byte
	body   map[string]any // the JSON object of the body, when it is one
	err    error          // no answer at all
	start  time.Time
	took   time.Duration
}

func (a depAnswer) end() time.Time { return a.start.Add(a.took) }

func (a depAnswer) String() string {
	if a.err != nil {
		return fmt.Sprintf("%s: no answer after %v: %v", a.op, a.took.Round(time.Millisecond), a.err)
	}
	raw := string(a.raw)
	if len(raw) > 300 {
		raw = raw[:300] + "…"
	}
	return fmt.Sprintf("%s: %d in %v: %s", a.op, a.status, a.took.Round(time.Millisecond), raw)
}

// code and detail are the keys of an error body.
func (a depAnswer) code() string   { s, _ := a.body["code"].(string); return s }
func (a depAnswer) detail() string { s, _ := a.body["detail"].(string); return s }

// isError reports whether a is the error body of status with code and one of details.
func (a depAnswer) isError(status int, code string, details ...string) bool {
	return a.err == nil && a.status == status && a.code() == code && a.body["status"] == float64(status) &&
		slices.Contains(details, a.detail())
}

func depCall(c *http.Client, op, method, target string, body any, hdr map[string]string) depAnswer {
	a := depAnswer{op: op, start: time.Now()}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			panic(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, target, rd)
	if err != nil {
		panic(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := c.Do(req)
	if err == nil {
		a.raw, err = io.ReadAll(res.Body)
		res.Body.Close()
		a.status, a.header = res.StatusCode, res.Header
	}
	a.took, a.err = time.Since(a.start), err
	if err == nil {
		var m map[string]any
		if json.Unmarshal(a.raw, &m) == nil {
			a.body = m
		}
	}
	return a
}

// depLoad runs loops of requests until halted and keeps every answer.
type depLoad struct {
	mu   sync.Mutex
	got  []depAnswer
	stop chan struct{}
	wg   sync.WaitGroup
}

func newDepLoad() *depLoad { return &depLoad{stop: make(chan struct{})} }

// loop calls fn (iteration n) until halt, pausing between iterations.
func (l *depLoad) loop(pause time.Duration, fn func(n int) []depAnswer) {
	l.wg.Go(func() {
		for n := 0; ; n++ {
			select {
			case <-l.stop:
				return
			default:
			}
			as := fn(n)
			l.mu.Lock()
			l.got = append(l.got, as...)
			l.mu.Unlock()
			select {
			case <-l.stop:
				return
			case <-time.After(pause):
			}
		}
	})
}

func (l *depLoad) halt() []depAnswer {
	close(l.stop)
	l.wg.Wait()
	return l.got
}

// depParallel runs the calls at once and returns their answers in order.
func depParallel(calls ...func() depAnswer) []depAnswer {
	out := make([]depAnswer, len(calls))
	var wg sync.WaitGroup
	for i, f := range calls {
		wg.Go(func() { out[i] = f() })
	}
	wg.Wait()
	return out
}

// depWaitFor calls f every 50 ms until ok says its answer is the one wanted, for at most
// limit, and returns the first such answer and the time it took.
func depWaitFor(t *testing.T, limit time.Duration, what string, f func() depAnswer, ok func(depAnswer) bool) (depAnswer, time.Duration) {
	t.Helper()
	t0 := time.Now()
	var last depAnswer
	for time.Since(t0) < limit {
		if last = f(); ok(last) {
			return last, time.Since(t0)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: not within %v; last answer %v", what, limit, last)
	return last, 0
}

// depUntil200 asks f until it answers 200, for at most 30 s.
func depUntil200(t *testing.T, what string, f func() depAnswer) (depAnswer, time.Duration) {
	t.Helper()
	return depWaitFor(t, 30*time.Second, what, f, func(a depAnswer) bool { return a.status == http.StatusOK })
}

// depItem is one item of the test data: where it is and what it held at the start.
type depItem struct {
	id, dataset, bucket string
	history             any
	computed            []string
}

func (r depItem) path(base string) string {
	return fmt.Sprintf("%s/v1/ground-truths/%s/%s/%s", base, r.dataset, r.bucket, r.id)
}

func depItems(t *testing.T, s *server, ds string) []depItem {
	t.Helper()
	list, _ := depUntil200(t, "list "+ds, func() depAnswer {
		return depCall(http.DefaultClient, "list", http.MethodGet, s.base+"/v1/ground-truths?limit=100&dataset="+ds, nil, nil)
	})
	var out []depItem
	for _, v := range list.body["items"].([]any) {
		it := v.(map[string]any)
		out = append(out, depItem{id: it["id"].(string), dataset: ds, bucket: it["bucket"].(string), history: it["history"], computed: strs(it["computedTags"])})
	}
	slices.SortFunc(out, func(a, b depItem) int { return strings.Compare(a.id, b.id) })
	return out
}

// depSave is one curator save as its client saw it.
type depSave struct {
	comment string
	a       depAnswer
}

// depCurator saves one item again and again (GET for the ETag, then PUT with If-Match and a
// new comment) and keeps every attempt in order, so the stored comment can be checked
// against what was acknowledged.
type depCurator struct {
	c        *http.Client
	base     string
	ref      depItem
	mu       sync.Mutex
	attempts []depSave
}

func (cu *depCurator) step(n int) []depAnswer {
	g := depCall(cu.c, "item GET", http.MethodGet, cu.ref.path(cu.base), nil, nil)
	if g.status != http.StatusOK {
		return []depAnswer{g}
	}
	comment := fmt.Sprintf("%s-save-%d", cu.ref.id, n)
	p := depCall(cu.c, "item PUT", http.MethodPut, cu.ref.path(cu.base), map[string]any{"comment": comment},
		map[string]string{"If-Match": g.body["_etag"].(string), "X-User-Id": "curator"})
	cu.mu.Lock()
	cu.attempts = append(cu.attempts, depSave{comment, p})
	cu.mu.Unlock()
	return []depAnswer{g, p}
}

// checkStored reads the item and checks that it holds a complete save: the last
// acknowledged one, or one the client got no success for that was sent after it (a write
// that reached the store although its answer did not). It returns how many saves landed
// without a success answer (0 or 1).
func (cu *depCurator) checkStored(t *testing.T) (landedUnacknowledged int) {
	t.Helper()
	g, _ := depUntil200(t, "read "+cu.ref.id, func() depAnswer {
		return depCall(cu.c, "item GET", http.MethodGet, cu.ref.path(cu.base), nil, nil)
	})
	cu.mu.Lock()
	defer cu.mu.Unlock()
	last := -1
	for i, p := range cu.attempts {
		if p.a.status == http.StatusOK {
			last = i
		}
	}
	allowed := map[string]bool{}
	if last >= 0 {
		allowed[cu.attempts[last].comment] = true
	} else {
		allowed[""] = true
	}
	unacked := map[string]bool{}
	for _, p := range cu.attempts[last+1:] {
		// A refused condition (412) or a rejected body never writes; a 503 or no answer
		// at all may have.
		if p.a.err != nil || p.a.status >= 500 {
			allowed[p.comment], unacked[p.comment] = true, true
		}
	}
	stored, _ := g.body["comment"].(string)
	assert.True(t, allowed[stored], "%s holds comment %q, which is neither its last acknowledged save nor a later unanswered one (attempts: %d, last acknowledged #%d)",
		cu.ref.id, stored, len(cu.attempts), last)
	// A save is whole or absent: the rest of the item is what it was.
	assert.Equal(t, cu.ref.history, g.body["history"], cu.ref.id)
	assert.Equal(t, cu.ref.computed, strs(g.body["computedTags"]), cu.ref.id)
	tags := append(strs(g.body["manualTags"]), strs(g.body["computedTags"])...)
	slices.Sort(tags)
	assert.Equal(t, slices.Compact(tags), strs(g.body["tags"]), cu.ref.id)
	if unacked[stored] {
		return 1
	}
	return 0
}

// logServerOnFailure shows gtc's log lines when the test failed, without the request lines
// of successful requests.
func logServerOnFailure(t *testing.T, s *server) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		var keep []string
		for l := range strings.SplitSeq(s.stderr.String(), "\n") {
			if !strings.Contains(l, `"msg":"request"`) || !strings.Contains(l, `"status":2`) {
				keep = append(keep, l)
			}
		}
		t.Logf("gtc log without successful requests:\n%s", strings.Join(keep, "\n"))
	})
}

func logDepAnswers(t *testing.T, title string, as []depAnswer) {
	t.Helper()
	t.Logf("%s:", title)
	for _, a := range as {
		t.Logf("  %v", a)
	}
}

// noInternalErrors fails for any answer that is a 500 INTERNAL, an error without the
// product's JSON body, or no answer at all.
func noInternalErrors(t *testing.T, as []depAnswer) {
	t.Helper()
	for _, a := range as {
		switch {
		case a.err != nil:
			t.Errorf("no answer: %v", a)
		case a.status >= 400 && (a.body == nil || a.body["status"] != float64(a.status) || a.code() == "" || a.detail() == ""):
			t.Errorf("an error without the JSON error body: %v", a)
		case a.status >= 500 && a.status != http.StatusServiceUnavailable:
			t.Errorf("a 5xx other than 503: %v", a)
		}
	}
}

const azuriteConnFmt = "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;BlobEndpoint=http://127.0.0.1:%d/devstoreaccount1;"

// TestBlobUnreachable: gtc on SQLite with Blob export storage on its own Azurite. Azurite is
// stopped while exports, listings and curator saves run: the export routes answer 503
// STORE_UNAVAILABLE "Export storage is not reachable; retry later", everything that does not
// need export storage (item reads and writes, attachment and stream exports, /readyz, which
// does not check export storage) goes on answering 200. Azurite restarted
// on the same port and data directory: without a restart of gtc, exports succeed again and
// every snapshot acknowledged before is listed and downloads byte for byte.
func TestBlobUnreachable(t *testing.T) {
	bin := depProgram(t, envAzuriteBin, "Azurite's azurite-blob")
	port := freePort(t)
	az := newDepServer(t, "azurite", fmt.Sprintf("http://127.0.0.1:%d/devstoreaccount1?comp=list", port), func(int) bool { return true },
		bin, "--blobHost", "127.0.0.1", "--blobPort", strconv.Itoa(port), "--location", t.TempDir(),
		"--silent", "--skipApiVersionCheck", "--disableTelemetry")
	az.start(t)
	s := startServer(t, env(t.TempDir(), "GTC_EXPORT_STORAGE_BACKEND=blob", "GTC_EXPORT_BLOB_CONNECTION_STRING="+fmt.Sprintf(azuriteConnFmt, port),
		"GTC_EXPORT_BLOB_CONTAINER=gtc-exports", "GTC_EXPORT_BLOB_CREATE_CONTAINER=true",
		// Exports stuck on dead storage must not make the others wait for a slot (EXPORT_BUSY).
		"GTC_EXPORT_MAX_CONCURRENT=8"))
	logServerOnFailure(t, s)
	const n = 30
	importItems(t, s, "ds", n)
	refs := depItems(t, s, "ds")
	// No answer within 2 minutes is a hang: far longer than the Blob retry policy's 4 tries
	// against refused connections.
	c := &http.Client{Timeout: 2 * time.Minute}
	defer c.CloseIdleConnections()

	artifact := func(format string) func() depAnswer {
		return func() depAnswer {
			return depCall(c, "export "+format, http.MethodPost, s.base+"/v1/ground-truths/snapshot",
				map[string]any{"format": format, "filters": map[string]any{"status": ""}, "delivery": map[string]any{"mode": "artifact"}}, nil)
		}
	}
	download := func(mode string) func() depAnswer {
		return func() depAnswer {
			return depCall(c, mode, http.MethodPost, s.base+"/v1/ground-truths/snapshot",
				map[string]any{"format": "jsonl", "filters": map[string]any{"status": ""}, "delivery": map[string]any{"mode": mode}}, nil)
		}
	}
	get := func(op, path string, hdr map[string]string) func() depAnswer {
		return func() depAnswer { return depCall(c, op, http.MethodGet, s.base+path, nil, hdr) }
	}
	first := artifact("jsonl")()
	require.Equal(t, http.StatusOK, first.status, "%v", first)
	firstID := first.body["snapshotId"].(string)
	firstFile := "/v1/exports/" + firstID + "/files/ground-truth-items.jsonl"
	dl := get("download", firstFile, nil)()
	require.Equal(t, http.StatusOK, dl.status, "%v", dl)
	require.Equal(t, n, bytes.Count(dl.raw, []byte("\n")), "one line per item")

	// Load: artifact exports, snapshot listings and curator saves, all the time.
	load := newDepLoad()
	var acked sync.Map // snapshot ids of exports answered 200
	acked.Store(firstID, true)
	load.loop(20*time.Millisecond, func(int) []depAnswer {
		a := artifact("jsonl")()
		if a.status == http.StatusOK {
			acked.Store(a.body["snapshotId"].(string), true)
		}
		return []depAnswer{a}
	})
	load.loop(20*time.Millisecond, func(int) []depAnswer { return []depAnswer{get("list", "/v1/exports", nil)()} })
	curators := make([]*depCurator, 3)
	for i := range curators {
		curators[i] = &depCurator{c: c, base: s.base, ref: refs[i]}
		load.loop(50*time.Millisecond, curators[i].step)
	}
	time.Sleep(300 * time.Millisecond)

	killAt := time.Now()
	az.stop(t)
	downAt := time.Now()
	t.Logf("Azurite stopped (SIGTERM) in %v", downAt.Sub(killAt).Round(time.Millisecond))
	const listID = "unreachable-list-1"
	during := depParallel(
		artifact("jsonl"),
		artifact("json_snapshot_payload"),
		get("list", "/v1/exports", map[string]string{"X-Request-Id": listID}),
		get("manifest", "/v1/exports/"+firstID, nil),
		get("download", firstFile, nil),
		download("attachment"),
		download("stream"),
		get("readyz", "/readyz", nil),
		get("healthz", "/healthz", nil),
		get("item GET", refs[len(refs)-1].path(""), nil),
	)
	logDepAnswers(t, "with Azurite stopped", during)
	for _, a := range during[:5] {
		assert.True(t, a.isError(http.StatusServiceUnavailable, "STORE_UNAVAILABLE", detailExportsDown), "export routes need export storage: %v", a)
	}
	for _, a := range during[5:7] {
		assert.Equal(t, http.StatusOK, a.status, "attachment and stream exports do not touch export storage: %v", a)
		assert.Equal(t, n, bytes.Count(a.raw, []byte(`"datasetName":"ds"`)), "%s holds every item", a.op)
	}
	assert.Equal(t, http.StatusOK, during[7].status, "readiness does not check export storage: %v", during[7])
	assert.JSONEq(t, `{"status":"ready","checks":{"store":"ok"}}`, string(during[7].raw))
	assert.Equal(t, http.StatusOK, during[8].status, "%v", during[8])
	assert.Equal(t, http.StatusOK, during[9].status, "%v", during[9])
	s.logContains(t, `"request_id":"`+listID+`","err":"`+detailExportsDown)

	upStart := time.Now()
	az.start(t)
	upAt := time.Now()
	t.Logf("Azurite restarted on the same port and data directory in %v", upAt.Sub(upStart).Round(time.Millisecond))
	rec, took := depWaitFor(t, 60*time.Second, "an artifact export after the restart", artifact("jsonl"),
		func(a depAnswer) bool { return a.status == http.StatusOK })
	recoveredAt := rec.end()
	acked.Store(rec.body["snapshotId"].(string), true)
	t.Logf("first artifact export answered 200 %v after Azurite was ready again (it took %v)", took.Round(time.Millisecond), rec.took.Round(time.Millisecond))
	time.Sleep(300 * time.Millisecond)
	got := load.halt()

	// Every answer of the run, by when it was asked.
	noInternalErrors(t, append(slices.Clone(got), during...))
	counts := map[string]int{}
	for _, a := range got {
		counts[fmt.Sprintf("%s %d", a.op, a.status)]++
		if a.op == "item GET" || a.op == "item PUT" {
			assert.Equal(t, http.StatusOK, a.status, "SQLite items do not depend on export storage: %v", a)
			continue
		}
		switch {
		case a.end().Before(killAt):
			assert.Equal(t, http.StatusOK, a.status, "before the stop: %v", a)
		case a.start.Before(downAt):
			// In flight when Azurite stopped: done before it went, or a 503 (a write that had
			// begun fails part-way, saves nothing and is never listed).
			ok := a.status == http.StatusOK || a.isError(http.StatusServiceUnavailable, "STORE_UNAVAILABLE", detailExportsDown)
			assert.True(t, ok, "in flight at the stop: %v", a)
			if a.status != http.StatusOK {
				t.Logf("in flight at the stop: %v", a)
			}
		case a.start.After(recoveredAt):
			assert.Equal(t, http.StatusOK, a.status, "after recovery: %v", a)
		case a.end().Before(upStart):
			assert.True(t, a.isError(http.StatusServiceUnavailable, "STORE_UNAVAILABLE", detailExportsDown), "while Azurite was down: %v", a)
		default:
			// Asked while it was down, answered once the restart had begun: the SDK's
			// retries may have reached the restarted server, which accepts connections
			// before the test has seen it ready (upAt).
			assert.True(t, a.status == http.StatusOK || a.isError(http.StatusServiceUnavailable, "STORE_UNAVAILABLE", detailExportsDown), "across the restart: %v", a)
		}
	}
	t.Logf("load answers: %v", counts)
	for _, cu := range curators {
		assert.Zero(t, cu.checkStored(t), "every save was answered")
	}

	// Everything acknowledged is there: listed, with its manifest, and the first snapshot's
	// file has the same bytes as before the outage.
	list := get("list", "/v1/exports?limit=100", nil)()
	require.Equal(t, http.StatusOK, list.status, "%v", list)
	listed := map[string]bool{}
	for _, it := range list.body["items"].([]any) {
		listed[it.(map[string]any)["snapshotId"].(string)] = true
	}
	nAcked := 0
	acked.Range(func(k, _ any) bool {
		nAcked++
		assert.True(t, listed[k.(string)], "acknowledged snapshot %s is listed", k)
		return true
	})
	t.Logf("%d snapshots acknowledged, %d listed", nAcked, len(listed))
	again := get("download", firstFile, nil)()
	require.Equal(t, http.StatusOK, again.status, "%v", again)
	assert.Equal(t, dl.raw, again.raw, "the snapshot written before the outage downloads unchanged")
	assert.Equal(t, dl.header.Get("ETag"), again.header.Get("ETag"))
	m := get("manifest", "/v1/exports/"+firstID, nil)()
	assert.Equal(t, http.StatusOK, m.status, "%v", m)
	assert.Equal(t, float64(n), m.body["count"])

	// What an operator sees of the outage on /metrics: the SDK's retries against the refused
	// connections, and the exports that failed.
	fams := scrape(t, s.base, nil)
	retried := value(fams, "gtc_store_retries_total", map[string]string{"backend": "blob", "reason": "transport"})
	t.Logf("/metrics after the outage: %v Blob retries on transport errors, %v failed artifact exports", retried,
		value(fams, "gtc_exports_total", map[string]string{"mode": "artifact", "outcome": "failed"}))
	assert.Greater(t, retried, 0.0, "the retries against the dead storage are counted")
	assert.Greater(t, value(fams, "gtc_exports_total", map[string]string{"mode": "artifact", "outcome": "failed"}), 0.0)
	assert.Greater(t, value(fams, "gtc_exports_total", map[string]string{"mode": "artifact", "outcome": "ok"}), 0.0)
}

// cosmosOutage is one way the Cosmos DB server becomes unreachable and comes back.
type cosmosOutage struct {
	name     string
	down, up func(t *testing.T)
}

// cosmosBehindProxy starts a Cosmos DB test server of this test's own, a depProxy in front
// of it and gtc on it (settings kv added), and returns the three.
func cosmosBehindProxy(t *testing.T, kv ...string) (*depServer, *depProxy, *server) {
	t.Helper()
	launcher := depProgram(t, envCosmosLauncher, "tools/test-servers/cosmos-launcher.js")
	node, err := exec.LookPath("node")
	if err != nil {
		msg := "integration test skipped: node is not on PATH; the Cosmos DB test server runs on Node.js"
		if os.Getenv(testenv.EnvRequireServers) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	port := freePort(t)
	em := newDepServer(t, "cosmos test server", fmt.Sprintf("http://127.0.0.1:%d/", port), func(s int) bool { return s == http.StatusOK },
		node, launcher, "--host", "127.0.0.1", "-p", strconv.Itoa(port), "--no-ssl")
	em.start(t)
	px := startDepProxy(t, fmt.Sprintf("127.0.0.1:%d", port))
	s := startServer(t, env(t.TempDir(), append([]string{"GTC_REPO_BACKEND=cosmos", "GTC_COSMOS_ENDPOINT=http://" + px.addr + "/",
		"GTC_COSMOS_KEY=" + testenv.EmulatorKey, "GTC_COSMOS_DB_NAME=gtc-unreachable", "GTC_COSMOS_CREATE_CONTAINERS=true"}, kv...)...))
	logServerOnFailure(t, s)
	return em, px, s
}

// TestCosmosUnreachable: gtc on its own Cosmos DB test server, reached through a TCP proxy
// in the test. Two outages while curators save items and readers list them: the server
// process stopped (SIGSTOP: connections hang until the per-try timeout), then the proxy
// closed (connections refused and cut). The server keeps its data in memory, so both
// outages keep it. While it is unreachable, item GET, PUT, list, stats and self-serve
// answer 503 STORE_UNAVAILABLE with a fixed text, /readyz 503 NOT_READY with its checks;
// afterwards, without a restart of gtc, everything answers 200 again, every acknowledged
// save is stored, and a save or import that got a 503 is either whole or absent.
func TestCosmosUnreachable(t *testing.T) {
	// One try of 2 s per Cosmos request (a hung connection is not retried), 3 tries on
	// refused connections and 5xx, and a 5 s deadline per API request.
	const requestTimeout = 5 * time.Second
	em, px, s := cosmosBehindProxy(t, "GTC_REQUEST_TIMEOUT="+requestTimeout.String(), "GTC_COSMOS_REQUEST_TIMEOUT=2s",
		"GTC_COSMOS_RETRY_TOTAL_ATTEMPTS=3", "GTC_COSMOS_RETRY_FIXED_INTERVAL=100ms")
	// No answer within the deadline plus 15 s is a hang.
	c := &http.Client{Timeout: requestTimeout + 15*time.Second}
	defer c.CloseIdleConnections()
	var batch []map[string]any
	for i := range 24 {
		batch = append(batch, map[string]any{"id": fmt.Sprintf("item-%03d", i), "datasetName": "ds",
			"history": []map[string]any{{"role": "user", "msg": fmt.Sprintf("How do I install version %d?", i)}, {"role": "assistant", "msg": "Like this."}}})
	}
	depUntil200(t, "import", func() depAnswer { return depCall(c, "import", http.MethodPost, s.base+"/v1/ground-truths", batch, nil) })
	refs := depItems(t, s, "ds")
	require.Len(t, refs, 24)

	// The test server compiles each new query text to JavaScript, which blocks it for
	// seconds on the first self-serve query of this machine (8 s measured): pay for that
	// before the short deadlines matter. Each request is asked until it answers 200.
	for _, w := range []struct {
		op, method, path string
		body             any
	}{
		{"self-serve", http.MethodPost, "/v1/assignments/self-serve", map[string]any{"limit": 1}},
		{"my", http.MethodGet, "/v1/assignments/my", nil},
		{"list", http.MethodGet, "/v1/ground-truths?dataset=ds&limit=10", nil},
		{"stats", http.MethodGet, "/v1/ground-truths/stats", nil},
		{"import", http.MethodPost, "/v1/ground-truths", []map[string]any{{"id": "warm", "datasetName": "warm",
			"history": []map[string]any{{"role": "user", "msg": "q"}, {"role": "assistant", "msg": "a"}}}}},
	} {
		_, took := depWaitFor(t, 60*time.Second, "warm-up "+w.op, func() depAnswer {
			return depCall(c, w.op, w.method, s.base+w.path, w.body, map[string]string{"X-User-Id": "warm-up"})
		}, func(a depAnswer) bool { return a.status == http.StatusOK })
		t.Logf("warm-up %s answered 200 after %v", w.op, took.Round(time.Millisecond))
	}

	outages := []cosmosOutage{
		{"stopped", func(t *testing.T) { em.signal(t, syscall.SIGSTOP) }, func(t *testing.T) { em.signal(t, syscall.SIGCONT) }},
		{"refused", func(t *testing.T) {
			px.close()
			conn, err := net.DialTimeout("tcp", px.addr, time.Second)
			if err == nil {
				conn.Close()
			}
			require.ErrorIs(t, err, syscall.ECONNREFUSED, "the store's address refuses connections")
		}, func(t *testing.T) { require.NoError(t, px.open(px.addr), "reopen the proxy on %s", px.addr) }},
	}
	for round, o := range outages {
		t.Run(o.name, func(t *testing.T) {
			cosmosOutageRound(t, s, c, refs, round, o)
		})
	}
	assert.NotContains(t, s.stderr.String(), `"status":500`)
	s.logContains(t, `"msg":"store unavailable"`)

	// What an operator sees of the outages on /metrics: the SDK's retries, the store calls
	// that failed as unavailable, and the 503s by route template.
	fams := scrape(t, s.base, nil)
	retried := value(fams, "gtc_store_retries_total", map[string]string{"backend": "cosmos"})
	unavailable := value(fams, "gtc_store_operation_errors_total", map[string]string{"backend": "cosmos", "reason": "unavailable"})
	answered5xx := value(fams, "gtc_http_requests_total", map[string]string{"status_class": "5xx"})
	t.Logf("/metrics after the outages: %v Cosmos DB retries, %v store calls unavailable, %v requests answered 5xx", retried, unavailable, answered5xx)
	assert.Greater(t, retried, 0.0, "the retries against the refused connections are counted")
	assert.Greater(t, unavailable, 0.0)
	assert.Greater(t, answered5xx, 0.0)
}

func cosmosOutageRound(t *testing.T, s *server, c *http.Client, refs []depItem, round int, o cosmosOutage) {
	get := func(op, path string, hdr map[string]string) func() depAnswer {
		return func() depAnswer { return depCall(c, op, http.MethodGet, s.base+path, nil, hdr) }
	}
	selfServe := func(user string, limit int) func() depAnswer {
		return func() depAnswer {
			return depCall(c, "self-serve", http.MethodPost, s.base+"/v1/assignments/self-serve", map[string]any{"limit": limit}, map[string]string{"X-User-Id": user})
		}
	}
	late := fmt.Sprintf("late-%d", round)
	dave := fmt.Sprintf("dave-%d", round) // a user with an empty queue
	lateHistory := []any{map[string]any{"role": "user", "msg": "Asked during the outage?"}, map[string]any{"role": "assistant", "msg": "Yes."}}
	importLate := func() depAnswer {
		return depCall(c, "import", http.MethodPost, s.base+"/v1/ground-truths",
			[]map[string]any{{"id": late, "datasetName": "late", "history": lateHistory}}, nil)
	}

	// Curators save their own items (6 of them), readers list and count, users fill
	// their queues.
	load := newDepLoad()
	curators := make([]*depCurator, 6)
	for i := range curators {
		curators[i] = &depCurator{c: c, base: s.base, ref: refs[i]}
		load.loop(20*time.Millisecond, curators[i].step)
	}
	load.loop(50*time.Millisecond, func(int) []depAnswer {
		return []depAnswer{get("list", "/v1/ground-truths?dataset=ds&limit=10", nil)(), get("stats", "/v1/ground-truths/stats", nil)()}
	})
	load.loop(100*time.Millisecond, func(n int) []depAnswer { return []depAnswer{selfServe(fmt.Sprintf("sme-%d-%d", round, n%4), 1)()} })
	time.Sleep(300 * time.Millisecond)

	// The save of a fresh item: GET for its ETag now, PUT during the outage.
	probe := refs[len(refs)-1]
	g, _ := depUntil200(t, "item GET", get("item GET", probe.path(""), nil))
	probeComment := fmt.Sprintf("probe-%d", round)

	downAt := time.Now()
	o.down(t)
	during := depParallel(
		get("item GET", probe.path(""), nil),
		func() depAnswer {
			return depCall(c, "item PUT", http.MethodPut, probe.path(s.base), map[string]any{"comment": probeComment},
				map[string]string{"If-Match": g.body["_etag"].(string)})
		},
		get("list", "/v1/ground-truths?dataset=ds", nil),
		get("stats", "/v1/ground-truths/stats", nil),
		selfServe(dave, 3),
		importLate,
		get("readyz", "/readyz", nil),
		get("healthz", "/healthz", nil),
	)
	logDepAnswers(t, "while the store is unreachable ("+o.name+")", during)
	for _, a := range during[:5] {
		assert.True(t, a.isError(http.StatusServiceUnavailable, "STORE_UNAVAILABLE", detailStoreDown, detailStoreSlow), "%v", a)
	}
	imp := during[5]
	impFailed := imp.isError(http.StatusServiceUnavailable, "STORE_UNAVAILABLE", detailStoreDown, detailStoreSlow)
	if !impFailed && imp.status == http.StatusOK {
		// An import reports store failures per item.
		errs, _ := imp.body["errors"].([]any)
		impFailed = imp.body["imported"] == 0.0 && len(errs) == 1 && errs[0].(map[string]any)["code"] == "CREATE_FAILED"
	}
	assert.True(t, impFailed, "an import while the store is unreachable fails: %v", imp)
	assert.True(t, during[6].isError(http.StatusServiceUnavailable, "NOT_READY", "Store is not reachable"), "%v", during[6])
	assert.Equal(t, map[string]any{"store": "error"}, during[6].body["checks"])
	assert.Equal(t, http.StatusOK, during[7].status, "liveness never touches the store: %v", during[7])
	time.Sleep(500 * time.Millisecond) // the load keeps meeting the outage

	upAt := time.Now()
	o.up(t)
	t.Logf("store unreachable for %v", upAt.Sub(downAt).Round(time.Millisecond))
	_, took := depUntil200(t, "/readyz after the store came back", get("readyz", "/readyz", nil))
	t.Logf("/readyz answered 200 %v after the store came back", took.Round(time.Millisecond))
	// A new save on a fresh ETag (a save during the outage may have landed late).
	saved, took := depUntil200(t, "a save after the store came back", func() depAnswer {
		g := depCall(c, "item GET", http.MethodGet, probe.path(s.base), nil, nil)
		if g.status != http.StatusOK {
			return g
		}
		return depCall(c, "item PUT", http.MethodPut, probe.path(s.base), map[string]any{"comment": probeComment + "-after"},
			map[string]string{"If-Match": g.body["_etag"].(string)})
	})
	recoveredAt := saved.end()
	t.Logf("first save answered 200 %v after the store came back", took.Round(time.Millisecond))
	// Everything works again, without a restart of gtc. (Each is asked until it answers 200:
	// on a machine this busy one try can outlast its 2 s even with the store up.)
	var after []depAnswer
	for _, f := range []func() depAnswer{
		get("item GET", probe.path(""), nil),
		get("list", "/v1/ground-truths?dataset=ds", nil),
		get("stats", "/v1/ground-truths/stats", nil),
		get("my", "/v1/assignments/my", map[string]string{"X-User-Id": dave}),
		get("readyz", "/readyz", nil),
	} {
		a, _ := depUntil200(t, "after recovery", f)
		after = append(after, a)
	}
	assert.Equal(t, probeComment+"-after", after[0].body["comment"])
	assert.JSONEq(t, `{"status":"ready","checks":{"store":"ok"}}`, string(after[4].raw))
	time.Sleep(300 * time.Millisecond)
	got := load.halt()

	// Every load answer is a success, a 412 (a self-serve claim changed the item between a
	// curator's GET and PUT) or the 503 of an unreachable store; a 503 the machine's load
	// caused outside the outage is counted apart.
	noInternalErrors(t, got)
	counts := map[string]int{}
	durations := map[string][]time.Duration{}
	outside := 0
	for _, a := range got {
		counts[fmt.Sprintf("%s %d", a.op, a.status)]++
		switch {
		case a.status == http.StatusOK:
		case a.isError(http.StatusPreconditionFailed, "ETAG_MISMATCH", "ETag mismatch"):
		case a.isError(http.StatusServiceUnavailable, "STORE_UNAVAILABLE", detailStoreDown, detailStoreSlow):
			durations[a.op] = append(durations[a.op], a.took)
			if a.end().Before(downAt) || a.start.After(recoveredAt) {
				outside++
				t.Logf("503 outside the outage: %v", a)
			}
		default:
			t.Errorf("unexpected answer: %v", a)
		}
	}
	t.Logf("load answers: %v; 503s outside the outage: %d", counts, outside)
	for op, ds := range durations {
		slices.Sort(ds)
		t.Logf("load 503s of %s: %d, fastest %v, slowest %v", op, len(ds), ds[0].Round(time.Millisecond), ds[len(ds)-1].Round(time.Millisecond))
	}

	// Whole or absent. Each curator's item holds its last acknowledged save, or a later one
	// whose answer was a 503 (it reached the store before the answer gave up).
	landed := 0
	for _, cu := range curators {
		landed += cu.checkStored(t)
	}
	t.Logf("saves answered 503 that reached the store anyway: %d of %d items", landed, len(curators))
	lateItems, _ := depUntil200(t, "the late import", get("late", "/v1/ground-truths?dataset=late&itemId="+late, nil))
	switch li := lateItems.body["items"].([]any); len(li) {
	case 0:
		t.Logf("the import answered %d is absent", imp.status)
	case 1:
		it := li[0].(map[string]any)
		t.Logf("the import answered %d reached the store anyway", imp.status)
		assert.Equal(t, lateHistory, it["history"], "a late import is whole")
		assert.NotEmpty(t, it["computedTags"], "a late import is whole")
	default:
		t.Errorf("import %s stored %d times", late, len(li))
	}
	// Claims answered 503 are whole claims or none: the queue of the user whose self-serve
	// was answered 503 holds drafts assigned to him, and a new self-serve tops it up from there.
	var queue []map[string]any
	require.NoError(t, json.Unmarshal(after[3].raw, &queue), "%v", after[3])
	for _, it := range queue {
		assert.Equal(t, dave, it["assignedTo"], "%v", it["id"])
		assert.Equal(t, "draft", it["status"], "%v", it["id"])
		assert.NotNil(t, it["assignedAt"], "%v", it["id"])
	}
	top, _ := depUntil200(t, "self-serve after recovery", selfServe(dave, 3))
	var ids []string
	for _, it := range top.body["assigned"].([]any) {
		ids = append(ids, it.(map[string]any)["id"].(string))
	}
	for _, it := range queue {
		assert.Contains(t, ids, it["id"], "the queue keeps what a 503 answered self-serve claimed")
	}
	assert.Equal(t, float64(len(ids)-min(len(queue), 3)), top.body["newlyAssigned"], "%v", top)
	t.Logf("%s's queue after the outage: %d claimed by the 503 answered self-serve, %d after topping up", dave, len(queue), len(ids))
}

// TestCosmosWriteOutcome: a save whose outcome gtc cannot see. Its answer lost on the way
// back (the write reached the server): gtc reads the item back, finds its own write and
// answers 200. The store stops answering the moment the write goes out (it never reaches
// the server): the save answers 503 STORE_UNAVAILABLE at its request deadline (plus the
// 1 s the store gives the read that looks for the write), not a whole Cosmos try (30 s here)
// later, and the item is unchanged.
func TestCosmosWriteOutcome(t *testing.T) {
	const requestTimeout = 4 * time.Second
	_, px, s := cosmosBehindProxy(t, "GTC_REQUEST_TIMEOUT="+requestTimeout.String(), "GTC_COSMOS_REQUEST_TIMEOUT=30s")
	// More than 10 s past the deadline is a hang.
	c := &http.Client{Timeout: requestTimeout + 10*time.Second}
	defer c.CloseIdleConnections()
	depUntil200(t, "import", func() depAnswer {
		return depCall(c, "import", http.MethodPost, s.base+"/v1/ground-truths", []map[string]any{{"id": "w", "datasetName": "ds",
			"history": []map[string]any{{"role": "user", "msg": "q"}, {"role": "assistant", "msg": "a"}}}}, nil)
	})
	ref := depItems(t, s, "ds")[0]
	read := func() depAnswer { return depCall(c, "item GET", http.MethodGet, ref.path(s.base), nil, nil) }
	save := func(comment string) depAnswer {
		g, _ := depUntil200(t, "item GET", read)
		return depCall(c, "item PUT", http.MethodPut, ref.path(s.base), map[string]any{"comment": comment},
			map[string]string{"If-Match": g.body["_etag"].(string)})
	}

	px.arm(faultLoseAnswer)
	a := save("answer lost")
	t.Logf("save whose answer was lost: %v", a)
	require.Equal(t, http.StatusOK, a.status, "the write landed, so the save succeeded: %v", a)
	got, _ := depUntil200(t, "item GET", read)
	assert.Equal(t, "answer lost", got.body["comment"])
	assert.Equal(t, a.body["_etag"], got.body["_etag"], "the ETag answered is the stored one")

	px.arm(faultFreeze)
	b := save("never arrived")
	px.thaw()
	t.Logf("save while the store stopped answering (GTC_REQUEST_TIMEOUT=%v, GTC_COSMOS_REQUEST_TIMEOUT=30s): %v", requestTimeout, b)
	assert.True(t, b.isError(http.StatusServiceUnavailable, "STORE_UNAVAILABLE", detailStoreDown, detailStoreSlow), "%v", b)
	got, _ = depUntil200(t, "item GET", read)
	assert.Equal(t, "answer lost", got.body["comment"], "the save that never reached the store changed nothing")
	assert.Equal(t, a.body["_etag"], got.body["_etag"])
	depUntil200(t, "/readyz", func() depAnswer { return depCall(c, "readyz", http.MethodGet, s.base+"/readyz", nil, nil) })
}
