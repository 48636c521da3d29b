package agenttools

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
)

// secondServer is another Bulk on the environment's store and audit log: a second replica.
func (e *bulkEnv) secondServer(t *testing.T) *Bulk {
	t.Helper()
	b := NewBulk(BulkDeps{Items: readOnlyItems{e.store.Items()}, Saver: e.saver, Audit: e.audit, Leases: e.store.Leases(),
		Previews: e.store.AgentPreviews(), Pipeline: e.pipe, Clock: e.clock, Known: func(context.Context) ([]string, error) { return e.known, nil }},
		BulkOptions{ExecWait: time.Millisecond, WritesPerSecond: 1_000_000})
	t.Cleanup(func() { b.Close(context.Background()) })
	return b
}

// blockedExecution starts user's merge of from into to on e's server and holds every tag
// write (of any server sharing e's saver) until release is closed: an execution that runs.
func (e *bulkEnv) blockedExecution(t *testing.T, user, from, to string) (opID string, release chan struct{}) {
	t.Helper()
	release = make(chan struct{})
	e.saver.before = func(gtc.Key, int) error { <-release; return nil }
	require.False(t, e.bulk.ManageTags(bg, caller(user), merge(from, to, true)).IsError)
	r := e.bulk.ManageTags(bg, caller(user), merge(from, to, false))
	require.True(t, strings.HasPrefix(r.Content, "RUNNING op_"), r.Content)
	return dataOf(t, r)["operationId"].(string), release
}

// An execution running on one server locks its tag for every server of the store: another
// server's preview warns of it, its execution is TAG_BUSY naming the operation and its
// actor, and its repair leaves the running operation alone. Once it has finished, the other
// server executes.
func TestTagLocksAreSharedByTheServersOfAStore(t *testing.T) {
	e := newBulkEnv(t, BulkOptions{ExecWait: time.Millisecond})
	other := e.secondServer(t)
	for i := range 3 {
		e.add("ds", fmt.Sprintf("i%d", i), "q", "topic:old")
	}
	opID, release := e.blockedExecution(t, "alice", "topic:old", "topic:new")

	delete := map[string]any{"operation": "delete_tag", "tag": "topic:old"}
	pv := other.ManageTags(bg, caller("bob"), delete)
	require.False(t, pv.IsError, pv.Content)
	assert.Contains(t, pv.Content, "operation "+opID+" on the same tag is running now")
	delete["dry_run"] = false
	busy := other.ManageTags(bg, caller("bob"), delete)
	assert.Equal(t, CodeTagBusy, errCode(busy), busy.Content)
	failure := dataOf(t, busy)["error"].(map[string]any)
	assert.Equal(t, opID, failure["operationId"], busy.Content)
	assert.Equal(t, "alice", failure["actor"], busy.Content)
	n, err := other.Repair(bg)
	require.NoError(t, err)
	assert.Zero(t, n, "the other server's running operation is not repaired")
	op, err := e.audit.Get(bg, opID)
	require.NoError(t, err)
	assert.Equal(t, gtc.AgentOpRunning, op.Status)

	close(release)
	e.bulk.Wait()
	_, err = e.store.Leases().Get(bg, "agent-tag:topic:old")
	assert.ErrorIs(t, err, gtc.ErrNotFound, "a finished execution releases its locks")
	after := other.ManageTags(bg, caller("bob"), delete)
	require.False(t, after.IsError, after.Content)
	other.Wait()
}

