package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gtc "github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/codec"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func (s *suite) itemTests() []namedTest {
	return []namedTest{
		{"CreateGetRoundTrip", s.createGetRoundTrip},          // 1
		{"CreateETagAndTimes", s.createETagAndTimes},          // 2
		{"CreateDuplicate", s.createDuplicate},                // 3
		{"CreateConcurrent", s.createConcurrent},              // 4
		{"CreateEach", s.createEach},                          // 4
		{"GetMissing", s.getMissing},                          // 5
		{"Locate", s.locate},                                  // 5
		{"Replace", s.replace},                                // 6
		{"ReplaceStale", s.replaceStale},                      // 7
		{"ReplaceGone", s.replaceGone},                        // 8
		{"ReplaceKeyChange", s.replaceKeyChange},              // 9
		{"ReplaceConcurrent", s.replaceConcurrent},            // 10
		{"ReplaceEach", s.replaceEach},                        // 40
		{"ReplaceEachRetention", s.replaceEachRetention},      // 40
		{"Update", s.update},                                  // 11
		{"SoftDelete", s.softDelete},                          // 12
		{"InvalidBucket", s.invalidBucket},                    // 13
		{"SizeLimit", s.sizeLimit},                            // 13
		{"CancelledContext", s.cancelledContext},              // 14
		{"UnassignedIsNull", s.unassignedIsNull},              // "" and null are one value
		{"ReturnedCopiesAreIndependent", s.independentCopies}, // Get returns a fresh copy
	}
}

// richItem exercises every part of the stored form that is easy to lose on the way
// through a store.
func (s *suite) richItem(ds, id string) *gtc.Item {
	it := s.item(ds, id)
	now := s.now()
	it.Comment = "Grüße aus Köln — 東京 🌸"
	it.ManualTags = []string{"topic:äpfel", "lang:de"}
	it.ComputedTags = []string{"turns:2"}
	it.AssignedTo = ptr("alice@example.com")
	it.AssignedAt = ptr(now.Add(-time.Hour))
	it.UpdatedBy = ptr("bob@example.com")
	it.ReviewedAt = ptr(now.Add(-30 * time.Minute))
	it.CreatedBy = ptr("carol@example.com")
	it.CreatedAt = ptr(now.Add(-48 * time.Hour))
	it.ScenarioID = "scénario-7"
	it.History = []gtc.HistoryEntry{
		{Role: "user", Msg: "Wie viele Äpfel? ✓", TurnID: ptr("turn-1"), StepID: ptr("step-1"), ExpectedBehavior: []string{"counts", "ß-handling"}},
		{Role: "assistant", Msg: "Drei.", TurnID: ptr("turn-1"), ExpectedBehavior: []string{}},
		{Role: "user", Msg: "Danke"},
	}
	it.ContextEntries = []gtc.ContextEntry{
		{Key: "nested", Value: json.RawMessage(`{"a":null,"b":[null,1,{"c":null}]}`)},
		{Key: "nothing", Value: json.RawMessage(`null`)},
	}
	it.TraceIDs = map[string]string{"run": "r-1", "trace": "t-ü"}
	it.ToolCalls = []gtc.ToolCall{{
		ID: "call-1", Name: "search", CallType: "tool",
		Arguments:  json.RawMessage(`{"q":"äpfel","opts":{"deep":null,"n":9007199254740993}}`),
		StepNumber: ptr(int64(9223372036854775807)),
		Response:   json.RawMessage(`[1,"two",null,{"x":[]}]`),
	}}
	it.ExpectedTools = gtc.ExpectedTools{
		Required:  []gtc.ToolExpectation{{Name: "search", Arguments: json.RawMessage(`{"q":"äpfel"}`)}},
		Optional:  []gtc.ToolExpectation{},
		NotNeeded: []gtc.ToolExpectation{{Name: "calculator"}},
	}
	it.Feedback = []gtc.FeedbackEntry{{Source: "human", Values: json.RawMessage(`{"score":5,"note":null,"tags":[]}`)}}
	it.Metadata = json.RawMessage(`{"int64":9223372036854775807,"neg":-9223372036854775808,` +
		`"pi":3.14159265358979323846264338327950288419716939937510,"price":0.1000000000000000055511151231257827,` +
		`"nested":{"x":null,"list":[null,{"y":null}]},"empty":[],"emptyObj":{},"text":"naïve café"}`)
	it.Plugins = map[string]gtc.PluginPayload{
		gtc.RAGCompatSlot: {Kind: gtc.RAGCompatSlot, Version: "1.0", Data: json.RawMessage(
			`{"references":[{"url":"https://docs.example.com/Äpfel","title":"Apfelsorten","content":"Boskoop, Elstar",` +
				`"keyExcerpt":"Elstar","messageIndex":1,"customKey":{"deep":[1,null,"x"]},"score":0.87}],"extra":{"keep":true}}`)},
		"other": {Kind: "custom", Version: "2.1", Data: json.RawMessage(`{"flag":null}`)},
	}
	it.TracePayload = json.RawMessage(`{"spans":[],"root":{"id":"s1","attrs":{"k":null}}}`)
	return it
}

