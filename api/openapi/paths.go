package openapi

import "strconv"

// paths returns the path items of the documented operations, keyed by full path.
func paths(prefix string) map[string]schema {
	p := func(path string) string { return prefix + path }
	return map[string]schema{
		"/healthz":           {"get": healthz()},
		"/readyz":            {"get": readyz()},
		p("/openapi.json"):   {"get": getOpenAPI()},
		p("/config"):         {"get": getFrontendConfig()},
		p("/schemas"):        {"get": listSchemas()},
		p("/schemas/{name}"): {"get": getSchema()},

		p("/ground-truths/stats"):          {"get": getStats()},
		p("/ground-truths"):                {"get": listAllGroundTruths(), "post": importBulk()},
		p("/ground-truths/{datasetName}"):  {"get": listGroundTruths()},
		p("/ground-truths/recompute-tags"): {"post": recomputeTags()},
		p("/ground-truths/{datasetName}/{bucket}/{item_id}"): {
			"get":    getGroundTruth(),
			"put":    updateGroundTruth(),
			"delete": deleteGroundTruth(),
		},
		p("/ground-truths/{datasetName}/{bucket}/{item_id}/history"):            {"get": getItemHistory()},
		p("/ground-truths/{datasetName}/{bucket}/{item_id}/history/{revision}"): {"get": getItemRevision()},
		p("/ground-truths/{datasetName}/{bucket}/{item_id}/diff"):               {"get": getItemDiff()},
		p("/ground-truths/{datasetName}/{bucket}/{item_id}/restore"):            {"post": restoreItem()},
		p("/jobs/{id}"): {"get": getJob()},

		p("/assignments/self-serve"):                             {"post": selfServeAssignments()},
		p("/assignments/my"):                                     {"get": listMyAssignments()},
		p("/assignments/{dataset}/{bucket}/{item_id}"):           {"put": updateAssignedItem()},
		p("/assignments/{dataset}/{bucket}/{item_id}/assign"):    {"post": assignItem()},
		p("/assignments/{dataset}/{bucket}/{item_id}/duplicate"): {"post": duplicateAssignmentItem()},

		p("/tags/schema"):                {"get": getTagSchema()},
		p("/tags"):                       {"get": listTags(), "post": addTags(), "delete": removeTags()},
		p("/tags/glossary"):              {"get": getTagGlossary()},
		p("/tags/definitions"):           {"post": upsertTagDefinition()},
		p("/tags/definitions/{tag_key}"): {"delete": deleteTagDefinition()},

		p("/datasets"): {"get": listDatasets()},
		p("/datasets/{datasetName}/curation-instructions"): {
			"get": getCurationInstructions(),
			"put": putCurationInstructions(),
		},
		p("/datasets/{datasetName}"): {"delete": deleteDataset()},

		p("/search"): {"get": search()},
	}
}

// Shared parameters.

// nameRule is the rule of a dataset name or item id path parameter, as the parameter
// descriptions state it.
const nameRule = "1–255 characters; no `/`, `\\`, `?`, `#`, control characters or invisible " +
	"format characters (Unicode category Cf: zero-width spaces and joiners, byte-order mark, " +
	"bidirectional controls, soft hyphen, …), and not `.` or `..`. No item can have another " +
	"name, so any other value → 422 `VALIDATION_ERROR` naming the parameter (`path.<name>`), " +
	"before the store is asked."

func datasetNameParam() schema {
	return pathParam("datasetName", "Dataset name, percent-decoded once. "+nameRule)
}

// datasetParam is the dataset segment of the assignment routes, which the reference names
// `dataset` rather than `datasetName`.
func datasetParam() schema {
	return pathParam("dataset", "Dataset name, percent-decoded once. "+nameRule)
}

// storedTagRefused is the 400 of a write that keeps the stored manual tags as they are.
const storedTagRefused = "`INVALID_TAG_FORMAT`: the item holds a manual tag stored before the tag rules refused " +
	"it (an invisible format character, for example); the error names it, and a save of the item's " +
	"`manualTags` without it repairs the item."

