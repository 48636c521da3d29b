// Left out of the fuzz builds with the rest of package api_test (see harness_test.go).

//go:build !fuzzing

package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
)

func TestImportCreatesItemsWithDefaults(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	res := h.do(req{Method: http.MethodPost, Path: "/v1/ground-truths", Header: map[string]string{"X-User-Id": "importer@example.com"},
		Body: []any{
			basicItem("support", "gt-001"),
			map[string]any{"id": "  ", "datasetName": "support", "manualTags": "Source : SME, topic:Install",
				"history": []any{map[string]any{"role": "user", "msg": "  hi  "}}},
		}})
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	body := res.Object(t)
	assert.Equal(t, json.Number("2"), body["imported"])
	assert.Equal(t, json.Number("0"), body["failed"])
	uuids := body["uuids"].([]any)
	require.Len(t, uuids, 2)
	assert.Equal(t, "gt-001", uuids[0])
	generated := uuids[1].(string)
	assert.Regexp(t, `^[a-z]+-[a-z]+$`, generated, "generated ids are two lower-case words")
	assert.Equal(t, map[string]any{"total": json.Number("2"), "succeeded": json.Number("2"), "failed": json.Number("0")}, body["validationSummary"])

	it := h.item("support", "gt-001")
	assert.Equal(t, gtc.DeriveBucket("support", "gt-001"), it["bucket"], "bucket follows the FNV/UUIDv5 rule")
	assert.Equal(t, "draft", it["status"])
	assert.Equal(t, "ground-truth-item", it["docType"])
	assert.Equal(t, "v2", it["schemaVersion"])
	assert.Equal(t, "importer@example.com", it["createdBy"])
	assert.Equal(t, "2025-01-02T10:00:00.000Z", it["createdAt"])
	assert.Equal(t, "2025-01-02T10:00:00.000Z", it["updatedAt"])
	assert.Nil(t, it["reviewedAt"])
	assert.Nil(t, it["updatedBy"])
	assert.Equal(t, []any{"source:sme"}, it["manualTags"])
	assert.Equal(t, []any{"dataset:support", "question_length:short", "retrieval_behavior:no_refs", "turns:singleturn"}, it["computedTags"])
	assert.Equal(t, []any{"dataset:support", "question_length:short", "retrieval_behavior:no_refs", "source:sme", "turns:singleturn"}, it["tags"])
	assert.Equal(t, map[string]any{"required": []any{}, "optional": []any{}, "notNeeded": []any{}}, it["expectedTools"])
	for _, k := range []string{"assignedTo", "assignedAt", "traceIds"} {
		v, present := it[k]
		assert.True(t, present, "key %s is always present", k)
		assert.Nil(t, v)
	}

	gen := h.item("support", generated)
	assert.Equal(t, []any{"source:sme", "topic:install"}, gen["manualTags"], "a comma-separated string is accepted on import and normalized")
	assert.Equal(t, []any{map[string]any{"role": "user", "msg": "hi"}}, gen["history"], "role and msg are stored trimmed")
}