// jsonTree decodes a document keeping numbers as written, for deep comparison.
func jsonTree(t *testing.T, doc []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	require.NoError(t, dec.Decode(&v), "document is not JSON: %s", doc)
	return v
}

// 1. Create then Get returns the canonical document exactly.
func (s *suite) createGetRoundTrip(t *testing.T) {
	st := s.open(t)
	in := s.richItem("données", "rich-ü-1")
	stored := in.Clone()
	stored.Revision = 1 // a new item's first revision
	want := jsonTree(t, codec.ItemStoredJSON(stored))

	created := create(t, st, in.Clone())
	assert.Equal(t, want, jsonTree(t, codec.ItemStoredJSON(created)), "Create must return the stored document")

	got := get(t, st, in.Key())
	assert.Equal(t, want, jsonTree(t, codec.ItemStoredJSON(got)), "Get must return the canonical document exactly")
	assert.Equal(t, created.ETag, got.ETag)
	assert.Equal(t, in.Tags(), got.Tags())
}

// 2. Create returns a non-empty ETag, Get the same one; times come back in UTC with
// microsecond precision.
func (s *suite) createETagAndTimes(t *testing.T) {
	st := s.open(t)
	loc := time.FixedZone("UTC+5:30", 5*3600+1800)
	precise := time.Date(2024, 2, 29, 23, 59, 58, 123456789, loc)
	in := s.item("ds", "times")
	in.UpdatedAt = precise
	in.ReviewedAt = ptr(precise.Add(time.Nanosecond))
	in.AssignedTo, in.AssignedAt = ptr("u@example.com"), ptr(precise.Add(999*time.Nanosecond))

	created := create(t, st, in)
	require.NotEmpty(t, created.ETag)
	got := get(t, st, in.Key())
	assert.Equal(t, created.ETag, got.ETag)

	us := func(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }
	for name, c := range map[string]struct{ want, got time.Time }{
		"updatedAt":         {us(in.UpdatedAt), got.UpdatedAt},
		"reviewedAt":        {us(*in.ReviewedAt), *got.ReviewedAt},
		"assignedAt":        {us(*in.AssignedAt), *got.AssignedAt},
		"created.updatedAt": {us(in.UpdatedAt), created.UpdatedAt},
	} {
		assert.True(t, c.want.Equal(c.got), "%s: want %s, got %s", name, c.want, c.got)
		assert.Equal(t, time.UTC, c.got.Location(), "%s must be UTC", name)
		assert.Zero(t, c.got.Nanosecond()%1000, "%s must have microsecond precision", name)
	}
	assert.Equal(t, 123457, got.AssignedAt.Nanosecond()/1000, "truncated, never rounded")
}

// 3. A second (datasetName, id) conflicts with the existing key, in the same or another
// bucket; the same id in another dataset is a different item.
func (s *suite) createDuplicate(t *testing.T) {
	st := s.open(t)
	first := create(t, st, s.item("ds", "dup"))

	for name, bucket := range map[string]string{
		"same bucket":    first.Bucket,
		"another bucket": "0f8fad5b-d9cb-469f-a165-70867728950e",
	} {
		again := s.item("ds", "dup")
		again.Bucket = bucket
		again.Comment = "second"
		_, err := st.Items().Create(ctxT(t), again)
		require.ErrorIs(t, err, gtc.ErrConflict, name)
		var ce *gtc.ConflictError
		require.ErrorAs(t, err, &ce, name)
		assert.Equal(t, first.Key(), ce.Existing, "%s: the conflict names the existing key", name)
	}
	assert.Empty(t, get(t, st, first.Key()).Comment, "the original is untouched")

	other := create(t, st, s.item("other-ds", "dup"))
	assert.Equal(t, "other-ds", other.DatasetName)
	assert.NotEqual(t, first.ETag, other.ETag)
}

// 4. Concurrent creates of one (datasetName, id): exactly one wins. The same id in eight
// datasets: all eight are created.
func (s *suite) createConcurrent(t *testing.T) {
	st := s.open(t)
	const n = 8
	var wins, conflicts atomic.Int32
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			it := s.item("race", "one")
			it.Comment = fmt.Sprint("writer ", i)
			_, err := st.Items().Create(ctxT(t), it)
			switch {
			case err == nil:
				wins.Add(1)
			case errors.Is(err, gtc.ErrConflict):
				conflicts.Add(1)
			default:
				t.Errorf("create: unexpected error %v", err)
			}
		}()
	}
	wg.Wait()
	assert.EqualValues(t, 1, wins.Load(), "exactly one create wins")
	assert.EqualValues(t, n-1, conflicts.Load())

	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = st.Items().Create(ctxT(t), s.item(fmt.Sprint("race-", i), "one"))
		}()
	}
	wg.Wait()
	for i, err := range errs {
		assert.NoError(t, err, "dataset race-%d", i)
	}
}

