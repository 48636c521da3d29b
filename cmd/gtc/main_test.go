package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/storage/sqlite"
)

// These tests run the real binary as a user would: built once, started with its own
// environment, stopped with real signals.

var gtcBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "gtc-bin-")
	if err != nil {
		panic(err)
	}
	gtcBin = filepath.Join(dir, "gtc")
	build := exec.Command("go", "build", "-ldflags", "-X main.version=9.9.9-test", "-o", gtcBin, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		panic(err)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// env returns a clean environment (no GTC_ variables from the caller) plus the given ones.
func env(dataDir string, kv ...string) []string {
	var out []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "GTC_") {
			out = append(out, e)
		}
	}
	out = append(out, "GTC_DATA_DIR="+dataDir, "GTC_LOG_FORMAT=json")
	return append(out, kv...)
}

func runGTC(t *testing.T, environ []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(gtcBin, args...)
	cmd.Env = environ
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	code = 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return o.String(), e.String(), code
}

func TestVersionAndUsage(t *testing.T) {
	out, _, code := runGTC(t, env(t.TempDir()), "version")
	assert.Equal(t, 0, code)
	assert.Equal(t, "9.9.9-test\n", out)
	_, errOut, code := runGTC(t, env(t.TempDir()), "frobnicate")
	assert.Equal(t, 2, code, "usage errors exit 2")
	assert.Contains(t, errOut, `unknown command "frobnicate"`)
	_, _, code = runGTC(t, env(t.TempDir()))
	assert.Equal(t, 2, code)
	_, errOut, code = runGTC(t, env(t.TempDir()), "seed", "--items", "x")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "invalid value")
}

func TestInvalidSettingsExitWithAClearMessage(t *testing.T) {
	_, errOut, code := runGTC(t, env(t.TempDir(), "GTC_PORT=http", "GTC_AUTH_MODE=magic", "GTC_LOG_LEVL=debug"), "serve")
	assert.Equal(t, 3, code, "invalid configuration exits 3")
	assert.Contains(t, errOut, `GTC_PORT="http"`)
	assert.Contains(t, errOut, "unknown setting GTC_LOG_LEVL (did you mean GTC_LOG_LEVEL?)")

	_, errOut, code = runGTC(t, env(t.TempDir(), "GTC_AUTH_MODE=magic"), "serve")
	assert.Equal(t, 3, code)
	assert.Contains(t, errOut, `GTC_AUTH_MODE="magic": must be one of dev, easyauth`)
}

func TestPrintConfig(t *testing.T) {
	out, _, code := runGTC(t, env(t.TempDir(), "GTC_PORT=8123"), "serve", "--print-config")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "GTC_PORT=8123\n")
	assert.Contains(t, out, "GTC_REPO_BACKEND=sqlite\n")
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	return port
}

// syncBuffer is a bytes.Buffer safe to read while the process writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// server is a running gtc serve process.
type server struct {
	cmd    *exec.Cmd
	base   string
	stderr *syncBuffer
	done   chan struct{} // closed when the process has exited
	err    error         // its exit error, once done is closed
}

