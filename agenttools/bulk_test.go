package agenttools

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
)

var bg = context.Background()

func merge(from, to string, dry bool) map[string]any {
	return map[string]any{"operation": "merge_tags", "tag_from": from, "tag_to": to, "dry_run": dry}
}

func TestMergePreviewExecuteUndo(t *testing.T) {
	e := newBulkEnv(t, BulkOptions{})
	a := e.add("customer-feedback", "amber-falcon", "Install fails with error 1603", "topic:instal", "topic:install")
	b := e.add("network-diagnostics", "quiet-harbor", "Router firmware install keeps failing", "topic:instal", "difficulty:hard")
	c := e.add("network-diagnostics", "calm-river", "Unrelated", "topic:other")
	computedBefore := e.get(b).ComputedTags
	alice := caller("alice@contoso.com")

	pv := e.bulk.ManageTags(bg, alice, merge("Topic : Instal", "topic:install", true))
	require.False(t, pv.IsError, pv.Content)
	assert.True(t, strings.HasPrefix(pv.Content, "PREVIEW (dry run, nothing changed): merge_tags 'topic:instal' -> 'topic:install', all datasets.\nMatched 2 items: 2 would change, 0 would be skipped."), pv.Content)
	assert.Contains(t, pv.Content, "By dataset: customer-feedback 1, network-diagnostics 1.")
	assert.Contains(t, pv.Content, "(1 items already have 'topic:install'; only the removal applies there)")
	assert.Contains(t, pv.Content, `- network-diagnostics/quiet-harbor [draft] "Router firmware install keeps failing" [difficulty:hard, topic:instal] -> [difficulty:hard, topic:install]`)
	d := dataOf(t, pv)
	assert.Equal(t, 2, d["wouldChange"])
	assert.Regexp(t, `^pv_[0-9A-HJKMNP-TV-Z]{26}$`, d["previewId"])
	assert.Equal(t, 0, e.saver.count(), "a preview writes nothing")
	assert.Equal(t, []string{"topic:instal", "topic:install"}, e.get(a).ManualTags)

	e.clock.Advance(time.Minute)
	done := e.bulk.ManageTags(bg, alice, merge("topic:instal", "topic:install", false))
	require.False(t, done.IsError, done.Content)
	dd := dataOf(t, done)
	opID := dd["operationId"].(string)
	assert.Regexp(t, `^op_[0-9A-HJKMNP-TV-Z]{26}$`, opID)
	assert.Equal(t, fmt.Sprintf("DONE %s merge_tags 'topic:instal' -> 'topic:install': 2 of 2 previewed items changed, 0 skipped, 0 failed.\nTo revert: undo_tag_operation with operation_id %q.", opID, opID), done.Content)
	assert.Equal(t, gtc.AgentOpCompleted, dd["status"])

	gotA, gotB := e.get(a), e.get(b)
	assert.Equal(t, []string{"topic:install"}, gotA.ManualTags)
	assert.Equal(t, []string{"difficulty:hard", "topic:install"}, gotB.ManualTags)
	assert.Equal(t, computedBefore, gotB.ComputedTags, "computed tags depend on content only")
	assert.NotEqual(t, b.ETag, gotB.ETag)
	assert.Equal(t, e.clock.Now(), gotB.UpdatedAt, "a tool write is an edit")
	assert.Equal(t, c.ETag, e.get(c).ETag, "an item outside the preview is untouched")

	op, err := e.audit.Get(bg, opID)
	require.NoError(t, err)
	assert.Equal(t, "alice@contoso.com", op.Actor)
	assert.Equal(t, "http", op.Via)
	assert.Equal(t, gtc.AgentOpCounts{Planned: 2, Applied: 2}, op.Counts)
	assert.JSONEq(t, `{"operation":"merge_tags","tag_from":"topic:instal","tag_to":"topic:install","dataset":null}`, string(op.Args))
	entries, _ := e.audit.Items(bg, opID, 0)
	require.Len(t, entries, 2)
	assert.Equal(t, "customer-feedback", entries[0].DatasetName, "items in (dataset, id) order")
	assert.Equal(t, gtc.AgentItemApplied, entries[1].Result)
	assert.Equal(t, b.ETag, entries[1].ETagBefore)
	assert.Equal(t, gotB.ETag, *entries[1].ETagAfter)
	assert.Equal(t, []string{"difficulty:hard", "topic:instal"}, entries[1].ManualTagsBefore)

	// Someone edits b after the operation; the undo restores a and leaves b alone.
	e.edit(b.Key(), "curator note", "")
	undo := map[string]any{"operation_id": opID}
	upv := e.bulk.UndoTagOperation(bg, alice, undo)
	require.False(t, upv.IsError, upv.Content)
	assert.Contains(t, upv.Content, "would restore 1 items; 1 changed since and would be left alone.")
	undo["dry_run"] = false
	ud := e.bulk.UndoTagOperation(bg, alice, undo)
	require.False(t, ud.IsError, ud.Content)
	undoID := dataOf(t, ud)["operationId"].(string)
	assert.True(t, strings.HasPrefix(ud.Content, fmt.Sprintf("DONE %s (undo of %s): restored 1 items, 0 skipped, 0 failed.", undoID, opID)), ud.Content)
	assert.Equal(t, []string{"topic:instal", "topic:install"}, e.get(a).ManualTags)
	assert.Equal(t, []string{"difficulty:hard", "topic:install"}, e.get(b).ManualTags)
	target, _ := e.audit.Get(bg, opID)
	assert.Equal(t, undoID, *target.UndoneBy)

	// Undone twice → ALREADY_UNDONE; the undo itself can be undone.
	again := e.bulk.UndoTagOperation(bg, alice, map[string]any{"operation_id": opID})
	assert.Equal(t, CodeAlreadyUndone, errCode(again), again.Content)
	redo := map[string]any{"operation_id": undoID}
	require.False(t, e.bulk.UndoTagOperation(bg, alice, redo).IsError)
	redo["dry_run"] = false
	r := e.bulk.UndoTagOperation(bg, alice, redo)
	require.False(t, r.IsError, r.Content)
	assert.Equal(t, []string{"topic:install"}, e.get(a).ManualTags, "undoing the undo restores the merge")

	// The log lists all three, newest first.
	list := e.bulk.ListTagOperations(bg, alice, map[string]any{"limit": 10})
	ops := dataOf(t, list)["operations"].([]map[string]any)
	require.Len(t, ops, 3)
	assert.Equal(t, opID, ops[2]["operationId"])
	assert.Contains(t, list.Content, "undone by "+undoID)
	one := e.bulk.ListTagOperations(bg, alice, map[string]any{"operation_id": opID})
	assert.Contains(t, one.Content, "customer-feedback/amber-falcon applied [topic:instal, topic:install] -> [topic:install]")
}

