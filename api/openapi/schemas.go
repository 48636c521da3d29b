package openapi

// componentSchemas returns every component schema by name. Names follow the reference GTC
// backend so that clients written against it still resolve; shapes are those this API serves.
//
// The plain names of nested types are the forms the server writes. Where the server accepts
// more on input than it writes, an "-Input" variant says so (ToolCallRecord-Input,
// ExpectedTools-Input), following the reference's own -Input/-Output naming.
func componentSchemas() map[string]schema {
	return map[string]schema{
		"AgenticGroundTruthEntry-Output": itemOutput(),
		"ItemHistoryPage":                itemHistoryPage(),
		"ItemDiff":                       itemDiff(),
		"AgenticGroundTruthEntry-Input":  itemInput(),
		"GroundTruthUpdateRequest":       updateRequest(),
		"AssignmentUpdateRequest":        assignmentUpdateRequest(),

		"HistoryEntry":         historyEntry(),
		"HistoryEntryPatch":    historyEntryPatch(),
		"ContextEntry":         contextEntry(),
		"ToolCallRecord":       toolCallRecord(true),
		"ToolCallRecord-Input": toolCallRecord(false),
		"ToolExpectation":      toolExpectation(),
		"ExpectedTools":        expectedTools(ref("ToolExpectation")),
		"ExpectedTools-Input": expectedTools(anyOf(ref("ToolExpectation"),
			str().desc(`Shorthand for {"name": <string>, "arguments": null}.`))),
		"FeedbackEntry": feedbackEntry(),
		"PluginPayload": pluginPayload(),

		"GroundTruthStatus": enum("draft", "approved", "skipped", "deleted").
			desc("`draft` is the default and the only status that counts as being in a queue; " +
				"`deleted` is a soft delete."),
		"SortField": enum("reviewedAt", "updatedAt", "id", "hasAnswer", "tagCount").
			desc("Sort key of the paged item list."),
		"SortOrder": enum("asc", "desc"),

		"GroundTruthListResponse": obj(schema{
			"items":      arr(ref("AgenticGroundTruthEntry-Output")),
			"pagination": ref("PaginationMetadata"),
		}, "items", "pagination"),
		"PaginationMetadata": paginationMetadata(),

		"ImportBulkResponse": importBulkResponse(),
		"BulkImportError": importProblem("A failed request element. Codes: `INVALID_TAG`, " +
			"`APPROVAL_VALIDATION_FAILED`, `DUPLICATE_ID`, `ITEM_TOO_LARGE`, `CREATE_FAILED`."),
		"ImportWarning": importProblem("A warning that did not block the element. Codes: " +
			"`OUTPUT_FIELDS_IGNORED` (field null), `COMPUTED_TAGS_STRIPPED` (field `manualTags`)."),
		"PIIWarning":        piiWarning(),
		"DuplicateWarning":  duplicateWarning(),
		"ValidationSummary": validationSummary(),

		"RecomputeTagsResponse": recomputeTagsResponse(),
		"Job":                   job(),

		"TagListResponse":       tagListResponse(false),
		"AddTagsRequest":        tagsRequest("The tags to add to the tag store."),
		"RemoveTagsRequest":     tagsRequest("The tags to remove from the tag store."),
		"TagSchemaResponse":     tagSchemaResponse(),
		"TagGroupDTO":           tagGroupDTO(),
		"DependencyDTO":         dependencyDTO(),
		"GlossaryResponse":      glossaryResponse(),
		"TagGroupGlossaryDTO":   tagGroupGlossaryDTO(),
		"TagDefinitionDTO":      tagDefinitionDTO(),
		"TagDefinitionRequest":  tagDefinitionRequest(),
		"TagDefinitionResponse": tagDefinitionResponse(),

		"SelfServeRequest":        selfServeRequest(),
		"SelfServeResponse":       selfServeResponse(),
		"AssignItemRequest":       assignItemRequest(),
		"AssignmentConflictError": assignmentConflictError(),

		"SearchResponse": obj(schema{
			"results": arr(ref("SearchResult")).desc("At most `top` hits, best first."),
		}, "results"),
		"SearchResult": searchResult(),

		"FrontendConfig":              frontendConfig(),
		"DatasetCurationInstructions": curationInstructions(),
		"CurationInstructionsUpdate":  curationInstructionsUpdate(),

		"ErrorResponse":       errorResponse(false),
		"HTTPValidationError": errorResponse(true),
		"FieldError": obj(schema{
			"field": str().desc("`body`, a body path such as `history[0].msg` or `[3].manualTags`, " +
				"or `query.<name>`, `path.<name>`, `header.<Name>`."),
			"message": str(),
		}, "field", "message"),
	}
}

