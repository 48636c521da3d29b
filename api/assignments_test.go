// Left out of the fuzz builds with the rest of package api_test (see harness_test.go).

//go:build !fuzzing

package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
)

func as(user string) map[string]string { return map[string]string{"X-User-Id": user} }

func (h *harness) selfServe(user string, body any) *response {
	h.t.Helper()
	return h.do(req{Method: http.MethodPost, Path: "/v1/assignments/self-serve", Body: body, Header: as(user)})
}

func (h *harness) my(user string) []string {
	h.t.Helper()
	res := h.do(req{Method: http.MethodGet, Path: "/v1/assignments/my", Header: as(user)})
	require.Equal(h.t, http.StatusOK, res.Status)
	return ids(h.t, res.Array(h.t))
}

func assignPath(k gtc.Key, suffix string) string {
	return "/v1/assignments/" + pathEscape(k.DatasetName) + "/" + k.Bucket + "/" + pathEscape(k.ID) + suffix
}

func drafts(ds string, n int) []map[string]any {
	var out []map[string]any
	for i := range n {
		out = append(out, basicItem(ds, fmt.Sprintf("%s-%03d", ds, i)))
	}
	return out
}

func TestSelfServeFillsTheQueue(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	items := drafts("support", 12)
	held := basicItem("support", "held")
	held["assignedTo"], held["assignedAt"] = "bob@example.com", "2025-01-01T00:00:00Z"
	skippedByMe := basicItem("support", "skipped-mine")
	skippedByMe["status"], skippedByMe["assignedTo"] = "skipped", "alice@example.com"
	skippedByBob := basicItem("support", "skipped-bob")
	skippedByBob["status"], skippedByBob["assignedTo"] = "skipped", "bob@example.com"
	approved := basicItem("support", "done")
	approved["status"] = "approved"
	h.importItems(append(items, held, skippedByMe, skippedByBob, approved)...)

	res := h.selfServe("alice@example.com", map[string]any{"limit": 5})
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	body := res.Object(t)
	assert.Equal(t, json.Number("5"), body["requested"])
	assert.Equal(t, json.Number("5"), body["assignedCount"])
	assert.Equal(t, json.Number("5"), body["newlyAssigned"])
	got := ids(t, body["assigned"].([]any))
	for _, it := range body["assigned"].([]any) {
		m := it.(map[string]any)
		assert.Equal(t, "alice@example.com", m["assignedTo"])
		assert.Equal(t, "draft", m["status"])
		assert.Equal(t, "2025-01-02T10:00:00.000Z", m["assignedAt"])
		assert.NotContains(t, []string{"held", "skipped-mine", "done"}, m["id"], "only the pool is drawn from")
	}
	assert.ElementsMatch(t, got, h.my("alice@example.com"))

	// Topping up keeps what I hold without rewriting it.
	before := map[string]any{}
	for _, it := range body["assigned"].([]any) {
		m := it.(map[string]any)
		before[m["id"].(string)] = m["_etag"]
	}
	h.clock.Advance(time.Minute)
	res = h.selfServe("alice@example.com", map[string]any{"limit": 7})
	body = res.Object(t)
	assert.Equal(t, json.Number("7"), body["assignedCount"])
	assert.Equal(t, json.Number("2"), body["newlyAssigned"])
	assigned := body["assigned"].([]any)
	queue := h.my("alice@example.com")
	for i, it := range assigned[:5] {
		m := it.(map[string]any)
		assert.Equal(t, queue[i], m["id"], "my current items come first, in queue order")
		assert.Equal(t, before[m["id"].(string)], m["_etag"], "items already mine are not written again")
	}
	assert.NotContains(t, ids(t, assigned), "skipped-mine", "my own skipped item is not handed back to me")

	// Asking for no more than I hold writes nothing.
	res = h.selfServe("alice@example.com", map[string]any{"limit": 3})
	body = res.Object(t)
	assert.Equal(t, json.Number("3"), body["assignedCount"])
	assert.Equal(t, json.Number("0"), body["newlyAssigned"])

	// Without a body the default limit applies; the pool runs dry gracefully.
	res = h.selfServe("carol@example.com", nil)
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	body = res.Object(t)
	assert.Equal(t, json.Number("10"), body["requested"])
	// 12 drafts - 7 taken by alice, plus both skipped items: a skipped item goes back into
	// the pool for everyone but its assignee.
	assert.Equal(t, json.Number("7"), body["assignedCount"])
	carols := ids(t, body["assigned"].([]any))
	assert.Contains(t, carols, "skipped-mine")
	assert.Contains(t, append(carols, h.my("alice@example.com")...), "skipped-bob", "bob's skipped item went to alice or carol")
}

