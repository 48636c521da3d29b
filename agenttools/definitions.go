package agenttools

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Code below is the tool surface: names, descriptions and input schemas of the tools,
// the contract agents are given. Change them deliberately; the toolset version follows any
// change.

// Instructions is the text for agents: the listing's "instructions" and
// the MCP server instructions.
const Instructions = "You help curators maintain ground-truth items. Items carry manual tags (group:value, " +
	"lower case) that people maintain, and computed tags (dataset, turns, question_length, " +
	"retrieval_behavior, reference_type, answer) that the system derives from content; only " +
	"manual tags can be changed. Answer from tool results and quote their numbers and ids. " +
	"Before any change, call manage_tags or undo_tag_operation with dry_run=true, show the " +
	"user the count, the sample and the exact change, and wait for a clear yes; then repeat " +
	"the identical call with dry_run=false and report the operation id. When items are " +
	"skipped, say which and why."

// Tool names, in the fixed listing order.
const (
	ToolManageTags        = "manage_tags"
	ToolUndoTagOperation  = "undo_tag_operation"
	ToolListTagOperations = "list_tag_operations"
	ToolTagStats          = "tag_stats"
	ToolDatasetStats      = "dataset_stats"
	ToolSearchItems       = "search_items"
	ToolGetItem           = "get_item"
	ToolGetItemHistory    = "get_item_history"
	ToolCompareReleases   = "compare_releases"
)

