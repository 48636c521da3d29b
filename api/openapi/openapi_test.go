package openapi_test

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc/api/openapi"
)

// load parses the document with kin-openapi and validates it as OpenAPI 3.1.
func load(t *testing.T, d *openapi.Doc) *openapi3.T {
	t.Helper()
	loaded, err := openapi3.NewLoader().LoadFromData(d.JSON())
	require.NoError(t, err)
	require.NoError(t, loaded.Validate(context.Background()))
	return loaded
}

func TestDocumentIsValidOpenAPI31(t *testing.T) {
	d := openapi.Document("/v1", "1.2.3")
	loaded := load(t, d)

	assert.Equal(t, "3.1.0", loaded.OpenAPI)
	assert.Equal(t, "Ground Truth Curator", loaded.Info.Title)
	assert.Equal(t, "1.2.3", loaded.Info.Version)

	easy := loaded.Components.SecuritySchemes["easyAuth"].Value
	require.NotNil(t, easy)
	assert.Equal(t, []string{"apiKey", "header", "X-MS-CLIENT-PRINCIPAL"}, []string{easy.Type, easy.In, easy.Name})
	dev := loaded.Components.SecuritySchemes["devUser"].Value
	require.NotNil(t, dev)
	assert.Equal(t, []string{"apiKey", "header", "X-User-Id"}, []string{dev.Type, dev.In, dev.Name})
	assert.Equal(t, openapi3.SecurityRequirements{{"easyAuth": {}}, {"devUser": {}}}, loaded.Security)
}

func TestJSONIsCompactAndNotHTMLEscaped(t *testing.T) {
	raw := openapi.Document("/v1", "dev").JSON()
	assert.True(t, json.Valid(raw))
	assert.NotContains(t, string(raw), "\n")
	assert.Contains(t, string(raw), "<datasetName>")
	assert.NotContains(t, string(raw), `\u003c`)
	assert.NotContains(t, string(raw), `\u0026`)
}

func TestPaths(t *testing.T) {
	for _, prefix := range []string{"/v1", "/api/v2"} {
		t.Run(prefix, func(t *testing.T) {
			want := map[string][]string{
				"/healthz":                                                 {"GET"},
				"/readyz":                                                  {"GET"},
				prefix + "/openapi.json":                                   {"GET"},
				prefix + "/config":                                         {"GET"},
				prefix + "/schemas":                                        {"GET"},
				prefix + "/schemas/{name}":                                 {"GET"},
				prefix + "/ground-truths/stats":                            {"GET"},
				prefix + "/ground-truths":                                  {"GET", "POST"},
				prefix + "/ground-truths/{datasetName}":                    {"GET"},
				prefix + "/ground-truths/recompute-tags":                   {"POST"},
				prefix + "/jobs/{id}":                                      {"GET"},
				prefix + "/releases":                                       {"GET", "POST"},
				prefix + "/releases/{name}":                                {"DELETE", "GET"},
				prefix + "/releases/{name}/files/{file}":                   {"GET"},
				prefix + "/releases/{name}/diff/{to}":                      {"GET"},
				prefix + "/tags/schema":                                    {"GET"},
				prefix + "/tags":                                           {"DELETE", "GET", "POST"},
				prefix + "/tags/glossary":                                  {"GET"},
				prefix + "/tags/definitions":                               {"POST"},
				prefix + "/tags/definitions/{tag_key}":                     {"DELETE"},
				prefix + "/ground-truths/{datasetName}/{bucket}/{item_id}": {"DELETE", "GET", "PUT"},
				prefix + "/ground-truths/{datasetName}/{bucket}/{item_id}/history":            {"GET"},
				prefix + "/ground-truths/{datasetName}/{bucket}/{item_id}/history/{revision}": {"GET"},
				prefix + "/ground-truths/{datasetName}/{bucket}/{item_id}/diff":               {"GET"},
				prefix + "/ground-truths/{datasetName}/{bucket}/{item_id}/restore":            {"POST"},
				prefix + "/datasets": {"GET"},
				prefix + "/datasets/{datasetName}/curation-instructions":       {"GET", "PUT"},
				prefix + "/datasets/{datasetName}":                             {"DELETE"},
				prefix + "/assignments/self-serve":                             {"POST"},
				prefix + "/assignments/my":                                     {"GET"},
				prefix + "/assignments/{dataset}/{bucket}/{item_id}":           {"PUT"},
				prefix + "/assignments/{dataset}/{bucket}/{item_id}/assign":    {"POST"},
				prefix + "/assignments/{dataset}/{bucket}/{item_id}/duplicate": {"POST"},
				prefix + "/search":                                             {"GET"},
				prefix + "/ground-truths/snapshot":                             {"GET", "POST"},
				prefix + "/exports":                                            {"GET"},
				prefix + "/exports/{snapshotId}":                               {"GET"},
				prefix + "/exports/{snapshotId}/files/{name}":                  {"GET"},
				prefix + "/agent/tools":                                        {"GET"},
				prefix + "/agent/tools/{name}":                                 {"POST"},
			}
			d := openapi.Document(prefix, "dev")
			assert.Equal(t, want, d.Paths())
			load(t, d)
		})
	}
}

// requiredComponents are the component names this document must cover: the names of the
// reference backend that clients resolve, then ours.
var requiredComponents = []string{
	"AgenticGroundTruthEntry-Input", "AgenticGroundTruthEntry-Output", "GroundTruthUpdateRequest",
	"AssignmentUpdateRequest", "HistoryEntry", "HistoryEntryPatch", "ContextEntry", "ToolCallRecord",
	"ToolExpectation", "ExpectedTools", "FeedbackEntry", "PluginPayload", "GroundTruthStatus",
	"SortField", "SortOrder", "GroundTruthListResponse", "PaginationMetadata", "ImportBulkResponse",
	"BulkImportError", "ImportWarning", "PIIWarning", "DuplicateWarning", "ValidationSummary",
	"FrontendConfig", "DatasetCurationInstructions", "CurationInstructionsUpdate", "ErrorResponse",
	"FieldError", "HTTPValidationError",
	// Recompute and jobs, tags.
	"RecomputeTagsResponse", "Job", "TagListResponse", "AddTagsRequest", "RemoveTagsRequest",
	"TagSchemaResponse", "TagGroupDTO", "DependencyDTO", "GlossaryResponse", "TagGroupGlossaryDTO",
	"TagDefinitionDTO", "TagDefinitionRequest", "TagDefinitionResponse",
	// Assignments and search.
	"SelfServeResponse", "AssignItemRequest", "SearchResponse",
	// Exports.
	"SnapshotExportRequest", "ExportFilters", "ExportDeliveryOptions", "SnapshotArtifactResponse",
	"SnapshotManifest", "SnapshotSummary",
	// Ours, not names of the reference backend.
	"SelfServeRequest", "SearchResult", "AssignmentConflictError", "SnapshotPayload", "SnapshotListResponse",
	"SnapshotFile",
}

func TestComponentSchemas(t *testing.T) {
	d := openapi.Document("/v1", "dev")
	names := d.SchemaNames()
	assert.True(t, slices.IsSorted(names))
	for _, name := range requiredComponents {
		assert.Contains(t, names, name)
	}
	for _, name := range names {
		s, ok := d.Schema(name)
		require.True(t, ok, name)
		assert.Equal(t, name, s["title"], "title of %s", name)
	}

	_, ok := d.Schema("NoSuchSchema")
	assert.False(t, ok)

	// Schema hands out copies: changing one must not change the document.
	s, _ := d.Schema("FieldError")
	s["title"] = "changed"
	s["properties"].(map[string]any)["field"] = nil
	again, _ := d.Schema("FieldError")
	assert.Equal(t, "FieldError", again["title"])
	assert.NotNil(t, again["properties"].(map[string]any)["field"])
}

