package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/agenttools"
	"github.com/gtc-dev/gtc/api/agent"
)

var order = []string{"manage_tags", "undo_tag_operation", "list_tag_operations", "tag_stats", "dataset_stats", "search_items", "get_item", "get_item_history", "compare_releases"}

func TestNewNeedsEveryHandlerAndAResolver(t *testing.T) {
	s := &seen{}
	hs := echoHandlers(s)
	delete(hs, "get_item")
	_, err := agent.New(hs, agent.Options{ResolveCaller: headerResolver, Authorize: allowAll})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "get_item")

	hs = echoHandlers(s)
	hs["get_items"] = hs["get_item"]
	_, err = agent.New(hs, agent.Options{ResolveCaller: headerResolver, Authorize: allowAll})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "get_items")

	_, err = agent.New(echoHandlers(s), agent.Options{Authorize: allowAll})
	assert.Error(t, err, "MCP calls need a caller resolver")
	_, err = agent.New(echoHandlers(s), agent.Options{ResolveCaller: headerResolver})
	assert.ErrorContains(t, err, "Authorize", "every call needs the permission check")
}

func TestListingFormats(t *testing.T) {
	tools := newTools(t, &seen{}, nil)
	assert.Equal(t, order, agenttools.Names())
	assert.Regexp(t, `^[0-9a-f]{12}$`, tools.ToolsetVersion())

	cases := []struct {
		format, want string
		keys         []string
		schema       func(el map[string]any) map[string]any
		name         func(el map[string]any) any
	}{
		{"", "anthropic", []string{"description", "input_schema", "name"},
			func(el map[string]any) map[string]any { return el["input_schema"].(map[string]any) },
			func(el map[string]any) any { return el["name"] }},
		{"anthropic", "anthropic", []string{"description", "input_schema", "name"},
			func(el map[string]any) map[string]any { return el["input_schema"].(map[string]any) },
			func(el map[string]any) any { return el["name"] }},
		{"openai", "openai", []string{"function", "type"},
			func(el map[string]any) map[string]any {
				return el["function"].(map[string]any)["parameters"].(map[string]any)
			},
			func(el map[string]any) any { return el["function"].(map[string]any)["name"] }},
		{"mcp", "mcp", []string{"annotations", "description", "inputSchema", "name", "title"},
			func(el map[string]any) map[string]any { return el["inputSchema"].(map[string]any) },
			func(el map[string]any) any { return el["name"] }},
	}
	for _, tc := range cases {
		t.Run(tc.want+"/"+tc.format, func(t *testing.T) {
			l, err := tools.Listing(tc.format)
			require.NoError(t, err)
			body := plain(t, l).(map[string]any)
			assert.Equal(t, tc.want, body["format"])
			assert.Equal(t, tools.ToolsetVersion(), body["toolsetVersion"])
			assert.Equal(t, agenttools.Instructions, body["instructions"])
			assert.True(t, strings.HasPrefix(agenttools.Instructions, "You help curators maintain ground-truth items."))
			list := body["tools"].([]any)
			require.Len(t, list, 9)
			var names []any
			for _, e := range list {
				el := e.(map[string]any)
				var keys []string
				for k := range el {
					keys = append(keys, k)
				}
				assert.ElementsMatch(t, tc.keys, keys)
				names = append(names, tc.name(el))
				s := tc.schema(el)
				assert.Equal(t, "object", s["type"])
				assert.Equal(t, false, s["additionalProperties"])
				for _, comb := range []string{"oneOf", "anyOf", "allOf"} {
					assert.NotContains(t, s, comb)
				}
				if tc.want == "openai" {
					assert.Equal(t, "function", el["type"])
					assert.NotContains(t, el["function"], "strict")
				}
				if tc.want == "mcp" {
					ann := el["annotations"].(map[string]any)
					if tc.name(el) == "manage_tags" || tc.name(el) == "undo_tag_operation" {
						assert.Equal(t, true, ann["destructiveHint"])
						assert.NotEqual(t, true, ann["readOnlyHint"])
					} else {
						assert.Equal(t, true, ann["readOnlyHint"])
						assert.NotContains(t, ann, "destructiveHint")
					}
					assert.NotEmpty(t, el["title"])
				}
			}
			assert.Equal(t, []any{"manage_tags", "undo_tag_operation", "list_tag_operations", "tag_stats",
				"dataset_stats", "search_items", "get_item", "get_item_history", "compare_releases"}, names)
		})
	}

	_, err := tools.Listing("xml")
	assert.ErrorIs(t, err, agent.ErrUnknownFormat)

	again := newTools(t, &seen{}, nil)
	assert.Equal(t, tools.ToolsetVersion(), again.ToolsetVersion(), "the version depends on the definitions only")
}

