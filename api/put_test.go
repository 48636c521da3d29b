// Left out of the fuzz builds with the rest of package api_test (see harness_test.go).

//go:build !fuzzing

package api_test

import (
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
)

func sortStrings(s []string) { sort.Strings(s) }

// put sends a curator PUT with If-Match.
func (h *harness) put(k gtc.Key, etag string, body any) *response {
	h.t.Helper()
	hd := map[string]string{}
	if etag != "" {
		hd["If-Match"] = etag
	}
	return h.do(req{Method: http.MethodPut, Path: itemPath(k), Body: body, Header: hd})
}

func TestPutUpdatesAndReturnsNewETag(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.importItems(basicItem("support", "gt-1"))
	k := h.key("support", "gt-1")
	before := h.item("support", "gt-1")
	etag := before["_etag"].(string)

	h.clock.Advance(time.Minute)
	res := h.put(k, etag, map[string]any{
		"comment": "checked", "manualTags": []any{" Topic : Install ", "turns:multiturn"},
		"history": []any{
			map[string]any{"role": " user ", "content": "  Where is it? ", "turnId": "t1"},
			map[string]any{"role": "assistant", "msg": "Here.", "stepId": "s9", "expected_behavior": []any{"generation:answer"}},
			map[string]any{"role": "user", "msg": "And then?"},
		},
	})
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	it := res.Object(t)
	assert.NotEqual(t, etag, it["_etag"], "every write issues a new token")
	assert.Equal(t, etagHeader(t, it["_etag"]), res.Header.Get("ETag"))
	assert.Equal(t, "checked", it["comment"])
	assert.Equal(t, []any{"topic:install"}, it["manualTags"], "normalized, and computed keys silently stripped")
	assert.Contains(t, it["computedTags"], "turns:multiturn", "computed tags are recomputed from the new history")
	assert.Equal(t, "2025-01-02T10:01:00.000Z", it["updatedAt"])
	assert.Nil(t, it["reviewedAt"], "only saving as approved stamps reviewedAt")
	assert.Equal(t, []any{
		map[string]any{"role": "user", "msg": "Where is it?", "turnId": "t1"},
		map[string]any{"role": "assistant", "msg": "Here.", "stepId": "s9", "expectedBehavior": []any{"generation:answer"}},
		map[string]any{"role": "user", "msg": "And then?"},
	}, it["history"], "msg falls back to content; the snake_case alias is accepted; values trimmed")
	assert.Equal(t, it, h.item("support", "gt-1"), "GET returns what PUT returned")

	// The quoted header form and the raw token both match; a body etag works too.
	res = h.put(k, res.Header.Get("ETag"), map[string]any{"comment": "again"})
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	res = h.put(k, "", map[string]any{"comment": nil, "etag": res.Object(t)["_etag"]})
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	assert.Equal(t, "", res.Object(t)["comment"], "null comment means empty")
	res = h.put(k, "W/"+res.Header.Get("ETag"), map[string]any{})
	require.Equal(t, http.StatusOK, res.Status, "a weak-prefixed token matches; an empty PUT still writes")
}

