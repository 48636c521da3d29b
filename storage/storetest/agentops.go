package storetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	gtc "github.com/gtc-dev/gtc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func (s *suite) agentOpTests() []namedTest {
	return []namedTest{
		{"HeaderRoundTrip", s.agentOpRoundTrip},       // 36: create and read
		{"ItemsInOrder", s.agentOpItems},              // 36: pages appended in order
		{"UpdateStatusAndCounts", s.agentOpUpdate},    // 36: only status, counts, finishedAt
		{"UndoneByOnce", s.agentOpUndoneBy},           // 36: conditional, never two undos
		{"ListNewestFirst", s.agentOpList},            // 36: listing by time, filters, total
		{"RunningForRepair", s.agentOpRunning},        // 36: startup repair finds running ones
		{"DeleteBeforeRetention", s.agentOpRetention}, // 36: retention deletion
	}
}

// agentT0 is the time the agent-operation fixtures are placed around: a fixed instant with
// whole microseconds, as a store keeps them, rather than the shared harness clock, which
// other behaviours running in parallel may move.
var agentT0 = time.Date(2025, 3, 14, 9, 26, 53, 589793000, time.UTC)

// agentOpID is a well-formed operation id (op_ and 26 Crockford
// base32 digits), distinct for every n below 1000.
func agentOpID(n int) string { return fmt.Sprintf("op_01JDQ7Z3M8X9K2T5V6W7Y8A%03d", n) }

// agentOp is a finished operation of actor that started at started, naming tags.
func agentOp(id, actor string, started time.Time, status string, tags ...string) *gtc.AgentOperation {
	finished := started.Add(3 * time.Second)
	return &gtc.AgentOperation{
		OperationID: id, Kind: gtc.AgentKindDeleteTag, Actor: actor, Via: "http",
		Args:      json.RawMessage(`{"operation":"delete_tag","tag":"topic:x","dataset":null}`),
		Tags:      tags,
		UserAgent: "storetest/1.0", PreviewID: "pv_" + id[3:],
		PreviewedAt: started.Add(-time.Minute), StartedAt: started, FinishedAt: &finished,
		Status: status, Counts: gtc.AgentOpCounts{Planned: 2, Applied: 2},
	}
}

func createAgentOp(t *testing.T, st gtc.Store, o *gtc.AgentOperation) {
	t.Helper()
	require.NoError(t, st.AgentOperations().Create(ctxT(t), o), "create agent operation %s", o.OperationID)
}

func getAgentOp(t *testing.T, st gtc.Store, id string) *gtc.AgentOperation {
	t.Helper()
	o, err := st.AgentOperations().Get(ctxT(t), id)
	require.NoError(t, err, "get agent operation %s", id)
	return o
}

// assertAgentOp compares two headers field by field; Args as JSON, since a store may
// re-encode it (key order and spacing are not part of the contract).
func assertAgentOp(t *testing.T, want, got *gtc.AgentOperation, msg string) {
	t.Helper()
	require.NotNil(t, got, msg)
	w, g := *want, *got
	if w.Args == nil {
		assert.Nil(t, g.Args, "%s: nil args read back as nil", msg)
	} else {
		assert.JSONEq(t, string(w.Args), string(g.Args), "%s: args", msg)
	}
	w.Args, g.Args = nil, nil
	assert.Equal(t, w, g, msg)
}

