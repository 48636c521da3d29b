package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// doJSON sends a JSON request with headers and decodes the JSON answer.
func doJSON(t *testing.T, method, url string, body any, hdr map[string]string) (int, map[string]any, http.Header) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	require.NoError(t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	var m map[string]any
	raw, _ := io.ReadAll(res.Body)
	if len(raw) > 0 {
		require.NoError(t, json.Unmarshal(raw, &m), string(raw))
	}
	return res.StatusCode, m, res.Header
}

// tool calls an agent tool over HTTP as user and returns the envelope.
func tool(t *testing.T, s *server, user, name string, args map[string]any) map[string]any {
	t.Helper()
	code, env, _ := doJSON(t, http.MethodPost, s.base+"/v1/agent/tools/"+name, args, map[string]string{"X-User-Id": user})
	require.Equal(t, http.StatusOK, code, "%v", env)
	return env
}

// importItems creates n items in dataset ds carrying the manual tags.
func importItems(t *testing.T, s *server, ds string, n int, manual ...string) {
	t.Helper()
	var items []map[string]any
	for i := range n {
		items = append(items, map[string]any{"id": fmt.Sprintf("item-%03d", i), "datasetName": ds, "manualTags": manual,
			"history": []map[string]any{{"role": "user", "msg": fmt.Sprintf("How do I install version %d?", i)}, {"role": "assistant", "msg": "Like this."}}})
	}
	code, body, _ := doJSON(t, http.MethodPost, s.base+"/v1/ground-truths?registerTags=true", items, nil)
	require.Equal(t, http.StatusOK, code, "%v", body)
	require.Equal(t, float64(n), body["imported"], "%v", body)
}

func items(t *testing.T, s *server, ds string) map[string]map[string]any {
	t.Helper()
	code, body, _ := doJSON(t, http.MethodGet, s.base+"/v1/ground-truths?dataset="+ds+"&limit=100", nil, nil)
	require.Equal(t, http.StatusOK, code)
	out := map[string]map[string]any{}
	for _, it := range body["items"].([]any) {
		m := it.(map[string]any)
		out[m["id"].(string)] = m
	}
	return out
}

func strs(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// headerTransport adds fixed headers to every request (the identity of an MCP client).
type headerTransport struct{ h map[string]string }

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func mcpSession(t *testing.T, s *server, hdr map[string]string) (*mcp.ClientSession, error) {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "gtc-test", Version: "1"}, nil)
	sess, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: s.base + "/mcp",
		HTTPClient: &http.Client{Transport: headerTransport{hdr}}, DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	if err == nil {
		t.Cleanup(func() { _ = sess.Close() })
	}
	return sess, err
}

func TestAgentToolsOverHTTPAndMCP(t *testing.T) { agentToolsFlow(t, env(t.TempDir())) }

// TestAgentToolsOnCosmos runs the same flow with the audit log and the items in the Cosmos
// DB test server.
func TestAgentToolsOnCosmos(t *testing.T) {
	e, _ := cosmosEnv(t, t.TempDir(), "GTC_COSMOS_CREATE_CONTAINERS=true")
	agentToolsFlow(t, e)
}

