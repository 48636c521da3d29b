// Left out of the fuzz builds with the rest of package api_test (see harness_test.go).

//go:build !fuzzing

package api_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAPISmoke walks the main flows of the API end to end on one store: import, list, get,
// a PUT with If-Match (and a stale one), approval, assignment and the curator's queue, tags
// and tag definitions, a snapshot export, delete and restore. make test runs it against the
// Cosmos DB test server (GTC_TEST_API_STORE=cosmos) as well as SQLite: the stores' other
// differences are the conformance suite's (storage/storetest), this proves the wiring.
func TestAPISmoke(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	admin := map[string]string{"X-User-Id": "ops@example.com", "X-User-Roles": "admin"}

	// Import, then list and get.
	a, b := basicItem("smoke", "s-1"), basicItem("smoke", "s-2")
	b["manualTags"] = []any{"source:sme", "topic:install"}
	h.importItems(a, b, basicItem("other", "o-1"))
	got, pg := listIDs(t, h, "dataset=smoke&sortBy=id&sortOrder=asc")
	assert.Equal(t, []string{"s-1", "s-2"}, got)
	assert.Equal(t, json.Number("2"), pg["total"])
	got, _ = listIDs(t, h, "tags=topic:install")
	assert.Equal(t, []string{"s-2"}, got, "tag filter")
	res := h.get("/v1/datasets")
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	assert.Contains(t, string(res.Body), `"smoke"`)
	k := h.key("smoke", "s-1")
	item := h.item("smoke", "s-1")
	assert.Equal(t, "draft", item["status"])
	etag := etagHeader(t, item["_etag"])

	// PUT with If-Match: the new ETag is answered; the old one is now stale.
	res = h.put(k, etag, map[string]any{"comment": "checked", "manualTags": []any{"topic:billing"}})
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	saved := res.Object(t)
	assert.Equal(t, "checked", saved["comment"])
	assert.Contains(t, saved["manualTags"], "topic:billing")
	assert.NotEqual(t, etag, etagHeader(t, saved["_etag"]))
	assert.Equal(t, etagHeader(t, saved["_etag"]), res.Header.Get("ETag"))
	res = h.put(k, etag, map[string]any{"comment": "lost"})
	require.Equal(t, http.StatusPreconditionFailed, res.Status, string(res.Body))
	assert.Equal(t, "ETAG_MISMATCH", res.Object(t)["code"])
	assert.Equal(t, "checked", h.item("smoke", "s-1")["comment"], "the stale write changed nothing")

	// Approve.
	res = h.put(k, etagHeader(t, saved["_etag"]), map[string]any{"status": "approved"})
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	assert.Equal(t, "approved", res.Object(t)["status"])
	got, _ = listIDs(t, h, "status=approved")
	assert.Equal(t, []string{"s-1"}, got)

	// Assign an item to a curator: it is in their queue, and the curator saves it.
	k2 := h.key("smoke", "s-2")
	res = h.do(req{Method: http.MethodPost, Path: assignPath(k2, "/assign"), Header: as("alice@example.com")})
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	assert.Equal(t, []string{"s-2"}, h.my("alice@example.com"))
	it2 := h.item("smoke", "s-2")
	assert.Equal(t, "alice@example.com", it2["assignedTo"])
	res = h.do(req{Method: http.MethodPut, Path: assignPath(k2, ""), Body: map[string]any{"comment": "mine"},
		Header: map[string]string{"X-User-Id": "alice@example.com", "If-Match": etagHeader(t, it2["_etag"])}})
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	assert.Equal(t, "mine", h.item("smoke", "s-2")["comment"])

	// Tags: register one, define one; a key Cosmos DB cannot hold is refused there with a
	// clear 422 (SQLite holds it).
	res = h.do(req{Method: http.MethodPost, Path: "/v1/tags", Body: map[string]any{"tags": []any{"custom:smoke"}}, Header: admin})
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	assert.Contains(t, strs(res.Object(t)["tags"]), "custom:smoke")
	res = h.do(req{Method: http.MethodPost, Path: "/v1/tags/definitions", Body: map[string]any{"tag_key": "custom:smoke", "description": "From the smoke test"}, Header: admin})
	require.Equal(t, http.StatusCreated, res.Status, string(res.Body))
	res = h.get("/v1/tags/glossary")
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	assert.Contains(t, string(res.Body), "From the smoke test")
	res = h.do(req{Method: http.MethodPost, Path: "/v1/tags/definitions", Body: `{"tag_key":"..\\..\\x?#/y","description":"d"}`, Header: admin})
	if h.store.Backend() == "cosmos" {
		require.Equal(t, http.StatusUnprocessableEntity, res.Status, string(res.Body))
		body := res.Object(t)
		assert.Equal(t, "VALIDATION_ERROR", body["code"])
		assert.Equal(t, "tag_key", body["errors"].([]any)[0].(map[string]any)["field"])
	} else {
		assert.Equal(t, http.StatusCreated, res.Status, string(res.Body))
	}

	// Export: the snapshot download holds the approved item only.
	res = h.get("/v1/ground-truths/snapshot")
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	snap := res.Object(t)
	assert.Equal(t, json.Number("1"), snap["count"])
	assert.Equal(t, "s-1", snap["items"].([]any)[0].(map[string]any)["id"])
	res = h.do(req{Method: http.MethodPost, Path: "/v1/ground-truths/snapshot", Header: admin,
		Body: map[string]any{"filters": map[string]any{"status": ""}, "delivery": map[string]any{"mode": "artifact"}}})
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	assert.NotEmpty(t, res.Object(t)["snapshotId"])

	// Delete, then restore through the assignment PUT.
	res = h.do(req{Method: http.MethodDelete, Path: itemPath(k2), Header: as("alice@example.com")})
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	deleted := h.item("smoke", "s-2")
	assert.Equal(t, "deleted", deleted["status"])
	assert.Empty(t, h.my("alice@example.com"), "deleted items never show in a queue")
	res = h.do(req{Method: http.MethodPut, Path: assignPath(k2, ""), Body: map[string]any{"status": "draft"},
		Header: map[string]string{"X-User-Id": "alice@example.com", "If-Match": etagHeader(t, deleted["_etag"])}})
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	assert.Equal(t, "draft", h.item("smoke", "s-2")["status"])
	assert.Equal(t, []string{"s-2"}, h.my("alice@example.com"), "restored into the same queue")
}