// itemOutput is the item as every response writes it: all keys present, nulls written out.
func itemOutput() schema {
	props := schema{
		"id":            str().minLen(1).maxLen(255),
		"datasetName":   str().minLen(1).maxLen(255),
		"bucket":        str().format("uuid").desc("Storage partition; lowercase hyphenated UUID."),
		"status":        ref("GroundTruthStatus"),
		"docType":       constant("ground-truth-item"),
		"schemaVersion": str().minLen(1).maxLen(32),
		"manualTags":    arr(str()).desc("Tags set by users; normalized to `group:value`, sorted, unique."),
		"computedTags": arr(str()).
			desc("Made by the server in plugin order, not sorted; `dataset:<datasetName>` first."),
		"tags":           arr(str()).desc("Sorted, unique union of `manualTags` and `computedTags`."),
		"comment":        str(),
		"assignedTo":     nullable(str()).desc("User id of the current assignee."),
		"assignedAt":     nullable(dateTime()),
		"updatedAt":      dateTime(),
		"updatedBy":      nullable(str()).desc("The caller who last saved the item as `approved`."),
		"reviewedAt":     nullable(dateTime()).desc("When the item was last saved as `approved`."),
		"_etag":          str().desc("Opaque concurrency token; changes on every write."),
		"scenarioId":     str(),
		"history":        arr(ref("HistoryEntry")).desc("The conversation turns."),
		"contextEntries": arr(ref("ContextEntry")),
		"traceIds":       nullable(mapOf(str())),
		"toolCalls":      arr(ref("ToolCallRecord")),
		"expectedTools":  ref("ExpectedTools"),
		"feedback":       arr(ref("FeedbackEntry")),
		"metadata":       freeObject(),
		"plugins": mapOf(ref("PluginPayload")).
			desc("Plugin payloads keyed by slot name. RAG references live at " +
				"`plugins[\"rag-compat\"].data.references`."),
		"createdBy":    nullable(str()),
		"createdAt":    nullable(dateTime()).desc("Null only for items migrated without one."),
		"tracePayload": freeObject(),
		"revision": integer().desc("The number of the item's latest revision (see its history); 0 for an item " +
			"written before revisions were recorded and not changed since."),
	}
	return obj(props, sortedKeys(props)...).
		desc("A ground-truth item as the server writes it. Every key is always present.")
}