func TestSelfServeLimits(t *testing.T) {
	t.Parallel()
	h := newHarnessWith(t, func(d *gtc.CuratorDeps) { d.SelfServe.MaxLimit = 3 })
	h.importItems(drafts("d", 6)...)
	res := h.selfServe("u", map[string]any{"limit": 50})
	require.Equal(t, http.StatusOK, res.Status)
	assert.Equal(t, json.Number("3"), res.Object(t)["requested"], "clamped to GTC_SELF_SERVE_MAX")
	before := h.snapshot()
	for _, bad := range []string{`{"limit": -1}`, `{"limit": 0}`, `{"limit": 1.5}`, `{"limit": "5"}`, `{"limit": 99999999999}`,
		`{"limit": 1e40}`, `{"limit": 2, "extra": 1}`, `[1]`} {
		res := h.selfServe("v", bad)
		require.Equal(t, http.StatusUnprocessableEntity, res.Status, bad)
	}
	assert.Equal(t, before, h.snapshot(), "a refused self-serve writes nothing")
	res = h.selfServe("v", `{"limit": null}`)
	assert.Equal(t, json.Number("3"), res.Object(t)["requested"], "a null limit means the default (clamped)")
}

func TestSelfServeConcurrentCuratorsNeverShareAnItem(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.importItems(drafts("pool", 150)...)
	var wg sync.WaitGroup
	results := make([][]string, 20)
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := h.selfServe(fmt.Sprintf("curator-%02d@example.com", i), map[string]any{"limit": 10})
			if res.Status != http.StatusOK {
				t.Errorf("self-serve %d: %d %s", i, res.Status, res.Body)
				return
			}
			results[i] = ids(t, res.Object(t)["assigned"].([]any))
		}()
	}
	wg.Wait()
	owner := map[string]string{}
	total := 0
	for i, got := range results {
		user := fmt.Sprintf("curator-%02d@example.com", i)
		for _, id := range got {
			if prev, dup := owner[id]; dup {
				t.Errorf("item %s answered to both %s and %s", id, prev, user)
			}
			owner[id] = user
			total++
		}
	}
	// Every item ends with exactly one assignee, the one it was answered to.
	for it, err := range h.store.Items().QueryAll(context.Background(), gtc.Query{Sort: gtc.SortID, Limit: 1000}) {
		require.NoError(t, err)
		if u, ok := owner[it.ID]; ok {
			require.NotNil(t, it.AssignedTo, it.ID)
			assert.Equal(t, u, *it.AssignedTo, it.ID)
		} else {
			assert.Nil(t, it.AssignedTo, "%s was claimed but not answered", it.ID)
		}
	}
	assert.Equal(t, 150, total, "20 curators × 10 over 150 items: the pool is used up, never over-given")
}