func TestOutputItemListsEveryKey(t *testing.T) {
	keys := []string{"id", "datasetName", "bucket", "status", "docType", "schemaVersion", "manualTags",
		"computedTags", "tags", "comment", "assignedTo", "assignedAt", "updatedAt", "updatedBy",
		"reviewedAt", "_etag", "scenarioId", "history", "contextEntries", "traceIds", "toolCalls",
		"expectedTools", "feedback", "metadata", "plugins", "createdBy", "createdAt", "tracePayload", "revision"}
	s, ok := openapi.Document("/v1", "dev").Schema("AgenticGroundTruthEntry-Output")
	require.True(t, ok)
	var required []string
	for _, k := range s["required"].([]any) {
		required = append(required, k.(string))
	}
	assert.ElementsMatch(t, keys, required)
	assert.Len(t, s["properties"], len(keys))
	assert.Equal(t, false, s["additionalProperties"])
}

// Sample bodies of documented requests and answers.
const (
	exampleItem = `{
  "id": "gt-001", "datasetName": "support", "bucket": "3f0e9a57-55c1-5d0b-9a3e-6b1f9f2d7c10",
  "status": "draft", "docType": "ground-truth-item", "schemaVersion": "v2",
  "manualTags": ["source:sme", "topic:install"],
  "computedTags": ["dataset:support", "question_length:short", "retrieval_behavior:single", "turns:singleturn"],
  "tags": ["dataset:support", "question_length:short", "retrieval_behavior:single", "source:sme", "topic:install", "turns:singleturn"],
  "comment": "", "assignedTo": "alice@example.com", "assignedAt": "2025-01-02T10:00:00.000Z",
  "updatedAt": "2025-01-02T10:00:00.000Z", "updatedBy": null, "reviewedAt": null, "_etag": "\"5a1c0e\"",
  "scenarioId": "",
  "history": [{"role": "user", "msg": "Where do I download the installer?", "turnId": "t1"}, {"role": "assistant", "msg": "Use the download page."}],
  "contextEntries": [], "traceIds": null, "toolCalls": [],
  "expectedTools": {"required": [], "optional": [], "notNeeded": []},
  "feedback": [], "metadata": {},
  "plugins": {"rag-compat": {"kind": "rag-compat", "version": "1.0",
              "data": {"references": [{"url": "https://docs.example.com/install", "title": "Install", "bonus": false, "visitedAt": "2025-01-02T10:01:00.000Z"}]}}},
  "createdBy": "importer@example.com", "createdAt": "2025-01-01T09:00:00.000Z", "tracePayload": {}, "revision": 3
}`
	exampleList = `{"items": [], "pagination": {"page": 2, "limit": 10, "total": 23, "totalPages": 3, "hasNext": true, "hasPrev": true}}`

	exampleImport = `{"imported": 1, "failed": 1,
 "errors": [{"index": 1, "itemId": "gt-001", "field": "manualTags", "code": "INVALID_TAG", "message": "Unknown tag 'nosuch:tag'."}],
 "uuids": ["brisk-otter", "gt-001"],
 "piiWarnings": [{"item_id": "brisk-otter", "field": "history[0].msg", "pattern_type": "email", "snippet": "Contact me at [b***@e***e.com]", "position": 14}],
 "duplicateWarnings": [],
 "warnings": [{"index": 0, "itemId": "brisk-otter", "field": null, "code": "OUTPUT_FIELDS_IGNORED", "message": "Ignored output-only fields: _etag, tags"}],
 "validationSummary": {"total": 2, "succeeded": 1, "failed": 1}}`

	exampleInstructions = `{"id": "curation-instructions|support", "datasetName": "support", "bucket": "00000000-0000-0000-0000-000000000000",
 "docType": "curation-instructions", "schemaVersion": "v1", "instructions": "# Rules\n…",
 "updatedAt": "2025-01-02T10:00:00.000Z", "updatedBy": "alice@example.com", "_etag": "\"7b2\""}`

	exampleConfig = `{"requireReferenceVisit": false, "requireKeyParagraph": false, "selfServeLimit": 10, "trustedReferenceDomains": ["docs.example.com"]}`

	exampleRecompute = `{"total": 120, "processed": 120, "updated": 7, "skipped": 113, "errors": [], "dry_run": false, "duration_ms": 842}`

	exampleJob = `{"id": "job-01hv6s2m3k9x4c7p0q8r5t1w2y", "type": "recompute-tags", "status": "running",
 "createdAt": "2025-01-02T10:00:00.000Z", "startedAt": "2025-01-02T10:00:00.120Z", "finishedAt": null,
 "createdBy": "alice@example.com",
 "params": {"dataset": "support", "status": null, "dry_run": false},
 "progress": {"total": 5000, "processed": 1200, "updated": 40, "skipped": 1160, "errors": 0},
 "result": null, "error": null, "resumed": 0}`

	exampleTagSchema = `{"version": "v1", "groups": [{"name": "answerability", "values": ["answerable", "not_answerable", "should_not_answer"], "exclusive": true, "depends_on": []}]}`

	exampleTags = `{"tags": ["answerability:answerable", "custom:escalation", "source:sme", "topic:install"],
 "computedTags": ["answer:no_answer", "question_length:long", "question_length:medium", "question_length:short",
                  "reference_type:article", "reference_type:helpcenter", "retrieval_behavior:no_refs", "retrieval_behavior:rich",
                  "retrieval_behavior:single", "retrieval_behavior:two_refs", "turns:multiturn", "turns:singleturn"]}`

	exampleGlossary = `{"version": "v1", "groups": [
  {"name": "source", "description": "Where the item came from", "type": "manual",
   "tags": [{"key": "source:other", "description": "Any other origin"}, {"key": "source:sme", "description": "Written by a subject matter expert"}]},
  {"name": "computed", "description": "Derived by the server from each item's content; read-only", "type": "computed",
   "tags": [{"key": "answer:no_answer", "description": "The final agent answer is the no_answer marker."}]},
  {"name": "custom", "description": "Tags that curators have described in the glossary", "type": "custom",
   "tags": [{"key": "custom:escalation", "description": "Needs a human hand-off"}]}]}`

	exampleDefinition = `{"tag_key": "custom:escalation", "description": "Needs a human hand-off", "created_by": "alice@example.com", "created_at": "2025-01-02T10:00:00.000Z", "updated_at": "2025-01-02T10:00:00.000Z"}`

	// The self-serve answer, with a real item in `assigned`.
	exampleSelfServe = `{"assigned": [` + exampleItem + `], "requested": 10, "assignedCount": 10, "newlyAssigned": 4}`

	exampleSearch = `{"results": [{"id": "gt-001:ref:0", "url": "https://docs.example.com/install", "title": "Install", "chunk": "Run the installer…",
              "raw_payload": {"itemId": "gt-001", "datasetName": "support", "reference": {"url": "https://docs.example.com/install", "title": "Install", "content": "Run the installer…", "bonus": false}}}]}`

	exampleAssignConflict = `{"detail": "Item is assigned to another curator", "status": 409, "code": "ASSIGNMENT_CONFLICT",
 "assignedTo": "bob@example.com", "assignedAt": "2025-01-02T10:00:00.000Z"}`
)