func TestImportRoundTripsEveryField(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	in := map[string]any{
		"id": "rt-1", "datasetName": "DS One", "bucket": "3F0E9A5755C15D0B9A3E6B1F9F2D7C10", "status": "approved",
		"schemaVersion": "v2-custom", "manualTags": []any{"topic:install", "source:sme"}, "comment": "ünïcødé ✓ 日本",
		"assignedTo": "alice@example.com", "assignedAt": "2025-01-02T11:00:00+01:00", "updatedAt": "2024-12-31T23:59:59.123456789Z",
		"updatedBy": "bob@example.com", "reviewedAt": "2025-01-01T00:00:00", "scenarioId": "sc-1",
		"history": []any{
			map[string]any{"role": "user", "msg": "Q?", "turnId": "t1", "stepId": "s1", "expectedBehavior": []any{"tool:search"}},
			map[string]any{"role": "planner", "msg": "plan", "expectedBehavior": []any{}},
			map[string]any{"role": "assistant", "msg": "A."},
		},
		"contextEntries": []any{map[string]any{"key": " k ", "value": map[string]any{"n": "__N1__", "x": nil}}, map[string]any{"key": "z", "value": nil}},
		"traceIds":       map[string]any{"traceId": "abc"},
		"toolCalls": []any{map[string]any{"id": "c1", "name": " search ", "callType": "subagent", "arguments": map[string]any{"q": "__N3__"},
			"agent": "a1", "stepNumber": 0, "parallelGroup": "g", "parentCallId": "p", "response": []any{1, "two", nil}}},
		"expectedTools": map[string]any{"required": []any{"search"}, "optional": []any{map[string]any{"name": "fetch", "arguments": "free text"}}, "notNeeded": []any{}},
		"feedback":      []any{map[string]any{"source": "thumbs", "values": map[string]any{"rating": 5}}},
		"metadata":      map[string]any{"big": "__N2__", "nested": map[string]any{"deep": []any{nil, true}}},
		"plugins": map[string]any{"rag-compat": map[string]any{"kind": "rag-compat", "data": map[string]any{"references": []any{
			map[string]any{"url": "https://kb.example.com/help/x", "visitedAt": "2025-01-02T10:01:00.000Z", "keyParagraph": "p", "id": "r1", "turnId": "t1"},
		}}}},
		"createdBy": "creator", "createdAt": "2020-05-05T05:05:05Z",
		"tracePayload": map[string]any{"spans": []any{map[string]any{"id": 1}}},
	}
	raw, err := json.Marshal([]any{in})
	require.NoError(t, err)
	// Numbers a float64 cannot hold, written as literals the way a client sends them.
	body := strings.NewReplacer(`"__N1__"`, "12345678901234567890", `"__N2__"`, "9007199254740993",
		`"__N3__"`, "1.2345678901234567890").Replace(string(raw))
	res := h.do(req{Method: http.MethodPost, Path: "/v1/ground-truths", Body: body})
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	require.Equal(t, json.Number("1"), res.Object(t)["imported"], string(res.Body))

	k := h.key("DS One", "rt-1")
	assert.Equal(t, "3f0e9a57-55c1-5d0b-9a3e-6b1f9f2d7c10", k.Bucket, "a sent bucket is kept, in canonical form")
	got := h.get(itemPath(k))
	require.Equal(t, http.StatusOK, got.Status)
	text := string(got.Body)
	for _, exact := range []string{`12345678901234567890`, `9007199254740993`, `1.2345678901234567890`, `"ünïcødé ✓ 日本"`} {
		assert.Contains(t, text, exact, "values round-trip exactly")
	}
	it := got.Object(t)
	assert.Equal(t, "approved", it["status"], "approve=false stores the status as sent")
	assert.Equal(t, "v2-custom", it["schemaVersion"])
	assert.Equal(t, "2025-01-02T10:00:00.000Z", it["assignedAt"], "offsets are converted to UTC")
	assert.Equal(t, "2024-12-31T23:59:59.123Z", it["updatedAt"], "a sent updatedAt is kept; output has milliseconds")
	assert.Equal(t, "2025-01-01T00:00:00.000Z", it["reviewedAt"], "no offset means UTC")
	assert.Equal(t, "bob@example.com", it["updatedBy"])
	assert.Equal(t, "creator", it["createdBy"])
	assert.Equal(t, "2020-05-05T05:05:05.000Z", it["createdAt"])
	hist := it["history"].([]any)
	assert.Equal(t, map[string]any{"role": "user", "msg": "Q?", "turnId": "t1", "stepId": "s1", "expectedBehavior": []any{"tool:search"}}, hist[0])
	assert.Equal(t, map[string]any{"role": "planner", "msg": "plan", "expectedBehavior": []any{}}, hist[1])
	assert.Equal(t, map[string]any{"role": "assistant", "msg": "A."}, hist[2], "null turnId/stepId/expectedBehavior are left out")
	tc := it["toolCalls"].([]any)[0].(map[string]any)
	assert.Equal(t, "search", tc["name"], "names are stored trimmed")
	assert.Equal(t, json.Number("0"), tc["stepNumber"])
	assert.Len(t, tc, 9, "all nine keys of a tool call are present")
	assert.Equal(t, "k", it["contextEntries"].([]any)[0].(map[string]any)["key"])
	assert.Equal(t, map[string]any{"key": "z", "value": nil}, it["contextEntries"].([]any)[1])
	ref := it["plugins"].(map[string]any)["rag-compat"].(map[string]any)["data"].(map[string]any)["references"].([]any)[0].(map[string]any)
	assert.Equal(t, "2025-01-02T10:01:00.000Z", ref["visitedAt"], "the frontend's reference keys come back unchanged")
	assert.Equal(t, "r1", ref["id"])
	assert.Equal(t, "1.0", it["plugins"].(map[string]any)["rag-compat"].(map[string]any)["version"], "plugin version defaults to 1.0")
	assert.Contains(t, it["computedTags"], "dataset:DS One", "the dataset tag keeps the name exactly")
	assert.Contains(t, it["computedTags"], "reference_type:helpcenter")
}