// 36. A header reads back exactly: every field, times in UTC at microsecond precision, nil
// and set pointers and slices kept apart. A second create of the id is ErrConflict and
// leaves the first; an unknown id is ErrNotFound.
func (s *suite) agentOpRoundTrip(t *testing.T) {
	st := s.open(t)
	ops := st.AgentOperations()
	cet := time.FixedZone("CET", 3600)
	// Nanoseconds and a zone other than UTC: stored as microseconds in UTC.
	started := time.Date(2025, 3, 14, 10, 26, 53, 589793999, cet)
	finished := started.Add(90*time.Second + 123*time.Nanosecond)
	full := &gtc.AgentOperation{
		OperationID: agentOpID(1), Kind: gtc.AgentKindMergeTags, Actor: "alice@contoso.com", Via: "mcp",
		Args:      json.RawMessage(`{"operation":"merge_tags","tag_from":"topic:instal","tag_to":"topic:install","dataset":null,"ünïcode":"日本"}`),
		Tags:      []string{"topic:instal", "topic:install"},
		UserAgent: "Claude/1.0 (+ünïcode)", PreviewID: "pv_01JDQ7Z3M8X9K2T5V6W7Y8A9BC",
		PreviewedAt: started.Add(-2 * time.Minute), StartedAt: started, FinishedAt: &finished,
		Status: gtc.AgentOpPartial,
		Counts: gtc.AgentOpCounts{Planned: 42, Applied: 38, SkippedChanged: 1, SkippedConflict: 1, SkippedMissing: 1,
			Failed: 1, NotAttempted: 0},
		ExcludedAtPreview: gtc.AgentOpExcluded{Unchanged: 7, Conflict: 2},
		UndoOf:            ptr(agentOpID(900)),
		UndoneBy:          ptr(agentOpID(901)),
	}
	bare := &gtc.AgentOperation{
		OperationID: agentOpID(2), Kind: gtc.AgentKindFindAndTag, Actor: "bob@contoso.com", Via: "http",
		Tags: []string{}, StartedAt: agentT0, Status: gtc.AgentOpRunning,
	}
	createAgentOp(t, st, full)
	createAgentOp(t, st, bare)

	wantFull := *full
	wantFull.PreviewedAt = time.Date(2025, 3, 14, 9, 24, 53, 589793000, time.UTC)
	wantFull.StartedAt = time.Date(2025, 3, 14, 9, 26, 53, 589793000, time.UTC)
	wantFull.FinishedAt = ptr(time.Date(2025, 3, 14, 9, 28, 23, 589794000, time.UTC))
	got := getAgentOp(t, st, full.OperationID)
	assertAgentOp(t, &wantFull, got, "every field set")
	assert.Equal(t, time.UTC, got.StartedAt.Location(), "times read back in UTC")

	got = getAgentOp(t, st, bare.OperationID)
	assertAgentOp(t, bare, got, "pointers nil, args absent, no tags")
	assert.Nil(t, got.FinishedAt)
	assert.Nil(t, got.UndoOf)
	assert.Nil(t, got.UndoneBy)
	assert.NotNil(t, got.Tags, "an empty tag list stays empty, not null")

	dup := agentOp(full.OperationID, "mallory@contoso.com", agentT0, gtc.AgentOpRunning, "topic:other")
	assert.ErrorIs(t, ops.Create(ctxT(t), dup), gtc.ErrConflict, "create of an existing id")
	assertAgentOp(t, &wantFull, getAgentOp(t, st, full.OperationID), "the first header is left as it was")

	_, err := ops.Get(ctxT(t), agentOpID(3))
	assert.ErrorIs(t, err, gtc.ErrNotFound, "get of an unknown id")
}

// agentItem is item n of an operation, with result; an applied item carries its ETag and
// tags after the write, every other leaves them nil.
func agentItem(n int, result string) gtc.AgentOpItem {
	it := gtc.AgentOpItem{
		DatasetName: fmt.Sprintf("ds-%d", n%3), Bucket: fmt.Sprintf("%08d-0000-4000-8000-000000000000", n%7),
		ID: fmt.Sprintf("item-%05d", n), Result: result, ETagBefore: fmt.Sprintf(`"etag-%d"`, n),
		ManualTagsBefore: []string{"topic:instal"}, PlannedTags: []string{"topic:install"},
	}
	if n%10 == 0 {
		it.ManualTagsBefore = []string{} // an item without manual tags: [] is not null
	}
	switch result {
	case gtc.AgentItemApplied:
		it.ETagAfter = ptr(fmt.Sprintf(`"etag-%d-after"`, n))
		it.ManualTagsAfter = []string{"topic:install"}
	case gtc.AgentItemPending:
	default:
		it.Reason = ptr("changed since preview")
	}
	return it
}

// finalResult is the result item n ends with in the items behaviour.
func finalResult(n int) string {
	switch n % 5 {
	case 3:
		return gtc.AgentItemSkippedChanged
	case 4:
		return gtc.AgentItemFailed
	}
	return gtc.AgentItemApplied
}

func agentItems(from, to int, result func(int) string) []gtc.AgentOpItem {
	out := make([]gtc.AgentOpItem, 0, to-from)
	for n := from; n < to; n++ {
		out = append(out, agentItem(n, result(n)))
	}
	return out
}

func pending(int) string { return gtc.AgentItemPending }

