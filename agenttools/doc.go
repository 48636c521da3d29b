// Package agenttools owns the agent tools: what each tool is (its name, description and
// argument schema, in Definitions), the checks of its arguments (Checker, DecodeInput), the
// envelope every tool answers with (ToolResult) and what the tools do. Reads serves the
// read-only tools (tag_stats, dataset_stats, search_items, get_item, get_item_history,
// compare_releases); Bulk serves the bulk tag operations of manage_tags and
// undo_tag_operation (preview, execution, audit, undo, repair of operations a crash left
// running) and list_tag_operations.
//
// The transport, HTTP and MCP, is package api/agent, which checks each input with a Checker
// and hands the arguments to these tools. Tag rules (normalization, computed tags, the
// pipeline every write goes through) come from package tagging; the audit records and the
// save path the bulk operations write through are in the root package, so stores never
// depend on this one.
package agenttools
