// Left out of the fuzz builds with the rest of package api_test (see harness_test.go).

//go:build !fuzzing

package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/api"
	"github.com/gtc-dev/gtc/export"
	"github.com/gtc-dev/gtc/storage/localfs"
)

// storeItems creates n items per dataset directly in the store: even ones approved, odd ones
// drafts.
func (h *harness) storeItems(n int, datasets ...string) {
	h.t.Helper()
	for _, ds := range datasets {
		for i := 0; i < n; i++ {
			it := gtc.NewItem(ds, fmt.Sprintf("item-%03d", i))
			it.Bucket = "6f1c3d2e-0000-4000-8000-000000000001"
			it.History = []gtc.HistoryEntry{{Role: "user", Msg: "Question <" + ds + "> & more?"}, {Role: "assistant", Msg: "Answer é"},
				{Role: "user", Msg: "Follow-up?"}, {Role: "assistant", Msg: "Second answer"}}
			it.ManualTags = []string{"source:sme"}
			it.ComputedTags = []string{"dataset:" + ds}
			it.UpdatedAt = t0
			it.Status = gtc.StatusDraft
			if i%2 == 0 {
				it.Status = gtc.StatusApproved
				it.ReviewedAt = &t0
			}
			_, err := h.store.Items().Create(context.Background(), it)
			require.NoError(h.t, err)
		}
	}
}

func filenameOf(t *testing.T, res *response) string {
	t.Helper()
	_, params, err := mime.ParseMediaType(res.Header.Get("Content-Disposition"))
	require.NoError(t, err)
	return params["filename"]
}

func TestSnapshotDownload(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.storeItems(5, "beta", "alpha")
	res := h.get("/v1/ground-truths/snapshot")
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	assert.Equal(t, "application/json", res.Header.Get("Content-Type"))
	assert.Equal(t, fmt.Sprint(len(res.Body)), res.Header.Get("Content-Length"))
	assert.Equal(t, "ground-truth-snapshot-20250102T100000Z.json", filenameOf(t, res), "the name the curator frontend saves")
	body := res.Object(t)
	assert.Equal(t, "v2", body["schemaVersion"])
	assert.Equal(t, "20250102T100000Z", body["snapshotAt"])
	assert.Equal(t, map[string]any{"status": "approved"}, body["filters"])
	assert.Equal(t, json.Number("6"), body["count"], "approved items only")
	assert.Equal(t, []any{"alpha", "beta"}, body["datasetNames"])
	items := body["items"].([]any)
	first := items[0].(map[string]any)
	assert.Equal(t, "alpha", first["datasetName"], "(datasetName, id) order")
	assert.Equal(t, "item-000", first["id"])
	assert.Equal(t, json.Number("0"), first["totalReferences"])
	_, hasNull := first["assignedTo"]
	assert.False(t, hasNull, "top-level nulls are left out")
	assert.Contains(t, first, "_etag", "no processor runs by default")

	// An empty store.
	h2 := newHarness(t)
	res = h2.get("/v1/ground-truths/snapshot")
	require.Equal(t, http.StatusOK, res.Status)
	assert.JSONEq(t, `{"schemaVersion":"v2","snapshotAt":"20250102T100000Z","filters":{"status":"approved"},"items":[],"count":0,"datasetNames":[]}`, string(res.Body))
}

func TestExportFormatsAndModes(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.storeItems(4, "alpha")

	res := h.do(req{Method: http.MethodPost, Path: "/v1/ground-truths/snapshot", Body: map[string]any{
		"format": "jsonl", "filters": map[string]any{"status": ""}, "delivery": map[string]any{"mode": "stream"},
	}})
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	assert.Equal(t, "application/x-ndjson", res.Header.Get("Content-Type"))
	assert.Empty(t, res.Header.Get("Content-Length"), "a stream is chunked")
	assert.Equal(t, "ground-truth-items-20250102T100000Z.jsonl", filenameOf(t, res))
	lines := strings.Split(strings.TrimSuffix(string(res.Body), "\n"), "\n")
	assert.Len(t, lines, 4, `status "" is every status`)

	res = h.do(req{Method: http.MethodPost, Path: "/v1/ground-truths/snapshot", Body: map[string]any{
		"format": "csv", "processors": []any{"split_turns"}, "filters": map[string]any{"datasetNames": []any{"alpha"}},
	}})
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	assert.Equal(t, "text/csv; charset=utf-8", res.Header.Get("Content-Type"))
	assert.NotEmpty(t, res.Header.Get("Content-Length"))
	rows, err := csv.NewReader(bytes.NewReader(res.Body)).ReadAll()
	require.NoError(t, err)
	require.Len(t, rows, 5, "2 approved items × 2 exchanges + the header")
	assert.Equal(t, []string{"sourceItemId", "turnIndex", "turnCount"}, rows[0][len(rows[0])-3:])
	assert.Equal(t, "item-000__t1", rows[1][0])

	res = h.do(req{Method: http.MethodPost, Path: "/v1/ground-truths/snapshot", Body: map[string]any{
		"format": "json_items", "processors": []any{"strip_internal", "merge_tags"},
	}})
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	assert.Equal(t, "ground-truth-items-20250102T100000Z.json", filenameOf(t, res))
	arr := res.Array(t)
	require.Len(t, arr, 2)
	assert.NotContains(t, arr[0], "_etag", "strip_internal with the configured fields")

	// Empty body, {} and null are every default.
	for _, b := range []any{nil, "{}", "null", "  "} {
		res = h.do(req{Method: http.MethodPost, Path: "/v1/ground-truths/snapshot", Body: b})
		require.Equal(t, http.StatusOK, res.Status, "%v: %s", b, res.Body)
		assert.Equal(t, json.Number("2"), res.Object(t)["count"])
	}
}

