// Left out of the fuzz builds with the rest of package api_test (see harness_test.go).

//go:build !fuzzing

package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc/agenttools"
	"github.com/gtc-dev/gtc/api"
	"github.com/gtc-dev/gtc/api/agent"
)

// agentCalls records what the echo tool handlers saw.
type agentCalls struct {
	mu    sync.Mutex
	calls []agenttools.ToolCall
}

func (a *agentCalls) last(t *testing.T) agenttools.ToolCall {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	require.NotEmpty(t, a.calls)
	return a.calls[len(a.calls)-1]
}

func (a *agentCalls) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.calls)
}

// echoTools stand in for the real tools: each answers with its checked arguments and the
// caller's user id. A dataset named "fail" is a tool error, like an unknown dataset.
func echoTools(rec *agentCalls) map[string]agent.Handler {
	out := map[string]agent.Handler{}
	for _, name := range agenttools.Names() {
		out[name] = func(_ context.Context, call agenttools.ToolCall, args map[string]any) agenttools.ToolResult {
			rec.mu.Lock()
			rec.calls = append(rec.calls, call)
			rec.mu.Unlock()
			if args["dataset"] == "fail" {
				return agenttools.ToolFailure(agenttools.CodeUnknownDataset, "Unknown dataset 'fail'.", map[string]any{"knownDatasets": []string{}})
			}
			return agenttools.ToolResult{Content: name + " ok", Data: map[string]any{"tool": name, "args": args, "user": call.Caller.UserID}}
		}
	}
	return out
}

func toolPath(name string) string { return "/v1/agent/tools/" + name }

func TestAgentListing(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for _, format := range []string{"", "anthropic", "openai", "mcp"} {
		path := "/v1/agent/tools"
		if format != "" {
			path += "?format=" + format
		}
		res := h.get(path)
		require.Equal(t, http.StatusOK, res.Status, string(res.Body))
		body := res.Object(t)
		want := format
		if want == "" {
			want = "anthropic"
		}
		assert.Equal(t, want, body["format"])
		assert.Equal(t, h.tools.ToolsetVersion(), body["toolsetVersion"])
		assert.Equal(t, agenttools.Instructions, body["instructions"])
		var names []string
		for _, e := range body["tools"].([]any) {
			el := e.(map[string]any)
			var s map[string]any
			switch want {
			case "anthropic":
				names = append(names, el["name"].(string))
				s = el["input_schema"].(map[string]any)
			case "openai":
				assert.Equal(t, "function", el["type"])
				fn := el["function"].(map[string]any)
				names = append(names, fn["name"].(string))
				s = fn["parameters"].(map[string]any)
			case "mcp":
				names = append(names, el["name"].(string))
				s = el["inputSchema"].(map[string]any)
				assert.NotEmpty(t, el["title"])
				assert.NotEmpty(t, el["annotations"])
			}
			assert.Equal(t, "object", s["type"])
			assert.Equal(t, false, s["additionalProperties"])
			for _, comb := range []string{"oneOf", "anyOf", "allOf"} {
				assert.NotContains(t, s, comb)
			}
		}
		assert.Equal(t, agenttools.Names(), names)
	}

	for _, bad := range []string{"xml", "", "MCP"} {
		res := h.get("/v1/agent/tools?format=" + bad)
		require.Equal(t, http.StatusUnprocessableEntity, res.Status, bad)
		assert.Equal(t, map[string]any{
			"detail": "Request validation failed: format: must be one of: anthropic, openai, mcp",
			"status": json.Number("422"), "code": "VALIDATION_ERROR",
			"errors": []any{map[string]any{"field": "format", "message": "must be one of: anthropic, openai, mcp"}},
		}, res.Object(t), bad)
	}
}