// A server that died mid-execution stops renewing its leases: the operation is repaired by
// another server once they have expired, not before.
func TestRepairWaitsForTheDeadServersLocksToExpire(t *testing.T) {
	e := newBulkEnv(t, BulkOptions{})
	other := e.secondServer(t)
	it := e.add("ds", "a", "q", "topic:old")
	running := func(id string) *gtc.AgentOperation {
		op := &gtc.AgentOperation{OperationID: id, Kind: "merge_tags", Actor: "alice", Args: []byte(`{}`), Tags: []string{"topic:old", "topic:new"},
			StartedAt: e.clock.Now(), Status: gtc.AgentOpRunning, Counts: gtc.AgentOpCounts{Planned: 1}}
		require.NoError(t, e.audit.Create(bg, op))
		require.NoError(t, e.audit.PutItems(bg, id, 0, []gtc.AgentOpItem{{DatasetName: it.DatasetName, Bucket: it.Bucket, ID: it.ID,
			Result: gtc.AgentItemPending, ETagBefore: it.ETag, ManualTagsBefore: it.ManualTags, PlannedTags: []string{"topic:new"}}}))
		return op
	}
	// The dead server's lease is live at first; then it expires.
	dead := running("op_01JDQ7Z3M8X9K2T5V6W7Y8A9BC")
	lease, err := e.store.Leases().Acquire(bg, "agent-tag:topic:new", dead.OperationID, time.Minute)
	require.NoError(t, err)
	n, err := other.Repair(bg)
	require.NoError(t, err)
	assert.Zero(t, n, "its lease is live")

	// Its last renewal gave it a moment more, and then no other came.
	lease, err = e.store.Leases().Renew(bg, lease, time.Millisecond)
	require.NoError(t, err)
	time.Sleep(time.Until(lease.Expires) + 10*time.Millisecond)
	n, err = other.Repair(bg)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "its lease expired")
	got, err := e.audit.Get(bg, dead.OperationID)
	require.NoError(t, err)
	assert.Equal(t, gtc.AgentOpInterrupted, got.Status)
	assert.Equal(t, gtc.AgentOpCounts{Planned: 1, NotAttempted: 1}, got.Counts)
}

// A running execution renews its locks: they outlive their first time to live for as long
// as it runs.
func TestRunningExecutionRenewsItsLocks(t *testing.T) {
	const ttl = 300 * time.Millisecond
	e := newBulkEnv(t, BulkOptions{ExecWait: time.Millisecond, LeaseTTL: ttl})
	for i := range 2 {
		e.add("ds", fmt.Sprintf("i%d", i), "q", "topic:old")
	}
	opID, release := e.blockedExecution(t, "alice", "topic:old", "topic:new")
	first, err := e.store.Leases().Get(bg, "agent-tag:topic:old")
	require.NoError(t, err)
	assert.Equal(t, opID, first.Holder)
	assert.LessOrEqual(t, time.Until(first.Expires), ttl, "a lease lasts its time to live: %s", first.Expires)

	time.Sleep(3 * ttl)
	l, err := e.store.Leases().Get(bg, "agent-tag:topic:old")
	require.NoError(t, err)
	assert.Equal(t, opID, l.Holder)
	assert.True(t, l.Expires.After(first.Expires.Add(ttl)), "renewed while it runs: %s, first %s", l.Expires, first.Expires)
	close(release)
	e.bulk.Wait()
	op, err := e.audit.Get(bg, opID)
	require.NoError(t, err)
	assert.Equal(t, gtc.AgentOpCompleted, op.Status)
}

// One execution at a time per user holds across servers: a user's second execution, on
// another tag, on the same server or another, is BUSY naming the first while it runs.
func TestOneExecutionPerUserAcrossServers(t *testing.T) {
	e := newBulkEnv(t, BulkOptions{ExecWait: time.Millisecond})
	other := e.secondServer(t)
	e.add("ds", "a", "q", "topic:old")
	e.add("ds", "b", "q", "source:sa")
	opID, release := e.blockedExecution(t, "alice", "topic:old", "topic:new")

	second := map[string]any{"operation": "delete_tag", "tag": "source:sa"}
	for _, server := range []*Bulk{e.bulk, other} { // the same server, and another
		require.False(t, server.ManageTags(bg, caller("alice"), second).IsError)
		second["dry_run"] = false
		busy := server.ManageTags(bg, caller("alice"), second)
		assert.Equal(t, CodeBusy, errCode(busy), busy.Content)
		assert.Contains(t, busy.Content, "your operation "+opID+" is still running")
		delete(second, "dry_run")
	}
	second["dry_run"] = false
	require.False(t, other.ManageTags(bg, caller("bob"), map[string]any{"operation": "delete_tag", "tag": "source:sa"}).IsError)
	bob := other.ManageTags(bg, caller("bob"), map[string]any{"operation": "delete_tag", "tag": "source:sa", "dry_run": false})
	assert.False(t, bob.IsError, "another user on another tag runs: %s", bob.Content)

	close(release)
	e.bulk.Wait()
	other.Wait()
	again := other.ManageTags(bg, caller("alice"), second)
	assert.False(t, again.IsError, "the first has finished: %s", again.Content)
	other.Wait()
}

