// Left out of the fuzz builds with the rest of package api_test (see harness_test.go).

//go:build !fuzzing

package api_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReleasesOverHTTP(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.storeItems(6, "alpha", "beta")
	curator := map[string]string{"X-User-Id": "carol", "X-User-Roles": "curator"}
	res := h.do(req{Method: http.MethodPost, Path: "/v1/releases", Header: curator, Body: map[string]any{
		"name": "2026.1", "formats": []string{"jsonl", "csv"}, "splits": map[string]any{"train": 0.5, "test": 0.5},
		"filters": map[string]any{"tags": []string{"source:sme"}}, "notes": "For the January run.",
	}})
	require.Equal(t, http.StatusCreated, res.Status, string(res.Body))
	assert.Equal(t, "/v1/releases/2026.1", res.Header.Get("Location"))
	m := res.Object(t)
	assert.Equal(t, "carol", m["createdBy"])
	assert.Equal(t, "6", string(m["count"].(interface{ String() string }).String()), "the approved items of both datasets")
	items := m["items"].([]any)
	require.Len(t, items, 6)
	first := items[0].(map[string]any)
	assert.Equal(t, "alpha", first["datasetName"])
	assert.Equal(t, "1", first["revision"].(interface{ String() string }).String())

	got := h.get("/v1/releases/2026.1")
	require.Equal(t, http.StatusOK, got.Status)
	assert.Equal(t, res.Body, got.Body, "the manifest never changes")

	files := m["files"].([]any)
	require.Len(t, files, 5, "two splits in two formats, and the card")
	for _, f := range files {
		f := f.(map[string]any)
		name := f["name"].(string)
		dl := h.get("/v1/releases/2026.1/files/" + name)
		require.Equal(t, http.StatusOK, dl.Status, name)
		sum := sha256.Sum256(dl.Body)
		assert.Equal(t, hex.EncodeToString(sum[:]), f["sha256"])
		assert.Equal(t, `"`+f["sha256"].(string)+`"`, dl.Header.Get("ETag"))
		assert.Equal(t, `attachment; filename="`+name+`"`, dl.Header.Get("Content-Disposition"))
		if name == "README.md" {
			assert.True(t, strings.HasPrefix(string(dl.Body), "---\npretty_name: \"2026.1\"\n"), string(dl.Body))
			assert.Contains(t, string(dl.Body), "For the January run.")
		}
	}
	assert.Equal(t, http.StatusNotFound, h.get("/v1/releases/2026.1/files/.reserved").Status)
	assert.Equal(t, http.StatusNotFound, h.do(req{Method: http.MethodGet, Path: "/v1/releases/2026.1/files/..%2F..%2Fgtc.db", NoCheck: true}).Status)

	list := h.get("/v1/releases").Object(t)
	require.Len(t, list["items"], 1)
	assert.Equal(t, "/v1/releases/2026.1", list["items"].([]any)[0].(map[string]any)["manifestUrl"])

	again := h.do(req{Method: http.MethodPost, Path: "/v1/releases", Header: curator, Body: map[string]any{"name": "2026.1", "formats": []string{"jsonl"}}})
	assert.Equal(t, http.StatusConflict, again.Status)
	assert.Equal(t, "RELEASE_EXISTS", again.Object(t)["code"])

	bad := h.do(req{Method: http.MethodPost, Path: "/v1/releases", Header: curator, Body: map[string]any{
		"name": "../x", "splits": map[string]any{"train": 0.9, "test": "0.1"}, "stratifyBy": "colour", "extra": 1}})
	assert.Equal(t, http.StatusUnprocessableEntity, bad.Status)
	var fields []string
	for _, e := range bad.Object(t)["errors"].([]any) {
		fields = append(fields, e.(map[string]any)["field"].(string))
	}
	assert.Equal(t, []string{"extra", "splits.test"}, fields, "the body's shape first")
	bad = h.do(req{Method: http.MethodPost, Path: "/v1/releases", Header: curator, Body: map[string]any{
		"name": "../x", "splits": map[string]any{"train": 0.9, "test": 0.2}, "stratifyBy": "colour"}})
	assert.Equal(t, http.StatusUnprocessableEntity, bad.Status)
	fields = nil
	for _, e := range bad.Object(t)["errors"].([]any) {
		fields = append(fields, e.(map[string]any)["field"].(string))
	}
	assert.Equal(t, []string{"name", "splits", "stratifyBy"}, fields)
	empty := h.do(req{Method: http.MethodPost, Path: "/v1/releases", Header: curator, Body: map[string]any{
		"name": "none", "datasets": []string{"gamma"}}})
	assert.Equal(t, http.StatusUnprocessableEntity, empty.Status, "an empty release is a mistake")

	del := h.do(req{Method: http.MethodDelete, Path: "/v1/releases/2026.1", Header: curator})
	assert.Equal(t, http.StatusForbidden, del.Status, "deleting needs admin")
	del = h.do(req{Method: http.MethodDelete, Path: "/v1/releases/2026.1", Header: map[string]string{"X-User-Id": "root", "X-User-Roles": "admin"}})
	require.Equal(t, http.StatusOK, del.Status, string(del.Body))
	assert.Equal(t, "root", del.Object(t)["deletedBy"])
	gone := h.get("/v1/releases/2026.1")
	assert.Equal(t, http.StatusGone, gone.Status)
	assert.Equal(t, "root", gone.Object(t)["deletedBy"])
	assert.Equal(t, http.StatusGone, h.get("/v1/releases/2026.1/files/README.md").Status)
	assert.Equal(t, http.StatusNotFound, h.get("/v1/releases/never").Status)
	reuse := h.do(req{Method: http.MethodPost, Path: "/v1/releases", Header: curator, Body: map[string]any{"name": "2026.1", "formats": []string{"jsonl"}}})
	assert.Equal(t, http.StatusConflict, reuse.Status, "a deleted release's name is not given again")
}