// withPathNames documents the 422 of an operation with a dataset name or item id in its
// path.
func (o op) withPathNames() op {
	return o.fails(422, standardErrors[422]+" Here also a dataset name or item id in the path "+
		"that no item can have (see the parameter), named `path.<parameter>`.")
}

func bucketParam() schema {
	return pathParam("bucket", "The item's bucket: a UUID in any case, with or without hyphens. "+
		"Anything else → 422 `must be a UUID`.")
}

func itemIDParam() schema {
	return pathParam("item_id", "Item id, percent-decoded once. "+nameRule)
}

func ifMatchParam(description string) schema { return headerParam("If-Match", description) }

func statusQuery(description string) schema {
	return queryParam("status", ref("GroundTruthStatus"), description)
}

// Health.

func readinessChecks() schema {
	return obj(schema{"store": enum("ok", "error")}, "store")
}

func healthz() op {
	return operation("healthz", "health", "Liveness probe",
		"Answers while the process is serving; never touches the store.").
		anonymous().
		ok(200, "The process is alive.", obj(schema{"status": constant("ok")}, "status"), nil).
		addMissing(413, 415)
}

func readyz() op {
	notReady := schema{"allOf": []schema{
		ref("ErrorResponse"),
		{"properties": schema{"checks": readinessChecks()}, "required": []string{"checks"}},
	}}
	return operation("readyz", "health", "Readiness probe",
		"Checks that the item store answers a trivial read within 2 seconds.").
		anonymous().
		ok(200, "Ready to serve.", obj(schema{
			"status": constant("ready"),
			"checks": readinessChecks(),
		}, "status", "checks"), nil).
		failsWith(503, "The store is not reachable, or the server is shutting down (`NOT_READY`).", notReady).
		addMissing(413, 415)
}

// API description and settings.

func getOpenAPI() op {
	return operation("getOpenAPI", "meta", "This OpenAPI document", "").
		ok(200, "An OpenAPI 3.1.0 document.", schema{"type": "object"}, nil).
		common()
}

func getFrontendConfig() op {
	return operation("getFrontendConfig", "meta", "Settings for the curator web frontend", "").
		ok(200, "The frontend settings.", ref("FrontendConfig"), nil).
		common()
}

func listSchemas() op {
	entry := obj(schema{
		"name":  str().desc("A component schema name."),
		"title": str().desc("The schema's title, or the name when it has none."),
	}, "name", "title")
	return operation("listSchemas", "meta", "Names of the component schemas",
		"The form of the reference backend: one `{name, title}` object per component schema, "+
			"sorted by name, followed by the same names as bare strings in the same order.").
		ok(200, "The objects, then the names.", arr(anyOf(entry, str())), nil).
		common()
}

func getSchema() op {
	return operation("getSchema", "meta", "One component schema", "").
		params(pathParam("name", "A component schema name, as listed by `GET …/schemas`.")).
		ok(200, "The component's JSON Schema.", schema{"type": "object"}, nil).
		fails(404, "`Schema not found` (`NOT_FOUND`).").
		common()
}

// Ground truths.

func getStats() op {
	count := func() schema { return integer().min(0) }
	return operation("getStats", "ground-truths", "Item counts by status",
		"Counts across the whole store. `skipped` is deliberately not reported.").
		ok(200, "The counts.", obj(schema{
			"draft":    count(),
			"approved": count(),
			"deleted":  count(),
		}, "draft", "approved", "deleted"), nil).
		common().withStore()
}

