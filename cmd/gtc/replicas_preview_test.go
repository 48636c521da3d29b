package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Two gtc serve processes on one Cosmos DB database share the agent previews: a manage_tags
// preview made on A is executed on B, which changes the items; executing it again on A is
// ALREADY_EXECUTED naming B's operation.
func TestTwoReplicasOnCosmosSharePreviews(t *testing.T) {
	e, _ := cosmosEnv(t, t.TempDir(), "GTC_COSMOS_CREATE_CONTAINERS=true")
	a := startServer(t, e)
	b := startServer(t, e)
	importItems(t, a, "fb", 3, "topic:instal")

	merge := map[string]any{"operation": "merge_tags", "tag_from": "topic:instal", "tag_to": "topic:install"}
	pv := tool(t, a, "alice", "manage_tags", merge)
	require.Equal(t, false, pv["isError"], pv["content"])
	previewID := pv["data"].(map[string]any)["previewId"]
	require.NotNil(t, previewID, pv["content"])

	merge["dry_run"] = false
	run := tool(t, b, "alice", "manage_tags", merge)
	require.Equal(t, false, run["isError"], run["content"])
	require.True(t, strings.HasPrefix(run["content"].(string), "DONE op_"), run["content"])
	opID := run["data"].(map[string]any)["operationId"].(string)
	for id, it := range items(t, a, "fb") {
		assert.Equal(t, []string{"topic:install"}, strs(it["manualTags"]), id)
	}
	one := tool(t, a, "carol", "list_tag_operations", map[string]any{"operation_id": opID})
	op := one["data"].(map[string]any)["operation"].(map[string]any)
	assert.Equal(t, previewID, op["previewId"], "B applied A's preview")

	again := tool(t, a, "alice", "manage_tags", merge)
	failure := again["data"].(map[string]any)["error"].(map[string]any)
	assert.Equal(t, "ALREADY_EXECUTED", failure["code"], again["content"])
	assert.Equal(t, opID, failure["operationId"], again["content"])
}
