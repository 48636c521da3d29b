package api_test

import (
	"crypto/sha256"
	"encoding/hex"
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
