package openapi

// exportPaths are the snapshot and export operations.
func exportPaths(prefix string) map[string]schema {
	p := func(path string) string { return prefix + path }
	return map[string]schema{
		p("/ground-truths/snapshot"):            {"get": downloadSnapshot(), "post": exportSnapshot()},
		p("/exports"):                           {"get": listExports()},
		p("/exports/{snapshotId}"):              {"get": getExportManifest()},
		p("/exports/{snapshotId}/files/{name}"): {"get": getExportFile()},
	}
}

// exportSchemas are the component schemas of the export operations.
func exportSchemas() map[string]schema {
	return map[string]schema{
		"SnapshotExportRequest": obj(schema{
			"format": nullable(str()).desc("`json_snapshot_payload` (default), `json_items`, `jsonl`, `csv` or `parquet`. " +
				"Another string → 400 `UNKNOWN_FORMAT`; a non-string → 422."),
			"filters": anyOf(ref("ExportFilters"), null()),
			"processors": nullable(arr(str())).desc("Processor chain in order: `merge_tags`, `strip_internal`, " +
				"`split_turns`. Absent or null: `GTC_EXPORT_PROCESSOR_ORDER`; `[]`: none. Unknown or repeated " +
				"names → 400."),
			"delivery": anyOf(ref("ExportDeliveryOptions"), null()),
		}).set("additionalProperties", false).desc("Every key is optional; an empty body, `{}` and `null` " +
			"mean every default. Unknown keys at any level → 422."),
		"ExportFilters": obj(schema{
			"datasetNames": nullable(arr(str())).desc("Exact dataset names; absent, null or `[]`: every " +
				"dataset. A blank entry → 400 `INVALID_FIELD`."),
			"status": str().def("approved").desc("`draft`, `approved`, `skipped`, `deleted`, or `\"\"` for " +
				"every status. Another value → 400 `INVALID_STATUS`; null → 422."),
		}).set("additionalProperties", false),
		"ExportDeliveryOptions": obj(schema{
			"mode": nullable(enum("attachment", "stream", "artifact")).def("attachment").
				desc("`attachment`: buffered download; `stream`: chunked download; `artifact`: a snapshot " +
					"in export storage. Another value → 422."),
		}).set("additionalProperties", false),
		"SnapshotPayload": obj(schema{
			"schemaVersion": constant("v2"),
			"snapshotAt":    snapshotAt(),
			"filters":       exportFiltersEcho(),
			"items":         arr(freeObject()).desc("The export records, in (datasetName, id) order."),
			"count":         integer().min(0),
			"datasetNames":  arr(str()).desc("Sorted, distinct dataset names of the records written."),
		}, "schemaVersion", "snapshotAt", "filters", "items", "count", "datasetNames").
			desc("The `json_snapshot_payload` body, written in this key order."),
		"SnapshotArtifactResponse": obj(schema{
			"status":       constant("ok"),
			"snapshotId":   snapshotID(),
			"snapshotDir":  str().desc("Storage key of the snapshot directory, `exports/snapshots/<snapshotId>`."),
			"manifestPath": str().desc("Storage key of the manifest."),
			"count":        integer().min(0),
			"manifestUrl":  str().desc("`{prefix}/exports/<snapshotId>`."),
		}, "status", "snapshotId", "snapshotDir", "manifestPath", "count", "manifestUrl"),
		"SnapshotSummary": obj(schema{
			"snapshotId":   snapshotID(),
			"snapshotAt":   nullable(str()),
			"createdAt":    nullable(str()),
			"createdBy":    nullable(str()),
			"format":       nullable(str()),
			"count":        nullable(integer()),
			"datasetNames": nullable(arr(str())),
			"fileCount":    integer().min(0),
			"totalBytes":   integer().min(0),
			"manifestUrl":  str(),
		}, "snapshotId", "snapshotAt", "createdAt", "createdBy", "format", "count", "datasetNames",
			"fileCount", "totalBytes", "manifestUrl").
			desc("Keys an older (reference-era) manifest lacks are null."),
		"SnapshotListResponse": obj(schema{
			"items":      arr(ref("SnapshotSummary")),
			"pagination": ref("PaginationMetadata"),
		}, "items", "pagination"),
		"SnapshotManifest": obj(schema{
			"schemaVersion": str(),
			"snapshotId":    snapshotID(),
			"snapshotAt":    str(),
			"createdAt":     str(),
			"createdBy":     str(),
			"format":        str(),
			"processors":    arr(str()),
			"filters":       exportFiltersEcho(),
			"datasetNames":  arr(str()),
			"count":         integer().min(0),
			"files":         arr(ref("SnapshotFile")).desc("Sorted by name."),
			"items": arr(ref("SnapshotItem")).desc("Every exported item at the revision it was exported " +
				"at, in (datasetName, id) order, one compact entry a line; the last key. Absent from a " +
				"manifest written before items had revisions."),
		}, "snapshotId", "files").openEnded().
			desc("The stored manifest. A reference-era manifest gets `snapshotId`, and `files` from a " +
				"directory listing (with null `sha256` and `contentType`, without `items`)."),
		"SnapshotItem": obj(schema{
			"datasetName": str(),
			"id":          str(),
			"revision":    integer().min(0).desc("The item's revision when it was exported; 0 for an item not written since history was kept."),
		}, "datasetName", "id", "revision"),
		"SnapshotFile": obj(schema{
			"name":        str(),
			"bytes":       integer().min(0),
			"sha256":      nullable(str()).desc("64 lower-case hex digits."),
			"contentType": nullable(str()),
			"items":       integer().min(0).desc("1 for a per-record file, `count` for a single-file format."),
		}, "name", "bytes", "sha256", "contentType"),
	}
}