// 36. Items are journaled the way an operation runs: each chunk stored pending, then
// replaced by its results; 1,203 items in chunks of 100 span three Cosmos DB pages. Items
// reads them back in position order, whole or up to a limit, and a rewrite across a page
// boundary replaces exactly its positions.
func (s *suite) agentOpItems(t *testing.T) {
	st := s.open(t)
	ops := st.AgentOperations()
	id := agentOpID(10)
	createAgentOp(t, st, agentOp(id, "alice@contoso.com", agentT0, gtc.AgentOpRunning, "topic:install"))
	empty, err := ops.Items(ctxT(t), id, 0)
	require.NoError(t, err, "items of an operation without items")
	assert.Empty(t, empty)

	const n, chunk = 1203, 100
	for first := 0; first < n; first += chunk {
		end := min(first+chunk, n)
		require.NoError(t, ops.PutItems(ctxT(t), id, first, agentItems(first, end, pending)), "journal %d–%d", first, end)
		if first == 500 {
			// Mid-run, the journal shows the results so far and the pending chunk.
			got, err := ops.Items(ctxT(t), id, 0)
			require.NoError(t, err)
			require.Len(t, got, 600)
			assert.Equal(t, agentItem(499, finalResult(499)), got[499])
			assert.Equal(t, agentItem(500, gtc.AgentItemPending), got[500])
		}
		require.NoError(t, ops.PutItems(ctxT(t), id, first, agentItems(first, end, finalResult)), "results %d–%d", first, end)
	}
	want := agentItems(0, n, finalResult)
	got, err := ops.Items(ctxT(t), id, 0)
	require.NoError(t, err)
	require.Len(t, got, n)
	assert.Equal(t, want, got, "every item in position order, each field as written")

	for _, limit := range []int{1, 499, 500, 501, 1000, 1202, 1203, 5000} {
		got, err := ops.Items(ctxT(t), id, limit)
		require.NoError(t, err, "limit %d", limit)
		assert.Equal(t, want[:min(limit, n)], got, "limit %d", limit)
	}

	// A rewrite across the first page boundary: positions 490–509 only.
	cross := agentItems(490, 510, func(int) string { return gtc.AgentItemNotAttempted })
	require.NoError(t, ops.PutItems(ctxT(t), id, 490, cross))
	copy(want[490:510], cross)
	// Appending at the end, from the last page into a new one.
	more := agentItems(n, 1510, pending)
	require.NoError(t, ops.PutItems(ctxT(t), id, n, more))
	want = append(want, more...)
	got, err = ops.Items(ctxT(t), id, -1)
	require.NoError(t, err)
	assert.Equal(t, want, got, "a rewrite across pages and an append into a new page")

	assert.ErrorIs(t, ops.PutItems(ctxT(t), id, len(want)+1, agentItems(0, 1, pending)), gtc.ErrInvalidArgument,
		"a position past the end would leave a gap")
	assert.ErrorIs(t, ops.PutItems(ctxT(t), agentOpID(11), 0, agentItems(0, 1, pending)), gtc.ErrNotFound,
		"items of an unknown operation")
	_, err = ops.Items(ctxT(t), agentOpID(11), 0)
	assert.ErrorIs(t, err, gtc.ErrNotFound, "items of an unknown operation")
	got, err = ops.Items(ctxT(t), id, 0)
	require.NoError(t, err)
	assert.Len(t, got, len(want), "refused writes store nothing")
}