func TestPutApproval(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	onlyQ := map[string]any{"id": "q", "datasetName": "ds", "history": []any{map[string]any{"role": "user", "msg": "q"}}}
	tools := basicItem("ds", "tools")
	tools["toolCalls"] = []any{map[string]any{"name": "search"}}
	bypass := basicItem("ds", "bypass")
	bypass["toolCalls"] = []any{map[string]any{"name": "search"}}
	bypass["plugins"] = map[string]any{"custom": map[string]any{"kind": "custom", "data": map[string]any{"canBypassRequiredTools": true}}}
	h.importItems(onlyQ, tools, bypass, basicItem("ds", "fine"))

	approve := func(id string, extra map[string]any) *response {
		body := map[string]any{"status": "approved"}
		for k, v := range extra {
			body[k] = v
		}
		it := h.item("ds", id)
		return h.do(req{Method: http.MethodPut, Path: itemPath(h.key("ds", id)), Body: body,
			Header: map[string]string{"If-Match": it["_etag"].(string), "X-User-Id": "reviewer@example.com"}})
	}
	res := approve("q", nil)
	require.Equal(t, http.StatusBadRequest, res.Status)
	assert.Equal(t, map[string]any{"detail": "Item cannot be approved: history must include at least one agent message", "status": json.Number("400"),
		"code": "INVALID_APPROVAL", "errors": fieldErrors([]gtc.FieldError{{Field: "history", Message: "history must include at least one agent message"}})}, res.Object(t))

	res = approve("tools", map[string]any{"expectedTools": map[string]any{"required": []any{"fetch"}}})
	require.Equal(t, http.StatusBadRequest, res.Status)
	assert.Equal(t, "Item cannot be approved: expectedTools.required references toolCalls that do not exist: fetch", res.Object(t)["detail"])

	res = approve("tools", nil)
	require.Equal(t, http.StatusBadRequest, res.Status)
	assert.Equal(t, "Item cannot be approved: expectedTools.required must include at least one tool before approval when toolCalls are present", res.Object(t)["detail"])

	res = approve("bypass", nil)
	require.Equal(t, http.StatusOK, res.Status, "canBypassRequiredTools waives the required-tool check: %s", res.Body)

	res = approve("fine", nil)
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	it := res.Object(t)
	assert.Equal(t, "reviewer@example.com", it["updatedBy"])
	assert.Equal(t, "2025-01-02T10:00:00.000Z", it["reviewedAt"])

	// Editing an approved item re-validates it, without restamping.
	h.clock.Advance(time.Hour)
	res = h.do(req{Method: http.MethodPut, Path: itemPath(h.key("ds", "fine")), Header: map[string]string{"If-Match": it["_etag"].(string)},
		Body: map[string]any{"history": []any{map[string]any{"role": "user", "msg": "only a question now"}}}})
	require.Equal(t, http.StatusBadRequest, res.Status, "an approved item must stay approvable")
	res = h.do(req{Method: http.MethodPut, Path: itemPath(h.key("ds", "fine")), Header: map[string]string{"If-Match": it["_etag"].(string), "X-User-Id": "someone-else"},
		Body: map[string]any{"comment": "edit"}})
	require.Equal(t, http.StatusOK, res.Status)
	assert.Equal(t, "reviewer@example.com", res.Object(t)["updatedBy"], "an edit without status does not restamp")
	// Back to draft keeps the review stamps.
	res = h.do(req{Method: http.MethodPut, Path: itemPath(h.key("ds", "fine")), Header: map[string]string{"If-Match": res.Object(t)["_etag"].(string)},
		Body: map[string]any{"status": "draft"}})
	require.Equal(t, http.StatusOK, res.Status)
	assert.Equal(t, "2025-01-02T10:00:00.000Z", res.Object(t)["reviewedAt"])
}

