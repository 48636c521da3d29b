package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/codec"
)

func (s *suite) retentionTests() []namedTest {
	return []namedTest{
		{"MaxRevisionsKeepsTheNewest", s.retentionMaxRevisions},
		{"AgeLimitKeepsTheLatest", s.retentionAge},
		{"SwitchedOffRecordsNothing", s.historyDisabled},
		{"MigrationRecordsARevision", s.migrationRevision},
	}
}

// openHistory returns a fresh store with history options o and its own clock, closed when
// the test ends; it skips when the backend cannot configure history.
func (s *suite) openHistory(t *testing.T, o gtc.HistoryOptions) (gtc.Store, *gtc.FakeClock) {
	t.Helper()
	if s.h.NewHistory == nil {
		t.Skip("the backend configures no history options")
	}
	clock := gtc.NewFakeClock(s.now())
	st := s.h.NewHistory(t, o, clock)
	require.NotNil(t, st)
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("%s: Close: %v", s.h.Name, err)
		}
	})
	return st, clock
}

// listAll returns every revision of the item, newest first.
func listAll(t *testing.T, st gtc.Store, ds, id string) []*gtc.Revision {
	t.Helper()
	page, err := st.Revisions().List(ctxT(t), ds, id, "", 100)
	require.NoError(t, err)
	require.Empty(t, page.Next)
	return page.Revisions
}

// numbers are the revision numbers of revs.
func numbers(revs []*gtc.Revision) []int64 {
	out := make([]int64, len(revs))
	for i, r := range revs {
		out[i] = r.Number
	}
	return out
}

// rebuild undoes, from the stored item, every revision above n and returns the document.
func rebuild(t *testing.T, st gtc.Store, cur *gtc.Item, n int64) []byte {
	t.Helper()
	doc := codec.ItemStoredJSON(cur)
	for r := cur.Revision; r > n; r-- {
		rev, err := st.Revisions().Get(ctxT(t), cur.DatasetName, cur.ID, r)
		require.NoError(t, err, "revision %d", r)
		doc, err = codec.ApplyStored(doc, rev.Ops, true)
		require.NoError(t, err, "undo revision %d", r)
	}
	return doc
}

// With at most 3 revisions, an item written 10 times lists exactly its 3 newest, the oldest
// of them marked as the first kept and carrying the item as it was after it; the pruned ones
// are gone, and every kept version can still be rebuilt.
func (s *suite) retentionMaxRevisions(t *testing.T) {
	st, _ := s.openHistory(t, gtc.HistoryOptions{MaxRevisions: 3})
	cur := create(t, st, s.item("ds", "max"))
	for i := 2; i <= 10; i++ {
		cur = replaceComment(t, ctxT(t), st, cur, fmt.Sprintf("edit %d", i))
	}
	require.Equal(t, int64(10), cur.Revision)
	revs := listAll(t, st, "ds", "max")
	require.Equal(t, []int64{10, 9, 8}, numbers(revs))
	oldest := revs[2]
	assert.Equal(t, int64(8), oldest.PrunedBefore)
	assert.Zero(t, revs[0].PrunedBefore)
	assert.Zero(t, revs[1].PrunedBefore)
	assert.Empty(t, revs[0].Base)
	require.NotEmpty(t, oldest.Base, "the oldest kept revision carries the whole item")
	was, err := codec.DecodeStoredItem(oldest.Base)
	require.NoError(t, err)
	assert.Equal(t, "edit 8", was.Comment)

	// Rebuilding version 8 from the current item gives the same content as its base.
	assert.JSONEq(t, string(oldest.Base), string(rebuild(t, st, cur, 8)))
	// Forward from the base, the later revisions give the current item.
	doc := []byte(oldest.Base)
	for _, r := range []*gtc.Revision{revs[1], revs[0]} {
		doc, err = codec.ApplyStored(doc, r.Ops, false)
		require.NoError(t, err)
	}
	now, err := codec.ApplyStored(codec.ItemStoredJSON(cur), nil, false)
	require.NoError(t, err)
	assert.JSONEq(t, string(now), string(doc))

	for _, n := range []int64{1, 5, 7} {
		_, err := st.Revisions().Get(ctxT(t), "ds", "max", n)
		assert.ErrorIs(t, err, gtc.ErrNotFound, "revision %d was pruned", n)
	}
	got, err := st.Revisions().Get(ctxT(t), "ds", "max", 8)
	require.NoError(t, err)
	assert.Equal(t, oldest.Base, got.Base)
	assert.Equal(t, int64(8), got.PrunedBefore)
}

