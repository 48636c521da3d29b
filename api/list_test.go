// Left out of the fuzz builds with the rest of package api_test (see harness_test.go).

//go:build !fuzzing

package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func ids(t *testing.T, items []any) []string {
	t.Helper()
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.(map[string]any)["id"].(string)
	}
	return out
}

func listIDs(t *testing.T, h *harness, query string) ([]string, map[string]any) {
	t.Helper()
	res := h.get("/v1/ground-truths?" + query)
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	body := res.Object(t)
	return ids(t, body["items"].([]any)), body["pagination"].(map[string]any)
}

func TestListFiltersSortsAndPages(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	mk := func(ds, id, status, reviewed string, tags []any, refs []string, msg string) map[string]any {
		it := basicItem(ds, id)
		it["status"] = status
		if reviewed != "" {
			it["reviewedAt"] = reviewed
		}
		it["manualTags"] = tags
		if msg != "" {
			it["history"] = []any{map[string]any{"role": "user", "msg": msg}}
		}
		if refs != nil {
			var rs []any
			for _, u := range refs {
				rs = append(rs, map[string]any{"url": u, "title": "T " + u})
			}
			it["plugins"] = map[string]any{"rag-compat": map[string]any{"kind": "rag-compat", "data": map[string]any{"references": rs}}}
		}
		return it
	}
	h.importItems(
		mk("alpha", "a1", "approved", "2025-01-01T00:00:00Z", []any{"topic:install"}, []string{"https://docs.example.com/Install"}, ""),
		mk("alpha", "a2", "draft", "", []any{"topic:install", "source:sme"}, nil, "Äpfel und Birnen"),
		mk("alpha", "a3", "approved", "2025-01-03T00:00:00Z", []any{"source:sme"}, []string{"https://a.example/1", "https://a.example/2"}, ""),
		mk("beta", "b1", "deleted", "", []any{}, nil, ""),
		mk("beta", "b2", "skipped", "2025-01-02T00:00:00Z", []any{"topic:security"}, nil, "only a question"),
	)
	got, pg := listIDs(t, h, "")
	assert.Equal(t, []string{"a3", "b2", "a1", "b1", "a2"}, got[:3+2], "default: reviewedAt desc; null reviewedAt sorts oldest")
	assert.Equal(t, map[string]any{"page": json.Number("1"), "limit": json.Number("25"), "total": json.Number("5"),
		"totalPages": json.Number("1"), "hasNext": false, "hasPrev": false}, pg)

	cases := map[string][]string{
		"status=approved&sortBy=id&sortOrder=asc":                                  {"a1", "a3"},
		"dataset=alpha&sortBy=id&sortOrder=desc":                                   {"a3", "a2", "a1"},
		"tags=topic:install,source:sme&sortBy=id":                                  {"a2"},
		"tags=dataset:beta&sortBy=id&sortOrder=asc":                                {"b1", "b2"},
		"tags=%20turns:singleturn%20,,&excludeTags=topic:install&sortBy=id":        {"b2", "b1", "a3"},
		"itemId=2&sortBy=id&sortOrder=asc":                                         {"a2", "b2"},
		"itemId=A2":                                                                {},
		"keyword=%C3%84PFEL":                                                       {"a2"},
		"keyword=ALPHA&sortBy=id&sortOrder=asc":                                    {"a1", "a2", "a3"},
		"keyword=T%20https://a.example/2":                                          {"a3"},
		"pluginFilter=rag-compat:refUrl=a.example&pluginFilter=rag-compat:refUrl=": {"a3"},
		"pluginFilter=rag-compat:refUrl=install":                                   {},
		"pluginSort=rag-compat:totalReferences&sortOrder=desc":                     {"a3", "a1", "b2", "b1", "a2"},
		"sortBy=tagCount&sortOrder=asc":                                            {"b1", "a1", "a3", "b2", "a2"},
		"sortBy=hasAnswer&sortOrder=asc":                                           {"a2", "b2", "b1", "a1", "a3"},
		"status=draft&status=approved":                                             {"a2"},
	}
	for q, want := range cases {
		got, _ := listIDs(t, h, q)
		if len(want) == 0 {
			want = []string{}
		}
		assert.Equal(t, want, got, q)
	}

	got, pg = listIDs(t, h, "sortBy=id&sortOrder=asc&limit=2&page=2")
	assert.Equal(t, []string{"a3", "b1"}, got)
	assert.Equal(t, map[string]any{"page": json.Number("2"), "limit": json.Number("2"), "total": json.Number("5"),
		"totalPages": json.Number("3"), "hasNext": true, "hasPrev": true}, pg)
	got, pg = listIDs(t, h, "limit=2&page=9")
	assert.Empty(t, got, "a page past the end is empty")
	assert.Equal(t, json.Number("5"), pg["total"])
	assert.Equal(t, false, pg["hasNext"])
}