func TestImportWarningsAndPerItemErrors(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.importItems(basicItem("support", "exists"))
	withOutput := basicItem("support", "out-1")
	withOutput["tags"] = []any{"x:y"}
	withOutput["_etag"] = "\"abc\""
	withOutput["computedTags"] = []any{"turns:multiturn"}
	stripped := basicItem("support", "strip-1")
	stripped["manualTags"] = []any{"Turns:MultiTurn", "dataset:other", "source:sme"}
	res := h.do(req{Method: http.MethodPost, Path: "/v1/ground-truths", Body: []any{
		withOutput, stripped, basicItem("support", "exists"), basicItem("support", "dup"), basicItem("support", "dup"),
		basicItem("other", "exists"),
	}})
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	body := res.Object(t)
	assert.Equal(t, json.Number("4"), body["imported"])
	assert.Equal(t, json.Number("2"), body["failed"])
	assert.Equal(t, []any{"out-1", "strip-1", "exists", "dup", "dup", "exists"}, body["uuids"])
	assert.Equal(t, []any{
		map[string]any{"index": json.Number("2"), "itemId": "exists", "field": "id", "code": "DUPLICATE_ID", "message": "Item with id 'exists' already exists"},
		map[string]any{"index": json.Number("4"), "itemId": "dup", "field": "id", "code": "DUPLICATE_ID", "message": "Item with id 'dup' already exists"},
	}, body["errors"])
	assert.Equal(t, []any{
		map[string]any{"index": json.Number("0"), "itemId": "out-1", "field": nil, "code": "OUTPUT_FIELDS_IGNORED", "message": "Ignored output-only fields: _etag, computedTags, tags"},
		map[string]any{"index": json.Number("1"), "itemId": "strip-1", "field": "manualTags", "code": "COMPUTED_TAGS_STRIPPED", "message": "Removed computed tags from manualTags: dataset:other, turns:multiturn"},
	}, body["warnings"])
	assert.Equal(t, []any{"source:sme"}, h.item("support", "strip-1")["manualTags"])
	assert.Equal(t, []any{}, body["piiWarnings"])
	assert.Equal(t, []any{}, body["duplicateWarnings"])
}

func TestImportApproveRunsApprovalRules(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	onlyQuestion := map[string]any{"id": "q-only", "datasetName": "ds", "history": []any{map[string]any{"role": "user", "msg": "q"}}}
	res := h.do(req{Method: http.MethodPost, Path: "/v1/ground-truths?approve=true", Header: map[string]string{"X-User-Id": "lead"},
		Body: []any{basicItem("ds", "ok"), onlyQuestion}})
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	body := res.Object(t)
	assert.Equal(t, json.Number("1"), body["imported"])
	assert.Equal(t, []any{map[string]any{"index": json.Number("1"), "itemId": "q-only", "field": "approval",
		"code": "APPROVAL_VALIDATION_FAILED", "message": "history must include at least one agent message"}}, body["errors"])
	it := h.item("ds", "ok")
	assert.Equal(t, "approved", it["status"])
	assert.Equal(t, "lead", it["updatedBy"])
	assert.Equal(t, "2025-01-02T10:00:00.000Z", it["reviewedAt"])
}