// 36. Update stores status, counts and finishedAt and nothing else, whatever else the
// caller's header says; an unknown id is ErrNotFound.
func (s *suite) agentOpUpdate(t *testing.T) {
	st := s.open(t)
	ops := st.AgentOperations()
	o := agentOp(agentOpID(20), "alice@contoso.com", agentT0, gtc.AgentOpRunning, "topic:install")
	o.FinishedAt = nil
	o.Counts = gtc.AgentOpCounts{Planned: 10}
	createAgentOp(t, st, o)

	finished := agentT0.Add(time.Minute + 500*time.Nanosecond)
	upd := agentOp(o.OperationID, "mallory@contoso.com", agentT0.Add(time.Hour), gtc.AgentOpCompleted, "topic:other")
	upd.Kind, upd.Via, upd.UserAgent, upd.PreviewID = gtc.AgentKindMergeTags, "mcp", "other", "pv_other"
	upd.Args = json.RawMessage(`{"operation":"merge_tags"}`)
	upd.UndoOf, upd.UndoneBy = ptr(agentOpID(29)), ptr(agentOpID(28))
	upd.ExcludedAtPreview = gtc.AgentOpExcluded{Unchanged: 5}
	upd.Counts = gtc.AgentOpCounts{Planned: 10, Applied: 7, SkippedChanged: 1, SkippedConflict: 1, Failed: 1}
	upd.FinishedAt = &finished
	require.NoError(t, ops.Update(ctxT(t), upd))

	want := *o
	want.Status, want.Counts = gtc.AgentOpCompleted, upd.Counts
	want.FinishedAt = ptr(finished.Truncate(time.Microsecond))
	assertAgentOp(t, &want, getAgentOp(t, st, o.OperationID), "after update")

	err := ops.Update(ctxT(t), agentOp(agentOpID(21), "alice@contoso.com", agentT0, gtc.AgentOpCompleted))
	assert.ErrorIs(t, err, gtc.ErrNotFound, "update of an unknown id")
	_, err = ops.Get(ctxT(t), agentOpID(21))
	assert.ErrorIs(t, err, gtc.ErrNotFound, "an update creates nothing")
}

// 36. SetUndoneBy records one undo: a second, different undo is ErrConflict and leaves the
// first; the same undo again is accepted (a retry). Of eight undos racing, exactly one
// wins. An Update afterwards keeps undoneBy.
func (s *suite) agentOpUndoneBy(t *testing.T) {
	st := s.open(t)
	ops := st.AgentOperations()
	id := agentOpID(30)
	createAgentOp(t, st, agentOp(id, "alice@contoso.com", agentT0, gtc.AgentOpCompleted, "topic:install"))

	require.NoError(t, ops.SetUndoneBy(ctxT(t), id, agentOpID(31)))
	assert.Equal(t, ptr(agentOpID(31)), getAgentOp(t, st, id).UndoneBy)
	assert.ErrorIs(t, ops.SetUndoneBy(ctxT(t), id, agentOpID(32)), gtc.ErrConflict, "a second undo")
	assert.NoError(t, ops.SetUndoneBy(ctxT(t), id, agentOpID(31)), "the same undo again")
	assert.Equal(t, ptr(agentOpID(31)), getAgentOp(t, st, id).UndoneBy, "the first undo stays")
	assert.ErrorIs(t, ops.SetUndoneBy(ctxT(t), agentOpID(39), agentOpID(31)), gtc.ErrNotFound, "unknown id")

	upd := getAgentOp(t, st, id)
	upd.UndoneBy, upd.Status = nil, gtc.AgentOpPartial
	require.NoError(t, ops.Update(ctxT(t), upd))
	assert.Equal(t, ptr(agentOpID(31)), getAgentOp(t, st, id).UndoneBy, "Update leaves undoneBy alone")

	race := agentOpID(40)
	createAgentOp(t, st, agentOp(race, "alice@contoso.com", agentT0, gtc.AgentOpCompleted, "topic:install"))
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = ops.SetUndoneBy(ctxT(t), race, agentOpID(41+i))
		}()
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		if err == nil {
			assert.Equal(t, -1, winner, "undos %d and %d both succeeded", winner, i)
			winner = i
			continue
		}
		assert.ErrorIs(t, err, gtc.ErrConflict, "undo %d", i)
	}
	require.NotEqual(t, -1, winner, "one undo succeeds")
	assert.Equal(t, ptr(agentOpID(41+winner)), getAgentOp(t, st, race).UndoneBy, "the winner is recorded")
}

// agentOpIDs lists the ids of ops, in order.
func agentOpIDs(ops []*gtc.AgentOperation) []string {
	out := make([]string, len(ops))
	for i, o := range ops {
		out[i] = o.OperationID
	}
	return out
}

