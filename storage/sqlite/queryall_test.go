package sqlite

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	gtc "github.com/gtc-dev/gtc"
)

// QueryAll cuts its pages by the bytes of the documents as well as by count: with large
// items a page holds a few of them, and the pages together are still every match, in order,
// each once.
func TestQueryAllPagesAreBoundedByBytes(t *testing.T) {
	ctx := t.Context()
	clock := testClock()
	s := openTest(t, Options{Path: filepath.Join(t.TempDir(), "gtc.db"), Clock: clock})
	t.Cleanup(func() { _ = s.Close() })
	const budget = 64 << 10
	s.items.pageBytes = budget
	for i := range 40 {
		it := gtc.NewItem([]string{"a", "b"}[i%2], fmt.Sprintf("item-%02d", i))
		it.Bucket = gtc.DeriveBucket(it.DatasetName, it.ID)
		it.Status = []gtc.Status{gtc.StatusDraft, gtc.StatusApproved}[i%3%2]
		// 1 KiB to 40 KiB of multi-byte text: several items per page, and cuts at every
		// position of a page.
		it.Comment = strings.Repeat("é", (1+i%7*6)<<9)
		it.UpdatedAt = clock.Now().Add(time.Duration(i%5) * time.Minute)
		_, err := s.Items().Create(ctx, it)
		require.NoError(t, err)
	}
	queries := []gtc.Query{
		{Sort: gtc.SortID},
		{Sort: gtc.SortID, Desc: true},
		{Sort: gtc.SortRecent, Filter: gtc.Filter{DatasetNames: []string{"a"}}},
		{Sort: gtc.SortUpdatedAt, Desc: true, Filter: gtc.Filter{Statuses: []gtc.Status{gtc.StatusDraft}}},
	}
	for _, q := range queries {
		q.Limit = 1000
		want, err := s.Items().Query(ctx, q)
		require.NoError(t, err)
		require.NotEmpty(t, want.Items)
		var got []string
		for it, err := range s.Items().QueryAll(ctx, q) {
			require.NoError(t, err)
			got = append(got, it.ID)
		}
		var ids []string
		for _, it := range want.Items {
			ids = append(ids, it.ID)
		}
		assert.Equal(t, ids, got, "%+v: every match, in order, once", q)
	}

	// Page by page: every page but its last item stays under the budget.
	where, args, err := whereClause(gtc.Filter{})
	require.NoError(t, err)
	var afterKey string
	var afterPK int64
	pages, items := 0, 0
	for {
		p, err := s.items.queryAllPage(ctx, queryAllSQL(where, args, gtc.SortID, false, afterKey, afterPK), budget)
		require.NoError(t, err)
		pages++
		items += len(p.items)
		var bytes int
		for _, it := range p.items[:max(0, len(p.items)-1)] {
			bytes += len(it.CanonicalJSON())
		}
		assert.Less(t, bytes, budget, "page %d", pages)
		if !p.more {
			break
		}
		afterKey, afterPK = p.lastKey, p.lastPK
	}
	assert.Equal(t, 40, items)
	assert.Greater(t, pages, 10, "about 700 KiB of documents in pages of at most 64 KiB")
}