func TestPutRefusalsInCheckOrderAndNothingStored(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", gtc.MaxItemBytes)
	cases := []struct {
		name    string
		path    string // "" = the item
		etag    string // "current", "stale", "" (none)
		body    any
		status  int
		code    string
		detail  string
		fields  []gtc.FieldError
		noCheck bool
	}{
		{name: "unknown keys are 422 even with a stale token", etag: "stale", body: `{"answer": "x", "_etag": "y", "approve": true}`,
			status: 422, code: "VALIDATION_ERROR", detail: "Request validation failed: answer: unknown field (and 2 more)",
			fields: []gtc.FieldError{{Field: "answer", Message: "unknown field"}, {Field: "_etag", Message: "unknown field"}, {Field: "approve", Message: "unknown field"}}},
		{name: "wrong types", etag: "current", body: `{"status": 1, "manualTags": ["a:b", 2], "history": [{"role": "user", "msg": 3}]}`,
			status: 422, code: "VALIDATION_ERROR", fields: []gtc.FieldError{{Field: "status", Message: "expected string"}, {Field: "manualTags[1]", Message: "expected string"}, {Field: "history[0].msg", Message: "expected string"}}},
		{name: "negative stepNumber", etag: "current", body: map[string]any{"toolCalls": []any{map[string]any{"name": "s", "stepNumber": -2}}},
			status: 422, code: "VALIDATION_ERROR", fields: []gtc.FieldError{{Field: "toolCalls[0].stepNumber", Message: "toolCalls[].stepNumber cannot be negative"}}},
		{name: "a tool in two expectedTools lists", etag: "current", body: map[string]any{"expectedTools": map[string]any{"required": []any{map[string]any{"name": "b"}, "a"}, "notNeeded": []any{"a", "b"}}},
			status: 422, code: "VALIDATION_ERROR", fields: []gtc.FieldError{{Field: "expectedTools", Message: "tools cannot appear in more than one category: a, b"}}},
		{name: "bad bucket with bad body", path: "/v1/ground-truths/support/xyz/gt-1", etag: "current", body: map[string]any{"nope": 1},
			status: 422, code: "VALIDATION_ERROR", fields: []gtc.FieldError{{Field: "path.bucket", Message: "must be a UUID"}, {Field: "nope", Message: "unknown field"}}},
		{name: "missing body", etag: "current", body: nil, status: 422, code: "VALIDATION_ERROR", fields: []gtc.FieldError{{Field: "body", Message: "required"}}},
		{name: "malformed JSON", etag: "current", body: `{"comment": "x",}`, status: 422, code: "INVALID_JSON"},
		{name: "invalid UTF-8", etag: "current", body: []byte("{\"comment\": \"\xff\"}"), status: 422, code: "INVALID_JSON"},
		{name: "trailing data", etag: "current", body: `{} {}`, status: 422, code: "INVALID_JSON"},
		{name: "body is not an object", etag: "current", body: `[1]`, status: 422, code: "VALIDATION_ERROR", fields: []gtc.FieldError{{Field: "body", Message: "expected object"}}},
		{name: "missing item before output-only keys", path: "/v1/ground-truths/support/00000000-0000-0000-0000-000000000001/gt-1", etag: "stale",
			body: map[string]any{"tags": []any{}}, status: 404, code: "NOT_FOUND", detail: "Item not found"},
		{name: "output-only keys before the ETag", etag: "", body: map[string]any{"tags": []any{"a:b"}, "computedTags": []any{}},
			status: 400, code: "FIELD_NOT_ALLOWED", detail: "computedTags cannot be set directly; they are system-generated",
			fields: []gtc.FieldError{{Field: "computedTags", Message: "computedTags cannot be set directly; they are system-generated"}, {Field: "tags", Message: "'tags' field is deprecated; use 'manualTags' instead"}}},
		{name: "tags alone", etag: "current", body: map[string]any{"tags": nil}, status: 400, code: "FIELD_NOT_ALLOWED", detail: "'tags' field is deprecated; use 'manualTags' instead",
			fields: []gtc.FieldError{{Field: "tags", Message: "'tags' field is deprecated; use 'manualTags' instead"}}},
		{name: "ETag required before field semantics", etag: "", body: map[string]any{"status": "bogus"}, status: 412, code: "ETAG_REQUIRED", detail: "ETag required"},
		{name: "blank body etag counts as absent", etag: "", body: map[string]any{"etag": "  "}, status: 412, code: "ETAG_REQUIRED", detail: "ETag required"},
		{name: "field semantics, all listed in document order, code of the first", etag: "stale",
			body:   `{"status": null, "expectedTools": null, "manualTags": ["bad", "x:y"], "history": [{"role": " ", "msg": "  "}, {"role": "user", "expectedBehavior": "x"}], "comment": "ok"}`,
			status: 400, code: "INVALID_FIELD", detail: "status cannot be null; omit the field to leave it unchanged",
			fields: []gtc.FieldError{
				{Field: "status", Message: "status cannot be null; omit the field to leave it unchanged"},
				{Field: "expectedTools", Message: "expectedTools cannot be null; omit the field to leave it unchanged"},
				{Field: "history[0].msg", Message: "history entries must include a non-empty msg"},
				{Field: "history[0].role", Message: "history entries must include a non-empty role"},
				{Field: "history[1].msg", Message: "history entries must include a non-empty msg"},
				{Field: "history[1].expectedBehavior", Message: "history expectedBehavior must be a list when provided"},
				{Field: "manualTags[0]", Message: "Invalid tag format (expected group:value): 'bad'"},
			}},
		{name: "a status problem after others gives the first code", etag: "stale", body: `{"manualTags": ["bad"], "status": "nope"}`,
			status: 400, code: "INVALID_STATUS", detail: "Invalid status value: nope. Must be one of: draft, approved, skipped, deleted",
			fields: []gtc.FieldError{
				{Field: "status", Message: "Invalid status value: nope. Must be one of: draft, approved, skipped, deleted"},
				{Field: "manualTags[0]", Message: "Invalid tag format (expected group:value): 'bad'"},
			}},
		{name: "invalid status", etag: "stale", body: map[string]any{"status": "done"}, status: 400, code: "INVALID_STATUS",
			detail: "Invalid status value: done. Must be one of: draft, approved, skipped, deleted",
			fields: []gtc.FieldError{{Field: "status", Message: "Invalid status value: done. Must be one of: draft, approved, skipped, deleted"}}},
		{name: "tag format alone", etag: "current", body: map[string]any{"manualTags": []any{"ok:1", " : "}}, status: 400, code: "INVALID_TAG_FORMAT",
			detail: "Invalid tag format (empty group or value): ' : '", fields: []gtc.FieldError{{Field: "manualTags[1]", Message: "Invalid tag format (empty group or value): ' : '"}}},
		{name: "tag rules with a stale token", etag: "stale", body: map[string]any{"manualTags": []any{"difficulty:easy", "difficulty:hard", "source:sa", "source:user"}},
			status: 400, code: "TAG_RULE_VIOLATION",
			detail: "Group 'difficulty' is exclusive; only one value allowed, got: ['easy', 'hard']; Group 'source' is exclusive; only one value allowed, got: ['sa', 'user']",
			fields: []gtc.FieldError{{Field: "manualTags", Message: "Group 'difficulty' is exclusive; only one value allowed, got: ['easy', 'hard']"}, {Field: "manualTags", Message: "Group 'source' is exclusive; only one value allowed, got: ['sa', 'user']"}}},
		{name: "approval with a stale token", etag: "stale", body: map[string]any{"status": "approved", "history": []any{}}, status: 400, code: "INVALID_APPROVAL",
			detail: "Item cannot be approved: history must contain at least one conversation message"},
		{name: "too large", etag: "stale", body: map[string]any{"comment": big}, status: 400, code: "ITEM_TOO_LARGE", detail: "Item exceeds the storage limit of 1.5 MiB"},
		{name: "stale token", etag: "stale", body: map[string]any{"comment": "x"}, status: 412, code: "ETAG_MISMATCH", detail: "ETag mismatch"},
		{name: "star is an ordinary token", etag: "*", body: map[string]any{"comment": "x"}, status: 412, code: "ETAG_MISMATCH", detail: "ETag mismatch"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			h.importItems(basicItem("support", "gt-1"))
			k := h.key("support", "gt-1")
			cur := h.item("support", "gt-1")["_etag"].(string)
			// Make a stale token by writing once more.
			res := h.put(k, cur, map[string]any{"comment": "newer"})
			require.Equal(t, http.StatusOK, res.Status)
			stale, current := cur, res.Object(t)["_etag"].(string)
			before := h.snapshot()
			tok := map[string]string{"current": current, "stale": stale, "": "", "*": "*"}[tc.etag]
			path := tc.path
			if path == "" {
				path = itemPath(k)
			}
			hd := map[string]string{}
			if tok != "" {
				hd["If-Match"] = tok
			}
			res = h.do(req{Method: http.MethodPut, Path: path, Body: tc.body, Header: hd})
			require.Equal(t, tc.status, res.Status, string(res.Body))
			body := res.Object(t)
			assert.Equal(t, tc.code, body["code"])
			if tc.detail != "" {
				assert.Equal(t, tc.detail, body["detail"])
			}
			if tc.fields != nil {
				assert.Equal(t, fieldErrors(tc.fields), body["errors"])
			}
			assert.Equal(t, before, h.snapshot(), "a refused PUT writes nothing")
		})
	}
}

