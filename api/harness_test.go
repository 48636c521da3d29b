// The fuzz builds (scripts/fuzz.sh, -tags fuzzing) leave out the external tests (package
// api_test): they run the server on the SQLite and Cosmos DB stores through this harness, and a
// fuzz build instruments every package of the test binary. The fuzz targets are internal tests
// of the request parsers and need neither.

//go:build !fuzzing

package api_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/api"
	"github.com/gtc-dev/gtc/api/agent"
	"github.com/gtc-dev/gtc/api/openapi"
	"github.com/gtc-dev/gtc/codec"
	"github.com/gtc-dev/gtc/export"
	"github.com/gtc-dev/gtc/history"
	"github.com/gtc-dev/gtc/jobs"
	"github.com/gtc-dev/gtc/screen"
	"github.com/gtc-dev/gtc/storage/cosmos"
	"github.com/gtc-dev/gtc/storage/cosmos/cosmostest"
	"github.com/gtc-dev/gtc/storage/localfs"
	"github.com/gtc-dev/gtc/storage/sqlite"
	"github.com/gtc-dev/gtc/storage/storetest/testenv"
	"github.com/gtc-dev/gtc/tagging"
)

// harness runs the real server (a real store, the real tag pipeline) behind httptest, and
// validates every response it receives against the server's own OpenAPI document, so the
// document cannot drift from the code. The store is SQLite on a real file, or a fresh
// database on the Cosmos DB test server when GTC_TEST_API_STORE=cosmos (see openStore).
type harness struct {
	t      *testing.T
	srv    *httptest.Server
	api    *api.Server
	store  gtc.Store
	clock  *gtc.FakeClock
	router routers.Router
	cur    *gtc.Curator
	exp    *export.Exporter
	arts   string       // root of the local artifact store
	tools  *agent.Tools // agent tools whose handlers echo their input (echoTools)
	calls  *agentCalls  // what those handlers saw
}

func init() {
	// The export downloads that are not JSON: every JSON Lines line must be a JSON object;
	// JSON Lines and CSV are then checked as the strings the document says they are, and
	// Parquet as binary.
	openapi3filter.RegisterBodyDecoder("application/x-ndjson", func(body io.Reader, h http.Header, s *openapi3.SchemaRef, enc openapi3filter.EncodingFn) (any, error) {
		data, err := io.ReadAll(body)
		if err != nil {
			return nil, err
		}
		for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
			var rec map[string]any
			if line != "" || len(data) > 0 {
				if err := json.Unmarshal([]byte(line), &rec); err != nil {
					return nil, fmt.Errorf("line %d is not a JSON object: %w", i+1, err)
				}
			}
		}
		return string(data), nil
	})
	openapi3filter.RegisterBodyDecoder("text/csv", openapi3filter.PlainBodyDecoder)
	openapi3filter.RegisterBodyDecoder("text/markdown", openapi3filter.PlainBodyDecoder)
	openapi3filter.RegisterBodyDecoder("application/vnd.apache.parquet", openapi3filter.FileBodyDecoder)
}

// serve starts srv behind httptest for a test.
func serve(t *testing.T, srv *api.Server) *httptest.Server {
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts
}

var t0 = time.Date(2025, 1, 2, 10, 0, 0, 0, time.UTC)

func newHarness(t *testing.T, mods ...func(*api.Options)) *harness {
	t.Helper()
	return newHarnessWith(t, nil, mods...)
}