// 36. List answers newest first (startedAt, then id, both descending), filtered by actor,
// by tag or both, at most Limit headers, with the exact number of matches.
func (s *suite) agentOpList(t *testing.T) {
	st := s.open(t)
	ops := st.AgentOperations()
	list := func(f gtc.AgentOpFilter) ([]string, int) {
		t.Helper()
		got, total, err := ops.List(ctxT(t), f)
		require.NoError(t, err, "list %+v", f)
		return agentOpIDs(got), total
	}
	none, total := list(gtc.AgentOpFilter{Limit: 10})
	assert.Empty(t, none, "an empty log")
	assert.Zero(t, total)

	base := agentT0
	type fixture struct {
		n       int
		actor   string
		minutes int // after base; equal values tie on startedAt
		tags    []string
	}
	fixtures := []fixture{
		{50, "alice@contoso.com", 0, []string{"topic:install"}},
		{51, "bob@contoso.com", 1, []string{"topic:install", "topic:license"}},
		{52, "alice@contoso.com", 2, []string{"topic:install", "topic:license"}},
		{53, "alice@contoso.com", 2, []string{"topic:install"}}, // ties 52, also within a tag: the larger id first
		{54, "carol@contoso.com", 3, nil},
		{55, "bob@contoso.com", -60, []string{"topic:install"}},
		{56, "alice@contoso.com", 24 * 60, []string{"topic:instal", "topic:install"}},
		{57, "alice@contoso.com", 5, []string{"topic:installer"}}, // not topic:install
	}
	all := make([]*gtc.AgentOperation, 0, len(fixtures))
	for _, f := range fixtures {
		o := agentOp(agentOpID(f.n), f.actor, base.Add(time.Duration(f.minutes)*time.Minute), gtc.AgentOpCompleted, f.tags...)
		createAgentOp(t, st, o)
		all = append(all, o)
	}
	// The model: newest first, then the larger id.
	slices.SortFunc(all, func(a, b *gtc.AgentOperation) int {
		if c := b.StartedAt.Compare(a.StartedAt); c != 0 {
			return c
		}
		return strings.Compare(b.OperationID, a.OperationID)
	})
	model := func(actor, tag string) []string {
		var out []string
		for _, o := range all {
			if (actor == "" || o.Actor == actor) && (tag == "" || slices.Contains(o.Tags, tag)) {
				out = append(out, o.OperationID)
			}
		}
		return out
	}
	want := []string{agentOpID(56), agentOpID(57), agentOpID(54), agentOpID(53), agentOpID(52), agentOpID(51), agentOpID(50), agentOpID(55)}
	require.Equal(t, want, model("", ""), "the model itself")

	for _, c := range []struct{ actor, tag string }{
		{"", ""}, {"alice@contoso.com", ""}, {"bob@contoso.com", ""}, {"", "topic:install"},
		{"", "topic:license"}, {"alice@contoso.com", "topic:install"}, {"bob@contoso.com", "topic:license"},
		{"dave@contoso.com", ""}, {"", "topic:absent"}, {"carol@contoso.com", "topic:install"},
	} {
		want := model(c.actor, c.tag)
		for _, limit := range []int{1, 3, 1000} {
			got, total := list(gtc.AgentOpFilter{Actor: c.actor, Tag: c.tag, Limit: limit})
			assert.Equal(t, len(want), total, "actor %q tag %q limit %d: total", c.actor, c.tag, limit)
			assert.Equal(t, want[:min(limit, len(want))], nilIfEmpty(got), "actor %q tag %q limit %d", c.actor, c.tag, limit)
		}
	}

	// Whole headers come back, not just their ids.
	got, _, err := ops.List(ctxT(t), gtc.AgentOpFilter{Tag: "topic:instal", Limit: 1})
	require.NoError(t, err)
	require.Len(t, got, 1)
	assertAgentOp(t, all[0], got[0], "a listed header")

	for _, limit := range []int{0, -1, 1001} {
		_, _, err := ops.List(ctxT(t), gtc.AgentOpFilter{Limit: limit})
		assert.ErrorIs(t, err, gtc.ErrInvalidArgument, "limit %d", limit)
	}
}

func nilIfEmpty(ss []string) []string {
	if len(ss) == 0 {
		return nil
	}
	return ss
}