func TestExportBadInput(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.storeItems(2, "alpha")
	before := h.snapshot()
	post := func(body string) *response {
		return h.do(req{Method: http.MethodPost, Path: "/v1/ground-truths/snapshot", Body: body})
	}
	res := post(`{"format":"xml","processors":["anonymize","merge_tags","merge_tags"],"filters":{"status":"done","datasetNames":[" "]}}`)
	require.Equal(t, http.StatusBadRequest, res.Status)
	body := res.Object(t)
	assert.Equal(t, "UNKNOWN_FORMAT", body["code"])
	assert.Equal(t, "Unknown export format 'xml'", body["detail"])
	errs := body["errors"].([]any)
	require.Len(t, errs, 5)
	assert.Equal(t, map[string]any{"field": "processors[0]", "message": "Unknown export processor 'anonymize' (known: merge_tags, split_turns, strip_internal)"}, errs[1])

	for _, tc := range []struct{ body, code string }{
		{`{"processors":["nope"]}`, "UNKNOWN_PROCESSOR"},
		{`{"processors":["merge_tags","merge_tags"]}`, "DUPLICATE_PROCESSOR"},
		{`{"filters":{"status":"Approved"}}`, "INVALID_STATUS"},
		{`{"filters":{"datasetNames":[""]}}`, "INVALID_FIELD"},
	} {
		res = post(tc.body)
		assert.Equal(t, http.StatusBadRequest, res.Status, tc.body)
		assert.Equal(t, tc.code, res.Object(t)["code"], tc.body)
	}
	for _, tc := range []struct{ body, field string }{
		{`{"fromat":"jsonl"}`, "fromat"},
		{`{"filters":{"statuses":["approved"]}}`, "filters.statuses"},
		{`{"filters":{"status":null}}`, "filters.status"},
		{`{"format":7}`, "format"},
		{`{"delivery":{"mode":"email"}}`, "delivery.mode"},
		{`{"delivery":"stream"}`, "delivery"},
		{`{"processors":"merge_tags"}`, "processors"},
		{`[1]`, "body"},
	} {
		res = post(tc.body)
		require.Equal(t, http.StatusUnprocessableEntity, res.Status, tc.body)
		errs := res.Object(t)["errors"].([]any)
		assert.Equal(t, tc.field, errs[0].(map[string]any)["field"], tc.body)
	}
	res = post(`{"format":`)
	assert.Equal(t, http.StatusUnprocessableEntity, res.Status)
	assert.Equal(t, "INVALID_JSON", res.Object(t)["code"])
	assert.Equal(t, before, h.snapshot(), "nothing is stored")
	entries, _ := os.ReadDir(filepath.Join(h.arts, "exports"))
	assert.Empty(t, entries, "no artifact was written")
}