func TestImportRejectsBadBodiesAndStoresNothing(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		body   any
		fields []gtc.FieldError
	}{
		{"legacy keys", `[{"id": "a", "datasetName": "d", "synthQuestion": "q", "answer": "x", "refs": [], "uuid": "u"}]`,
			[]gtc.FieldError{{Field: "[0].synthQuestion", Message: "unknown field"}, {Field: "[0].answer", Message: "unknown field"}, {Field: "[0].refs", Message: "unknown field"}, {Field: "[0].uuid", Message: "unknown field"}}},
		{"not an array", map[string]any{"id": "a"}, []gtc.FieldError{{Field: "body", Message: "expected array"}}},
		{"element not an object", []any{"x"}, []gtc.FieldError{{Field: "[0]", Message: "expected object"}}},
		{"required and null keys", []any{map[string]any{"datasetName": nil}},
			[]gtc.FieldError{{Field: "[0].datasetName", Message: "must not be null"}, {Field: "[0].id", Message: "required"}}},
		{"wrong types", `[{"id": 5, "datasetName": "d", "comment": true, "history": "x", "metadata": []}]`,
			[]gtc.FieldError{{Field: "[0].id", Message: "expected string"}, {Field: "[0].comment", Message: "expected string"}, {Field: "[0].history", Message: "expected array"}, {Field: "[0].metadata", Message: "expected object"}}},
		{"id and dataset characters", `[{"id": "a/b", "datasetName": "   "}, {"id": "c", "datasetName": "x?y"}]`,
			[]gtc.FieldError{{Field: "[0].id", Message: "id contains characters that are not allowed"}, {Field: "[0].datasetName", Message: "datasetName cannot be empty"}, {Field: "[1].datasetName", Message: "datasetName contains characters that are not allowed"}}},
		{"blank history", `[{"id": "a", "datasetName": "d", "history": [{"role": " ", "msg": ""}]}]`,
			[]gtc.FieldError{{Field: "[0].history[0].role", Message: "history fields cannot be empty"}, {Field: "[0].history[0].msg", Message: "history fields cannot be empty"}}},
		{"nested rules", `[{"id": "a", "datasetName": "d",
			"toolCalls": [{"name": " ", "stepNumber": -1, "extra": 1}],
			"contextEntries": [{"key": ""}],
			"expectedTools": {"required": ["search", ""], "optional": [{"name": "search"}]},
			"plugins": {"rag-compat": {"kind": "", "data": {"references": [{"title": "no url"}]}}}
		}]`, []gtc.FieldError{
			{Field: "[0].toolCalls[0].extra", Message: "unknown field"},
			{Field: "[0].toolCalls[0].name", Message: "toolCalls[].name cannot be empty"},
			{Field: "[0].toolCalls[0].stepNumber", Message: "toolCalls[].stepNumber cannot be negative"},
			{Field: "[0].contextEntries[0].key", Message: "contextEntries[].key cannot be empty"},
			{Field: "[0].contextEntries[0].value", Message: "required"},
			{Field: "[0].expectedTools.required[1]", Message: "expectedTools entries must include a non-empty name"},
			{Field: "[0].expectedTools", Message: "tools cannot appear in more than one category: search"},
			{Field: "[0].plugins.rag-compat.kind", Message: "plugins[].kind cannot be empty"},
			{Field: "[0].plugins.rag-compat.data.references[0].url", Message: "Reference URL cannot be empty"},
		}},
		{"bad enums and times", `[{"id": "a", "datasetName": "d", "status": "done", "docType": "x", "bucket": "nope", "updatedAt": "yesterday"}]`,
			[]gtc.FieldError{{Field: "[0].status", Message: "must be one of: draft, approved, skipped, deleted"}, {Field: "[0].docType", Message: "must be one of: ground-truth-item"}, {Field: "[0].bucket", Message: "must be a UUID"}, {Field: "[0].updatedAt", Message: "must be an RFC 3339 date-time"}}},
		{"tag format and rules", []any{map[string]any{"id": "a", "datasetName": "d", "manualTags": []any{"nocolon", "source:sme", "source:synthetic", ":x"}}},
			[]gtc.FieldError{{Field: "[0].manualTags[0]", Message: "Invalid tag format (expected group:value): 'nocolon'"}, {Field: "[0].manualTags[3]", Message: "Invalid tag format (empty group or value): ':x'"}}},
		{"exclusive group", []any{map[string]any{"id": "a", "datasetName": "d", "manualTags": []any{"source:sme", "Source:Synthetic"}}},
			[]gtc.FieldError{{Field: "[0].manualTags", Message: "Group 'source' is exclusive; only one value allowed, got: ['sme', 'synthetic']"}}},
		{"weird key", []any{map[string]any{"id": "a", "datasetName": "d", "we ird.key": 1}},
			[]gtc.FieldError{{Field: `[0]["we ird.key"]`, Message: "unknown field"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			h.importItems(basicItem("d", "existing"))
			before := h.snapshot()
			res := h.do(req{Method: http.MethodPost, Path: "/v1/ground-truths", Body: tc.body})
			require.Equal(t, http.StatusUnprocessableEntity, res.Status, string(res.Body))
			body := res.Object(t)
			assert.Equal(t, "VALIDATION_ERROR", body["code"])
			assert.Equal(t, fieldErrors(tc.fields), body["errors"])
			detail := "Request validation failed: " + tc.fields[0].Field + ": " + tc.fields[0].Message
			if len(tc.fields) > 1 {
				detail += " (and " + jsonNumber(len(tc.fields)-1) + " more)"
			}
			assert.Equal(t, detail, body["detail"])
			assert.Equal(t, before, h.snapshot(), "a refused import stores nothing")
		})
	}
}