// withKey returns the JSON object sample with one key set (value nil removes the key).
func withKey(t *testing.T, sample, key string, value any) string {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(sample), &m))
	if value == nil {
		delete(m, key)
	} else {
		m[key] = value
	}
	out, err := json.Marshal(m)
	require.NoError(t, err)
	return string(out)
}

func TestSamplesAgainstComponentSchemas(t *testing.T) {
	loaded := load(t, openapi.Document("/v1", "dev"))

	cases := []struct {
		name, schema, value string
		valid               bool
	}{
		{"example item", "AgenticGroundTruthEntry-Output", exampleItem, true},
		{"item with an unknown key", "AgenticGroundTruthEntry-Output", withKey(t, exampleItem, "answer", "A."), false},
		{"item without tags", "AgenticGroundTruthEntry-Output", withKey(t, exampleItem, "tags", nil), false},
		{"item with null status", "AgenticGroundTruthEntry-Output", strings.Replace(exampleItem, `"status": "draft"`, `"status": null`, 1), false},
		{"item with a string stepNumber", "AgenticGroundTruthEntry-Output", withKey(t, exampleItem, "toolCalls",
			[]any{map[string]any{"id": "", "name": "search", "callType": "tool", "arguments": nil, "agent": nil,
				"stepNumber": "1", "parallelGroup": nil, "parentCallId": nil, "response": nil}}), false},
		{"item with a full tool call", "AgenticGroundTruthEntry-Output", withKey(t, exampleItem, "toolCalls",
			[]any{map[string]any{"id": "c1", "name": "search", "callType": "subagent", "arguments": map[string]any{"q": "x"},
				"agent": "planner", "stepNumber": 0, "parallelGroup": nil, "parentCallId": nil, "response": []any{1, "two"}}}), true},
		{"item with a partial tool call", "AgenticGroundTruthEntry-Output", withKey(t, exampleItem, "toolCalls",
			[]any{map[string]any{"name": "search"}}), false},

		{"list page", "GroundTruthListResponse", exampleList, true},
		{"list page with an item", "GroundTruthListResponse", `{"items": [` + exampleItem + `], "pagination": {"page": 1, "limit": 25, "total": 1, "totalPages": 1, "hasNext": false, "hasPrev": false}}`, true},
		{"list page without pagination", "GroundTruthListResponse", `{"items": []}`, false},

		{"import report", "ImportBulkResponse", exampleImport, true},
		{"import report with a bad pattern_type", "ImportBulkResponse", strings.Replace(exampleImport, `"email"`, `"ssn"`, 1), false},

		{"import element, minimal", "AgenticGroundTruthEntry-Input", `{"id": "", "datasetName": "support"}`, true},
		{"import element, output round-trip", "AgenticGroundTruthEntry-Input", withKey(t, exampleItem, "references", []any{}), true},
		{"import element, tag string and nulls", "AgenticGroundTruthEntry-Input",
			`{"id": "a", "datasetName": "d", "manualTags": "source:sme, topic:x", "comment": null, "status": null, "expectedTools": {"required": ["search", {"name": "fetch", "arguments": "x"}]}, "toolCalls": [{"name": "search"}]}`, true},
		{"import element, legacy key", "AgenticGroundTruthEntry-Input", `{"id": "a", "datasetName": "d", "synthQuestion": "Q?"}`, false},
		{"import element, null id", "AgenticGroundTruthEntry-Input", `{"id": null, "datasetName": "d"}`, false},
		{"import element, no datasetName", "AgenticGroundTruthEntry-Input", `{"id": "a"}`, false},
		{"import element, unknown status", "AgenticGroundTruthEntry-Input", `{"id": "a", "datasetName": "d", "status": "done"}`, false},

		{"curator edit", "GroundTruthUpdateRequest", `{"status": "approved", "manualTags": ["source:sme"], "history": [{"role": "user", "msg": "Q?", "turnId": "t1"}, {"role": "assistant", "content": "A.", "expected_behavior": ["cite"]}], "etag": "5a1c0e", "comment": null}`, true},
		{"curator edit, null history", "GroundTruthUpdateRequest", `{"history": null}`, true},
		{"curator edit, tags (rejected by the server with 400)", "GroundTruthUpdateRequest", `{"tags": ["a:b"], "computedTags": 3}`, true},
		{"curator edit, null expectedTools", "GroundTruthUpdateRequest", `{"expectedTools": null}`, false},
		{"curator edit, _etag", "GroundTruthUpdateRequest", `{"_etag": "x"}`, false},
		{"curator edit, approve", "GroundTruthUpdateRequest", `{"approve": true}`, false},
		{"curator edit, unknown history key", "GroundTruthUpdateRequest", `{"history": [{"role": "user", "msg": "Q", "extra": 1}]}`, false},
		{"assignee edit, approve", "AssignmentUpdateRequest", `{"approve": true, "etag": "x"}`, true},
		{"assignee edit, null approve", "AssignmentUpdateRequest", `{"approve": null}`, true},

		{"curation instructions", "DatasetCurationInstructions", exampleInstructions, true},
		{"curation update", "CurationInstructionsUpdate", `{"instructions": "# Rules", "_etag": "\"7b2\"", "etag": null}`, true},
		{"curation update without instructions", "CurationInstructionsUpdate", `{"_etag": "x"}`, false},
		{"frontend config", "FrontendConfig", exampleConfig, true},

		{"recompute answer", "RecomputeTagsResponse", exampleRecompute, true},
		{"recompute answer, unknown dataset", "RecomputeTagsResponse", `{"total": 0, "processed": 0, "updated": 0, "skipped": 0, "errors": [], "dry_run": true, "duration_ms": 0}`, true},
		{"recompute answer with errors", "RecomputeTagsResponse", `{"total": 2, "processed": 1, "updated": 1, "skipped": 0, "errors": ["gt-1: Item not found"], "dry_run": false, "duration_ms": 3}`, true},
		{"recompute answer, negative count", "RecomputeTagsResponse", strings.Replace(exampleRecompute, `"skipped": 113`, `"skipped": -1`, 1), false},
		{"recompute answer, camelCase key", "RecomputeTagsResponse", withKey(t, withKey(t, exampleRecompute, "dry_run", nil), "dryRun", false), false},
		{"recompute answer without errors", "RecomputeTagsResponse", withKey(t, exampleRecompute, "errors", nil), false},

		{"running job", "Job", exampleJob, true},
		{"queued job", "Job", withKey(t, withKey(t, exampleJob, "status", "queued"), "progress",
			map[string]any{"total": nil, "processed": 0, "updated": 0, "skipped": 0, "errors": 0}), true},
		{"succeeded job", "Job", withKey(t, withKey(t, withKey(t, exampleJob, "status", "succeeded"),
			"finishedAt", "2025-01-02T10:00:01.000Z"), "result", json.RawMessage(exampleRecompute)), true},
		{"failed job", "Job", withKey(t, withKey(t, exampleJob, "status", "failed"), "error",
			map[string]any{"detail": "Store is not reachable", "code": "STORE_UNAVAILABLE"}), true},
		{"job with an unknown status", "Job", withKey(t, exampleJob, "status", "done"), false},
		{"job with an unknown type", "Job", withKey(t, exampleJob, "type", "export"), false},
		{"job with a bad id", "Job", withKey(t, exampleJob, "id", "job/1"), false},
		{"job with a partial result", "Job", withKey(t, exampleJob, "result", map[string]any{"total": 1}), false},
		{"job without progress", "Job", withKey(t, exampleJob, "progress", nil), false},
		{"job with an unknown key", "Job", withKey(t, exampleJob, "kind", "x"), false},

		{"tag schema", "TagSchemaResponse", exampleTagSchema, true},
		{"tag schema with a dependency", "TagSchemaResponse", `{"version": "v1", "groups": [{"name": "topic", "values": ["install"], "exclusive": false, "depends_on": [{"group": "source", "value": "sme"}]}]}`, true},
		{"tag schema, group without depends_on", "TagSchemaResponse", `{"version": "v1", "groups": [{"name": "topic", "values": [], "exclusive": false}]}`, false},
		{"tag schema, group with a fifth key", "TagSchemaResponse", `{"version": "v1", "groups": [{"name": "topic", "values": [], "exclusive": false, "depends_on": [], "description": "x"}]}`, false},
		{"tag schema, other version", "TagSchemaResponse", strings.Replace(exampleTagSchema, `"v1"`, `"v2"`, 1), false},

		{"tag list", "TagListResponse", exampleTags, true},
		{"tag list with ignored", "TagListResponse", withKey(t, exampleTags, "ignored", []any{}), false},
		{"add tags", "AddTagsRequest", `{"tags":[" Custom : Escalation ","turns:multiturn"]}`, true},
		{"add tags without tags", "AddTagsRequest", `{}`, false},
		{"remove tags", "RemoveTagsRequest", `{"tags":["Custom : Escalation"]}`, true},
		{"remove tags, a string", "RemoveTagsRequest", `{"tags":"custom:escalation"}`, false},

		{"glossary", "GlossaryResponse", exampleGlossary, true},
		{"glossary with null descriptions", "GlossaryResponse", `{"version": "v1", "groups": [{"name": "topic", "description": null, "type": "manual", "tags": [{"key": "topic:install", "description": null}]}]}`, true},
		{"glossary with an unknown group type", "GlossaryResponse", `{"version": "v1", "groups": [{"name": "x", "description": null, "type": "other", "tags": []}]}`, false},

		{"definition request", "TagDefinitionRequest", `{"tag_key": "custom:escalation", "description": "Needs a human hand-off"}`, true},
		{"definition request, empty description", "TagDefinitionRequest", `{"tag_key": "custom:escalation", "description": ""}`, true},
		{"definition request without description", "TagDefinitionRequest", `{"tag_key": "custom:escalation"}`, false},
		{"definition request, camelCase key", "TagDefinitionRequest", `{"tagKey": "custom:escalation", "description": "x"}`, false},
		{"definition", "TagDefinitionResponse", exampleDefinition, true},
		{"definition without a creator", "TagDefinitionResponse", withKey(t, exampleDefinition, "created_by", json.RawMessage("null")), true},
		{"definition without updated_at", "TagDefinitionResponse", withKey(t, exampleDefinition, "updated_at", nil), false},

		{"self-serve body", "SelfServeRequest", `{"limit": 10}`, true},
		{"self-serve body, empty", "SelfServeRequest", `{}`, true},
		{"self-serve body, zero", "SelfServeRequest", `{"limit": 0}`, true},
		{"self-serve body, negative", "SelfServeRequest", `{"limit": -1}`, false},
		{"self-serve body, fraction", "SelfServeRequest", `{"limit": 2.5}`, false},
		{"self-serve body, string", "SelfServeRequest", `{"limit": "10"}`, false},
		{"self-serve body, null limit", "SelfServeRequest", `{"limit": null}`, false},
		{"self-serve body, unknown key", "SelfServeRequest", `{"count": 10}`, false},
		{"self-serve answer", "SelfServeResponse", exampleSelfServe, true},
		{"self-serve answer, empty queue", "SelfServeResponse", `{"assigned": [], "requested": 0, "assignedCount": 0, "newlyAssigned": 0}`, true},
		{"self-serve answer, reference shape", "SelfServeResponse", withKey(t, exampleSelfServe, "newlyAssigned", nil), false},
		{"self-serve answer, unknown key", "SelfServeResponse", withKey(t, exampleSelfServe, "skipped", 0), false},
		{"self-serve answer, partial item", "SelfServeResponse", withKey(t, exampleSelfServe, "assigned", []any{map[string]any{"id": "gt-001"}}), false},
		{"assign body", "AssignItemRequest", `{"force": true}`, true},
		{"assign body, empty", "AssignItemRequest", `{}`, true},
		{"assign body, string force", "AssignItemRequest", `{"force": "yes"}`, false},
		{"assign body, unknown key", "AssignItemRequest", `{"force": false, "user": "bob"}`, false},
		{"assign conflict", "AssignmentConflictError", exampleAssignConflict, true},
		{"assign conflict, assignedAt unknown", "AssignmentConflictError", withKey(t, exampleAssignConflict, "assignedAt", nil), true},
		{"assign conflict, lost races", "AssignmentConflictError", `{"detail": "The item was modified concurrently; retry the request", "status": 409, "code": "CONCURRENT_MODIFICATION"}`, true},
		{"assign conflict, numeric assignee", "AssignmentConflictError", withKey(t, exampleAssignConflict, "assignedTo", 7), false},
		{"assign conflict, other status", "AssignmentConflictError", withKey(t, exampleAssignConflict, "status", 400), false},
		{"assign conflict, other code", "AssignmentConflictError", withKey(t, exampleAssignConflict, "code", "ETAG_MISMATCH"), false},
		{"assign conflict without detail", "AssignmentConflictError", withKey(t, exampleAssignConflict, "detail", nil), false},
		{"search answer", "SearchResponse", exampleSearch, true},
		{"search answer, empty", "SearchResponse", `{"results": []}`, true},
		{"search answer, null title and chunk", "SearchResponse", `{"results": [{"id": "doc-1", "url": "https://x.example", "title": null, "chunk": null, "raw_payload": {"@search.score": 1.5, "url": "https://x.example"}}]}`, true},
		{"search answer without results", "SearchResponse", `{}`, false},
		{"search result without url", "SearchResult", `{"id": "doc-1", "title": null, "chunk": null, "raw_payload": {}}`, false},
		{"search result without id", "SearchResult", `{"url": "https://x.example", "title": null, "chunk": null, "raw_payload": {}}`, false},
		{"search result, unknown key", "SearchResult", `{"id": "doc-1", "url": "https://x.example", "title": null, "chunk": null, "raw_payload": {}, "score": 1}`, false},
		{"search result, array payload", "SearchResult", `{"id": "doc-1", "url": "https://x.example", "title": null, "chunk": null, "raw_payload": []}`, false},

		{"412 required", "ErrorResponse", `{"detail":"ETag required","status":412,"code":"ETAG_REQUIRED"}`, true},
		{"412 mismatch", "ErrorResponse", `{"detail":"ETag mismatch","status":412,"code":"ETAG_MISMATCH"}`, true},
		{"403 ownership", "ErrorResponse", `{"detail":"ASSIGNMENT_OWNERSHIP","status":403,"code":"ASSIGNMENT_OWNERSHIP"}`, true},
		{"400 approval", "ErrorResponse", `{"detail":"Item cannot be approved: history must include at least one agent message","status":400,"code":"INVALID_APPROVAL",
     "errors":[{"field":"history","message":"history must include at least one agent message"}]}`, true},
		{"400 tag rule", "ErrorResponse", `{"detail":"Group 'source' is exclusive; only one value allowed, got: ['sme', 'synthetic']","status":400,"code":"TAG_RULE_VIOLATION",
     "errors":[{"field":"manualTags","message":"Group 'source' is exclusive; only one value allowed, got: ['sme', 'synthetic']"}]}`, true},
		{"409 with extra keys", "ErrorResponse", `{"detail":"Item is assigned to bob","status":409,"code":"ASSIGNMENT_CONFLICT","assignedTo":"bob","assignedAt":"2025-01-02T10:00:00.000Z"}`, true},
		{"error without code", "ErrorResponse", `{"detail":"x","status":400}`, false},
		{"error with a list detail", "ErrorResponse", `{"detail":[],"status":400,"code":"BAD_REQUEST"}`, false},
		{"422", "HTTPValidationError", `{"detail":"Request validation failed: answer: unknown field","status":422,"code":"VALIDATION_ERROR",
     "errors":[{"field":"answer","message":"unknown field"}]}`, true},
		{"422 with more errors than listed", "HTTPValidationError", `{"detail":"Request validation failed: answer: unknown field (and 150 more)","status":422,"code":"VALIDATION_ERROR",
     "errors":[{"field":"answer","message":"unknown field"}],"moreErrors":150}`, true},
		{"422 with a string moreErrors", "HTTPValidationError", `{"detail":"Request validation failed: answer: unknown field","status":422,"code":"VALIDATION_ERROR",
     "errors":[{"field":"answer","message":"unknown field"}],"moreErrors":"150"}`, false},
		{"422 without errors", "HTTPValidationError", `{"detail":"Request validation failed","status":422,"code":"VALIDATION_ERROR"}`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ref := loaded.Components.Schemas[tc.schema]
			require.NotNil(t, ref, tc.schema)
			var value any
			require.NoError(t, json.Unmarshal([]byte(tc.value), &value))
			err := ref.Value.VisitJSON(value, openapi3.EnableJSONSchema2020())
			if tc.valid {
				assert.NoError(t, err)
			} else {
				assert.Error(t, err)
			}
		})
	}
}