func TestArtifactExportAndSnapshotRoutes(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.storeItems(3, "alpha")
	res := h.do(req{Method: http.MethodPost, Path: "/v1/ground-truths/snapshot", Body: map[string]any{"delivery": map[string]any{"mode": "artifact"}}})
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	assert.Equal(t, "/v1/exports/20250102T100000Z", res.Header.Get("Location"))
	assert.JSONEq(t, `{"status":"ok","snapshotId":"20250102T100000Z","snapshotDir":"exports/snapshots/20250102T100000Z",
		"manifestPath":"exports/snapshots/20250102T100000Z/manifest.json","count":2,"manifestUrl":"/v1/exports/20250102T100000Z"}`, string(res.Body))

	// The same second again: a new id.
	res = h.do(req{Method: http.MethodPost, Path: "/v1/ground-truths/snapshot", Body: map[string]any{"format": "jsonl", "delivery": map[string]any{"mode": "artifact"}}})
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	assert.Equal(t, "20250102T100000Z-2", res.Object(t)["snapshotId"])

	res = h.get("/v1/exports")
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	list := res.Object(t)
	items := list["items"].([]any)
	require.Len(t, items, 2)
	newest := items[0].(map[string]any)
	assert.Equal(t, "20250102T100000Z-2", newest["snapshotId"])
	assert.Equal(t, "jsonl", newest["format"])
	assert.Equal(t, "anonymous", newest["createdBy"])
	assert.Equal(t, json.Number("1"), newest["fileCount"])
	assert.Equal(t, "/v1/exports/20250102T100000Z-2", newest["manifestUrl"])
	assert.Equal(t, map[string]any{"page": json.Number("1"), "limit": json.Number("25"), "total": json.Number("2"),
		"totalPages": json.Number("1"), "hasNext": false, "hasPrev": false}, list["pagination"])
	res = h.get("/v1/exports?page=2&limit=1")
	require.Equal(t, http.StatusOK, res.Status)
	assert.Equal(t, "20250102T100000Z", res.Object(t)["items"].([]any)[0].(map[string]any)["snapshotId"])
	assert.Equal(t, http.StatusBadRequest, h.get("/v1/exports?page=0").Status)

	res = h.get("/v1/exports/20250102T100000Z")
	require.Equal(t, http.StatusOK, res.Status)
	m := res.Object(t)
	files := m["files"].([]any)
	require.Len(t, files, 2)
	f0 := files[0].(map[string]any)
	name := f0["name"].(string)
	assert.Equal(t, "ground-truth-item-000.json", name)

	res = h.get("/v1/exports/20250102T100000Z/files/" + name)
	require.Equal(t, http.StatusOK, res.Status)
	assert.Equal(t, name, filenameOf(t, res))
	assert.Equal(t, `"`+f0["sha256"].(string)+`"`, res.Header.Get("ETag"))
	assert.Equal(t, fmt.Sprint(f0["bytes"]), res.Header.Get("Content-Length"))
	assert.Equal(t, "application/json", res.Header.Get("Content-Type"))
	assert.Equal(t, "item-000", res.Object(t)["id"])

	res = h.get("/v1/exports/20250102T100000Z-2/files/ground-truth-items.jsonl")
	require.Equal(t, http.StatusOK, res.Status)
	assert.Equal(t, "application/x-ndjson", res.Header.Get("Content-Type"))
	assert.Equal(t, 2, bytes.Count(res.Body, []byte("\n")))

	res = h.get("/v1/exports/20250102T100000Z/files/manifest.json")
	require.Equal(t, http.StatusOK, res.Status)
	assert.Equal(t, "manifest.json", filenameOf(t, res))

	// What does not exist, or must never be looked up.
	require.NoError(t, os.WriteFile(filepath.Join(h.arts, "secret.json"), []byte(`{"k":"v"}`), 0o600))
	for _, tc := range []struct{ path, detail string }{
		{"/v1/exports/20990101T000000Z", "Snapshot not found"},
		{"/v1/exports/latest", "Snapshot not found"},
		{"/v1/exports/20250102T100000Z-3/files/manifest.json", "Snapshot not found"},
		{"/v1/exports/20250102T100000Z/files/ground-truth-nope.json", "File not found"},
		{"/v1/exports/20250102T100000Z/files/.reserved", "File not found"},
		{"/v1/exports/20250102T100000Z/files/..%2F..%2F..%2Fsecret.json", "File not found"},
		{"/v1/exports/20250102T100000Z/files/%2E%2E", "File not found"},
		{"/v1/exports/20250102T100000Z/files/a%5Cb", "File not found"},
		{"/v1/exports/..%2F..%2Fsecret.json/files/manifest.json", "Snapshot not found"},
	} {
		// Encoded separators do not match a documented path for the document's router; the
		// error body is still checked.
		res = h.do(req{Method: http.MethodGet, Path: tc.path, NoCheck: strings.Contains(tc.path, "%")})
		require.Equal(t, http.StatusNotFound, res.Status, tc.path)
		assert.Equal(t, tc.detail, res.Object(t)["detail"], tc.path)
		assert.NotContains(t, string(res.Body), `"k"`)
	}
}

func TestExportBusy(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.storeItems(2, "alpha")
	var releases []func()
	for range 2 {
		r, err := h.exp.Acquire(context.Background())
		require.NoError(t, err)
		releases = append(releases, r)
	}
	res := h.get("/v1/ground-truths/snapshot")
	require.Equal(t, http.StatusServiceUnavailable, res.Status)
	assert.Equal(t, "EXPORT_BUSY", res.Object(t)["code"])
	assert.Equal(t, "Too many exports are running; retry later", res.Object(t)["detail"])
	assert.Equal(t, "10", res.Header.Get("Retry-After"))
	for _, r := range releases {
		r()
	}
	assert.Equal(t, http.StatusOK, h.get("/v1/ground-truths/snapshot").Status)
}