func jsonNumber(n int) string { b, _ := json.Marshal(n); return string(b) }

func fieldErrors(fs []gtc.FieldError) []any {
	out := make([]any, len(fs))
	for i, f := range fs {
		out[i] = map[string]any{"field": f.Field, "message": f.Message}
	}
	return out
}

func TestGetItem(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.importItems(basicItem("support", "gt-1"))
	k := h.key("support", "gt-1")
	res := h.get(itemPath(k))
	require.Equal(t, http.StatusOK, res.Status)
	it := res.Object(t)
	assert.Equal(t, etagHeader(t, it["_etag"]), res.Header.Get("ETag"), "the ETag header carries the quoted token")
	assert.Equal(t, "no-store", res.Header.Get("Cache-Control"))
	assert.Equal(t, "application/json", res.Header.Get("Content-Type"))

	upper := "/v1/ground-truths/support/" + strings.ToUpper(strings.ReplaceAll(k.Bucket, "-", "")) + "/gt-1"
	assert.Equal(t, http.StatusOK, h.get(upper).Status, "a bucket in any UUID form is accepted")

	for name, path := range map[string]string{
		"unknown id":    "/v1/ground-truths/support/" + k.Bucket + "/nope",
		"wrong bucket":  "/v1/ground-truths/support/00000000-0000-0000-0000-000000000001/gt-1",
		"wrong dataset": "/v1/ground-truths/other/" + k.Bucket + "/gt-1",
	} {
		res := h.get(path)
		assert.Equal(t, http.StatusNotFound, res.Status, name)
		assert.Equal(t, map[string]any{"detail": "Item not found", "status": json.Number("404"), "code": "NOT_FOUND"}, res.Object(t), name)
	}
	bad := h.get("/v1/ground-truths/support/not-a-uuid/gt-1")
	require.Equal(t, http.StatusUnprocessableEntity, bad.Status)
	assert.Equal(t, fieldErrors([]gtc.FieldError{{Field: "path.bucket", Message: "must be a UUID"}}), bad.Object(t)["errors"])

	// A name no item can have is refused before the store is asked, each problem named.
	// The document router decodes %2F into a path separator, so it cannot match that one.
	bad = h.do(req{Method: http.MethodGet, Path: "/v1/ground-truths/support/" + k.Bucket + "/gt%2F1", NoCheck: true})
	require.Equal(t, http.StatusUnprocessableEntity, bad.Status)
	assert.Equal(t, map[string]any{"detail": "Request validation failed: path.item_id: id contains characters that are not allowed",
		"status": json.Number("422"), "code": "VALIDATION_ERROR",
		"errors": fieldErrors([]gtc.FieldError{{Field: "path.item_id", Message: gtc.MsgIDChars}})}, bad.Object(t))
	bad = h.get("/v1/ground-truths/%2e%2e/not-a-uuid/gt%E2%80%8B1")
	require.Equal(t, http.StatusUnprocessableEntity, bad.Status)
	assert.Equal(t, fieldErrors([]gtc.FieldError{
		{Field: "path.datasetName", Message: gtc.MsgDatasetDots},
		{Field: "path.bucket", Message: "must be a UUID"},
		{Field: "path.item_id", Message: "id contains an invisible format character (U+200B), which is not allowed"},
	}), bad.Object(t)["errors"], "every path problem, in path order")
}