// responseSchema is the JSON schema of one documented response.
func responseSchema(t *testing.T, loaded *openapi3.T, path, method string, status int) *openapi3.SchemaRef {
	t.Helper()
	item := loaded.Paths.Find(path)
	require.NotNil(t, item, path)
	o := item.GetOperation(method)
	require.NotNil(t, o, "%s %s", method, path)
	r := o.Responses.Status(status)
	require.NotNil(t, r, "%s %s %d", method, path, status)
	mt := r.Value.Content.Get("application/json")
	require.NotNil(t, mt, "%s %s %d", method, path, status)
	return mt.Schema
}

func TestInlineResponseSchemas(t *testing.T) {
	loaded := load(t, openapi.Document("/v1", "dev"))
	cases := []struct {
		path, method string
		status       int
		value        string
		valid        bool
	}{
		{"/healthz", "GET", 200, `{"status":"ok"}`, true},
		{"/readyz", "GET", 200, `{"status":"ready","checks":{"store":"ok"}}`, true},
		{"/readyz", "GET", 503, `{"detail":"Store is not reachable","status":503,"code":"NOT_READY","checks":{"store":"error"}}`, true},
		{"/readyz", "GET", 503, `{"detail":"Store is not reachable","status":503,"code":"NOT_READY"}`, false},
		{"/v1/ground-truths/stats", "GET", 200, `{"draft": 12, "approved": 30, "deleted": 2}`, true},
		{"/v1/ground-truths/stats", "GET", 200, `{"draft": 12, "approved": 30, "deleted": 2, "skipped": 1}`, false},
		{"/v1/ground-truths/stats", "GET", 200, `{"draft": 12, "approved": 30, "deleted": 2, "total": 44}`, false},
		{"/v1/ground-truths/{datasetName}/{bucket}/{item_id}", "DELETE", 200, `{"status":"deleted"}`, true},
		{"/v1/datasets", "GET", 200, `["alpha","beta"]`, true},
		{"/v1/datasets/{datasetName}", "DELETE", 200, `{"status":"deleted","itemsDeleted": 42,"curationInstructionsDeleted": true}`, true},
		{"/v1/datasets/{datasetName}", "DELETE", 200, `{"status":"deleted"}`, false},
		{"/v1/schemas", "GET", 200, `[{"name":"AddTagsRequest","title":"AddTagsRequest"},{"name":"Job","title":"Job"},"AddTagsRequest","Job"]`, true},
		{"/v1/schemas", "GET", 200, `[{"name":"Job"}]`, false},
		{"/v1/schemas", "GET", 200, `[{"name":"Job","title":"Job","schema":{}}]`, false},
		{"/v1/schemas/{name}", "GET", 200, `{"type":"object","title":"Job","properties":{}}`, true},
		{"/v1/schemas/{name}", "GET", 404, `{"detail":"Schema not found","status":404,"code":"NOT_FOUND"}`, true},
		{"/v1/tags", "POST", 200, `{"tags":["custom:escalation"],"computedTags":["turns:multiturn"],"ignored":["turns:multiturn"]}`, true},
		{"/v1/tags", "POST", 200, `{"tags":["custom:escalation"],"computedTags":["turns:multiturn"]}`, false},
		{"/v1/tags", "DELETE", 200, `{"tags":["answerability:answerable","source:sme"],"computedTags":["turns:multiturn"]}`, true},
		{"/v1/tags", "DELETE", 200, `{"tags":[],"computedTags":[],"ignored":[]}`, false},
		{"/v1/jobs/{id}", "GET", 404, `{"detail":"Job not found","status":404,"code":"NOT_FOUND"}`, true},
		{"/v1/assignments/my", "GET", 200, `[` + exampleItem + `]`, true},
		{"/v1/assignments/my", "GET", 200, `[]`, true},
		{"/v1/assignments/my", "GET", 200, exampleItem, false},
		{"/v1/assignments/self-serve", "POST", 200, exampleSelfServe, true},
		{"/v1/assignments/{dataset}/{bucket}/{item_id}/assign", "POST", 200, exampleItem, true},
		{"/v1/assignments/{dataset}/{bucket}/{item_id}/assign", "POST", 409, exampleAssignConflict, true},
		{"/v1/assignments/{dataset}/{bucket}/{item_id}/assign", "POST", 409, `{"detail":"Item is assigned to another curator","status":409}`, false},
		{"/v1/assignments/{dataset}/{bucket}/{item_id}/assign", "POST", 400, `{"detail":"Item is deleted; restore it before assigning","status":400,"code":"BAD_REQUEST"}`, true},
		{"/v1/assignments/{dataset}/{bucket}/{item_id}/assign", "POST", 403, `{"detail":"Forbidden: forcing an assignment needs the admin role; you have the curator role","status":403,"code":"FORBIDDEN"}`, true},
		{"/v1/assignments/{dataset}/{bucket}/{item_id}", "PUT", 403, `{"detail":"ASSIGNMENT_OWNERSHIP","status":403,"code":"ASSIGNMENT_OWNERSHIP"}`, true},
		{"/v1/assignments/{dataset}/{bucket}/{item_id}/duplicate", "POST", 201, exampleItem, true},
		{"/v1/search", "GET", 200, exampleSearch, true},
		{"/v1/search", "GET", 400, `{"detail":"q is required","status":400,"code":"INVALID_QUERY"}`, true},
		{"/v1/search", "GET", 502, `{"detail":"Search backend error: timeout","status":502,"code":"SEARCH_BACKEND_ERROR"}`, true},
		{"/v1/agent/tools/{name}", "POST", 200, `{"content":"2 datasets","data":{"totals":{}},"isError":false}`, true},
		{"/v1/agent/tools/{name}", "POST", 200, `{"content":"Invalid input","data":{"error":{"code":"INVALID_INPUT","message":"Invalid input"}},"isError":true}`, true},
		{"/v1/agent/tools/{name}", "POST", 200, `{"content":"x","isError":false}`, false},
		{"/v1/agent/tools/{name}", "POST", 404, `{"detail":"Unknown tool 'x'","status":404,"code":"UNKNOWN_TOOL"}`, true},
		{"/v1/agent/tools", "GET", 200, `{"format":"anthropic","toolsetVersion":"0123456789ab","instructions":"i","tools":[{"name":"get_item","description":"d","input_schema":{"type":"object"}}]}`, true},
		{"/v1/agent/tools", "GET", 200, `{"format":"openai","toolsetVersion":"0123456789ab","instructions":"i","tools":[{"type":"function","function":{"name":"get_item","description":"d","parameters":{"type":"object"}}}]}`, true},
		{"/v1/agent/tools", "GET", 200, `{"format":"mcp","toolsetVersion":"0123456789ab","instructions":"i","tools":[{"name":"get_item","title":"t","description":"d","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}]}`, true},
		{"/v1/agent/tools", "GET", 200, `{"format":"xml","toolsetVersion":"0123456789ab","instructions":"i","tools":[]}`, false},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			s := responseSchema(t, loaded, tc.path, tc.method, tc.status)
			var value any
			require.NoError(t, json.Unmarshal([]byte(tc.value), &value))
			err := s.Value.VisitJSON(value, openapi3.EnableJSONSchema2020())
			if tc.valid {
				assert.NoError(t, err)
			} else {
				assert.Error(t, err)
			}
		})
	}
}