func importBulk() op {
	return operation("importBulk", "ground-truths", "Bulk import",
		"Creates items. Schema problems of any element reject the whole request (422); the "+
			"per-item pipeline failures are reported in the 200 answer, which is sent even when "+
			"every item failed.").
		params(
			queryParam("approve", boolean().def(false),
				"Approve every item: set status, reviewedAt and updatedBy, and run the approval rules."),
			queryParam("registerTags", boolean().def(false),
				"Accept manual tags outside the known-tag set and add them to the tag store."),
		).
		body(arr(ref("AgenticGroundTruthEntry-Input")), "The items to create; may be empty.").
		ok(200, "The import report.", ref("ImportBulkResponse"), nil).
		fails(507, "`INSUFFICIENT_STORAGE`: the server is out of storage space and no item of the request "+
			"was saved. When some were saved, the answer is 200 and the others are listed as `CREATE_FAILED`.").
		withBody().common().withStore()
}

func listAllGroundTruths() op {
	tagList := func(what string) string {
		return "Comma-separated tags; entries trimmed, empties dropped; at most 10 of at most 100 " +
			"characters each; composed into Unicode NFC like stored tags (a `dataset:` tag is kept as " +
			"sent). " + what
	}
	return operation("listAllGroundTruths", "ground-truths", "Paged, filtered list of items", "").
		params(
			statusQuery("Only items of this status; without it every status is listed, `deleted` "+
				"included. An unknown value → 400 `INVALID_STATUS`."),
			queryParam("dataset", str(), "Exact datasetName match."),
			queryParam("tags", str(), tagList("An item matches when its `tags` holds all of them (exact, case-sensitive).")),
			queryParam("excludeTags", str(), tagList("An item is dropped when its `tags` holds any of them.")),
			queryParam("itemId", str(), "Case-sensitive substring of the id; trimmed, at most 200 characters."),
			queryParam("keyword", str(), "Case-insensitive substring of id, datasetName, comment, "+
				"history messages and reference url, title, content and keyExcerpt; trimmed, at most 200 characters."),
			queryParam("pluginFilter", arr(str()), "Repeatable `pack:key=value` filter, ANDed. "+
				"The one known key is `rag-compat:refUrl` (a reference url contains the value).").
				set("style", "form").set("explode", true),
			queryParam("sortBy", ref("SortField").def("reviewedAt"), "Sort key; `id` breaks ties."),
			queryParam("pluginSort", str(), "`pack:key` sort that overrides sortBy. The one known "+
				"key is `rag-compat:totalReferences`."),
			queryParam("sortOrder", ref("SortOrder").def("desc"), "Applies to every part of the sort key."),
			queryParam("page", integer().def(1).min(1), "1-based page; below 1 → 400 `INVALID_QUERY`."),
			queryParam("limit", integer().def(25), "Page size. Allowed range "+
				"`GTC_PAGINATION_MIN_LIMIT`..`GTC_PAGINATION_MAX_LIMIT`, by default 1..100; outside it "+
				"→ 400 `INVALID_QUERY`. The default 25 is clamped into that range."),
		).
		ok(200, "One page of items.", ref("GroundTruthListResponse"), nil).
		fails(400, "A query value breaks a rule (`INVALID_QUERY`), or `status` is unknown (`INVALID_STATUS`).").
		common().withStore()
}

func listGroundTruths() op {
	return operation("listGroundTruths", "ground-truths", "Every item of one dataset",
		"Ordered by updatedAt descending, then id ascending. A legal name no item has gives []. The "+
			"array is sent as the store is read: a long answer is chunked (no `Content-Length`), and "+
			"a store failure after it has started drops the connection, so a cut body never looks "+
			"complete; a failure before is an ordinary error answer.").
		params(datasetNameParam(), statusQuery("Only items of this status.")).
		ok(200, "The items, without pagination.", arr(ref("AgenticGroundTruthEntry-Output")), nil).
		withPathNames().common().withStore()
}

func getGroundTruth() op {
	return operation("getGroundTruth", "ground-truths", "Read one item", "").
		params(datasetNameParam(), bucketParam(), itemIDParam()).
		ok(200, "The item.", ref("AgenticGroundTruthEntry-Output"), etagHeader()).
		fails(404, "`Item not found` (`NOT_FOUND`).").
		withPathNames().common().withStore()
}

