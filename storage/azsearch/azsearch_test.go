package azsearch

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
)

const secretKey = "sekret-query-key-123"

// recorded is what the fake service saw of one request.
type recorded struct {
	method, path, rawPath, apiVersion, apiKey, auth, contentType string
	body                                                         map[string]any
	rawBody                                                      string
}

// fakeService answers every request with status and body, and records the requests.
type fakeService struct {
	mu     sync.Mutex
	reqs   []recorded
	status int
	body   string
	delay  time.Duration
}

func (f *fakeService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	rec := recorded{
		method: r.Method, path: r.URL.Path, rawPath: r.URL.EscapedPath(), apiVersion: r.URL.Query().Get("api-version"),
		apiKey: r.Header.Get("api-key"), auth: r.Header.Get("Authorization"), contentType: r.Header.Get("Content-Type"),
		rawBody: string(b),
	}
	_ = json.Unmarshal(b, &rec.body)
	f.mu.Lock()
	f.reqs = append(f.reqs, rec)
	f.mu.Unlock()
	if f.delay > 0 {
		select {
		case <-time.After(f.delay):
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("request-id", "req-42")
	w.WriteHeader(f.status)
	_, _ = io.WriteString(w, f.body)
}

func (f *fakeService) last(t *testing.T) recorded {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	require.NotEmpty(t, f.reqs)
	return f.reqs[len(f.reqs)-1]
}

func newFake(t *testing.T, status int, body string) (*fakeService, *httptest.Server) {
	t.Helper()
	f := &fakeService{status: status, body: body}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func newClient(t *testing.T, opts Options) *Client {
	t.Helper()
	c, err := New(opts)
	require.NoError(t, err)
	return c
}

func TestRequestShape(t *testing.T) {
	f, srv := newFake(t, 200, `{"value":[]}`)
	c := newClient(t, Options{Endpoint: srv.URL + "/", Index: "kb-index", Key: secretKey})
	res, err := c.Search(context.Background(), `reset "password" & more`, 7)
	require.NoError(t, err)
	require.NotNil(t, res)
	assert.Empty(t, res)

	r := f.last(t)
	assert.Equal(t, http.MethodPost, r.method)
	assert.Equal(t, "/indexes/kb-index/docs/search", r.path)
	assert.Equal(t, "2024-07-01", r.apiVersion)
	assert.Equal(t, secretKey, r.apiKey)
	assert.Empty(t, r.auth)
	assert.Equal(t, "application/json", r.contentType)
	assert.Equal(t, map[string]any{"search": `reset "password" & more`, "top": float64(7)}, r.body)

	// A custom API version, and an index name that needs escaping, stay in their places.
	c = newClient(t, Options{Endpoint: srv.URL + "/base", Index: "odd/name?", APIVersion: "2025-09-01", Key: secretKey})
	_, err = c.Search(context.Background(), "q", 1)
	require.NoError(t, err)
	r = f.last(t)
	assert.Equal(t, "/base/indexes/odd%2Fname%3F/docs/search", r.rawPath)
	assert.Equal(t, "2025-09-01", r.apiVersion)
}

func TestFieldMapping(t *testing.T) {
	body := `{"@odata.count":3,"value":[
	  {"@search.score":2.5,"id":"doc-1","url":"https://docs.example.com/a","title":"A","chunk":"chunk a","big":12345678901234567890123},
	  {"@search.score":1.5,"url":"  https://docs.example.com/b ","title":"","chunk":null},
	  {"@search.score":1.0,"key":"k-3","url":"https://docs.example.com/c","title":5,"chunk":["not","a","string"]}
	]}`
	_, srv := newFake(t, 200, body)
	c := newClient(t, Options{Endpoint: srv.URL, Index: "kb", Key: secretKey})
	res, err := c.Search(context.Background(), "q", 5)
	require.NoError(t, err)
	require.Len(t, res, 3)

	assert.Equal(t, "doc-1", res[0].ID)
	assert.Equal(t, "https://docs.example.com/a", res[0].URL)
	assert.Equal(t, "A", *res[0].Title)
	assert.Equal(t, "chunk a", *res[0].Chunk)

	assert.Equal(t, "kb:1", res[1].ID, "no key field: <index>:<position>")
	assert.Equal(t, "https://docs.example.com/b", res[1].URL)
	assert.Nil(t, res[1].Title)
	assert.Nil(t, res[1].Chunk)

	assert.Equal(t, "k-3", res[2].ID)
	assert.Nil(t, res[2].Title, "a non-string title is null")
	assert.Nil(t, res[2].Chunk)

	// raw_payload is the hit exactly as returned, big numbers included.
	b, err := json.Marshal(res[0])
	require.NoError(t, err)
	assert.JSONEq(t, `{"id":"doc-1","url":"https://docs.example.com/a","title":"A","chunk":"chunk a",
		"raw_payload":{"@search.score":2.5,"id":"doc-1","url":"https://docs.example.com/a","title":"A","chunk":"chunk a","big":12345678901234567890123}}`, string(b))
	assert.Contains(t, string(b), `"big":12345678901234567890123`)
}

func TestCustomFieldNames(t *testing.T) {
	body := `{"value":[{"chunk_id":"c-9","source_url":"https://x/1","doc_title":"Doc","content":"the text","url":"https://wrong","title":"wrong","chunk":"wrong"}]}`
	_, srv := newFake(t, 200, body)
	c := newClient(t, Options{Endpoint: srv.URL, Index: "kb", Key: secretKey,
		FieldURL: "source_url", FieldTitle: "doc_title", FieldChunk: "content"})
	res, err := c.Search(context.Background(), "q", 5)
	require.NoError(t, err)
	require.Len(t, res, 1)
	assert.Equal(t, "c-9", res[0].ID)
	assert.Equal(t, "https://x/1", res[0].URL)
	assert.Equal(t, "Doc", *res[0].Title)
	assert.Equal(t, "the text", *res[0].Chunk)
}

func TestHitsWithoutURLAreSkipped(t *testing.T) {
	body := `{"value":[
	  {"id":"1","title":"no url"},
	  {"id":"2","url":null},
	  {"id":"3","url":42},
	  {"id":"4","url":"   "},
	  {"id":"5","url":"https://ok/5"},
	  {"url":"https://ok/6"},
	  {"id":"7","url":"https://ok/7"}
	]}`
	_, srv := newFake(t, 200, body)
	c := newClient(t, Options{Endpoint: srv.URL, Index: "kb", Key: secretKey})
	res, err := c.Search(context.Background(), "q", 10)
	require.NoError(t, err)
	ids := []string{}
	for _, r := range res {
		ids = append(ids, r.ID)
	}
	assert.Equal(t, []string{"5", "kb:5", "7"}, ids, "the position counts every hit of the response")

	// More hits than asked for are cut at top.
	res, err = c.Search(context.Background(), "q", 2)
	require.NoError(t, err)
	assert.Len(t, res, 2)
}

func requireBackendError(t *testing.T, err error, reason string) {
	t.Helper()
	require.Error(t, err)
	assert.ErrorIs(t, err, gtc.ErrSearchBackend)
	var be *gtc.SearchBackendError
	require.ErrorAs(t, err, &be)
	assert.Equal(t, reason, be.Reason)
	d, ok := gtc.SearchBackendDetail(err)
	assert.True(t, ok)
	assert.Equal(t, "Search backend error: "+reason, d)
	assert.NotContains(t, err.Error(), secretKey)
	assert.NotContains(t, err.Error(), "SECRET-BODY")
}

func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		body   string
		reason string
	}{
		{"server error", 500, `{"error":{"code":"Boom","message":"SECRET-BODY details"}}`, "status 500"},
		{"forbidden", 403, `SECRET-BODY`, "status 403"},
		{"throttled", 503, ``, "status 503"},
		{"garbage body", 200, `<html>SECRET-BODY</html>`, "invalid response"},
		{"no value array", 200, `{"error":"SECRET-BODY"}`, "invalid response"},
		{"value not an array", 200, `{"value":{"url":"SECRET-BODY"}}`, "invalid response"},
		{"hit not an object", 200, `{"value":["SECRET-BODY"]}`, "invalid response"},
		{"truncated", 200, `{"value":[{"url":"https://x"`, "invalid response"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, srv := newFake(t, tc.status, tc.body)
			c := newClient(t, Options{Endpoint: srv.URL, Index: "kb", Key: secretKey})
			res, err := c.Search(context.Background(), "q", 5)
			assert.Nil(t, res)
			requireBackendError(t, err, tc.reason)
		})
	}
}

