// Left out of the fuzz builds with the rest of package api_test (see harness_test.go).

//go:build !fuzzing

package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/api"
)

func TestSearchReferences(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	it := basicItem("support", "gt-001")
	it["plugins"] = map[string]any{"rag-compat": map[string]any{"kind": "rag-compat", "data": map[string]any{"references": []any{
		map[string]any{"url": "https://docs.example.com/install", "title": "Install", "content": "Run the installer", "bonus": false, "visitedAt": "x"},
		map[string]any{"url": "https://docs.example.com/other", "keyExcerpt": "INSTALLER notes"},
	}}}}
	gone := basicItem("support", "gt-002")
	gone["status"] = "deleted"
	gone["plugins"] = map[string]any{"rag-compat": map[string]any{"kind": "rag-compat", "data": map[string]any{"references": []any{
		map[string]any{"url": "https://docs.example.com/deleted-install"},
	}}}}
	h.importItems(it, gone)

	res := h.get("/v1/search?q=%20installer%20&top=10")
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	results := res.Object(t)["results"].([]any)
	require.Len(t, results, 2, "deleted items are not searched")
	first := results[0].(map[string]any)
	assert.Equal(t, "gt-001:ref:0", first["id"])
	assert.Equal(t, "https://docs.example.com/install", first["url"])
	assert.Equal(t, "Install", first["title"])
	assert.Equal(t, "Run the installer", first["chunk"])
	payload := first["raw_payload"].(map[string]any)
	assert.Equal(t, "gt-001", payload["itemId"])
	assert.Equal(t, "x", payload["reference"].(map[string]any)["visitedAt"], "the stored reference comes back whole")
	second := results[1].(map[string]any)
	assert.Nil(t, second["title"])
	assert.Equal(t, "INSTALLER notes", second["chunk"], "chunk falls back to the key excerpt")

	res = h.get("/v1/search?q=install&top=1")
	assert.Len(t, res.Object(t)["results"], 1)
	for _, bad := range []struct {
		q      string
		status int
	}{{"", 400}, {"q=%20%20", 400}, {"q=x&top=0", 422}, {"q=x&top=51", 422}, {"q=x&top=abc", 422}} {
		res := h.get("/v1/search?" + bad.q)
		require.Equal(t, bad.status, res.Status, bad.q)
		if bad.status == 400 {
			assert.Equal(t, map[string]any{"detail": "q is required", "status": json.Number("400"), "code": "INVALID_QUERY"}, res.Object(t))
		}
	}
}

type failingSearch struct{}

func (failingSearch) Search(context.Context, string, int) ([]gtc.SearchResult, error) {
	return nil, &gtc.SearchBackendError{Reason: "status 503", Err: errors.New("upstream said: secret-key-123 is invalid")}
}

func TestSearchBackendErrorIs502WithoutDetails(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	srv := api.New(api.Deps{Curator: h.cur, Search: failingSearch{}}, api.Options{})
	h2 := *h
	h2.srv = serve(t, srv)
	res := h2.get("/v1/search?q=x")
	require.Equal(t, http.StatusBadGateway, res.Status)
	assert.Equal(t, map[string]any{"detail": "Search backend error: status 503", "status": json.Number("502"), "code": "SEARCH_BACKEND_ERROR"}, res.Object(t))
	assert.NotContains(t, string(res.Body), "secret-key-123")
}
