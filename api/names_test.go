package api_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDuplicateLocationResolves follows the Location of a duplicate the way a client does
// (resolved against the request URL, dot-segments removed) for items whose dataset names
// and ids look like path syntax but are legal: it must lead to the new item.
func TestDuplicateLocationResolves(t *testing.T) {
	h := newHarness(t)
	cases := []struct{ dataset, id string }{
		{"...", "..."},
		{". ", " a"},
		{"x.", ".y"},
		{"50% off", "%2e%2e"},
		{"café ünïcode", "Ωmega"},
		{"a b", "c d"},
	}
	var items []map[string]any
	for _, c := range cases {
		items = append(items, basicItem(c.dataset, c.id))
	}
	h.importItems(items...)
	base, err := url.Parse(h.srv.URL)
	require.NoError(t, err)
	for _, c := range cases {
		id := c.id
		if id == " a" {
			id = "a" // ids are stored trimmed
		}
		k := h.key(c.dataset, id)
		res := h.do(req{Method: http.MethodPost, Path: assignPath(k, "/duplicate"), Header: devWho(alice)})
		require.Equal(t, http.StatusCreated, res.Status, "%q/%q: %s", c.dataset, id, res.Body)
		dup := res.Object(t)
		loc, err := url.Parse(res.Header.Get("Location"))
		require.NoError(t, err)
		target := base.ResolveReference(loc)
		assert.Equal(t, loc.EscapedPath(), target.EscapedPath(), "%q: the Location has no dot-segment to remove", c.dataset)
		got := h.get(target.RequestURI())
		require.Equal(t, http.StatusOK, got.Status, "%q/%q: the Location %s leads nowhere: %s", c.dataset, id, loc, got.Body)
		item := got.Object(t)
		assert.Equal(t, dup["id"], item["id"], "%q: the Location is the new item", c.dataset)
		assert.Equal(t, c.dataset, item["datasetName"])
		assert.NotEqual(t, id, item["id"])
	}
}

// TestTagsComposedEverywhere: a tag typed with combining marks (NFD) and the same tag typed
// with precomposed letters (NFC) are one tag in the tag store, on items, in list filters and
// in the glossary.
func TestTagsComposedEverywhere(t *testing.T) {
	h := newHarness(t)
	const nfc, nfd = "café:crème", "cafe\u0301:cre\u0300me"

	res := h.do(req{Method: http.MethodPost, Path: "/v1/tags", Body: map[string]any{"tags": []any{nfd}}})
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	assert.Contains(t, strs(res.Object(t)["tags"]), nfc)
	assert.NotContains(t, strs(res.Object(t)["tags"]), nfd)

	a, b := basicItem("ds", "a"), basicItem("ds", "b")
	a["manualTags"] = []any{nfc}
	b["manualTags"] = []any{nfd, nfc}
	h.importItems(a, b, basicItem("ds", "c")) // known through the tag store, no registerTags
	assert.Equal(t, []any{nfc}, h.item("ds", "a")["manualTags"])
	assert.Equal(t, []any{nfc}, h.item("ds", "b")["manualTags"], "one tag")

	for _, filter := range []string{nfc, nfd, " " + nfd + " "} {
		list := h.get("/v1/ground-truths?sortBy=id&sortOrder=asc&tags=" + url.QueryEscape(filter)).Object(t)
		assert.Equal(t, []string{"a", "b"}, ids(t, list["items"].([]any)), "tags=%q", filter)
		list = h.get("/v1/ground-truths?excludeTags=" + url.QueryEscape(filter)).Object(t)
		assert.Equal(t, []string{"c"}, ids(t, list["items"].([]any)), "excludeTags=%q", filter)
	}

	res = h.do(req{Method: http.MethodPost, Path: "/v1/tags/definitions", Body: map[string]any{"tag_key": nfd, "description": "d"}})
	require.Equal(t, http.StatusCreated, res.Status, string(res.Body))
	assert.Equal(t, nfc, res.Object(t)["tag_key"])
	res = h.do(req{Method: http.MethodDelete, Path: "/v1/tags/definitions/" + url.PathEscape(nfd)})
	assert.Equal(t, http.StatusNoContent, res.Status, string(res.Body))

	res = h.do(req{Method: http.MethodDelete, Path: "/v1/tags", Body: map[string]any{"tags": []any{nfd}}})
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	assert.NotContains(t, strs(res.Object(t)["tags"]), nfc)
}