func TestDeleteIsSoftAndRestorable(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	item := basicItem("support", "gt-1")
	item["assignedTo"] = "alice@example.com"
	item["assignedAt"] = "2025-01-01T00:00:00Z"
	h.importItems(item)
	k := h.key("support", "gt-1")
	etag := h.item("support", "gt-1")["_etag"].(string)

	res := h.do(req{Method: http.MethodDelete, Path: itemPath(k), Header: map[string]string{"If-Match": `"not-it"`}})
	require.Equal(t, http.StatusPreconditionFailed, res.Status)
	assert.Equal(t, "ETag mismatch", res.Object(t)["detail"])

	h.clock.Advance(time.Minute)
	res = h.do(req{Method: http.MethodDelete, Path: itemPath(k), Header: map[string]string{"If-Match": etag}})
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	assert.Equal(t, map[string]any{"status": "deleted"}, res.Object(t))
	it := h.item("support", "gt-1")
	assert.Equal(t, "deleted", it["status"], "the deleted item stays readable")
	assert.Equal(t, "alice@example.com", it["assignedTo"], "soft delete keeps the assignment")
	assert.Equal(t, "2025-01-02T10:01:00.000Z", it["updatedAt"])
	deletedETag := it["_etag"]

	res = h.do(req{Method: http.MethodDelete, Path: itemPath(k)})
	require.Equal(t, http.StatusOK, res.Status, "deleting again answers 200")
	assert.Equal(t, deletedETag, h.item("support", "gt-1")["_etag"], "an already deleted item is not written again")

	res = h.put(k, deletedETag.(string), map[string]any{"status": "draft"})
	require.Equal(t, http.StatusOK, res.Status, "the explorer restores with a PUT of status draft")
	assert.Equal(t, "draft", res.Object(t)["status"])

	res = h.do(req{Method: http.MethodDelete, Path: "/v1/ground-truths/support/" + k.Bucket + "/missing"})
	require.Equal(t, http.StatusNotFound, res.Status)
	assert.Equal(t, "Item not found", res.Object(t)["detail"])
}