func TestListingCarriesTheSpecDefinitions(t *testing.T) {
	tools := newTools(t, &seen{}, nil)
	l, err := tools.Listing("anthropic")
	require.NoError(t, err)
	byName := map[string]map[string]any{}
	for _, e := range plain(t, l).(map[string]any)["tools"].([]any) {
		el := e.(map[string]any)
		byName[el["name"].(string)] = el
	}
	assert.Equal(t, "Fetch one item in full: conversation turns, tags, status, assignment, comment and tool calls. "+
		"Give dataset and id; bucket is optional.", byName["get_item"]["description"])
	search := byName["search_items"]["input_schema"].(map[string]any)["properties"].(map[string]any)
	assert.Equal(t, map[string]any{"type": "integer", "minimum": 1.0, "maximum": 50.0, "default": 10.0}, search["limit"])
	undo := byName["undo_tag_operation"]["input_schema"].(map[string]any)
	assert.Equal(t, []any{"operation_id"}, undo["required"])
	assert.Equal(t, "^op_[0-9A-HJKMNP-TV-Z]{26}$", undo["properties"].(map[string]any)["operation_id"].(map[string]any)["pattern"])
}

func invoke(t *testing.T, tools *agent.Tools, name, input string) agenttools.ToolResult {
	t.Helper()
	res, known := tools.Invoke(context.Background(), agenttools.ToolCall{Caller: gtc.Caller{UserID: "u"}, Via: "http"}, name, []byte(input))
	require.True(t, known)
	return res
}

