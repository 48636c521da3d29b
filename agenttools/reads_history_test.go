package agenttools

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	gtc "github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/storage/sqlite"
)

// histFixture is a store with one item written four times: imported, its comment changed by
// alice, its status and tags by bob, then a long comment by an agent operation. The store's
// clock moves a minute between writes.
func histFixture(t *testing.T) (*Reads, gtc.Store, gtc.Key) {
	t.Helper()
	clock := gtc.NewFakeClock(rdBase)
	st, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(t.TempDir(), "gtc.db"), Synchronous: "NORMAL", Clock: clock})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	as := func(user string, ch gtc.Change) context.Context {
		return gtc.WithChange(gtc.WithCaller(context.Background(), gtc.Caller{UserID: user}), ch)
	}
	it := gtc.NewItem("support", "q-1")
	it.Bucket = gtc.DeriveBucket("support", "q-1")
	it.Comment = "first draft"
	it.History = []gtc.HistoryEntry{U("How do I reset my password?"), A("Use the link.")}
	cur, err := st.Items().Create(as("cli:importer", gtc.Change{Source: gtc.SourceImport}), it)
	require.NoError(t, err)
	edit := func(user string, ch gtc.Change, change func(*gtc.Item)) {
		clock.Advance(time.Minute)
		next := cur.Clone()
		change(next)
		cur, err = st.Items().Replace(as(user, ch), cur, next)
		require.NoError(t, err)
	}
	edit("alice@example.com", gtc.Change{Source: gtc.SourceAPI}, func(it *gtc.Item) { it.Comment = "checked the link" })
	edit("bob@example.com", gtc.Change{Source: gtc.SourceAPI}, func(it *gtc.Item) {
		it.Status = gtc.StatusApproved
		it.ManualTags = []string{"topic:login"}
	})
	edit("carol@example.com", gtc.Change{Source: gtc.SourceAgentPrefix + "op_01JD0000000000000000000000", OperationID: "op_01JD0000000000000000000000"},
		func(it *gtc.Item) { it.Comment = strings.Repeat("é", 400) })
	return rdNew(t, st), st, cur.Key()
}

func TestGetItemHistory(t *testing.T) {
	r, _, k := histFixture(t)
	ctx := context.Background()

	res := r.GetItemHistory(ctx, map[string]any{"dataset": "support", "id": "q-1"})
	rdCheckEnvelope(t, res)
	require.False(t, res.IsError, res.Content)
	assert.Equal(t, strings.Join([]string{
		"support/q-1: revisions 4 to 1, newest first; revision 1 is the first.",
		"r4 2025-11-20T10:03:00Z carol@example.com via agent:op_01JD0000000000000000000000: /comment",
		"r3 2025-11-20T10:02:00Z bob@example.com via api: /status, /manualTags/0",
		"r2 2025-11-20T10:01:00Z alice@example.com via api: /comment",
		"r1 2025-11-20T10:00:00Z cli:importer via import: (whole item)",
	}, "\n"), res.Content)
	d := rdJSON(t, res)
	assert.Equal(t, "support", d["datasetName"])
	assert.Equal(t, k.Bucket, d["bucket"])
	assert.Nil(t, d["nextCursor"])
	revs := d["revisions"].([]any)
	require.Len(t, revs, 4)
	assert.Equal(t, map[string]any{"revision": 4.0, "at": "2025-11-20T10:03:00.000Z", "actor": "carol@example.com",
		"source": "agent:op_01JD0000000000000000000000", "operationId": "op_01JD0000000000000000000000",
		"paths": []any{"/comment"}}, revs[0], "without with_values no changes")
	assert.Equal(t, map[string]any{"revision": 2.0, "at": "2025-11-20T10:01:00.000Z", "actor": "alice@example.com",
		"source": "api", "paths": []any{"/comment"}}, revs[2])
}

func TestGetItemHistoryWithValues(t *testing.T) {
	r, _, _ := histFixture(t)
	res := r.GetItemHistory(context.Background(), map[string]any{"dataset": "support", "id": "q-1", "with_values": true})
	rdCheckEnvelope(t, res)
	require.False(t, res.IsError, res.Content)
	lines := strings.Split(res.Content, "\n")
	long := `"` + strings.Repeat("é", 400) + `"`
	assert.Equal(t, `  replace /comment: "checked the link" → `+cutBytes(long, histTextValue)+"… (802 bytes)", lines[2],
		"a long value is cut in the text, on a character boundary, with its size")
	assert.Equal(t, "r2 2025-11-20T10:01:00Z alice@example.com via api: /comment", lines[6])
	assert.Equal(t, `  replace /comment: "first draft" → "checked the link"`, lines[7])
	assert.Equal(t, "r1 2025-11-20T10:00:00Z cli:importer via import: (whole item)", lines[8])
	assert.True(t, strings.HasPrefix(lines[9], `  add (whole item): (none) → {"`), lines[9])

	revs := rdJSON(t, res)["revisions"].([]any)
	changes := func(i int) []any { return revs[i].(map[string]any)["changes"].([]any) }
	assert.Equal(t, []any{map[string]any{"op": "replace", "path": "/comment", "old": "first draft", "value": "checked the link"}}, changes(2))
	cut := changes(0)[0].(map[string]any)
	assert.Equal(t, "checked the link", cut["old"])
	assert.Equal(t, 802.0, cut["valueBytes"], "a value cut short gives its full size")
	assert.True(t, strings.HasSuffix(cut["value"].(string), "…"))
	assert.LessOrEqual(t, len(cut["value"].(string)), histMaxValueBytes)
	assert.NotContains(t, cut, "oldBytes")
	status := changes(1)[0].(map[string]any)
	assert.Equal(t, map[string]any{"op": "replace", "path": "/status", "old": "draft", "value": "approved"}, status)
	whole := changes(3)[0].(map[string]any)
	assert.Equal(t, "add", whole["op"])
	assert.Equal(t, "", whole["path"])
	assert.NotContains(t, whole, "old")
}