// Input schemas, one raw JSON constant per tool.
const (
	schemaManageTags = `{"type": "object", "additionalProperties": false, "required": ["operation"], "properties": {
  "operation": {"type": "string", "enum": ["find_and_tag", "delete_tag", "merge_tags"]},
  "dry_run":   {"type": "boolean", "default": true, "description": "true: preview only. false: execute a matching preview."},
  "tag":       {"type": "string", "minLength": 3, "maxLength": 100, "description": "find_and_tag: tag to add. delete_tag: tag to remove."},
  "tag_from":  {"type": "string", "minLength": 3, "maxLength": 100, "description": "merge_tags: tag to rename away."},
  "tag_to":    {"type": "string", "minLength": 3, "maxLength": 100, "description": "merge_tags: tag to rename to."},
  "keyword":   {"type": "string", "minLength": 1, "maxLength": 200, "description": "find_and_tag: text to find in the conversation, any case."},
  "dataset":   {"type": "string", "minLength": 1, "maxLength": 200, "description": "Only this dataset."},
  "status":    {"type": "string", "enum": ["draft", "approved", "skipped", "deleted"], "description": "find_and_tag: only this status (default: all but deleted)."},
  "tags":      {"type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 100}, "description": "find_and_tag: items must carry all of these."}}}`
	schemaUndoTagOperation = `{"type": "object", "additionalProperties": false, "required": ["operation_id"], "properties": {
  "operation_id": {"type": "string", "pattern": "^op_[0-9A-HJKMNP-TV-Z]{26}$", "description": "Id reported when the operation ran."},
  "dry_run": {"type": "boolean", "default": true}}}`
	schemaListTagOperations = `{"type": "object", "additionalProperties": false, "properties": {
  "operation_id": {"type": "string", "pattern": "^op_[0-9A-HJKMNP-TV-Z]{26}$"},
  "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10}, "mine_only": {"type": "boolean", "default": false},
  "tag": {"type": "string", "maxLength": 100, "description": "Only operations whose arguments name this tag."}}}`
	schemaTagStats = `{"type": "object", "additionalProperties": false, "properties": {
  "dataset": {"type": "string", "minLength": 1, "maxLength": 200}, "status": {"type": "string", "enum": ["draft", "approved", "skipped", "deleted"]},
  "kind": {"type": "string", "enum": ["all", "manual", "computed"], "default": "all"},
  "group": {"type": "string", "maxLength": 100, "description": "Only tags of this group, e.g. topic."},
  "sort_by": {"type": "string", "enum": ["count", "name"], "default": "count"},
  "limit": {"type": "integer", "minimum": 1, "maximum": 500, "default": 50}}}`
	schemaDatasetStats = `{"type": "object", "additionalProperties": false, "properties": {"dataset": {"type": "string", "minLength": 1, "maxLength": 200},
  "sort_by": {"type": "string", "enum": ["name", "total", "updatedAt"], "default": "name"},
  "limit": {"type": "integer", "minimum": 1, "maximum": 200, "default": 50}}}`
	schemaSearchItems = `{"type": "object", "additionalProperties": false, "properties": {
  "keyword": {"type": "string", "minLength": 1, "maxLength": 200}, "dataset": {"type": "string", "minLength": 1, "maxLength": 200},
  "status": {"type": "string", "enum": ["draft", "approved", "skipped", "deleted"]},
  "tags": {"type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 100}, "description": "Must carry all (manual or computed)."},
  "exclude_tags": {"type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 100}, "description": "Must carry none."},
  "sort_by": {"type": "string", "enum": ["updatedAt", "reviewedAt", "id", "tagCount"], "default": "updatedAt"},
  "sort_order": {"type": "string", "enum": ["asc", "desc"], "default": "desc"},
  "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10}, "offset": {"type": "integer", "minimum": 0, "maximum": 10000, "default": 0}}}`
	schemaGetItem = `{"type": "object", "additionalProperties": false, "required": ["dataset", "id"], "properties": {
  "dataset": {"type": "string", "minLength": 1, "maxLength": 200}, "id": {"type": "string", "minLength": 1, "maxLength": 200},
  "bucket": {"type": "string", "format": "uuid"}}}`
	schemaGetItemHistory = `{"type": "object", "additionalProperties": false, "required": ["dataset", "id"], "properties": {
  "dataset": {"type": "string", "minLength": 1, "maxLength": 200}, "id": {"type": "string", "minLength": 1, "maxLength": 200},
  "bucket": {"type": "string", "format": "uuid", "description": "Only needed when the item id is in more than one bucket."},
  "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20},
  "cursor": {"type": "string", "minLength": 1, "maxLength": 200, "description": "nextCursor of the previous answer, for older revisions."},
  "with_values": {"type": "boolean", "default": false, "description": "Also give each revision's changes with old and new values (long values shortened)."}}}`
	schemaCompareReleases = `{"type": "object", "additionalProperties": false, "required": ["from", "to"], "properties": {
  "from": {"type": "string", "minLength": 1, "maxLength": 100, "description": "The earlier release's name."},
  "to": {"type": "string", "minLength": 1, "maxLength": 100, "description": "The later release's name, or current: the items the from release's selection holds now."},
  "kind": {"type": "string", "enum": ["added", "removed", "changed"], "description": "Only items of this kind (default: all three)."},
  "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20},
  "cursor": {"type": "string", "minLength": 1, "maxLength": 2000, "description": "nextCursor of the previous answer, for the next items."}}}`
)

// Definition is what is fixed about a tool: what every listing publishes.
type Definition struct {
	Name, Title, Description, Schema string
	// Writes marks the tools that change items (destructiveHint); the others are
	// read-only (readOnlyHint).
	Writes bool
}

// Previews reports whether the tool previews or executes: its schema has dry_run.
func (d Definition) Previews() bool { return strings.Contains(d.Schema, `"dry_run"`) }

// Definitions returns the tools in the fixed listing order.
func Definitions() []Definition { return slices.Clone(definitions) }

// Names returns the tool names in the fixed listing order.
func Names() []string {
	out := make([]string, len(definitions))
	for i, d := range definitions {
		out[i] = d.Name
	}
	return out
}

// ToolsetVersion is the first 12 hex digits of the SHA-256 of the canonical definitions: the
// tools in order, each with name, title, description, schema and annotations, as JSON
// with sorted keys and no insignificant whitespace. Any change to a definition changes it.
func ToolsetVersion() (string, error) {
	canon := make([]map[string]any, 0, len(definitions))
	for _, d := range definitions {
		var schema any
		if err := json.Unmarshal([]byte(d.Schema), &schema); err != nil {
			return "", fmt.Errorf("agenttools: schema of %s: %w", d.Name, err)
		}
		ann := map[string]any{"readOnlyHint": true}
		if d.Writes {
			ann = map[string]any{"destructiveHint": true}
		}
		canon = append(canon, map[string]any{"name": d.Name, "title": d.Title, "description": d.Description,
			"inputSchema": schema, "annotations": ann})
	}
	b, err := json.Marshal(canon)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:12], nil
}