// newHarnessWith lets a test change the curation service's dependencies too.
func newHarnessWith(t *testing.T, curMod func(*gtc.CuratorDeps), mods ...func(*api.Options)) *harness {
	t.Helper()
	clock := gtc.NewFakeClock(t0)
	st := openStore(t, clock)
	reg, err := tagging.NewDefaultRegistry()
	require.NoError(t, err)
	groups, err := tagging.LoadGroups("")
	require.NoError(t, err)
	validators, err := tagging.NewValidators(nil, groups.Schema())
	require.NoError(t, err)
	vocab := tagging.NewVocabulary(reg, nil, groups, st.TagStore(), st.TagDefinitions(), clock, nil)
	deps := gtc.CuratorDeps{Store: st, Tagger: tagging.NewPipeline(reg, validators, nil), Vocabulary: vocab,
		Clock: clock, IDs: gtc.NewIDGenerator(rand.Reader), ImportScreen: screen.New(screen.Options{PII: true, Duplicates: true, Items: st.Items()}),
		SelfServe: gtc.SelfServeOptions{DefaultLimit: 10, MaxLimit: 100}}
	if curMod != nil {
		curMod(&deps)
	}
	cur := gtc.NewCurator(deps)
	opts := api.Options{
		Prefix: "/v1", MaxBodyBytes: 10 << 20,
		// Generous: the tests run in parallel, under the race detector, on small shared
		// machines; the tests of the timeout itself set their own.
		RequestTimeout:     5 * time.Minute,
		Auth:               api.AuthOptions{DevUserID: "anonymous"},
		Frontend:           api.FrontendConfig{SelfServeLimit: 10},
		PaginationMinLimit: 1, PaginationMaxLimit: 100, Version: "test-version",
		AgentToolsEnabled: true, AgentMCPEnabled: true,
	}
	for _, m := range mods {
		m(&opts)
	}
	calls := &agentCalls{}
	tools, err := agent.New(echoTools(calls), agent.Options{Version: "test-version", ResolveCaller: api.CallerResolver(opts.Auth),
		Authorize: api.AuthorizeTool})
	require.NoError(t, err)
	runner := jobs.New(jobs.Options{Store: st.Jobs(), Leases: st.Leases(), Clock: clock, Max: 2, Retention: time.Hour})
	t.Cleanup(runner.Close)
	arts := t.TempDir()
	local, err := localfs.Open(arts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = local.Close() })
	pr, fr := export.Builtins([]string{"_etag", "assignedTo"})
	exp, err := export.New(export.Config{Items: st.Items(), Artifacts: local, Clock: clock, Processors: pr, Formatters: fr,
		PageSize: 50, MaxConcurrent: 2, BusyWait: 200 * time.Millisecond, TempDir: filepath.Join(arts, "tmp"),
		RevisionDiff: func(ctx context.Context, k gtc.Key, from, to int64) ([]gtc.PatchOp, error) {
			_, _, ops, err := history.Diff(ctx, cur, k, from, to)
			return ops, err
		}})
	require.NoError(t, err)
	srv := api.New(api.Deps{Curator: cur, Jobs: runner, Search: gtc.NewReferenceSearch(st.Items(), 200), Exporter: exp,
		Agent: tools}, opts)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	h := &harness{t: t, srv: ts, api: srv, store: st, clock: clock, cur: cur, exp: exp, arts: arts, tools: tools, calls: calls}
	h.loadDocument()
	return h
}

// EnvAPIStore chooses the store behind the API tests: unset or "sqlite" (a SQLite file in
// the test's temporary directory), or "cosmos" (a fresh database on the Cosmos DB test
// server of GTC_TEST_COSMOS_ENDPOINT, dropped when the test ends). "make test" runs the whole
// API suite on SQLite and TestAPISmoke on Cosmos DB; any API test runs on either.
const EnvAPIStore = "GTC_TEST_API_STORE"

// openStore opens the store GTC_TEST_API_STORE chooses, closed when the test ends; clock
// is the harness's clock, which stamps what the store stamps itself.
func openStore(t *testing.T, clock *gtc.FakeClock) gtc.Store {
	t.Helper()
	switch kind := os.Getenv(EnvAPIStore); kind {
	case "", "sqlite":
		st, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(t.TempDir(), "gtc.db"), Synchronous: "NORMAL"})
		require.NoError(t, err)
		t.Cleanup(func() { _ = st.Close() })
		return st
	case "cosmos":
		st, _ := cosmostest.Open(t, testenv.Cosmos(t), func(o *cosmos.Options) { o.Clock = clock })
		return st
	default:
		t.Fatalf("%s=%q: it must be sqlite (the default) or cosmos", EnvAPIStore, kind)
		return nil
	}
}

