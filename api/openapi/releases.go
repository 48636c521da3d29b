package openapi

// releasePaths are the release operations.
func releasePaths(prefix string) map[string]schema {
	p := func(path string) string { return prefix + path }
	return map[string]schema{
		p("/releases"):                     {"get": listReleases(), "post": createRelease()},
		p("/releases/{name}"):              {"get": getRelease(), "delete": deleteRelease()},
		p("/releases/{name}/files/{file}"): {"get": getReleaseFile()},
		p("/releases/{name}/diff/{to}"):    {"get": diffReleases()},
	}
}

func number() schema { return schema{"type": "number"} }

// releaseSchemas are the component schemas of the release operations.
func releaseSchemas() map[string]schema {
	return map[string]schema{
		"ReleaseRequest": obj(schema{
			"name": str().set("pattern", `^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`).
				desc("Unique for good: a deleted release's name is not given again."),
			"datasets": nullable(arr(str())).desc("Exact dataset names; absent or null: every dataset."),
			"filters":  anyOf(ref("ReleaseFilters"), null()),
			"splits": nullable(mapOf(number())).desc("Split name (`^[a-z][a-z0-9_]{0,31}$`) → share, each " +
				"above 0, adding up to 1, at most 16 splits. An item's split comes from a hash of its " +
				"dataset name and id alone, so it is the same in every release. Absent: one split, `all`."),
			"stratifyBy": nullable(str()).desc("A tag group: within each of its values (and among the items " +
				"without one) the items are ordered by their hash and cut at the ratios, so each value's " +
				"split sizes match the ratios to within one item."),
			"formats": nullable(arr(str())).desc("Export formats, each writing `<split>.<extension>`; two " +
				"formats with the same extension → 422. Absent: `jsonl` and `parquet`."),
			"notes": nullable(str()).desc("Free text, at most 4,000 characters, in the manifest and the card."),
		}, "name").set("additionalProperties", false),
		"ReleaseFilters": obj(schema{
			"status":      str().def("approved").desc("An item status, or `\"\"` for every status."),
			"tags":        nullable(arr(str())).desc("`group:value` tags an item must all carry."),
			"excludeTags": nullable(arr(str())).desc("`group:value` tags an item must not carry."),
		}).set("additionalProperties", false),
		"ReleaseSummary":  obj(summary(nil), summaryRequired...),
		"ReleaseListItem": obj(summary(schema{"manifestUrl": str()}), append(summaryRequired, "manifestUrl")...),
		"ReleaseListResponse": obj(schema{
			"items":      arr(ref("ReleaseListItem")),
			"pagination": ref("PaginationMetadata"),
		}, "items", "pagination"),
		"ReleaseManifest": obj(summary(schema{
			"files": arr(ref("SnapshotFile")).desc("The data files by name, then `README.md`, the dataset card."),
			"items": arr(ref("ReleaseItem")).desc("Every item in (datasetName, id) order, one compact entry a line; the last key."),
		}), append(summaryRequired, "files", "items")...),
		"ReleaseItem": obj(schema{
			"datasetName": str(),
			"bucket":      str(),
			"id":          str(),
			"revision":    integer().min(0),
			"sha256":      str().desc("Of the item's exported records as compact JSON lines."),
			"split":       str(),
		}, "datasetName", "bucket", "id", "revision", "sha256", "split"),
		"ReleaseDiff": obj(schema{
			"from": str().desc("The first release."),
			"to":   str().desc("The second release, or `current`."),
			"counts": obj(schema{
				"added":     integer().min(0).desc("Items in `to` only."),
				"removed":   integer().min(0).desc("Items in `from` only."),
				"changed":   integer().min(0).desc("Items in both at another revision, or, between two releases, with other exported content (sha256)."),
				"unchanged": integer().min(0),
			}, "added", "removed", "changed", "unchanged").desc("Of the whole comparison, on every page."),
			"tagShift": arr(obj(schema{
				"tag":   str(),
				"from":  integer().min(0).desc("Items of `from` that carry the tag."),
				"to":    integer().min(0).desc("Items of `to` that carry the tag."),
				"delta": integer().desc("`to` - `from`."),
			}, "tag", "from", "to", "delta")).desc("The tags whose counts differ, the largest change first, then by tag."),
			"items":      arr(ref("ReleaseDiffItem")).desc("This page's items, in (datasetName, id) order."),
			"nextCursor": nullable(str()).desc("Pass as `cursor` for the next page; null after the last."),
		}, "from", "to", "counts", "tagShift", "items", "nextCursor"),
		"ReleaseDiffItem": obj(schema{
			"kind":         enum("added", "removed", "changed"),
			"datasetName":  str(),
			"bucket":       str(),
			"id":           str(),
			"fromRevision": integer().min(0).desc("The item's revision in `from`; absent when added."),
			"toRevision":   integer().min(0).desc("The item's revision in `to`; absent when removed."),
			"changes": arr(patchOp()).desc("Changed items, unless `changes=false`: the field-level changes from " +
				"`fromRevision` to `toRevision`, from the item's history; empty when the revision is the same and " +
				"only the exported content differs."),
			"changesUnavailable": str().desc("Instead of `changes`, when the item's history no longer holds the " +
				"revisions (retention) or the item is no longer stored: why, in one sentence."),
		}, "kind", "datasetName", "bucket", "id"),
		"ReleaseTombstone": obj(schema{"name": str(), "deletedAt": dateTime(), "deletedBy": str()},
			"name", "deletedAt", "deletedBy"),
	}
}