func TestAgentInvokeTransport(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(o *api.Options) { o.MaxBodyBytes = 512 })
	big := `{"keyword": "` + strings.Repeat("k", 600) + `"}`
	cases := []struct {
		name   string
		tool   string
		body   any
		header map[string]string
		noCT   bool
		status int
		code   string
	}{
		{"unknown tool", "nope", `{}`, nil, false, 404, "UNKNOWN_TOOL"},
		{"unknown tool before the body limit", "nope", big, nil, false, 404, "UNKNOWN_TOOL"},
		{"tool names are exact", "Search_Items", `{}`, nil, false, 404, "UNKNOWN_TOOL"},
		{"broken JSON", "search_items", `{"keyword": `, nil, false, 400, "MALFORMED_JSON"},
		{"trailing data", "search_items", `{} {}`, nil, false, 400, "MALFORMED_JSON"},
		{"invalid UTF-8", "search_items", "{\"keyword\": \"\xff\"}", nil, false, 400, "MALFORMED_JSON"},
		{"array", "search_items", `[{"keyword": "x"}]`, nil, false, 400, "TOOL_INPUT_NOT_OBJECT"},
		{"string", "search_items", `"x"`, nil, false, 400, "TOOL_INPUT_NOT_OBJECT"},
		{"null", "search_items", `null`, nil, false, 400, "TOOL_INPUT_NOT_OBJECT"},
		{"text/plain", "search_items", `{}`, map[string]string{"Content-Type": "text/plain"}, false, 415, "UNSUPPORTED_MEDIA_TYPE"},
		{"oversized", "search_items", big, nil, false, 413, "BODY_TOO_LARGE"},
		{"dev X-User-Id too long", "search_items", `{}`, map[string]string{"X-User-Id": strings.Repeat("u", 257)}, false, 422, "VALIDATION_ERROR"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := h.calls.count()
			res := h.do(req{Method: http.MethodPost, Path: toolPath(tc.tool), Body: tc.body, Header: tc.header, NoCT: tc.noCT})
			require.Equal(t, tc.status, res.Status, string(res.Body))
			body := res.Object(t)
			assert.Equal(t, tc.code, body["code"])
			assert.Equal(t, before, h.calls.count(), "no tool ran")
		})
	}

	res := h.do(req{Method: http.MethodPost, Path: toolPath("nope"), Body: `{}`})
	assert.Equal(t, "Unknown tool 'nope'; the tools are: manage_tags, undo_tag_operation, list_tag_operations, "+
		"tag_stats, dataset_stats, search_items, get_item, get_item_history, compare_releases", res.Object(t)["detail"])
	res = h.do(req{Method: http.MethodPost, Path: toolPath("search_items"), Body: `[1]`})
	assert.Equal(t, "Tool input must be a JSON object, got an array", res.Object(t)["detail"])
	res = h.do(req{Method: http.MethodGet, Path: toolPath("search_items"), NoCheck: true})
	assert.Equal(t, http.StatusMethodNotAllowed, res.Status)
	assert.Equal(t, "POST", res.Header.Get("Allow"))
}

func TestAgentInvokeAnswers200(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	cases := []struct {
		name, tool string
		body       any
		noCT       bool
		isError    bool
		code       string
		content    string
	}{
		{"empty body is {}", "search_items", nil, false, false, "", "search_items ok"},
		{"whitespace body without content type", "list_tag_operations", "  \n", true, false, "", "list_tag_operations ok"},
		{"no content type is JSON", "tag_stats", `{"kind": "manual"}`, true, false, "", "tag_stats ok"},
		{"invalid input", "search_items", `{"limit": 80, "sort": "x"}`, false, true, "INVALID_INPUT",
			"Invalid input: limit must be between 1 and 50 (got 80); unknown field 'sort' (allowed: keyword, dataset, status, " +
				"tags, exclude_tags, sort_by, sort_order, limit, offset)."},
		{"foreign field per operation", "manage_tags", `{"operation": "delete_tag", "tag": "topic:x", "status": "draft"}`, false, true,
			"INVALID_INPUT", "Invalid input: status is not allowed with delete_tag (allowed: tag, dataset, dry_run)."},
		{"string dry_run", "manage_tags", `{"operation": "delete_tag", "tag": "topic:x", "dry_run": "false"}`, false, true,
			"INVALID_INPUT", `Invalid input: dry_run must be true or false (got "false").`},
		{"tool error", "dataset_stats", `{"dataset": "fail"}`, false, true, "UNKNOWN_DATASET", "Unknown dataset 'fail'."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := h.do(req{Method: http.MethodPost, Path: toolPath(tc.tool), Body: tc.body, NoCT: tc.noCT})
			require.Equal(t, http.StatusOK, res.Status, string(res.Body))
			body := res.Object(t)
			assert.Equal(t, tc.isError, body["isError"])
			assert.Equal(t, tc.content, body["content"])
			data := body["data"].(map[string]any)
			if tc.isError {
				assert.Equal(t, tc.code, data["error"].(map[string]any)["code"])
			} else {
				assert.Equal(t, tc.tool, data["tool"])
			}
		})
	}

	res := h.do(req{Method: http.MethodPost, Path: toolPath("search_items"), Body: `{"keyword": " reset "}`,
		Header: map[string]string{"X-User-Id": "carol", "User-Agent": "agent-loop/1.0"}})
	require.Equal(t, http.StatusOK, res.Status)
	assert.Equal(t, map[string]any{"tool": "search_items", "user": "carol", "args": map[string]any{
		"keyword": "reset", "sort_by": "updatedAt", "sort_order": "desc", "limit": json.Number("10"), "offset": json.Number("0")}},
		res.Object(t)["data"])
	call := h.calls.last(t)
	assert.Equal(t, "carol", call.Caller.UserID)
	assert.Equal(t, "http", call.Via)
	assert.Equal(t, "agent-loop/1.0", call.UserAgent)
	assert.Equal(t, "no-store", res.Header.Get("Cache-Control"))
}