func updateGroundTruth() op {
	return operation("updateGroundTruth", "ground-truths", "Curator edit of one item",
		"Partial update: each present key replaces the stored value. A token is required, from "+
			"If-Match or the body's `etag`.").
		params(datasetNameParam(), bucketParam(), itemIDParam(),
			ifMatchParam("Concurrency token; wins over the body's `etag`. Quotes and `W/` are tolerated.")).
		body(ref("GroundTruthUpdateRequest"), "The keys to change.").
		ok(200, "The item as stored now.", ref("AgenticGroundTruthEntry-Output"), etagHeader()).
		fails(400, "`FIELD_NOT_ALLOWED`, `INVALID_FIELD`, `INVALID_STATUS`, `INVALID_TAG_FORMAT`, "+
			"`TAG_RULE_VIOLATION`, `INVALID_APPROVAL` or `ITEM_TOO_LARGE`, in that check order.").
		fails(404, "`Item not found` (`NOT_FOUND`).").
		fails(412, "`ETag required` (`ETAG_REQUIRED`) or `ETag mismatch` (`ETAG_MISMATCH`).").
		withPathNames().withBody().common().withStore().withWrites()
}

func deleteGroundTruth() op {
	return operation("deleteGroundTruth", "ground-truths", "Soft delete one item",
		"Sets status `deleted`; the assignment is kept and the item stays readable.").
		params(datasetNameParam(), bucketParam(), itemIDParam(),
			ifMatchParam("Optional concurrency token; when given it must match.")).
		ok(200, "Deleted (also when it already was).",
			obj(schema{"status": constant("deleted")}, "status"), nil).
		fails(400, storedTagRefused).
		fails(404, "`Item not found` (`NOT_FOUND`).").
		fails(409, "").
		fails(412, "").
		withPathNames().common().withStore().withWrites()
}

func recomputeTags() op {
	return operation("recomputeTags", "ground-truths", "Recompute the computed tags of stored items",
		"For each matching item, recomputes `computedTags` and strips computed keys from "+
			"`manualTags`; a changed item is written with a conditional write that leaves "+
			"`updatedAt`, `updatedBy`, `reviewedAt` and the assignment alone. Approval rules do not "+
			"run. A request body is ignored.").
		params(
			queryParam("dataset", str(), "Exact datasetName match. An unknown dataset gives all zeros."),
			statusQuery("Only items of this status. An unknown value → 422."),
			queryParam("dry_run", boolean().def(false), "Count what would change and write nothing."),
			queryParam("async", boolean().def(false), "Run as a background job and answer 202 at once."),
		).
		ok(200, "The run is over (`async=false`).", ref("RecomputeTagsResponse"), nil).
		ok(202, "The job is queued (`async=true`); its `result` will have the 200 shape.",
			ref("Job"), locationHeader("The job's status URL, `{prefix}/jobs/<id>`.")).
		fails(507, "`INSUFFICIENT_STORAGE` (`async=false`): the server ran out of storage space and the "+
			"recompute stopped; items already refreshed keep their new tags. An async job fails with the "+
			"same code in its `error`.").
		fails(429, "`JOBS_BUSY` (`async=true`): `GTC_MAX_CONCURRENT_JOBS` jobs are running and "+
			"`GTC_JOBS_MAX_QUEUED` more are waiting; no job was made. `Retry-After` estimates when the queue "+
			"has room: the mean run time of the last jobs divided by `GTC_MAX_CONCURRENT_JOBS`, between 1 and "+
			"300 seconds (10 before any job has finished).").
		retryAfter(429).
		common().withStore()
}

// retryAfter adds the required Retry-After header to the answer of status.
func (o op) retryAfter(status int) op {
	r := o.responses()[strconv.Itoa(status)].(schema)
	r["headers"] = schema{"Retry-After": schema{
		"description": "Seconds to wait before retrying.",
		"required":    true,
		"schema":      integer().min(1),
	}}
	return o
}

