package agent_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/agenttools"
	"github.com/gtc-dev/gtc/api"
	"github.com/gtc-dev/gtc/api/agent"
	"github.com/gtc-dev/gtc/export"
	"github.com/gtc-dev/gtc/history"
	"github.com/gtc-dev/gtc/storage/localfs"
	"github.com/gtc-dev/gtc/storage/sqlite"
	"github.com/gtc-dev/gtc/tagging"
)

// liveServer is the API over a SQLite store with the real read tools, for the tools' answers
// about real writes, and the exporter that makes and compares releases. The tag tools, which
// these tests do not call, fail the test if called.
func liveServer(t *testing.T) (*httptest.Server, *export.Exporter) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Options{Path: filepath.Join(t.TempDir(), "gtc.db"), Synchronous: "NORMAL"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	reg, err := tagging.NewDefaultRegistry()
	require.NoError(t, err)
	groups, err := tagging.LoadGroups("")
	require.NoError(t, err)
	validators, err := tagging.NewValidators(nil, groups.Schema())
	require.NoError(t, err)
	clock := gtc.SystemClock{}
	cur := gtc.NewCurator(gtc.CuratorDeps{Store: st, Tagger: tagging.NewPipeline(reg, validators, nil),
		Vocabulary: tagging.NewVocabulary(reg, nil, groups, st.TagStore(), st.TagDefinitions(), clock, nil),
		Clock:      clock, IDs: gtc.NewIDGenerator(rand.Reader)})
	root := t.TempDir()
	local, err := localfs.Open(root)
	require.NoError(t, err)
	t.Cleanup(func() { _ = local.Close() })
	pr, fr := export.Builtins(nil)
	x, err := export.New(export.Config{Items: st.Items(), Artifacts: local, Processors: pr, Formatters: fr, TempDir: filepath.Join(root, "tmp"),
		RevisionDiff: func(ctx context.Context, k gtc.Key, from, to int64) ([]gtc.PatchOp, error) {
			_, _, ops, err := history.Diff(ctx, cur, k, from, to)
			return ops, err
		}})
	require.NoError(t, err)
	reads := agenttools.NewReads(agenttools.ReadsDeps{Store: st, Curator: cur, Registry: reg, Releases: x})
	read := func(f func(context.Context, map[string]any) agenttools.ToolResult) agent.Handler {
		return func(ctx context.Context, _ agenttools.ToolCall, args map[string]any) agenttools.ToolResult {
			return f(ctx, args)
		}
	}
	notCalled := func(context.Context, agenttools.ToolCall, map[string]any) agenttools.ToolResult {
		t.Error("a tag tool was called")
		return agenttools.ToolResult{}
	}
	auth := api.AuthOptions{DevUserID: "anonymous"}
	tools, err := agent.New(map[string]agent.Handler{
		agenttools.ToolManageTags: notCalled, agenttools.ToolUndoTagOperation: notCalled, agenttools.ToolListTagOperations: notCalled,
		agenttools.ToolTagStats: read(reads.TagStats), agenttools.ToolDatasetStats: read(reads.DatasetStats),
		agenttools.ToolSearchItems: read(reads.SearchItems), agenttools.ToolGetItem: read(reads.GetItem),
		agenttools.ToolGetItemHistory: read(reads.GetItemHistory), agenttools.ToolCompareReleases: read(reads.CompareReleases),
	}, agent.Options{Version: "test-version", ResolveCaller: api.CallerResolver(auth), Authorize: api.AuthorizeTool})
	require.NoError(t, err)
	srv := api.New(api.Deps{Curator: cur, Agent: tools, Exporter: x}, api.Options{Prefix: "/v1", Auth: auth,
		AgentToolsEnabled: true, AgentMCPEnabled: true, Version: "test-version"})
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts, x
}

// send makes one request as user and returns the status and the body.
func send(t *testing.T, ts *httptest.Server, method, path, user string, header map[string]string, body any) (int, []byte) {
	t.Helper()
	b, err := json.Marshal(body)
	require.NoError(t, err)
	r, err := http.NewRequest(method, ts.URL+path, bytes.NewReader(b))
	require.NoError(t, err)
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("X-User-Id", user)
	for k, v := range header {
		r.Header.Set(k, v)
	}
	res, err := ts.Client().Do(r)
	require.NoError(t, err)
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, out
}