// 5. Get with the wrong dataset, the wrong bucket or an unknown id is ErrNotFound.
// 4. CreateEach: each item stands or falls alone and its result is in its place. New items
// are stored with their tags, however many the call holds; an id that exists, or that comes
// twice in the call, conflicts; an invalid item fails without harming the others.
func (s *suite) createEach(t *testing.T) {
	st := s.open(t)
	taken := create(t, st, s.item("each", "taken"))
	const n = 140
	var items []*gtc.Item
	for i := range n {
		it := s.item("each", fmt.Sprintf("new-%03d", i))
		it.ManualTags = []string{"batch:each", fmt.Sprintf("parity:%d", i%2)}
		items = append(items, it)
	}
	again := s.item("each", "taken")
	again.Comment = "second"
	twice := s.item("each", "new-007")
	twice.Comment = "the second of the call"
	bad := s.item("each", "bad-bucket")
	bad.Bucket = "not-a-uuid"
	items = append(items, again, twice, bad)

	errs := st.Items().CreateEach(ctxT(t), items)
	require.Len(t, errs, len(items))
	for i := range n {
		require.NoError(t, errs[i], "item %d", i)
	}
	var ce *gtc.ConflictError
	require.ErrorAs(t, errs[n], &ce, "an id that exists")
	assert.Equal(t, taken.Key(), ce.Existing)
	require.ErrorAs(t, errs[n+1], &ce, "an id the call holds twice: the first is created")
	assert.Equal(t, items[7].Key(), ce.Existing)
	require.ErrorIs(t, errs[n+2], gtc.ErrInvalidArgument, "an invalid bucket")

	assert.Empty(t, get(t, st, taken.Key()).Comment, "the existing item is untouched")
	want := map[gtc.Key]*gtc.Item{taken.Key(): taken}
	for _, it := range items[:n] {
		want[it.Key()] = it
	}
	stored := 0
	for got, err := range st.Items().QueryAll(ctxT(t), gtc.Query{Filter: gtc.Filter{DatasetNames: []string{"each"}}, Sort: gtc.SortID}) {
		require.NoError(t, err)
		w, ok := want[got.Key()]
		require.True(t, ok, "%s was not created", got.Key())
		stored++
		assert.Equal(t, w.ManualTags, got.ManualTags, "%s", got.Key())
		assert.Equal(t, w.Comment, got.Comment, "%s: the first of its id in the call", got.Key())
		assert.NotEmpty(t, got.ETag)
		assert.EqualValues(t, 1, got.Revision, "%s: its first revision", got.Key())
	}
	assert.Equal(t, n+1, stored, "the dataset holds the new items and the one that existed")
	count := func(tags ...string) int {
		c, err := st.Items().Count(ctxT(t), gtc.Filter{DatasetNames: []string{"each"}, AllTags: tags})
		require.NoError(t, err)
		return c
	}
	assert.Equal(t, n, count("batch:each"), "every created item is found by its tag")
	assert.Equal(t, n/2, count("batch:each", "parity:1"))
	assert.Empty(t, st.Items().CreateEach(ctxT(t), nil), "an empty call")
}

