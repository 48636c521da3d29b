// Left out of the fuzz builds with the rest of package api_test (see harness_test.go).

//go:build !fuzzing

package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHistoryAnswersWhoChangedWhatAndWhatItSaidBefore(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.importItems(basicItem("support", "q1"))
	k := h.key("support", "q1")
	first := h.item("support", "q1")
	assert.Equal(t, json.Number("1"), first["revision"], "an imported item is at its first revision")

	put := func(user, body string) map[string]any {
		etag := h.item("support", "q1")["_etag"].(string)
		res := h.do(req{Method: http.MethodPut, Path: itemPath(k), Body: body,
			Header: map[string]string{"If-Match": etag, "X-User-Id": user}})
		require.Equal(t, http.StatusOK, res.Status, string(res.Body))
		return res.Object(t)
	}
	second := put("alice@example.com", `{"comment":"checked against the docs"}`)
	third := put("bob@example.com", `{"history":[{"role":"user","msg":"Where do I get the installer?"},{"role":"assistant","msg":"From the downloads page."}]}`)
	assert.Equal(t, json.Number("3"), third["revision"])

	res := h.get(itemPath(k) + "/history")
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	page := res.Object(t)
	revs := page["revisions"].([]any)
	require.Len(t, revs, 3)
	assert.Nil(t, page["nextCursor"])
	newest, middle, oldest := revs[0].(map[string]any), revs[1].(map[string]any), revs[2].(map[string]any)
	assert.Equal(t, json.Number("3"), newest["revision"])
	assert.Equal(t, "bob@example.com", newest["actor"])
	assert.Equal(t, "api", newest["source"])
	assert.Contains(t, newest["paths"], "/history/0/msg")
	assert.Equal(t, second["_etag"], newest["etagBefore"])
	assert.Equal(t, third["_etag"], newest["etagAfter"])
	assert.Equal(t, "alice@example.com", middle["actor"])
	assert.Contains(t, middle["paths"], "/comment")
	assert.Equal(t, "import", oldest["source"])
	assert.Equal(t, []any{""}, oldest["paths"], "the first revision adds the whole item")

	// The item as it was after revision 1, and what changed since.
	res = h.get(itemPath(k) + "/history/1")
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	was := res.Object(t)
	assert.Equal(t, first["history"], was["history"])
	assert.Equal(t, first["comment"], was["comment"])
	assert.Equal(t, first["_etag"], was["_etag"])
	assert.Equal(t, json.Number("1"), was["revision"])

	res = h.get(itemPath(k) + "/diff?from=1")
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	diff := res.Object(t)
	assert.Equal(t, json.Number("3"), diff["to"], "to defaults to the current revision")
	byPath := map[string]map[string]any{}
	for _, c := range diff["changes"].([]any) {
		byPath[c.(map[string]any)["path"].(string)] = c.(map[string]any)
	}
	msg := first["history"].([]any)[0].(map[string]any)["msg"]
	require.Contains(t, byPath, "/history/0/msg")
	assert.Equal(t, msg, byPath["/history/0/msg"]["old"])
	assert.Equal(t, "Where do I get the installer?", byPath["/history/0/msg"]["value"])
	assert.Equal(t, "checked against the docs", byPath["/comment"]["value"])

	// Paging, newest first.
	res = h.get(itemPath(k) + "/history?limit=2")
	page = res.Object(t)
	require.Len(t, page["revisions"], 2)
	cursor := page["nextCursor"].(string)
	res = h.get(itemPath(k) + "/history?limit=2&cursor=" + cursor)
	page = res.Object(t)
	require.Len(t, page["revisions"], 1)
	assert.Equal(t, json.Number("1"), page["revisions"].([]any)[0].(map[string]any)["revision"])
	assert.Nil(t, page["nextCursor"])
}

func TestHistoryRefusesBadRevisions(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.importItems(basicItem("support", "q1"))
	k := h.key("support", "q1")
	for _, c := range []struct {
		path   string
		status int
		field  string
	}{
		{"/history/2", http.StatusNotFound, ""},
		{"/history/0", http.StatusUnprocessableEntity, "path.revision"},
		{"/history/x", http.StatusUnprocessableEntity, "path.revision"},
		{"/diff", http.StatusUnprocessableEntity, "query.from"},
		{"/diff?from=2&to=1", http.StatusUnprocessableEntity, "query.from"},
		{"/diff?from=1&to=9", http.StatusNotFound, ""},
		{"/history?limit=0", http.StatusUnprocessableEntity, "query.limit"},
		{"/history?limit=" + strconv.Itoa(1000), http.StatusUnprocessableEntity, "query.limit"},
		{"/history?cursor=abc", http.StatusUnprocessableEntity, "query.cursor"},
	} {
		res := h.get(itemPath(k) + c.path)
		require.Equal(t, c.status, res.Status, "%s: %s", c.path, res.Body)
		if c.field != "" {
			assert.Contains(t, string(res.Body), `"field":"`+c.field+`"`, c.path)
		}
	}
	missing := k
	missing.ID = "nope"
	assert.Equal(t, http.StatusNotFound, h.get(itemPath(missing)+"/history").Status)
}