func TestListTotalsAreExactAtSize(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var items []map[string]any
	for i := 0; i < 1200; i++ {
		it := basicItem(fmt.Sprintf("ds%d", i%3), fmt.Sprintf("id-%04d", i))
		if i%4 == 0 {
			it["manualTags"] = []any{"topic:install"}
		}
		items = append(items, it)
	}
	h.importItems(items...)
	_, pg := listIDs(t, h, "dataset=ds1&tags=topic:install&limit=100")
	want := 0
	for i := 0; i < 1200; i++ {
		if i%3 == 1 && i%4 == 0 {
			want++
		}
	}
	assert.Equal(t, json.Number(fmt.Sprint(want)), pg["total"], "totals are exact, not capped")
	_, pg = listIDs(t, h, "")
	assert.Equal(t, json.Number("1200"), pg["total"])
	assert.Equal(t, json.Number("48"), pg["totalPages"])
}

func TestListRejectsBadQueries(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	elevenTags := strings.TrimSuffix(strings.Repeat("a:b,", 11), ",")
	longTag := strings.Repeat("t", 101)
	cases := []struct {
		query, code, detail string
		status              int
	}{
		{"limit=0", "INVALID_QUERY", "limit must be between 1 and 100", 400},
		{"limit=101", "INVALID_QUERY", "limit must be between 1 and 100", 400},
		{"page=0", "INVALID_QUERY", "page must be at least 1", 400},
		{"page=x", "VALIDATION_ERROR", "Request validation failed: query.page: expected integer", 422},
		{"limit=1.5&sortBy=name", "VALIDATION_ERROR", "Request validation failed: query.limit: expected integer (and 1 more)", 422},
		{"sortOrder=up", "VALIDATION_ERROR", "Request validation failed: query.sortOrder: must be one of: asc, desc", 422},
		{"status=done", "INVALID_STATUS", "Invalid status value: done. Must be one of: draft, approved, skipped, deleted", 400},
		{"tags=" + elevenTags, "INVALID_QUERY", "Too many tags specified. Maximum allowed is 10.", 400},
		{"excludeTags=" + elevenTags, "INVALID_QUERY", "Too many exclude tags specified. Maximum allowed is 10.", 400},
		{"tags=" + longTag, "INVALID_QUERY", "Tag '" + strings.Repeat("t", 50) + "...' exceeds maximum length of 100 characters.", 400},
		{"excludeTags=" + longTag, "INVALID_QUERY", "Exclude tag '" + strings.Repeat("t", 50) + "...' exceeds maximum length of 100 characters.", 400},
		{"keyword=" + strings.Repeat("k", 201), "INVALID_QUERY", "keyword must be 200 characters or less", 400},
		{"itemId=" + strings.Repeat("i", 201), "INVALID_QUERY", "itemId must be 200 characters or less", 400},
		{"pluginFilter=nokey", "INVALID_QUERY", "pluginFilter entries must use key=value format", 400},
		{"pluginFilter==x", "INVALID_QUERY", "pluginFilter entries must include a non-empty key", 400},
		{"pluginFilter=refUrl=x", "INVALID_QUERY", "pluginFilter key must be namespaced (pack:key)", 400},
		{"pluginFilter=rag-compat:refUrl=" + strings.Repeat("v", 501), "INVALID_QUERY", "pluginFilter value must be 500 characters or less", 400},
		{"pluginFilter=rag-compat:other=x", "INVALID_QUERY", "Unknown pluginFilter key 'rag-compat:other'", 400},
		{"pluginSort=totalReferences", "INVALID_QUERY", "pluginSort must be namespaced (pack:key)", 400},
		{"pluginSort=rag-compat:other", "INVALID_QUERY", "Unknown pluginSort key 'rag-compat:other'", 400},
	}
	for _, tc := range cases {
		res := h.get("/v1/ground-truths?" + tc.query)
		require.Equal(t, tc.status, res.Status, tc.query+": "+string(res.Body))
		body := res.Object(t)
		assert.Equal(t, tc.code, body["code"], tc.query)
		assert.Equal(t, tc.detail, body["detail"], tc.query)
	}
}

func TestListDatasetStatsAndDatasets(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	mk := func(ds, id, status string) map[string]any {
		it := basicItem(ds, id)
		it["status"] = status
		return it
	}
	h.importItems(mk("b", "1", "draft"))
	h.clock.Advance(time.Minute)
	h.importItems(mk("b", "3", "approved"), mk("b", "2", "draft"), mk("a", "x", "skipped"), mk("a", "y", "deleted"))

	res := h.get("/v1/ground-truths/b")
	require.Equal(t, http.StatusOK, res.Status)
	assert.Equal(t, []string{"2", "3", "1"}, ids(t, res.Array(t)), "updatedAt descending, then id ascending")
	res = h.get("/v1/ground-truths/b?status=draft")
	assert.Equal(t, []string{"2", "1"}, ids(t, res.Array(t)))
	res = h.get("/v1/ground-truths/nope")
	require.Equal(t, http.StatusOK, res.Status)
	assert.Equal(t, []any{}, res.Array(t))
	res = h.get("/v1/ground-truths/b?status=bogus")
	assert.Equal(t, http.StatusUnprocessableEntity, res.Status)

	res = h.get("/v1/ground-truths/stats")
	require.Equal(t, http.StatusOK, res.Status)
	assert.Equal(t, map[string]any{"draft": json.Number("2"), "approved": json.Number("1"), "deleted": json.Number("1")}, res.Object(t))

	res = h.get("/v1/datasets")
	assert.Equal(t, []any{"a", "b"}, res.Array(t))
}