func TestPreviewBinding(t *testing.T) {
	e := newBulkEnv(t, BulkOptions{PreviewTTL: 15 * time.Minute})
	e.add("ds", "a", "q", "topic:instal")
	e.add("ds", "b", "q", "topic:instal")
	alice, bob := caller("alice"), caller("bob")

	t.Run("never previewed", func(t *testing.T) {
		r := e.bulk.ManageTags(bg, alice, merge("topic:instal", "topic:x", false))
		assert.Equal(t, CodeNoPreview, errCode(r))
		assert.True(t, strings.HasPrefix(r.Content, "Not executed: you have no preview for exactly these parameters"))
	})
	require.False(t, e.bulk.ManageTags(bg, alice, merge("topic:instal", "topic:install", true)).IsError)
	t.Run("another caller", func(t *testing.T) {
		assert.Equal(t, CodeNoPreview, errCode(e.bulk.ManageTags(bg, bob, merge("topic:instal", "topic:install", false))))
	})
	t.Run("other parameters", func(t *testing.T) {
		args := merge("topic:instal", "topic:install", false)
		args["dataset"] = "ds"
		assert.Equal(t, CodeNoPreview, errCode(e.bulk.ManageTags(bg, alice, args)))
	})
	t.Run("expired", func(t *testing.T) {
		e.clock.Advance(16 * time.Minute)
		r := e.bulk.ManageTags(bg, alice, merge("topic:instal", "topic:install", false))
		assert.Equal(t, CodePreviewExpired, errCode(r), r.Content)
		assert.Equal(t, 0, e.saver.count())
	})
	t.Run("executed once", func(t *testing.T) {
		require.False(t, e.bulk.ManageTags(bg, alice, merge("TOPIC:instal", " topic : install", true)).IsError)
		first := e.bulk.ManageTags(bg, alice, merge("topic:instal", "topic:install", false))
		require.False(t, first.IsError, first.Content)
		second := e.bulk.ManageTags(bg, alice, merge("topic:instal", "topic:install", false))
		assert.Equal(t, CodeAlreadyExecuted, errCode(second))
		assert.Contains(t, second.Content, dataOf(t, first)["operationId"].(string))
	})
}

func TestCanonicalArguments(t *testing.T) {
	h := func(a opArgs) string { return a.hash() }
	base := opArgs{Tool: ToolManageTags, Operation: "find_and_tag", Keyword: "refund", Tag: "topic:billing", Tags: []string{"a:b", "c:d"}}
	same := base
	assert.Equal(t, h(base), h(same))
	for name, change := range map[string]func(*opArgs){
		"dataset": func(a *opArgs) { a.Dataset = "x" },
		"status":  func(a *opArgs) { a.Status = "draft" },
		"keyword": func(a *opArgs) { a.Keyword = "refunds" },
		"tag":     func(a *opArgs) { a.Tag = "topic:other" },
		"filter":  func(a *opArgs) { a.Tags = []string{"a:b"} },
	} {
		c := base
		change(&c)
		assert.NotEqual(t, h(base), h(c), name)
	}
	// Normalization happens before hashing: case, whitespace and filter order.
	e := newBulkEnv(t, BulkOptions{})
	a1, bad := e.bulk.parseManageArgs(map[string]any{"operation": "find_and_tag", "keyword": "Refund ", "tag": "Topic : Billing", "tags": []string{"c:d", "A:B", "a:b"}}, nil)
	require.Nil(t, bad)
	a2, bad := e.bulk.parseManageArgs(map[string]any{"operation": "find_and_tag", "keyword": "refund", "tag": "topic:billing", "tags": []string{"a:b", "c:d"}, "dry_run": false}, nil)
	require.Nil(t, bad)
	assert.Equal(t, h(a1), h(a2))
}