func TestOperations(t *testing.T) {
	loaded := load(t, openapi.Document("/v1", "dev"))
	// The body limit and media type apply on every route, so every operation documents 413/415.
	auth := []int{401, 403, 408, 413, 415, 422, 500}
	store := append(slices.Clone(auth), 503)
	body := store
	full := 507 // a write refused for want of storage space
	item := "/v1/ground-truths/{datasetName}/{bucket}/{item_id}"
	curation := "/v1/datasets/{datasetName}/curation-instructions"
	assigned := "/v1/assignments/{dataset}/{bucket}/{item_id}"

	cases := []struct {
		method, path string
		success      []int
		errors       []int
		etag         bool
	}{
		{"GET", "/healthz", []int{200}, []int{413, 415}, false},
		{"GET", "/readyz", []int{200}, []int{503, 413, 415}, false},
		{"GET", "/v1/openapi.json", []int{200}, auth, false},
		{"GET", "/v1/config", []int{200}, auth, false},
		{"GET", "/v1/ground-truths/stats", []int{200}, store, false},
		{"POST", "/v1/ground-truths", []int{200}, append(slices.Clone(body), full), false},
		{"GET", "/v1/ground-truths", []int{200}, append(slices.Clone(store), 400), false},
		{"GET", "/v1/ground-truths/{datasetName}", []int{200}, store, false},
		{"GET", item, []int{200}, append(slices.Clone(store), 404), true},
		{"PUT", item, []int{200}, append(slices.Clone(body), 400, 404, 412, full), true},
		{"DELETE", item, []int{200}, append(slices.Clone(store), 400, 404, 409, 412, full), false},
		{"GET", "/v1/datasets", []int{200}, store, false},
		{"GET", curation, []int{200}, append(slices.Clone(store), 404), true},
		{"PUT", curation, []int{200, 201}, append(slices.Clone(body), 412, full), true},
		{"DELETE", "/v1/datasets/{datasetName}", []int{200}, append(slices.Clone(store), 409, full), false},
		{"GET", "/v1/schemas", []int{200}, auth, false},
		{"GET", "/v1/schemas/{name}", []int{200}, append(slices.Clone(auth), 404), false},
		{"POST", "/v1/ground-truths/recompute-tags", []int{200, 202}, append(slices.Clone(store), 429, full), false},
		{"GET", "/v1/jobs/{id}", []int{200}, append(slices.Clone(auth), 404), false},
		{"GET", "/v1/tags/schema", []int{200}, auth, false},
		{"GET", "/v1/tags", []int{200}, store, false},
		{"POST", "/v1/tags", []int{200}, append(slices.Clone(body), 400, full), false},
		{"DELETE", "/v1/tags", []int{200}, append(slices.Clone(body), 400, full), false},
		{"GET", "/v1/tags/glossary", []int{200}, store, false},
		{"POST", "/v1/tags/definitions", []int{201}, append(slices.Clone(body), full), false},
		{"DELETE", "/v1/tags/definitions/{tag_key}", []int{204}, append(slices.Clone(store), 404, full), false},
		{"POST", "/v1/assignments/self-serve", []int{200}, append(slices.Clone(body), full), false},
		{"GET", "/v1/assignments/my", []int{200}, store, false},
		{"PUT", assigned, []int{200}, append(slices.Clone(body), 400, 404, 412, full), true},
		{"POST", assigned + "/assign", []int{200}, append(slices.Clone(body), 400, 404, 409, full), true},
		{"POST", assigned + "/duplicate", []int{201}, append(slices.Clone(store), 400, 404, full), true},
		{"GET", "/v1/search", []int{200}, append(slices.Clone(store), 400, 502), false},
		{"GET", "/v1/ground-truths/snapshot", []int{200}, append(slices.Clone(store), 400, full), false},
		{"POST", "/v1/ground-truths/snapshot", []int{200}, append(slices.Clone(store), 400, full), false},
		{"GET", "/v1/exports", []int{200}, append(slices.Clone(store), 400), false},
		{"GET", "/v1/exports/{snapshotId}", []int{200}, append(slices.Clone(store), 404), false},
		{"GET", "/v1/exports/{snapshotId}/files/{name}", []int{200}, append(slices.Clone(store), 404), false},
		{"GET", "/v1/agent/tools", []int{200}, auth, false},
		{"POST", "/v1/agent/tools/{name}", []int{200}, append(slices.Clone(auth), 400, 404), false},
	}
	declaredTags := map[string]bool{}
	for _, tag := range loaded.Tags {
		declaredTags[tag.Name] = true
	}
	seenIDs := map[string]bool{}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			o := loaded.Paths.Find(tc.path).GetOperation(tc.method)
			require.NotNil(t, o)
			assert.NotEmpty(t, o.OperationID)
			assert.False(t, seenIDs[o.OperationID], "duplicate operationId %s", o.OperationID)
			seenIDs[o.OperationID] = true
			assert.NotEmpty(t, o.Summary)
			require.Len(t, o.Tags, 1)
			assert.True(t, declaredTags[o.Tags[0]], "tag %q is declared", o.Tags[0])

			var statuses []int
			for code := range o.Responses.Map() {
				var n int
				require.NoError(t, json.Unmarshal([]byte(code), &n), code)
				statuses = append(statuses, n)
			}
			assert.ElementsMatch(t, append(slices.Clone(tc.success), tc.errors...), statuses)

			for _, status := range tc.errors {
				s := responseSchema(t, loaded, tc.path, tc.method, status)
				want := "#/components/schemas/ErrorResponse"
				if status == 422 {
					want = "#/components/schemas/HTTPValidationError"
				}
				if status == 409 && strings.HasSuffix(tc.path, "/assign") {
					// An ErrorResponse with assignedTo and assignedAt.
					assert.Equal(t, "#/components/schemas/AssignmentConflictError", s.Ref)
					require.NotEmpty(t, s.Value.AllOf)
					s = s.Value.AllOf[0]
				}
				if s.Ref == "" && tc.path == "/readyz" {
					require.NotEmpty(t, s.Value.AllOf)
					s = s.Value.AllOf[0]
				}
				assert.Equal(t, want, s.Ref, "%d", status)
			}
			for _, status := range tc.success {
				r := o.Responses.Status(status).Value
				if status == 204 {
					assert.Empty(t, r.Content, "204 has no body")
				} else {
					assert.NotNil(t, r.Content.Get("application/json"), "%d has a JSON body", status)
				}
				if status == 202 || status == 201 && strings.HasSuffix(tc.path, "/duplicate") {
					require.Contains(t, r.Headers, "Location")
					assert.True(t, r.Headers["Location"].Value.Required)
					assert.True(t, r.Headers["Location"].Value.Schema.Value.Type.Is("string"))
				} else {
					assert.NotContains(t, r.Headers, "Location")
				}
				switch {
				case tc.etag:
					require.Contains(t, r.Headers, "ETag")
					assert.True(t, r.Headers["ETag"].Value.Required)
				case strings.HasSuffix(tc.path, "/files/{name}"):
					require.Contains(t, r.Headers, "ETag", "the file's sha256, when the manifest has it")
					assert.False(t, r.Headers["ETag"].Value.Required)
				default:
					assert.NotContains(t, r.Headers, "ETag")
				}
			}

			anonymous := tc.path == "/healthz" || tc.path == "/readyz"
			if anonymous {
				require.NotNil(t, o.Security)
				assert.Empty(t, *o.Security)
			} else {
				assert.Nil(t, o.Security, "inherits the top-level security")
			}
		})
	}
}