// Jobs.

func getJob() op {
	return operation("getJob", "jobs", "Status of a background job", "").
		params(pathParam("id", "The job id.")).
		ok(200, "The job.", ref("Job"), nil).
		fails(404, "`Job not found` (`NOT_FOUND`): unknown, expired after `GTC_JOB_RETENTION`, or "+
			"lost in a restart.").
		common()
}

// Assignments.

func selfServeAssignments() op {
	return operation("selfServeAssignments", "assignments", "Fill the caller's queue",
		"Tops the caller's queue up to `limit` drafts. When the caller already holds that many, "+
			"the answer is the first `limit` of them and nothing is written. Otherwise items are "+
			"drawn at random from the pool (unassigned drafts, and skipped items held by someone "+
			"else), following `GTC_SAMPLING_ALLOCATION` when it is set, and claimed one by one: "+
			"assignedTo = caller, assignedAt = now, status `draft`. A claim that loses a race is "+
			"skipped, and one more draw replaces the losses.").
		optionalBody(ref("SelfServeRequest"), "The queue size; absent or empty means `GTC_SELF_SERVE_LIMIT`.").
		ok(200, "The caller's queue.", ref("SelfServeResponse"), nil).
		fails(422, standardErrors[422]+" Here also a `limit` that is not an integer or is negative.").
		withBody().common().withStore().withWrites()
}

func listMyAssignments() op {
	return operation("listMyAssignments", "assignments", "The caller's queue",
		"The drafts assigned to the caller, oldest assignment first, then by id. Skipped, approved "+
			"and deleted items never appear. Streamed like the dataset list: a long answer is chunked, "+
			"and a store failure after it has started drops the connection.").
		ok(200, "The items, as a bare array; [] when the queue is empty.",
			arr(ref("AgenticGroundTruthEntry-Output")), nil).
		common().withStore()
}

func updateAssignedItem() op {
	return operation("updateAssignedItem", "assignments", "Assignee edit of one item",
		"The curator edit of `PUT …/ground-truths/{datasetName}/{bucket}/{item_id}` plus `approve`, "+
			"for the caller's own items and unassigned ones. A token is required, from If-Match or "+
			"the body's `etag`. A final status of `approved` also sets reviewedAt and updatedBy and "+
			"clears the assignment; `deleted` clears the assignment; `skipped` keeps it, and the item "+
			"leaves the queue.").
		params(datasetParam(), bucketParam(), itemIDParam(),
			ifMatchParam("Concurrency token; wins over the body's `etag`. Quotes and `W/` are tolerated.")).
		body(ref("AssignmentUpdateRequest"), "The keys to change.").
		ok(200, "The item as stored now.", ref("AgenticGroundTruthEntry-Output"), etagHeader()).
		fails(400, "`FIELD_NOT_ALLOWED`, then (after the ownership and token checks) `INVALID_FIELD`, "+
			"`INVALID_STATUS`, `INVALID_TAG_FORMAT`, `TAG_RULE_VIOLATION`, `INVALID_APPROVAL` or "+
			"`ITEM_TOO_LARGE`, in that check order.").
		fails(403, "`ASSIGNMENT_OWNERSHIP`: the item is assigned to someone else; or the principal "+
			"is refused by the allow-lists (`FORBIDDEN`).").
		fails(404, "`Item not found` (`NOT_FOUND`).").
		fails(412, "`ETag required` (`ETAG_REQUIRED`) or `ETag mismatch` (`ETAG_MISMATCH`).").
		withPathNames().withBody().common().withStore().withWrites()
}