// itemInput is one element of the bulk import body. null for an optional key
// means the key was not sent.
func itemInput() schema {
	ignored := func(what string) schema {
		return anyValue().desc("Output-only " + what + "; ignored and reported as the warning " +
			"`OUTPUT_FIELDS_IGNORED`.")
	}
	return obj(schema{
		"id": str().desc("1–255 characters after trimming, without `/`, `\\`, `?`, `#` or control " +
			"characters; unique within the dataset. Blank: the server generates one."),
		"datasetName": str().minLen(1).maxLen(255).desc("Needs a non-whitespace character; no " +
			"`/`, `\\`, `?`, `#` or control characters. Stored exactly as sent."),
		"bucket": nullable(str()).desc("A UUID in any case, with or without hyphens. Absent: " +
			"derived from datasetName and id."),
		"status":        nullable(ref("GroundTruthStatus")).desc("Default `draft`."),
		"docType":       nullable(constant("ground-truth-item")),
		"schemaVersion": nullable(str().minLen(1).maxLen(32)).desc("Default `v2`."),
		"manualTags": anyOf(arr(str()), str().desc("Comma-separated tags."), null()).
			desc("Normalized to `group:value` and checked; computed keys are stripped with a warning."),
		"comment":        nullable(str()),
		"assignedTo":     nullable(str()),
		"assignedAt":     nullable(dateTime()),
		"updatedAt":      nullable(dateTime()).desc("Kept as sent; absent: now."),
		"updatedBy":      nullable(str()),
		"reviewedAt":     nullable(dateTime()),
		"scenarioId":     nullable(str()),
		"history":        nullable(arr(ref("HistoryEntry"))),
		"contextEntries": nullable(arr(ref("ContextEntry"))),
		"traceIds":       nullable(mapOf(str())),
		"toolCalls":      nullable(arr(ref("ToolCallRecord-Input"))),
		"expectedTools":  nullable(ref("ExpectedTools-Input")),
		"feedback":       nullable(arr(ref("FeedbackEntry"))),
		"metadata":       nullable(freeObject()),
		"plugins":        nullable(mapOf(ref("PluginPayload"))),
		"createdBy":      nullable(str()).desc("Absent: the importing caller."),
		"createdAt":      nullable(dateTime()).desc("Absent: now."),
		"tracePayload":   nullable(freeObject()),

		"tags":            ignored("key"),
		"computedTags":    ignored("key"),
		"_etag":           ignored("key"),
		"revision":        ignored("key"),
		"references":      ignored("export key"),
		"totalReferences": ignored("export key"),
	}, "id", "datasetName").
		desc("One element of a bulk import. Date-times accept any RFC 3339 offset; a value " +
			"without one is taken as UTC.")
}

// updateProps are the keys of both item PUT bodies. A present key replaces the whole
// stored value; null means the empty value, except where a key says otherwise.
func updateProps() schema {
	return schema{
		"status": ref("GroundTruthStatus").desc("null → 400 `INVALID_FIELD`; an unknown string → " +
			"400 `INVALID_STATUS`. `approved` sets reviewedAt and updatedBy."),
		"comment": nullable(str()),
		"history": anyOf(arr(ref("HistoryEntryPatch")), null()).
			desc("Replaces the conversation; null means []."),
		"contextEntries": nullable(arr(ref("ContextEntry"))),
		"toolCalls":      nullable(arr(ref("ToolCallRecord-Input"))),
		"expectedTools":  ref("ExpectedTools"),
		"feedback":       nullable(arr(ref("FeedbackEntry"))),
		"metadata":       nullable(freeObject()),
		"plugins":        nullable(mapOf(ref("PluginPayload"))),
		"manualTags":     nullable(arr(str())),
		"traceIds":       nullable(mapOf(str())),
		"tracePayload":   nullable(freeObject()),
		"scenarioId":     nullable(str()),
		"etag":           nullable(str()).desc("Concurrency token, used when If-Match is absent."),
		"computedTags": anyValue().deprecated().desc("Not allowed: rejected with 400 " +
			"`FIELD_NOT_ALLOWED` (`computedTags cannot be set directly; they are system-generated`)."),
		"tags": anyValue().deprecated().desc("Not allowed: rejected with 400 `FIELD_NOT_ALLOWED` " +
			"(`'tags' field is deprecated; use 'manualTags' instead`)."),
	}
}

func updateRequest() schema {
	return obj(updateProps()).desc("Curator edit of one item: a partial update. Any key not " +
		"listed, `_etag` and `approve` included, is rejected with 422.")
}

