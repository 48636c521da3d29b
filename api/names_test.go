// Left out of the fuzz builds with the rest of package api_test (see harness_test.go).

//go:build !fuzzing

package api_test

import (
	"context"
	"encoding/json"
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
	t.Parallel()
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
	t.Parallel()
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

// TestStoredTagTheRulesNowRefuse: an item stored before invisible format characters were
// refused in tags still reads; a write that keeps the tag is a 400 naming it, never a 500,
// and a save without it repairs the item.
func TestStoredTagTheRulesNowRefuse(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.importItems(basicItem("ds", "a"))
	k := h.key("ds", "a")
	ctx := context.Background()
	cur, err := h.store.Items().Get(ctx, k)
	require.NoError(t, err)
	next := cur.Clone()
	next.ManualTags = []string{"sour\u200bce:synthetic", "source:sme"}
	_, err = h.store.Items().Replace(ctx, cur, next)
	require.NoError(t, err)

	it := h.item("ds", "a")
	assert.Equal(t, []any{"sour\u200bce:synthetic", "source:sme"}, it["manualTags"], "reads show the item as stored")
	want := "Invalid tag format (invisible format character U+200B is not allowed): 'sour\u200bce:synthetic'"
	for _, r := range []req{
		{Method: http.MethodDelete, Path: itemPath(k)},
		{Method: http.MethodPost, Path: assignPath(k, "/assign"), Header: devWho(alice)},
		{Method: http.MethodPut, Path: itemPath(k), Body: map[string]any{"comment": "x"}, Header: map[string]string{"If-Match": etagHeader(t, it["_etag"])}},
	} {
		res := h.do(r)
		require.Equal(t, http.StatusBadRequest, res.Status, "%s %s: %s", r.Method, r.Path, res.Body)
		body := res.Object(t)
		assert.Equal(t, "INVALID_TAG_FORMAT", body["code"])
		assert.Contains(t, body["detail"], want)
	}
	res := h.do(req{Method: http.MethodPut, Path: itemPath(k), Body: map[string]any{"manualTags": []any{"source:sme"}},
		Header: map[string]string{"If-Match": etagHeader(t, it["_etag"])}})
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	assert.Equal(t, []any{"source:sme"}, res.Object(t)["manualTags"])
}

// TestArtifactExportOfOneIDInTwoDatasets: items are keyed by (datasetName, id), so the same
// id in two datasets is legal data, and the default artifact export stores both.
func TestArtifactExportOfOneIDInTwoDatasets(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.importItems(basicItem("alpha", "gt-1"), basicItem("beta", "gt-1"), basicItem("beta", "gt-2"))
	res := h.do(req{Method: http.MethodPost, Path: "/v1/ground-truths/snapshot",
		Body: map[string]any{"filters": map[string]any{"status": ""}, "delivery": map[string]any{"mode": "artifact"}}})
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	id := res.Object(t)["snapshotId"].(string)

	m := h.get("/v1/exports/" + id).Object(t)
	assert.Equal(t, json.Number("3"), m["count"])
	got := map[string]string{}
	for _, f := range m["files"].([]any) {
		name := f.(map[string]any)["name"].(string)
		file := h.get("/v1/exports/" + id + "/files/" + url.PathEscape(name))
		require.Equal(t, http.StatusOK, file.Status, "%s: %s", name, file.Body)
		rec := file.Object(t)
		got[name] = rec["datasetName"].(string) + "/" + rec["id"].(string)
	}
	assert.Equal(t, map[string]string{
		"ground-truth-gt-1.json":      "alpha/gt-1",
		"ground-truth-gt-1~beta.json": "beta/gt-1",
		"ground-truth-gt-2.json":      "beta/gt-2",
	}, got)
}