func TestRefusals(t *testing.T) {
	e := newBulkEnv(t, BulkOptions{})
	e.add("ds", "a", "q", "turns:three")
	known := map[string]bool{"turns:special": true}
	_ = known
	e.known = append(e.known, "question_length:huge")
	for _, tc := range []struct {
		name string
		args map[string]any
		code string
		text string
	}{
		{"add a static computed key", map[string]any{"operation": "find_and_tag", "keyword": "q", "tag": "turns:multiturn"}, CodeComputedTag,
			"Refused: 'turns:multiturn' is a computed tag, derived by plugins from item content. Tools can add, remove or rename manual tags only."},
		{"remove a static computed key", map[string]any{"operation": "delete_tag", "tag": "answer:no_answer"}, CodeComputedTag, "is a computed tag"},
		{"add dataset:", map[string]any{"operation": "find_and_tag", "keyword": "q", "tag": "dataset:ds"}, CodeComputedTag,
			"Refused: 'dataset:…' tags come from each item's dataset name and cannot be changed by tools."},
		{"remove dataset:", map[string]any{"operation": "delete_tag", "tag": "dataset:ds"}, CodeComputedTag, "dataset:…"},
		{"mint in a computed group", map[string]any{"operation": "merge_tags", "tag_from": "topic:a", "tag_to": "turns:three"}, CodeComputedTag, "'turns:three' is a computed tag"},
		{"identical after normalization", merge("Topic:Install", "topic:install", true), CodeIdenticalTags,
			"Refused: tag_from and tag_to are identical after normalization ('topic:install'); nothing to merge."},
		{"bad format", map[string]any{"operation": "delete_tag", "tag": "install"}, CodeInvalidTag, "Invalid tag format (expected group:value): 'install'"},
		{"invisible character in the tag", map[string]any{"operation": "find_and_tag", "keyword": "q", "tag": "sour\u200bce:synthetic"}, CodeInvalidTag,
			"Invalid tag format (invisible format character U+200B is not allowed)"},
		{"invisible character in a filter tag", map[string]any{"operation": "find_and_tag", "keyword": "q", "tag": "topic:x", "tags": []string{"topic:\ufeffx"}}, CodeInvalidTag,
			"Invalid tag format (invisible format character U+FEFF is not allowed)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.bulk.ManageTags(bg, caller("alice"), tc.args)
			assert.Equal(t, tc.code, errCode(r), r.Content)
			assert.Contains(t, r.Content, tc.text)
			assert.True(t, r.IsError)
		})
	}
	t.Run("a stray manual tag in a computed group can be removed", func(t *testing.T) {
		r := e.bulk.ManageTags(bg, caller("alice"), map[string]any{"operation": "delete_tag", "tag": "turns:three"})
		require.False(t, r.IsError, r.Content)
		assert.Equal(t, 1, dataOf(t, r)["wouldChange"])
	})
	t.Run("a vocabulary tag in a computed group may be added", func(t *testing.T) {
		r := e.bulk.ManageTags(bg, caller("alice"), map[string]any{"operation": "find_and_tag", "keyword": "q", "tag": "question_length:huge"})
		require.False(t, r.IsError, r.Content)
	})
	t.Run("computed filter tags are fine", func(t *testing.T) {
		r := e.bulk.ManageTags(bg, caller("alice"), map[string]any{"operation": "find_and_tag", "keyword": "q", "tag": "topic:x", "tags": []string{"turns:singleturn", "dataset:ds"}})
		require.False(t, r.IsError, r.Content)
		assert.Equal(t, 1, dataOf(t, r)["matched"])
	})
	t.Run("unknown dataset", func(t *testing.T) {
		r := e.bulk.ManageTags(bg, caller("alice"), map[string]any{"operation": "delete_tag", "tag": "topic:x", "dataset": "nope"})
		assert.Equal(t, CodeUnknownDataset, errCode(r))
		assert.Contains(t, r.Content, "ds")
	})
}

func TestExclusiveGroupConflictsAreSkipped(t *testing.T) {
	e := newBulkEnv(t, BulkOptions{})
	e.add("ds", "a", "refund please", "source:sa")
	e.add("ds", "b", "refund now")
	e.add("ds", "c", "refund again", "source:sme")
	r := e.bulk.ManageTags(bg, caller("alice"), map[string]any{"operation": "find_and_tag", "keyword": "REFUND", "tag": "source:sme"})
	require.False(t, r.IsError, r.Content)
	d := dataOf(t, r)
	assert.Equal(t, 3, d["matched"])
	assert.Equal(t, 1, d["wouldChange"])
	assert.Equal(t, 1, d["unchanged"])
	assert.Equal(t, 1, d["wouldSkip"])
	assert.Contains(t, r.Content, "Matched 3 items: 1 would change, 1 would be skipped, 1 already have the tag.")
	assert.Contains(t, r.Content, "Would skip (Group 'source' is exclusive")
	assert.Contains(t, r.Content, "ds/a")

	// A rename inside an exclusive group is no conflict.
	r = e.bulk.ManageTags(bg, caller("alice"), merge("source:sa", "source:other", true))
	require.False(t, r.IsError, r.Content)
	assert.Equal(t, 1, dataOf(t, r)["wouldChange"])
}

func TestExactlyThePreviewedItems(t *testing.T) {
	e := newBulkEnv(t, BulkOptions{})
	a := e.add("ds", "a", "q", "topic:old")
	b := e.add("ds", "b", "q", "topic:old")
	gone := e.add("gone", "c", "q", "topic:old")
	alice := caller("alice")
	require.False(t, e.bulk.ManageTags(bg, alice, merge("topic:old", "topic:new", true)).IsError)

	late := e.add("ds", "late", "q", "topic:old")   // starts matching after the preview
	edited := e.edit(b.Key(), "changed by bob", "") // changed since the preview
	_, err := e.store.Items().DeleteDataset(bg, "gone")
	require.NoError(t, err)

	r := e.bulk.ManageTags(bg, alice, merge("topic:old", "topic:new", false))
	require.False(t, r.IsError, r.Content)
	d := dataOf(t, r)
	assert.Equal(t, gtc.AgentOpPartial, d["status"])
	assert.Contains(t, r.Content, "1 of 3 previewed items changed, 2 skipped, 0 failed.")
	assert.Contains(t, r.Content, "Skipped, changed since preview (left as is): ds/b")
	assert.Contains(t, r.Content, "Skipped, deleted since preview: gone/c")
	assert.Equal(t, []string{"topic:new"}, e.get(a).ManualTags)
	assert.Equal(t, edited.ETag, e.get(b).ETag, "the edited item is left exactly as it was")
	assert.Equal(t, []string{"topic:old"}, e.get(b).ManualTags)
	assert.Equal(t, late.ETag, e.get(late).ETag, "an item outside the preview is never touched")
	_ = gone
}

func TestTooManyItemsKeepsNoPreview(t *testing.T) {
	e := newBulkEnv(t, BulkOptions{MaxItems: 5})
	for i := range 6 {
		e.add("ds", fmt.Sprintf("i%d", i), "q", "topic:old")
	}
	r := e.bulk.ManageTags(bg, caller("alice"), merge("topic:old", "topic:new", true))
	assert.Equal(t, CodeTooManyItems, errCode(r), r.Content)
	assert.Equal(t, 5, dataOf(t, r)["error"].(map[string]any)["limit"])
	assert.False(t, e.kept("alice", "topic:old", "topic:new"))
	assert.Equal(t, CodeNoPreview, errCode(e.bulk.ManageTags(bg, caller("alice"), merge("topic:old", "topic:new", false))))
}