// 36. Running lists exactly the operations whose status is running, whatever their age, for
// startup repair; one that finishes leaves the list.
func (s *suite) agentOpRunning(t *testing.T) {
	st := s.open(t)
	ops := st.AgentOperations()
	running, err := ops.Running(ctxT(t))
	require.NoError(t, err)
	assert.Empty(t, running, "an empty log")

	base := agentT0
	for i, status := range []string{gtc.AgentOpRunning, gtc.AgentOpCompleted, gtc.AgentOpRunning, gtc.AgentOpPartial,
		gtc.AgentOpFailed, gtc.AgentOpInterrupted, gtc.AgentOpRunning} {
		o := agentOp(agentOpID(60+i), "alice@contoso.com", base.Add(-time.Duration(i)*24*time.Hour), status)
		if status == gtc.AgentOpRunning {
			o.FinishedAt = nil
		}
		createAgentOp(t, st, o)
	}
	ids := func() []string {
		t.Helper()
		got, err := ops.Running(ctxT(t))
		require.NoError(t, err)
		for _, o := range got {
			assert.Equal(t, gtc.AgentOpRunning, o.Status, "%s", o.OperationID)
			assert.Equal(t, "alice@contoso.com", o.Actor, "whole headers")
		}
		return slices.Sorted(slices.Values(agentOpIDs(got)))
	}
	assert.Equal(t, []string{agentOpID(60), agentOpID(62), agentOpID(66)}, ids())

	done := getAgentOp(t, st, agentOpID(62))
	done.Status, done.FinishedAt = gtc.AgentOpInterrupted, ptr(base)
	require.NoError(t, ops.Update(ctxT(t), done))
	assert.Equal(t, []string{agentOpID(60), agentOpID(66)}, ids(), "a repaired operation is no longer running")
}

// 36. DeleteBefore removes the operations that started before t and are not running, with
// their items, and reports how many; running operations of any age, and operations that
// started at t or later, stay with their items. A deleted id can be created afresh, without
// items.
func (s *suite) agentOpRetention(t *testing.T) {
	st := s.open(t)
	ops := st.AgentOperations()
	cut := agentT0
	type fixture struct {
		n      int
		age    time.Duration // before cut
		status string
		items  int
		gone   bool
	}
	fixtures := []fixture{
		{70, 90 * 24 * time.Hour, gtc.AgentOpCompleted, 620, true}, // two Cosmos DB pages
		{71, 31 * 24 * time.Hour, gtc.AgentOpPartial, 3, true},
		{72, time.Microsecond, gtc.AgentOpFailed, 0, true},
		{73, 400 * 24 * time.Hour, gtc.AgentOpRunning, 4, false}, // running: repaired, not deleted
		{74, 0, gtc.AgentOpCompleted, 2, false},                  // started at the cut
		{75, -time.Hour, gtc.AgentOpInterrupted, 5, false},       // newer
	}
	for _, f := range fixtures {
		id := agentOpID(f.n)
		createAgentOp(t, st, agentOp(id, "alice@contoso.com", cut.Add(-f.age), f.status, "topic:install"))
		if f.items > 0 {
			require.NoError(t, ops.PutItems(ctxT(t), id, 0, agentItems(0, f.items, finalResult)))
		}
	}

	n, err := ops.DeleteBefore(ctxT(t), cut)
	require.NoError(t, err)
	assert.Equal(t, 3, n, "deleted operations")
	for _, f := range fixtures {
		id := agentOpID(f.n)
		_, err := ops.Get(ctxT(t), id)
		items, ierr := ops.Items(ctxT(t), id, 0)
		if f.gone {
			assert.ErrorIs(t, err, gtc.ErrNotFound, "%s deleted", id)
			assert.ErrorIs(t, ierr, gtc.ErrNotFound, "%s: items deleted", id)
			continue
		}
		assert.NoError(t, err, "%s kept", id)
		require.NoError(t, ierr, "%s: items kept", id)
		assert.Equal(t, agentItems(0, f.items, finalResult), nilIfEmptyItems(items), "%s: items kept", id)
	}
	_, total, err := ops.List(ctxT(t), gtc.AgentOpFilter{Tag: "topic:install", Limit: 100})
	require.NoError(t, err)
	assert.Equal(t, 3, total, "deleted operations are no longer listed")

	n, err = ops.DeleteBefore(ctxT(t), cut)
	require.NoError(t, err)
	assert.Zero(t, n, "a second run deletes nothing")

	// The items went with their header: the id, created again, has none.
	createAgentOp(t, st, agentOp(agentOpID(70), "bob@contoso.com", cut, gtc.AgentOpRunning))
	items, err := ops.Items(ctxT(t), agentOpID(70), 0)
	require.NoError(t, err)
	assert.Empty(t, items, "no items survive their operation")
}

func nilIfEmptyItems(items []gtc.AgentOpItem) []gtc.AgentOpItem {
	if len(items) == 0 {
		return []gtc.AgentOpItem{}
	}
	return items
}