// A user id of the longest kind the API accepts (256 characters of 4 bytes) still gets its
// lease: its execution runs.
func TestLongestUserIDExecutes(t *testing.T) {
	e := newBulkEnv(t, BulkOptions{})
	e.add("ds", "a", "q", "topic:old")
	user := strings.Repeat("😀", 256)
	require.False(t, e.bulk.ManageTags(bg, caller(user), merge("topic:old", "topic:new", true)).IsError)
	r := e.bulk.ManageTags(bg, caller(user), merge("topic:old", "topic:new", false))
	assert.False(t, r.IsError, r.Content)
	e.bulk.Wait()
}

// A preview made on one server is executed on another, once: executing it again, on
// either server, is ALREADY_EXECUTED naming the operation. An undo previewed on the second
// server is executed on the first.
func TestPreviewOnOneServerExecutesOnAnother(t *testing.T) {
	e := newBulkEnv(t, BulkOptions{})
	other := e.secondServer(t)
	it := e.add("ds", "a", "q", "topic:old")
	pv := e.bulk.ManageTags(bg, caller("alice"), merge("topic:old", "topic:new", true))
	require.False(t, pv.IsError, pv.Content)

	r := other.ManageTags(bg, caller("alice"), merge("topic:old", "topic:new", false))
	require.False(t, r.IsError, r.Content)
	opID := dataOf(t, r)["operationId"].(string)
	other.Wait()
	assert.Equal(t, []string{"topic:new"}, e.get(it).ManualTags)
	op, err := e.audit.Get(bg, opID)
	require.NoError(t, err)
	assert.Equal(t, dataOf(t, pv)["previewId"], op.PreviewID)
	for _, server := range []*Bulk{e.bulk, other} {
		again := server.ManageTags(bg, caller("alice"), merge("topic:old", "topic:new", false))
		assert.Equal(t, CodeAlreadyExecuted, errCode(again), again.Content)
		assert.Contains(t, again.Content, "already executed as "+opID+" (completed)")
	}

	undo := map[string]any{"operation_id": opID}
	require.False(t, other.UndoTagOperation(bg, caller("alice"), undo).IsError)
	undo["dry_run"] = false
	u := e.bulk.UndoTagOperation(bg, caller("alice"), undo)
	require.False(t, u.IsError, u.Content)
	e.bulk.Wait()
	assert.Equal(t, []string{"topic:old"}, e.get(it).ManualTags)
	undone, err := e.audit.Get(bg, dataOf(t, u)["operationId"].(string))
	require.NoError(t, err)
	assert.Equal(t, []string{"topic:new", "topic:old"}, undone.Tags, "the undo locks the tags of the operation it reverts")
}

// Two servers executing one preview at the same moment: one runs it, the other answers
// ALREADY_EXECUTED naming that operation.
func TestOnePreviewExecutesOnceAcrossServers(t *testing.T) {
	e := newBulkEnv(t, BulkOptions{})
	other := e.secondServer(t)
	it := e.add("ds", "a", "q", "topic:old")
	require.False(t, e.bulk.ManageTags(bg, caller("alice"), merge("topic:old", "topic:new", true)).IsError)
	servers := []*Bulk{e.bulk, other}
	results := make([]ToolResult, len(servers))
	var wg sync.WaitGroup
	for i, server := range servers {
		wg.Go(func() { results[i] = server.ManageTags(bg, caller("alice"), merge("topic:old", "topic:new", false)) })
	}
	wg.Wait()
	for _, s := range servers {
		s.Wait()
	}
	var ran, refused []ToolResult
	for _, r := range results {
		if r.IsError {
			refused = append(refused, r)
		} else {
			ran = append(ran, r)
		}
	}
	require.Len(t, ran, 1, "%v", results)
	require.Len(t, refused, 1, "%v", results)
	opID := dataOf(t, ran[0])["operationId"].(string)
	assert.Equal(t, CodeAlreadyExecuted, errCode(refused[0]), refused[0].Content)
	assert.Equal(t, opID, dataOf(t, refused[0])["error"].(map[string]any)["operationId"])
	assert.Equal(t, []string{"topic:new"}, e.get(it).ManualTags)
	ops, total, err := e.audit.List(bg, gtc.AgentOpFilter{Limit: 10})
	require.NoError(t, err)
	assert.Equal(t, 1, total, "one operation: %v", ops)
}