func TestTimeout(t *testing.T) {
	f, srv := newFake(t, 200, `{"value":[]}`)
	f.delay = 2 * time.Second
	c := newClient(t, Options{Endpoint: srv.URL, Index: "kb", Key: secretKey, Timeout: 50 * time.Millisecond})
	start := time.Now()
	_, err := c.Search(context.Background(), "q", 5)
	requireBackendError(t, err, "timeout")
	assert.Less(t, time.Since(start), time.Second)

	// The HTTP client's own timeout reads the same.
	c = newClient(t, Options{Endpoint: srv.URL, Index: "kb", Key: secretKey, HTTPClient: &http.Client{Timeout: 50 * time.Millisecond}})
	_, err = c.Search(context.Background(), "q", 5)
	requireBackendError(t, err, "timeout")

	// So does the caller's deadline.
	c = newClient(t, Options{Endpoint: srv.URL, Index: "kb", Key: secretKey})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = c.Search(ctx, "q", 5)
	requireBackendError(t, err, "timeout")
}

func TestCallerCancellationIsNotABackendError(t *testing.T) {
	f, srv := newFake(t, 200, `{"value":[]}`)
	f.delay = 2 * time.Second
	c := newClient(t, Options{Endpoint: srv.URL, Index: "kb", Key: secretKey})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := c.Search(ctx, "q", 5)
	require.ErrorIs(t, err, context.Canceled)
	assert.NotErrorIs(t, err, gtc.ErrSearchBackend)
}