// 40. ReplaceEach: each pair is written as Replace writes it and stands or falls alone, its
// result in its place, however many the call holds. A written item has its new ETag, its
// next revision number and one revision recorded with the context's change, and is found by
// its new tags and no longer by its old ones; a stale pair is ErrPreconditionFailed and a
// gone item ErrNotFound, both writing nothing; a second pair of one item in the call, a
// change of key and a nil item are ErrInvalidArgument. A status change moves the item's
// tags with it.
func (s *suite) replaceEach(t *testing.T) {
	st := s.open(t)
	const n = 140
	var fresh []*gtc.Item
	for i := range n {
		it := s.item("each", fmt.Sprintf("it-%03d", i))
		it.ManualTags = []string{"topic:old", fmt.Sprintf("parity:%d", i%2)}
		fresh = append(fresh, it)
	}
	fresh = append(fresh, s.item("gone", "doomed"))
	stored := createAll(t, st, fresh)
	items, doomed := stored[:n], stored[n]
	_, err := st.Items().DeleteDataset(ctxT(t), "gone")
	require.NoError(t, err)

	var pairs []gtc.Replacement
	for i, cur := range items {
		next := cur.Clone()
		next.ManualTags = []string{"topic:new", fmt.Sprintf("parity:%d", i%2)}
		next.Comment = fmt.Sprintf("each %d", i)
		next.UpdatedAt = s.now().Add(time.Minute)
		if i == 5 {
			next.Status = gtc.StatusApproved
		}
		pairs = append(pairs, gtc.Replacement{Prev: cur, Next: next})
	}
	// Item 9 changes after its pair was made: the pair is stale.
	edited := replaceComment(t, ctxT(t), st, items[9], "a curator's edit")
	gone := doomed.Clone()
	gone.Comment = "resurrected?"
	again := items[3].Clone()
	again.Comment = "the second of the call"
	moved := items[4].Clone()
	moved.ID = "moved"
	pairs = append(pairs,
		gtc.Replacement{Prev: doomed, Next: gone},          // n
		gtc.Replacement{Prev: items[3], Next: again},       // n+1
		gtc.Replacement{Prev: items[4], Next: moved},       // n+2
		gtc.Replacement{Prev: items[6], Next: nil},         // n+3
		gtc.Replacement{Prev: nil, Next: items[7].Clone()}, // n+4
	)

	ctx := gtc.WithChange(gtc.WithCaller(ctxT(t), gtc.Caller{UserID: "agent-user"}), gtc.Change{Source: gtc.SourceAgentPrefix + "op_each", OperationID: "op_each"})
	out, errs := st.Items().ReplaceEach(ctx, pairs)
	require.Len(t, out, len(pairs))
	require.Len(t, errs, len(pairs))
	for i := range n {
		if i == 9 {
			require.ErrorIs(t, errs[i], gtc.ErrPreconditionFailed, "a stale pair")
			assert.Nil(t, out[i])
			continue
		}
		require.NoError(t, errs[i], "pair %d", i)
		require.NotNil(t, out[i], "pair %d", i)
		assert.NotEqual(t, items[i].ETag, out[i].ETag, "pair %d: a new ETag", i)
		assert.Equal(t, items[i].Revision+1, out[i].Revision, "pair %d: the next revision", i)
	}
	require.ErrorIs(t, errs[n], gtc.ErrNotFound, "a gone item")
	require.ErrorIs(t, errs[n+1], gtc.ErrInvalidArgument, "a second pair of one item")
	require.ErrorIs(t, errs[n+2], gtc.ErrInvalidArgument, "a change of key")
	require.ErrorIs(t, errs[n+3], gtc.ErrInvalidArgument, "a nil next")
	require.ErrorIs(t, errs[n+4], gtc.ErrInvalidArgument, "a nil prev")
	for i := n; i < len(pairs); i++ {
		assert.Nil(t, out[i], "pair %d", i)
	}

	for i, cur := range items {
		got := get(t, st, cur.Key())
		if i == 9 {
			assert.Equal(t, edited.ETag, got.ETag, "the curator's edit stands")
			assert.Equal(t, items[9].ManualTags, got.ManualTags)
			continue
		}
		assert.Equal(t, out[i].ETag, got.ETag, "%s", cur.Key())
		assert.Equal(t, fmt.Sprintf("each %d", i), got.Comment, "%s: the first pair of the item is written", cur.Key())
		assert.Equal(t, jsonTree(t, codec.ItemStoredJSON(out[i])), jsonTree(t, codec.ItemStoredJSON(got)), "%s: what was returned is stored", cur.Key())
	}
	_, err = st.Items().Locate(ctxT(t), "gone", "doomed")
	assert.ErrorIs(t, err, gtc.ErrNotFound, "ReplaceEach never re-creates")
	_, err = st.Items().Locate(ctxT(t), "each", "moved")
	assert.ErrorIs(t, err, gtc.ErrNotFound)

	count := func(f gtc.Filter) int {
		f.DatasetNames = []string{"each"}
		c, err := st.Items().Count(ctxT(t), f)
		require.NoError(t, err)
		return c
	}
	assert.Equal(t, n-1, count(gtc.Filter{AllTags: []string{"topic:new"}}))
	assert.Equal(t, 1, count(gtc.Filter{AllTags: []string{"topic:old"}}), "only the stale item keeps its old tag")
	assert.Equal(t, n/2, count(gtc.Filter{AllTags: []string{"topic:new", "parity:0"}}))
	assert.Equal(t, 1, count(gtc.Filter{AllTags: []string{"topic:new"}, Statuses: []gtc.Status{gtc.StatusApproved}}), "the status change moved the tags")

	r, err := st.Revisions().Get(ctxT(t), "each", items[0].ID, out[0].Revision)
	require.NoError(t, err)
	assert.Equal(t, "agent-user", r.Actor)
	assert.Equal(t, gtc.SourceAgentPrefix+"op_each", r.Source)
	assert.Equal(t, "op_each", r.OperationID)
	assert.Equal(t, items[0].ETag, r.ETagBefore)
	assert.Equal(t, out[0].ETag, r.ETagAfter)
	// Two revisions each: the create and the pair's write, or for the stale item the
	// curator's edit, nothing of its pair.
	for _, i := range []int{0, 9, 63, 64, n - 1} {
		page, err := st.Revisions().List(ctxT(t), "each", items[i].ID, "", 10)
		require.NoError(t, err)
		assert.Len(t, page.Revisions, 2, "%s: one revision per write", items[i].Key())
	}

	none, noErrs := st.Items().ReplaceEach(ctxT(t), nil)
	assert.Empty(t, none, "an empty call")
	assert.Empty(t, noErrs, "an empty call")
}