// seedHistory imports one item as importer@example.com, then has alice change its comment
// and bob its status, each through an item PUT.
func seedHistory(t *testing.T, ts *httptest.Server) {
	t.Helper()
	code, body := send(t, ts, http.MethodPost, "/v1/ground-truths", "importer@example.com", nil, []any{map[string]any{
		"id": "q1", "datasetName": "support", "comment": "needs a check",
		"history": []any{map[string]any{"role": "user", "msg": "Where is the installer?"}, map[string]any{"role": "assistant", "msg": "On the downloads page."}},
	}})
	require.Equal(t, http.StatusOK, code, string(body))
	path := "/v1/ground-truths/support/" + gtc.DeriveBucket("support", "q1") + "/q1"
	put := func(user string, change map[string]any) {
		code, body := send(t, ts, http.MethodGet, path, user, nil, nil)
		require.Equal(t, http.StatusOK, code, string(body))
		var it map[string]any
		require.NoError(t, json.Unmarshal(body, &it))
		code, body = send(t, ts, http.MethodPut, path, user, map[string]string{"If-Match": it["_etag"].(string)}, change)
		require.Equal(t, http.StatusOK, code, string(body))
	}
	put("alice@example.com", map[string]any{"comment": "checked against the docs"})
	put("bob@example.com", map[string]any{"status": "approved"})
}

// checkHistory checks a get_item_history answer about seedHistory's item.
func checkHistory(t *testing.T, content string, data map[string]any, withValues bool) {
	t.Helper()
	lines := strings.Split(content, "\n")
	assert.Equal(t, "support/q1: revisions 3 to 1, newest first; revision 1 is the first.", lines[0])
	assert.Regexp(t, `^r3 \S+Z bob@example\.com via api: /status`, lines[1])
	revs := data["revisions"].([]any)
	require.Len(t, revs, 3)
	bob, alice, first := revs[0].(map[string]any), revs[1].(map[string]any), revs[2].(map[string]any)
	assert.Equal(t, "bob@example.com", bob["actor"])
	assert.Contains(t, bob["paths"], "/status")
	assert.Equal(t, "alice@example.com", alice["actor"])
	assert.Equal(t, "api", alice["source"])
	assert.Contains(t, alice["paths"], "/comment")
	assert.NotContains(t, alice["paths"], "/status")
	assert.Equal(t, "importer@example.com", first["actor"])
	assert.Equal(t, "import", first["source"])
	assert.Nil(t, data["nextCursor"])
	if !withValues {
		assert.NotContains(t, alice, "changes")
		return
	}
	assert.Contains(t, content, `  replace /comment: "needs a check" → "checked against the docs"`)
	assert.Contains(t, alice["changes"], map[string]any{"op": "replace", "path": "/comment", "old": "needs a check", "value": "checked against the docs"},
		"what the comment said before alice changed it")
	assert.Contains(t, bob["changes"], map[string]any{"op": "replace", "path": "/status", "old": "draft", "value": "approved"})
}

func TestItemHistoryToolOverHTTP(t *testing.T) {
	ts, _ := liveServer(t)
	seedHistory(t, ts)
	for _, withValues := range []bool{false, true} {
		code, body := send(t, ts, http.MethodPost, "/v1/agent/tools/get_item_history", "carol@example.com", nil,
			map[string]any{"dataset": "support", "id": "q1", "with_values": withValues})
		require.Equal(t, http.StatusOK, code, string(body))
		var res struct {
			Content string         `json:"content"`
			Data    map[string]any `json:"data"`
			IsError bool           `json:"isError"`
		}
		require.NoError(t, json.Unmarshal(body, &res))
		require.False(t, res.IsError, res.Content)
		checkHistory(t, res.Content, res.Data, withValues)
	}

	code, body := send(t, ts, http.MethodPost, "/v1/agent/tools/get_item_history", "carol@example.com", nil,
		map[string]any{"dataset": "support", "id": "q2"})
	require.Equal(t, http.StatusOK, code, string(body))
	assert.Contains(t, string(body), `"code":"NOT_FOUND"`)
	assert.Contains(t, string(body), "Not found: no item support/q2")

	code, body = send(t, ts, http.MethodPost, "/v1/agent/tools/get_item_history", "carol@example.com", nil,
		map[string]any{"dataset": "support", "id": "q1", "limit": 500, "with_values": "yes"})
	require.Equal(t, http.StatusOK, code, string(body))
	assert.Contains(t, string(body), `"code":"INVALID_INPUT"`)
	assert.Contains(t, string(body), "limit")
	assert.Contains(t, string(body), "with_values")
}