func TestWriteRetries(t *testing.T) {
	for _, tc := range []struct {
		name     string
		failures int
		want     string
		calls    int
	}{
		{"two transient errors then success", 2, gtc.AgentItemApplied, 3},
		{"three transient errors", 3, gtc.AgentItemFailed, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newBulkEnv(t, BulkOptions{})
			e.add("ds", "a", "q", "topic:old")
			e.saver.before = func(_ gtc.Key, call int) error {
				if call <= tc.failures {
					return errTransient
				}
				return nil
			}
			require.False(t, e.bulk.ManageTags(bg, caller("alice"), merge("topic:old", "topic:new", true)).IsError)
			r := e.bulk.ManageTags(bg, caller("alice"), merge("topic:old", "topic:new", false))
			require.False(t, r.IsError, r.Content)
			entries, _ := e.audit.Items(bg, dataOf(t, r)["operationId"].(string), 0)
			assert.Equal(t, tc.want, entries[0].Result)
			assert.Equal(t, tc.calls, e.saver.count())
		})
	}
	t.Run("an etag mismatch is never retried", func(t *testing.T) {
		e := newBulkEnv(t, BulkOptions{})
		a := e.add("ds", "a", "q", "topic:old")
		require.False(t, e.bulk.ManageTags(bg, caller("alice"), merge("topic:old", "topic:new", true)).IsError)
		e.saver.before = func(k gtc.Key, _ int) error { e.edit(a.Key(), "race", ""); e.saver.before = nil; return nil }
		r := e.bulk.ManageTags(bg, caller("alice"), merge("topic:old", "topic:new", false))
		assert.Contains(t, r.Content, "Skipped, changed since preview")
		assert.Equal(t, 1, e.saver.count())
	})
	t.Run("twenty failures in a row abort the run", func(t *testing.T) {
		e := newBulkEnv(t, BulkOptions{WriteRetries: 1})
		const n = (chunksInFlight+1)*journalChunk + 50
		for i := range n {
			e.add("ds", fmt.Sprintf("i%03d", i), "q", "topic:old")
		}
		e.saver.before = func(gtc.Key, int) error { return errTransient }
		require.False(t, e.bulk.ManageTags(bg, caller("alice"), merge("topic:old", "topic:new", true)).IsError)
		r := e.bulk.ManageTags(bg, caller("alice"), merge("topic:old", "topic:new", false))
		d := dataOf(t, r)
		assert.Equal(t, gtc.AgentOpFailed, d["status"])
		c := d["counts"].(gtc.AgentOpCounts)
		// A batch holds up to a chunk of journalChunk items and chunksInFlight chunks are
		// written at once, so the rest of the batches in flight when the 20th fails are still
		// attempted; the walk stops after them.
		assert.GreaterOrEqual(t, c.Failed, outageFailures)
		assert.LessOrEqual(t, c.Failed, chunksInFlight*journalChunk)
		assert.Equal(t, n, c.Failed+c.NotAttempted)
		assert.Contains(t, r.Content, "Stopped early: the store kept failing")
		entries, _ := e.audit.Items(bg, d["operationId"].(string), 0)
		require.Len(t, entries, n, "every previewed item is in the log")
		assert.Equal(t, gtc.AgentItemNotAttempted, entries[n-1].Result)
	})
}

func TestRateLimitAndRunningAnswer(t *testing.T) {
	e := newBulkEnv(t, BulkOptions{WritesPerSecond: 50, ExecWait: 5 * time.Second})
	for i := range 100 {
		e.add("ds", fmt.Sprintf("i%03d", i), "q", "topic:old")
	}
	require.False(t, e.bulk.ManageTags(bg, caller("alice"), merge("topic:old", "topic:new", true)).IsError)
	start := e.clock.Now()
	r := e.bulk.ManageTags(bg, caller("alice"), merge("topic:old", "topic:new", false))
	require.False(t, r.IsError, r.Content)
	e.bulk.Wait()
	assert.GreaterOrEqual(t, e.clock.Now().Sub(start), 2*time.Second-20*time.Millisecond, "100 writes at 50/s")
}

func TestExecutionOutlivesTheWait(t *testing.T) {
	e := newBulkEnv(t, BulkOptions{ExecWait: time.Millisecond})
	release := make(chan struct{})
	for i := range 3 {
		e.add("ds", fmt.Sprintf("i%d", i), "q", "topic:old")
	}
	require.False(t, e.bulk.ManageTags(bg, caller("alice"), merge("topic:old", "topic:new", true)).IsError)
	e.saver.before = func(gtc.Key, int) error { <-release; return nil }
	r := e.bulk.ManageTags(bg, caller("alice"), merge("topic:old", "topic:new", false))
	require.False(t, r.IsError)
	assert.True(t, strings.HasPrefix(r.Content, "RUNNING op_"), r.Content)
	opID := dataOf(t, r)["operationId"].(string)

	// While it runs: the same tag is busy for others, and the caller has no free slot.
	require.False(t, e.bulk.ManageTags(bg, caller("bob"), map[string]any{"operation": "delete_tag", "tag": "topic:old"}).IsError)
	busy := e.bulk.ManageTags(bg, caller("bob"), map[string]any{"operation": "delete_tag", "tag": "topic:old", "dry_run": false})
	assert.Equal(t, CodeTagBusy, errCode(busy), busy.Content)
	undo := e.bulk.UndoTagOperation(bg, caller("alice"), map[string]any{"operation_id": opID})
	assert.Equal(t, CodeOperationRunning, errCode(undo))

	close(release)
	e.bulk.Wait()
	op, _ := e.audit.Get(bg, opID)
	assert.Equal(t, gtc.AgentOpCompleted, op.Status)
	// Bob's preview stayed open through TAG_BUSY, so it still executes; every item changed
	// since it, so every item is skipped.
	after := e.bulk.ManageTags(bg, caller("bob"), map[string]any{"operation": "delete_tag", "tag": "topic:old", "dry_run": false})
	require.False(t, after.IsError, after.Content)
	e.bulk.Wait()
	bobOp, err := e.audit.Get(bg, dataOf(t, after)["operationId"].(string))
	require.NoError(t, err)
	assert.Equal(t, gtc.AgentOpCounts{Planned: 3, SkippedChanged: 3}, bobOp.Counts)
}

