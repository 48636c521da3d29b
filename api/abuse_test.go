// Left out of the fuzz builds with the rest of package api_test (see harness_test.go).

//go:build !fuzzing

package api_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/api"
)

// The hostile-request table: every row sends one request an attacker or a broken client could
// send, and checks three things a user would notice: the exact status (a 4xx, or the 2xx the
// API documents for that input, never a 5xx), an error body that names the problem without
// leaking internals, and a store, tag store, glossary and export storage left exactly as they
// were.

// abuseLimit is GTC_MAX_BODY_BYTES for the table: small enough that oversized bodies are
// cheap, large enough that a 100,000-level nesting bomb (200 KB) is read and parsed.
const abuseLimit = 1 << 20

// abuseFixture is a harness seeded with two datasets, one item assigned to alice and one to
// bob, curation instructions, a custom tag, a glossary definition and one artifact export.
type abuseFixture struct {
	h          *harness
	who        func(user string) map[string]string // identity headers of a user
	alice, bob gtc.Key                             // alpha/a-1 (alice's), alpha/a-2 (bob's)
	free       gtc.Key                             // beta/b-1, unassigned
	snapshotID string
	// probes are dataset names and tag keys hostile rows use: their curation documents and
	// definitions are part of the observed state, so a row that creates one is caught.
	probes []string
	// outside is a file next to (not inside) the export root that no route may serve.
	outside string
}

const (
	alice = "alice@example.com"
	bob   = "bob@example.com"
	admin = "admin@example.com"
)

// devWho is a user's dev mode identity: admin@example.com is an admin, everyone else a
// curator.
func devWho(user string) map[string]string {
	role := "curator"
	if user == admin {
		role = "admin"
	}
	return map[string]string{"X-User-Id": user, "X-User-Roles": role}
}

// easyWho is a user's Easy Auth principal: admin@example.com carries the admin role claim,
// everyone else no role claim (the default role, curator).
func easyWho(user string) map[string]string {
	var extra [][2]string
	if user == admin {
		extra = append(extra, [2]string{"roles", "admin"})
	}
	return map[string]string{"X-MS-CLIENT-PRINCIPAL": principalHeader(map[string]string{"email": user}, extra...)}
}

func seedAbuse(t *testing.T, h *harness, who func(string) map[string]string) *abuseFixture {
	t.Helper()
	f := &abuseFixture{h: h, who: who}
	a1 := basicItem("alpha", "a-1")
	a1["assignedTo"], a1["assignedAt"] = alice, "2025-01-01T00:00:00Z"
	a2 := basicItem("alpha", "a-2")
	a2["assignedTo"], a2["assignedAt"] = bob, "2025-01-01T00:00:00Z"
	a3 := basicItem("alpha", "a-3")
	a3["status"] = "approved"
	b1 := basicItem("beta", "b-1")
	res := h.do(req{Method: http.MethodPost, Path: "/v1/ground-truths", Body: []any{a1, a2, a3, b1}, Header: who(admin)})
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	require.Equal(t, json.Number("4"), res.Object(t)["imported"], string(res.Body))
	f.alice, f.bob, f.free = h.key("alpha", "a-1"), h.key("alpha", "a-2"), h.key("beta", "b-1")

	res = h.do(req{Method: http.MethodPut, Path: "/v1/datasets/alpha/curation-instructions", Body: map[string]any{"instructions": "# Rules"}, Header: who(admin)})
	require.Equal(t, http.StatusCreated, res.Status, string(res.Body))
	res = h.do(req{Method: http.MethodPost, Path: "/v1/tags", Body: map[string]any{"tags": []any{"custom:seeded"}}, Header: who(admin)})
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	res = h.do(req{Method: http.MethodPost, Path: "/v1/tags/definitions", Body: map[string]any{"tag_key": "source:sme", "description": "From an expert"}, Header: who(admin)})
	require.Equal(t, http.StatusCreated, res.Status, string(res.Body))
	res = h.do(req{Method: http.MethodPost, Path: "/v1/ground-truths/snapshot", Header: who(admin),
		Body: map[string]any{"filters": map[string]any{"status": ""}, "delivery": map[string]any{"mode": "artifact"}}})
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	f.snapshotID = res.Object(t)["snapshotId"].(string)

	// Files a traversal would be after: one in the export root, one in the directory above it.
	require.NoError(t, os.WriteFile(filepath.Join(h.arts, "secret.json"), []byte(`{"secret":"root"}`), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(h.arts, "exports", "secret.json"), []byte(`{"secret":"exports"}`), 0o600))
	f.outside = filepath.Join(filepath.Dir(h.arts), "outside-secret.json")
	require.NoError(t, os.WriteFile(f.outside, []byte(`{"secret":"outside"}`), 0o600))
	return f
}

// state is everything a request could change, as one comparable text: every item's stored
// document and ETag (assignments included), curation instructions of the seeded and probed
// dataset names, the tag store, the glossary, and every file under the export root and next
// to it with its hash.
func (f *abuseFixture) state(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	lines := f.h.snapshot()
	for _, ds := range append([]string{"alpha", "beta"}, f.probes...) {
		if f.h.store.Backend() == "cosmos" && (!utf8.ValidString(ds) || gtc.CheckDatasetName(ds) != "") {
			// Cosmos DB cannot be asked about such a name (its ids and partition keys refuse
			// some of these characters); the API refuses it before the store, so SQLite's run
			// is the one that proves no document was made.
			continue
		}
		c, err := f.h.store.Curation().Get(ctx, ds)
		switch {
		case err == nil:
			lines = append(lines, fmt.Sprintf("curation %q %s %q", ds, c.ETag, c.Instructions))
		case errors.Is(err, gtc.ErrNotFound):
		default:
			require.NoError(t, err, "curation %q", ds)
		}
	}
	tags, err := f.h.store.TagStore().List(ctx)
	require.NoError(t, err)
	lines = append(lines, "tags "+strings.Join(tags, ","))
	defs, err := f.h.store.TagDefinitions().List(ctx)
	require.NoError(t, err)
	for _, d := range defs {
		lines = append(lines, fmt.Sprintf("definition %q %q %s", d.TagKey, d.Description, d.UpdatedAt))
	}
	root := filepath.Dir(f.h.arts)
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || strings.HasSuffix(p, ".db") || strings.Contains(p, ".db-") {
			return nil // the SQLite files change on reads too (WAL); the store is compared above
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		rel, _ := filepath.Rel(root, p)
		lines = append(lines, "file "+filepath.ToSlash(rel)+" "+hex.EncodeToString(sum[:8]))
		return nil
	}))
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// abuseRow is one hostile request and what it must get.
type abuseRow struct {
	name    string
	method  string
	path    string // appended to the server URL as is (already percent-encoded)
	body    any    // string or []byte, sent as is
	header  map[string]string
	noCT    bool // send no Content-Type
	chunked bool // send the body without Content-Length
	// raw, when set, is sent as is over a TCP connection instead; halfClose then closes
	// the write side after it, so the server sees the end of the stream.
	raw       string
	halfClose bool

	status int
	// code is the error code the body must carry; "" for answers net/http gives itself,
	// before any handler runs (those are plain text, outside the product's control).
	code  string
	field string // when set, the first errors[].field
	// detail, when set, is the exact detail.
	detail string
	check  func(t *testing.T, res *response)
}

// leakMarkers are texts that only an internal error could put into a response: Go error
// strings, stack traces, driver and SDK names, file-system paths.
var leakMarkers = []string{"goroutine", ".go:", "panic", "runtime error", "sqlite", "SQL", "cosmos", "azcosmos",
	"unexpected EOF", "http: ", "net/http", "no such file", "permission denied", "syscall", "%!", "artifacts:",
	"exports/snapshots", "secret"}