// agentToolsFlow previews a merge over HTTP, executes it over MCP, checks the items and the
// audit entry, undoes it over HTTP and reads the log again after a restart.
func agentToolsFlow(t *testing.T, environ []string) {
	s := startServer(t, environ)
	importItems(t, s, "fb", 3, "topic:instal")
	importItems(t, s, "other", 1, "topic:else")
	before := items(t, s, "fb")

	args := map[string]any{"operation": "merge_tags", "tag_from": "topic:instal", "tag_to": "topic:install"}
	pv := tool(t, s, "alice", "manage_tags", args)
	require.Equal(t, false, pv["isError"], pv["content"])
	assert.Contains(t, pv["content"], "Matched 3 items: 3 would change, 0 would be skipped.")

	// Another caller cannot execute alice's preview, over MCP either.
	bobMCP, err := mcpSession(t, s, map[string]string{"X-User-Id": "bob"})
	require.NoError(t, err)
	exec := map[string]any{"operation": "merge_tags", "tag_from": "topic:instal", "tag_to": "topic:install", "dry_run": false}
	res, err := bobMCP.CallTool(context.Background(), &mcp.CallToolParams{Name: "manage_tags", Arguments: exec})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Contains(t, res.Content[0].(*mcp.TextContent).Text, "Not executed: you have no preview")

	// Alice previewed over HTTP and executes over MCP: binding is per caller, not per channel.
	aliceMCP, err := mcpSession(t, s, map[string]string{"X-User-Id": "alice", "User-Agent": "claude-test"})
	require.NoError(t, err)
	res, err = aliceMCP.CallTool(context.Background(), &mcp.CallToolParams{Name: "manage_tags", Arguments: exec})
	require.NoError(t, err)
	require.False(t, res.IsError, res.Content[0].(*mcp.TextContent).Text)
	text := res.Content[0].(*mcp.TextContent).Text
	assert.True(t, strings.HasPrefix(text, "DONE op_"), text)
	opID := res.StructuredContent.(map[string]any)["operationId"].(string)

	after := items(t, s, "fb")
	for id, it := range after {
		assert.Equal(t, []string{"topic:install"}, strs(it["manualTags"]), id)
		assert.Equal(t, strs(before[id]["computedTags"]), strs(it["computedTags"]), "computed tags are content-derived")
		want := append(strs(it["manualTags"]), strs(it["computedTags"])...)
		slices.Sort(want)
		assert.Equal(t, want, strs(it["tags"]), "tags is the sorted union")
		assert.NotEqual(t, before[id]["_etag"], it["_etag"])
	}
	assert.Equal(t, []string{"topic:else"}, strs(items(t, s, "other")["item-000"]["manualTags"]))

	// The audit entry names alice and the channel.
	one := tool(t, s, "carol", "list_tag_operations", map[string]any{"operation_id": opID})
	op := one["data"].(map[string]any)["operation"].(map[string]any)
	assert.Equal(t, "alice", op["actor"])
	assert.Equal(t, "mcp", op["via"])
	assert.Equal(t, "claude-test", op["userAgent"])
	assert.Len(t, op["items"], 3)

	// Undo over HTTP restores the tags.
	undo := map[string]any{"operation_id": opID}
	require.Equal(t, false, tool(t, s, "alice", "undo_tag_operation", undo)["isError"])
	undo["dry_run"] = false
	u := tool(t, s, "alice", "undo_tag_operation", undo)
	require.Equal(t, false, u["isError"], u["content"])
	for id, it := range items(t, s, "fb") {
		assert.Equal(t, []string{"topic:instal"}, strs(it["manualTags"]), id)
		// The item's history names both operations: the execution, then its undo.
		revs := getJSON(t, s.base+"/v1/ground-truths/fb/"+it["bucket"].(string)+"/"+id+"/history")["revisions"].([]any)
		require.GreaterOrEqual(t, len(revs), 3, id)
		undone, done := revs[0].(map[string]any), revs[1].(map[string]any)
		assert.Equal(t, "agent:"+opID, done["source"], id)
		assert.Equal(t, opID, done["operationId"], id)
		assert.Equal(t, "alice", done["actor"], id)
		assert.Contains(t, done["paths"], "/manualTags/0", id)
		assert.Regexp(t, `^agent:op_`, undone["source"], id)
		assert.NotEqual(t, done["source"], undone["source"], "the undo is an operation of its own")
	}

	// The audit log is in the store: it survives a restart.
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	<-s.done
	s2 := startServer(t, environ)
	list := tool(t, s2, "alice", "list_tag_operations", map[string]any{})
	assert.Equal(t, float64(2), list["data"].(map[string]any)["total"], list["content"])
	assert.Contains(t, list["content"], "undone by ")
}