func TestRestoreWritesAnEarlierRevisionAsTheNextOne(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.importItems(basicItem("support", "q1"))
	k := h.key("support", "q1")
	first := h.item("support", "q1")
	etag := first["_etag"].(string)
	res := h.do(req{Method: http.MethodPut, Path: itemPath(k), Body: `{"comment":"wrong turn","history":[{"role":"user","msg":"Something else"}]}`,
		Header: map[string]string{"If-Match": etag, "X-User-Id": "alice@example.com"}})
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	edited := res.Object(t)

	// A stale token, no token, an unknown revision, a bad body: refused, nothing written.
	before := h.snapshot()
	for _, c := range []struct {
		body, etag string
		status     int
	}{
		{`{"revision":1}`, etag, http.StatusPreconditionFailed},
		{`{"revision":1}`, "", http.StatusPreconditionFailed},
		{`{"revision":7}`, edited["_etag"].(string), http.StatusNotFound},
		{`{"revision":0}`, edited["_etag"].(string), http.StatusUnprocessableEntity},
		{`{"revision":"1"}`, edited["_etag"].(string), http.StatusUnprocessableEntity},
		{`{}`, edited["_etag"].(string), http.StatusUnprocessableEntity},
	} {
		hdr := map[string]string{"X-User-Id": "bob@example.com"}
		if c.etag != "" {
			hdr["If-Match"] = c.etag
		}
		res := h.do(req{Method: http.MethodPost, Path: itemPath(k) + "/restore", Body: c.body, Header: hdr})
		assert.Equal(t, c.status, res.Status, "%s: %s", c.body, res.Body)
	}
	assert.Equal(t, before, h.snapshot(), "a refused restore writes nothing")

	res = h.do(req{Method: http.MethodPost, Path: itemPath(k) + "/restore", Body: `{"revision":1}`,
		Header: map[string]string{"If-Match": edited["_etag"].(string), "X-User-Id": "bob@example.com"}})
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	restored := res.Object(t)
	assert.Equal(t, json.Number("3"), restored["revision"], "a restore is a new revision, not a rewind")
	assert.Equal(t, first["history"], restored["history"])
	assert.Equal(t, first["comment"], restored["comment"])
	assert.Equal(t, first["computedTags"], restored["computedTags"], "computed tags are made again")

	revs := h.get(itemPath(k) + "/history").Object(t)["revisions"].([]any)
	require.Len(t, revs, 3)
	newest := revs[0].(map[string]any)
	assert.Equal(t, "restore", newest["source"])
	assert.Equal(t, "bob@example.com", newest["actor"])
}

func TestRecomputeJobRecordsRevisionsInItsCreatorsName(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.importItems(basicItem("a", "1"))
	ctx := context.Background()
	k := h.key("a", "1")
	cur, err := h.store.Items().Get(ctx, k)
	require.NoError(t, err)
	stale := cur.Clone()
	stale.ComputedTags = []string{"turns:stale"}
	_, err = h.store.Items().Replace(ctx, cur, stale)
	require.NoError(t, err)

	res := h.do(req{Method: http.MethodPost, Path: "/v1/ground-truths/recompute-tags?async=true&dataset=a", Header: map[string]string{"X-User-Id": "ops@example.com"}})
	require.Equal(t, http.StatusAccepted, res.Status, string(res.Body))
	id := res.Object(t)["id"].(string)
	deadline := time.Now().Add(10 * time.Second)
	for h.get("/v1/jobs/" + id).Object(t)["status"] != "succeeded" {
		require.True(t, time.Now().Before(deadline), "the job did not finish")
		time.Sleep(10 * time.Millisecond)
	}
	newest := h.get(itemPath(k) + "/history").Object(t)["revisions"].([]any)[0].(map[string]any)
	assert.Equal(t, "recompute", newest["source"])
	assert.Equal(t, "ops@example.com", newest["actor"], "a job writes in the name of whoever started it")
	assert.Contains(t, newest["paths"], "/computedTags/0")
}

func TestRestoreOfADeletedItemsRevisionNeedsIfMatch(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.importItems(basicItem("support", "q1"))
	k := h.key("support", "q1")
	res := h.do(req{Method: http.MethodDelete, Path: itemPath(k)})
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	deleted := h.item("support", "q1")
	require.Equal(t, "deleted", deleted["status"])

	before := h.snapshot()
	res = h.do(req{Method: http.MethodPost, Path: itemPath(k) + "/restore", Body: `{"revision":1}`})
	assert.Equal(t, http.StatusPreconditionFailed, res.Status, string(res.Body))
	assert.Equal(t, before, h.snapshot(), "without If-Match nothing is restored")

	res = h.do(req{Method: http.MethodPost, Path: itemPath(k) + "/restore", Body: `{"revision":1}`,
		Header: map[string]string{"If-Match": deleted["_etag"].(string)}})
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	restored := res.Object(t)
	assert.Equal(t, "draft", restored["status"], "the status is the revision's")
	assert.Equal(t, json.Number("3"), restored["revision"])
	assert.Equal(t, "restore", h.get(itemPath(k) + "/history").Object(t)["revisions"].([]any)[0].(map[string]any)["source"])
}
