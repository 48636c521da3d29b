package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Two servers on one SQLite file: the second says at startup that the store is served by
// one process; a server that was killed does not count, one still running does.
func TestSecondServerOnOneSQLiteFileIsTold(t *testing.T) {
	const warning = "another gtc server already serves this database"
	data := t.TempDir()
	first := startServer(t, env(data))
	second := startServer(t, env(data))
	second.logContains(t, warning)
	second.logContains(t, `"lockFile":"`+data+`/gtc.db-serve"`)
	assert.NotContains(t, first.stderr.String(), warning, "the first server was alone")

	// kill -9 of the first leaves the second serving: a third is still told.
	_ = first.cmd.Process.Kill()
	<-first.done
	third := startServer(t, env(data))
	third.logContains(t, warning)

	for _, s := range []*server{second, third} {
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	alone := startServer(t, env(data))
	alone.logContains(t, `"msg":"item store is SQLite"`)
	assert.False(t, strings.Contains(alone.stderr.String(), warning), "no server left: the next is alone")
}

// Two gtc serve processes on one Cosmos DB database: an execution running on A locks its tag
// for B (TAG_BUSY naming it), and when A is killed with kill -9 in the middle, B reports the
// operation interrupted once A's leases have expired; then B executes on the tag.
func TestTwoReplicasOnCosmosShareTagLocks(t *testing.T) {
	const ttl = 2 * time.Second
	e, _ := cosmosEnv(t, t.TempDir(), "GTC_COSMOS_CREATE_CONTAINERS=true", "GTC_AGENT_WRITES_PER_SECOND=1",
		"GTC_AGENT_EXEC_WAIT=10ms", "GTC_AGENT_LEASE_TTL="+ttl.String())
	a := startServer(t, e)
	b := startServer(t, e)
	importItems(t, a, "fb", 30, "topic:instal")

	merge := map[string]any{"operation": "merge_tags", "tag_from": "topic:instal", "tag_to": "topic:install"}
	require.Equal(t, false, tool(t, a, "alice", "manage_tags", merge)["isError"])
	merge["dry_run"] = false
	run := tool(t, a, "alice", "manage_tags", merge)
	require.Equal(t, false, run["isError"], run["content"])
	require.True(t, strings.HasPrefix(run["content"].(string), "RUNNING op_"), run["content"])
	opID := run["data"].(map[string]any)["operationId"].(string)

	del := map[string]any{"operation": "delete_tag", "tag": "topic:instal"}
	pv := tool(t, b, "bob", "manage_tags", del)
	require.Equal(t, false, pv["isError"], pv["content"])
	assert.Contains(t, pv["content"], "operation "+opID+" on the same tag is running now")
	del["dry_run"] = false
	busy := tool(t, b, "bob", "manage_tags", del)
	failure := busy["data"].(map[string]any)["error"].(map[string]any)
	assert.Equal(t, "TAG_BUSY", failure["code"], busy["content"])
	assert.Equal(t, opID, failure["operationId"])
	assert.Equal(t, "alice", failure["actor"])

	// kill -9 of A in the middle of its execution.
	require.NoError(t, a.cmd.Process.Kill())
	<-a.done
	killed := time.Now()
	status := func() string {
		one := tool(t, b, "carol", "list_tag_operations", map[string]any{"operation_id": opID})
		return one["data"].(map[string]any)["operation"].(map[string]any)["status"].(string)
	}
	for status() == "running" {
		require.Less(t, time.Since(killed), 8*ttl, "B reports A's operation interrupted within twice the lease time, plus slack")
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("B reported A's operation %s after %s", status(), time.Since(killed).Round(time.Millisecond))
	assert.Equal(t, "interrupted", status())

	after := tool(t, b, "bob", "manage_tags", del)
	assert.Equal(t, false, after["isError"], after["content"])
}
