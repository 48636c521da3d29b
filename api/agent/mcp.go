package agent

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gtc-dev/gtc/agenttools"
)

// MCPServerName is the implementation name the MCP server reports.
const MCPServerName = "ground-truth-curator"

// buildMCP makes the one MCP server of the process. Tools are added
// with the low-level AddTool and a raw schema: the generic mcp.AddTool would validate with
// its own rules and word its own errors, and MCP answers would drift from HTTP answers.
func (t *Tools) buildMCP() {
	t.server = mcp.NewServer(&mcp.Implementation{Name: MCPServerName, Version: t.opts.Version},
		&mcp.ServerOptions{Instructions: agenttools.Instructions})
	for _, tl := range t.defs {
		tl.mcp = &mcp.Tool{Name: tl.Name, Title: tl.Title, Description: tl.Description,
			InputSchema: json.RawMessage(tl.Schema), Annotations: annotations(tl.Definition)}
		t.server.AddTool(tl.mcp, t.mcpHandler(tl))
	}
}

// MCPServer returns the MCP server, for in-process transports.
func (t *Tools) MCPServer() *mcp.Server { return t.server }

// MCPHandler serves the MCP server over streamable HTTP: stateless (each POST brings its own
// identity headers; no tool calls back to the client) with JSON responses (no event stream
// to hold open through proxies). GET and DELETE answer 405. It sets no body limit of its own:
// mount it behind one (the API's middleware enforces GTC_MAX_BODY_BYTES and the identity
// check before the SDK sees a request).
func (t *Tools) MCPHandler() http.Handler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return t.server },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true, MaxRequestBodyBytes: -1, Logger: t.log})
}

// mcpHandler runs a tool for an MCP call. The caller comes from the HTTP headers of the call
// (the handler does not run in the HTTP request's context); only a caller that cannot be
// resolved is a Go (JSON-RPC) error. Bad arguments are an isError result, as over HTTP.
func (t *Tools) mcpHandler(tl *tool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var h http.Header
		if req.Extra != nil {
			h = req.Extra.Header
		}
		caller, err := t.opts.ResolveCaller(h)
		if err != nil {
			return nil, err
		}
		call := agenttools.ToolCall{Caller: caller, Via: "mcp", UserAgent: CutUserAgent(h.Get("User-Agent"))}
		var input []byte
		if req.Params != nil {
			input = req.Params.Arguments
		}
		if string(input) == "null" {
			input = nil
		}
		res, _ := t.Invoke(ctx, call, tl.Name, input)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Content}},
			StructuredContent: res.Data, IsError: res.IsError}, nil
	}
}