func TestAgentRoutesCanBeOff(t *testing.T) {
	t.Parallel()
	for name, mod := range map[string]func(*api.Options){
		"tools off": func(o *api.Options) { o.AgentToolsEnabled = false },
		"mcp off":   func(o *api.Options) { o.AgentMCPEnabled = false },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, mod)
			toolsOn, mcpOn := name != "tools off", name != "mcp off"
			res := h.do(req{Method: http.MethodGet, Path: "/v1/agent/tools", NoCheck: !toolsOn})
			assert.Equal(t, toolsOn, res.Status == http.StatusOK, res.Status)
			res = h.do(req{Method: http.MethodPost, Path: toolPath("search_items"), Body: `{}`, NoCheck: !toolsOn})
			assert.Equal(t, toolsOn, res.Status == http.StatusOK, res.Status)
			if !toolsOn {
				assert.Equal(t, "ROUTE_NOT_FOUND", res.Object(t)["code"])
			}
			res = h.do(req{Method: http.MethodPost, Path: "/mcp", Body: `{}`, NoCheck: true})
			if mcpOn {
				assert.NotEqual(t, http.StatusNotFound, res.Status)
			} else {
				assert.Equal(t, http.StatusNotFound, res.Status)
				assert.Equal(t, "ROUTE_NOT_FOUND", res.Object(t)["code"])
			}
		})
	}

	// Without a registry nothing agent-shaped is served.
	h := newHarness(t)
	srv := serve(t, api.New(api.Deps{Curator: h.cur}, api.Options{AgentToolsEnabled: true, AgentMCPEnabled: true}))
	for _, r := range []struct{ method, path string }{{"GET", "/v1/agent/tools"}, {"POST", "/v1/agent/tools/get_item"}, {"POST", "/mcp"}} {
		hr, err := http.NewRequest(r.method, srv.URL+r.path, strings.NewReader(`{}`))
		require.NoError(t, err)
		res, err := http.DefaultClient.Do(hr)
		require.NoError(t, err)
		_ = res.Body.Close()
		assert.Equal(t, http.StatusNotFound, res.StatusCode, r.path)
	}
}

func TestAgentEasyAuth(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(o *api.Options) {
		o.Auth = api.AuthOptions{EasyAuth: true, AllowedEmailDomains: []string{"example.com"}}
	})
	for _, r := range []req{
		{Method: http.MethodGet, Path: "/v1/agent/tools", NoCheck: true},
		{Method: http.MethodPost, Path: toolPath("search_items"), Body: `{}`, NoCheck: true},
		{Method: http.MethodPost, Path: toolPath("nope"), Body: `{}`, NoCheck: true},
		{Method: http.MethodPost, Path: "/mcp", Body: `{}`, NoCheck: true},
		{Method: http.MethodPost, Path: toolPath("search_items"), Body: `{}`, NoCheck: true, Header: map[string]string{"X-User-Id": "mallory"}},
	} {
		res := h.do(r)
		require.Equal(t, http.StatusUnauthorized, res.Status, r.Path)
		assert.Equal(t, "UNAUTHENTICATED", res.Object(t)["code"])
	}
	res := h.do(req{Method: http.MethodPost, Path: toolPath("search_items"), Body: `{}`, NoCheck: true,
		Header: map[string]string{"X-MS-CLIENT-PRINCIPAL-NAME": "eve@evil.com"}})
	assert.Equal(t, http.StatusForbidden, res.Status)

	res = h.do(req{Method: http.MethodPost, Path: toolPath("search_items"), Body: `{}`,
		Header: map[string]string{"X-MS-CLIENT-PRINCIPAL": principalHeader(map[string]string{"email": "dana@example.com"}), "X-User-Id": "mallory"}})
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	assert.Equal(t, "dana@example.com", h.calls.last(t).Caller.UserID, "X-User-Id is ignored in easyauth")
}