func assignItem() op {
	return operation("assignItem", "assignments", "Assign one item to the caller",
		"Sets assignedTo = caller, assignedAt = now and status `draft`, also for an approved or "+
			"skipped item and for one held by someone else that is not a draft; reviewedAt and "+
			"updatedBy are unchanged. A deleted item is refused, so that assigning never restores it "+
			"silently. A draft held by another curator is protected: without `force` the answer is "+
			"409, and `force` needs the `admin` role. A write that loses a race is "+
			"evaluated again.").
		params(datasetParam(), bucketParam(), itemIDParam()).
		optionalBody(ref("AssignItemRequest"), "Absent or empty means `{\"force\": false}`.").
		ok(200, "The item, now the caller's draft.", ref("AgenticGroundTruthEntry-Output"), etagHeader()).
		fails(400, "`Item is deleted; restore it before assigning` (`BAD_REQUEST`); or "+storedTagRefused).
		fails(403, "`FORBIDDEN`: `force` without the `admin` role (the detail names it), a caller "+
			"below the curator role, or a refused principal.").
		fails(404, "`Item not found` (`NOT_FOUND`).").
		failsWith(409, "`ASSIGNMENT_CONFLICT`: the item is a draft held by another curator and "+
			"`force` is not set; or the write lost its race three times (`CONCURRENT_MODIFICATION`).",
			ref("AssignmentConflictError")).
		withPathNames().withBody().common().withStore().withWrites()
}

func duplicateAssignmentItem() op {
	return operation("duplicateAssignmentItem", "assignments", "Make a rephrase copy of one item",
		"Creates a draft in the same dataset and bucket with a generated id, copying the content "+
			"fields of the original, assigned to and created by the caller, with the manual tag "+
			"`rephrase:<original id>` (also added to the tag store). The original is not changed. "+
			"A request body is ignored.").
		params(datasetParam(), bucketParam(), itemIDParam()).
		ok(201, "The new item.", ref("AgenticGroundTruthEntry-Output"), headers(etagHeader(),
			locationHeader("The new item's URL, `{prefix}/ground-truths/<dataset>/<bucket>/<newId>`, "+
				"each segment percent-encoded."))).
		fails(400, "`INVALID_TAG_FORMAT` or `TAG_RULE_VIOLATION` (only with bad data already stored) or `ITEM_TOO_LARGE`.").
		fails(403, "`ASSIGNMENT_OWNERSHIP`: the original is assigned to someone else; or the "+
			"principal is refused by the allow-lists (`FORBIDDEN`).").
		fails(404, "`Item not found` (`NOT_FOUND`).").
		withPathNames().common().withStore().withWrites()
}

// Tags.

func getTagSchema() op {
	return operation("getTagSchema", "tags", "The tag groups",
		"Built from the groups file (`GTC_MANUAL_TAGS_CONFIG_PATH`) or the built-in default.").
		ok(200, "The tag schema.", ref("TagSchemaResponse"), nil).
		common()
}

func listTags() op {
	return operation("listTags", "tags", "Known tags and static computed keys", "").
		ok(200, "The tags.", ref("TagListResponse"), nil).
		common().withStore()
}

func addTags() op {
	return operation("addTags", "tags", "Add tags to the tag store",
		"Static computed keys and `dataset:*` tags are not stored; they are listed in `ignored`.").
		body(ref("AddTagsRequest"), "The tags to add.").
		ok(200, "The tags now known, and the ignored ones.", tagListResponse(true).
			desc("TagListResponse plus `ignored`."), nil).
		fails(400, "A tag is not `group:value`, or holds a comma, a control character or an invisible "+
			"format character (`INVALID_TAG_FORMAT`); nothing is stored.").
		withBody().common().withStore().withWrites()
}

func removeTags() op {
	return operation("removeTags", "tags", "Remove tags from the tag store",
		"Idempotent. Stored entries in another spelling of a removed tag (one that normalizes to "+
			"it) are removed too. Tags of the allow-list setting or the groups file stay known.").
		body(ref("RemoveTagsRequest"), "The tags to remove.").
		ok(200, "The tags now known.", ref("TagListResponse"), nil).
		fails(400, "A tag is not `group:value`, or holds a comma, a control character or an invisible "+
			"format character (`INVALID_TAG_FORMAT`); nothing is removed.").
		withBody().common().withStore().withWrites()
}