func TestGetItemHistoryPages(t *testing.T) {
	r, _, _ := histFixture(t)
	ctx := context.Background()
	var seen []float64
	cursor := ""
	for pages := 0; ; pages++ {
		require.Less(t, pages, 5)
		args := map[string]any{"dataset": "support", "id": "q-1", "limit": 3}
		if cursor != "" {
			args["cursor"] = cursor
		}
		res := r.GetItemHistory(ctx, args)
		require.False(t, res.IsError, res.Content)
		d := rdJSON(t, res)
		for _, rev := range d["revisions"].([]any) {
			seen = append(seen, rev.(map[string]any)["revision"].(float64))
		}
		if d["nextCursor"] == nil {
			break
		}
		cursor = d["nextCursor"].(string)
		assert.Equal(t, `support/q-1: revisions 4 to 2, newest first; older ones: call again with cursor "`+cursor+`".`, rdFirstLine(res.Content))
	}
	assert.Equal(t, []float64{4, 3, 2, 1}, seen)
}

func TestGetItemHistoryErrors(t *testing.T) {
	r, _, k := histFixture(t)
	ctx := context.Background()
	for _, args := range []map[string]any{
		{"dataset": "support", "id": "nope"},
		{"dataset": "nope", "id": "q-1"},
		{"dataset": "support", "id": "q-1", "bucket": gtc.DeriveBucket("x", "y")},
	} {
		res := r.GetItemHistory(ctx, args)
		rdCheckEnvelope(t, res)
		assert.Equal(t, CodeNotFound, rdErrCode(t, res), "%v", args)
		assert.True(t, strings.HasPrefix(res.Content, "Not found: no item "+args["dataset"].(string)+"/"+args["id"].(string)), res.Content)
	}
	res := r.GetItemHistory(ctx, map[string]any{"dataset": "support", "id": "q-1", "cursor": "yesterday"})
	rdCheckEnvelope(t, res)
	assert.Equal(t, CodeInvalidInput, rdErrCode(t, res))
	assert.Contains(t, res.Content, "cursor 'yesterday'")

	res = r.GetItemHistory(ctx, map[string]any{"dataset": "support", "id": "q-1", "bucket": k.Bucket})
	require.False(t, res.IsError, res.Content)
	assert.Len(t, rdJSON(t, res)["revisions"], 4, "with its bucket the item is found as without")
}

// An item whose every revision carries large values: the data stays within the value budget
// and the text within the content limit.
func TestGetItemHistoryBoundsLargeValues(t *testing.T) {
	clock := gtc.NewFakeClock(rdBase)
	st, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(t.TempDir(), "gtc.db"), Synchronous: "NORMAL", Clock: clock})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	ctx := gtc.WithCaller(context.Background(), gtc.Caller{UserID: "alice@example.com"})
	it := gtc.NewItem("big", "b-1")
	it.Bucket = gtc.DeriveBucket("big", "b-1")
	it.History = []gtc.HistoryEntry{U("q"), A("a")}
	cur, err := st.Items().Create(ctx, it)
	require.NoError(t, err)
	for i := range 100 {
		next := cur.Clone()
		next.Comment = strings.Repeat(string(rune('a'+i%26)), 5000)
		cur, err = st.Items().Replace(ctx, cur, next)
		require.NoError(t, err)
	}
	res := rdNew(t, st).GetItemHistory(context.Background(), map[string]any{"dataset": "big", "id": "b-1", "limit": 100, "with_values": true})
	rdCheckEnvelope(t, res)
	require.False(t, res.IsError, res.Content)
	assert.True(t, strings.HasSuffix(res.Content, "more lines"), "the text ends with the count of lines left out")
	b, err := json.Marshal(res.Data)
	require.NoError(t, err)
	assert.Less(t, len(b), histValueBudget+64<<10, "values and the rest of the data stay bounded")
	revs := rdJSON(t, res)["revisions"].([]any)
	require.Len(t, revs, 100)
	first := revs[0].(map[string]any)["changes"].([]any)[0].(map[string]any)
	assert.Equal(t, 5002.0, first["valueBytes"])
	last := revs[98].(map[string]any)["changes"].([]any)[0].(map[string]any)
	assert.NotContains(t, last, "value", "past the budget values are left out")
	assert.Equal(t, 5002.0, last["valueBytes"], "but their size is still given")
}