// loadDocument gives the harness the router of the document the server serves
// (TestDocumentMatchesRoutes proves the served bytes are this document).
func (h *harness) loadDocument() {
	h.t.Helper()
	r, err := documentRouter()
	require.NoError(h.t, err)
	h.router = r
}

// documentRouter loads the served document and builds its validation router once for the
// whole package: every harness serves the same document (prefix /v1, version test-version),
// and loading it is the costliest part of starting a harness. The router is only read
// afterwards, by tests running in parallel.
var documentRouter = sync.OnceValues(func() (routers.Router, error) {
	doc, err := openapi3.NewLoader().LoadFromData(openapi.Document("/v1", "test-version").JSON())
	if err != nil {
		return nil, err
	}
	return legacy.NewRouter(doc)
})

// response is what a request got back.
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into a generic value.
func (r *response) JSON(t *testing.T) any {
	t.Helper()
	var v any
	d := json.NewDecoder(bytes.NewReader(r.Body))
	d.UseNumber()
	require.NoError(t, d.Decode(&v), string(r.Body))
	return v
}

// Object decodes an object body.
func (r *response) Object(t *testing.T) map[string]any {
	t.Helper()
	m, ok := r.JSON(t).(map[string]any)
	require.True(t, ok, "body is not an object: %s", r.Body)
	return m
}

// Array decodes an array body.
func (r *response) Array(t *testing.T) []any {
	t.Helper()
	a, ok := r.JSON(t).([]any)
	require.True(t, ok, "body is not an array: %s", r.Body)
	return a
}

// req describes one request; Body may be a string or []byte (sent as is) or any value
// (sent as JSON).
type req struct {
	Method  string
	Path    string
	Body    any
	Header  map[string]string
	NoCT    bool // send no Content-Type
	NoCheck bool // the request is not a documented operation (unknown route, wrong method)
}

func (h *harness) do(r req) *response {
	h.t.Helper()
	var body io.Reader
	var raw []byte
	switch b := r.Body.(type) {
	case nil:
	case string:
		raw = []byte(b)
	case []byte:
		raw = b
	default:
		var err error
		raw, err = json.Marshal(b)
		require.NoError(h.t, err)
	}
	if raw != nil {
		body = bytes.NewReader(raw)
	}
	hr, err := http.NewRequest(r.Method, h.srv.URL+r.Path, body)
	require.NoError(h.t, err)
	if !r.NoCT {
		// The curator web frontend sends this on every request, GETs included.
		hr.Header.Set("Content-Type", "application/json")
	}
	for k, v := range r.Header {
		hr.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(hr)
	require.NoError(h.t, err)
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	require.NoError(h.t, err)
	out := &response{Status: res.StatusCode, Header: res.Header, Body: data}
	h.check(hr, raw, out, r.NoCheck)
	return out
}

func (h *harness) get(path string) *response { return h.do(req{Method: http.MethodGet, Path: path}) }

// check validates the response against the document, and the error body shape of every
// status ≥ 400.
func (h *harness) check(hr *http.Request, reqBody []byte, res *response, noRoute bool) {
	h.t.Helper()
	require.Equal(h.t, "nosniff", res.Header.Get("X-Content-Type-Options"))
	require.NotEmpty(h.t, res.Header.Get("X-Request-Id"))
	if res.Status >= 400 {
		require.Equal(h.t, "application/json", res.Header.Get("Content-Type"), "error bodies are JSON")
		var eb map[string]any
		require.NoError(h.t, json.Unmarshal(res.Body, &eb), "error body must be JSON: %q", res.Body)
		require.IsType(h.t, "", eb["detail"], "detail must be a string: %s", res.Body)
		require.NotEmpty(h.t, eb["detail"])
		require.EqualValues(h.t, res.Status, eb["status"], "status key equals the HTTP status")
		require.IsType(h.t, "", eb["code"])
	}
	if noRoute {
		return
	}
	// The request as the document sees it (the URL must be absolute for the router).
	vr := hr.Clone(context.Background())
	route, params, err := h.router.FindRoute(vr)
	require.NoError(h.t, err, "%s %s is not in the OpenAPI document", hr.Method, hr.URL.Path)
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: vr, PathParams: params, Route: route},
		Status:                 res.Status,
		Header:                 res.Header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	in.SetBodyBytes(res.Body)
	err = openapi3filter.ValidateResponse(context.Background(), in)
	require.NoError(h.t, err, "%s %s → %d does not match the document: %s", hr.Method, hr.URL.Path, res.Status, res.Body)
	_ = reqBody
}