func snapshotAt() schema {
	return str().set("pattern", `^[0-9]{8}T[0-9]{6}Z$`).desc("UTC start of the export, `YYYYMMDDTHHMMSSZ`.")
}

func snapshotID() schema {
	return str().set("pattern", `^[0-9]{8}T[0-9]{6}Z(-[0-9]+)?$`).
		desc("`snapshotAt`, with `-2`, `-3`, … when an earlier export took that second.")
}

func exportFiltersEcho() schema {
	return obj(schema{
		"status":       str(),
		"datasetNames": arr(str()),
	}, "status").desc("The filters as sent: `status` (default `approved`), and `datasetNames` only when " +
		"the request had that list.")
}

// downloadContent is the body of an export download in each format.
func downloadContent() schema {
	return schema{
		"application/json": schema{"schema": anyOf(ref("SnapshotPayload"), arr(freeObject())).
			desc("`json_snapshot_payload`, or `json_items` (an array of records).")},
		"application/x-ndjson":    schema{"schema": str().desc("`jsonl`: one compact record per line.")},
		"text/csv; charset=utf-8": schema{"schema": str().desc("`csv`: RFC 4180 with a header row.")},
		"application/vnd.apache.parquet": schema{"schema": str().set("format", "binary").desc("`parquet`: an " +
			"Apache Parquet file, one row per record, in the columns the README's \"Parquet schema\" lists.")},
	}
}

func contentDisposition(description string) schema {
	return schema{"Content-Disposition": schema{"description": description, "required": true, "schema": str()}}
}

func exportErrors(o op) op {
	return o.
		fails(400, "`UNKNOWN_FORMAT`, `UNKNOWN_PROCESSOR`, `DUPLICATE_PROCESSOR`, `INVALID_STATUS`, "+
			"`INVALID_FIELD` (all problems listed in `errors`; unknown names also list the known ones), or "+
			"`EXPORT_RECORD_INVALID` (`<processor>: record '<id>': <message>`) when a processor rejects a "+
			"record before the response has started.").
		fails(500, "`Internal server error` (`INTERNAL`), or `Export storage write failed` "+
			"(`STORAGE_ERROR`) when export storage refuses a write part-way; the partial snapshot has no "+
			"manifest and is never listed.").
		fails(503, "`STORE_UNAVAILABLE`: the store or export storage cannot be reached, before or part-way "+
			"through an artifact export (nothing partial is listed); `EXPORT_BUSY` "+
			"(`Too many exports are running; retry later`, with `Retry-After: 10`) when "+
			"`GTC_EXPORT_MAX_CONCURRENT` exports are running and none ends within 5 s.").
		fails(507, "`INSUFFICIENT_STORAGE`: export storage (an artifact) or the server's temporary space "+
			"(an attachment) is out of space; nothing partial is kept or sent. An artifact export to local "+
			"export storage is also refused before it starts, with nothing written, while that disk has less "+
			"than `GTC_EXPORT_MIN_FREE_BYTES` free; the message gives both figures.")
}