func TestConcurrentExecutionsOfOnePreview(t *testing.T) {
	e := newBulkEnv(t, BulkOptions{})
	for i := range 10 {
		e.add("ds", fmt.Sprintf("i%d", i), "q", "topic:old")
	}
	require.False(t, e.bulk.ManageTags(bg, caller("alice"), merge("topic:old", "topic:new", true)).IsError)
	var wg sync.WaitGroup
	codes := make([]string, 8)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = errCode(e.bulk.ManageTags(bg, caller("alice"), merge("topic:old", "topic:new", false)))
		}()
	}
	wg.Wait()
	e.bulk.Wait()
	ok := 0
	for _, c := range codes {
		if c == "" {
			ok++
		} else {
			assert.Contains(t, []string{CodeAlreadyExecuted, CodeBusy}, c)
		}
	}
	assert.Equal(t, 1, ok, "exactly one execution runs")
	ops, total, _ := e.audit.List(bg, gtc.AgentOpFilter{Limit: 10})
	assert.Equal(t, 1, total)
	assert.Equal(t, 10, ops[0].Counts.Applied)
}

func TestUndoChecks(t *testing.T) {
	e := newBulkEnv(t, BulkOptions{})
	e.add("ds", "a", "q", "topic:old")
	require.False(t, e.bulk.ManageTags(bg, caller("alice"), merge("topic:old", "topic:new", true)).IsError)
	opID := dataOf(t, e.bulk.ManageTags(bg, caller("alice"), merge("topic:old", "topic:new", false)))["operationId"].(string)

	r := e.bulk.UndoTagOperation(bg, caller("alice"), map[string]any{"operation_id": "op_01JDQ7Z3M8X9K2T5V6W7Y8A9BC"})
	assert.Equal(t, CodeNotFound, errCode(r))
	r = e.bulk.UndoTagOperation(bg, caller("bob"), map[string]any{"operation_id": opID})
	assert.Equal(t, CodeForbidden, errCode(r), "another user's operation")
	r = e.bulk.UndoTagOperation(bg, caller("bob", "admin"), map[string]any{"operation_id": opID})
	assert.False(t, r.IsError, r.Content)

	// An operation that changed nothing cannot be undone.
	e.add("ds", "b", "q", "topic:gone")
	require.False(t, e.bulk.ManageTags(bg, caller("alice"), map[string]any{"operation": "delete_tag", "tag": "topic:gone"}).IsError)
	e.edit(gtc.Key{DatasetName: "ds", Bucket: gtc.DeriveBucket("ds", "b"), ID: "b"}, "x", "")
	nop := dataOf(t, e.bulk.ManageTags(bg, caller("alice"), map[string]any{"operation": "delete_tag", "tag": "topic:gone", "dry_run": false}))["operationId"].(string)
	r = e.bulk.UndoTagOperation(bg, caller("alice"), map[string]any{"operation_id": nop})
	assert.Equal(t, CodeNothingToUndo, errCode(r))
}

func TestWriteRolesAndAttribution(t *testing.T) {
	e := newBulkEnv(t, BulkOptions{WriteRoles: []string{"curator-admin"}})
	e.add("ds", "a", "q", "topic:old")
	require.False(t, e.bulk.ManageTags(bg, caller("alice"), merge("topic:old", "topic:new", true)).IsError, "previews need no role")
	r := e.bulk.ManageTags(bg, caller("alice"), merge("topic:old", "topic:new", false))
	assert.Equal(t, CodeForbidden, errCode(r))
	r = e.bulk.ManageTags(bg, caller("alice", "curator-admin"), merge("topic:old", "topic:new", false))
	require.False(t, r.IsError, r.Content, "the preview stayed open after FORBIDDEN")
}

func TestRepairAfterCrash(t *testing.T) {
	e := newBulkEnv(t, BulkOptions{})
	a := e.add("ds", "a", "q", "topic:old")
	b := e.add("ds", "b", "q", "topic:old")
	// A crash after a's write landed and before its result was journaled: both items are
	// journaled as pending, only a was written.
	op := &gtc.AgentOperation{OperationID: "op_01JDQ7Z3M8X9K2T5V6W7Y8A9BC", Kind: "merge_tags", Actor: "alice", Args: []byte(`{}`),
		StartedAt: e.clock.Now(), Status: gtc.AgentOpRunning, Counts: gtc.AgentOpCounts{Planned: 3}}
	require.NoError(t, e.audit.Create(bg, op))
	pending := func(it *gtc.Item) gtc.AgentOpItem {
		return gtc.AgentOpItem{DatasetName: it.DatasetName, Bucket: it.Bucket, ID: it.ID, Result: gtc.AgentItemPending, ETagBefore: it.ETag,
			ManualTagsBefore: it.ManualTags, PlannedTags: []string{"topic:new"}}
	}
	require.NoError(t, e.audit.PutItems(bg, op.OperationID, 0, []gtc.AgentOpItem{pending(a), pending(b)}))
	written, err := e.cur.SetManualTags(bg, a.Key(), a.ETag, []string{"topic:new"})
	require.NoError(t, err)

	n, err := e.bulk.Repair(bg)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	got, _ := e.audit.Get(bg, op.OperationID)
	assert.Equal(t, gtc.AgentOpInterrupted, got.Status)
	assert.Equal(t, gtc.AgentOpCounts{Planned: 3, Applied: 1, NotAttempted: 2}, got.Counts)
	entries, _ := e.audit.Items(bg, op.OperationID, 0)
	assert.Equal(t, gtc.AgentItemApplied, entries[0].Result)
	assert.Equal(t, written.ETag, *entries[0].ETagAfter)
	assert.Equal(t, gtc.AgentItemNotAttempted, entries[1].Result)
}