func getTagGlossary() op {
	return operation("getTagGlossary", "tags", "Descriptions of every tag",
		"Manual groups in configuration order, then `computed`, then `custom` when a definition exists.").
		ok(200, "The glossary.", ref("GlossaryResponse"), nil).
		common().withStore()
}

func upsertTagDefinition() op {
	return operation("upsertTagDefinition", "tags", "Create or update a glossary definition",
		"The key is stored trimmed and composed into Unicode NFC, otherwise as sent. An existing "+
			"definition keeps its creator and creation time. The creator is the caller; a "+
			"`user_id` query parameter is ignored. A definition does not make its tag known.").
		body(ref("TagDefinitionRequest"), "The definition.").
		ok(201, "Stored (created or updated).", ref("TagDefinitionResponse"), nil).
		fails(422, standardErrors[422]+" Here also `tag_key` outside 1–200 characters after "+
			"trimming and composing into Unicode NFC, or holding an invisible format character "+
			"(Unicode category Cf), or `description` over 10000 characters.").
		withBody().common().withStore().withWrites()
}

func deleteTagDefinition() op {
	return operation("deleteTagDefinition", "tags", "Delete a glossary definition", "").
		params(pathParam("tag_key", "Tag key, percent-decoded once; any character except `/`.")).
		empty(204, "Deleted; no body.").
		fails(404, "`Tag definition '<tag_key>' not found` (`NOT_FOUND`).").
		common().withStore().withWrites()
}

// Datasets.

func listDatasets() op {
	return operation("listDatasets", "datasets", "Dataset names",
		"The distinct datasetName values of items of any status, sorted.").
		ok(200, "The names.", arr(str()), nil).
		common().withStore()
}

func getCurationInstructions() op {
	return operation("getCurationInstructions", "datasets", "Read a dataset's curation instructions", "").
		params(datasetNameParam()).
		ok(200, "The instructions.", ref("DatasetCurationInstructions"), etagHeader()).
		fails(404, "`Not found`: the dataset has no instructions (`NOT_FOUND`).").
		withPathNames().common().withStore()
}

func putCurationInstructions() op {
	return operation("putCurationInstructions", "datasets", "Create or replace a dataset's curation instructions",
		"Token: If-Match, else `_etag`, else `etag`. Creating needs no token; replacing needs the current one.").
		params(datasetNameParam(), ifMatchParam("Concurrency token; wins over the body's tokens.")).
		body(ref("CurationInstructionsUpdate"), "The new instructions.").
		ok(200, "Replaced.", ref("DatasetCurationInstructions"), etagHeader()).
		ok(201, "Created.", ref("DatasetCurationInstructions"), etagHeader()).
		fails(412, "`ETag required` when the document exists and no token was given (`ETAG_REQUIRED`); "+
			"`ETag mismatch` for a stale token or a token for a missing document (`ETAG_MISMATCH`).").
		withPathNames().withBody().common().withStore().withWrites()
}

func deleteDataset() op {
	return operation("deleteDataset", "datasets", "Delete a dataset",
		"Hard-deletes every item of the dataset, its curation instructions and its assignments. "+
			"A legal name no item has gives zero counts.").
		params(datasetNameParam()).
		ok(200, "Deleted.", obj(schema{
			"status":                      constant("deleted"),
			"itemsDeleted":                integer().min(0),
			"curationInstructionsDeleted": boolean(),
		}, "status", "itemsDeleted", "curationInstructionsDeleted"), nil).
		fails(409, "").
		withPathNames().common().withStore().withWrites()
}

// Search.