// 40. ReplaceEach applies the retention settings to each item as Replace does.
func (s *suite) replaceEachRetention(t *testing.T) {
	st, _ := s.openHistory(t, gtc.HistoryOptions{MaxRevisions: 2})
	var fresh []*gtc.Item
	for i := range 3 {
		fresh = append(fresh, s.item("ds", fmt.Sprintf("kept-%d", i)))
	}
	items := createAll(t, st, fresh)
	for round := range 3 {
		pairs := make([]gtc.Replacement, len(items))
		for i, cur := range items {
			next := cur.Clone()
			next.Comment = fmt.Sprintf("round %d", round)
			pairs[i] = gtc.Replacement{Prev: cur, Next: next}
		}
		out, errs := st.Items().ReplaceEach(ctxT(t), pairs)
		for i := range items {
			require.NoError(t, errs[i])
			items[i] = out[i]
		}
	}
	for _, it := range items {
		assert.Equal(t, []int64{4, 3}, numbers(listAll(t, st, it.DatasetName, it.ID)), "%s: the 2 newest of 4", it.Key())
		assert.Equal(t, codec.ItemStoredJSON(it), rebuild(t, st, it, 4), "%s", it.Key())
	}
}

func (s *suite) getMissing(t *testing.T) {
	s.skipMissingRead(t)
	st := s.open(t)
	it := create(t, st, s.item("ds", "present"))
	for name, k := range map[string]gtc.Key{
		"wrong dataset": {DatasetName: "other", Bucket: it.Bucket, ID: it.ID},
		"wrong bucket":  {DatasetName: it.DatasetName, Bucket: "0f8fad5b-d9cb-469f-a165-70867728950e", ID: it.ID},
		"unknown id":    {DatasetName: it.DatasetName, Bucket: it.Bucket, ID: "absent"},
	} {
		_, err := st.Items().Get(ctxT(t), k)
		assert.ErrorIs(t, err, gtc.ErrNotFound, name)
	}
}

// 5. Locate finds the key whatever the bucket; unknown ids and other datasets' ids are
// ErrNotFound.
func (s *suite) locate(t *testing.T) {
	st := s.open(t)
	in := s.item("ds", "placed")
	in.Bucket = "0f8fad5b-d9cb-469f-a165-70867728950e" // not the derived one
	create(t, st, in)
	create(t, st, s.item("elsewhere", "foreign"))

	k, err := st.Items().Locate(ctxT(t), "ds", "placed")
	require.NoError(t, err)
	assert.Equal(t, in.Key(), k)

	_, err = st.Items().Locate(ctxT(t), "ds", "absent")
	assert.ErrorIs(t, err, gtc.ErrNotFound, "unknown id")
	_, err = st.Items().Locate(ctxT(t), "ds", "foreign")
	assert.ErrorIs(t, err, gtc.ErrNotFound, "id of another dataset")
}

// 6. Replace with the current prev writes next and issues a new ETag, even for an
// identical next.
func (s *suite) replace(t *testing.T) {
	st := s.open(t)
	cur := create(t, st, s.richItem("ds", "edit-me"))

	next := cur.Clone()
	next.Comment = "edited"
	next.Status = gtc.StatusApproved
	next.ManualTags = []string{"topic:birnen"}
	next.UpdatedAt = s.now().Add(time.Minute)
	out, err := st.Items().Replace(ctxT(t), cur, next)
	require.NoError(t, err)
	assert.NotEqual(t, cur.ETag, out.ETag, "a write issues a new ETag")

	got := get(t, st, cur.Key())
	assert.Equal(t, out.ETag, got.ETag)
	assert.Equal(t, cur.Revision+1, out.Revision, "a write gives the item its next revision number")
	next.Revision = out.Revision
	assert.Equal(t, jsonTree(t, codec.ItemStoredJSON(next)), jsonTree(t, codec.ItemStoredJSON(got)), "the stored content is next")

	same, err := st.Items().Replace(ctxT(t), got, got.Clone())
	require.NoError(t, err)
	assert.NotEqual(t, got.ETag, same.ETag, "an unchanged write still issues a new ETag")
	assert.Equal(t, same.ETag, get(t, st, cur.Key()).ETag)
}

// 7. A stale prev is ErrPreconditionFailed and writes nothing.
func (s *suite) replaceStale(t *testing.T) {
	st := s.open(t)
	v1 := create(t, st, s.item("ds", "contested"))
	v2 := v1.Clone()
	v2.Comment = "second"
	v2, err := st.Items().Replace(ctxT(t), v1, v2)
	require.NoError(t, err)

	late := v1.Clone()
	late.Comment = "lost update"
	_, err = st.Items().Replace(ctxT(t), v1, late)
	require.ErrorIs(t, err, gtc.ErrPreconditionFailed)

	got := get(t, st, v1.Key())
	assert.Equal(t, v2.ETag, got.ETag)
	assert.Equal(t, "second", got.Comment)
}

// 8. Replace of an item that no longer exists is ErrNotFound and creates nothing.
func (s *suite) replaceGone(t *testing.T) {
	st := s.open(t)
	cur := create(t, st, s.item("doomed", "gone"))
	_, err := st.Items().DeleteDataset(ctxT(t), "doomed")
	require.NoError(t, err)

	next := cur.Clone()
	next.Comment = "resurrected?"
	_, err = st.Items().Replace(ctxT(t), cur, next)
	require.ErrorIs(t, err, gtc.ErrNotFound)

	_, err = st.Items().Locate(ctxT(t), "doomed", "gone")
	assert.ErrorIs(t, err, gtc.ErrNotFound, "Replace must never re-create")
}

