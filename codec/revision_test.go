package codec_test

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/codec"
)

func revisionItem() *gtc.Item {
	it := gtc.NewItem("ds", "q1")
	it.Bucket = "11428b3b-6aaf-538d-b00a-ee67737d6bed"
	it.History = []gtc.HistoryEntry{{Role: "user", Msg: "Where is the installer?"}, {Role: "assistant", Msg: "On the download page."}}
	it.Metadata = json.RawMessage(`{"z":1,"a":{"big":12345678901234567890,"f":1.0},"k/~":"slash"}`)
	it.ManualTags = []string{"topic:install"}
	it.UpdatedAt = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return it
}

func TestDiffNamesTheSmallestChangedValue(t *testing.T) {
	a := revisionItem()
	b := a.Clone()
	b.History[0].Msg = "Where do I download the installer?"
	b.Metadata = json.RawMessage(`{"z":1,"a":{"big":12345678901234567890,"f":2.5},"k/~":"slash","new":true}`)
	b.ManualTags = nil
	b.Revision = 7 // never part of a diff
	ops, err := codec.DiffItems(a, b)
	require.NoError(t, err)
	var paths []string
	for _, op := range ops {
		paths = append(paths, op.Op+" "+op.Path)
	}
	assert.Equal(t, []string{"remove /manualTags/0", "replace /history/0/msg", "replace /metadata/a/f", "add /metadata/new"}, paths)
	assert.JSONEq(t, `"Where is the installer?"`, string(ops[1].Old))
	assert.JSONEq(t, `"Where do I download the installer?"`, string(ops[1].Value))
	assert.Equal(t, "1.0", string(ops[2].Old), "numbers keep their spelling")
}

func TestApplyRebuildsEveryVersion(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	versions := [][]byte{codec.ItemStoredJSON(revisionItem())}
	var revs [][]gtc.PatchOp
	cur := revisionItem()
	for i := range 60 {
		next := cur.Clone()
		switch rng.IntN(6) {
		case 0:
			next.History = append(next.History, gtc.HistoryEntry{Role: "user", Msg: "turn " + string(rune('a'+i%26))})
		case 1:
			if len(next.History) > 0 {
				next.History = next.History[:rng.IntN(len(next.History))]
			}
		case 2:
			next.Comment = "comment " + string(rune('a'+i%26))
		case 3:
			next.Metadata = json.RawMessage(`{"seq":` + string(rune('0'+i%10)) + `,"a/b":[1,2,{"c":"~"}]}`)
		case 4:
			u := "curator"
			next.AssignedTo = map[bool]*string{true: &u, false: nil}[rng.IntN(2) == 0]
		case 5:
			next.ManualTags = append(next.ManualTags, "x:"+string(rune('a'+i%26)))
		}
		ops, err := codec.DiffItems(cur, next)
		require.NoError(t, err)
		revs = append(revs, ops)
		versions = append(versions, codec.ItemStoredJSON(next))
		cur = next
	}
	// Backward from the last version, and forward from the first.
	doc := versions[len(versions)-1]
	for i := len(revs) - 1; i >= 0; i-- {
		var err error
		doc, err = codec.ApplyStored(doc, revs[i], true)
		require.NoError(t, err)
		require.Equal(t, string(versions[i]), string(normalized(t, doc)), "undoing revision %d", i+1)
	}
	doc = versions[0]
	for i, ops := range revs {
		var err error
		doc, err = codec.ApplyStored(doc, ops, false)
		require.NoError(t, err)
		require.Equal(t, string(versions[i+1]), string(normalized(t, doc)), "applying revision %d", i+1)
	}
}

// normalized is a rebuilt document as the store writes it: the item's own keys in their
// order (an undone removal adds a key back at the end of its object).
func normalized(t *testing.T, doc []byte) []byte {
	t.Helper()
	it, err := codec.DecodeStoredItem(doc)
	require.NoError(t, err)
	return codec.ItemStoredJSON(it)
}

func TestApplyRefusesOperationsOfAnotherItem(t *testing.T) {
	doc := codec.ItemStoredJSON(revisionItem())
	_, err := codec.ApplyStored(doc, []gtc.PatchOp{{Op: "replace", Path: "/history/9/msg", Old: json.RawMessage(`"a"`), Value: json.RawMessage(`"b"`)}}, false)
	assert.ErrorContains(t, err, `no element "9"`)
	_, err = codec.ApplyStored(doc, []gtc.PatchOp{{Op: "move", Path: "/comment"}}, false)
	assert.ErrorContains(t, err, "unknown operation")
}

func TestItemRevisionsRecordABaselineForAnItemWithoutHistory(t *testing.T) {
	ctx := gtc.WithChange(gtc.WithCaller(context.Background(), gtc.Caller{UserID: "bob"}), gtc.Change{Source: gtc.SourceAgentPrefix + "op-1", OperationID: "op-1"})
	legacy := revisionItem()
	author := "alice"
	legacy.UpdatedBy, legacy.ETag = &author, `"e1"`
	next := legacy.Clone()
	next.Comment = "checked"
	next.Revision = gtc.NextRevision(legacy)
	at := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	revs, err := codec.ItemRevisions(ctx, legacy, next, codec.EncodeStored(next), at)
	require.NoError(t, err)
	require.Len(t, revs, 2)
	base, change := revs[0], revs[1]
	assert.Equal(t, int64(1), base.Number)
	assert.Equal(t, gtc.SourceBaseline, base.Source)
	assert.Equal(t, "alice", base.Actor)
	assert.Equal(t, legacy.UpdatedAt, base.At)
	rebuilt, err := codec.ApplyStored([]byte(`{}`), base.Ops, false)
	require.NoError(t, err)
	assert.Equal(t, string(codec.ItemStoredJSON(legacy)), string(rebuilt), "the baseline carries the whole item")
	undone, err := codec.ApplyStored(codec.ItemStoredJSON(next), change.Ops, true)
	require.NoError(t, err)
	assert.Equal(t, string(codec.ItemStoredJSON(legacy)), string(undone))

	assert.Equal(t, int64(2), change.Number)
	assert.Equal(t, "bob", change.Actor)
	assert.Equal(t, "agent:op-1", change.Source)
	assert.Equal(t, "op-1", change.OperationID)
	assert.Equal(t, `"e1"`, change.ETagBefore)
	assert.Equal(t, []string{"/comment"}, change.Paths())

	// A revision survives its stored form.
	b, err := codec.AppendRevision(nil, change)
	require.NoError(t, err)
	back, err := codec.DecodeRevision(b)
	require.NoError(t, err)
	assert.Equal(t, change, back)
}