func TestReleaseDiffOverHTTP(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.storeItems(6, "alpha", "beta")
	curator := map[string]string{"X-User-Id": "carol", "X-User-Roles": "curator"}
	viewer := map[string]string{"X-User-Id": "vic", "X-User-Roles": "viewer"}
	release := func(name string) {
		t.Helper()
		res := h.do(req{Method: http.MethodPost, Path: "/v1/releases", Header: curator, Body: map[string]any{"name": name, "formats": []string{"jsonl"}}})
		require.Equal(t, http.StatusCreated, res.Status, string(res.Body))
	}
	release("r1")
	// alpha/item-000 gets a new comment and tag; alpha/item-001, a draft, is approved.
	put := func(id, body string) {
		t.Helper()
		k := h.key("alpha", id)
		etag := h.item("alpha", id)["_etag"].(string)
		res := h.do(req{Method: http.MethodPut, Path: itemPath(k), Body: body, Header: map[string]string{"If-Match": etag, "X-User-Id": "carol", "X-User-Roles": "curator"}})
		require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	}
	put("item-000", `{"comment":"rechecked","manualTags":["source:sme","topic:keys"]}`)
	put("item-001", `{"status":"approved"}`)
	release("r2")

	res := h.do(req{Method: http.MethodGet, Path: "/v1/releases/r1/diff/r2", Header: viewer})
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	d := res.Object(t)
	assert.Equal(t, "r1", d["from"])
	assert.Equal(t, "r2", d["to"])
	assert.Equal(t, map[string]any{"added": json.Number("1"), "removed": json.Number("0"), "changed": json.Number("1"), "unchanged": json.Number("5")}, d["counts"])
	shift := d["tagShift"].([]any)
	assert.Contains(t, shift, map[string]any{"tag": "topic:keys", "from": json.Number("0"), "to": json.Number("1"), "delta": json.Number("1")})
	assert.Contains(t, shift, map[string]any{"tag": "source:sme", "from": json.Number("6"), "to": json.Number("7"), "delta": json.Number("1")})
	for i := 1; i < len(shift); i++ {
		a, b := shift[i-1].(map[string]any), shift[i].(map[string]any)
		da, _ := a["delta"].(json.Number).Int64()
		db, _ := b["delta"].(json.Number).Int64()
		assert.True(t, max(da, -da) > max(db, -db) || max(da, -da) == max(db, -db) && a["tag"].(string) < b["tag"].(string), "%v before %v", a, b)
	}
	assert.Nil(t, d["nextCursor"])
	items := d["items"].([]any)
	require.Len(t, items, 2)
	changed, added := items[0].(map[string]any), items[1].(map[string]any)
	assert.Equal(t, "changed", changed["kind"])
	assert.Equal(t, "item-000", changed["id"])
	assert.Equal(t, json.Number("1"), changed["fromRevision"])
	assert.Equal(t, json.Number("2"), changed["toRevision"])
	var paths []string
	for _, op := range changed["changes"].([]any) {
		paths = append(paths, op.(map[string]any)["path"].(string))
	}
	assert.Contains(t, paths, "/comment")
	assert.Equal(t, "added", added["kind"])
	assert.Equal(t, "item-001", added["id"])
	assert.NotContains(t, added, "fromRevision")

	// Pages of one item, then the next with the cursor; without changes.
	first := h.get("/v1/releases/r1/diff/r2?limit=1&changes=false").Object(t)
	require.Len(t, first["items"], 1)
	assert.NotContains(t, first["items"].([]any)[0], "changes")
	cursor := first["nextCursor"].(string)
	second := h.get("/v1/releases/r1/diff/r2?limit=1&cursor=" + cursor).Object(t)
	assert.Equal(t, "item-001", second["items"].([]any)[0].(map[string]any)["id"])
	assert.Equal(t, first["counts"], second["counts"])
	assert.Nil(t, second["nextCursor"])

	// Against the current items, after one more edit.
	put("item-002", `{"comment":"after r2"}`)
	now := h.get("/v1/releases/r2/diff/current?kind=changed").Object(t)
	assert.Equal(t, "current", now["to"])
	assert.Equal(t, json.Number("1"), now["counts"].(map[string]any)["changed"])
	assert.Equal(t, "item-002", now["items"].([]any)[0].(map[string]any)["id"])

	bad := h.get("/v1/releases/r1/diff/r2?cursor=" + cursor + "&kind=added")
	assert.Equal(t, http.StatusUnprocessableEntity, bad.Status, "a cursor of another kind")
	assert.Equal(t, "query.cursor", bad.Object(t)["errors"].([]any)[0].(map[string]any)["field"])
	bad = h.get("/v1/releases/r1/diff/r2?kind=moved&limit=501&changes=maybe")
	assert.Equal(t, http.StatusUnprocessableEntity, bad.Status)
	var fields []string
	for _, e := range bad.Object(t)["errors"].([]any) {
		fields = append(fields, e.(map[string]any)["field"].(string))
	}
	assert.Equal(t, []string{"query.kind", "query.changes", "query.limit"}, fields)

	assert.Equal(t, http.StatusNotFound, h.get("/v1/releases/r1/diff/nope").Status)
	assert.Equal(t, http.StatusNotFound, h.get("/v1/releases/nope/diff/current").Status)
	del := h.do(req{Method: http.MethodDelete, Path: "/v1/releases/r1", Header: map[string]string{"X-User-Id": "root", "X-User-Roles": "admin"}})
	require.Equal(t, http.StatusOK, del.Status, string(del.Body))
	gone := h.get("/v1/releases/r1/diff/r2")
	assert.Equal(t, http.StatusGone, gone.Status)
	assert.Equal(t, "root", gone.Object(t)["deletedBy"])

	reserved := h.do(req{Method: http.MethodPost, Path: "/v1/releases", Header: curator, Body: map[string]any{"name": "current"}})
	assert.Equal(t, http.StatusUnprocessableEntity, reserved.Status)
}