func (f *abuseFixture) send(t *testing.T, r abuseRow) *response {
	t.Helper()
	if r.raw != "" {
		return sendRaw(t, f.h.srv.Listener.Addr().String(), r.raw, r.halfClose)
	}
	var body io.Reader
	switch b := r.body.(type) {
	case nil:
	case string:
		body = strings.NewReader(b)
	case []byte:
		body = strings.NewReader(string(b))
	default:
		t.Fatalf("row %s: body must be a string or bytes", r.name)
	}
	if r.chunked && body != nil {
		body = io.MultiReader(body) // hides the length, so the client streams it chunked
	}
	hr, err := http.NewRequest(r.method, f.h.srv.URL+r.path, body)
	require.NoError(t, err, r.name)
	if r.chunked {
		hr.ContentLength = -1
	}
	if !r.noCT {
		hr.Header.Set("Content-Type", "application/json")
	}
	for k, v := range r.header {
		hr.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(hr)
	require.NoError(t, err, r.name)
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	require.NoError(t, err, r.name)
	return &response{Status: res.StatusCode, Header: res.Header, Body: data}
}

// sendRaw writes raw to a new connection and reads the first response. The write runs on its
// own goroutine: the server may answer (and stop reading) before the request is complete.
func sendRaw(t *testing.T, addr, raw string, halfClose bool) *response {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(30*time.Second)))
	go func() {
		_, _ = io.WriteString(conn, raw)
		if halfClose {
			_ = conn.(*net.TCPConn).CloseWrite()
		}
	}()
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err, "no HTTP response to %.80q", raw)
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return &response{Status: res.StatusCode, Header: res.Header, Body: data}
}

// runAbuse runs the rows, each against the state it must leave alone.
func runAbuse(t *testing.T, f *abuseFixture, rows []abuseRow) {
	before := f.state(t)
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			res := f.send(t, r)
			t.Logf("%s %.100s → %d %.300s", r.method, r.path, res.Status, res.Body)
			require.Less(t, res.Status, 500, "a hostile request is never a server fault: %s", res.Body)
			assert.Equal(t, r.status, res.Status, "status: %s", res.Body)
			if r.code != "" {
				assert.Equal(t, "application/json", res.Header.Get("Content-Type"))
				var eb map[string]any
				require.NoError(t, json.Unmarshal(res.Body, &eb), "the error body is JSON: %q", res.Body)
				assert.Equal(t, r.code, eb["code"], "code: %s", res.Body)
				assert.EqualValues(t, res.Status, eb["status"])
				d, _ := eb["detail"].(string)
				assert.NotEmpty(t, d, "detail names the problem")
				if r.detail != "" {
					assert.Equal(t, r.detail, d)
				}
				if r.field != "" {
					errs, _ := eb["errors"].([]any)
					require.NotEmpty(t, errs, "errors[] names the field: %s", res.Body)
					assert.Equal(t, r.field, errs[0].(map[string]any)["field"], "field: %s", res.Body)
				}
			}
			if res.Status >= 400 {
				for _, m := range append(leakMarkers, f.h.arts, filepath.Dir(f.h.arts)) {
					assert.NotContains(t, string(res.Body), m, "the answer leaks internals: %s", res.Body)
				}
			}
			assert.Empty(t, res.Header.Values("Set-Cookie"), "no header was injected into the answer")
			if r.check != nil {
				r.check(t, res)
			}
			after := f.state(t)
			assert.Equal(t, before, after, "the request changed the stored state")
			before = after // so that one failure is not blamed on the rows after it
		})
	}
}

// jsonBody pads a JSON object with a long string so that it is n bytes.
func paddedObject(key string, n int) string {
	head := `{"` + key + `":"`
	return head + strings.Repeat("x", n-len(head)-2) + `"}`
}

func deepArray(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

func deepObject(n int) string { return strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n) }

func rawHTTP(method, path string, header map[string]string, body string) string {
	var b strings.Builder
	b.WriteString(method + " " + path + " HTTP/1.1\r\nHost: gtc.test\r\nConnection: close\r\n")
	keys := make([]string, 0, len(header))
	for k := range header {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b.WriteString(k + ": " + header[k] + "\r\n")
	}
	b.WriteString("\r\n")
	b.WriteString(body)
	return b.String()
}