func TestSelfServeAllocationAcrossDatasets(t *testing.T) {
	t.Parallel()
	alloc, ignored := gtc.ParseAllocation("team-a:3, team-b:1, bad, team-c:-2")
	assert.Equal(t, []string{"bad", "team-c:-2"}, ignored)
	h := newHarnessWith(t, func(d *gtc.CuratorDeps) { d.SelfServe.Allocation = alloc })
	h.importItems(append(append(drafts("team-a-x", 30), drafts("team-b-y", 30)...), drafts("other", 30)...)...)
	res := h.selfServe("u", map[string]any{"limit": 8})
	got := ids(t, res.Object(t)["assigned"].([]any))
	require.Len(t, got, 8)
	count := map[string]int{}
	for _, id := range got {
		count[id[:6]]++
	}
	assert.Equal(t, map[string]int{"team-a": 6, "team-b": 2}, count, "quotas 8×3/4 and 8×1/4")
	assert.True(t, strings.HasPrefix(got[0], "team-a") && strings.HasPrefix(got[1], "team-b"), "interleaved by weight: %v", got)

	// When a prefix runs dry, the rest comes from the whole pool.
	h2 := newHarnessWith(t, func(d *gtc.CuratorDeps) { d.SelfServe.Allocation = alloc })
	h2.importItems(append(drafts("team-a-x", 2), drafts("other", 20)...)...)
	got = ids(t, h2.selfServe("u", map[string]any{"limit": 6}).Object(t)["assigned"].([]any))
	require.Len(t, got, 6)
	n := 0
	for _, id := range got {
		if strings.HasPrefix(id, "team-a") {
			n++
		}
	}
	assert.Equal(t, 2, n)

	// Without an allocation the draw is spread over the datasets.
	h3 := newHarness(t)
	h3.importItems(append(drafts("one", 50), drafts("two", 50)...)...)
	spread := map[string]int{}
	for i := range 10 {
		for _, id := range ids(t, h3.selfServe(fmt.Sprintf("u%d", i), map[string]any{"limit": 10}).Object(t)["assigned"].([]any)) {
			spread[id[:3]]++
		}
	}
	assert.InDelta(t, 50, spread["one"], 20, "uniform draws: about half from each dataset, got %v", spread)
}

