package cosmos_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	gtc "github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/storage/cosmos"
	"github.com/gtc-dev/gtc/storage/cosmos/cosmostest"
	"github.com/gtc-dev/gtc/storage/storetest/testenv"
)

// faults is a fault-injecting transport: each rule answers matching requests instead of
// the server (or after it) a number of times, and counts what it saw.
type faults struct {
	next  http.RoundTripper
	mu    sync.Mutex
	rules []*rule
}

type rule struct {
	match   func(r *http.Request, body string) bool
	respond func(r *http.Request, next http.RoundTripper) (*http.Response, error)
	times   int // how many more requests it answers; <0 = every one
	seen    atomic.Int64
}

func (f *faults) add(r *rule) *rule {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = append(f.rules, r)
	return r
}

func (f *faults) RoundTrip(req *http.Request) (*http.Response, error) {
	var body string
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		body = string(b)
		req.Body = io.NopCloser(bytes.NewReader(b))
	}
	f.mu.Lock()
	var hit *rule
	for _, r := range f.rules {
		if r.times != 0 && r.match(req, body) {
			r.seen.Add(1)
			if r.times > 0 {
				r.times--
			}
			hit = r
			break
		}
	}
	f.mu.Unlock()
	if hit != nil {
		return hit.respond(req, f.next)
	}
	return f.next.RoundTrip(req)
}

// status answers with a bare status and headers.
func status(code int, headers map[string]string) func(*http.Request, http.RoundTripper) (*http.Response, error) {
	return func(r *http.Request, _ http.RoundTripper) (*http.Response, error) {
		h := http.Header{"Content-Type": {"application/json"}}
		for k, v := range headers {
			h.Set(k, v)
		}
		return &http.Response{StatusCode: code, Status: http.StatusText(code), Header: h, Request: r,
			Body: io.NopCloser(strings.NewReader(`{"code":"Injected","message":"injected by the test transport"}`))}, nil
	}
}

func pointRead(id string) func(*http.Request, string) bool {
	return func(r *http.Request, _ string) bool {
		return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/docs/"+id)
	}
}

func createOf(id string) func(*http.Request, string) bool {
	return func(r *http.Request, body string) bool {
		return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/colls/ground_truth/docs") &&
			r.Header.Get("x-ms-documentdb-isquery") == "" && strings.Contains(body, `"id":"`+id+`"`)
	}
}

// openFaulty opens a store whose transport goes through a fault injector.
func openFaulty(t *testing.T, tweak func(*cosmos.Options)) (*cosmos.Store, *faults) {
	env := testenv.Cosmos(t)
	f := &faults{}
	st, _ := cosmostest.Open(t, env, func(o *cosmos.Options) {
		f.next = o.HTTPClient.Transport
		o.HTTPClient = &http.Client{Transport: f}
		if tweak != nil {
			tweak(o)
		}
	})
	t.Cleanup(func() { _ = st.Close() })
	return st, f
}

func newItem(ds, id string) *gtc.Item {
	it := gtc.NewItem(ds, id)
	it.Bucket = gtc.DeriveBucket(ds, id)
	it.UpdatedAt = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	return it
}

// Throttling is retried after the delay the server asks for (x-ms-retry-after-ms).
func TestThrottlingIsRetriedAfterTheDelayAsked(t *testing.T) {
	// The delay asked for must stay under the retry cap (30 s in production), or the
	// request is not retried at all.
	st, f := openFaulty(t, func(o *cosmos.Options) { o.MaxRetryDelay = time.Second })
	ctx := t.Context()
	created, err := st.Items().Create(ctx, newItem("ds", "throttled"))
	require.NoError(t, err)

	r := f.add(&rule{match: pointRead("throttled"), times: 2,
		respond: status(http.StatusTooManyRequests, map[string]string{"x-ms-retry-after-ms": "300", "x-ms-substatus": "3200"})})
	start := time.Now()
	got, err := st.Items().Get(ctx, created.Key())
	elapsed := time.Since(start)
	require.NoError(t, err, "a read throttled twice succeeds on the third attempt")
	assert.Equal(t, created.ETag, got.ETag)
	assert.EqualValues(t, 2, r.seen.Load())
	assert.GreaterOrEqual(t, elapsed, 600*time.Millisecond, "each retry waits the 300 ms the server asked for")
}