// withHeaders adds identity headers to every request of an MCP client.
type withHeaders map[string]string

func (h withHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// mcpSession connects the SDK's client to /mcp over streamable HTTP.
func (h *harness) mcpSession(headers map[string]string) (*mcp.ClientSession, error) {
	tr := &mcp.StreamableClientTransport{Endpoint: h.srv.URL + "/mcp", HTTPClient: &http.Client{Transport: withHeaders(headers)}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "api-test", Version: "1"}, nil).Connect(context.Background(), tr, nil)
	if err == nil {
		h.t.Cleanup(func() { _ = cs.Close() })
	}
	return cs, err
}

// generic decodes JSON into plain values (numbers as float64), to compare envelopes.
func generic(t *testing.T, v any) any {
	t.Helper()
	b, ok := v.([]byte)
	if !ok {
		var err error
		b, err = json.Marshal(v)
		require.NoError(t, err)
	}
	var out any
	require.NoError(t, json.Unmarshal(b, &out))
	return out
}

func TestMCPOverHTTP(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	cs, err := h.mcpSession(map[string]string{"X-User-Id": "mcp-user", "User-Agent": "mcp-test/1"})
	require.NoError(t, err)
	ctx := context.Background()
	assert.Equal(t, agenttools.Instructions, cs.InitializeResult().Instructions)

	listed, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	l, err := h.tools.Listing("mcp")
	require.NoError(t, err)
	byName := func(list any) map[string]any {
		out := map[string]any{}
		for _, e := range generic(t, list).([]any) {
			out[e.(map[string]any)["name"].(string)] = e
		}
		return out
	}
	assert.Equal(t, byName(l.Tools), byName(listed.Tools), "tools/list is the mcp listing")
	assert.Len(t, listed.Tools, 9)

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_item", Arguments: map[string]any{"dataset": "d", "id": "x"}})
	require.NoError(t, err)
	assert.False(t, res.IsError)
	assert.Equal(t, "get_item ok", res.Content[0].(*mcp.TextContent).Text)
	assert.Equal(t, map[string]any{"tool": "get_item", "user": "mcp-user", "args": map[string]any{"dataset": "d", "id": "x"}},
		generic(t, res.StructuredContent))
	call := h.calls.last(t)
	assert.Equal(t, "mcp-user", call.Caller.UserID, "the caller comes from the request headers")
	assert.Equal(t, "mcp", call.Via)
	assert.Equal(t, "mcp-test/1", call.UserAgent)

	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "nope", Arguments: map[string]any{}})
	assert.Error(t, err, "an unknown tool is a JSON-RPC error")

	// Parity: the same input through HTTP and MCP gives the same envelope.
	for _, tc := range []struct {
		tool  string
		input map[string]any
	}{
		{"search_items", map[string]any{"keyword": " install ", "tags": []any{"topic:x"}}},
		{"search_items", map[string]any{"limit": 80, "sort": "x"}},
		{"manage_tags", map[string]any{"operation": "delete_tag", "tag": "topic:x", "status": "draft"}},
		{"manage_tags", map[string]any{"operation": "merge_tags", "tag_from": "topic:instal", "tag_to": "topic:install", "dry_run": "false"}},
		{"undo_tag_operation", map[string]any{"operation_id": "op_01JDQ7Z3M8X9K2T5V6W7Y8A9BC"}},
		{"list_tag_operations", map[string]any{"limit": 5.5}},
		{"tag_stats", map[string]any{}},
		{"dataset_stats", map[string]any{"dataset": "fail"}},
		{"get_item", map[string]any{"dataset": "d"}},
	} {
		hr := h.do(req{Method: http.MethodPost, Path: toolPath(tc.tool), Body: tc.input, Header: map[string]string{"X-User-Id": "mcp-user"}})
		require.Equal(t, http.StatusOK, hr.Status, string(hr.Body))
		mr, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: tc.input})
		require.NoError(t, err)
		overMCP := map[string]any{"content": mr.Content[0].(*mcp.TextContent).Text, "data": mr.StructuredContent, "isError": mr.IsError}
		assert.Equal(t, generic(t, hr.Body), generic(t, overMCP), "%s %v", tc.tool, tc.input)
	}
}

