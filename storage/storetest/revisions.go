package storetest

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/codec"
)

func (s *suite) revisionTests() []namedTest {
	return []namedTest{
		{"RecordedWithEveryWrite", s.revisionsRecorded},
		{"NothingRecordedWithoutAWrite", s.revisionsNotWithoutWrite},
		{"ConcurrentWritersNumberInTurn", s.revisionsConcurrent},
		{"PagesNewestFirst", s.revisionsPaging},
		{"GoWithTheDataset", s.revisionsDeletedWithDataset},
	}
}

// changeCtx is a context whose writes are recorded as made by user through source.
func changeCtx(t *testing.T, user, source string) context.Context {
	return gtc.WithChange(gtc.WithCaller(ctxT(t), gtc.Caller{UserID: user}), gtc.Change{Source: source})
}

// replaceComment writes a new comment over cur and returns the stored item.
func replaceComment(t *testing.T, ctx context.Context, st gtc.Store, cur *gtc.Item, comment string) *gtc.Item {
	t.Helper()
	next := cur.Clone()
	next.Comment = comment
	out, err := st.Items().Replace(ctx, cur, next)
	require.NoError(t, err)
	return out
}

// A create records revision 1 with the whole item, each replace the next one with the
// changed paths; actor and source come from the context, the ETags chain.
func (s *suite) revisionsRecorded(t *testing.T) {
	st := s.open(t)
	created, err := st.Items().Create(changeCtx(t, "importer", gtc.SourceImport), s.item("ds", "r1"))
	require.NoError(t, err)
	assert.Equal(t, int64(1), created.Revision)
	edited := replaceComment(t, changeCtx(t, "alice", gtc.SourceAPI), st, created, "checked")
	assert.Equal(t, int64(2), edited.Revision)

	r1, err := st.Revisions().Get(ctxT(t), "ds", "r1", 1)
	require.NoError(t, err)
	assert.Equal(t, "importer", r1.Actor)
	assert.Equal(t, gtc.SourceImport, r1.Source)
	assert.Equal(t, []string{""}, r1.Paths())
	assert.Empty(t, r1.ETagBefore)
	assert.Equal(t, created.ETag, r1.ETagAfter)

	r2, err := st.Revisions().Get(ctxT(t), "ds", "r1", 2)
	require.NoError(t, err)
	assert.Equal(t, "alice", r2.Actor)
	assert.Equal(t, gtc.SourceAPI, r2.Source)
	assert.Equal(t, []string{"/comment"}, r2.Paths())
	assert.Equal(t, created.ETag, r2.ETagBefore)
	assert.Equal(t, edited.ETag, r2.ETagAfter)
	assert.False(t, r2.At.Before(r1.At))

	// Undoing revision 2 on the stored item gives back revision 1's content.
	before, err := codec.ApplyStored(codec.ItemStoredJSON(get(t, st, created.Key())), r2.Ops, true)
	require.NoError(t, err)
	was, err := codec.DecodeStoredItem(before)
	require.NoError(t, err)
	assert.Equal(t, "", was.Comment)

	_, err = st.Revisions().Get(ctxT(t), "ds", "r1", 3)
	assert.ErrorIs(t, err, gtc.ErrNotFound)
	page, err := st.Revisions().List(ctxT(t), "ds", "unknown", "", 10)
	require.NoError(t, err)
	assert.Empty(t, page.Revisions, "an item without revisions has an empty history")
}

// A refused write records nothing: a stale ETag, a duplicate create, an item too large.
func (s *suite) revisionsNotWithoutWrite(t *testing.T) {
	st := s.open(t)
	cur := create(t, st, s.item("ds", "r2"))
	edited := replaceComment(t, ctxT(t), st, cur, "first")
	stale := cur.Clone()
	stale.Comment = "lost"
	_, err := st.Items().Replace(ctxT(t), cur, stale)
	require.ErrorIs(t, err, gtc.ErrPreconditionFailed)
	_, err = st.Items().Create(ctxT(t), s.item("ds", "r2"))
	require.Error(t, err)
	big := edited.Clone()
	big.Comment = string(make([]byte, gtc.MaxItemBytes))
	_, err = st.Items().Replace(ctxT(t), edited, big)
	require.ErrorIs(t, err, gtc.ErrTooLarge)

	page, err := st.Revisions().List(ctxT(t), "ds", "r2", "", 10)
	require.NoError(t, err)
	require.Len(t, page.Revisions, 2)
	assert.Equal(t, int64(2), page.Revisions[0].Number)
}

// Writers racing on one item: each acknowledged write has exactly one revision, numbered
// without gaps, each starting from the ETag the one before ended with.
func (s *suite) revisionsConcurrent(t *testing.T) {
	st := s.open(t)
	k := create(t, st, s.item("ds", "r3")).Key()
	var wg sync.WaitGroup
	var mu sync.Mutex
	acked := 0
	for w := range 4 {
		wg.Go(func() {
			for i := range 5 {
				_, err := gtc.Update(ctxT(t), st.Items(), k, func(cur *gtc.Item) (*gtc.Item, error) {
					cur.Comment = string(rune('a'+w)) + string(rune('0'+i))
					return cur, nil
				})
				if err == nil {
					mu.Lock()
					acked++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	final := get(t, st, k)
	require.Equal(t, int64(1+acked), final.Revision)
	page, err := st.Revisions().List(ctxT(t), "ds", "r3", "", 100)
	require.NoError(t, err)
	require.Len(t, page.Revisions, 1+acked)
	for i, r := range page.Revisions {
		assert.Equal(t, int64(len(page.Revisions)-i), r.Number)
		if i > 0 {
			assert.Equal(t, r.ETagAfter, page.Revisions[i-1].ETagBefore, "revision %d", r.Number)
		}
	}
	assert.Equal(t, final.ETag, page.Revisions[0].ETagAfter)
}

func (s *suite) revisionsPaging(t *testing.T) {
	st := s.open(t)
	cur := create(t, st, s.item("ds", "r4"))
	for i := range 4 {
		cur = replaceComment(t, ctxT(t), st, cur, string(rune('a'+i)))
	}
	var got []int64
	cursor := ""
	for range 5 {
		page, err := st.Revisions().List(ctxT(t), "ds", "r4", cursor, 2)
		require.NoError(t, err)
		for _, r := range page.Revisions {
			got = append(got, r.Number)
		}
		if cursor = page.Next; cursor == "" {
			break
		}
	}
	assert.Equal(t, []int64{5, 4, 3, 2, 1}, got)
}

func (s *suite) revisionsDeletedWithDataset(t *testing.T) {
	st := s.open(t)
	cur := create(t, st, s.item("gone", "r5"))
	replaceComment(t, ctxT(t), st, cur, "x")
	keep := create(t, st, s.item("kept", "r5"))
	_, err := st.Items().DeleteDataset(ctxT(t), "gone")
	require.NoError(t, err)
	page, err := st.Revisions().List(ctxT(t), "gone", "r5", "", 10)
	require.NoError(t, err)
	assert.Empty(t, page.Revisions)
	again := create(t, st, s.item("gone", "r5"))
	assert.Equal(t, int64(1), again.Revision, "a re-created item starts a new history")
	page, err = st.Revisions().List(ctxT(t), "kept", keep.ID, "", 10)
	require.NoError(t, err)
	assert.Len(t, page.Revisions, 1)
}