// 9. next with another key is ErrInvalidArgument.
func (s *suite) replaceKeyChange(t *testing.T) {
	st := s.open(t)
	cur := create(t, st, s.item("ds", "fixed"))
	for name, change := range map[string]func(*gtc.Item){
		"id":      func(it *gtc.Item) { it.ID = "moved" },
		"dataset": func(it *gtc.Item) { it.DatasetName = "elsewhere" },
		"bucket":  func(it *gtc.Item) { it.Bucket = "0f8fad5b-d9cb-469f-a165-70867728950e" },
	} {
		next := cur.Clone()
		change(next)
		_, err := st.Items().Replace(ctxT(t), cur, next)
		assert.ErrorIs(t, err, gtc.ErrInvalidArgument, name)
	}
	assert.Equal(t, cur.ETag, get(t, st, cur.Key()).ETag, "nothing was written")
}

// 10. Ten concurrent Replaces from the same prev: exactly one succeeds.
func (s *suite) replaceConcurrent(t *testing.T) {
	st := s.open(t)
	cur := create(t, st, s.item("ds", "hot"))
	const n = 10
	var wins, stale atomic.Int32
	var winner atomic.Value
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			next := cur.Clone()
			next.Comment = fmt.Sprint("writer ", i)
			out, err := st.Items().Replace(ctxT(t), cur, next)
			switch {
			case err == nil:
				wins.Add(1)
				winner.Store(out)
			case errors.Is(err, gtc.ErrPreconditionFailed):
				stale.Add(1)
			default:
				t.Errorf("replace: unexpected error %v", err)
			}
		}()
	}
	wg.Wait()
	require.EqualValues(t, 1, wins.Load(), "exactly one Replace wins")
	assert.EqualValues(t, n-1, stale.Load())
	w := winner.Load().(*gtc.Item)
	got := get(t, st, cur.Key())
	assert.Equal(t, w.ETag, got.ETag)
	assert.Equal(t, w.Comment, got.Comment, "the stored content is the winner's")
}

// racingItems wraps an ItemStore so that its next `losses` Gets are each followed by a
// competing write, which makes the caller's conditional write lose.
type racingItems struct {
	gtc.ItemStore
	t      *testing.T
	losses atomic.Int32
	gets   atomic.Int32
}

func (r *racingItems) Get(ctx context.Context, k gtc.Key) (*gtc.Item, error) {
	r.gets.Add(1)
	it, err := r.ItemStore.Get(ctx, k)
	if err != nil || r.losses.Add(-1) < 0 {
		return it, err
	}
	other := it.Clone()
	other.Comment += "+race"
	if _, err := r.ItemStore.Replace(ctx, it, other); err != nil {
		r.t.Errorf("competing write: %v", err)
	}
	return it, nil
}

// 11. Update retries a lost race, gives up after three, and skips the write on ErrNoChange.
func (s *suite) update(t *testing.T) {
	st := s.open(t)
	setFlag := func(cur *gtc.Item) (*gtc.Item, error) {
		cur.Status = gtc.StatusSkipped
		return cur, nil
	}

	t.Run("one lost race is retried", func(t *testing.T) {
		it := create(t, st, s.item("ds", "retry"))
		r := &racingItems{ItemStore: st.Items(), t: t}
		r.losses.Store(1)
		out, err := gtc.Update(ctxT(t), r, it.Key(), setFlag)
		require.NoError(t, err)
		assert.EqualValues(t, 2, r.gets.Load(), "read again after the lost race")
		got := get(t, st, it.Key())
		assert.Equal(t, out.ETag, got.ETag)
		assert.Equal(t, gtc.StatusSkipped, got.Status)
		assert.Equal(t, "+race", got.Comment, "the competing write is kept, not overwritten")
	})

	t.Run("three lost races give up", func(t *testing.T) {
		it := create(t, st, s.item("ds", "give-up"))
		r := &racingItems{ItemStore: st.Items(), t: t}
		r.losses.Store(3)
		_, err := gtc.Update(ctxT(t), r, it.Key(), setFlag)
		require.ErrorIs(t, err, gtc.ErrConcurrentModification)
		assert.EqualValues(t, 3, r.gets.Load())
		got := get(t, st, it.Key())
		assert.Equal(t, gtc.StatusDraft, got.Status, "the callback's change never landed")
		assert.Equal(t, "+race+race+race", got.Comment)
	})

	t.Run("no change skips the write", func(t *testing.T) {
		it := create(t, st, s.item("ds", "untouched"))
		out, err := gtc.Update(ctxT(t), st.Items(), it.Key(), func(*gtc.Item) (*gtc.Item, error) {
			return nil, gtc.ErrNoChange
		})
		require.NoError(t, err)
		assert.Equal(t, it.ETag, out.ETag)
		assert.Equal(t, it.ETag, get(t, st, it.Key()).ETag, "no write")
	})
}