// TestToolWritesNeverOverwriteCuratorEdits races curators' conditional saves against an
// execution: every item ends as its last successful writer left it, and no item the tool
// skipped shows the tool's change.
func TestToolWritesNeverOverwriteCuratorEdits(t *testing.T) {
	for round := range 5 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			e := newBulkEnv(t, BulkOptions{})
			var keys []gtc.Key
			for i := range 60 {
				keys = append(keys, e.add("ds", fmt.Sprintf("i%03d", i), "q", "topic:instal").Key())
			}
			require.False(t, e.bulk.ManageTags(bg, caller("alice"), merge("topic:instal", "topic:install", true)).IsError)
			e.clock.Advance(time.Second) // the rate limit lets the writes through in batches
			var wg sync.WaitGroup
			var mu sync.Mutex
			curatorWrote := map[gtc.Key]map[string]bool{} // ETags of the successful curator writes
			stop := make(chan struct{})
			for w := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for n := 0; ; n++ {
						select {
						case <-stop:
							return
						default:
						}
						k := keys[(n*7+w*13+round)%len(keys)]
						cur, err := e.store.Items().Get(bg, k)
						if err != nil {
							continue
						}
						next := cur.Clone()
						next.Comment = fmt.Sprintf("w%d-%d", w, n)
						if _, err := e.pipe.Prepare(next, append(slices.Clone(cur.ManualTags), "intent:action"), true); err != nil {
							continue
						}
						out, err := e.store.Items().Replace(bg, cur, next)
						if err == nil {
							mu.Lock()
							if curatorWrote[k] == nil {
								curatorWrote[k] = map[string]bool{}
							}
							curatorWrote[k][out.ETag] = true
							mu.Unlock()
						}
					}
				}()
			}
			r := e.bulk.ManageTags(bg, caller("alice"), merge("topic:instal", "topic:install", false))
			close(stop)
			wg.Wait()
			require.False(t, r.IsError, r.Content)
			t.Log(r.Content[:strings.Index(r.Content+"\n", "\n")])
			entries, _ := e.audit.Items(bg, dataOf(t, r)["operationId"].(string), 0)
			for _, en := range entries {
				it, err := e.store.Items().Get(bg, en.Key())
				require.NoError(t, err)
				switch en.Result {
				case gtc.AgentItemApplied:
					if it.ETag == *en.ETagAfter {
						assert.Equal(t, en.PlannedTags, it.ManualTags)
					} else {
						// A curator saved after the tool, on top of the tool's state.
						assert.Contains(t, it.ManualTags, "topic:install")
						assert.Contains(t, it.ManualTags, "intent:action")
					}
				case gtc.AgentItemSkippedChanged:
					assert.NotContains(t, it.ManualTags, "topic:install", "a skipped item never shows the tool's change")
					assert.Contains(t, it.ManualTags, "intent:action", "the curator's edit survives")
				default:
					t.Fatalf("unexpected result %s", en.Result)
				}
				if en.Result == gtc.AgentItemSkippedChanged {
					assert.True(t, curatorWrote[en.Key()][it.ETag], "a skipped item was last written by a curator, never by the tool")
				}
			}
		})
	}
}

// racingStore is a store whose batched item writes let a curator save first: race runs just
// before each ReplaceEach, after the tag save path has read the items it writes.
type racingStore struct {
	gtc.Store
	race func(pairs []gtc.Replacement)
}

func (s racingStore) Items() gtc.ItemStore { return racingItems{s.Store.Items(), s.race} }

type racingItems struct {
	gtc.ItemStore
	race func(pairs []gtc.Replacement)
}

func (s racingItems) ReplaceEach(ctx context.Context, pairs []gtc.Replacement) ([]*gtc.Item, []error) {
	s.race(pairs)
	return s.ItemStore.ReplaceEach(ctx, pairs)
}

// TestCuratorEditBetweenReadAndWriteWins saves a curator's edit of one item after the
// execution has read it and before its batch is written: the curator's edit stays whole,
// the item is reported as changed since the preview, and the rest of the batch is applied.
func TestCuratorEditBetweenReadAndWriteWins(t *testing.T) {
	e := newBulkEnv(t, BulkOptions{})
	var items []*gtc.Item
	for i := range 5 {
		items = append(items, e.add("ds", fmt.Sprintf("i%d", i), "q", "topic:old"))
	}
	target := items[2]
	batches := 0
	race := func(pairs []gtc.Replacement) {
		batches++
		for _, p := range pairs {
			if p.Prev.Key() == target.Key() {
				assert.Equal(t, target.ETag, p.Prev.ETag, "the item was read before the curator's edit")
				e.edit(target.Key(), "a curator's note", "intent:action")
			}
		}
	}
	e.saver.next = gtc.NewCurator(gtc.CuratorDeps{Store: racingStore{e.store, race}, Tagger: e.pipe, Clock: e.clock})

	require.False(t, e.bulk.ManageTags(bg, caller("alice"), merge("topic:old", "topic:new", true)).IsError)
	e.clock.Advance(time.Second) // the rate limit lets every write through at once: one batch
	r := e.bulk.ManageTags(bg, caller("alice"), merge("topic:old", "topic:new", false))
	require.False(t, r.IsError, r.Content)
	assert.Equal(t, 1, batches, "the five items are written as one batch")
	d := dataOf(t, r)
	assert.Equal(t, gtc.AgentOpCounts{Planned: 5, Applied: 4, SkippedChanged: 1}, d["counts"])
	assert.Contains(t, r.Content, "Skipped, changed since preview")

	got := e.get(target)
	assert.Equal(t, "a curator's note", got.Comment, "the curator's edit stands")
	assert.Equal(t, []string{"intent:action", "topic:old"}, got.ManualTags, "without the tool's change")
	entries, err := e.audit.Items(bg, d["operationId"].(string), 0)
	require.NoError(t, err)
	require.Len(t, entries, 5)
	for i, en := range entries {
		if en.Key() == target.Key() {
			assert.Equal(t, gtc.AgentItemSkippedChanged, en.Result)
			assert.Equal(t, reasonChanged, *en.Reason)
			assert.Nil(t, en.ETagAfter)
			continue
		}
		assert.Equal(t, gtc.AgentItemApplied, en.Result, "entry %d", i)
		assert.Equal(t, []string{"topic:new"}, e.get(items[i]).ManualTags)
	}
}