func TestPercentEncodedPathParameters(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.importItems(basicItem("DS One", "id with space"), basicItem("stats", "s1"))
	k := h.key("DS One", "id with space")
	res := h.get("/v1/ground-truths/DS%20One/" + k.Bucket + "/id%20with%20space")
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	assert.Equal(t, "id with space", res.Object(t)["id"])
	list := h.get("/v1/ground-truths/DS%20One")
	require.Equal(t, http.StatusOK, list.Status)
	assert.Len(t, list.Array(t), 1)
	// A literal segment wins over a dataset named like it.
	stats := h.get("/v1/ground-truths/stats")
	assert.Equal(t, []string{"approved", "deleted", "draft"}, keys(stats.Object(t)))
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sortStrings(out)
	return out
}

func TestImportPIIAndDuplicateWarnings(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	approved := basicItem("support", "gt-approved")
	approved["status"] = "approved"
	h.importItems(approved)

	dup := basicItem("support", "")
	dup["history"] = []any{map[string]any{"role": "user", "msg": "where do I download the  INSTALLER?"},
		map[string]any{"role": "assistant", "msg": "Use the download page."}}
	dup["comment"] = "Contact me at bob@example.com"
	failing := basicItem("support", "gt-approved") // a duplicate id: fails, still scanned
	failing["comment"] = "Call (555) 123-4567 now"
	res := h.do(req{Method: http.MethodPost, Path: "/v1/ground-truths", Body: []any{dup, failing}})
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	body := res.Object(t)
	newID := body["uuids"].([]any)[0].(string)
	assert.Equal(t, json.Number("1"), body["failed"])
	assert.Equal(t, []any{
		map[string]any{"item_id": newID, "field": "comment", "pattern_type": "email", "snippet": "Contact me at [b***@e***e.com]", "position": json.Number("14")},
		map[string]any{"item_id": "gt-approved", "field": "comment", "pattern_type": "phone", "snippet": "Call [(5**) ***-****] now", "position": json.Number("5")},
	}, body["piiWarnings"])
	assert.Equal(t, []any{map[string]any{"itemId": newID, "duplicateId": "gt-approved", "duplicateQuestion": "Where do I download the installer?",
		"duplicateStatus": "approved", "matchReason": "exact question and answer match"}}, body["duplicateWarnings"])
	assert.Equal(t, json.Number("1"), body["imported"], "warnings never block an import")

	off := newHarnessWith(t, func(d *gtc.CuratorDeps) { d.ImportScreen = nil })
	off.importItems(approved)
	res = off.do(req{Method: http.MethodPost, Path: "/v1/ground-truths", Body: []any{dup}})
	body = res.Object(t)
	assert.Equal(t, []any{}, body["piiWarnings"], "GTC_PII_DETECTION_ENABLED=false")
	assert.Equal(t, []any{}, body["duplicateWarnings"], "GTC_DUPLICATE_DETECTION_ENABLED=false")
}