// importItems imports items and requires them all to succeed; it returns the response.
func (h *harness) importItems(items ...map[string]any) map[string]any {
	h.t.Helper()
	if items == nil {
		items = []map[string]any{}
	}
	res := h.do(req{Method: http.MethodPost, Path: "/v1/ground-truths", Body: items})
	require.Equal(h.t, http.StatusOK, res.Status, string(res.Body))
	obj := res.Object(h.t)
	require.Equal(h.t, json.Number(strconv.Itoa(len(items))), obj["imported"], string(res.Body))
	return obj
}

// item fetches one item by (dataset, id) through the store and returns its API JSON.
func (h *harness) item(dataset, id string) map[string]any {
	h.t.Helper()
	k, err := h.store.Items().Locate(context.Background(), dataset, id)
	require.NoError(h.t, err)
	res := h.get(itemPath(k))
	require.Equal(h.t, http.StatusOK, res.Status, string(res.Body))
	return res.Object(h.t)
}

func itemPath(k gtc.Key) string {
	return "/v1/ground-truths/" + pathEscape(k.DatasetName) + "/" + k.Bucket + "/" + pathEscape(k.ID)
}

func (h *harness) key(dataset, id string) gtc.Key {
	h.t.Helper()
	k, err := h.store.Items().Locate(context.Background(), dataset, id)
	require.NoError(h.t, err)
	return k
}

// snapshot returns every stored item's canonical document and ETag, to prove that a
// refused request changed nothing.
func (h *harness) snapshot() []string {
	h.t.Helper()
	var out []string
	for it, err := range h.store.Items().QueryAll(context.Background(), gtc.Query{Sort: gtc.SortID, Limit: 1000}) {
		require.NoError(h.t, err)
		out = append(out, it.ETag+" "+string(codec.ItemStoredJSON(it)))
	}
	ds, err := h.store.Items().Datasets(context.Background())
	require.NoError(h.t, err)
	for _, d := range ds {
		c, err := h.store.Curation().Get(context.Background(), d)
		if err == nil {
			out = append(out, "curation "+d+" "+c.ETag+" "+c.Instructions)
		}
	}
	sort.Strings(out)
	return out
}

// etagHeader is the ETag header a body token must come with: the token
// itself when it is quoted (SQLite's tokens, real Cosmos DB's), else the token in quotes
// (the Cosmos DB test server's bare UUIDs).
func etagHeader(t *testing.T, tok any) string {
	t.Helper()
	s, ok := tok.(string)
	require.True(t, ok, "_etag is not a string: %v", tok)
	require.NotEmpty(t, s, "_etag is empty")
	if len(s) >= 2 && strings.HasPrefix(s, `"`) && strings.HasSuffix(s, `"`) {
		return s
	}
	return `"` + s + `"`
}

func pathEscape(s string) string {
	r := strings.NewReplacer("%", "%25", "/", "%2F", "?", "%3F", "#", "%23", " ", "%20")
	return r.Replace(s)
}

// basicItem is a valid import element.
func basicItem(dataset, id string) map[string]any {
	return map[string]any{
		"id": id, "datasetName": dataset,
		"history": []any{
			map[string]any{"role": "user", "msg": "Where do I download the installer?"},
			map[string]any{"role": "assistant", "msg": "Use the download page."},
		},
		"manualTags": []any{"source:sme"},
	}
}