func downloadSnapshot() op {
	o := operation("downloadSnapshot", "exports", "Download the approved items",
		"The same as POST with `{\"format\":\"json_snapshot_payload\",\"filters\":{\"status\":\"approved\"},"+
			"\"delivery\":{\"mode\":\"attachment\"}}`; the processors of `GTC_EXPORT_PROCESSOR_ORDER` apply. "+
			"The curator frontend's \"Export JSON\".")
	o.responses()["200"] = schema{
		"description": "The snapshot, produced whole before it is sent.",
		"content":     jsonContent(ref("SnapshotPayload")),
		"headers": headers(contentDisposition("`attachment; filename=\"ground-truth-snapshot-<snapshotAt>.json\"`"),
			contentLength()),
	}
	return exportErrors(o).common()
}

func contentLength() schema {
	return schema{"Content-Length": schema{"required": true, "schema": integer()}}
}

func exportSnapshot() op {
	o := operation("exportSnapshot", "exports", "Export items",
		"Runs the export pipeline: the items matching the filters, read page by page in (datasetName, id) "+
			"order, through the processors, then the formatter. `attachment` (default) produces the whole "+
			"body before sending it (any failure is an ordinary error); `stream` sends it chunked once the "+
			"first page is processed and aborts the connection if the store fails later; `artifact` writes a "+
			"snapshot to export storage and answers with its summary.").
		optionalBody(ref("SnapshotExportRequest"), "The export; absent or empty means every default.")
	o.responses()["200"] = schema{
		"description": "`attachment` and `stream`: the body in the requested format (download name " +
			"`ground-truth-snapshot-<snapshotAt>.json` or `ground-truth-items-<snapshotAt>.<json|jsonl|csv|parquet>`). " +
			"`artifact`: the snapshot summary (`application/json`, `SnapshotArtifactResponse`) with " +
			"`Location: {prefix}/exports/<snapshotId>`.",
		"content": func() schema {
			c := downloadContent()
			c["application/json"] = schema{"schema": anyOf(ref("SnapshotPayload"), arr(freeObject()), ref("SnapshotArtifactResponse"))}
			return c
		}(),
	}
	return exportErrors(o).common()
}

func listExports() op {
	return operation("listExports", "exports", "List stored snapshots",
		"The complete snapshots in export storage (those with a manifest), newest first: `snapshotAt` "+
			"descending, then the numeric suffix descending (no suffix counts as 1). Snapshots written by "+
			"the reference backend are included.").
		params(
			queryParam("page", integer().def(1).min(1), "1-based page; below 1 → 400 `INVALID_QUERY`."),
			queryParam("limit", integer().def(25), "Page size within the configured pagination limits."),
		).
		ok(200, "One page of snapshots.", ref("SnapshotListResponse"), nil).
		fails(400, "`INVALID_QUERY`: a page or limit outside its range.").
		fails(503, "`STORE_UNAVAILABLE`: export storage cannot be reached.").
		common()
}

func snapshotIDParam() schema {
	return pathParam("snapshotId", "A snapshot id, `YYYYMMDDTHHMMSSZ[-n]`; anything else → 404.")
}

func getExportManifest() op {
	return operation("getExportManifest", "exports", "A snapshot's manifest",
		"The stored manifest, streamed unchanged; for a reference-era manifest the server adds "+
			"`snapshotId` and `files`.").
		params(snapshotIDParam()).
		ok(200, "The manifest.", ref("SnapshotManifest"), nil).
		fails(404, "`Snapshot not found` (`NOT_FOUND`): a malformed id (never looked up), an unknown id, "+
			"or an incomplete snapshot.").
		fails(503, "`STORE_UNAVAILABLE`: export storage cannot be reached.").
		common()
}

func getExportFile() op {
	o := operation("getExportFile", "exports", "Download one file of a snapshot",
		"`name` must be `manifest.json` or a `files[].name` of the manifest (for a reference-era "+
			"manifest: a file of the directory whose name does not start with `.`). Percent-encode it "+
			"(`%` as `%25`). The bytes are streamed from storage; `Range` is not supported.").
		params(snapshotIDParam(), pathParam("name", "The file name, percent-decoded once."))
	c := downloadContent()
	c["application/json"] = schema{"schema": anyValue().desc("A record file or the manifest.")}
	o.responses()["200"] = schema{
		"description": "The file.",
		"content":     c,
		"headers": headers(contentDisposition("`attachment; filename=\"<name>\"`"), contentLength(),
			schema{"ETag": schema{"description": "`\"<sha256>\"` when the manifest has the hash.", "schema": str()}}),
	}
	return o.
		fails(404, "`Snapshot not found` or `File not found` (`NOT_FOUND`). A name with `/` or `\\`, or "+
			"equal to `.` or `..`, is never looked up.").
		fails(503, "`STORE_UNAVAILABLE`: export storage cannot be reached.").
		common()
}