func TestToolWritesKeepEverythingButManualTags(t *testing.T) {
	e := newBulkEnv(t, BulkOptions{})
	// An approved item that fails today's approval rules (no agent turn) is still taggable.
	it := gtc.NewItem("ds", "legacy")
	it.History = []gtc.HistoryEntry{{Role: "user", Msg: "only a question"}}
	it.Status = gtc.StatusApproved
	reviewed := e.clock.Now().Add(-time.Hour)
	approver, assignee := "carol", "dave"
	it.ReviewedAt, it.UpdatedBy, it.AssignedTo = &reviewed, &approver, &assignee
	it.Comment = "keep me"
	created, err := e.cur.CreateItem(bg, it, []string{"topic:old"})
	require.NoError(t, err)

	e.clock.Advance(time.Minute)
	require.False(t, e.bulk.ManageTags(bg, caller("alice"), merge("topic:old", "topic:new", true)).IsError)
	r := e.bulk.ManageTags(bg, caller("alice"), merge("topic:old", "topic:new", false))
	require.False(t, r.IsError, r.Content)
	got := e.get(created)
	assert.Equal(t, []string{"topic:new"}, got.ManualTags)
	assert.Equal(t, created.ComputedTags, got.ComputedTags)
	assert.Equal(t, gtc.StatusApproved, got.Status)
	assert.Equal(t, reviewed, *got.ReviewedAt)
	assert.Equal(t, "carol", *got.UpdatedBy, "updatedBy (the approver) is untouched")
	assert.Equal(t, "dave", *got.AssignedTo)
	assert.Equal(t, "keep me", got.Comment)
	assert.Equal(t, e.clock.Now(), got.UpdatedAt)
}

// The previews kept are bounded: in all (GTC_AGENT_PREVIEW_CACHE_SIZE), in change entries
// across them (GTC_AGENT_PREVIEW_CACHE_ITEMS) and per caller (GTC_AGENT_PREVIEWS_PER_USER);
// the oldest go first, and an execution of one gone is NO_PREVIEW.
func TestPreviewCacheBounds(t *testing.T) {
	preview := func(t *testing.T, e *bulkEnv, user, from, to string) {
		t.Helper()
		r := e.bulk.ManageTags(bg, caller(user), merge(from, to, true))
		require.False(t, r.IsError, r.Content)
		require.NotNil(t, dataOf(t, r)["previewId"], r.Content)
		e.clock.Advance(time.Second)
	}
	t.Run("count", func(t *testing.T) {
		e := newBulkEnv(t, BulkOptions{CacheSize: 2})
		e.add("ds", "a", "q", "topic:old")
		for _, u := range []string{"a", "b", "c"} {
			preview(t, e, u, "topic:old", "topic:new")
		}
		assert.False(t, e.kept("a", "topic:old", "topic:new"), "the oldest goes first")
		assert.True(t, e.kept("b", "topic:old", "topic:new"))
		assert.True(t, e.kept("c", "topic:old", "topic:new"))
		r := e.bulk.ManageTags(bg, caller("a"), merge("topic:old", "topic:new", false))
		assert.Equal(t, CodeNoPreview, errCode(r), r.Content)
	})
	t.Run("entries", func(t *testing.T) {
		e := newBulkEnv(t, BulkOptions{CacheItems: 3})
		e.add("ds", "a", "q", "topic:old")
		e.add("ds", "b", "q", "topic:old")
		preview(t, e, "a", "topic:old", "topic:new") // 2 change entries
		preview(t, e, "b", "topic:old", "topic:new") // 4 in all
		assert.False(t, e.kept("a", "topic:old", "topic:new"))
		assert.True(t, e.kept("b", "topic:old", "topic:new"))
	})
	t.Run("per caller", func(t *testing.T) {
		e := newBulkEnv(t, BulkOptions{PerUser: 2})
		e.add("ds", "a", "q", "topic:old")
		preview(t, e, "a", "topic:old", "topic:one")
		preview(t, e, "b", "topic:old", "topic:one")
		preview(t, e, "a", "topic:old", "topic:two")
		preview(t, e, "a", "topic:old", "topic:three")
		assert.False(t, e.kept("a", "topic:old", "topic:one"))
		assert.True(t, e.kept("a", "topic:old", "topic:two"))
		assert.True(t, e.kept("a", "topic:old", "topic:three"))
		assert.True(t, e.kept("b", "topic:old", "topic:one"), "another caller's preview stays")
	})
	t.Run("re-preview replaces", func(t *testing.T) {
		e := newBulkEnv(t, BulkOptions{})
		e.add("ds", "a", "q", "topic:old")
		first := dataOf(t, e.bulk.ManageTags(bg, caller("alice"), merge("topic:old", "topic:new", true)))["previewId"]
		second := dataOf(t, e.bulk.ManageTags(bg, caller("alice"), merge("topic:old", "topic:new", true)))["previewId"]
		assert.NotEqual(t, first, second)
		r := e.bulk.ManageTags(bg, caller("alice"), merge("topic:old", "topic:new", false))
		require.False(t, r.IsError, r.Content)
		op, err := e.audit.Get(bg, dataOf(t, r)["operationId"].(string))
		require.NoError(t, err)
		assert.Equal(t, second, op.PreviewID, "the execution applies the second preview")
	})
}

// Expired previews are deleted by the repair, at most hourly, once they expired an hour
// before: until then an execution is told the preview expired, afterwards it has none.
func TestRepairDeletesExpiredPreviews(t *testing.T) {
	e := newBulkEnv(t, BulkOptions{})
	e.add("ds", "a", "q", "topic:old")
	require.False(t, e.bulk.ManageTags(bg, caller("alice"), merge("topic:old", "topic:new", true)).IsError)
	e.clock.Advance(16 * time.Minute)
	_, err := e.bulk.Repair(bg)
	require.NoError(t, err)
	r := e.bulk.ManageTags(bg, caller("alice"), merge("topic:old", "topic:new", false))
	assert.Equal(t, CodePreviewExpired, errCode(r), r.Content)

	e.clock.Advance(59*time.Minute + 30*time.Second) // expired an hour and 30 s ago
	_, err = e.bulk.Repair(bg)
	require.NoError(t, err)
	assert.True(t, e.kept("alice", "topic:old", "topic:new"), "the last sweep was less than an hour ago")
	e.clock.Advance(30 * time.Second)
	_, err = e.bulk.Repair(bg)
	require.NoError(t, err)
	assert.False(t, e.kept("alice", "topic:old", "topic:new"), "deleted")
	r = e.bulk.ManageTags(bg, caller("alice"), merge("topic:old", "topic:new", false))
	assert.Equal(t, CodeNoPreview, errCode(r), r.Content)
}