func TestInputChecks(t *testing.T) {
	s := &seen{}
	tools := newTools(t, s, nil)
	const opID = "op_01JDQ7Z3M8X9K2T5V6W7Y8A9BC"
	cases := []struct {
		name, tool, input, text string
		fields                  []string
	}{
		{"limit and unknown field", "search_items", `{"limit": 80, "sort": "updatedAt"}`,
			"Invalid input: limit must be between 1 and 50 (got 80); unknown field 'sort' (allowed: keyword, dataset, " +
				"status, tags, exclude_tags, sort_by, sort_order, limit, offset).", []string{"limit", "sort"}},
		{"limit 51", "search_items", `{"limit": 51}`, "Invalid input: limit must be between 1 and 50 (got 51).", []string{"limit"}},
		{"string false is not a boolean", "manage_tags", `{"operation": "delete_tag", "tag": "topic:x", "dry_run": "false"}`,
			`Invalid input: dry_run must be true or false (got "false").`, []string{"dry_run"}},
		{"5.5 is not an integer", "list_tag_operations", `{"limit": 5.5}`, "Invalid input: limit must be an integer (got 5.5).", []string{"limit"}},
		{"string 5 is not an integer", "dataset_stats", `{"limit": "5"}`, `Invalid input: limit must be an integer (got "5").`, []string{"limit"}},
		{"wrong enum", "tag_stats", `{"kind": "everything", "sort_by": "popularity"}`,
			`Invalid input: kind must be one of: all, manual, computed (got "everything"); sort_by must be one of: count, name (got "popularity").`,
			[]string{"kind", "sort_by"}},
		{"empty after trim", "search_items", `{"keyword": "   "}`, "Invalid input: keyword must not be empty.", []string{"keyword"}},
		{"short after trim", "manage_tags", `{"operation": "delete_tag", "tag": "  ab  "}`,
			"Invalid input: tag must be at least 3 characters (got 2).", []string{"tag"}},
		{"too long", "tag_stats", `{"group": "` + strings.Repeat("g", 101) + `"}`,
			"Invalid input: group must be at most 100 characters (got 101).", []string{"group"}},
		{"missing required", "get_item", `{}`, "Invalid input: dataset is required; id is required.", []string{"dataset", "id"}},
		{"missing operation", "manage_tags", `{"tag": "topic:x"}`,
			"Invalid input: operation is required (one of: find_and_tag, delete_tag, merge_tags).", []string{"operation"}},
		{"foreign field per operation", "manage_tags", `{"operation": "delete_tag", "tag": "topic:x", "status": "draft"}`,
			"Invalid input: status is not allowed with delete_tag (allowed: tag, dataset, dry_run).", []string{"status"}},
		{"merge with keyword", "manage_tags", `{"operation": "merge_tags", "tag_from": "a:b", "tag_to": "a:c", "keyword": "x", "tags": []}`,
			"Invalid input: keyword is not allowed with merge_tags (allowed: tag_from, tag_to, dataset, dry_run); " +
				"tags is not allowed with merge_tags (allowed: tag_from, tag_to, dataset, dry_run).", []string{"keyword", "tags"}},
		{"missing per operation", "manage_tags", `{"operation": "find_and_tag", "tag": "topic:x"}`,
			"Invalid input: keyword is required for find_and_tag.", []string{"keyword"}},
		{"merge needs both tags", "manage_tags", `{"operation": "merge_tags", "tag": "topic:x"}`,
			"Invalid input: tag is not allowed with merge_tags (allowed: tag_from, tag_to, dataset, dry_run); " +
				"tag_from is required for merge_tags; tag_to is required for merge_tags.", []string{"tag", "tag_from", "tag_to"}},
		{"unknown operation", "manage_tags", `{"operation": "rename"}`,
			`Invalid input: operation must be one of: find_and_tag, delete_tag, merge_tags (got "rename").`, []string{"operation"}},
		{"null is not a string", "search_items", `{"dataset": null}`, "Invalid input: dataset must be a string (got null).", []string{"dataset"}},
		{"array entries", "search_items", `{"tags": ["topic:x", 5], "exclude_tags": "topic:y"}`,
			`Invalid input: tags[1] must be a string (got 5); exclude_tags must be an array of strings (got "topic:y").`,
			[]string{"tags[1]", "exclude_tags"}},
		{"too many entries", "search_items", `{"tags": ["a","b","c","d","e","f","g","h","i","j","k"]}`,
			"Invalid input: tags must have at most 10 entries (got 11).", []string{"tags"}},
		{"offset below minimum", "search_items", `{"offset": -1}`, "Invalid input: offset must be between 0 and 10000 (got -1).", []string{"offset"}},
		{"pattern", "undo_tag_operation", `{"operation_id": "op_123"}`,
			`Invalid input: operation_id must match ^op_[0-9A-HJKMNP-TV-Z]{26}$ (got "op_123").`, []string{"operation_id"}},
		{"uuid", "get_item", `{"dataset": "d", "id": "1", "bucket": "nope"}`, `Invalid input: bucket must be a UUID (got "nope").`, []string{"bucket"}},
		{"not an object", "tag_stats", `[1, 2]`, "Invalid input: the input must be a JSON object (got an array).", []string{"body"}},
		{"not JSON", "tag_stats", `{"limit":`, "", []string{"body"}},
		{"object where a string belongs", "get_item", `{"dataset": {"a": 1}, "id": ["x"]}`,
			"Invalid input: dataset must be a string (got an object); id must be a string (got an array).", []string{"dataset", "id"}},
		{"undo with a good id but a bad flag", "undo_tag_operation", `{"operation_id": "` + opID + `", "dry_run": 0}`,
			"Invalid input: dry_run must be true or false (got 0).", []string{"dry_run"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, before := s.last()
			res := invoke(t, tools, tc.tool, tc.input)
			require.True(t, res.IsError, res.Content)
			if tc.text != "" {
				assert.Equal(t, tc.text, res.Content)
			} else {
				assert.True(t, strings.HasPrefix(res.Content, "Invalid input: the input is not valid JSON"), res.Content)
			}
			data := plain(t, res.Data).(map[string]any)
			e := data["error"].(map[string]any)
			assert.Equal(t, "INVALID_INPUT", e["code"])
			assert.Equal(t, res.Content, e["message"])
			var fields []string
			for _, f := range e["fields"].([]any) {
				fields = append(fields, f.(map[string]any)["field"].(string))
				assert.NotEmpty(t, f.(map[string]any)["message"])
			}
			assert.Equal(t, tc.fields, fields)
			_, _, after := s.last()
			assert.Equal(t, before, after, "the handler does not run on invalid input")
		})
	}
}