var summaryRequired = []string{"name", "createdAt", "createdBy", "contentHash", "count", "counts"}

// summary is the properties of a release manifest's head, with more.
func summary(more schema) schema {
	counts := mapOf(integer().min(0))
	props := schema{
		"schemaVersion": str(),
		"name":          str(),
		"createdAt":     dateTime(),
		"createdBy":     str(),
		"notes":         str(),
		"selection":     freeObject().desc("The request as resolved: datasets, status, tags, excludeTags, splits, stratifyBy, formats, processors."),
		"contentHash": str().desc("`sha256:` and the hash of the items' (datasetName, id, revision, " +
			"sha256) in (datasetName, id) order: the same items at the same revisions give the same hash."),
		"count":   integer().min(1),
		"records": integer().min(0).desc("Records per format (a processor may make several of an item)."),
		"counts": obj(schema{"datasets": counts, "statuses": counts, "tags": counts, "splits": counts},
			"datasets", "statuses", "tags", "splits"),
	}
	for k, v := range more {
		props[k] = v
	}
	return props
}

func releaseNameParam() schema {
	return pathParam("name", "A release name; one that cannot name a release → 404.")
}

func releaseGone(o op) op {
	return o.
		fails(404, "`Release '<name>' not found` (`NOT_FOUND`).").
		fails(410, "`Release '<name>' was deleted` (`RELEASE_DELETED`), with `deletedAt` and `deletedBy`.").
		fails(503, "`STORE_UNAVAILABLE`: export storage cannot be reached.")
}

func createRelease() op {
	return operation("createRelease", "releases", "Make a release",
		"Writes the selected items, each pinned at its current revision, through the configured processor "+
			"chain into one file per split and format under `exports/releases/<name>/` in export storage, then "+
			"`README.md` (a dataset card with the Hugging Face YAML header) and `manifest.json`, last. "+
			"A release never changes; if writing fails, nothing of it is kept and the name stays free.").
		body(ref("ReleaseRequest"), "The release.").
		ok(201, "The manifest, with `Location: {prefix}/releases/<name>`.", ref("ReleaseManifest"),
			headers(schema{"Location": schema{"required": true, "schema": str()}})).
		fails(409, "`RELEASE_EXISTS`: a release has the name, or had it and was deleted.").
		fails(422, "`VALIDATION_ERROR`: a body of the wrong shape, an invalid name, unknown or clashing "+
			"formats, split ratios that do not add up to 1, a `stratifyBy` that is not a tag group, malformed "+
			"tags, or a selection without items (`filters`); every problem is listed.").
		fails(500, "`Internal server error` (`INTERNAL`), or `Export storage write failed` (`STORAGE_ERROR`).").
		fails(503, "`STORE_UNAVAILABLE`: the store or export storage cannot be reached; `EXPORT_BUSY` when "+
			"`GTC_EXPORT_MAX_CONCURRENT` exports are running.").
		fails(507, "`INSUFFICIENT_STORAGE`: export storage is out of space; nothing is kept.").
		withBody().common()
}