func TestAssignmentPutOwnershipAndEffects(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	it := basicItem("support", "gt-1")
	it["assignedTo"], it["assignedAt"] = "alice@example.com", "2025-01-01T00:00:00Z"
	h.importItems(it, basicItem("support", "free"))
	k := h.key("support", "gt-1")
	etag := h.item("support", "gt-1")["_etag"].(string)
	before := h.snapshot()

	put := func(user, etag string, body any) *response {
		return h.do(req{Method: http.MethodPut, Path: assignPath(k, ""), Body: body, Header: map[string]string{"X-User-Id": user, "If-Match": etag}})
	}
	res := put("mallory@example.com", etag, map[string]any{"status": "approved"})
	require.Equal(t, http.StatusForbidden, res.Status)
	assert.Equal(t, map[string]any{"detail": "ASSIGNMENT_OWNERSHIP", "status": json.Number("403"), "code": "ASSIGNMENT_OWNERSHIP"}, res.Object(t))
	res = put("mallory@example.com", "", map[string]any{"computedTags": []any{}})
	assert.Equal(t, "FIELD_NOT_ALLOWED", res.Object(t)["code"], "output-only keys are refused before ownership")
	res = put("mallory@example.com", "", map[string]any{"comment": "x"})
	assert.Equal(t, http.StatusForbidden, res.Status, "ownership comes before the ETag check")
	res = put("alice@example.com", "", map[string]any{"comment": "x"})
	assert.Equal(t, http.StatusPreconditionFailed, res.Status)
	res = put("alice@example.com", etag, map[string]any{"status": "approved", "history": []any{map[string]any{"role": "user", "msg": "only"}},
		"toolCalls": []any{map[string]any{"name": "search"}}, "expectedTools": map[string]any{"required": []any{"fetch"}}})
	require.Equal(t, http.StatusBadRequest, res.Status)
	assert.Equal(t, map[string]any{"code": "INVALID_APPROVAL", "status": json.Number("400"),
		"detail": "Item cannot be approved: history must include at least one agent message; expectedTools.required references toolCalls that do not exist: fetch",
		"errors": []any{
			map[string]any{"field": "history", "message": "history must include at least one agent message"},
			map[string]any{"field": "expectedTools.required", "message": "expectedTools.required references toolCalls that do not exist: fetch"},
		}}, res.Object(t), "every failed rule is listed")
	assert.Equal(t, before, h.snapshot(), "refused assignment PUTs change nothing")

	// The frontend's full patch: extra keys come back unchanged.
	full := map[string]any{
		"status": "draft", "manualTags": []any{"source:sme"}, "comment": nil,
		"history": []any{
			map[string]any{"role": "user", "msg": "Q?", "turnId": "t1", "stepId": "s1"},
			map[string]any{"role": "assistant", "msg": "A.", "turnId": "t2", "expectedBehavior": []any{"generation:answer"}},
		},
		"contextEntries": []any{}, "toolCalls": []any{}, "expectedTools": map[string]any{"required": []any{}, "optional": []any{}, "notNeeded": []any{}},
		"feedback": []any{}, "metadata": map[string]any{"k": 1}, "traceIds": map[string]any{"traceId": "abc"}, "tracePayload": map[string]any{},
		"plugins": map[string]any{"rag-compat": map[string]any{"kind": "rag-compat", "version": "1.0", "data": map[string]any{"references": []any{
			map[string]any{"url": "https://docs.example.com/x", "visitedAt": "2025-01-02T10:01:00.000Z", "keyParagraph": "p", "id": "r1", "turnId": "t2"},
		}}}},
	}
	res = put("alice@example.com", etag, full)
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	saved := res.Object(t)
	assert.Equal(t, "alice@example.com", saved["assignedTo"], "a draft save keeps the assignment")
	assert.Equal(t, full["history"].([]any)[1], saved["history"].([]any)[1])
	ref := saved["plugins"].(map[string]any)["rag-compat"].(map[string]any)["data"].(map[string]any)["references"].([]any)[0]
	assert.Equal(t, full["plugins"].(map[string]any)["rag-compat"].(map[string]any)["data"].(map[string]any)["references"].([]any)[0], ref)

	// Skip keeps the assignment and leaves /my.
	res = put("alice@example.com", saved["_etag"].(string), map[string]any{"status": "skipped"})
	require.Equal(t, http.StatusOK, res.Status)
	assert.Equal(t, "alice@example.com", res.Object(t)["assignedTo"])
	assert.NotContains(t, h.my("alice@example.com"), "gt-1")

	// approve:true without status approves; the assignment is cleared and the review stamped.
	h.clock.Advance(time.Hour)
	res = put("alice@example.com", res.Object(t)["_etag"].(string), map[string]any{"approve": true})
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	approved := res.Object(t)
	assert.Equal(t, "approved", approved["status"])
	assert.Nil(t, approved["assignedTo"])
	assert.Nil(t, approved["assignedAt"])
	assert.Equal(t, "alice@example.com", approved["updatedBy"])
	assert.Equal(t, "2025-01-02T11:00:00.000Z", approved["reviewedAt"])

	// With status present, approve is ignored.
	k2 := h.key("support", "free")
	e2 := h.item("support", "free")["_etag"].(string)
	res = h.do(req{Method: http.MethodPut, Path: assignPath(k2, ""), Body: map[string]any{"status": "draft", "approve": true},
		Header: map[string]string{"X-User-Id": "anyone", "If-Match": e2}})
	require.Equal(t, http.StatusOK, res.Status, "an unassigned item may be edited by anyone")
	assert.Equal(t, "draft", res.Object(t)["status"])
	assert.Nil(t, res.Object(t)["reviewedAt"])
	// Delete through the assignment route clears the assignment.
	res = h.do(req{Method: http.MethodPut, Path: assignPath(k2, ""), Body: map[string]any{"status": "deleted"},
		Header: map[string]string{"X-User-Id": "anyone", "If-Match": res.Object(t)["_etag"].(string)}})
	require.Equal(t, http.StatusOK, res.Status)
	assert.Nil(t, res.Object(t)["assignedTo"])
}