// With an age limit, the revisions older than it go when the item is next written, however
// many; the latest always stays, and the oldest kept one carries the whole item.
func (s *suite) retentionAge(t *testing.T) {
	st, clock := s.openHistory(t, gtc.HistoryOptions{MaxAge: 48 * time.Hour})
	cur := create(t, st, s.item("ds", "age"))
	for i := 2; i <= 4; i++ {
		cur = replaceComment(t, ctxT(t), st, cur, fmt.Sprintf("old %d", i))
	}
	clock.Advance(24 * time.Hour)
	cur = replaceComment(t, ctxT(t), st, cur, "recent")
	assert.Equal(t, []int64{5, 4, 3, 2, 1}, numbers(listAll(t, st, "ds", "age")), "nothing is older than the limit yet")

	clock.Advance(36 * time.Hour) // revisions 1–4 are 60 h old, 5 is 36 h old
	cur = replaceComment(t, ctxT(t), st, cur, "new")
	revs := listAll(t, st, "ds", "age")
	require.Equal(t, []int64{6, 5}, numbers(revs))
	assert.Equal(t, int64(5), revs[1].PrunedBefore)
	assert.JSONEq(t, string(revs[1].Base), string(rebuild(t, st, cur, 5)))
	_, err := st.Revisions().Get(ctxT(t), "ds", "age", 4)
	assert.ErrorIs(t, err, gtc.ErrNotFound)

	clock.Advance(30 * 24 * time.Hour) // everything is old; the write's own revision stays
	cur = replaceComment(t, ctxT(t), st, cur, "much later")
	revs = listAll(t, st, "ds", "age")
	require.Equal(t, []int64{7}, numbers(revs))
	assert.Equal(t, int64(7), revs[0].PrunedBefore)
	was, err := codec.DecodeStoredItem(revs[0].Base)
	require.NoError(t, err)
	assert.Equal(t, "much later", was.Comment)
	assert.Equal(t, cur.Revision, int64(7))
}

// With history switched off, writes record no revision but still number the item, so
// switching it on again continues the numbering: the history shows the gap, an earlier
// version across it is not found, and the versions after it can be rebuilt.
func (s *suite) historyDisabled(t *testing.T) {
	st, _ := s.openHistory(t, gtc.HistoryOptions{Disabled: true})
	cur := create(t, st, s.item("ds", "off"))
	cur = replaceComment(t, ctxT(t), st, cur, "unrecorded")
	assert.Equal(t, int64(2), cur.Revision)
	assert.Empty(t, listAll(t, st, "ds", "off"))
	_, err := st.Revisions().Get(ctxT(t), "ds", "off", 1)
	assert.ErrorIs(t, err, gtc.ErrNotFound)
}

// After a ReplaceRaw of a current item (gtc migrate rewriting its document), the history
// has a revision of source migrate with the change, numbered after the item's last one.
func (s *suite) migrationRevision(t *testing.T) {
	st := s.open(t)
	cur := create(t, st, s.item("ds", "mig"))
	page, err := st.Maintenance().ScanRaw(ctxT(t), []string{"ds"}, "", 10)
	require.NoError(t, err)
	require.Len(t, page.Docs, 1)
	raw := page.Docs[0]
	require.Equal(t, "mig", raw.ID)
	body := map[string]any{}
	for k, v := range raw.Body {
		body[k] = v
	}
	body["comment"] = "migrated"
	out, err := st.Maintenance().ReplaceRaw(ctxT(t), raw, body)
	require.NoError(t, err)
	now := get(t, st, cur.Key())
	assert.Equal(t, "migrated", now.Comment)
	assert.Equal(t, int64(2), now.Revision)
	assert.Equal(t, out.ETag, now.ETag)

	revs := listAll(t, st, "ds", "mig")
	require.Equal(t, []int64{2, 1}, numbers(revs))
	assert.Equal(t, gtc.SourceMigrate, revs[0].Source)
	assert.Equal(t, []string{"/comment"}, revs[0].Paths())
	assert.Equal(t, cur.ETag, revs[0].ETagBefore)
	assert.Equal(t, now.ETag, revs[0].ETagAfter)
	was, err := codec.DecodeStoredItem(rebuild(t, st, now, 1))
	require.NoError(t, err)
	assert.Equal(t, "", was.Comment)
}