func listReleases() op {
	return operation("listReleases", "releases", "List releases",
		"The releases, newest first (then by name); deleted ones are left out.").
		params(
			queryParam("page", integer().def(1).min(1), "1-based page; below 1 → 400 `INVALID_QUERY`."),
			queryParam("limit", integer().def(25), "Page size within the configured pagination limits."),
		).
		ok(200, "One page of releases.", ref("ReleaseListResponse"), nil).
		fails(400, "`INVALID_QUERY`: a page or limit outside its range.").
		fails(503, "`STORE_UNAVAILABLE`: export storage cannot be reached.").
		common()
}

func getRelease() op {
	return releaseGone(operation("getRelease", "releases", "A release's manifest",
		"The stored manifest, streamed.").
		params(releaseNameParam()).
		ok(200, "The manifest.", ref("ReleaseManifest"), nil)).
		common()
}

func deleteRelease() op {
	return releaseGone(operation("deleteRelease", "releases", "Delete a release",
		"Deletes the release's files and leaves a tombstone: the name is never given to another release, "+
			"and reading the release answers 410.").
		params(releaseNameParam()).
		ok(200, "The tombstone.", ref("ReleaseTombstone"), nil)).
		common()
}

func getReleaseFile() op {
	o := operation("getReleaseFile", "releases", "Download one file of a release",
		"`file` must be `manifest.json` or a `files[].name` of the manifest. The bytes are streamed "+
			"from storage.").
		params(releaseNameParam(), pathParam("file", "The file name, percent-decoded once."))
	c := downloadContent()
	c["application/json"] = schema{"schema": anyValue().desc("A data file or the manifest.")}
	c["application/vnd.apache.parquet"] = schema{"schema": str().set("format", "binary")}
	c["text/markdown; charset=utf-8"] = schema{"schema": str().desc("The dataset card.")}
	o.responses()["200"] = schema{
		"description": "The file.",
		"content":     c,
		"headers": headers(contentDisposition("`attachment; filename=\"<file>\"`"), contentLength(),
			schema{"ETag": schema{"description": "`\"<sha256>\"` of the file.", "schema": str()}}),
	}
	return releaseGone(o.fails(404, "`Release '<name>' not found` or `File not found` (`NOT_FOUND`).")).
		fails(404, "`Release '<name>' not found` or `File not found` (`NOT_FOUND`).").
		common()
}

func diffReleases() op {
	return releaseGone(operation("diffReleases", "releases", "Compare two releases",
		"What changed from release `name` to release `to`: the items added, removed and changed, how many of "+
			"each, and the tags whose item counts moved. `to` may be `current`: the items `name`'s selection "+
			"(datasets, status, tags, excludeTags) holds now, compared by revision; nothing is written. Both "+
			"item lists are read as one streaming merge in (datasetName, id) order for every page, so the counts "+
			"come with each page and memory does not grow with the releases.").
		params(releaseNameParam(),
			pathParam("to", "The release to compare with, or `current`. Comparing a release with itself finds every item unchanged."),
			queryParam("kind", enum("added", "removed", "changed"), "Only items of this kind; absent: all three."),
			queryParam("limit", integer().def(50).min(1).max(500), "Items per page, 1 to 500."),
			queryParam("cursor", str(), "The `nextCursor` of the previous page of the same comparison and kind; any other → 422 naming `query.cursor`."),
			queryParam("changes", boolean().def(true), "Give the field-level changes of changed items."),
		).
		ok(200, "One page of the comparison.", ref("ReleaseDiff"), nil)).
		fails(422, standardErrors[422]+" Here also an unknown `kind`, a `limit` outside 1 to 500, or a `cursor` "+
			"that is not a `nextCursor` of this comparison.").
		common()
}
