package history

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/storage/sqlite"
)

// An item with more revisions than a page: every earlier version is rebuilt exactly, with
// the ETag it had, across page boundaries.
func TestAtRebuildsEveryVersionAcrossPages(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Options{Path: filepath.Join(t.TempDir(), "gtc.db"), Synchronous: "NORMAL"})
	require.NoError(t, err)
	defer st.Close()
	it := gtc.NewItem("ds", "q1")
	it.Bucket = gtc.DeriveBucket("ds", "q1")
	it.History = []gtc.HistoryEntry{{Role: "user", Msg: "version 1"}}
	cur, err := st.Items().Create(ctx, it)
	require.NoError(t, err)
	want := map[int64]*gtc.Item{1: cur}
	for n := int64(2); n <= 2*MaxLimit+50; n++ {
		next := cur.Clone()
		next.History[0].Msg = fmt.Sprintf("version %d", n)
		if n%7 == 0 {
			next.ManualTags = append(next.ManualTags, fmt.Sprintf("pass:%d", n))
		}
		cur, err = st.Items().Replace(ctx, cur, next)
		require.NoError(t, err)
		want[n] = cur
	}
	for _, n := range []int64{1, 2, MaxLimit, MaxLimit + 1, 2*MaxLimit + 49, 2*MaxLimit + 50} {
		got, err := at(ctx, st.Revisions(), cur, n)
		require.NoError(t, err, "revision %d", n)
		assert.Equal(t, want[n], got, "revision %d", n)
	}
	// Several versions in one walk, in the order asked.
	its, err := versions(ctx, st.Revisions(), cur, MaxLimit+1, 1, cur.Revision)
	require.NoError(t, err)
	assert.Equal(t, []*gtc.Item{want[MaxLimit+1], want[1], want[cur.Revision]}, its)
	_, err = at(ctx, st.Revisions(), cur, 0)
	assert.ErrorContains(t, err, "has no revision 0")
	_, err = at(ctx, st.Revisions(), cur, cur.Revision+1)
	assert.ErrorContains(t, err, "has no revision")
}