func TestConnectionRefused(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	endpoint := srv.URL
	srv.Close()
	c := newClient(t, Options{Endpoint: endpoint, Index: "kb", Key: secretKey})
	_, err := c.Search(context.Background(), "q", 5)
	requireBackendError(t, err, "connection failed")
}

// fakeCredential hands out a fixed token and counts the calls.
type fakeCredential struct {
	mu     sync.Mutex
	calls  int
	scopes []string
	token  string
	expiry time.Duration
	err    error
}

func (f *fakeCredential) GetToken(_ context.Context, o policy.TokenRequestOptions) (azcore.AccessToken, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	f.scopes = o.Scopes
	if f.err != nil {
		return azcore.AccessToken{}, f.err
	}
	return azcore.AccessToken{Token: f.token, ExpiresOn: time.Now().Add(f.expiry)}, nil
}

func newTLSFake(t *testing.T) (*fakeService, *httptest.Server) {
	t.Helper()
	f := &fakeService{status: 200, body: `{"value":[{"id":"1","url":"https://x"}]}`}
	srv := httptest.NewTLSServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func TestBearerTokenWithoutKey(t *testing.T) {
	f, srv := newTLSFake(t)
	cred := &fakeCredential{token: "tok-abc", expiry: time.Hour}
	c := newClient(t, Options{Endpoint: srv.URL, Index: "kb", Credential: cred, HTTPClient: srv.Client()})
	for range 2 {
		res, err := c.Search(context.Background(), "q", 5)
		require.NoError(t, err)
		require.Len(t, res, 1)
	}
	r := f.last(t)
	assert.Equal(t, "Bearer tok-abc", r.auth)
	assert.Empty(t, r.apiKey)
	assert.Equal(t, []string{"https://search.azure.com/.default"}, cred.scopes)
	assert.Equal(t, 1, cred.calls, "the token is reused until shortly before it expires")

	// A token about to expire is fetched again.
	cred2 := &fakeCredential{token: "tok-short", expiry: time.Minute}
	c = newClient(t, Options{Endpoint: srv.URL, Index: "kb", Credential: cred2, HTTPClient: srv.Client()})
	for range 2 {
		_, err := c.Search(context.Background(), "q", 5)
		require.NoError(t, err)
	}
	assert.Equal(t, 2, cred2.calls)
}

func TestKeyWinsOverCredential(t *testing.T) {
	f, srv := newTLSFake(t)
	cred := &fakeCredential{token: "tok-abc", expiry: time.Hour}
	c := newClient(t, Options{Endpoint: srv.URL, Index: "kb", Key: secretKey, Credential: cred, HTTPClient: srv.Client()})
	_, err := c.Search(context.Background(), "q", 5)
	require.NoError(t, err)
	assert.Equal(t, secretKey, f.last(t).apiKey)
	assert.Empty(t, f.last(t).auth)
	assert.Zero(t, cred.calls)
}

func TestTokenFailure(t *testing.T) {
	f, srv := newTLSFake(t)
	cred := &fakeCredential{err: errors.New("no identity available")}
	c := newClient(t, Options{Endpoint: srv.URL, Index: "kb", Credential: cred, HTTPClient: srv.Client()})
	_, err := c.Search(context.Background(), "q", 5)
	requireBackendError(t, err, "authentication failed")
	assert.Empty(t, f.reqs, "nothing is sent without a token")
}

func TestNewValidation(t *testing.T) {
	cred := &fakeCredential{token: "t", expiry: time.Hour}
	for _, tc := range []struct {
		name string
		opts Options
		want string
	}{
		{"no endpoint", Options{Index: "kb", Key: "k"}, "endpoint is required"},
		{"bad endpoint", Options{Endpoint: "search.example.com", Index: "kb", Key: "k"}, "not an http(s) URL"},
		{"endpoint with query", Options{Endpoint: "https://s.example.com?x=1", Index: "kb", Key: "k"}, "not an http(s) URL"},
		{"no index", Options{Endpoint: "https://s.example.com", Key: "k"}, "index is required"},
		{"no auth", Options{Endpoint: "https://s.example.com", Index: "kb"}, "a key or a credential is required"},
		{"token over http", Options{Endpoint: "http://s.example.com", Index: "kb", Credential: cred}, "only sent over https"},
		{"negative timeout", Options{Endpoint: "https://s.example.com", Index: "kb", Key: "k", Timeout: -time.Second}, "negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.opts)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), secretKey)
		})
	}
}

func TestTopBelowOneSendsNothing(t *testing.T) {
	f, srv := newFake(t, 200, `{"value":[]}`)
	c := newClient(t, Options{Endpoint: srv.URL, Index: "kb", Key: secretKey})
	res, err := c.Search(context.Background(), "q", 0)
	require.NoError(t, err)
	assert.NotNil(t, res)
	assert.Empty(t, f.reqs)
}