// Throttling that outlasts the attempts is ErrUnavailable, after exactly that many attempts.
func TestThrottlingBeyondTheAttemptsIsUnavailable(t *testing.T) {
	st, f := openFaulty(t, func(o *cosmos.Options) { o.RetryAttempts = 4 })
	ctx := t.Context()
	created, err := st.Items().Create(ctx, newItem("ds", "always-throttled"))
	require.NoError(t, err)
	r := f.add(&rule{match: pointRead("always-throttled"), times: -1,
		respond: status(http.StatusTooManyRequests, map[string]string{"x-ms-retry-after-ms": "10"})})
	_, err = st.Items().Get(ctx, created.Key())
	require.ErrorIs(t, err, gtc.ErrUnavailable)
	assert.NotErrorIs(t, err, gtc.ErrNotFound)
	assert.EqualValues(t, 4, r.seen.Load(), "GTC_COSMOS_RETRY_TOTAL_ATTEMPTS attempts in all")
}

// 503 is retried, for reads and for writes (a write that landed before the 503 is
// recognised by its write id).
func TestServiceUnavailableIsRetried(t *testing.T) {
	st, f := openFaulty(t, nil)
	ctx := t.Context()
	created, err := st.Items().Create(ctx, newItem("ds", "after-503"))
	require.NoError(t, err)
	r := f.add(&rule{match: pointRead("after-503"), times: 2, respond: status(http.StatusServiceUnavailable, map[string]string{"x-ms-retry-after-ms": "50"})})
	got, err := st.Items().Get(ctx, created.Key())
	require.NoError(t, err)
	assert.EqualValues(t, 2, r.seen.Load())
	assert.Equal(t, created.ETag, got.ETag)

	w := f.add(&rule{match: createOf("write-503"), times: 2, respond: status(http.StatusServiceUnavailable, nil)})
	c, err := st.Items().Create(ctx, newItem("ds", "write-503"))
	require.NoError(t, err)
	assert.EqualValues(t, 2, w.seen.Load())

	// A replace (a transactional batch of the item and its revision) applied by the server
	// whose answer was lost in a 503: the retry meets 412, and the store recognises its own
	// write.
	isReplace := func(r *http.Request, body string) bool {
		return r.Method == http.MethodPost && r.Header.Get("x-ms-cosmos-is-batch-request") != "" &&
			strings.Contains(body, `"operationType":"Replace"`) && strings.Contains(body, `"id":"write-503"`)
	}
	lost := f.add(&rule{match: isReplace, times: 1, respond: func(req *http.Request, next http.RoundTripper) (*http.Response, error) {
		resp, err := next.RoundTrip(req)
		if err != nil {
			return nil, err
		}
		_ = resp.Body.Close()
		return status(http.StatusServiceUnavailable, nil)(req, next)
	}})
	next := c.Clone()
	next.Comment = "landed before the 503"
	out, err := st.Items().Replace(ctx, c, next)
	require.NoError(t, err)
	assert.EqualValues(t, 1, lost.seen.Load())
	cur, err := st.Items().Get(ctx, c.Key())
	require.NoError(t, err)
	assert.Equal(t, "landed before the 503", cur.Comment)
	assert.Equal(t, cur.ETag, out.ETag)
	page, err := st.Revisions().List(ctx, "ds", "write-503", "", 10)
	require.NoError(t, err)
	require.Len(t, page.Revisions, 2, "the revision landed with the item, once")
	assert.Equal(t, out.ETag, page.Revisions[0].ETagAfter)

	stale := c.Clone()
	stale.Comment = "stale"
	_, err = st.Items().Replace(ctx, c, stale)
	assert.ErrorIs(t, err, gtc.ErrPreconditionFailed, "a genuinely stale token is still refused")
}

// A connection reset after the server took a create is an ambiguous outcome: the store
// reads the item back and recognises its own write id, so the create succeeds once.
func TestConnectionResetAfterACreateIsResolved(t *testing.T) {
	st, f := openFaulty(t, nil)
	r := f.add(&rule{match: createOf("reset"), times: 1, respond: func(req *http.Request, next http.RoundTripper) (*http.Response, error) {
		resp, err := next.RoundTrip(req)
		if err == nil {
			_ = resp.Body.Close()
		}
		return nil, errors.New("read tcp 127.0.0.1: connection reset by peer")
	}})
	created, err := st.Items().Create(t.Context(), newItem("ds", "reset"))
	require.NoError(t, err, "the write landed, so the create succeeds")
	assert.EqualValues(t, 1, r.seen.Load())
	got, err := st.Items().Get(t.Context(), created.Key())
	require.NoError(t, err)
	assert.Equal(t, created.ETag, got.ETag)
	n, err := st.Items().Count(t.Context(), gtc.Filter{})
	require.NoError(t, err)
	assert.Equal(t, 1, n)
}