// 12. SoftDelete marks deleted and keeps the assignment; an item already deleted is not
// written; a stale token fails without retry; an unknown item is ErrNotFound.
func (s *suite) softDelete(t *testing.T) {
	st := s.open(t)
	in := s.item("ds", "bin-me")
	in.AssignedTo, in.AssignedAt = ptr("dana@example.com"), ptr(s.now())
	it := create(t, st, in)

	var prepared atomic.Int32
	prepare := func(it *gtc.Item) error {
		prepared.Add(1)
		it.UpdatedAt = s.now().Add(time.Minute)
		return nil
	}
	del, err := gtc.SoftDelete(ctxT(t), st.Items(), it.Key(), it.ETag, prepare)
	require.NoError(t, err)
	assert.Equal(t, gtc.StatusDeleted, del.Status)
	assert.NotEqual(t, it.ETag, del.ETag)
	got := get(t, st, it.Key())
	assert.Equal(t, gtc.StatusDeleted, got.Status)
	require.NotNil(t, got.AssignedTo, "the assignment is kept")
	assert.Equal(t, "dana@example.com", *got.AssignedTo)
	assert.EqualValues(t, 1, prepared.Load())

	again, err := gtc.SoftDelete(ctxT(t), st.Items(), it.Key(), "", prepare)
	require.NoError(t, err)
	assert.Equal(t, del.ETag, again.ETag, "already deleted: no write")
	assert.Equal(t, del.ETag, get(t, st, it.Key()).ETag)

	other := create(t, st, s.item("ds", "keep-me"))
	r := &racingItems{ItemStore: st.Items(), t: t}
	_, err = gtc.SoftDelete(ctxT(t), r, other.Key(), `"stale-token"`, prepare)
	require.ErrorIs(t, err, gtc.ErrPreconditionFailed)
	assert.EqualValues(t, 1, r.gets.Load(), "a stale token is never retried")
	assert.Equal(t, gtc.StatusDraft, get(t, st, other.Key()).Status)

	if s.h.Gaps.MissingReadIsServerError {
		return // the rest reads a missing item
	}
	_, err = gtc.SoftDelete(ctxT(t), st.Items(), gtc.Key{DatasetName: "ds", Bucket: other.Bucket, ID: "absent"}, "", prepare)
	assert.ErrorIs(t, err, gtc.ErrNotFound)
}

// 13. A missing or non-canonical bucket is ErrInvalidArgument.
func (s *suite) invalidBucket(t *testing.T) {
	st := s.open(t)
	for name, bucket := range map[string]string{
		"missing":        "",
		"upper case":     "0F8FAD5B-D9CB-469F-A165-70867728950E",
		"no hyphens":     "0f8fad5bd9cb469fa16570867728950e",
		"braces":         "{0f8fad5b-d9cb-469f-a165-70867728950e}",
		"not a uuid":     "bucket-1",
		"numeric legacy": "0",
	} {
		it := s.item("ds", "bucketless-"+strings.ReplaceAll(name, " ", "-"))
		it.Bucket = bucket
		_, err := st.Items().Create(ctxT(t), it)
		assert.ErrorIs(t, err, gtc.ErrInvalidArgument, name)
		_, err = st.Items().Locate(ctxT(t), "ds", it.ID)
		assert.ErrorIs(t, err, gtc.ErrNotFound, "%s: nothing was created", name)
	}
}

// sized returns an item whose canonical document has exactly n bytes.
func (s *suite) sized(t *testing.T, ds, id string, n int) *gtc.Item {
	t.Helper()
	return s.sizedWith(t, ds, id, n, nil)
}

// sizedWith is sized for an item that fill changes first (nil: none).
func (s *suite) sizedWith(t *testing.T, ds, id string, n int, fill func(*gtc.Item)) *gtc.Item {
	t.Helper()
	it := s.item(ds, id)
	if fill != nil {
		fill(it)
	}
	base := len(codec.ItemStoredJSON(it))
	require.Less(t, base, n)
	it.Comment = strings.Repeat("x", n-base)
	require.Len(t, codec.ItemStoredJSON(it), n)
	return it
}

// 13. A canonical document of exactly 1,572,864 bytes (its revision number aside) is accepted,
// one byte more is ErrTooLarge, and the size check comes before the ETag comparison. An item
// at the limit stays writable as its revision number grows.
func (s *suite) sizeLimit(t *testing.T) {
	st := s.open(t)
	big := create(t, st, s.sizedWith(t, "ds", "at-limit", gtc.MaxItemBytes, func(it *gtc.Item) { it.UpdatedBy = ptr("curator-0") }))
	got := get(t, st, big.Key())
	assert.Equal(t, gtc.MaxItemBytes, codec.ContentSize(codec.ItemStoredJSON(got), got.Revision))
	for i := range 10 { // to revision 11: one digit more
		next := got.Clone()
		if i == 0 {
			// The large value changes, the same size: a revision with its old and new values.
			next.Comment = "y" + next.Comment[1:]
		} else {
			// A small value changes, the same size.
			next.UpdatedBy = ptr(fmt.Sprintf("curator-%d", i))
		}
		var err error
		got, err = st.Items().Replace(ctxT(t), got, next)
		require.NoError(t, err, "a write of an item at the size limit")
	}
	assert.Equal(t, int64(11), got.Revision)

	_, err := st.Items().Create(ctxT(t), s.sized(t, "ds", "over-limit", gtc.MaxItemBytes+1))
	require.ErrorIs(t, err, gtc.ErrTooLarge)
	_, err = st.Items().Locate(ctxT(t), "ds", "over-limit")
	assert.ErrorIs(t, err, gtc.ErrNotFound)

	small := create(t, st, s.item("ds", "grows"))
	tooBig := s.sized(t, "ds", "grows", gtc.MaxItemBytes+1)
	tooBig.Bucket = small.Bucket
	_, err = st.Items().Replace(ctxT(t), small, tooBig)
	require.ErrorIs(t, err, gtc.ErrTooLarge)

	stale := small.Clone()
	stale.ETag = `"not-the-current-token"`
	_, err = st.Items().Replace(ctxT(t), stale, tooBig)
	assert.ErrorIs(t, err, gtc.ErrTooLarge, "the size check comes before the ETag comparison")
	assert.Equal(t, small.ETag, get(t, st, small.Key()).ETag)
}