func TestAbuseTable(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(o *api.Options) { o.MaxBodyBytes = abuseLimit })
	f := seedAbuse(t, h, devWho)
	f.probes = []string{"../alpha", "alpha/..", "/etc/passwd", "..", ".", "...", "../../etc", "\xff", "a\x00b", "a\r\nb", `..\alpha`, strings.Repeat("d", 300),
		"al\u200bpha", "alpha\u202e", "\ufeffalpha"}
	itemFree := itemPath(f.free)
	bucket := f.alice.Bucket
	over := abuseLimit + 1
	tooLarge := fmt.Sprintf("Request body exceeds the limit of %d bytes", abuseLimit)
	snap := "/v1/exports/" + f.snapshotID
	ctJSON := map[string]string{"Content-Type": "application/json"}
	withCT := func(extra map[string]string) map[string]string {
		out := map[string]string{"Content-Type": "application/json"}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	aliceCT := withCT(devWho(alice))
	etagB := f.h.item("alpha", "a-2")["_etag"].(string)
	etagFree := f.h.item("beta", "b-1")["_etag"].(string)

	rows := []abuseRow{
		// ---- bodies over GTC_MAX_BODY_BYTES ------------------------------------------------
		{name: "PUT item body over the limit", method: "PUT", path: itemFree, body: paddedObject("comment", over),
			status: 413, code: "BODY_TOO_LARGE", detail: tooLarge},
		{name: "PUT assignment body over the limit", method: "PUT", path: assignPath(f.alice, ""), body: paddedObject("comment", over), header: devWho(alice),
			status: 413, code: "BODY_TOO_LARGE", detail: tooLarge},
		{name: "POST import body over the limit", method: "POST", path: "/v1/ground-truths", body: "[" + paddedObject("id", over-2) + "]",
			status: 413, code: "BODY_TOO_LARGE", detail: tooLarge},
		{name: "POST import chunked body growing past the limit", method: "POST", path: "/v1/ground-truths", body: "[" + paddedObject("id", 2*abuseLimit) + "]", chunked: true,
			status: 413, code: "BODY_TOO_LARGE", detail: tooLarge},
		{name: "PUT curation instructions over the limit", method: "PUT", path: "/v1/datasets/alpha/curation-instructions", body: paddedObject("instructions", over),
			status: 413, code: "BODY_TOO_LARGE"},
		{name: "POST tags over the limit", method: "POST", path: "/v1/tags", body: paddedObject("tags", over),
			status: 413, code: "BODY_TOO_LARGE"},
		{name: "Content-Length declares 1 TB, body is 2 bytes", raw: rawHTTP("POST", "/v1/ground-truths", withCT(map[string]string{"Content-Length": "1099511627776"}), "[]"),
			status: 413, code: "BODY_TOO_LARGE", detail: tooLarge},
		{name: "Content-Length shorter than the body", raw: rawHTTP("POST", "/v1/ground-truths", withCT(map[string]string{"Content-Length": "5"}), `[{"id":"lie","datasetName":"alpha"}]`),
			status: 422, code: "INVALID_JSON", field: "body"},
		{name: "Content-Length longer than the body, then end of stream", raw: rawHTTP("POST", "/v1/ground-truths", withCT(map[string]string{"Content-Length": "4096"}), `[{"id":"lie","datasetName":"alpha"}]`), halfClose: true,
			status: 422, code: "VALIDATION_ERROR", field: "body"},
		{name: "negative Content-Length", raw: rawHTTP("POST", "/v1/ground-truths", withCT(map[string]string{"Content-Length": "-1"}), `[]`),
			status: 400},
		{name: "two different Content-Length headers", raw: "POST /v1/ground-truths HTTP/1.1\r\nHost: gtc.test\r\nContent-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 40\r\n\r\n[]",
			status: 400},
		{name: "Content-Length with chunked Transfer-Encoding (smuggling)", raw: "POST /v1/tags HTTP/1.1\r\nHost: gtc.test\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nPOST /v1/tags HTTP/1.1\r\nHost: gtc.test\r\nContent-Type: application/json\r\nContent-Length: 29\r\n\r\n{\"tags\":[\"custom:smuggled\"]}",
			status: 422, code: "VALIDATION_ERROR", field: "body"},

		// ---- nesting bombs -------------------------------------------------------------------
		{name: "PUT item with 100,000 nested arrays", method: "PUT", path: itemFree, body: `{"metadata":` + deepArray(100000) + `}`,
			status: 422, code: "INVALID_JSON", field: "body"},
		{name: "POST import of 100,000 nested arrays", method: "POST", path: "/v1/ground-truths", body: deepArray(100000),
			status: 422, code: "INVALID_JSON", field: "body"},
		{name: "PUT assignment with 50,000 nested objects", method: "PUT", path: assignPath(f.alice, ""), header: devWho(alice), body: `{"metadata":` + deepObject(50000) + `}`,
			status: 422, code: "INVALID_JSON", field: "body"},
		{name: "POST export with nested filters", method: "POST", path: "/v1/ground-truths/snapshot", body: `{"filters":` + deepArray(100000) + `}`,
			status: 422, code: "INVALID_JSON", field: "body"},
		{name: "POST tag definition nested 100,000 deep", method: "POST", path: "/v1/tags/definitions", body: deepArray(100000),
			status: 422, code: "INVALID_JSON", field: "body"},
		{name: "POST self-serve nested 100,000 deep", method: "POST", path: "/v1/assignments/self-serve", header: devWho(alice), body: deepObject(100000),
			status: 422, code: "INVALID_JSON", field: "body"},

		// ---- invalid UTF-8 and control bytes in bodies ---------------------------------------
		{name: "PUT item, invalid UTF-8 in a string value", method: "PUT", path: itemFree, body: "{\"comment\":\"ok \xff\xfe\"}",
			status: 422, code: "INVALID_JSON", field: "body"},
		{name: "PUT item, invalid UTF-8 in a key", method: "PUT", path: itemFree, body: "{\"comm\xc3\x28ent\":\"x\"}",
			status: 422, code: "INVALID_JSON", field: "body"},
		{name: "POST import, invalid UTF-8 in datasetName", method: "POST", path: "/v1/ground-truths", body: "[{\"id\":\"u\",\"datasetName\":\"alpha\xe2\x82\"}]",
			status: 422, code: "INVALID_JSON", field: "body"},
		{name: "PUT curation, UTF-8-encoded surrogate", method: "PUT", path: "/v1/datasets/alpha/curation-instructions", body: "{\"instructions\":\"\xed\xa0\x80\"}",
			status: 422, code: "INVALID_JSON", field: "body"},
		{name: "PUT item, raw NUL inside a string", method: "PUT", path: itemFree, body: "{\"comment\":\"a\x00b\"}",
			status: 422, code: "INVALID_JSON", field: "body"},
		{name: "POST tags, raw CR LF inside a string", method: "POST", path: "/v1/tags", body: "{\"tags\":[\"custom:a\r\nb\"]}",
			status: 422, code: "INVALID_JSON", field: "body"},

		// ---- query parameters --------------------------------------------------------------
		{name: "list, invalid UTF-8 status", method: "GET", path: "/v1/ground-truths?status=%ff%fe",
			status: 400, code: "INVALID_STATUS"},
		{name: "list, NUL page", method: "GET", path: "/v1/ground-truths?page=%00",
			status: 422, code: "VALIDATION_ERROR", field: "query.page"},
		{name: "list, CR LF in sortBy", method: "GET", path: "/v1/ground-truths?sortBy=id%0D%0ASet-Cookie:%20x=1",
			status: 422, code: "VALIDATION_ERROR", field: "query.sortBy"},
		{name: "list, limit with a trailing LF", method: "GET", path: "/v1/ground-truths?limit=10%0A",
			status: 422, code: "VALIDATION_ERROR", field: "query.limit"},
		{name: "list, page beyond 64 bits", method: "GET", path: "/v1/ground-truths?page=99999999999999999999",
			status: 422, code: "VALIDATION_ERROR", field: "query.page"},
		{name: "list, malformed percent-encoding in status", method: "GET", path: "/v1/ground-truths?status=%zz",
			status: 422, code: "VALIDATION_ERROR", field: "query.status"},
		{name: "list, invalid UTF-8 pluginFilter", method: "GET", path: "/v1/ground-truths?pluginFilter=%ff%fe",
			status: 400, code: "INVALID_QUERY"},
		{name: "list, the largest page", method: "GET", path: "/v1/ground-truths?page=9223372036854775807&limit=100",
			status: 200, check: func(t *testing.T, res *response) {
				body := res.Object(t)
				assert.Empty(t, body["items"], "a page past the end is empty")
				p := body["pagination"].(map[string]any)
				assert.Equal(t, json.Number("4"), p["total"])
				assert.Equal(t, false, p["hasNext"])
			}},
		{name: "list, keyword with invalid UTF-8, NUL and CR LF (free text: no match)", method: "GET", path: "/v1/ground-truths?keyword=%ff%00%0D%0A",
			status: 200, check: func(t *testing.T, res *response) { assert.Empty(t, res.Object(t)["items"]) }},
		{name: "list, dataset filter with invalid UTF-8 and NUL (no match)", method: "GET", path: "/v1/ground-truths?dataset=%ff%00",
			status: 200, check: func(t *testing.T, res *response) { assert.Empty(t, res.Object(t)["items"]) }},
		{name: "recompute of a dataset named with invalid UTF-8 and NUL (nothing matches)", method: "POST", path: "/v1/ground-truths/recompute-tags?dataset=%ff%00",
			status: 200, check: func(t *testing.T, res *response) { assert.Equal(t, json.Number("0"), res.Object(t)["total"]) }},
		{name: "search, q with NUL and invalid UTF-8 (no hit)", method: "GET", path: "/v1/search?q=%00%ff",
			status: 200, check: func(t *testing.T, res *response) { assert.Empty(t, res.Object(t)["results"]) }},
		{name: "search, bad top", method: "GET", path: "/v1/search?q=%ff%00&top=%0D%0A",
			status: 422, code: "VALIDATION_ERROR", field: "query.top"},
		{name: "exports list, invalid UTF-8 page", method: "GET", path: "/v1/exports?page=%ff",
			status: 422, code: "VALIDATION_ERROR", field: "query.page"},
		{name: "exports list, the largest page", method: "GET", path: "/v1/exports?page=9223372036854775807&limit=100",
			status: 200, check: func(t *testing.T, res *response) {
				body := res.Object(t)
				assert.Empty(t, body["items"])
				assert.Equal(t, false, body["pagination"].(map[string]any)["hasNext"])
			}},
		{name: "recompute, NUL dry_run", method: "POST", path: "/v1/ground-truths/recompute-tags?dataset=..%2Falpha&dry_run=%00",
			status: 422, code: "VALIDATION_ERROR", field: "query.dry_run"},
		{name: "import, CR LF approve", method: "POST", path: "/v1/ground-truths?approve=true%0D%0A", body: `[{"id":"q","datasetName":"alpha"}]`,
			status: 422, code: "VALIDATION_ERROR", field: "query.approve"},
		{name: "list, 20,000 query parameters", method: "GET", path: "/v1/ground-truths?status=approved" + strings.Repeat("&x=1", 20000),
			status: 422, code: "VALIDATION_ERROR", field: "query"},
		{name: "dataset list, 100 KB URL", method: "GET", path: "/v1/ground-truths/" + strings.Repeat("a", 100<<10),
			status: 422, code: "VALIDATION_ERROR", field: "path.datasetName", detail: "Request validation failed: path.datasetName: must be at most 255 characters"},
		{name: "URL over the header limit (2 MiB)", method: "GET", path: "/v1/ground-truths?keyword=" + strings.Repeat("k", 2<<20),
			status: 431},

		// ---- control bytes and invalid UTF-8 in path segments --------------------------------
		{name: "GET item, NUL in the dataset", method: "GET", path: "/v1/ground-truths/alpha%00/" + bucket + "/a-1",
			status: 422, code: "VALIDATION_ERROR", field: "path.datasetName", detail: "Request validation failed: path.datasetName: " + gtc.MsgDatasetChars},
		{name: "GET item, CR LF in the id", method: "GET", path: "/v1/ground-truths/alpha/" + bucket + "/a-1%0D%0ASet-Cookie:%20x",
			status: 422, code: "VALIDATION_ERROR", field: "path.item_id", detail: "Request validation failed: path.item_id: " + gtc.MsgIDChars},
		{name: "PUT item, invalid UTF-8 dataset", method: "PUT", path: "/v1/ground-truths/%ff/" + bucket + "/a-1", body: `{"comment":"x"}`,
			status: 422, code: "VALIDATION_ERROR", field: "path.datasetName", detail: "Request validation failed: path.datasetName: " + gtc.MsgDatasetChars},
		{name: "DELETE item, NUL id", method: "DELETE", path: "/v1/ground-truths/alpha/" + bucket + "/%00",
			status: 422, code: "VALIDATION_ERROR", field: "path.item_id", detail: "Request validation failed: path.item_id: " + gtc.MsgIDChars},
		{name: "GET curation, invalid UTF-8 dataset", method: "GET", path: "/v1/datasets/%ff/curation-instructions",
			status: 422, code: "VALIDATION_ERROR", field: "path.datasetName", detail: "Request validation failed: path.datasetName: " + gtc.MsgDatasetChars},
		{name: "PUT curation, invalid UTF-8 dataset", method: "PUT", path: "/v1/datasets/%ff/curation-instructions", body: `{"instructions":"x"}`,
			status: 422, code: "VALIDATION_ERROR", field: "path.datasetName"},
		{name: "PUT curation, NUL in the dataset", method: "PUT", path: "/v1/datasets/a%00b/curation-instructions", body: `{"instructions":"x"}`,
			status: 422, code: "VALIDATION_ERROR", field: "path.datasetName"},
		{name: "PUT curation, CR LF in the dataset", method: "PUT", path: "/v1/datasets/a%0D%0Ab/curation-instructions", body: `{"instructions":"x"}`,
			status: 422, code: "VALIDATION_ERROR", field: "path.datasetName"},
		{name: "PUT curation, 300-character dataset", method: "PUT", path: "/v1/datasets/" + strings.Repeat("d", 300) + "/curation-instructions", body: `{"instructions":"x"}`,
			status: 422, code: "VALIDATION_ERROR", field: "path.datasetName"},
		{name: "DELETE dataset, NUL name", method: "DELETE", path: "/v1/datasets/a%00b",
			status: 422, code: "VALIDATION_ERROR", field: "path.datasetName", detail: "Request validation failed: path.datasetName: " + gtc.MsgDatasetChars},
		{name: "raw NUL byte in the request line", raw: rawHTTP("PUT", "/v1/datasets/a\x00b/curation-instructions", ctJSON, ""),
			status: 400},
		{name: "raw 0xFF byte in a path segment", raw: rawHTTP("GET", "/v1/ground-truths/\xff/"+bucket+"/a-1", nil, ""),
			status: 422, code: "VALIDATION_ERROR", field: "path.datasetName", detail: "Request validation failed: path.datasetName: " + gtc.MsgDatasetChars},

		// ---- path traversal: datasets, buckets, ids -------------------------------------------
		{name: "GET item, ..%2F..%2Fetc dataset", method: "GET", path: "/v1/ground-truths/..%2F..%2Fetc/" + bucket + "/passwd",
			status: 422, code: "VALIDATION_ERROR", field: "path.datasetName", detail: "Request validation failed: path.datasetName: " + gtc.MsgDatasetChars},
		{name: "GET item, ..%2F in the id", method: "GET", path: "/v1/ground-truths/alpha/" + bucket + "/..%2Fa-1",
			status: 422, code: "VALIDATION_ERROR", field: "path.item_id", detail: "Request validation failed: path.item_id: " + gtc.MsgIDChars},
		{name: "GET item, traversal as the bucket", method: "GET", path: "/v1/ground-truths/alpha/..%2F..%2F/a-1",
			status: 422, code: "VALIDATION_ERROR", field: "path.bucket"},
		{name: "GET item, literal .. segments", method: "GET", path: "/v1/ground-truths/alpha/../..",
			status: 422, code: "VALIDATION_ERROR", field: "path.bucket"},
		{name: "PUT item, %2e%2e dataset", method: "PUT", path: "/v1/ground-truths/%2e%2e/" + bucket + "/a-1", body: `{"comment":"x"}`,
			status: 422, code: "VALIDATION_ERROR", field: "path.datasetName", detail: "Request validation failed: path.datasetName: " + gtc.MsgDatasetDots},
		{name: "PUT item, ..%2f prefix on a real dataset", method: "PUT", path: "/v1/ground-truths/..%2falpha/" + bucket + "/a-1", body: `{"comment":"x"}`,
			status: 422, code: "VALIDATION_ERROR", field: "path.datasetName", detail: "Request validation failed: path.datasetName: " + gtc.MsgDatasetChars},
		{name: "DELETE item, encoded backslashes in the id", method: "DELETE", path: "/v1/ground-truths/alpha/" + bucket + "/..%5C..%5Ca-1",
			status: 422, code: "VALIDATION_ERROR", field: "path.item_id", detail: "Request validation failed: path.item_id: " + gtc.MsgIDChars},
		{name: "DELETE item, absolute path as the id", method: "DELETE", path: "/v1/ground-truths/alpha/" + bucket + "/%2Fetc%2Fpasswd",
			status: 422, code: "VALIDATION_ERROR", field: "path.item_id", detail: "Request validation failed: path.item_id: " + gtc.MsgIDChars},
		{name: "DELETE dataset ..%2Falpha leaves alpha alone", method: "DELETE", path: "/v1/datasets/..%2Falpha",
			status: 422, code: "VALIDATION_ERROR", field: "path.datasetName", detail: "Request validation failed: path.datasetName: " + gtc.MsgDatasetChars},
		{name: "DELETE dataset alpha%2F..", method: "DELETE", path: "/v1/datasets/alpha%2F..",
			status: 422, code: "VALIDATION_ERROR", field: "path.datasetName", detail: "Request validation failed: path.datasetName: " + gtc.MsgDatasetChars},
		{name: "DELETE dataset %2e%2e", method: "DELETE", path: "/v1/datasets/%2e%2e",
			status: 422, code: "VALIDATION_ERROR", field: "path.datasetName", detail: "Request validation failed: path.datasetName: " + gtc.MsgDatasetDots},
		{name: "GET curation ..%2Falpha", method: "GET", path: "/v1/datasets/..%2Falpha/curation-instructions",
			status: 422, code: "VALIDATION_ERROR", field: "path.datasetName", detail: "Request validation failed: path.datasetName: " + gtc.MsgDatasetChars},
		{name: "PUT curation ..%2Falpha", method: "PUT", path: "/v1/datasets/..%2Falpha/curation-instructions", body: `{"instructions":"x"}`,
			status: 422, code: "VALIDATION_ERROR", field: "path.datasetName"},
		{name: "PUT curation, absolute path", method: "PUT", path: "/v1/datasets/%2Fetc%2Fpasswd/curation-instructions", body: `{"instructions":"x"}`,
			status: 422, code: "VALIDATION_ERROR", field: "path.datasetName"},
		{name: "PUT curation, encoded backslash", method: "PUT", path: "/v1/datasets/..%5Calpha/curation-instructions", body: `{"instructions":"x"}`,
			status: 422, code: "VALIDATION_ERROR", field: "path.datasetName"},
		{name: "GET dataset list, absolute path", method: "GET", path: "/v1/ground-truths/%2Fetc%2Fpasswd",
			status: 422, code: "VALIDATION_ERROR", field: "path.datasetName", detail: "Request validation failed: path.datasetName: " + gtc.MsgDatasetChars},
		{name: "PUT assignment, ..%2F dataset", method: "PUT", path: "/v1/assignments/..%2Falpha/" + bucket + "/a-1", body: `{"comment":"x"}`, header: devWho(alice),
			status: 422, code: "VALIDATION_ERROR", field: "path.dataset", detail: "Request validation failed: path.dataset: " + gtc.MsgDatasetChars},
		{name: "assign, ..%2F in the id", method: "POST", path: "/v1/assignments/alpha/" + bucket + "/..%2Fa-2/assign", header: devWho(alice),
			status: 422, code: "VALIDATION_ERROR", field: "path.item_id", detail: "Request validation failed: path.item_id: " + gtc.MsgIDChars},
		{name: "duplicate, encoded backslash in the id", method: "POST", path: "/v1/assignments/alpha/" + bucket + "/..%5Ca-1/duplicate", header: devWho(alice),
			status: 422, code: "VALIDATION_ERROR", field: "path.item_id", detail: "Request validation failed: path.item_id: " + gtc.MsgIDChars},
		{name: "DELETE tag definition ..%2F..%2Fx", method: "DELETE", path: "/v1/tags/definitions/..%2F..%2Fsource:sme",
			status: 404, code: "NOT_FOUND"},

		// ---- dot names and invisible format characters in names --------------------------------
		{name: "import, dataset ..", method: "POST", path: "/v1/ground-truths", body: `[{"id":"q","datasetName":".."}]`,
			status: 422, code: "VALIDATION_ERROR", field: "[0].datasetName", detail: "Request validation failed: [0].datasetName: " + gtc.MsgDatasetDots},
		{name: "import, dataset .", method: "POST", path: "/v1/ground-truths", body: `[{"id":"q","datasetName":"."}]`,
			status: 422, code: "VALIDATION_ERROR", field: "[0].datasetName", detail: "Request validation failed: [0].datasetName: " + gtc.MsgDatasetDots},
		{name: "import, id .. (after trimming)", method: "POST", path: "/v1/ground-truths", body: `[{"id":" .. ","datasetName":"alpha"}]`,
			status: 422, code: "VALIDATION_ERROR", field: "[0].id", detail: "Request validation failed: [0].id: " + gtc.MsgIDDots},
		{name: "import, id .", method: "POST", path: "/v1/ground-truths", body: `[{"id":".","datasetName":"alpha"}]`,
			status: 422, code: "VALIDATION_ERROR", field: "[0].id", detail: "Request validation failed: [0].id: " + gtc.MsgIDDots},
		{name: "import, zero-width space in the dataset", method: "POST", path: "/v1/ground-truths", body: `[{"id":"q","datasetName":"al\u200bpha"}]`,
			status: 422, code: "VALIDATION_ERROR", field: "[0].datasetName",
			detail: "Request validation failed: [0].datasetName: datasetName contains an invisible format character (U+200B), which is not allowed"},
		{name: "import, right-to-left override in the dataset", method: "POST", path: "/v1/ground-truths", body: "[{\"id\":\"q\",\"datasetName\":\"alpha\u202egnp.exe\"}]",
			status: 422, code: "VALIDATION_ERROR", field: "[0].datasetName",
			detail: "Request validation failed: [0].datasetName: datasetName contains an invisible format character (U+202E), which is not allowed"},
		{name: "import, byte-order mark before the id", method: "POST", path: "/v1/ground-truths", body: "[{\"id\":\"\ufeffa-1\",\"datasetName\":\"alpha\"}]",
			status: 422, code: "VALIDATION_ERROR", field: "[0].id",
			detail: "Request validation failed: [0].id: id contains an invisible format character (U+FEFF), which is not allowed"},
		{name: "import, soft hyphen in the id", method: "POST", path: "/v1/ground-truths", body: `[{"id":"a\u00ad1","datasetName":"alpha"}]`,
			status: 422, code: "VALIDATION_ERROR", field: "[0].id",
			detail: "Request validation failed: [0].id: id contains an invisible format character (U+00AD), which is not allowed"},
		{name: "dataset list, zero-width space after the name", method: "GET", path: "/v1/ground-truths/alpha%E2%80%8B",
			status: 422, code: "VALIDATION_ERROR", field: "path.datasetName",
			detail: "Request validation failed: path.datasetName: datasetName contains an invisible format character (U+200B), which is not allowed"},
		{name: "dataset list, %2e", method: "GET", path: "/v1/ground-truths/%2e",
			status: 422, code: "VALIDATION_ERROR", field: "path.datasetName", detail: "Request validation failed: path.datasetName: " + gtc.MsgDatasetDots},
		{name: "GET item, zero-width joiner in the id", method: "GET", path: "/v1/ground-truths/alpha/" + bucket + "/a%E2%80%8D-1",
			status: 422, code: "VALIDATION_ERROR", field: "path.item_id",
			detail: "Request validation failed: path.item_id: id contains an invisible format character (U+200D), which is not allowed"},
		{name: "PUT item, word joiner in the dataset", method: "PUT", path: "/v1/ground-truths/al%E2%81%A0pha/" + bucket + "/a-1", body: `{"comment":"x"}`,
			status: 422, code: "VALIDATION_ERROR", field: "path.datasetName",
			detail: "Request validation failed: path.datasetName: datasetName contains an invisible format character (U+2060), which is not allowed"},
		{name: "DELETE item, id %2e", method: "DELETE", path: "/v1/ground-truths/alpha/" + bucket + "/%2e",
			status: 422, code: "VALIDATION_ERROR", field: "path.item_id", detail: "Request validation failed: path.item_id: " + gtc.MsgIDDots},
		{name: "DELETE dataset, zero-width space inside alpha", method: "DELETE", path: "/v1/datasets/al%E2%80%8Bpha",
			status: 422, code: "VALIDATION_ERROR", field: "path.datasetName",
			detail: "Request validation failed: path.datasetName: datasetName contains an invisible format character (U+200B), which is not allowed"},
		{name: "DELETE dataset, literal .", method: "DELETE", path: "/v1/datasets/.",
			status: 422, code: "VALIDATION_ERROR", field: "path.datasetName", detail: "Request validation failed: path.datasetName: " + gtc.MsgDatasetDots},
		{name: "DELETE dataset, a legal name no item has (zero counts)", method: "DELETE", path: "/v1/datasets/...",
			status: 200, check: zeroDeletion},
		{name: "GET curation, byte-order mark before alpha", method: "GET", path: "/v1/datasets/%EF%BB%BFalpha/curation-instructions",
			status: 422, code: "VALIDATION_ERROR", field: "path.datasetName",
			detail: "Request validation failed: path.datasetName: datasetName contains an invisible format character (U+FEFF), which is not allowed"},
		{name: "PUT curation, right-to-left override", method: "PUT", path: "/v1/datasets/alpha%E2%80%AE/curation-instructions", body: `{"instructions":"x"}`,
			status: 422, code: "VALIDATION_ERROR", field: "path.datasetName",
			detail: "Request validation failed: path.datasetName: datasetName contains an invisible format character (U+202E), which is not allowed"},
		{name: "PUT curation, ..", method: "PUT", path: "/v1/datasets/%2E%2E/curation-instructions", body: `{"instructions":"x"}`,
			status: 422, code: "VALIDATION_ERROR", field: "path.datasetName", detail: "Request validation failed: path.datasetName: " + gtc.MsgDatasetDots},
		{name: "PUT assignment, left-to-right isolate in the dataset", method: "PUT", path: "/v1/assignments/%E2%81%A6alpha/" + bucket + "/a-1", body: `{"comment":"x"}`, header: devWho(alice),
			status: 422, code: "VALIDATION_ERROR", field: "path.dataset",
			detail: "Request validation failed: path.dataset: datasetName contains an invisible format character (U+2066), which is not allowed"},
		{name: "assign, dataset %2e", method: "POST", path: "/v1/assignments/%2e/" + bucket + "/a-1/assign", header: devWho(alice),
			status: 422, code: "VALIDATION_ERROR", field: "path.dataset", detail: "Request validation failed: path.dataset: " + gtc.MsgDatasetDots},
		// ---- invisible format characters in tags ------------------------------------------------
		{name: "PUT item, a look-alike second source tag with a zero-width space", method: "PUT", path: itemFree,
			body: `{"manualTags":["source:sme","sour\u200bce:synthetic"]}`, header: withCT(map[string]string{"If-Match": etagFree}),
			status: 400, code: "INVALID_TAG_FORMAT", field: "manualTags[1]",
			detail: "Invalid tag format (invisible format character U+200B is not allowed): 'sour\u200bce:synthetic'"},
		{name: "import, a tag with a byte-order mark", method: "POST", path: "/v1/ground-truths?registerTags=true",
			body:   `[{"id":"q","datasetName":"alpha","manualTags":["\ufeffsource:sme"]}]`,
			status: 422, code: "VALIDATION_ERROR", field: "[0].manualTags[0]",
			detail: "Request validation failed: [0].manualTags[0]: Invalid tag format (invisible format character U+FEFF is not allowed): '\ufeffsource:sme'"},
		{name: "import, comma form of manualTags with a soft hyphen", method: "POST", path: "/v1/ground-truths",
			body:   `[{"id":"q","datasetName":"alpha","manualTags":"source:sme, topic:in\u00adstall"}]`,
			status: 422, code: "VALIDATION_ERROR", field: "[0].manualTags[1]",
			detail: "Request validation failed: [0].manualTags[1]: Invalid tag format (invisible format character U+00AD is not allowed): 'topic:in\u00adstall'"},
		{name: "POST tags, a zero-width joiner", method: "POST", path: "/v1/tags", body: `{"tags":["custom:ok","custom:a\u200db"]}`,
			status: 400, code: "INVALID_TAG_FORMAT", field: "tags[1]"},
		{name: "DELETE tags, a word joiner in the seeded tag", method: "DELETE", path: "/v1/tags", body: `{"tags":["custom:\u2060seeded"]}`,
			status: 400, code: "INVALID_TAG_FORMAT", field: "tags[0]"},
		{name: "POST tag definition, a right-to-left override in the key", method: "POST", path: "/v1/tags/definitions",
			body:   `{"tag_key":"source:\u202eems","description":"d"}`,
			status: 422, code: "VALIDATION_ERROR", field: "tag_key",
			detail: "Request validation failed: tag_key: tag_key contains an invisible format character (U+202E), which is not allowed"},
		{name: "duplicate, id %2e%2e", method: "POST", path: "/v1/assignments/alpha/" + bucket + "/%2e%2e/duplicate", header: devWho(alice),
			status: 422, code: "VALIDATION_ERROR", field: "path.item_id", detail: "Request validation failed: path.item_id: " + gtc.MsgIDDots},

		// ---- path traversal: export snapshot ids and file names --------------------------------
		{name: "export file, ..%2f..%2fetc snapshot", method: "GET", path: "/v1/exports/..%2f..%2fetc/files/passwd",
			status: 404, code: "NOT_FOUND", detail: "Snapshot not found"},
		{name: "export file, ..%2fmanifest.json", method: "GET", path: snap + "/files/..%2fmanifest.json",
			status: 404, code: "NOT_FOUND", detail: "File not found"},
		{name: "export file, ..%2F..%2F..%2Fsecret.json", method: "GET", path: snap + "/files/..%2F..%2F..%2Fsecret.json",
			status: 404, code: "NOT_FOUND", detail: "File not found"},
		{name: "export file, ..%2F x4 to outside the root", method: "GET", path: snap + "/files/..%2F..%2F..%2F..%2Foutside-secret.json",
			status: 404, code: "NOT_FOUND", detail: "File not found"},
		{name: "export file, %2e%2e", method: "GET", path: snap + "/files/%2e%2e",
			status: 404, code: "NOT_FOUND", detail: "File not found"},
		{name: "export file, literal ..", method: "GET", path: snap + "/files/..",
			status: 404, code: "NOT_FOUND", detail: "File not found"},
		{name: "export file, encoded backslash", method: "GET", path: snap + "/files/..%5Cmanifest.json",
			status: 404, code: "NOT_FOUND", detail: "File not found"},
		{name: "export file, absolute path", method: "GET", path: snap + "/files/%2Fetc%2Fpasswd",
			status: 404, code: "NOT_FOUND", detail: "File not found"},
		{name: "export file, the reservation", method: "GET", path: snap + "/files/.reserved",
			status: 404, code: "NOT_FOUND", detail: "File not found"},
		{name: "export file, NUL after manifest.json", method: "GET", path: snap + "/files/manifest.json%00",
			status: 404, code: "NOT_FOUND", detail: "File not found"},
		{name: "export manifest, NUL in the id", method: "GET", path: snap + "%00",
			status: 404, code: "NOT_FOUND", detail: "Snapshot not found"},
		{name: "export manifest, ..%2F before the id", method: "GET", path: "/v1/exports/..%2F" + f.snapshotID,
			status: 404, code: "NOT_FOUND", detail: "Snapshot not found"},
		{name: "export manifest, id with a trailing ..%2F", method: "GET", path: snap + "%2F..%2F" + f.snapshotID,
			status: 404, code: "NOT_FOUND", detail: "Snapshot not found"},

		// ---- another user's assignment --------------------------------------------------------
		{name: "PUT bob's assignment as alice", method: "PUT", path: assignPath(f.bob, ""), body: `{"comment":"mine now","status":"draft"}`,
			header: withCT(map[string]string{"X-User-Id": alice, "If-Match": etagB}),
			status: 403, code: "ASSIGNMENT_OWNERSHIP", detail: "ASSIGNMENT_OWNERSHIP"},
		{name: "approve bob's assignment as alice", method: "PUT", path: assignPath(f.bob, ""), body: `{"approve":true}`,
			header: withCT(map[string]string{"X-User-Id": alice, "If-Match": etagB}),
			status: 403, code: "ASSIGNMENT_OWNERSHIP"},
		{name: "duplicate bob's assignment as alice", method: "POST", path: assignPath(f.bob, "/duplicate"), header: aliceCT,
			status: 403, code: "ASSIGNMENT_OWNERSHIP"},
		{name: "assign bob's item to alice", method: "POST", path: assignPath(f.bob, "/assign"), header: aliceCT,
			status: 409, code: "ASSIGNMENT_CONFLICT", check: func(t *testing.T, res *response) {
				assert.Equal(t, bob, res.Object(t)["assignedTo"])
			}},
		{name: "force-assign bob's item as a curator", method: "POST", path: assignPath(f.bob, "/assign"), body: `{"force":true}`, header: aliceCT,
			status: 403, code: "FORBIDDEN", detail: "Forbidden: forcing an assignment needs the admin role; you have the curator role"},

		// ---- media types and methods ----------------------------------------------------------
		{name: "PUT item as text/plain", method: "PUT", path: itemFree, body: `{"comment":"x"}`, header: map[string]string{"Content-Type": "text/plain"},
			status: 415, code: "UNSUPPORTED_MEDIA_TYPE"},
		{name: "import as a form", method: "POST", path: "/v1/ground-truths", body: `id=x&datasetName=alpha`, header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"},
			status: 415, code: "UNSUPPORTED_MEDIA_TYPE"},
		{name: "import as multipart", method: "POST", path: "/v1/ground-truths", body: "--b\r\n\r\n[]\r\n--b--", header: map[string]string{"Content-Type": "multipart/form-data; boundary=b"},
			status: 415, code: "UNSUPPORTED_MEDIA_TYPE"},
		{name: "PUT curation with a malformed Content-Type", method: "PUT", path: "/v1/datasets/alpha/curation-instructions", body: `{"instructions":"x"}`, header: map[string]string{"Content-Type": `application/json; charset="`},
			status: 415, code: "UNSUPPORTED_MEDIA_TYPE"},
		{name: "PATCH item", method: "PATCH", path: itemFree, body: `{"comment":"x"}`,
			status: 405, code: "METHOD_NOT_ALLOWED", check: hasAllow},
		{name: "TRACE import", method: "TRACE", path: "/v1/ground-truths",
			status: 405, code: "METHOD_NOT_ALLOWED", check: hasAllow},
		{name: "unknown method FOO", method: "FOO", path: "/v1/datasets",
			status: 405, code: "METHOD_NOT_ALLOWED", check: hasAllow},
		{name: "DELETE on the import route", method: "DELETE", path: "/v1/ground-truths",
			status: 405, code: "METHOD_NOT_ALLOWED", check: hasAllow},

		// ---- amplification: a body whose answer would grow with it ----------------------------
		{name: "import of 1 MiB of numbers: a capped 422", method: "POST", path: "/v1/ground-truths", header: ctJSON,
			body: "[" + strings.Repeat("1,", abuseLimit/2-2) + "1]", status: 422, code: "VALIDATION_ERROR", field: "[0]", check: cappedErrors(abuseLimit/2 - 1)},
		{name: "PUT whose history is 1 MiB of numbers: a capped 422", method: "PUT", path: itemFree, header: withCT(map[string]string{"If-Match": "*"}),
			body: `{"history":[` + strings.Repeat("1,", abuseLimit/2-12) + `1]}`, status: 422, code: "VALIDATION_ERROR", field: "history[0]",
			check: cappedErrors(abuseLimit/2 - 11)},
		{name: "PUT with 60,000 unknown keys: a capped 422", method: "PUT", path: itemFree, header: withCT(map[string]string{"If-Match": "*"}),
			body: manyKeys(60000), status: 422, code: "VALIDATION_ERROR", field: "k0", check: cappedErrors(60000)},
		{name: "self-serve with 60,000 unknown keys", method: "POST", path: "/v1/assignments/self-serve", header: aliceCT,
			body: manyKeys(60000), status: 422, code: "VALIDATION_ERROR", check: cappedErrors(60000)},

		// ---- cross-site requests: a page on another site driving a signed-in browser ---------
		{name: "cross-site PUT of an item", method: "PUT", path: itemFree, body: `{"comment":"x"}`,
			header: withCT(map[string]string{"X-User-Id": admin, "X-User-Roles": "admin", "If-Match": "*", "Sec-Fetch-Site": "cross-site"}),
			status: 403, code: "FORBIDDEN", detail: "Forbidden: cross-origin PUT requests are refused; send it from the page's own origin"},
		{name: "cross-site import as a simple text/plain form post", method: "POST", path: "/v1/ground-truths",
			body:   `[{"datasetName":"alpha","history":[{"role":"user","msg":"q"}]}]`,
			header: map[string]string{"Content-Type": "text/plain", "Sec-Fetch-Site": "cross-site"}, status: 403, code: "FORBIDDEN"},
		{name: "cross-site DELETE of a dataset, empty body", method: "DELETE", path: "/v1/datasets/alpha", noCT: true,
			header: map[string]string{"X-User-Roles": "admin", "Sec-Fetch-Site": "cross-site"}, status: 403, code: "FORBIDDEN"},
		{name: "cross-site self-serve, empty body", method: "POST", path: "/v1/assignments/self-serve", noCT: true,
			header: map[string]string{"X-User-Id": alice, "Sec-Fetch-Site": "cross-site"}, status: 403, code: "FORBIDDEN"},
		{name: "same-site (another subdomain) DELETE of an item", method: "DELETE", path: itemFree, noCT: true,
			header: map[string]string{"Sec-Fetch-Site": "same-site"}, status: 403, code: "FORBIDDEN"},
		{name: "Origin of another host on a tag-store POST, no Sec-Fetch-Site", method: "POST", path: "/v1/tags", body: `{"tags":["custom:csrf"]}`,
			header: withCT(map[string]string{"Origin": "https://evil.example"}), status: 403, code: "FORBIDDEN"},
		{name: "Origin null (a sandboxed page) on a definition POST", method: "POST", path: "/v1/tags/definitions",
			body: `{"tag_key":"custom:csrf","description":"d"}`, header: withCT(map[string]string{"Origin": "null"}), status: 403, code: "FORBIDDEN"},
		{name: "cross-site recompute with an empty body", method: "POST", path: "/v1/ground-truths/recompute-tags", noCT: true,
			header: map[string]string{"Sec-Fetch-Site": "cross-site"}, status: 403, code: "FORBIDDEN"},

		// ---- roles: each role stops at its least operation ------------------------------------
		{name: "viewer PUTs an item", method: "PUT", path: itemFree, body: `{"comment":"x"}`,
			header: withCT(map[string]string{"X-User-Id": alice, "X-User-Roles": "viewer", "If-Match": "*"}), status: 403, code: "FORBIDDEN",
			detail: "Forbidden: PUT /v1/ground-truths/{datasetName}/{bucket}/{item_id} needs the curator role; you have the viewer role"},
		{name: "viewer imports", method: "POST", path: "/v1/ground-truths", body: `[{"datasetName":"alpha","history":[{"role":"user","msg":"q"}]}]`,
			header: withCT(map[string]string{"X-User-Roles": "viewer"}), status: 403, code: "FORBIDDEN"},
		{name: "viewer previews a tag change", method: "POST", path: "/v1/agent/tools/manage_tags", body: `{"operation":"delete_tag","tag":"source:sme"}`,
			header: withCT(map[string]string{"X-User-Roles": "viewer"}), status: 403, code: "FORBIDDEN",
			detail: "Forbidden: the tool manage_tags needs the curator role; you have the viewer role"},
		{name: "curator deletes a dataset", method: "DELETE", path: "/v1/datasets/alpha", header: aliceCT, status: 403, code: "FORBIDDEN",
			detail: "Forbidden: DELETE /v1/datasets/{datasetName} needs the admin role; you have the curator role"},
		{name: "curator edits curation instructions", method: "PUT", path: "/v1/datasets/alpha/curation-instructions", body: `{"instructions":"x"}`,
			header: withCT(map[string]string{"X-User-Id": alice, "X-User-Roles": "curator", "If-Match": "*"}), status: 403, code: "FORBIDDEN"},
		{name: "curator deletes from the tag store", method: "DELETE", path: "/v1/tags", body: `{"tags":["custom:seeded"]}`, header: aliceCT,
			status: 403, code: "FORBIDDEN"},
		{name: "curator deletes a tag definition", method: "DELETE", path: "/v1/tags/definitions/source:sme", header: aliceCT,
			status: 403, code: "FORBIDDEN"},
		{name: "curator recomputes every item", method: "POST", path: "/v1/ground-truths/recompute-tags", header: aliceCT,
			status: 403, code: "FORBIDDEN"},
		{name: "curator starts an async recompute", method: "POST", path: "/v1/ground-truths/recompute-tags?async=true", header: aliceCT,
			status: 403, code: "FORBIDDEN"},
		{name: "unmapped role claim with X-User-Roles: superuser deletes a dataset", method: "DELETE", path: "/v1/datasets/alpha",
			header: map[string]string{"X-User-Roles": "superuser,root"}, status: 403, code: "FORBIDDEN",
			detail: "Forbidden: DELETE /v1/datasets/{datasetName} needs the admin role; you have the curator role"},

		// ---- header injection over a raw connection -------------------------------------------
		{name: "bare CR in X-User-Id", raw: rawHTTP("POST", "/v1/tags", withCT(map[string]string{"X-User-Id": "alice\rX-User-Roles: admin", "Content-Length": "28"}), `{"tags":["custom:injected"]}`),
			status: 400},
		{name: "NUL in X-User-Id", raw: rawHTTP("POST", "/v1/tags", withCT(map[string]string{"X-User-Id": "ali\x00ce", "Content-Length": "28"}), `{"tags":["custom:injected"]}`),
			status: 400},
		// net/http unfolds an obsolete folded line into one value (RFC 7230 §3.2.4 allows
		// that instead of a 400): the second line stays part of X-User-Id, no role appears.
		{name: "obsolete line folding in X-User-Id: force-assign", raw: rawHTTP("POST", assignPath(f.bob, "/assign"),
			withCT(map[string]string{"X-User-Id": "alice\r\n X-User-Roles: admin", "X-User-Roles": "curator", "Content-Length": "14"}), `{"force":true}`),
			status: 403, code: "FORBIDDEN"},
		{name: "space inside a header name", raw: rawHTTP("POST", "/v1/tags", withCT(map[string]string{"X User Id": "alice", "Content-Length": "28"}), `{"tags":["custom:injected"]}`),
			status: 400},
		{name: "CR LF in the Content-Type value", raw: rawHTTP("PUT", "/v1/datasets/alpha/curation-instructions", map[string]string{"Content-Type": "application/json\rX-Injected: 1", "Content-Length": "20"}, `{"instructions":"x"}`),
			status: 400},
		{name: "response splitting through X-Request-Id", method: "GET", path: "/v1/datasets", header: map[string]string{"X-Request-Id": "abc%0d%0aSet-Cookie:%20x=1"},
			status: 200, check: func(t *testing.T, res *response) {
				assert.Equal(t, "abc%0d%0aSet-Cookie:%20x=1", res.Header.Get("X-Request-Id"), "printable: echoed as is, never decoded")
			}},
	}
	if h.store.Backend() == "cosmos" {
		// Cosmos DB cannot hold a definition whose key has / \ ? or # (SQLite can, and
		// the API allows any key of 1–200 characters, so there it is a plain write).
		rows = append(rows, abuseRow{name: "POST tag definition with a key Cosmos DB cannot hold", method: "POST", path: "/v1/tags/definitions",
			body: `{"tag_key":"..\\..\\x?#/y","description":"d"}`, status: 422, code: "VALIDATION_ERROR", field: "tag_key"})
	}
	runAbuse(t, f, rows)
}