func assignmentUpdateRequest() schema {
	props := updateProps()
	props["approve"] = nullable(boolean()).desc("`true` without `status` means `status: \"approved\"`; " +
		"ignored when `status` is present.")
	return obj(props).desc("Assignee edit of one item: the curator edit plus `approve`. Any key not " +
		"listed, `_etag` included, is rejected with 422.")
}

func historyEntry() schema {
	return obj(schema{
		"role":             str().desc("Non-blank; `user` (any case) marks a user turn, any other value an agent turn."),
		"msg":              str().desc("Non-blank."),
		"turnId":           nullable(str()).desc("Left out of output when null."),
		"stepId":           nullable(str()).desc("Left out of output when null."),
		"expectedBehavior": nullable(arr(str())).desc("Left out of output when null."),
	}, "role", "msg")
}

func historyEntryPatch() schema {
	return obj(schema{
		"role":              str().desc("Blank → 400 `INVALID_FIELD`."),
		"msg":               nullable(str()).desc("Absent or null: `content` is used. Blank → 400 `INVALID_FIELD`."),
		"content":           nullable(str()).desc("Fallback for `msg`."),
		"turnId":            nullable(str()),
		"stepId":            nullable(str()),
		"expectedBehavior":  nullable(arr(str())).desc("Anything but a list of strings → 400 `INVALID_FIELD`."),
		"expected_behavior": nullable(arr(str())).desc("Alias of `expectedBehavior`, which wins when both are present."),
	}, "role").desc("One conversation turn in an item PUT; stored as a HistoryEntry.")
}

func contextEntry() schema {
	return obj(schema{
		"key":   str().desc("Non-blank; stored trimmed."),
		"value": anyValue().desc("Any JSON value, null included."),
	}, "key", "value")
}

// toolCallRecord is the output form (every key present) or the input form, where only name is
// needed and the other keys default.
func toolCallRecord(output bool) schema {
	props := schema{
		"id":            str().def(""),
		"name":          str().desc("Non-blank; stored trimmed."),
		"callType":      enum("tool", "subagent").def("tool"),
		"arguments":     nullable(freeObject()),
		"agent":         nullable(str()),
		"stepNumber":    nullable(integer().min(0)),
		"parallelGroup": nullable(str()),
		"parentCallId":  nullable(str()),
		"response":      anyValue().desc("Any JSON value; default null."),
	}
	if output {
		return obj(props, sortedKeys(props)...).desc("One recorded tool call. All nine keys are always present.")
	}
	return obj(props, "name").desc("One recorded tool call as sent; absent keys take their defaults.")
}

func toolExpectation() schema {
	return obj(schema{
		"name":      str().desc("Non-blank; stored trimmed."),
		"arguments": anyOf(freeObject(), str(), null()).desc("Default null."),
	}, "name")
}

func expectedTools(entry schema) schema {
	list := func() schema { return arr(entry).def([]any{}) }
	return obj(schema{
		"required":  list(),
		"optional":  list(),
		"notNeeded": list(),
	}).desc("Tool expectations. A tool name may appear in only one of the three lists. Requests may " +
		`also give an entry as a bare name string, stored as {"name": <string>, "arguments": null}.`)
}

func feedbackEntry() schema {
	return obj(schema{
		"source": str().def(""),
		"values": freeObject().def(schema{}),
	})
}

func pluginPayload() schema {
	return obj(schema{
		"kind":    str().desc("Non-blank."),
		"version": str().def("1.0"),
		"data":    freeObject().def(schema{}),
	}, "kind")
}

func paginationMetadata() schema {
	return obj(schema{
		"page":       integer().min(1),
		"limit":      integer().min(1),
		"total":      integer().min(0).desc("Exact number of matching items after every filter."),
		"totalPages": integer().min(0).desc("ceil(total / limit); 0 when total is 0."),
		"hasNext":    boolean(),
		"hasPrev":    boolean(),
	}, "page", "limit", "total", "totalPages", "hasNext", "hasPrev")
}