func search() op {
	return operation("search", "search", "Reference search",
		"Searches the backend chosen by `GTC_SEARCH_BACKEND`: Azure AI Search, the stored "+
			"references of items that are not deleted (case-insensitive substring of url, title, "+
			"content or keyExcerpt; the first hit per url wins), or none (always no results).").
		params(
			queryParam("q", str(), "The search text. Missing or blank after trimming → 400 "+
				"`q is required` (`INVALID_QUERY`)."),
			queryParam("top", integer().def(5).min(1).max(50), "Maximum number of results."),
		).
		ok(200, "The hits.", ref("SearchResponse"), nil).
		fails(400, "`q is required` (`INVALID_QUERY`).").
		fails(422, standardErrors[422]+" Here also a `top` outside 1..50.").
		fails(502, "The search service failed: `Search backend error: <short reason>` "+
			"(`SEARCH_BACKEND_ERROR`).").
		common().withStore()
}

func getItemHistory() op {
	return operation("getItemHistory", "ground-truths", "The revisions of one item",
		"Every change to an item is recorded as a revision, in the same write: who, when, through what, "+
			"and which values changed. An item written before revisions were recorded starts its history "+
			"with a `baseline` revision at its next change.").
		params(datasetNameParam(), bucketParam(), itemIDParam(),
			queryParam("limit", integer().def(50), "Page size, 1 to 200."),
			queryParam("cursor", str(), "The `nextCursor` of the page before.")).
		ok(200, "A page of revisions, newest first.", ref("ItemHistoryPage"), nil).
		fails(404, "`Item not found` (`NOT_FOUND`).").
		withPathNames().common().withStore()
}

func getItemRevision() op {
	return operation("getItemRevision", "ground-truths", "One item as it was after a revision", "").
		params(datasetNameParam(), bucketParam(), itemIDParam(),
			pathParam("revision", "A revision number: a positive integer. Anything else → 422.")).
		ok(200, "The item as it was, with `revision` and the `_etag` it had then.", ref("AgenticGroundTruthEntry-Output"), nil).
		fails(404, "`Item not found`, or the item has no such revision (`NOT_FOUND`).").
		withPathNames().common().withStore()
}

func getItemDiff() op {
	return operation("getItemDiff", "ground-truths", "The changes between two revisions of one item", "").
		params(datasetNameParam(), bucketParam(), itemIDParam(),
			queryParam("from", integer(), "Required: the earlier revision."),
			queryParam("to", integer(), "The later revision; default the current one.")).
		ok(200, "The field-level changes, with old and new values.", ref("ItemDiff"), nil).
		fails(404, "`Item not found`, or the item has no such revision (`NOT_FOUND`).").
		fails(422, standardErrors[422]+" Here also `from` after `to`, or a revision that is not a positive integer.").
		withPathNames().common().withStore()
}

func restoreItem() op {
	return operation("restoreItem", "ground-truths", "Restore an earlier revision of one item",
		"Writes the content of the revision (every key a curator PUT may change, status included) as "+
			"the item's next revision, through the same checks as a PUT: computed tags are made again, "+
			"validators and approval rules apply. The assignment is left as it is. The item's history "+
			"keeps every revision.").
		params(datasetNameParam(), bucketParam(), itemIDParam(),
			ifMatchParam("Required: the current item's token. Quotes and `W/` are tolerated.")).
		body(obj(schema{"revision": integer().desc("The revision to restore: a positive integer.")}, "revision"),
			"The revision.").
		ok(200, "The item as stored now.", ref("AgenticGroundTruthEntry-Output"), etagHeader()).
		fails(400, "The restored content breaks a rule now in force: `TAG_RULE_VIOLATION`, `INVALID_APPROVAL`, "+
			"`ITEM_TOO_LARGE` and the other checks of a PUT.").
		fails(404, "`Item not found`, or the item has no such revision (`NOT_FOUND`).").
		fails(412, "`ETag required` (`ETAG_REQUIRED`) or `ETag mismatch` (`ETAG_MISMATCH`).").
		withPathNames().withBody().common().withStore().withWrites()
}