func TestArgumentsReachTheHandlerTypedAndDefaulted(t *testing.T) {
	s := &seen{}
	tools := newTools(t, s, nil)
	cases := []struct {
		tool, input string
		want        map[string]any
	}{
		{"search_items", ``, map[string]any{"sort_by": "updatedAt", "sort_order": "desc", "limit": 10, "offset": 0}},
		{"search_items", `  {"keyword": "  reset password ", "tags": [" topic:x "], "limit": 5.0, "offset": 1e2}`,
			map[string]any{"keyword": "reset password", "tags": []string{"topic:x"}, "sort_by": "updatedAt", "sort_order": "desc", "limit": 5, "offset": 100}},
		{"manage_tags", `{"operation": "find_and_tag", "keyword": "install", "tag": "topic:install", "status": "draft"}`,
			map[string]any{"operation": "find_and_tag", "dry_run": true, "keyword": "install", "tag": "topic:install", "status": "draft"}},
		{"manage_tags", `{"operation": "delete_tag", "tag": "topic:x", "dry_run": false, "dataset": "d"}`,
			map[string]any{"operation": "delete_tag", "dry_run": false, "tag": "topic:x", "dataset": "d"}},
		{"undo_tag_operation", `{"operation_id": "op_01JDQ7Z3M8X9K2T5V6W7Y8A9BC"}`,
			map[string]any{"operation_id": "op_01JDQ7Z3M8X9K2T5V6W7Y8A9BC", "dry_run": true}},
		{"list_tag_operations", `{}`, map[string]any{"limit": 10, "mine_only": false}},
		{"tag_stats", `{"limit": 500}`, map[string]any{"kind": "all", "sort_by": "count", "limit": 500}},
		{"dataset_stats", `{"sort_by": "total"}`, map[string]any{"sort_by": "total", "limit": 50}},
		{"get_item", `{"dataset": "d", "id": "x", "bucket": "0F8FAD5B-D9CB-469F-A165-70867728950E"}`,
			map[string]any{"dataset": "d", "id": "x", "bucket": "0F8FAD5B-D9CB-469F-A165-70867728950E"}},
		{"search_items", `{"limit": 1, "limit": 2}`, map[string]any{"sort_by": "updatedAt", "sort_order": "desc", "limit": 2, "offset": 0}},
	}
	for _, tc := range cases {
		t.Run(tc.tool+" "+tc.input, func(t *testing.T) {
			res := invoke(t, tools, tc.tool, tc.input)
			require.False(t, res.IsError, res.Content)
			assert.Equal(t, tc.tool+" ok", res.Content)
			call, args, _ := s.last()
			assert.Equal(t, tc.want, args)
			assert.Equal(t, "u", call.Caller.UserID)
			assert.Equal(t, "http", call.Via)
		})
	}

	_, known := tools.Invoke(context.Background(), agenttools.ToolCall{}, "nope", nil)
	assert.False(t, known)
	assert.True(t, tools.Has("get_item"))
	assert.False(t, tools.Has("Get_Item"))
}

func TestHandlerPanicIsAnInternalEnvelope(t *testing.T) {
	var log bytes.Buffer
	tools := newTools(t, &seen{}, &log)
	res := invoke(t, tools, "tag_stats", `{"dataset": "boom"}`)
	require.True(t, res.IsError)
	data := plain(t, res.Data).(map[string]any)
	e := data["error"].(map[string]any)
	assert.Equal(t, "INTERNAL", e["code"])
	id, _ := e["errorId"].(string)
	require.NotEmpty(t, id)
	assert.Equal(t, "Internal error (error id "+id+"); the server log has the details. Check list_tag_operations before retrying a change.", res.Content)
	assert.Equal(t, res.Content, e["message"])

	var line map[string]any
	require.NoError(t, json.Unmarshal(bytes.TrimSpace(log.Bytes()), &line), log.String())
	assert.Equal(t, "ERROR", line["level"])
	assert.Equal(t, id, line["error_id"])
	assert.Equal(t, "handler exploded", line["panic"])
	assert.Equal(t, "tag_stats", line["tool"])
	assert.Regexp(t, regexp.MustCompile(`agent_test`), line["stack"])
}

func TestCutUserAgent(t *testing.T) {
	assert.Equal(t, "curl/8", agent.CutUserAgent("curl/8"))
	assert.Equal(t, strings.Repeat("é", 200), agent.CutUserAgent(strings.Repeat("é", 250)))
}