// flakyItems fails every scan from page failAt on.
type flakyItems struct {
	gtc.ItemStore
	failAt int32
	pages  atomic.Int32
}

func (f *flakyItems) Scan(ctx context.Context, s gtc.ScanSpec, cursor string, limit int) (gtc.ScanPage, error) {
	if f.pages.Add(1)-1 >= f.failAt {
		return gtc.ScanPage{}, fmt.Errorf("disk gone: %w", gtc.ErrUnavailable)
	}
	return f.ItemStore.Scan(ctx, s, cursor, limit)
}

// failingArtifacts refuses every write as unreachable.
type failingArtifacts struct{ gtc.ArtifactStore }

func (failingArtifacts) Put(context.Context, string, io.Reader, gtc.PutOptions) (gtc.ArtifactInfo, error) {
	return gtc.ArtifactInfo{}, fmt.Errorf("dial tcp 10.0.0.1:443: i/o timeout: %w", gtc.ErrStorageUnavailable)
}

// exportServer serves an API whose exporter reads through items and writes to arts.
func exportServer(t *testing.T, h *harness, items gtc.ItemStore, arts gtc.ArtifactStore) *httptest.Server {
	pr, fr := export.Builtins(nil)
	exp, err := export.New(export.Config{Items: items, Artifacts: arts, Clock: h.clock, Processors: pr, Formatters: fr, PageSize: 5, TempDir: t.TempDir()})
	require.NoError(t, err)
	srv := api.New(api.Deps{Curator: h.cur, Exporter: exp}, api.Options{Prefix: "/v1", RequestTimeout: time.Minute})
	return serve(t, srv)
}

func TestStreamAbortsWhenTheStoreFailsLater(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.storeItems(40, "alpha")
	local, err := localfs.Open(t.TempDir())
	require.NoError(t, err)
	defer local.Close()

	// The third page fails after the response has started: the client must see a cut body.
	ts := exportServer(t, h, &flakyItems{ItemStore: h.store.Items(), failAt: 2}, local)
	resp, err := http.Post(ts.URL+"/v1/ground-truths/snapshot", "application/json",
		strings.NewReader(`{"format":"jsonl","filters":{"status":""},"delivery":{"mode":"stream"}}`))
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	got, err := io.ReadAll(resp.Body)
	require.Error(t, err, "the body must not look complete")
	assert.True(t, errors.Is(err, io.ErrUnexpectedEOF), "%v", err)
	assert.Equal(t, 10, bytes.Count(got, []byte("\n")), "two pages arrived before the failure")

	// The first page fails: an ordinary JSON 503.
	ts = exportServer(t, h, &flakyItems{ItemStore: h.store.Items(), failAt: 0}, local)
	resp, err = http.Post(ts.URL+"/v1/ground-truths/snapshot", "application/json", strings.NewReader(`{"delivery":{"mode":"stream"}}`))
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Contains(t, string(body), `"code":"STORE_UNAVAILABLE"`)

	// An attachment failing on a later page: a JSON 503 and no partial file.
	ts = exportServer(t, h, &flakyItems{ItemStore: h.store.Items(), failAt: 3}, local)
	resp, err = http.Get(ts.URL + "/v1/ground-truths/snapshot")
	require.NoError(t, err)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Empty(t, resp.Header.Get("Content-Disposition"))
	assert.True(t, json.Valid(body))
}

func TestArtifactStorageUnreachable(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.storeItems(2, "alpha")
	local, err := localfs.Open(t.TempDir())
	require.NoError(t, err)
	defer local.Close()
	ts := exportServer(t, h, h.store.Items(), failingArtifacts{local})
	resp, err := http.Post(ts.URL+"/v1/ground-truths/snapshot", "application/json", strings.NewReader(`{"delivery":{"mode":"artifact"}}`))
	require.NoError(t, err)
	var body map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	resp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, "STORE_UNAVAILABLE", body["code"])
	assert.Equal(t, "Export storage is not reachable; retry later", body["detail"])
	assert.NotContains(t, fmt.Sprint(body), "10.0.0.1", "internals are not leaked")
}

func TestStreamReachesTheClientBeforeTheEnd(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.storeItems(400, "alpha")
	resp, err := http.Post(h.srv.URL+"/v1/ground-truths/snapshot", "application/json",
		strings.NewReader(`{"format":"jsonl","filters":{"status":""},"delivery":{"mode":"stream"}}`))
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, []string{"chunked"}, resp.TransferEncoding)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	n := 0
	for sc.Scan() {
		var rec map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &rec))
		n++
	}
	require.NoError(t, sc.Err())
	assert.Equal(t, 400, n)
}