func importBulkResponse() schema {
	props := schema{
		"imported": integer().min(0).desc("Items created."),
		"failed":   integer().min(0).desc("Distinct request positions that failed."),
		"errors":   arr(ref("BulkImportError")),
		"uuids": arr(str()).desc("The final id of every request element, in request order, " +
			"failed ones included."),
		"piiWarnings":       arr(ref("PIIWarning")),
		"duplicateWarnings": arr(ref("DuplicateWarning")),
		"warnings":          arr(ref("ImportWarning")),
		"validationSummary": ref("ValidationSummary"),
	}
	return obj(props, sortedKeys(props)...)
}

func importProblem(description string) schema {
	return obj(schema{
		"index":   integer().min(0).desc("0-based position in the request array."),
		"itemId":  nullable(str()),
		"field":   nullable(str()),
		"code":    str(),
		"message": str(),
	}, "index", "itemId", "field", "code", "message").desc(description)
}

func piiWarning() schema {
	return obj(schema{
		"item_id":      str(),
		"field":        str().desc("For example `history.question` or `history[2].msg`."),
		"pattern_type": enum("email", "phone"),
		"snippet":      str().desc("Masked context around the match."),
		"position":     integer().min(0),
	}, "item_id", "field", "pattern_type", "snippet", "position").
		desc("Possible personal data in an imported item; informational only. Keys are snake_case on purpose.")
}

func duplicateWarning() schema {
	return obj(schema{
		"itemId":            str(),
		"duplicateId":       str(),
		"duplicateQuestion": str(),
		"duplicateStatus":   constant("approved"),
		"matchReason": enum("exact question and answer match", "exact question match",
			"exact history and generic fields match", "exact history match", "exact generic fields match"),
	}, "itemId", "duplicateId", "duplicateQuestion", "duplicateStatus", "matchReason").
		desc("A draft that looks like an approved item of the same dataset; informational only.")
}

func validationSummary() schema {
	return obj(schema{
		"total":     integer().min(0).desc("Request length."),
		"succeeded": integer().min(0),
		"failed":    integer().min(0),
	}, "total", "succeeded", "failed")
}

// recomputeTagsResponse is the sync answer of a recompute and the result of its job.
// The keys are snake_case, as in the reference.
func recomputeTagsResponse() schema {
	count := func(text string) schema { return integer().min(0).desc(text) }
	props := schema{
		"total":       count("Items matched."),
		"processed":   count("`updated` + `skipped`."),
		"updated":     count("Changed items (written, or that would be written in a dry run)."),
		"skipped":     count("Unchanged items."),
		"errors":      arr(str()).desc("`<id>: <message>` for each item that failed; not counted as processed."),
		"dry_run":     boolean().desc("Nothing was written."),
		"duration_ms": integer().min(0).desc("Wall time in whole milliseconds."),
	}
	return obj(props, sortedKeys(props)...).
		desc("Outcome of a tag recompute. An unknown dataset gives all zeros.")
}

// job is a background job. Jobs live in the store, where every server sees them.
func job() schema {
	count := func() schema { return integer().min(0) }
	progress := obj(schema{
		"total":     nullable(integer().min(0)).desc("Null until known."),
		"processed": count(),
		"updated":   count(),
		"skipped":   count(),
		"errors":    count().desc("A count of failed items."),
	}, "total", "processed", "updated", "skipped", "errors").desc("Running counters.")
	props := schema{
		"id":         str().set("pattern", "^[A-Za-z0-9_-]{1,64}$").desc("Opaque."),
		"type":       enum("recompute-tags"),
		"status":     enum("queued", "running", "succeeded", "failed").desc("`queued` → `running` → `succeeded` or `failed`."),
		"createdAt":  dateTime(),
		"startedAt":  nullable(dateTime()).desc("Null until the job starts."),
		"finishedAt": nullable(dateTime()).desc("Null until the job ends."),
		"createdBy":  nullable(str()),
		"params":     freeObject().desc("The request parameters as the server understood them."),
		"progress":   progress,
		"result": nullable(ref("RecomputeTagsResponse")).
			desc("When `succeeded`: the recompute answer. Otherwise null."),
		"error": nullable(obj(schema{"detail": str(), "code": str()}, "detail", "code")).
			desc("When `failed`: what went wrong. Otherwise null."),
		"resumed": count().desc("How many times a server took the job over from one that stopped (shut down, " +
			"or stopped renewing its lease) and went on from its last checkpoint."),
	}
	return obj(props, sortedKeys(props)...).
		desc("A background job, kept in the store: any server answers for it, and when the server running it " +
			"stops, another takes it over. Finished jobs are kept for `GTC_JOB_RETENTION`.")
}

