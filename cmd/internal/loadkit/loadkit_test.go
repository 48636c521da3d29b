package loadkit

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSummarize(t *testing.T) {
	lat := make([]time.Duration, 0, 100)
	for i := 100; i >= 1; i-- { // unsorted on purpose
		lat = append(lat, time.Duration(i)*time.Millisecond)
	}
	s := Summarize(lat)
	assert.Equal(t, Summary{N: 100, P50: 51 * time.Millisecond, P90: 91 * time.Millisecond, P99: 100 * time.Millisecond, Max: 100 * time.Millisecond}, s)
	assert.True(t, slices.IsSorted(lat), "sorted in place")
	assert.Equal(t, Summary{}, Summarize(nil))
	assert.Equal(t, time.Duration(0), Percentile(nil, 0.5))
	assert.Equal(t, 7*time.Millisecond, Percentile([]time.Duration{7 * time.Millisecond}, 0.99))
}

func TestReport(t *testing.T) {
	var out bytes.Buffer
	Report(&out, "GET one item", []time.Duration{3 * time.Millisecond, 1500 * time.Microsecond, 2 * time.Millisecond})
	Report(&out, "nothing", nil)
	assert.Equal(t, "GET one item                                 n=3  median 2.00ms  p90 3.00ms  p99 3.00ms  max 3.00ms\n"+
		"nothing                                      n=0\n", out.String())
}

func TestEnvDropsTheCallersSettings(t *testing.T) {
	t.Setenv("GTC_PORT", "9999")
	env := Env("/data", "GTC_LOG_LEVEL=warn")
	assert.NotContains(t, env, "GTC_PORT=9999")
	assert.Equal(t, []string{"GTC_DATA_DIR=/data", "GTC_LOG_LEVEL=warn"}, env[len(env)-2:])
}

func TestReadRSS(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc on this system")
	}
	assert.Positive(t, ReadRSS(os.Getpid()))
	assert.Zero(t, ReadRSS(-1), "no such process")
	r := SampleRSS(os.Getpid(), time.Millisecond)
	defer r.Stop()
	assert.Positive(t, r.Peak())
	r.Reset(1 << 50)
	assert.Equal(t, int64(1<<50), r.Peak(), "a peak only grows until reset")
}

func TestStartServerReportsAProcessThatExits(t *testing.T) {
	bin, err := exec.LookPath("false")
	if err != nil {
		t.Skip("no false(1) on this system")
	}
	dir := t.TempDir()
	_, err = StartServer(context.Background(), bin, dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "server exited before it was ready")
	assert.Contains(t, err.Error(), dir+"/serve.log")
}

func TestClient(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.Error(w, `{"detail":"Not Found"}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"user":"` + r.Header.Get("X-User-Id") + `","type":"` + r.Header.Get("Content-Type") + `"}`))
	}))
	defer srv.Close()
	c := NewClient(srv.URL, 4, 5*time.Second)
	res, body, err := c.Do(http.MethodPost, "/x", []byte(`{}`), map[string]string{"X-User-Id": "alice"})
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.JSONEq(t, `{"user":"alice","type":"application/json"}`, string(body))

	var got map[string]string
	require.NoError(t, c.GetJSON("/x", &got))
	assert.Equal(t, "application/json", got["type"])
	err = c.GetJSON("/missing", &got)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `GET /missing: 404 {"detail":"Not Found"}`)
}

// A client with replicas sends its requests to each root URL in turn.
func TestClientSendsToTheReplicasInTurn(t *testing.T) {
	var hits [3]atomic.Int64
	var urls []string
	for i := range hits {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits[i].Add(1) }))
		defer srv.Close()
		urls = append(urls, srv.URL)
	}
	c := NewClient(urls[0], 4, 5*time.Second)
	c.Replicas = urls[1:]
	for range 9 {
		_, _, err := c.Do(http.MethodGet, "/", nil, nil)
		require.NoError(t, err)
	}
	for i := range hits {
		assert.Equal(t, int64(3), hits[i].Load(), "server %d", i)
	}
}