func TestAssign(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	bobs := basicItem("d", "bobs")
	bobs["assignedTo"], bobs["assignedAt"] = "bob@example.com", "2025-01-01T08:00:00Z"
	approvedByBob := basicItem("d", "approved-bob")
	approvedByBob["status"], approvedByBob["assignedTo"] = "approved", "bob@example.com"
	gone := basicItem("d", "gone")
	gone["status"] = "deleted"
	h.importItems(bobs, approvedByBob, gone, basicItem("d", "free"))
	assign := func(id, user string, body any, roles string) *response {
		hd := as(user)
		if roles != "" {
			hd["X-User-Roles"] = roles
		}
		return h.do(req{Method: http.MethodPost, Path: assignPath(h.key("d", id), "/assign"), Body: body, Header: hd})
	}
	before := h.snapshot()
	res := assign("bobs", "alice", nil, "")
	require.Equal(t, http.StatusConflict, res.Status)
	assert.Equal(t, map[string]any{"detail": "Item is assigned to another curator", "status": json.Number("409"), "code": "ASSIGNMENT_CONFLICT",
		"assignedTo": "bob@example.com", "assignedAt": "2025-01-01T08:00:00.000Z"}, res.Object(t))
	res = assign("bobs", "alice", map[string]any{"force": true}, "curator")
	require.Equal(t, http.StatusForbidden, res.Status)
	assert.Equal(t, "FORBIDDEN", res.Object(t)["code"])
	assert.Equal(t, "Forbidden: forcing an assignment needs the admin role; you have the curator role", res.Object(t)["detail"])
	res = assign("gone", "alice", nil, "")
	require.Equal(t, http.StatusBadRequest, res.Status, "a deleted item is not silently restored by assigning it")
	assert.Equal(t, "Item is deleted; restore it before assigning", res.Object(t)["detail"])
	res = assign("bobs", "alice", map[string]any{"force": "yes"}, "admin")
	assert.Equal(t, http.StatusUnprocessableEntity, res.Status)
	res = h.do(req{Method: http.MethodPost, Path: "/v1/assignments/d/" + h.key("d", "free").Bucket + "/nope/assign", Header: as("alice")})
	require.Equal(t, http.StatusNotFound, res.Status)
	assert.Equal(t, "Item not found", res.Object(t)["detail"])
	assert.Equal(t, before, h.snapshot(), "refused assigns change nothing")

	res = assign("bobs", "alice", map[string]any{"force": true}, "Team-Lead")
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	assert.Equal(t, "alice", res.Object(t)["assignedTo"], "a lead takes the item over")
	assert.Equal(t, etagHeader(t, res.Object(t)["_etag"]), res.Header.Get("ETag"))
	assert.Contains(t, h.my("alice"), "bobs")
	assert.NotContains(t, h.my("bob@example.com"), "bobs")

	res = assign("approved-bob", "carol", nil, "")
	require.Equal(t, http.StatusOK, res.Status, "a non-draft item held by someone can be taken; it becomes a draft")
	assert.Equal(t, "draft", res.Object(t)["status"])
	assert.Contains(t, h.my("carol"), "approved-bob")
	res = assign("free", "carol", map[string]any{}, "")
	require.Equal(t, http.StatusOK, res.Status)
	res = assign("free", "carol", nil, "")
	require.Equal(t, http.StatusOK, res.Status, "assigning an item to its assignee again is fine")
}