func TestMCPTransportRules(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(o *api.Options) { o.MaxBodyBytes = 1024 })
	mcpHeaders := map[string]string{"Accept": "application/json, text/event-stream"}
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`

	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		res := h.do(req{Method: method, Path: "/mcp", NoCheck: true, Header: mcpHeaders})
		require.Equal(t, http.StatusMethodNotAllowed, res.Status, method)
		assert.Equal(t, "METHOD_NOT_ALLOWED", res.Object(t)["code"])
		assert.Equal(t, "POST", res.Header.Get("Allow"))
	}

	res := h.do(req{Method: http.MethodPost, Path: "/mcp", Body: initialize, NoCheck: true,
		Header: map[string]string{"Accept": mcpHeaders["Accept"], "Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}})
	require.Equal(t, http.StatusForbidden, res.Status, "a cross-origin browser POST is refused")
	assert.Equal(t, "FORBIDDEN", res.Object(t)["code"])
	res = h.do(req{Method: http.MethodPost, Path: "/mcp", Body: initialize, NoCheck: true,
		Header: map[string]string{"Accept": mcpHeaders["Accept"], "Origin": "https://evil.example"}})
	require.Equal(t, http.StatusForbidden, res.Status, "an Origin that is not the Host is refused")

	res = h.do(req{Method: http.MethodPost, Path: "/mcp", Body: initialize, NoCheck: true,
		Header: map[string]string{"Accept": mcpHeaders["Accept"], "Origin": h.srv.URL}})
	require.Equal(t, http.StatusOK, res.Status, "same origin is fine: %s", res.Body)
	assert.Equal(t, "ground-truth-curator", res.Object(t)["result"].(map[string]any)["serverInfo"].(map[string]any)["name"])

	res = h.do(req{Method: http.MethodPost, Path: "/mcp", Body: initialize, NoCheck: true})
	require.Equal(t, http.StatusBadRequest, res.Status, "the SDK wants both media types in Accept")
	assert.Equal(t, "BAD_REQUEST", res.Object(t)["code"], "the SDK's plain-text errors get the API's error body")

	res = h.do(req{Method: http.MethodPost, Path: "/mcp", Body: `{"pad": "` + strings.Repeat("x", 2000) + `"}`, NoCheck: true, Header: mcpHeaders})
	require.Equal(t, http.StatusRequestEntityTooLarge, res.Status)
	assert.Equal(t, "BODY_TOO_LARGE", res.Object(t)["code"])

	res = h.do(req{Method: http.MethodPost, Path: "/mcp", Body: initialize, NoCheck: true,
		Header: map[string]string{"Accept": mcpHeaders["Accept"], "Content-Type": "text/plain"}})
	assert.Equal(t, http.StatusUnsupportedMediaType, res.Status)
}

func TestMCPEasyAuth(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(o *api.Options) {
		o.Auth = api.AuthOptions{EasyAuth: true, AllowedEmailDomains: []string{"example.com"}}
	})
	_, err := h.mcpSession(map[string]string{"X-User-Id": "mallory"})
	require.Error(t, err, "no principal: the client cannot even initialize")
	assert.Contains(t, err.Error(), "Unauthorized")

	cs, err := h.mcpSession(map[string]string{"X-MS-CLIENT-PRINCIPAL": principalHeader(map[string]string{"email": "dana@example.com"})})
	require.NoError(t, err)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "tag_stats", Arguments: map[string]any{}})
	require.NoError(t, err)
	assert.False(t, res.IsError)
	assert.Equal(t, "dana@example.com", h.calls.last(t).Caller.UserID)
	assert.Equal(t, "mcp", h.calls.last(t).Via)
}
