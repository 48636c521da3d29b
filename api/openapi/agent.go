package openapi

// agentPaths are the LLM tool operations. /mcp is left out of the document: it speaks MCP,
// not this API.
func agentPaths(prefix string) map[string]schema {
	p := func(path string) string { return prefix + path }
	return map[string]schema{
		p("/agent/tools"):        {"get": listAgentTools()},
		p("/agent/tools/{name}"): {"post": invokeAgentTool()},
	}
}

// agentSchemas are the component schemas of the agent tool operations.
func agentSchemas() map[string]schema {
	toolSchema := schema{"type": "object"}.desc("The tool's input schema (JSON Schema 2020-12): " +
		"`type: object`, `additionalProperties: false`, no top-level combinators.")
	return map[string]schema{
		"AgentToolListing": obj(schema{
			"format":         enum("anthropic", "openai", "mcp"),
			"toolsetVersion": str().set("pattern", "^[0-9a-f]{12}$").desc("The first 12 hex digits of the SHA-256 of the canonical tool definitions; it changes with any definition."),
			"instructions":   str().desc("The instructions for agents, also the MCP server instructions."),
			"tools": arr(anyOf(ref("AgentToolAnthropic"), ref("AgentToolOpenAI"), ref("AgentToolMCP"))).
				desc("The nine tools in fixed order: manage_tags, undo_tag_operation, list_tag_operations, " +
					"tag_stats, dataset_stats, search_items, get_item, get_item_history, compare_releases; each in the " +
					"element form of `format`."),
		}, "format", "toolsetVersion", "instructions", "tools"),
		"AgentToolAnthropic": obj(schema{
			"name":         str(),
			"description":  str(),
			"input_schema": toolSchema,
		}, "name", "description", "input_schema").desc("A tool for the `tools` parameter of the Anthropic Messages API."),
		"AgentToolOpenAI": obj(schema{
			"type": constant("function"),
			"function": obj(schema{
				"name":        str(),
				"description": str(),
				"parameters":  toolSchema,
			}, "name", "description", "parameters"),
		}, "type", "function").desc("A tool for the `tools` parameter of OpenAI Chat Completions (`strict` not set)."),
		"AgentToolMCP": obj(schema{
			"name":        str(),
			"title":       str(),
			"description": str(),
			"inputSchema": toolSchema,
			"annotations": freeObject().desc("`readOnlyHint: true` on the six read tools, `destructiveHint: true` on the two writers."),
		}, "name", "title", "description", "inputSchema", "annotations").desc("A tool exactly as `tools/list` on `/mcp` returns it."),
		"ToolResult": obj(schema{
			"content": str().desc("Plain text for the model, at most 8,000 characters; the first line states the outcome."),
			"data":    freeObject().desc("The same facts as JSON; on error `{\"error\": {\"code\", \"message\", ...}}`."),
			"isError": boolean().desc("True exactly when `data.error` exists."),
		}, "content", "data", "isError").desc("The result envelope of every tool."),
	}
}

func listAgentTools() op {
	return operation("listAgentTools", "agent", "Tool definitions for an LLM",
		"The nine agent tools with their input schemas, ready for the `tools` parameter of the "+
			"provider named by `format`, plus the toolset version and the instructions for agents.").
		params(queryParam("format", enum("anthropic", "openai", "mcp").def("anthropic"),
			"Element form of `tools`. Another value → 422 with field `format`.")).
		ok(200, "The tool definitions.", ref("AgentToolListing"), nil).
		fails(422, "`format` is not one of `anthropic`, `openai`, `mcp` (`VALIDATION_ERROR`), or a "+
			"dev-mode X-User-Id over 256 characters.").
		common()
}

func invokeAgentTool() op {
	return operation("invokeAgentTool", "agent", "Invoke one tool",
		"Runs one tool. Only transport problems are 4xx; every other outcome, invalid tool input "+
			"included, is a 200 with the result envelope and `isError`, so the model can correct itself.").
		params(pathParam("name", "The tool: manage_tags, undo_tag_operation, list_tag_operations, "+
			"tag_stats, dataset_stats, search_items or get_item.")).
		optionalBody(freeObject(), "The tool input, a JSON object; an empty body is `{}`.").
		ok(200, "The tool's result envelope.", ref("ToolResult"), nil).
		fails(400, "The body is not valid JSON (`MALFORMED_JSON`), or JSON but not an object "+
			"(`TOOL_INPUT_NOT_OBJECT`).").
		fails(404, "`UNKNOWN_TOOL`: the name is not a tool; the detail lists the nine names.").
		common()
}