// logContains waits briefly for a log line: the request line is written after the response.
func (s *server) logContains(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(s.stderr.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("log does not contain %s:\n%s", want, s.stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func startServer(t *testing.T, environ []string) *server {
	t.Helper()
	port := freePort(t)
	cmd := exec.Command(gtcBin, "serve")
	cmd.Env = append(environ, fmt.Sprintf("GTC_ADDR=127.0.0.1:%d", port))
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	s := &server{cmd: cmd, base: fmt.Sprintf("http://127.0.0.1:%d", port), stderr: stderr, done: make(chan struct{})}
	go func() { s.err = cmd.Wait(); close(s.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-s.done
	})
	// Generous: a shared Cosmos DB test server under load can take seconds to answer.
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			t.Fatalf("server exited before it was ready (%v); log:\n%s", s.err, stderr.String())
		default:
		}
		res, err := http.Get(s.base + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return s
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("server not ready; log:\n%s", stderr.String())
	return nil
}

func getJSON(t *testing.T, url string) map[string]any {
	t.Helper()
	res, err := http.Get(url)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	var m map[string]any
	require.NoError(t, json.NewDecoder(res.Body).Decode(&m))
	return m
}

func TestServeSeedAndGracefulShutdown(t *testing.T) {
	data := t.TempDir()
	out, errOut, code := runGTC(t, env(data), "seed", "--items", "60", "--datasets", "3")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "seeded 60 items in 3 datasets")
	out, _, code = runGTC(t, env(data), "seed", "--items", "10", "--if-empty")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "store already has 60 items; nothing seeded")

	s := startServer(t, env(data))
	stats := getJSON(t, s.base+"/v1/ground-truths/stats")
	total := stats["draft"].(float64) + stats["approved"].(float64) + stats["deleted"].(float64)
	assert.Greater(t, total, 20.0, "seeded items of every status are served: %v", stats)
	s.logContains(t, `"msg":"request"`)
	s.logContains(t, `"route":"/v1/ground-truths/stats"`)

	// An import whose body is still arriving when SIGTERM comes must finish.
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.base, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	body := `[{"id": "in-flight", "datasetName": "late", "history": [{"role": "user", "msg": "q"}, {"role": "assistant", "msg": "a"}]}]`
	fmt.Fprintf(conn, "POST /v1/ground-truths HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(body))
	_, err = io.WriteString(conn, body[:10])
	require.NoError(t, err)
	time.Sleep(100 * time.Millisecond)
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	time.Sleep(200 * time.Millisecond)
	_, err = io.WriteString(conn, body[10:])
	require.NoError(t, err)
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, res.StatusCode, "the in-flight request finishes")
	res.Body.Close()

	select {
	case <-s.done:
		require.NoError(t, s.err, "graceful shutdown exits 0; log:\n%s", s.stderr.String())
	case <-time.After(15 * time.Second):
		t.Fatal("server did not stop after SIGTERM")
	}
	assert.Contains(t, s.stderr.String(), "store closed")
	wal, err := os.Stat(filepath.Join(data, "gtc.db-wal"))
	if err == nil {
		assert.Zero(t, wal.Size(), "the WAL is checkpointed on a clean close")
	}

	// The write made during shutdown is there after a restart.
	s2 := startServer(t, env(data))
	res2, err := http.Get(s2.base + "/v1/ground-truths/late")
	require.NoError(t, err)
	defer res2.Body.Close()
	var items []map[string]any
	require.NoError(t, json.NewDecoder(res2.Body).Decode(&items))
	require.Len(t, items, 1)
	assert.Equal(t, "in-flight", items[0]["id"])
}

func TestListensExactlyWhereTold(t *testing.T) {
	s := startServer(t, env(t.TempDir()))
	assert.True(t, strings.HasPrefix(s.base, "http://127.0.0.1:"))
	s.logContains(t, `"msg":"gtc is serving"`)
	s.logContains(t, s.base)
}

func TestRecomputeTagsCommand(t *testing.T) {
	data := t.TempDir()
	_, errOut, code := runGTC(t, env(data), "seed", "--items", "40", "--datasets", "2")
	require.Equal(t, 0, code, errOut)

	out, errOut, code := runGTC(t, env(data), "recompute-tags", "--json")
	require.Equal(t, 0, code, errOut)
	var res map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	delete(res, "duration_ms")
	assert.Equal(t, map[string]any{"total": 40.0, "processed": 40.0, "updated": 0.0, "skipped": 40.0, "errors": []any{}, "dry_run": false}, res,
		"freshly written items need no change")

	out, _, code = runGTC(t, env(data), "recompute-tags", "--dataset", "customer-support", "--dry-run", "--progress", "log")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "recompute-tags: 20 matched, 20 processed, would update 0, 20 unchanged, 0 errors")

	// An item whose stored computed tags are out of date, as after a plugin change.
	st, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(data, "gtc.db")})
	require.NoError(t, err)
	page, err := st.Items().Query(context.Background(), gtc.Query{Sort: gtc.SortID, Limit: 1})
	require.NoError(t, err)
	stale := page.Items[0].Clone()
	stale.ComputedTags = []string{"dataset:" + stale.DatasetName}
	_, err = st.Items().Replace(context.Background(), page.Items[0], stale)
	require.NoError(t, err)
	require.NoError(t, st.Close())
	report := filepath.Join(t.TempDir(), "report.jsonl")
	out, errOut, code = runGTC(t, env(data), "recompute-tags", "--report", report, "--progress", "none")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "updated 1, 39 unchanged")
	lines, err := os.ReadFile(report)
	require.NoError(t, err)
	var line map[string]any
	require.NoError(t, json.Unmarshal(lines, &line), string(lines))
	assert.Equal(t, stale.ID, line["id"])
	assert.Equal(t, true, line["changed"])
	assert.NotEmpty(t, line["added"])

	_, errOut, code = runGTC(t, env(data), "recompute-tags", "--status", "finished")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, `--status "finished"`)
	_, _, code = runGTC(t, env(data), "recompute-tags", "--progress", "fancy")
	assert.Equal(t, 2, code)
}