func TestCurationInstructions(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.importItems(basicItem("support", "gt-1"))
	path := "/v1/datasets/support/curation-instructions"
	res := h.get(path)
	require.Equal(t, http.StatusNotFound, res.Status)
	assert.Equal(t, "Not found", res.Object(t)["detail"])

	putC := func(body any, ifMatch string) *response {
		hd := map[string]string{"X-User-Id": "alice@example.com"}
		if ifMatch != "" {
			hd["If-Match"] = ifMatch
		}
		return h.do(req{Method: http.MethodPut, Path: path, Body: body, Header: hd})
	}
	res = putC(map[string]any{"instructions": "# Rules"}, `"whatever"`)
	require.Equal(t, http.StatusPreconditionFailed, res.Status, "a token for a missing document is a mismatch")
	assert.Equal(t, "ETag mismatch", res.Object(t)["detail"])

	res = putC(map[string]any{"instructions": "# Rules"}, "")
	require.Equal(t, http.StatusCreated, res.Status, string(res.Body))
	doc := res.Object(t)
	assert.Equal(t, "curation-instructions|support", doc["id"])
	assert.Equal(t, "00000000-0000-0000-0000-000000000000", doc["bucket"])
	assert.Equal(t, "curation-instructions", doc["docType"])
	assert.Equal(t, "v1", doc["schemaVersion"])
	assert.Equal(t, "alice@example.com", doc["updatedBy"])
	assert.Equal(t, "2025-01-02T10:00:00.000Z", doc["updatedAt"])
	assert.Equal(t, etagHeader(t, doc["_etag"]), res.Header.Get("ETag"))
	first := doc["_etag"].(string)

	res = putC(map[string]any{"instructions": "again"}, "")
	require.Equal(t, http.StatusPreconditionFailed, res.Status)
	assert.Equal(t, "ETag required", res.Object(t)["detail"])

	res = putC(map[string]any{"instructions": "v2", "_etag": first}, "")
	require.Equal(t, http.StatusOK, res.Status, "the body _etag is a token: %s", res.Body)
	second := res.Object(t)["_etag"].(string)

	res = putC(map[string]any{"instructions": "v3", "etag": second}, first)
	require.Equal(t, http.StatusPreconditionFailed, res.Status, "If-Match wins over the body token")
	assert.Equal(t, "ETag mismatch", res.Object(t)["detail"])

	res = putC(map[string]any{"instructions": "v3"}, strings.Trim(second, `"`))
	require.Equal(t, http.StatusOK, res.Status, "an unquoted token matches")
	assert.Equal(t, "v3", h.get(path).Object(t)["instructions"])

	res = putC(map[string]any{"instructions": 5, "extra": true}, "")
	require.Equal(t, http.StatusUnprocessableEntity, res.Status)
	assert.Len(t, res.Object(t)["errors"], 2)

	res = h.get("/v1/datasets/" + url.PathEscape("no such") + "/curation-instructions")
	assert.Equal(t, http.StatusNotFound, res.Status)
}

func TestDeleteDataset(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.importItems(basicItem("gone", "1"), basicItem("gone", "2"), basicItem("kept", "1"))
	res := h.do(req{Method: http.MethodPut, Path: "/v1/datasets/gone/curation-instructions", Body: map[string]any{"instructions": "x"}})
	require.Equal(t, http.StatusCreated, res.Status)

	res = h.do(req{Method: http.MethodDelete, Path: "/v1/datasets/gone"})
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	assert.Equal(t, map[string]any{"status": "deleted", "itemsDeleted": json.Number("2"), "curationInstructionsDeleted": true}, res.Object(t))
	assert.Equal(t, []any{"kept"}, h.get("/v1/datasets").Array(t))
	assert.Equal(t, http.StatusNotFound, h.get("/v1/datasets/gone/curation-instructions").Status)

	res = h.do(req{Method: http.MethodDelete, Path: "/v1/datasets/gone"})
	require.Equal(t, http.StatusOK, res.Status, "idempotent")
	assert.Equal(t, map[string]any{"status": "deleted", "itemsDeleted": json.Number("0"), "curationInstructionsDeleted": false}, res.Object(t))
	h.importItems(basicItem("gone", "1"))
}