func TestDuplicate(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	orig := basicItem("support", "Sleek-Voxel")
	orig["assignedTo"], orig["status"] = "alice@example.com", "approved"
	orig["reviewedAt"], orig["updatedBy"] = "2025-01-01T00:00:00Z", "lead"
	orig["comment"], orig["metadata"] = "keep me", map[string]any{"k": 1}
	orig["manualTags"] = []any{"source:sme", "rephrase:sleek-voxel"}
	res := h.do(req{Method: http.MethodPost, Path: "/v1/ground-truths?registerTags=true", Body: []any{orig}})
	require.Equal(t, json.Number("1"), res.Object(t)["imported"], string(res.Body))
	_, err := h.store.TagStore().Remove(context.Background(), []string{"rephrase:sleek-voxel"})
	require.NoError(t, err)
	k := h.key("support", "Sleek-Voxel")
	before := h.item("support", "Sleek-Voxel")

	res = h.do(req{Method: http.MethodPost, Path: assignPath(k, "/duplicate"), Header: as("mallory")})
	require.Equal(t, http.StatusForbidden, res.Status)
	assert.Equal(t, "ASSIGNMENT_OWNERSHIP", res.Object(t)["code"])

	h.clock.Advance(time.Hour)
	res = h.do(req{Method: http.MethodPost, Path: assignPath(k, "/duplicate"), Header: as("alice@example.com"), Body: `{"ignored": true}`})
	require.Equal(t, http.StatusCreated, res.Status, string(res.Body))
	dup := res.Object(t)
	assert.NotEqual(t, "Sleek-Voxel", dup["id"])
	assert.Equal(t, "support", dup["datasetName"])
	assert.Equal(t, k.Bucket, dup["bucket"], "a duplicate keeps the original's bucket")
	assert.Equal(t, "draft", dup["status"])
	assert.Equal(t, "alice@example.com", dup["assignedTo"])
	assert.Equal(t, "alice@example.com", dup["createdBy"])
	assert.Equal(t, "2025-01-02T11:00:00.000Z", dup["createdAt"])
	assert.Nil(t, dup["reviewedAt"])
	assert.Nil(t, dup["updatedBy"])
	assert.Equal(t, "keep me", dup["comment"])
	assert.Equal(t, map[string]any{"k": json.Number("1")}, dup["metadata"])
	assert.Equal(t, before["history"], dup["history"])
	assert.Equal(t, []any{"rephrase:sleek-voxel", "source:sme"}, dup["manualTags"], "the rephrase tag is normalized and added once")
	assert.Equal(t, res.Header.Get("Location"), "/v1/ground-truths/support/"+k.Bucket+"/"+dup["id"].(string))
	assert.Equal(t, etagHeader(t, dup["_etag"]), res.Header.Get("ETag"))
	assert.Contains(t, strs(h.get("/v1/tags").Object(t)["tags"]), "rephrase:sleek-voxel", "the rephrase tag joins the tag store")
	assert.Equal(t, before, h.item("support", "Sleek-Voxel"), "the original is unchanged")
	assert.Contains(t, h.my("alice@example.com"), dup["id"])

	res = h.do(req{Method: http.MethodPost, Path: "/v1/assignments/support/" + k.Bucket + "/missing/duplicate"})
	assert.Equal(t, http.StatusNotFound, res.Status)
}

func TestDeleteKeepsAssignmentAndRestoreThroughAssignmentPut(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	it := basicItem("support", "gt-1")
	it["assignedTo"] = "alice@example.com"
	h.importItems(it)
	k := h.key("support", "gt-1")
	res := h.do(req{Method: http.MethodDelete, Path: itemPath(k), Header: as("alice@example.com")})
	require.Equal(t, http.StatusOK, res.Status)
	got := h.get(itemPath(k)).Object(t)
	assert.Equal(t, "deleted", got["status"])
	assert.NotContains(t, h.my("alice@example.com"), "gt-1", "deleted items never show in a queue")
	res = h.do(req{Method: http.MethodPut, Path: assignPath(k, ""), Body: map[string]any{"status": "draft"},
		Header: map[string]string{"X-User-Id": "alice@example.com", "If-Match": got["_etag"].(string)}})
	require.Equal(t, http.StatusOK, res.Status, "the curate pane restores through the assignment PUT: %s", res.Body)
	assert.Contains(t, h.my("alice@example.com"), "gt-1", "and the item is back in the same queue")
}