// tagListResponse is the known-tag set and the static computed keys; POST /tags adds
// `ignored`.
func tagListResponse(withIgnored bool) schema {
	props := schema{
		"tags":         arr(str()).desc("The known-tag set, sorted."),
		"computedTags": arr(str()).desc("The static computed keys, sorted; `dataset:*` is never listed."),
	}
	if withIgnored {
		props["ignored"] = arr(str()).
			desc("Normalized tags that were not stored: static computed keys and `dataset:*` tags.")
	}
	return obj(props, sortedKeys(props)...)
}

func tagsRequest(description string) schema {
	return obj(schema{
		"tags": arr(str()).desc("Tags in any spelling; each is normalized to `group:value`. " +
			"A format error → 400 `INVALID_TAG_FORMAT` and nothing changes."),
	}, "tags").desc(description)
}

func tagSchemaResponse() schema {
	return obj(schema{
		"version": constant("v1"),
		"groups":  arr(ref("TagGroupDTO")).desc("Sorted by name."),
	}, "version", "groups").desc("The tag groups of the groups file (or the built-in default).")
}

func tagGroupDTO() schema {
	return obj(schema{
		"name":       str(),
		"values":     arr(str()).desc("Sorted."),
		"exclusive":  boolean().desc("At most one value of the group per item."),
		"depends_on": arr(ref("DependencyDTO")).desc("Sorted by group, then value; [] when none."),
	}, "name", "values", "exclusive", "depends_on")
}

func dependencyDTO() schema {
	return obj(schema{"group": str(), "value": str()}, "group", "value").
		desc("A tag `group:value` that the group's tags need.")
}

func glossaryResponse() schema {
	return obj(schema{
		"version": constant("v1"),
		"groups": arr(ref("TagGroupGlossaryDTO")).desc("The manual groups in configuration order, " +
			"then `computed`, then `custom` when a tag definition exists."),
	}, "version", "groups")
}

func tagGroupGlossaryDTO() schema {
	return obj(schema{
		"name":        str(),
		"description": nullable(str()),
		"type":        enum("manual", "computed", "custom"),
		"tags":        arr(ref("TagDefinitionDTO")),
	}, "name", "description", "type", "tags")
}

func tagDefinitionDTO() schema {
	return obj(schema{
		"key":         str().desc("A `group:value` tag key."),
		"description": nullable(str()),
	}, "key", "description")
}

func tagDefinitionRequest() schema {
	return obj(schema{
		"tag_key":     str().desc("1–200 characters after trimming; stored trimmed, not otherwise normalized."),
		"description": str().maxLen(10000).desc("0–10000 characters."),
	}, "tag_key", "description").desc("A glossary definition to create or replace. The keys are snake_case.")
}

func tagDefinitionResponse() schema {
	props := schema{
		"tag_key":     str(),
		"description": str(),
		"created_by":  nullable(str()).desc("The caller who first created the definition."),
		"created_at":  dateTime(),
		"updated_at":  dateTime(),
	}
	return obj(props, sortedKeys(props)...).desc("A stored glossary definition. The keys are snake_case.")
}