// cappedErrors checks a 422 that found total problems: it lists the first 100, counts the
// rest in moreErrors, and stays small whatever the body's size.
func cappedErrors(total int) func(t *testing.T, res *response) {
	return func(t *testing.T, res *response) {
		t.Helper()
		body := res.Object(t)
		assert.Len(t, body["errors"], 100)
		assert.Equal(t, json.Number(fmt.Sprint(total-100)), body["moreErrors"])
		assert.Less(t, len(res.Body), 16<<10, "the answer does not grow with the body")
	}
}

// manyKeys is an object of n distinct keys k0…k(n-1).
func manyKeys(n int) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%d":0`, i)
	}
	b.WriteByte('}')
	return b.String()
}

func zeroDeletion(t *testing.T, res *response) {
	t.Helper()
	assert.Equal(t, map[string]any{"status": "deleted", "itemsDeleted": json.Number("0"), "curationInstructionsDeleted": false}, res.Object(t))
}

func hasAllow(t *testing.T, res *response) {
	t.Helper()
	assert.NotEmpty(t, res.Header.Get("Allow"), "a 405 lists the allowed methods")
}

// TestAbuseEasyAuth forges identities in Easy Auth mode: principals that are not base64, not
// JSON or hold no claims count as none (401); the fallback name header is only a fallback;
// X-User-Id and X-User-Roles never change who the caller is.
func TestAbuseEasyAuth(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(o *api.Options) {
		o.MaxBodyBytes = abuseLimit
		o.Auth = api.AuthOptions{EasyAuth: true, AllowedEmailDomains: []string{"example.com"}}
	})
	f := seedAbuse(t, h, easyWho)
	etagB := f.h.item2(easyWho(admin), f.bob)["_etag"].(string)
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	p := func(v string) map[string]string {
		return map[string]string{"Content-Type": "application/json", "X-MS-CLIENT-PRINCIPAL": v}
	}
	with := func(base map[string]string, kv ...string) map[string]string {
		out := map[string]string{"Content-Type": "application/json"}
		for k, v := range base {
			out[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	asAlice := easyWho(alice)
	unauth := func(name string, hdr map[string]string) abuseRow {
		return abuseRow{name: name, method: "POST", path: "/v1/tags", body: `{"tags":["custom:forged"]}`, header: hdr,
			status: 401, code: "UNAUTHENTICATED", detail: "Unauthorized"}
	}
	rows := []abuseRow{
		unauth("no principal at all", nil),
		unauth("X-User-Id without a principal", map[string]string{"X-User-Id": alice}),
		unauth("principal that is not base64", p("!!not*base64!!")),
		unauth("principal: base64 of text", p(b64("alice@example.com"))),
		unauth("principal: base64 of a JSON array", p(b64(`[{"typ":"email","val":"alice@example.com"}]`))),
		unauth("principal: base64 of {}", p(b64(`{}`))),
		unauth("principal: empty claims", p(b64(`{"auth_typ":"aad","claims":[]}`))),
		unauth("principal: null claims", p(b64(`{"claims":null}`))),
		unauth("principal: claims of the wrong types", p(b64(`{"claims":[{"typ":1,"val":["alice@example.com"]}]}`))),
		unauth("principal: truncated JSON", p(b64(`{"claims":[{"typ":"email","val":"alice@example.com"}`))),
		unauth("principal: invalid UTF-8 JSON", p(b64("{\"claims\":[{\"typ\":\"email\",\"val\":\"\xff@example.com\"}]}"))),
		unauth("principal: huge (512 KiB) and not JSON", p(strings.Repeat("QUFB", 128<<10))),
		unauth("principal header present but blank, name header set", with(nil, "X-MS-CLIENT-PRINCIPAL", " ", "X-MS-CLIENT-PRINCIPAL-NAME", alice)),
		unauth("unreadable principal with a valid name header", with(nil, "X-MS-CLIENT-PRINCIPAL", "%%%", "X-MS-CLIENT-PRINCIPAL-NAME", alice)),
		unauth("blank name and id headers", with(nil, "X-MS-CLIENT-PRINCIPAL-NAME", "  ", "X-MS-CLIENT-PRINCIPAL-ID", "")),
		{name: "principal over the header limit (2 MiB)", method: "GET", path: "/v1/datasets", header: p(strings.Repeat("QUFB", 512<<10)),
			status: 431},
		{name: "two principal headers (alice, then bob)", raw: "POST /v1/tags HTTP/1.1\r\nHost: gtc.test\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: 26\r\n" +
			"X-MS-CLIENT-PRINCIPAL: " + asAlice["X-MS-CLIENT-PRINCIPAL"] + "\r\nX-MS-CLIENT-PRINCIPAL: " + easyWho(bob)["X-MS-CLIENT-PRINCIPAL"] + "\r\n\r\n" + `{"tags":["custom:forged"]}`,
			status: 401, code: "UNAUTHENTICATED"},
		{name: "two name headers, no principal", raw: "POST /v1/tags HTTP/1.1\r\nHost: gtc.test\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: 26\r\n" +
			"X-MS-CLIENT-PRINCIPAL-NAME: " + alice + "\r\nX-MS-CLIENT-PRINCIPAL-NAME: " + bob + "\r\n\r\n" + `{"tags":["custom:forged"]}`,
			status: 401, code: "UNAUTHENTICATED"},
		{name: "principal of another domain", method: "POST", path: "/v1/tags", body: `{"tags":["custom:forged"]}`, header: easyWho("eve@evil.example"),
			status: 403, code: "FORBIDDEN", detail: "Forbidden"},
		{name: "principal with only a roles claim", method: "POST", path: "/v1/tags", body: `{"tags":["custom:forged"]}`,
			header: p(b64(`{"claims":[{"typ":"roles","val":"admin"}]}`)), status: 403, code: "FORBIDDEN"},
		{name: "name header of another domain, no principal", method: "POST", path: "/v1/tags", body: `{"tags":["custom:forged"]}`,
			header: with(nil, "X-MS-CLIENT-PRINCIPAL-NAME", "mallory"), status: 403, code: "FORBIDDEN"},
		{name: "name header with CR LF over a raw connection", raw: rawHTTP("POST", "/v1/tags", map[string]string{"Content-Type": "application/json", "Content-Length": "26",
			"X-MS-CLIENT-PRINCIPAL-NAME": "bob@example.com\rX-MS-CLIENT-PRINCIPAL-ID: x"}, `{"tags":["custom:forged"]}`),
			status: 400},
		{name: "alice's principal and bob's name header: PUT bob's assignment", method: "PUT", path: assignPath(f.bob, ""), body: `{"comment":"mine now"}`,
			header: with(asAlice, "X-MS-CLIENT-PRINCIPAL-NAME", bob, "If-Match", etagB), status: 403, code: "ASSIGNMENT_OWNERSHIP"},
		{name: "alice's principal with X-User-Id bob: PUT bob's assignment", method: "PUT", path: assignPath(f.bob, ""), body: `{"comment":"mine now"}`,
			header: with(asAlice, "X-User-Id", bob, "If-Match", etagB), status: 403, code: "ASSIGNMENT_OWNERSHIP"},
		{name: "alice's principal with X-User-Id bob: duplicate bob's item", method: "POST", path: assignPath(f.bob, "/duplicate"),
			header: with(asAlice, "X-User-Id", bob), status: 403, code: "ASSIGNMENT_OWNERSHIP"},
		{name: "alice's principal with X-User-Roles admin: force-assign", method: "POST", path: assignPath(f.bob, "/assign"), body: `{"force":true}`,
			header: with(asAlice, "X-User-Roles", "admin,team-lead"), status: 403, code: "FORBIDDEN",
			detail: "Forbidden: forcing an assignment needs the admin role; you have the curator role"},
		{name: "principal with only a display name shaped like an allowed e-mail", method: "POST", path: "/v1/tags", body: `{"tags":["custom:forged"]}`,
			header: p(b64(`{"claims":[{"typ":"name","val":"admin@example.com"},{"typ":"roles","val":"admin"}]}`)), status: 403, code: "FORBIDDEN",
			detail: "Forbidden: the principal has no e-mail or object id claim; a display name alone, which its owner can choose, is not an identity"},
		{name: "e-mail domain with a Cyrillic look-alike letter", method: "POST", path: "/v1/tags", body: `{"tags":["custom:forged"]}`,
			header: easyWho("eve@ex\u0430mple.com"), status: 403, code: "FORBIDDEN", detail: "Forbidden"},
		{name: "e-mail domain in full-width letters", method: "POST", path: "/v1/tags", body: `{"tags":["custom:forged"]}`,
			header: easyWho("eve@\uff45xample.com"), status: 403, code: "FORBIDDEN", detail: "Forbidden"},
		{name: "curator principal deletes a dataset", method: "DELETE", path: "/v1/datasets/alpha", header: asAlice, status: 403, code: "FORBIDDEN",
			detail: "Forbidden: DELETE /v1/datasets/{datasetName} needs the admin role; you have the curator role"},
		{name: "role claim with a zero-width space (Ad\u200bmin) deletes a dataset", method: "DELETE", path: "/v1/datasets/alpha",
			header: map[string]string{"X-MS-CLIENT-PRINCIPAL": principalHeader(map[string]string{"email": alice}, [2]string{"roles", "Ad\u200bmin"})},
			status: 403, code: "FORBIDDEN", detail: "Forbidden: DELETE /v1/datasets/{datasetName} needs the admin role; you have the curator role"},
		{name: "admin principal, cross-site DELETE of a dataset", method: "DELETE", path: "/v1/datasets/alpha",
			header: with(easyWho(admin), "Sec-Fetch-Site", "cross-site"), status: 403, code: "FORBIDDEN"},
		{name: "alice's principal with X-User-Id bob: my queue is alice's", method: "GET", path: "/v1/assignments/my",
			header: with(asAlice, "X-User-Id", bob), status: 200, check: func(t *testing.T, res *response) {
				assert.Equal(t, []string{"a-1"}, ids(t, res.Array(t)), "the identity is the principal's")
			}},
	}
	runAbuse(t, f, rows)
}

// item2 reads an item with identity headers (Easy Auth needs a principal for every read).
func (h *harness) item2(hdr map[string]string, k gtc.Key) map[string]any {
	h.t.Helper()
	res := h.do(req{Method: http.MethodGet, Path: itemPath(k), Header: hdr})
	require.Equal(h.t, http.StatusOK, res.Status, string(res.Body))
	return res.Object(h.t)
}