func TestAgentToolsIdentityInEasyAuth(t *testing.T) {
	s := startServer(t, env(t.TempDir(), "GTC_AUTH_MODE=easyauth"))
	principal := func(email string) string {
		b, _ := json.Marshal(map[string]any{"auth_typ": "aad", "claims": []map[string]string{{"typ": "preferred_username", "val": email}}})
		return base64.StdEncoding.EncodeToString(b)
	}
	hdr := map[string]string{"X-MS-CLIENT-PRINCIPAL": principal("dana@contoso.com"), "X-User-Id": "mallory"}
	code, _, _ := doJSON(t, http.MethodPost, s.base+"/v1/ground-truths?registerTags=true", []map[string]any{{"id": "a", "datasetName": "ds", "manualTags": []string{"topic:x"},
		"history": []map[string]any{{"role": "user", "msg": "q"}, {"role": "assistant", "msg": "a"}}}}, hdr)
	require.Equal(t, http.StatusOK, code)
	call := func(args map[string]any) map[string]any {
		code, env, _ := doJSON(t, http.MethodPost, s.base+"/v1/agent/tools/manage_tags", args, hdr)
		require.Equal(t, http.StatusOK, code)
		return env
	}
	call(map[string]any{"operation": "delete_tag", "tag": "topic:x"})
	done := call(map[string]any{"operation": "delete_tag", "tag": "topic:x", "dry_run": false})
	require.Equal(t, false, done["isError"], done["content"])
	code, listed, _ := doJSON(t, http.MethodPost, s.base+"/v1/agent/tools/list_tag_operations", map[string]any{}, hdr)
	require.Equal(t, http.StatusOK, code)
	ops := listed["data"].(map[string]any)["operations"].([]any)
	require.Len(t, ops, 1)
	assert.Equal(t, "dana@contoso.com", ops[0].(map[string]any)["actor"], "X-User-Id is ignored in easyauth")

	code, _, _ = doJSON(t, http.MethodPost, s.base+"/v1/agent/tools/tag_stats", map[string]any{}, nil)
	assert.Equal(t, http.StatusUnauthorized, code)
	_, err := mcpSession(t, s, nil)
	assert.Error(t, err, "an MCP client without a principal is refused")
}