func selfServeRequest() schema {
	return obj(schema{
		"limit": integer().min(0).desc("How many drafts the caller's queue should hold. Absent: " +
			"`GTC_SELF_SERVE_LIMIT`. Values above `GTC_SELF_SERVE_MAX` (default 100) are clamped to it."),
	}).desc("Self-serve body. The whole body is optional; an empty body is the same as `{}`.")
}

func selfServeResponse() schema {
	count := func(text string) schema { return integer().min(0).desc(text) }
	props := schema{
		"assigned": arr(ref("AgenticGroundTruthEntry-Output")).desc("The caller's drafts that were " +
			"already assigned (oldest assignment first), then the ones claimed now (in claim order); at " +
			"most `requested`."),
		"requested":     count("The limit used, after the default and the clamp."),
		"assignedCount": count("The length of `assigned`."),
		"newlyAssigned": count("How many items this call claimed."),
	}
	return obj(props, sortedKeys(props)...).desc("The caller's queue after a self-serve. Items that " +
		"were already assigned are not written again, so their `_etag` is unchanged.")
}

func assignItemRequest() schema {
	return obj(schema{
		"force": boolean().def(false).desc("Take the item from another curator who holds it as a " +
			"draft; needs the `admin` role."),
	}).desc("Assign body. The whole body is optional; an empty body is the same as `{}`.")
}

// searchResult is one hit of the reference search. `raw_payload` is snake_case, as in the
// reference.
func searchResult() schema {
	props := schema{
		"id": str().desc("The search document key (`azure` backend), or `<itemId>:ref:<i>` " +
			"(`references` backend)."),
		"url":   str(),
		"title": nullable(str()),
		"chunk": nullable(str()).desc("The matching text. `references` backend: the reference's " +
			"`content`, else its `keyExcerpt`, else null."),
		"raw_payload": freeObject().desc("The original search hit (`azure` backend), or " +
			"`{itemId, datasetName, reference}` (`references` backend)."),
	}
	return obj(props, sortedKeys(props)...).desc("One reference search hit.")
}

func frontendConfig() schema {
	return obj(schema{
		"requireReferenceVisit": boolean().desc("UI hint only."),
		"requireKeyParagraph":   boolean().desc("UI hint only."),
		"selfServeLimit":        integer().desc("Batch size the UI asks for."),
		"trustedReferenceDomains": arr(str()).
			desc("Lower-cased domains, in configured order."),
	}, "requireReferenceVisit", "requireKeyParagraph", "selfServeLimit", "trustedReferenceDomains").
		desc("Settings for the curator web frontend.")
}

func curationInstructions() schema {
	props := schema{
		"id":            str().desc("`curation-instructions|<datasetName>`."),
		"datasetName":   str(),
		"bucket":        str().format("uuid"),
		"docType":       constant("curation-instructions"),
		"schemaVersion": str(),
		"instructions":  str(),
		"updatedAt":     dateTime(),
		"updatedBy":     nullable(str()),
		"_etag":         str().desc("Opaque concurrency token; changes on every write."),
	}
	return obj(props, sortedKeys(props)...)
}

func curationInstructionsUpdate() schema {
	return obj(schema{
		"instructions": str(),
		"_etag":        nullable(str()).desc("Concurrency token, used when If-Match is absent."),
		"etag":         nullable(str()).desc("Concurrency token, used when If-Match and `_etag` are absent."),
	}, "instructions")
}