// An attempt that hangs is cut off by GTC_COSMOS_REQUEST_TIMEOUT and reported as
// ErrUnavailable, long before the server would have answered.
func TestHangingAttemptIsCutOffByTheRequestTimeout(t *testing.T) {
	st, f := openFaulty(t, func(o *cosmos.Options) { o.RequestTimeout = 300 * time.Millisecond; o.RetryAttempts = 1 })
	ctx := t.Context()
	created, err := st.Items().Create(ctx, newItem("ds", "slow"))
	require.NoError(t, err)
	r := f.add(&rule{match: pointRead("slow"), times: -1, respond: func(req *http.Request, _ http.RoundTripper) (*http.Response, error) {
		select {
		case <-req.Context().Done():
			return nil, req.Context().Err()
		case <-time.After(10 * time.Second):
			return nil, errors.New("the hanging attempt was not cut off")
		}
	}})
	start := time.Now()
	_, err = st.Items().Get(ctx, created.Key())
	require.ErrorIs(t, err, gtc.ErrUnavailable)
	assert.NotErrorIs(t, err, gtc.ErrNotFound)
	assert.GreaterOrEqual(t, r.seen.Load(), int64(1))
	assert.Less(t, time.Since(start), 5*time.Second, "cut off by the 300 ms per-attempt timeout")
}

// The gateway answers a cross-partition count with one partial count per partition range,
// over several pages; the store sums them.
func TestPartialCountsAreSummed(t *testing.T) {
	st, f := openFaulty(t, nil)
	page := func(body, continuation string) func(*http.Request, http.RoundTripper) (*http.Response, error) {
		return func(r *http.Request, _ http.RoundTripper) (*http.Response, error) {
			h := http.Header{"Content-Type": {"application/json"}, "X-Ms-Request-Charge": {"2.5"}}
			if continuation != "" {
				h.Set("x-ms-continuation", continuation)
			}
			return &http.Response{StatusCode: 200, Status: "OK", Header: h, Request: r, Body: io.NopCloser(strings.NewReader(body))}, nil
		}
	}
	isCount := func(token string) func(*http.Request, string) bool {
		return func(r *http.Request, body string) bool {
			return strings.Contains(body, "SELECT VALUE COUNT(1)") && strings.Contains(body, "approved") &&
				r.Header.Get("x-ms-continuation") == token
		}
	}
	f.add(&rule{match: isCount(""), times: 1, respond: page(`{"_rid":"x","Documents":[3,4],"_count":2}`, "p2")})
	f.add(&rule{match: isCount("p2"), times: 1, respond: page(`{"_rid":"x","Documents":[],"_count":0}`, "p3")})
	f.add(&rule{match: isCount("p3"), times: 1, respond: page(`{"_rid":"x","Documents":[5],"_count":1}`, "")})
	n, err := st.Items().Count(t.Context(), gtc.Filter{Statuses: []gtc.Status{gtc.StatusApproved}})
	require.NoError(t, err)
	assert.Equal(t, 12, n, "3 + 4 over the first page, nothing on the second, 5 on the third")
}

// With GTC_COSMOS_LOG_QUERY_METRICS the request charge of a query, summed over its pages,
// is logged when it reaches the threshold.
func TestQueryChargesAreLoggedAboveTheThreshold(t *testing.T) {
	var buf syncBuffer
	st, f := openFaulty(t, func(o *cosmos.Options) {
		o.Logger = slog.New(slog.NewJSONHandler(&buf, nil))
		o.LogQueryMetrics, o.SlowQueriesOnly, o.SlowQueryRU = true, true, 10
	})
	charge := func(v string) func(*http.Request, http.RoundTripper) (*http.Response, error) {
		return func(req *http.Request, next http.RoundTripper) (*http.Response, error) {
			resp, err := next.RoundTrip(req)
			if err == nil {
				resp.Header.Set("x-ms-request-charge", v)
			}
			return resp, err
		}
	}
	isCount := func(word string) func(*http.Request, string) bool {
		return func(_ *http.Request, body string) bool {
			return strings.Contains(body, "SELECT VALUE COUNT(1)") && strings.Contains(body, word)
		}
	}
	f.add(&rule{match: isCount("approved"), times: -1, respond: charge("42.5")})
	f.add(&rule{match: isCount("skipped"), times: -1, respond: charge("1.5")})
	ctx := context.Background()
	_, err := st.Items().Count(ctx, gtc.Filter{Statuses: []gtc.Status{gtc.StatusApproved}})
	require.NoError(t, err)
	_, err = st.Items().Count(ctx, gtc.Filter{Statuses: []gtc.Status{gtc.StatusSkipped}})
	require.NoError(t, err)
	logs := buf.String()
	assert.Contains(t, logs, `"ru":42.5`)
	assert.Contains(t, logs, `"op":"count"`)
	assert.NotContains(t, logs, `"ru":1.5`, "below the threshold")
}

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