func TestParameters(t *testing.T) {
	loaded := load(t, openapi.Document("/v1", "dev"))
	param := func(path, method, name string) *openapi3.Parameter {
		t.Helper()
		o := loaded.Paths.Find(path).GetOperation(method)
		require.NotNil(t, o)
		p := o.Parameters.GetByInAndName("query", name)
		if p == nil {
			p = o.Parameters.GetByInAndName("path", name)
		}
		if p == nil {
			p = o.Parameters.GetByInAndName("header", name)
		}
		require.NotNil(t, p, "%s %s %s", method, path, name)
		return p
	}

	list := "/v1/ground-truths"
	assert.Equal(t, float64(1), param(list, "GET", "page").Schema.Value.Default)
	assert.Equal(t, float64(1), *param(list, "GET", "page").Schema.Value.Min)
	assert.Equal(t, float64(25), param(list, "GET", "limit").Schema.Value.Default)
	assert.Equal(t, "reviewedAt", param(list, "GET", "sortBy").Schema.Value.Default)
	assert.Equal(t, "desc", param(list, "GET", "sortOrder").Schema.Value.Default)
	pf := param(list, "GET", "pluginFilter")
	assert.Equal(t, "form", pf.Style)
	require.NotNil(t, pf.Explode)
	assert.True(t, *pf.Explode)
	assert.True(t, pf.Schema.Value.Type.Is("array"))

	assert.Equal(t, false, param(list, "POST", "approve").Schema.Value.Default)
	assert.Equal(t, false, param(list, "POST", "registerTags").Schema.Value.Default)

	item := "/v1/ground-truths/{datasetName}/{bucket}/{item_id}"
	for _, method := range []string{"GET", "PUT", "DELETE"} {
		bucket := param(item, method, "bucket")
		assert.True(t, bucket.Required)
		assert.Empty(t, bucket.Schema.Value.Format, "the server checks UUIDs itself (422)")
	}
	for _, method := range []string{"PUT", "DELETE"} {
		assert.False(t, param(item, method, "If-Match").Required)
	}
	assert.False(t, param("/v1/datasets/{datasetName}/curation-instructions", "PUT", "If-Match").Required)

	recompute := "/v1/ground-truths/recompute-tags"
	for _, name := range []string{"dry_run", "async"} {
		p := param(recompute, "POST", name)
		assert.False(t, p.Required, name)
		assert.True(t, p.Schema.Value.Type.Is("boolean"), name)
		assert.Equal(t, false, p.Schema.Value.Default, name)
	}
	assert.True(t, param(recompute, "POST", "dataset").Schema.Value.Type.Is("string"))
	assert.Equal(t, "#/components/schemas/GroundTruthStatus", param(recompute, "POST", "status").Schema.Ref)

	assigned := "/v1/assignments/{dataset}/{bucket}/{item_id}"
	for _, route := range []struct{ path, method string }{
		{assigned, "PUT"}, {assigned + "/assign", "POST"}, {assigned + "/duplicate", "POST"},
	} {
		o := loaded.Paths.Find(route.path).GetOperation(route.method)
		require.NotNil(t, o, route.path)
		var names []string
		for _, p := range o.Parameters {
			if p.Value.In == "path" {
				names = append(names, p.Value.Name)
				assert.True(t, p.Value.Required, "%s %s", route.path, p.Value.Name)
				assert.True(t, p.Value.Schema.Value.Type.Is("string"), "%s %s", route.path, p.Value.Name)
				assert.Empty(t, p.Value.Schema.Value.Format, "the server checks UUIDs itself (422)")
			}
		}
		assert.Equal(t, []string{"dataset", "bucket", "item_id"}, names, route.path)
	}
	assert.False(t, param(assigned, "PUT", "If-Match").Required)

	q := param("/v1/search", "GET", "q")
	assert.False(t, q.Required, "a missing q is a 400, not a 422")
	assert.True(t, q.Schema.Value.Type.Is("string"))
	top := param("/v1/search", "GET", "top").Schema.Value
	assert.True(t, top.Type.Is("integer"))
	assert.Equal(t, float64(5), top.Default)
	assert.Equal(t, float64(1), *top.Min)
	assert.Equal(t, float64(50), *top.Max)

	for path, name := range map[string]string{
		"/v1/schemas/{name}":             "name",
		"/v1/jobs/{id}":                  "id",
		"/v1/tags/definitions/{tag_key}": "tag_key",
	} {
		item := loaded.Paths.Find(path)
		require.NotNil(t, item, path)
		for _, o := range item.Operations() {
			p := o.Parameters.GetByInAndName("path", name)
			require.NotNil(t, p, path)
			assert.True(t, p.Required, path)
		}
	}
}