func TestShutdownInterruptsRunningExecutions(t *testing.T) {
	e := newBulkEnv(t, BulkOptions{ExecWait: time.Millisecond, ShutdownGrace: 50 * time.Millisecond})
	for i := range 30 {
		e.add("ds", fmt.Sprintf("i%02d", i), "q", "topic:old")
	}
	require.False(t, e.bulk.ManageTags(bg, caller("alice"), merge("topic:old", "topic:new", true)).IsError)
	var once sync.Once
	e.saver.before = func(gtc.Key, int) error {
		once.Do(func() { time.Sleep(200 * time.Millisecond) }) // the first write outlasts the grace
		return nil
	}
	r := e.bulk.ManageTags(bg, caller("alice"), merge("topic:old", "topic:new", false))
	opID := dataOf(t, r)["operationId"].(string)
	e.bulk.Close(bg)
	op, err := e.audit.Get(bg, opID)
	require.NoError(t, err)
	assert.Equal(t, gtc.AgentOpInterrupted, op.Status)
	assert.Positive(t, op.Counts.NotAttempted)
	assert.Equal(t, 30, op.Counts.Applied+op.Counts.NotAttempted)
	refused := e.bulk.ManageTags(bg, caller("bob"), map[string]any{"operation": "delete_tag", "tag": "topic:old", "dry_run": false})
	assert.Equal(t, CodeBusy, errCode(refused), "no new executions after Close")
}

func TestListFiltersAndRetention(t *testing.T) {
	e := newBulkEnv(t, BulkOptions{})
	e.add("ds", "a", "q", "topic:a", "topic:b")
	run := func(user string, args map[string]any) string {
		require.False(t, e.bulk.ManageTags(bg, caller(user), args).IsError)
		args["dry_run"] = false
		r := e.bulk.ManageTags(bg, caller(user), args)
		require.False(t, r.IsError, r.Content)
		e.clock.Advance(24 * time.Hour)
		return dataOf(t, r)["operationId"].(string)
	}
	old := run("alice", map[string]any{"operation": "delete_tag", "tag": "topic:a"})
	run("bob", map[string]any{"operation": "delete_tag", "tag": "topic:b"})
	mine := e.bulk.ListTagOperations(bg, caller("alice"), map[string]any{"mine_only": true, "limit": 10})
	assert.Equal(t, 1, dataOf(t, mine)["total"])
	byTag := e.bulk.ListTagOperations(bg, caller("carol"), map[string]any{"tag": " Topic:B ", "limit": 10})
	assert.Equal(t, 1, dataOf(t, byTag)["total"])
	assert.Contains(t, byTag.Content, "bob delete_tag 'topic:b' (all datasets): completed, 1 applied, 0 skipped")

	n, err := e.bulk.Retain(bg, 1) // alice's is two days old, bob's one
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	_, err = e.audit.Get(bg, old)
	assert.ErrorIs(t, err, gtc.ErrNotFound)
}

// slowItems is an item store whose queries last until the caller's deadline.
type slowItems struct{ gtc.ItemStore }

func (slowItems) QueryAll(ctx context.Context, _ gtc.Query) iter.Seq2[*gtc.Item, error] {
	return func(yield func(*gtc.Item, error) bool) {
		<-ctx.Done()
		yield(nil, ctx.Err())
	}
}

func TestSlowStorePreviewTimesOut(t *testing.T) {
	e := newBulkEnv(t, BulkOptions{})
	e.add("ds", "a", "q", "topic:old")
	slow := NewBulk(BulkDeps{Items: slowItems{readOnlyItems{e.store.Items()}}, Saver: e.saver, Audit: e.audit, Leases: e.store.Leases(), Previews: e.store.AgentPreviews(), Pipeline: e.pipe,
		Clock: e.clock, Known: func(context.Context) ([]string, error) { return e.known, nil }},
		BulkOptions{ToolTimeout: 50 * time.Millisecond})
	t.Cleanup(func() { slow.Close(bg) })
	r := slow.ManageTags(bg, caller("alice"), merge("topic:old", "topic:new", true))
	assert.Equal(t, CodeTimeout, errCode(r), r.Content)
	assert.Equal(t, "Timed out after 50ms while trying to work out the preview; nothing changed. Narrow the request (dataset, status, tags) and try again.", r.Content)
	assert.False(t, e.kept("alice", "topic:old", "topic:new"), "no preview is kept")
	assert.Equal(t, CodeNoPreview, errCode(slow.ManageTags(bg, caller("alice"), merge("topic:old", "topic:new", false))))
	assert.Equal(t, 0, e.saver.count(), "nothing was written")
}

// The rate limit hands out the writes that are due at once, up to the batch asked for, and
// makes a caller with none due wait for one.
func TestRateLimitBatches(t *testing.T) {
	clock := gtc.NewFakeClock(time.Date(2025, 11, 21, 10, 0, 0, 0, time.UTC))
	var slept time.Duration
	tb := newTokenBucket(50, clock, func(ctx context.Context, d time.Duration) error {
		slept += d
		clock.Advance(d)
		return ctx.Err()
	})
	n, err := tb.take(bg, 100)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the bucket starts empty: one write, after waiting for it")
	assert.Equal(t, 20*time.Millisecond, slept)

	clock.Advance(time.Second)
	slept = 0
	n, err = tb.take(bg, 100)
	require.NoError(t, err)
	assert.Equal(t, 50, n, "a second's writes at most, all at once")
	assert.Zero(t, slept)

	clock.Advance(500 * time.Millisecond)
	n, err = tb.take(bg, 10)
	require.NoError(t, err)
	assert.Equal(t, 10, n, "no more than asked for")
	n, err = tb.take(bg, 100)
	require.NoError(t, err)
	assert.Equal(t, 15, n, "the rest of what is due")
	assert.Zero(t, slept)

	ctx, cancel := context.WithCancel(bg)
	cancel()
	_, err = tb.take(ctx, 1)
	assert.ErrorIs(t, err, context.Canceled)
}