// errorResponse is the body of every status ≥ 400; the 422 variant always lists errors.
func errorResponse(validation bool) schema {
	props := schema{
		"detail": str().desc("Human-readable message."),
		"status": integer().min(400).max(599).desc("The HTTP status code."),
		"code":   str().desc("Machine-readable error code, such as `NOT_FOUND` or `ETAG_MISMATCH`."),
		"errors": arr(ref("FieldError")).set("maxItems", 100).desc("The problems found, in document " +
			"order: every one, or the first 100 when there are more."),
		"moreErrors": integer().min(1).desc("How many problems were found beyond the 100 that `errors` " +
			"lists; left out when `errors` lists them all."),
	}
	if validation {
		props["status"] = integer().set("const", 422)
		props["code"] = enum("VALIDATION_ERROR", "INVALID_JSON")
		return obj(props, "detail", "status", "code", "errors").openEnded().
			desc("The 422 body: an ErrorResponse whose `errors` names every problem, up to 100 " +
				"(`moreErrors` counts the rest).")
	}
	return obj(props, "detail", "status", "code").openEnded().
		desc("The error body. Some statuses add keys: `assignedTo`/`assignedAt` on 409 " +
			"(AssignmentConflictError), `checks` on 503.")
}

// assignmentConflictError is the 409 body of an assign. Like ErrorResponse it is open:
// a closed branch of allOf would reject the keys the other branch lists.
func assignmentConflictError() schema {
	return schema{"allOf": []schema{
		ref("ErrorResponse"),
		{"properties": schema{
			"status": integer().set("const", 409),
			"code":   enum("ASSIGNMENT_CONFLICT", "CONCURRENT_MODIFICATION"),
			"assignedTo": str().desc("`ASSIGNMENT_CONFLICT`: the user id of the curator who holds " +
				"the item."),
			"assignedAt": dateTime().desc("`ASSIGNMENT_CONFLICT`: when that assignment was made; " +
				"left out when unknown."),
		}},
	}}.desc("The 409 of an assign: the item is a draft held by another curator " +
		"(`ASSIGNMENT_CONFLICT`, with `assignedTo` and `assignedAt`), or the write lost its race three " +
		"times (`CONCURRENT_MODIFICATION`).")
}

// itemHistoryPage is a page of an item's revisions.
func itemHistoryPage() schema {
	rev := obj(schema{
		"revision":    integer().desc("1 for the item's first revision, then one more per change."),
		"at":          dateTime(),
		"actor":       str().desc("The user id of the caller who made the change."),
		"source":      str().desc("What made it: `api`, `assignment`, `import`, `duplicate`, `recompute`, `migrate`, `restore`, `baseline` (the item as it was before its history began) or `agent:<operationId>`."),
		"operationId": str().desc("The agent operation of an `agent:` change."),
		"etagBefore":  str().desc("The item's ETag before the change; empty for its first revision."),
		"etagAfter":   str().desc("The item's ETag right after the change."),
		"paths":       arr(str()).desc("The JSON Pointers of the values that changed, e.g. `/history/0/msg`; `` for a whole new item."),
		"prunedBefore": integer().desc("On the oldest revision retention kept (`GTC_HISTORY_MAX_REVISIONS`, " +
			"`GTC_HISTORY_RETENTION_DAYS`): its own number; the revisions before it are gone."),
	}, "revision", "at", "actor", "source", "etagBefore", "etagAfter", "paths")
	return obj(schema{
		"revisions":  arr(rev).desc("Newest first."),
		"nextCursor": nullable(str()).desc("Pass as `cursor` for the next page; null after the last."),
	}, "revisions", "nextCursor")
}

// patchOp is one field-level change between two versions of an item.
func patchOp() schema {
	return obj(schema{
		"op":    enum("add", "remove", "replace"),
		"path":  str().desc("A JSON Pointer into the item's stored form."),
		"old":   anyValue().desc("The value before (remove, replace)."),
		"value": anyValue().desc("The value after (add, replace)."),
	}, "op", "path")
}

// itemDiff is the changes between two revisions of an item.
func itemDiff() schema {
	return obj(schema{
		"from":    integer(),
		"to":      integer(),
		"changes": arr(patchOp()).desc("In document order; applying them to revision `from` gives revision `to`."),
	}, "from", "to", "changes")
}
