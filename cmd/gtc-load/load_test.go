package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc/cmd/internal/ledger"
	"github.com/gtc-dev/gtc/cmd/internal/loadkit"
)

// gtcBin is a gtc binary built from this tree for the end-to-end tests ("" with -short).
var gtcBin string

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "gtc-load-bin-")
	if err != nil {
		panic(err)
	}
	gtcBin = filepath.Join(dir, "gtc")
	build := exec.Command("go", "build", "-o", gtcBin, "../gtc")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		panic(err)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

func needBinary(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a real gtc server under load; skipped with -short")
	}
}

// TestLoadAgainstARealServer runs the whole program for a few seconds: every role works,
// nothing answers 5xx, and the ledger proves every acknowledged write is in the store.
func TestLoadAgainstARealServer(t *testing.T) {
	needBinary(t)
	var out bytes.Buffer
	res, err := run(context.Background(), []string{"--gtc", gtcBin, "--clients", "8", "--duration", "4s",
		"--queue-items", "400", "--library-items", "60", "--export-every", "1s", "--seed", "7"}, &out)
	t.Log("\n" + out.String())
	require.NoError(t, err)
	require.NotNil(t, res)
	assert.Zero(t, res.totals.server5xx, "no 5xx")
	assert.Zero(t, res.totals.transport, "no transport errors")
	assert.Zero(t, res.problems)
	require.NoError(t, res.ledgerErr)
	assert.True(t, res.ledger.OK(), "lost or unexplained writes: %v", res.ledger.Problems)
	assert.Positive(t, res.ledger.Acked, "acknowledged writes were checked")
	assert.Equal(t, 460, res.ledger.Items, "every imported item was checked")
	assert.Positive(t, res.totals.reads.N)
	assert.Positive(t, res.totals.writes.N)

	text := out.String()
	for _, op := range []string{opSelfServe, opGetItem, opEdit, opEditorPut, opList, opExport, opPreview, opExecute, opListOps} {
		assert.Contains(t, text, "\n"+op+" ", "every role sent requests: %s", op)
	}
	assert.Contains(t, text, "agent        find_and_tag op_")
	assert.Contains(t, text, "agent        merge_tags op_")
	assert.Contains(t, text, "server RSS   ")
	assert.Contains(t, text, "RESULT       PASS")
}

// TestWritesWithoutAnAnswerAreAccountedFor puts a proxy between gtc-load and the server
// that lets some writes through and then cuts the connection before the answer: every
// agent execution, and every third item PUT and self-serve. Those writes landed but were
// never acknowledged; the run fails (transport errors), yet the ledger must explain every
// item: the PUTs as writes of unknown outcome, the claims from the curators' queues, the
// agent's operations found again by their preview.
func TestWritesWithoutAnAnswerAreAccountedFor(t *testing.T) {
	needBinary(t)
	srv, err := loadkit.StartServer(context.Background(), gtcBin, t.TempDir(), "GTC_LOG_LEVEL=warn")
	require.NoError(t, err)
	defer func() { _ = srv.Stop() }()
	backend, err := url.Parse(srv.Base)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(backend)
	var n, cut atomic.Int64
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		execute := r.URL.Path == "/v1/agent/tools/manage_tags" && bytes.Contains(body, []byte(`"dry_run":false`))
		write := r.Method == http.MethodPut || r.URL.Path == "/v1/assignments/self-serve"
		if execute || (write && n.Add(1)%3 == 0) {
			proxy.ServeHTTP(httptest.NewRecorder(), r) // the server does the work
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				cut.Add(1)
				_ = conn.Close() // and the client never hears of it
			}
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()

	var out bytes.Buffer
	res, err := run(context.Background(), []string{"--url", front.URL, "--clients", "8", "--duration", "3s",
		"--queue-items", "300", "--library-items", "60", "--seed", "11"}, &out)
	t.Log("\n" + out.String())
	require.ErrorIs(t, err, errFailed, "cut connections fail the run")
	require.NotNil(t, res)
	assert.Positive(t, cut.Load())
	assert.Equal(t, int(cut.Load()), res.totals.transport, "every cut answer is a transport error")
	assert.Zero(t, res.totals.server5xx)
	require.NoError(t, res.ledgerErr)
	assert.True(t, res.ledger.OK(), "lost or unexplained writes: %v", res.ledger.Problems)
	assert.Positive(t, res.ledger.Unknown, "cut writes are of unknown outcome")
	assert.Positive(t, res.ledger.UnknownKept, "and the check finds that they landed")
	assert.Contains(t, out.String(), "agent        find_and_tag op_", "the execution without an answer was found again")
}

