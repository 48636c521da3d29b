// Left out of the fuzz builds with the rest of package api_test (see harness_test.go).

//go:build !fuzzing

package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
)

var staticKeys = []any{"answer:no_answer", "question_length:long", "question_length:medium", "question_length:short",
	"reference_type:article", "reference_type:helpcenter", "retrieval_behavior:no_refs", "retrieval_behavior:rich",
	"retrieval_behavior:single", "retrieval_behavior:two_refs", "turns:multiturn", "turns:singleturn"}

func strs(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

func TestTagVocabularyEndpoints(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	res := h.get("/v1/tags")
	require.Equal(t, http.StatusOK, res.Status)
	body := res.Object(t)
	assert.Equal(t, staticKeys, body["computedTags"])
	known := strs(body["tags"])
	assert.Len(t, known, 25, "the six built-in groups hold 25 tags")
	assert.Contains(t, known, "source:sme")
	assert.NotContains(t, known, "custom:escalation")

	res = h.do(req{Method: http.MethodPost, Path: "/v1/tags", Body: map[string]any{"tags": []any{" Custom : Escalation ", "turns:multiturn", "dataset:x"}}})
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	body = res.Object(t)
	assert.Equal(t, []any{"dataset:x", "turns:multiturn"}, body["ignored"], "computed keys are refused, never stored")
	assert.Contains(t, strs(body["tags"]), "custom:escalation")
	assert.Equal(t, staticKeys, body["computedTags"])
	stored, err := h.store.TagStore().List(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []string{"custom:escalation"}, stored)

	before := h.snapshotTags()
	res = h.do(req{Method: http.MethodPost, Path: "/v1/tags", Body: map[string]any{"tags": []any{"good:one", "nocolon", " : "}}})
	require.Equal(t, http.StatusBadRequest, res.Status)
	body = res.Object(t)
	assert.Equal(t, "INVALID_TAG_FORMAT", body["code"])
	assert.Equal(t, "Invalid tag format (expected group:value): 'nocolon'", body["detail"])
	assert.Equal(t, fieldErrors([]gtc.FieldError{
		{Field: "tags[1]", Message: "Invalid tag format (expected group:value): 'nocolon'"},
		{Field: "tags[2]", Message: "Invalid tag format (empty group or value): ' : '"},
	}), body["errors"])
	assert.Equal(t, before, h.snapshotTags(), "a refused POST stores nothing, not even the good tag")

	for name, tag := range map[string]string{
		"over-long": "custom:" + strings.Repeat("x", 100),
		"comma":     "custom:a,b",
		"control":   "custom:a\x07b",
	} {
		res = h.do(req{Method: http.MethodPost, Path: "/v1/tags", Body: map[string]any{"tags": []any{tag}}})
		require.Equal(t, http.StatusBadRequest, res.Status, name)
		assert.Equal(t, "INVALID_TAG_FORMAT", res.Object(t)["code"], name)
		assert.Contains(t, res.Object(t)["detail"], "Invalid tag format", name)
	}
	assert.Equal(t, before, h.snapshotTags())

	for _, bad := range []string{`{}`, `{"tags": "a:b"}`, `{"tags": [1]}`, `{"tags": null}`, `{"tags": [], "x": 1}`, `[]`} {
		res = h.do(req{Method: http.MethodPost, Path: "/v1/tags", Body: bad})
		assert.Equal(t, http.StatusUnprocessableEntity, res.Status, bad)
	}

	res = h.do(req{Method: http.MethodDelete, Path: "/v1/tags", Body: map[string]any{"tags": []any{"CUSTOM:escalation", "source:sme", "not:there"}}})
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	body = res.Object(t)
	_, hasIgnored := body["ignored"]
	assert.False(t, hasIgnored)
	assert.NotContains(t, strs(body["tags"]), "custom:escalation")
	assert.Contains(t, strs(body["tags"]), "source:sme", "a tag of the groups file stays known")
	res = h.do(req{Method: http.MethodDelete, Path: "/v1/tags", Body: map[string]any{"tags": []any{"bad"}}})
	assert.Equal(t, http.StatusBadRequest, res.Status)
}

func (h *harness) snapshotTags() []string {
	h.t.Helper()
	tags, err := h.store.TagStore().List(context.Background())
	require.NoError(h.t, err)
	return tags
}

func TestTagSchemaAndGlossary(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	res := h.get("/v1/tags/schema")
	require.Equal(t, http.StatusOK, res.Status)
	body := res.Object(t)
	assert.Equal(t, "v1", body["version"])
	groups := body["groups"].([]any)
	var names []string
	for _, g := range groups {
		names = append(names, g.(map[string]any)["name"].(string))
	}
	assert.Equal(t, []string{"answerability", "difficulty", "expertise", "intent", "source", "topic"}, names, "sorted by name")
	assert.Equal(t, map[string]any{"name": "answerability", "values": []any{"answerable", "not_answerable", "should_not_answer"},
		"exclusive": true, "depends_on": []any{}}, groups[0])

	res = h.get("/v1/tags/glossary")
	require.Equal(t, http.StatusOK, res.Status)
	body = res.Object(t)
	gl := body["groups"].([]any)
	require.Len(t, gl, 7, "six manual groups and the computed group; no custom group without definitions")
	first := gl[0].(map[string]any)
	assert.Equal(t, "source", first["name"], "manual groups keep the file order")
	assert.Equal(t, "manual", first["type"])
	assert.Equal(t, "Where the item came from", first["description"])
	assert.Equal(t, map[string]any{"key": "source:other", "description": "Any other origin"}, first["tags"].([]any)[0])
	comp := gl[6].(map[string]any)
	assert.Equal(t, "computed", comp["type"])
	assert.Equal(t, "Derived by the server from each item's content; read-only", comp["description"])
	assert.Equal(t, map[string]any{"key": "answer:no_answer", "description": "The final agent answer is the no_answer marker."}, comp["tags"].([]any)[0])

	res = h.do(req{Method: http.MethodPost, Path: "/v1/tags/definitions?user_id=mallory", Header: map[string]string{"X-User-Id": "alice@example.com"},
		Body: map[string]any{"tag_key": "  custom:escalation  ", "description": "Needs a human hand-off"}})
	require.Equal(t, http.StatusCreated, res.Status, string(res.Body))
	assert.Equal(t, map[string]any{"tag_key": "custom:escalation", "description": "Needs a human hand-off", "created_by": "alice@example.com",
		"created_at": "2025-01-02T10:00:00.000Z", "updated_at": "2025-01-02T10:00:00.000Z"}, res.Object(t), "the creator is the caller, not user_id")

	h.clock.Advance(time.Hour)
	res = h.do(req{Method: http.MethodPost, Path: "/v1/tags/definitions", Header: map[string]string{"X-User-Id": "bob@example.com"},
		Body: map[string]any{"tag_key": "custom:escalation", "description": "Hand-off to a person"}})
	require.Equal(t, http.StatusCreated, res.Status, "an update also answers 201")
	def := res.Object(t)
	assert.Equal(t, "alice@example.com", def["created_by"], "an update keeps the creator")
	assert.Equal(t, "2025-01-02T10:00:00.000Z", def["created_at"])
	assert.Equal(t, "2025-01-02T11:00:00.000Z", def["updated_at"])

	gl = h.get("/v1/tags/glossary").Object(t)["groups"].([]any)
	require.Len(t, gl, 8)
	custom := gl[7].(map[string]any)
	assert.Equal(t, "custom", custom["type"])
	assert.Equal(t, "Tags that curators have described in the glossary", custom["description"])
	assert.Equal(t, []any{map[string]any{"key": "custom:escalation", "description": "Hand-off to a person"}}, custom["tags"])
	assert.NotContains(t, strs(h.get("/v1/tags").Object(t)["tags"]), "custom:escalation", "a definition does not add the tag to the known set")

	for _, bad := range []struct{ body, field string }{
		{`{"tag_key": "   ", "description": "x"}`, "tag_key"},
		{`{"tag_key": "` + strings.Repeat("k", 201) + `", "description": "x"}`, "tag_key"},
		{`{"tag_key": "k:v", "description": "` + strings.Repeat("d", 10001) + `"}`, "description"},
		{`{"tag_key": "k:v"}`, "description"},
		{`{"tag_key": 5, "description": "x"}`, "tag_key"},
		{`{"tagKey": "k:v", "tag_key": "k:v", "description": "x"}`, "tagKey"},
	} {
		res = h.do(req{Method: http.MethodPost, Path: "/v1/tags/definitions", Body: bad.body})
		require.Equal(t, http.StatusUnprocessableEntity, res.Status, bad.body)
		assert.Equal(t, bad.field, res.Object(t)["errors"].([]any)[0].(map[string]any)["field"], bad.body)
	}
	defs, err := h.store.TagDefinitions().List(context.Background())
	require.NoError(t, err)
	require.Len(t, defs, 1, "refused definitions store nothing")
	assert.Equal(t, "Hand-off to a person", defs[0].Description)

	res = h.do(req{Method: http.MethodDelete, Path: "/v1/tags/definitions/" + url.PathEscape("custom:escalation")})
	require.Equal(t, http.StatusNoContent, res.Status)
	assert.Empty(t, res.Body)
	res = h.do(req{Method: http.MethodDelete, Path: "/v1/tags/definitions/" + url.PathEscape("custom:escalation")})
	require.Equal(t, http.StatusNotFound, res.Status)
	assert.Equal(t, "Tag definition 'custom:escalation' not found", res.Object(t)["detail"])
}

func TestSchemasEndpoints(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	res := h.get("/v1/schemas")
	require.Equal(t, http.StatusOK, res.Status)
	list := res.Array(t)
	require.Zero(t, len(list)%2)
	half := len(list) / 2
	for i := 0; i < half; i++ {
		obj := list[i].(map[string]any)
		assert.Equal(t, obj["name"], list[half+i], "the names repeat as strings in the same order")
		if i > 0 {
			assert.Less(t, list[half+i-1].(string), list[half+i].(string), "sorted by name")
		}
	}
	var names []string
	for _, n := range list[half:] {
		names = append(names, n.(string))
	}
	for _, required := range []string{"AgenticGroundTruthEntry-Input", "AgenticGroundTruthEntry-Output", "GroundTruthUpdateRequest",
		"ErrorResponse", "HTTPValidationError", "TagSchemaResponse", "GlossaryResponse", "RecomputeTagsResponse", "Job"} {
		assert.Contains(t, names, required)
	}
	res = h.get("/v1/schemas/ErrorResponse")
	require.Equal(t, http.StatusOK, res.Status)
	assert.Equal(t, "ErrorResponse", res.Object(t)["title"])
	res = h.get("/v1/schemas/NoSuchSchema")
	require.Equal(t, http.StatusNotFound, res.Status)
	assert.Equal(t, "Schema not found", res.Object(t)["detail"])
}

func TestImportVocabularyCheckAndRegisterTags(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	unknown := basicItem("d", "u1")
	unknown["manualTags"] = []any{"custom:zeta", "Custom:Alpha", "source:sme"}
	res := h.do(req{Method: http.MethodPost, Path: "/v1/ground-truths", Body: []any{unknown, basicItem("d", "ok")}})
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	body := res.Object(t)
	assert.Equal(t, json.Number("1"), body["imported"])
	assert.Equal(t, []any{map[string]any{"index": json.Number("0"), "itemId": "u1", "field": "manualTags", "code": "INVALID_TAG",
		"message": "Unknown tag 'custom:alpha'.; Unknown tag 'custom:zeta'."}}, body["errors"])

	stripped := basicItem("d", "s1")
	stripped["manualTags"] = []any{"turns:multiturn"}
	res = h.do(req{Method: http.MethodPost, Path: "/v1/ground-truths", Body: []any{stripped}})
	assert.Equal(t, json.Number("1"), res.Object(t)["imported"], "computed keys are stripped before the vocabulary check")

	res = h.do(req{Method: http.MethodPost, Path: "/v1/ground-truths?registerTags=true", Body: []any{unknown}})
	require.Equal(t, http.StatusOK, res.Status)
	assert.Equal(t, json.Number("1"), res.Object(t)["imported"])
	known := strs(h.get("/v1/tags").Object(t)["tags"])
	assert.Contains(t, known, "custom:alpha")
	assert.Contains(t, known, "custom:zeta")
	assert.Equal(t, []any{"custom:alpha", "custom:zeta", "source:sme"}, h.item("d", "u1")["manualTags"])
}

func TestRecomputeTags(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.importItems(basicItem("a", "1"), basicItem("a", "2"), basicItem("b", "3"))
	ctx := context.Background()
	// Simulate stale computed tags and a computed key among the manual tags, as written by an
	// older version of the plugins.
	k := h.key("a", "1")
	cur, err := h.store.Items().Get(ctx, k)
	require.NoError(t, err)
	stale := cur.Clone()
	stale.ComputedTags = []string{"dataset:a", "question_length:long"}
	stale.ManualTags = []string{"source:sme", "turns:multiturn"}
	_, err = h.store.Items().Replace(ctx, cur, stale)
	require.NoError(t, err)
	before := h.item("a", "1")

	res := h.do(req{Method: http.MethodPost, Path: "/v1/ground-truths/recompute-tags?dry_run=true"})
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	body := res.Object(t)
	assert.Equal(t, json.Number("3"), body["total"])
	assert.Equal(t, json.Number("1"), body["updated"])
	assert.Equal(t, json.Number("2"), body["skipped"])
	assert.Equal(t, true, body["dry_run"])
	assert.Equal(t, before, h.item("a", "1"), "a dry run writes nothing")

	h.clock.Advance(time.Hour)
	res = h.do(req{Method: http.MethodPost, Path: "/v1/ground-truths/recompute-tags?dataset=a"})
	require.Equal(t, http.StatusOK, res.Status)
	body = res.Object(t)
	delete(body, "duration_ms")
	assert.Equal(t, map[string]any{"total": json.Number("2"), "processed": json.Number("2"), "updated": json.Number("1"),
		"skipped": json.Number("1"), "errors": []any{}, "dry_run": false}, body, "executes by default")
	after := h.item("a", "1")
	assert.Equal(t, []any{"dataset:a", "question_length:short", "retrieval_behavior:no_refs", "turns:singleturn"}, after["computedTags"])
	assert.Equal(t, []any{"source:sme"}, after["manualTags"])
	assert.NotEqual(t, before["_etag"], after["_etag"])
	assert.Equal(t, before["updatedAt"], after["updatedAt"], "tag maintenance is not an edit")

	res = h.do(req{Method: http.MethodPost, Path: "/v1/ground-truths/recompute-tags?dataset=nope"})
	body = res.Object(t)
	assert.Equal(t, json.Number("0"), body["total"], "an unknown dataset gives zeros")
	res = h.do(req{Method: http.MethodPost, Path: "/v1/ground-truths/recompute-tags?status=bogus"})
	assert.Equal(t, http.StatusUnprocessableEntity, res.Status)
	res = h.do(req{Method: http.MethodPost, Path: "/v1/ground-truths/recompute-tags?dry_run=perhaps"})
	assert.Equal(t, http.StatusUnprocessableEntity, res.Status)
}

func TestRecomputeReportsRuleViolations(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.importItems(basicItem("a", "1"))
	ctx := context.Background()
	cur, err := h.store.Items().Get(ctx, h.key("a", "1"))
	require.NoError(t, err)
	bad := cur.Clone()
	bad.ManualTags = []string{"source:sme", "source:user"}
	_, err = h.store.Items().Replace(ctx, cur, bad)
	require.NoError(t, err)
	res := h.do(req{Method: http.MethodPost, Path: "/v1/ground-truths/recompute-tags"})
	body := res.Object(t)
	assert.Equal(t, []any{"1: Group 'source' is exclusive; only one value allowed, got: ['sme', 'user']"}, body["errors"])
	assert.Equal(t, json.Number("0"), body["processed"], "a failed item is not processed")
	assert.Equal(t, json.Number("1"), body["total"])
}

func TestRecomputeAsyncJob(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.importItems(basicItem("a", "1"), basicItem("a", "2"))
	res := h.do(req{Method: http.MethodPost, Path: "/v1/ground-truths/recompute-tags?async=true&dataset=a", Header: map[string]string{"X-User-Id": "ops@example.com"}})
	require.Equal(t, http.StatusAccepted, res.Status, string(res.Body))
	job := res.Object(t)
	id := job["id"].(string)
	assert.Regexp(t, `^[A-Za-z0-9_-]{1,64}$`, id)
	assert.Equal(t, "/v1/jobs/"+id, res.Header.Get("Location"))
	assert.Equal(t, "recompute-tags", job["type"])
	assert.Equal(t, "ops@example.com", job["createdBy"])
	assert.Equal(t, map[string]any{"dataset": "a", "status": nil, "dry_run": false}, job["params"])

	deadline := time.Now().Add(10 * time.Second)
	for {
		job = h.get("/v1/jobs/" + id).Object(t)
		if job["status"] == "succeeded" || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	require.Equal(t, "succeeded", job["status"], job)
	result := job["result"].(map[string]any)
	assert.Equal(t, json.Number("2"), result["total"])
	assert.Equal(t, json.Number("2"), result["skipped"])
	assert.Equal(t, map[string]any{"total": json.Number("2"), "processed": json.Number("2"), "updated": json.Number("0"),
		"skipped": json.Number("2"), "errors": json.Number("0")}, job["progress"])
	assert.NotNil(t, job["startedAt"])
	assert.NotNil(t, job["finishedAt"])
	assert.Nil(t, job["error"])

	res = h.get("/v1/jobs/job-unknown")
	require.Equal(t, http.StatusNotFound, res.Status)
	assert.Equal(t, "Job not found", res.Object(t)["detail"])
}