// asStrings returns a JSON type array as strings (nil for anything else).
func asStrings(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, e := range list {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func TestRequestBodies(t *testing.T) {
	loaded := load(t, openapi.Document("/v1", "dev"))
	assigned := "/v1/assignments/{dataset}/{bucket}/{item_id}"
	cases := []struct {
		method, path, schema string // schema "" means no request body
		optional             bool   // the body may be left out
	}{
		{"POST", "/v1/ground-truths", "", false}, // an inline array, checked elsewhere
		{"POST", "/v1/ground-truths/recompute-tags", "", false},
		{"POST", "/v1/tags", "AddTagsRequest", false},
		{"DELETE", "/v1/tags", "RemoveTagsRequest", false},
		{"POST", "/v1/tags/definitions", "TagDefinitionRequest", false},
		{"DELETE", "/v1/tags/definitions/{tag_key}", "", false},
		{"GET", "/v1/jobs/{id}", "", false},
		{"POST", "/v1/assignments/self-serve", "SelfServeRequest", true},
		{"GET", "/v1/assignments/my", "", false},
		{"PUT", assigned, "AssignmentUpdateRequest", false},
		{"POST", assigned + "/assign", "AssignItemRequest", true},
		{"POST", assigned + "/duplicate", "", false},
		{"GET", "/v1/search", "", false},
		{"POST", "/v1/ground-truths/snapshot", "SnapshotExportRequest", true},
		{"GET", "/v1/ground-truths/snapshot", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			o := loaded.Paths.Find(tc.path).GetOperation(tc.method)
			require.NotNil(t, o)
			if tc.path == "/v1/ground-truths" {
				require.NotNil(t, o.RequestBody)
				return
			}
			if tc.schema == "" {
				assert.Nil(t, o.RequestBody)
				return
			}
			require.NotNil(t, o.RequestBody)
			assert.Equal(t, !tc.optional, o.RequestBody.Value.Required)
			mt := o.RequestBody.Value.Content.Get("application/json")
			require.NotNil(t, mt)
			assert.Equal(t, "#/components/schemas/"+tc.schema, mt.Schema.Ref)
		})
	}
}

// assertClosed checks that every object in the named components rejects unknown keys, except
// the free-form ones at the property paths in free (such as "Job.params").
func assertClosed(t *testing.T, d *openapi.Doc, names []string, free ...string) {
	t.Helper()
	// walk visits every subschema; at is the property path, for messages.
	var walk func(at string, v any)
	walk = func(at string, v any) {
		switch v := v.(type) {
		case map[string]any:
			if slices.Contains(free, at) {
				assert.Equal(t, true, v["additionalProperties"], "%s is free-form", at)
			} else if v["type"] == "object" || slices.Contains(asStrings(v["type"]), "object") {
				assert.Equal(t, false, v["additionalProperties"], "%s is closed", at)
			}
			for k, e := range v {
				if k == "properties" {
					for pk, pv := range e.(map[string]any) {
						walk(at+"."+pk, pv)
					}
				} else {
					walk(at, e)
				}
			}
		case []any:
			for _, e := range v {
				walk(at, e)
			}
		}
	}
	for _, name := range names {
		s, ok := d.Schema(name)
		require.True(t, ok, name)
		assert.Equal(t, "object", s["type"], name)
		walk(name, s)
	}
}

// TestTagAndJobSchemasAreClosed checks that every object in the recompute, job and tag
// components rejects unknown keys, except the free-form job params.
func TestTagAndJobSchemasAreClosed(t *testing.T) {
	d := openapi.Document("/v1", "dev")
	assertClosed(t, d, []string{"RecomputeTagsResponse", "Job", "TagListResponse", "AddTagsRequest",
		"RemoveTagsRequest", "TagSchemaResponse", "TagGroupDTO", "DependencyDTO", "GlossaryResponse",
		"TagGroupGlossaryDTO", "TagDefinitionDTO", "TagDefinitionRequest", "TagDefinitionResponse"},
		"Job.params")

	group, _ := d.Schema("TagGroupDTO")
	assert.ElementsMatch(t, []any{"name", "values", "exclusive", "depends_on"}, group["required"])
	assert.Len(t, group["properties"], 4)
}

func TestUpdateRequestShapes(t *testing.T) {
	d := openapi.Document("/v1", "dev")
	props := func(name string) map[string]any {
		s, ok := d.Schema(name)
		require.True(t, ok, name)
		assert.Equal(t, false, s["additionalProperties"], name)
		return s["properties"].(map[string]any)
	}
	curator := props("GroundTruthUpdateRequest")
	assignee := props("AssignmentUpdateRequest")

	want := []string{"status", "comment", "history", "contextEntries", "toolCalls", "expectedTools",
		"feedback", "metadata", "plugins", "manualTags", "traceIds", "tracePayload", "scenarioId", "etag",
		"computedTags", "tags"}
	assert.ElementsMatch(t, want, slices.Collect(maps.Keys(curator)))
	assert.ElementsMatch(t, append(want, "approve"), slices.Collect(maps.Keys(assignee)))

	for name, p := range map[string]map[string]any{"curator": curator, "assignee": assignee} {
		assert.Equal(t, map[string]any{"$ref": "#/components/schemas/ExpectedTools"}, p["expectedTools"], name)
		history := p["history"].(map[string]any)
		assert.Equal(t, []any{
			map[string]any{"type": "array", "items": map[string]any{"$ref": "#/components/schemas/HistoryEntryPatch"}},
			map[string]any{"type": "null"},
		}, history["anyOf"], name)
	}
	assert.Equal(t, []any{"boolean", "null"}, assignee["approve"].(map[string]any)["type"])
}

// TestAssignmentAndSearchSchemas checks the assignment and search shapes: closed objects except the
// search hit's raw_payload, every answer key required, and the 409 body built on ErrorResponse.
func TestAssignmentAndSearchSchemas(t *testing.T) {
	d := openapi.Document("/v1", "dev")
	assertClosed(t, d, []string{"SelfServeRequest", "SelfServeResponse", "AssignItemRequest",
		"SearchResponse", "SearchResult"}, "SearchResult.raw_payload")

	required := func(name string) []any {
		s, ok := d.Schema(name)
		require.True(t, ok, name)
		list, _ := s["required"].([]any)
		return list
	}
	assert.ElementsMatch(t, []any{"assigned", "requested", "assignedCount", "newlyAssigned"}, required("SelfServeResponse"))
	assert.ElementsMatch(t, []any{"id", "url", "title", "chunk", "raw_payload"}, required("SearchResult"))
	assert.ElementsMatch(t, []any{"results"}, required("SearchResponse"))
	assert.Empty(t, required("SelfServeRequest"), "the limit may be left out")
	assert.Empty(t, required("AssignItemRequest"), "force may be left out")

	serve, _ := d.Schema("SelfServeRequest")
	limit := serve["properties"].(map[string]any)["limit"].(map[string]any)
	assert.Equal(t, "integer", limit["type"])
	assert.Equal(t, float64(0), limit["minimum"])
	assign, _ := d.Schema("AssignItemRequest")
	force := assign["properties"].(map[string]any)["force"].(map[string]any)
	assert.Equal(t, "boolean", force["type"])
	assert.Equal(t, false, force["default"])

	conflict, ok := d.Schema("AssignmentConflictError")
	require.True(t, ok)
	allOf := conflict["allOf"].([]any)
	require.Len(t, allOf, 2)
	assert.Equal(t, map[string]any{"$ref": "#/components/schemas/ErrorResponse"}, allOf[0])
	extra := allOf[1].(map[string]any)
	assert.Nil(t, extra["required"], "assignedTo and assignedAt are optional")
	props := extra["properties"].(map[string]any)
	assert.Equal(t, "string", props["assignedTo"].(map[string]any)["type"])
	assert.Equal(t, "date-time", props["assignedAt"].(map[string]any)["format"])
}