// definitions are the tools in listing order.
var definitions = []Definition{
	{
		Name:  ToolManageTags,
		Title: "Manage tags",
		Description: "Change manual tags on many items at once. find_and_tag adds `tag` to items whose " +
			"conversation contains `keyword` (optional dataset, status and tags filters); delete_tag " +
			"removes a manual `tag` from all items (optionally one dataset); merge_tags renames " +
			"`tag_from` to `tag_to`, merging where an item has both. Always call with dry_run=true " +
			"first (the default), show the preview to the user, and only after a clear yes repeat the " +
			"identical call with dry_run=false. Execution changes exactly the previewed items. " +
			"Computed tags cannot be changed. Tags look like topic:install.",
		Schema: schemaManageTags,
		Writes: true,
	},
	{
		Name:  ToolUndoTagOperation,
		Title: "Undo a tag operation",
		Description: "Revert an executed tag operation by its id, putting back each item's previous manual " +
			"tags. Items edited since the operation are left alone and reported. Preview with " +
			"dry_run=true (the default), then execute with dry_run=false after the user agrees.",
		Schema: schemaUndoTagOperation,
		Writes: true,
	},
	{
		Name:  ToolListTagOperations,
		Title: "List tag operations",
		Description: "List executed tag operations, newest first: who ran what and when, how many items " +
			"changed, whether it was undone. Give operation_id to see one operation with its per-item " +
			"changes. Use it to find the id to undo or to answer 'what changed recently'.",
		Schema: schemaListTagOperations,
		Writes: false,
	},
	{
		Name:  ToolTagStats,
		Title: "Tag statistics",
		Description: "Count how many items carry each tag, manual and computed. Use for 'which tags are used " +
			"most', 'is tag X still used', or to spot misspelled tags missing from the vocabulary. " +
			"Filter by dataset, status, kind or group; sort by count or name.",
		Schema: schemaTagStats,
		Writes: false,
	},
	{
		Name:  ToolDatasetStats,
		Title: "Dataset statistics",
		Description: "Per dataset: item counts by status (draft, approved, skipped, deleted), the total, and " +
			"when an item was last updated. Use for 'how many items', 'how far along is dataset X', " +
			"'which dataset is largest'.",
		Schema: schemaDatasetStats,
		Writes: false,
	},
	{
		Name:  ToolSearchItems,
		Title: "Search items",
		Description: "Find items by a keyword in their conversation and/or by dataset, status and tags. " +
			"Returns ids, status, question snippets and tags. Sort by updatedAt, reviewedAt, id or " +
			"tagCount. At most 50 per call; use offset for more.",
		Schema: schemaSearchItems,
		Writes: false,
	},
	{
		Name:  ToolGetItem,
		Title: "Get one item",
		Description: "Fetch one item in full: conversation turns, tags, status, assignment, comment and tool " +
			"calls. Give dataset and id; bucket is optional.",
		Schema: schemaGetItem,
		Writes: false,
	},
	{
		Name:  ToolGetItemHistory,
		Title: "Item history",
		Description: "Who changed one item, when, through what, and which fields: its recorded revisions, " +
			"newest first (revision number, time, user, source such as api, import or " +
			"agent:<operation id>, and the changed paths). With with_values=true each revision also " +
			"lists its changes with the old and the new value, so you can say what a field said " +
			"before. Give dataset and id; page back with cursor.",
		Schema: schemaGetItemHistory,
		Writes: false,
	},
	{
		Name:  ToolCompareReleases,
		Title: "Compare releases",
		Description: "What changed between two releases (named, immutable snapshots of items), or since " +
			"one when to is current: how many items were added, removed, changed and unchanged, the " +
			"tags whose item counts moved, and the items themselves in (dataset, id) order with their " +
			"revisions and, for changed items, the field-level changes (long values shortened). Page " +
			"with cursor; filter with kind.",
		Schema: schemaCompareReleases,
		Writes: false,
	},
}
