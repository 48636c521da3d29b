package sqlite

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gtc "github.com/gtc-dev/gtc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func agentOpFixture(n int, started time.Time, status string, tags ...string) *gtc.AgentOperation {
	return &gtc.AgentOperation{
		OperationID: fmt.Sprintf("op_%026d", n), Kind: gtc.AgentKindDeleteTag, Actor: fmt.Sprintf("user-%d@example.com", n%3),
		Via: "http", Tags: tags, StartedAt: started, Status: status,
	}
}

// Retention deletes in batches of agentDeleteBatch operations, one write each; the count is
// the sum over every batch, and running operations are never taken even when batches are
// full of older finished ones around them.
func TestAgentOpsDeleteBeforeBatches(t *testing.T) {
	s := openTest(t, Options{Path: MemoryPath})
	defer s.Close()
	ctx := t.Context()
	ops := s.AgentOperations()
	cut := time.Date(2025, 3, 14, 0, 0, 0, 0, time.UTC)
	const old = 2*agentDeleteBatch + 7
	for i := range old + 10 {
		status := gtc.AgentOpCompleted
		if i%20 == 0 {
			status = gtc.AgentOpRunning
		}
		started := cut.Add(-time.Duration(i+1) * time.Hour)
		if i >= old {
			started = cut.Add(time.Duration(i) * time.Minute) // newer than the cut
		}
		require.NoError(t, ops.Create(ctx, agentOpFixture(i, started, status, "topic:x")))
		require.NoError(t, ops.PutItems(ctx, fmt.Sprintf("op_%026d", i), 0, []gtc.AgentOpItem{{ID: "a"}, {ID: "b"}}))
	}
	running := (old + 19) / 20 // i = 0, 20, 40, … below old
	n, err := ops.DeleteBefore(ctx, cut)
	require.NoError(t, err)
	assert.Equal(t, old-running, n)

	var items, tags int
	require.NoError(t, s.rdb.QueryRow(`SELECT count(*) FROM agent_operation_items`).Scan(&items))
	require.NoError(t, s.rdb.QueryRow(`SELECT count(*) FROM agent_operation_tags`).Scan(&tags))
	assert.Equal(t, 2*(running+10), items, "items go with their operations (ON DELETE CASCADE)")
	assert.Equal(t, running+10, tags, "tags go with their operations")
	_, total, err := ops.List(ctx, gtc.AgentOpFilter{Tag: "topic:x", Limit: 1000})
	require.NoError(t, err)
	assert.Equal(t, running+10, total)
}

// The bound is rounded up to the next stored microsecond, so an operation that started less
// than a microsecond before t counts as before it.
func TestAgentOpsDeleteBeforeSubMicrosecond(t *testing.T) {
	s := openTest(t, Options{Path: MemoryPath})
	defer s.Close()
	ctx := t.Context()
	started := time.Date(2025, 3, 14, 0, 0, 0, 5000, time.UTC)
	require.NoError(t, s.AgentOperations().Create(ctx, agentOpFixture(1, started, gtc.AgentOpCompleted)))
	n, err := s.AgentOperations().DeleteBefore(ctx, started)
	require.NoError(t, err)
	assert.Zero(t, n, "started at t is not before t")
	n, err = s.AgentOperations().DeleteBefore(ctx, started.Add(300))
	require.NoError(t, err)
	assert.Equal(t, 1, n, "started 300 ns before t")
}

// Every read of the audit log walks an index in listing order: no full scan of the headers
// and no sort of them (a temporary b-tree), whatever the size of the log.
func TestAgentOpsQueryPlans(t *testing.T) {
	s := openTest(t, Options{Path: filepath.Join(t.TempDir(), "gtc.db")})
	defer s.Close()
	ctx := t.Context()
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 200 {
		status := gtc.AgentOpCompleted
		if i%50 == 0 {
			status = gtc.AgentOpRunning
		}
		require.NoError(t, s.AgentOperations().Create(ctx, agentOpFixture(i, base.Add(time.Duration(i)*time.Minute), status, fmt.Sprint("topic:", i%4))))
	}
	_, err := s.wdb.ExecContext(ctx, "ANALYZE")
	require.NoError(t, err)

	shapes := map[string]sqlText{
		"running": {SQL: `SELECT doc FROM agent_operations WHERE status = 'running' ORDER BY started_at DESC, operation_id DESC`},
		"delete":  {SQL: `SELECT operation_id FROM agent_operations WHERE started_at < ? AND status <> 'running' LIMIT ?`, Args: []any{"2025-01-01T01:00:00.000000Z", 50}},
	}
	for _, f := range []gtc.AgentOpFilter{
		{Limit: 50}, {Actor: "user-1@example.com", Limit: 50}, {Tag: "topic:2", Limit: 50},
		{Actor: "user-1@example.com", Tag: "topic:2", Limit: 50},
	} {
		count, page := agentListSQL(f)
		shapes[fmt.Sprintf("count %+v", f)] = count
		shapes[fmt.Sprintf("page %+v", f)] = page
	}
	for name, q := range shapes {
		plan := explain(t, s.rdb, q)
		joined := strings.Join(plan, "\n  ")
		for _, line := range plan {
			if line == "SCAN agent_operations" || line == "SCAN o" {
				t.Errorf("%s: full scan of the headers:\n  %s", name, joined)
			}
			if strings.Contains(line, "TEMP B-TREE") {
				t.Errorf("%s: sorts instead of walking an index:\n  %s", name, joined)
			}
		}
	}
}