// TestRequestCapEndsTheRun: --requests bounds the load as well as --duration.
func TestRequestCapEndsTheRun(t *testing.T) {
	needBinary(t)
	var out bytes.Buffer
	res, err := run(context.Background(), []string{"--gtc", gtcBin, "--clients", "4", "--duration", "10m", "--requests", "150",
		"--queue-items", "100", "--library-items", "20"}, &out)
	t.Log("\n" + out.String())
	require.NoError(t, err)
	assert.Equal(t, 150, res.totals.requests, "exactly the capped number of requests")
	assert.Less(t, res.elapsed.Minutes(), 10.0, "the cap, not the duration, ended the run")
	assert.True(t, res.ledger.OK())
}

func TestFlags(t *testing.T) {
	o, err := parseFlags(nil)
	require.NoError(t, err)
	assert.Equal(t, 64, o.clients)
	assert.Equal(t, "bin/gtc", o.gtc)
	assert.Equal(t, 64*200, o.queueItems, "the queue scales with the clients")
	assert.NotZero(t, o.seed)

	for _, tc := range []struct{ args, want string }{
		{"--clients 0", "--clients 0: must be at least 1"},
		{"--duration 0s", "--duration 0s: must be positive"},
		{"--library-items 1001", "--library-items 1001: must be between 1 and 1000"},
		{"--pid 42", "--pid goes with --url"},
		{"--url http://127.0.0.1:1 --data-dir /tmp/x", "--data-dir goes with a server gtc-load starts"},
		{"--requests -1", "--requests -1: must not be negative"},
		{"--think -1s", "--think -1s: must not be negative"},
		{"--replicas 2", "--replicas needs --cosmos-endpoint"},
		{"--replicas 2 --url http://127.0.0.1:1", "--replicas starts its own servers"},
		{"--replicas 9 --cosmos-endpoint http://127.0.0.1:1", "--replicas 9: must be between 1 and 8"},
		{"--frobnicate", "flag provided but not defined: -frobnicate"},
		{"extra", `unexpected argument "extra"`},
	} {
		_, err := run(context.Background(), strings.Fields(tc.args), &bytes.Buffer{})
		var usage usageError
		require.True(t, errors.As(err, &usage), "%s: %v", tc.args, err)
		assert.Contains(t, err.Error(), tc.want, tc.args)
	}
}

func TestSplitRoles(t *testing.T) {
	for _, tc := range []struct {
		clients int
		want    roles
	}{
		{64, roles{curators: 50, editors: 4, explorers: 8, exporters: 1, agents: 1}},
		{8, roles{curators: 4, editors: 1, explorers: 1, exporters: 1, agents: 1}},
		{4, roles{curators: 1, editors: 1, explorers: 0, exporters: 1, agents: 1}},
		{1, roles{curators: 1}},
	} {
		got := splitRoles(tc.clients)
		assert.Equal(t, tc.want, got, "%d clients", tc.clients)
		assert.Equal(t, tc.clients, got.curators+got.editors+got.explorers+got.exporters+got.agents)
	}
}

// TestVerdict: what fails a run, and that a missed p99 fails it only with --strict.
func TestVerdict(t *testing.T) {
	good := func() *outcome {
		return &outcome{ledger: ledger.Report{Items: 3, Acked: 5}}
	}
	o := good()
	assert.True(t, o.passed())
	assert.Equal(t, "PASS (no 5xx, no lost update, p99 targets met)", verdict(o))

	o = good()
	o.p99Missed = true
	assert.True(t, o.passed(), "a missed p99 alone passes")
	assert.Contains(t, verdict(o), "PASS")
	o.strict = true
	assert.False(t, o.passed())
	assert.Equal(t, "FAIL: a p99 target was missed (--strict)", verdict(o))

	o = good()
	o.totals.server5xx = 2
	o.ledger.Problems = []ledger.Problem{{Detail: "lost"}}
	assert.False(t, o.passed())
	assert.Equal(t, "FAIL: 2 answers were 5xx; the ledger found 1 problems (lost or unexplained writes)", verdict(o))

	o = good()
	o.ledger.Acked = 0
	assert.False(t, o.passed())
	assert.Equal(t, "FAIL: no write was acknowledged", verdict(o))
}