// TestAgentExecutionNeverLosesCuratorEdits runs a merge over 300 items, slowed to 100
// writes/s, while 8 curators save random items with If-Match from a fresh GET (a comment
// and a new tag). Afterwards every item shows its last successful curator save, every
// applied item had the preview's ETag when the tool wrote it, and no skipped item shows the
// tool's change.
func TestAgentExecutionNeverLosesCuratorEdits(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for several seconds")
	}
	for round := range 2 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			s := startServer(t, env(t.TempDir(), "GTC_AGENT_WRITES_PER_SECOND=100", "GTC_AGENT_EXEC_WAIT=1s"))
			for part := range 3 {
				importItems(t, s, fmt.Sprintf("ds%d", part), 100, "topic:instal")
			}
			previewETags := map[string]string{}
			for part := range 3 {
				for id, it := range items(t, s, fmt.Sprintf("ds%d", part)) {
					previewETags[fmt.Sprintf("ds%d/%s", part, id)] = it["_etag"].(string)
				}
			}
			args := map[string]any{"operation": "merge_tags", "tag_from": "topic:instal", "tag_to": "topic:install"}
			require.Equal(t, false, tool(t, s, "alice", "manage_tags", args)["isError"])
			args["dry_run"] = false
			started := tool(t, s, "alice", "manage_tags", args)
			require.Contains(t, started["content"], "RUNNING op_", "the run outlives the 1 s wait")
			opID := started["data"].(map[string]any)["operationId"].(string)

			var mu sync.Mutex
			saves := map[string]map[string]string{} // item → ETag of each successful curator save → its comment
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for w := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rnd := rand.New(rand.NewPCG(uint64(round), uint64(w)))
					for n := 0; ; n++ {
						select {
						case <-stop:
							return
						default:
						}
						ds, id := fmt.Sprintf("ds%d", rnd.IntN(3)), fmt.Sprintf("item-%03d", rnd.IntN(100))
						code, it, _ := doJSON(t, http.MethodGet, fmt.Sprintf("%s/v1/ground-truths?dataset=%s&itemId=%s", s.base, ds, id), nil, nil)
						if code != http.StatusOK || len(it["items"].([]any)) != 1 {
							continue
						}
						cur := it["items"].([]any)[0].(map[string]any)
						comment := fmt.Sprintf("w%d-%d", w, n)
						tags := append(strs(cur["manualTags"]), "intent:action")
						url := fmt.Sprintf("%s/v1/ground-truths/%s/%s/%s", s.base, ds, cur["bucket"], id)
						code, out, _ := doJSON(t, http.MethodPut, url, map[string]any{"comment": comment, "manualTags": tags},
							map[string]string{"If-Match": cur["_etag"].(string), "X-User-Id": fmt.Sprintf("curator-%d", w)})
						if code == http.StatusOK {
							mu.Lock()
							if saves[ds+"/"+id] == nil {
								saves[ds+"/"+id] = map[string]string{}
							}
							saves[ds+"/"+id][out["_etag"].(string)] = comment
							mu.Unlock()
						}
					}
				}()
			}
			var op map[string]any
			require.Eventually(t, func() bool {
				got := tool(t, s, "alice", "list_tag_operations", map[string]any{"operation_id": opID})
				op = got["data"].(map[string]any)["operation"].(map[string]any)
				return op["status"] != "running"
			}, 30*time.Second, 100*time.Millisecond)
			close(stop)
			wg.Wait()

			results := map[string]map[string]any{}
			for _, e := range op["items"].([]any) {
				m := e.(map[string]any)
				results[m["datasetName"].(string)+"/"+m["id"].(string)] = m
			}
			require.Len(t, results, 300)
			applied, skipped := 0, 0
			for part := range 3 {
				ds := fmt.Sprintf("ds%d", part)
				for id, it := range items(t, s, ds) {
					ref := ds + "/" + id
					r := results[ref]
					manual := strs(it["manualTags"])
					// Every write is conditional, so the stored state is exactly what its last
					// writer wrote: a curator's save (with its comment and tag) or the tool's.
					etag := it["_etag"].(string)
					if comment, ok := saves[ref][etag]; ok {
						assert.Equal(t, comment, it["comment"], "%s: the last successful save is what is stored", ref)
						assert.Contains(t, manual, "intent:action", ref)
					} else {
						require.Equal(t, "applied", r["result"], "%s: stored state written by neither a curator nor the tool", ref)
						assert.Equal(t, r["etagAfter"], etag, ref)
						assert.Equal(t, strs(r["manualTagsAfter"]), manual, ref)
						// The tool wrote on the preview's state and nobody saved after it, so
						// no curator save can have succeeded on this item at all.
						assert.Empty(t, saves[ref], "%s: a curator save was lost", ref)
					}
					switch r["result"] {
					case "applied":
						applied++
						assert.Equal(t, previewETags[ref], r["etagBefore"], "%s was written on the state its preview showed", ref)
						assert.Contains(t, manual, "topic:install", ref)
						assert.NotContains(t, manual, "topic:instal", ref)
					case "skipped_changed":
						skipped++
						assert.NotContains(t, manual, "topic:install", "%s: a skipped item never shows the tool's change", ref)
					default:
						t.Errorf("%s: unexpected result %v", ref, r["result"])
					}
				}
			}
			t.Logf("round %d: %d applied, %d skipped_changed, %d items saved by curators", round, applied, skipped, len(saves))
		})
	}
}