func TestItemHistoryToolOverMCP(t *testing.T) {
	ts, _ := liveServer(t)
	seedHistory(t, ts)
	tr := &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp",
		HTTPClient: &http.Client{Transport: userHeader("carol@example.com")}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "history-test", Version: "1"}, nil).Connect(context.Background(), tr, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	for _, withValues := range []bool{false, true} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_item_history",
			Arguments: map[string]any{"dataset": "support", "id": "q1", "with_values": withValues}})
		require.NoError(t, err)
		require.False(t, res.IsError)
		text := res.Content[0].(*mcp.TextContent).Text
		checkHistory(t, text, plain(t, res.StructuredContent).(map[string]any), withValues)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_item_history",
		Arguments: map[string]any{"dataset": "support", "id": "q1", "cursor": "not-a-cursor"}})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Contains(t, res.Content[0].(*mcp.TextContent).Text, "cursor 'not-a-cursor'")
}

// userHeader sends X-User-Id with every request of an MCP client.
type userHeader string

func (u userHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-User-Id", string(u))
	return http.DefaultTransport.RoundTrip(r)
}

// One comparison through both transports: release r1 of seedHistory's item, then one more
// change of its comment, compared with the current items.
func TestCompareReleasesTool(t *testing.T) {
	ts, x := liveServer(t)
	seedHistory(t, ts)
	ctx := context.Background()
	rp, err := x.ResolveRelease(ctx, &gtc.ReleaseRequest{Name: "r1", Formats: []string{"jsonl"}}, "carol@example.com")
	require.NoError(t, err)
	_, err = x.CreateRelease(ctx, rp)
	require.NoError(t, err)
	path := "/v1/ground-truths/support/" + gtc.DeriveBucket("support", "q1") + "/q1"
	code, body := send(t, ts, http.MethodGet, path, "alice@example.com", nil, nil)
	require.Equal(t, http.StatusOK, code, string(body))
	var it map[string]any
	require.NoError(t, json.Unmarshal(body, &it))
	code, body = send(t, ts, http.MethodPut, path, "alice@example.com", map[string]string{"If-Match": it["_etag"].(string)},
		map[string]any{"comment": "after r1"})
	require.Equal(t, http.StatusOK, code, string(body))

	want := []string{
		"r1 → current (the items r1's selection holds now): 0 added, 0 removed, 1 changed, 0 unchanged.",
		"Tag counts: the same in both.",
		"Added, removed or changed items, in (dataset, id) order:",
		"changed support/q1 r3 → r4",
		`  replace /comment: "checked against the docs" → "after r1"`,
	}
	last := "No more added, removed or changed items."
	check := func(content string) {
		t.Helper()
		lines := strings.Split(content, "\n")
		require.Greater(t, len(lines), len(want), content)
		assert.Equal(t, want, lines[:len(want)], "the change of updatedAt follows")
		assert.Equal(t, last, lines[len(lines)-1])
	}
	code, body = send(t, ts, http.MethodPost, "/v1/agent/tools/compare_releases", "carol@example.com", nil,
		map[string]any{"from": "r1", "to": "current"})
	require.Equal(t, http.StatusOK, code, string(body))
	var res struct {
		Content string         `json:"content"`
		Data    map[string]any `json:"data"`
		IsError bool           `json:"isError"`
	}
	require.NoError(t, json.Unmarshal(body, &res))
	require.False(t, res.IsError, res.Content)
	check(res.Content)
	assert.Equal(t, map[string]any{"added": 0.0, "removed": 0.0, "changed": 1.0, "unchanged": 0.0}, res.Data["counts"])

	code, body = send(t, ts, http.MethodPost, "/v1/agent/tools/compare_releases", "carol@example.com", nil,
		map[string]any{"from": "r1", "kind": "moved"})
	require.Equal(t, http.StatusOK, code, string(body))
	assert.Contains(t, string(body), `"code":"INVALID_INPUT"`)
	assert.Contains(t, string(body), "kind")

	tr := &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp",
		HTTPClient: &http.Client{Transport: userHeader("carol@example.com")}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "releases-test", Version: "1"}, nil).Connect(ctx, tr, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	mres, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "compare_releases", Arguments: map[string]any{"from": "r1", "to": "current"}})
	require.NoError(t, err)
	require.False(t, mres.IsError)
	check(mres.Content[0].(*mcp.TextContent).Text)
	assert.Equal(t, res.Data["counts"], plain(t, mres.StructuredContent).(map[string]any)["counts"])
}