// 14. A cancelled context fails with context.Canceled and writes nothing.
func (s *suite) cancelledContext(t *testing.T) {
	st := s.open(t)
	existing := create(t, st, s.item("ds", "stays"))
	ctx, cancel := context.WithCancel(ctxT(t))
	cancel()

	_, err := st.Items().Create(ctx, s.item("ds", "never"))
	assert.ErrorIs(t, err, context.Canceled, "Create")
	next := existing.Clone()
	next.Comment = "never"
	_, err = st.Items().Replace(ctx, existing, next)
	assert.ErrorIs(t, err, context.Canceled, "Replace")
	_, err = st.Items().DeleteDataset(ctx, "ds")
	assert.ErrorIs(t, err, context.Canceled, "DeleteDataset")
	_, _, err = st.Curation().Put(ctx, &gtc.CurationInstructions{DatasetName: "ds", Instructions: "x", UpdatedAt: s.now()}, "")
	assert.ErrorIs(t, err, context.Canceled, "Curation.Put")
	_, err = st.TagStore().Add(ctx, []string{"topic:never"})
	assert.ErrorIs(t, err, context.Canceled, "TagStore.Add")
	_, _, err = st.TagDefinitions().Upsert(ctx, &gtc.TagDefinition{TagKey: "topic:never", CreatedAt: s.now(), UpdatedAt: s.now()})
	assert.ErrorIs(t, err, context.Canceled, "TagDefinitions.Upsert")

	_, err = st.Items().Get(ctx, existing.Key())
	assert.ErrorIs(t, err, context.Canceled, "Get")
	_, err = st.Items().Query(ctx, gtc.Query{Sort: gtc.SortID, Limit: 10})
	assert.ErrorIs(t, err, context.Canceled, "Query")
	_, err = st.Items().Scan(ctx, gtc.ScanSpec{}, "", 10)
	assert.ErrorIs(t, err, context.Canceled, "Scan")

	_, err = st.Items().Locate(ctxT(t), "ds", "never")
	assert.ErrorIs(t, err, gtc.ErrNotFound, "no partial create")
	got := get(t, st, existing.Key())
	assert.Equal(t, existing.ETag, got.ETag, "no partial replace")
	assert.Empty(t, got.Comment)
	_, err = st.Curation().Get(ctxT(t), "ds")
	if !s.h.Gaps.MissingReadIsServerError {
		assert.ErrorIs(t, err, gtc.ErrNotFound, "no partial curation write")
	}
	tags, err := st.TagStore().List(ctxT(t))
	require.NoError(t, err)
	assert.Empty(t, tags, "no partial tag store write")
	defs, err := st.TagDefinitions().List(ctxT(t))
	require.NoError(t, err)
	assert.Empty(t, defs, "no partial tag definition write")
}

// An assignee of "" is stored as unassigned.
func (s *suite) unassignedIsNull(t *testing.T) {
	st := s.open(t)
	in := s.item("ds", "blank-assignee")
	in.AssignedTo = ptr("")
	out := create(t, st, in)
	assert.Nil(t, out.AssignedTo)
	assert.Nil(t, get(t, st, in.Key()).AssignedTo)
	n, err := st.Items().Count(ctxT(t), gtc.Filter{AssignedTo: ptr("")})
	require.NoError(t, err)
	assert.Equal(t, 1, n)
}

// Get returns a fresh copy: changing it changes nothing stored.
func (s *suite) independentCopies(t *testing.T) {
	st := s.open(t)
	in := s.richItem("ds", "copy")
	out := create(t, st, in)
	in.Comment, out.Comment = "mutated input", "mutated output"
	in.ManualTags[0], out.ManualTags[0] = "x:y", "x:z"

	a := get(t, st, in.Key())
	a.History[0].Msg = "mutated read"
	b := get(t, st, in.Key())
	assert.Equal(t, "Grüße aus Köln — 東京 🌸", b.Comment)
	assert.Equal(t, "topic:äpfel", b.ManualTags[0])
	assert.Equal(t, "Wie viele Äpfel? ✓", b.History[0].Msg)
}