func TestStartupTagChecks(t *testing.T) {
	_, errOut, code := runGTC(t, env(t.TempDir(), "GTC_ALLOWED_MANUAL_TAGS=source:sme,nocolon"), "serve")
	assert.Equal(t, 3, code)
	assert.Contains(t, errOut, "GTC_ALLOWED_MANUAL_TAGS contains an invalid tag: Invalid tag format (expected group:value): 'nocolon'")

	_, errOut, code = runGTC(t, env(t.TempDir(), "GTC_ALLOWED_MANUAL_TAGS=turns:multiturn,dataset:x"), "serve")
	assert.Equal(t, 3, code)
	assert.Contains(t, errOut, "GTC_ALLOWED_MANUAL_TAGS overlaps computed tag keys: dataset:x, turns:multiturn")

	_, errOut, code = runGTC(t, env(t.TempDir(), "GTC_TAG_VALIDATORS=exclusive_group,spelling"), "serve")
	assert.Equal(t, 3, code)
	assert.Contains(t, errOut, "Unknown tag validator 'spelling'")

	dir := t.TempDir()
	groups := filepath.Join(dir, "groups.json")
	require.NoError(t, os.WriteFile(groups, []byte(`{"manualTagGroups": [{"group": "turns", "tags": ["multiturn"]}]}`), 0o600))
	_, errOut, code = runGTC(t, env(dir, "GTC_MANUAL_TAGS_CONFIG_PATH="+groups), "serve")
	assert.Equal(t, 3, code)
	assert.Contains(t, errOut, "Manual tag defaults overlap computed tag keys: turns:multiturn")

	_, errOut, code = runGTC(t, env(dir, "GTC_MANUAL_TAGS_CONFIG_PATH="+filepath.Join(dir, "missing.json")), "serve")
	assert.Equal(t, 3, code)
	assert.Contains(t, errOut, "missing.json")

	require.NoError(t, os.WriteFile(groups, []byte(`{"manualTagGroups": [{"group": "team", "mutuallyExclusive": true, "tags": ["red", "blue"]}]}`), 0o600))
	s := startServer(t, env(dir, "GTC_MANUAL_TAGS_CONFIG_PATH="+groups, "GTC_ALLOWED_MANUAL_TAGS=custom:extra"))
	res, err := http.Get(s.base + "/v1/tags")
	require.NoError(t, err)
	defer res.Body.Close()
	var tags map[string][]string
	require.NoError(t, json.NewDecoder(res.Body).Decode(&tags))
	assert.Equal(t, []string{"custom:extra", "team:blue", "team:red"}, tags["tags"], "the groups file replaces the built-in groups; the allow-list adds to it")
}

func TestTagStoreOverlapStopsServeButNotMaintenance(t *testing.T) {
	data := t.TempDir()
	// Data carried over from the reference backend: a computed key in the tag store.
	st, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(data, "gtc.db")})
	require.NoError(t, err)
	_, err = st.TagStore().Add(context.Background(), []string{"custom:ok", "turns:multiturn"})
	require.NoError(t, err)
	require.NoError(t, st.Close())

	_, errOut, code := runGTC(t, env(data), "serve")
	assert.Equal(t, 3, code)
	assert.Contains(t, errOut, "Tag store overlaps computed tag keys: turns:multiturn")

	out, errOut, code := runGTC(t, env(data), "recompute-tags", "--progress", "none")
	assert.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "recompute-tags: 0 matched")
	assert.Contains(t, errOut, "Tag store overlaps computed tag keys: turns:multiturn", "maintenance commands warn instead")
}
