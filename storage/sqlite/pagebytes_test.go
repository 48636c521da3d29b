package sqlite

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	gtc "github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/codec"
)

// QueryAll cuts its pages by the bytes of the documents as well as by count: with large
// items a page holds a few of them, and the pages together are still every match, in order,
// each once.
func TestQueryAllPagesAreBoundedByBytes(t *testing.T) {
	ctx := t.Context()
	s := largeItemsStore(t)
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
		p, err := s.items.queryAllPage(ctx, queryAllSQL(where, args, gtc.SortID, false, afterKey, afterPK), pageBudget)
		require.NoError(t, err)
		pages++
		items += len(p.items)
		var bytes int
		for _, it := range p.items[:max(0, len(p.items)-1)] {
			bytes += len(codec.ItemStoredJSON(it))
		}
		assert.Less(t, bytes, pageBudget, "page %d", pages)
		if !p.more {
			break
		}
		afterKey, afterPK = p.lastKey, p.lastPK
	}
	assert.Equal(t, 40, items)
	assert.Greater(t, pages, 10, "about 700 KiB of documents in pages of at most 64 KiB")
}

// pageBudget is the page budget of largeItemsStore.
const pageBudget = 64 << 10

// largeItemsStore holds 40 items of 1 KiB to 40 KiB (about 700 KiB in all) over two
// datasets, with pages bounded at pageBudget bytes of documents: several items per page,
// and cuts at every position of a page.
func largeItemsStore(t *testing.T) *Store {
	t.Helper()
	clock := testClock()
	s := openTest(t, Options{Path: filepath.Join(t.TempDir(), "gtc.db"), Clock: clock})
	t.Cleanup(func() { _ = s.Close() })
	s.items.pageBytes = pageBudget
	for i := range 40 {
		it := gtc.NewItem([]string{"a", "b"}[i%2], fmt.Sprintf("item-%02d", i))
		it.Bucket = gtc.DeriveBucket(it.DatasetName, it.ID)
		it.Status = []gtc.Status{gtc.StatusDraft, gtc.StatusApproved}[i%3%2]
		it.Comment = strings.Repeat("é", (1+i%7*6)<<9) // multi-byte text: bytes, not characters
		it.UpdatedAt = clock.Now().Add(time.Duration(i%5) * time.Minute)
		_, err := s.Items().Create(t.Context(), it)
		require.NoError(t, err)
	}
	return s
}

// A scan batch ends at limit items or at the item whose documents reach the page budget;
// the batches together are the whole scan, in order, and only the last has no Next.
func TestScanPagesAreBoundedByBytes(t *testing.T) {
	ctx := t.Context()
	s := largeItemsStore(t)
	for _, spec := range []gtc.ScanSpec{
		{Order: gtc.ByDatasetID},
		{Order: gtc.AnyOrder},
		{Order: gtc.ByDatasetID, Statuses: []gtc.Status{gtc.StatusApproved}, DatasetNames: []string{"b"}},
	} {
		q := gtc.Query{Filter: gtc.Filter{Statuses: spec.Statuses, DatasetNames: spec.DatasetNames}, Sort: gtc.SortID, Limit: 1000}
		all, err := s.Items().Query(ctx, q)
		require.NoError(t, err)
		var want []string
		for _, it := range all.Items {
			want = append(want, it.DatasetName+"/"+it.ID)
		}
		slices.Sort(want) // (datasetName, id) order
		for _, limit := range []int{3, 1000} {
			var got []string
			cursor, pages := "", 0
			for {
				page, err := s.Items().Scan(ctx, spec, cursor, limit)
				require.NoError(t, err)
				pages++
				require.LessOrEqual(t, len(page.Items), limit)
				var bytes int
				for _, it := range page.Items {
					got = append(got, it.DatasetName+"/"+it.ID)
				}
				for _, it := range page.Items[:max(0, len(page.Items)-1)] {
					bytes += len(codec.ItemStoredJSON(it))
				}
				assert.Less(t, bytes, pageBudget, "%+v limit %d page %d", spec, limit, pages)
				if page.Next == "" {
					break
				}
				require.NotEmpty(t, page.Items, "a page with a Next cursor is not empty")
				cursor = page.Next
			}
			if spec.Order == gtc.AnyOrder {
				assert.ElementsMatch(t, want, got, "%+v limit %d", spec, limit)
			} else {
				assert.Equal(t, want, got, "%+v limit %d: every item, in order, once", spec, limit)
			}
			if limit == 1000 && len(spec.Statuses) == 0 {
				assert.Greater(t, pages, 10, "about 700 KiB of documents in batches of at most 64 KiB")
			}
		}
	}
}
