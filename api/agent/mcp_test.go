package agent_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/agenttools"
	"github.com/gtc-dev/gtc/api/agent"
)

// connect links an SDK client to the tools' MCP server in process.
func connect(t *testing.T, tools *agent.Tools) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := tools.MCPServer().Connect(ctx, st, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil).Connect(ctx, ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func TestMCPInProcess(t *testing.T) {
	s := &seen{}
	tools := newTools(t, s, nil)
	cs := connect(t, tools)
	ctx := context.Background()

	init := cs.InitializeResult()
	require.NotNil(t, init)
	assert.Equal(t, "ground-truth-curator", init.ServerInfo.Name)
	assert.Equal(t, "test-version", init.ServerInfo.Version)
	assert.Equal(t, agenttools.Instructions, init.Instructions)

	// tools/list equals the mcp listing, element for element (the SDK lists by name; the
	// listing keeps the fixed order).
	listed, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	l, err := tools.Listing("mcp")
	require.NoError(t, err)
	want := map[string]any{}
	for _, e := range plain(t, l.Tools).([]any) {
		want[e.(map[string]any)["name"].(string)] = e
	}
	got := map[string]any{}
	for _, e := range plain(t, listed.Tools).([]any) {
		got[e.(map[string]any)["name"].(string)] = e
	}
	require.Len(t, got, 9)
	assert.Equal(t, want, got)

	cases := []struct {
		tool string
		args any
	}{
		{"search_items", map[string]any{"keyword": " install ", "limit": 3}},
		{"manage_tags", map[string]any{"operation": "merge_tags", "tag_from": "topic:instal", "tag_to": "topic:install"}},
		{"search_items", map[string]any{"limit": 80, "sort": "x"}},
		{"tag_stats", map[string]any{"dataset": "fail"}},
		{"get_item", nil},
		{"dataset_stats", []any{1}},
	}
	for _, tc := range cases {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
		require.NoError(t, err, "a tool's answer is a result, never a JSON-RPC error")
		if tc.tool == "manage_tags" {
			call, args, _ := s.last()
			assert.Equal(t, "mcp", call.Via)
			assert.Equal(t, gtc.Caller{UserID: "inproc"}, call.Caller)
			assert.Equal(t, map[string]any{"operation": "merge_tags", "dry_run": true, "tag_from": "topic:instal", "tag_to": "topic:install"}, args)
		}
		var input []byte
		if tc.args != nil { // no arguments over MCP are {}, as an empty body over HTTP
			input, _ = json.Marshal(tc.args)
		}
		direct := invoke(t, tools, tc.tool, string(input))
		require.Len(t, res.Content, 1)
		text, ok := res.Content[0].(*mcp.TextContent)
		require.True(t, ok)
		assert.Equal(t, direct.Content, text.Text)
		assert.Equal(t, direct.IsError, res.IsError)
		// Over MCP the caller comes from the resolver (no HTTP headers in process).
		wantData := plain(t, direct.Data).(map[string]any)
		if !direct.IsError {
			wantData["user"], wantData["via"] = "inproc", "mcp"
		}
		assert.Equal(t, wantData, plain(t, res.StructuredContent))
	}

	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "nope", Arguments: map[string]any{}})
	require.Error(t, err, "an unknown tool is a JSON-RPC error")
	assert.Contains(t, err.Error(), "nope")

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "tag_stats", Arguments: map[string]any{"dataset": "boom"}})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Equal(t, "INTERNAL", res.StructuredContent.(map[string]any)["error"].(map[string]any)["code"])
}

func TestMCPWithoutACallerIsAProtocolError(t *testing.T) {
	tools, err := agent.New(echoHandlers(&seen{}), agent.Options{ResolveCaller: func(http.Header) (gtc.Caller, error) {
		return gtc.Caller{}, &gtc.Error{Code: gtc.CodeUnauthenticated, Message: "Unauthorized"}
	}, Authorize: allowAll})
	require.NoError(t, err)
	cs := connect(t, tools)
	_, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "tag_stats", Arguments: map[string]any{}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Unauthorized")
}
