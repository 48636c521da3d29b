package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	gtc "github.com/gtc-dev/gtc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// When one item fails inside a chunk of ReplaceEach for a reason other than a lost race, the
// chunk is undone as a whole and its items are written one at a time: every other item is
// written once, with one revision, and only the failing one gets the error.
func TestReplaceEachChunkFailureFallsBackToSingleWrites(t *testing.T) {
	s := openTest(t, Options{Path: filepath.Join(t.TempDir(), "gtc.db")})
	defer s.Close()
	ctx := context.Background()
	var fresh []*gtc.Item
	for i := range 10 {
		it := gtc.NewItem("ds", fmt.Sprintf("it-%d", i))
		it.Bucket = gtc.DeriveBucket("ds", it.ID)
		it.ManualTags = []string{"topic:old"}
		fresh = append(fresh, it)
	}
	require.NoError(t, s.items.createMany(ctx, fresh))
	// The database itself refuses the one write whose comment asks for it.
	_, err := s.wdb.ExecContext(ctx, `CREATE TRIGGER refuse_marked BEFORE UPDATE ON items
  WHEN NEW.doc LIKE '%refuse me%' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`)
	require.NoError(t, err)

	pairs := make([]gtc.Replacement, len(fresh))
	for i, it := range fresh {
		cur, err := s.Items().Get(ctx, it.Key())
		require.NoError(t, err)
		next := cur.Clone()
		next.ManualTags = []string{"topic:new"}
		if i == 6 {
			next.Comment = "refuse me"
		}
		pairs[i] = gtc.Replacement{Prev: cur, Next: next}
	}
	out, errs := s.Items().ReplaceEach(ctx, pairs)
	for i, p := range pairs {
		got, err := s.Items().Get(ctx, p.Prev.Key())
		require.NoError(t, err)
		page, err := s.Revisions().List(ctx, "ds", p.Prev.ID, "", 10)
		require.NoError(t, err)
		if i == 6 {
			require.Error(t, errs[i])
			assert.Contains(t, errs[i].Error(), "refused by the test")
			assert.Nil(t, out[i])
			assert.Equal(t, p.Prev.ETag, got.ETag, "the refused item is untouched")
			assert.Len(t, page.Revisions, 1)
			continue
		}
		require.NoError(t, errs[i], "item %d", i)
		assert.Equal(t, out[i].ETag, got.ETag)
		assert.Equal(t, []string{"topic:new"}, got.ManualTags)
		assert.Len(t, page.Revisions, 2, "item %d: written once", i)
	}
	counts, err := s.items.CountTags(ctx, gtc.TagCountSpec{})
	require.NoError(t, err)
	assert.Equal(t, 9, counts.Tags["topic:new"], "the tag counter saw each write once")
	assert.Equal(t, 1, counts.Tags["topic:old"])
}

// A bulk write is not counted among the waiting writes the writer expects, so it never makes
// the writer hold later batches open for company.
func TestBulkWritesAreNotExpected(t *testing.T) {
	s := openTest(t, Options{Path: filepath.Join(t.TempDir(), "gtc.db")})
	defer s.Close()
	ctx := context.Background()
	for range 3 {
		require.NoError(t, s.writeBulk(ctx, "bulk", func(*wtx) error { return nil }))
	}
	assert.Zero(t, s.peak.Load(), "bulk writes raise no peak")
	require.NoError(t, s.write(ctx, "single", func(*wtx) error { return nil }))
	assert.EqualValues(t, 1, s.peak.Load(), "a single write does")
	assert.Zero(t, s.waiting.Load())
}

// The statements of ReplaceEach look each item up by index.
func TestReplaceEachStatementsUseIndexes(t *testing.T) {
	s := openTest(t, Options{Path: filepath.Join(t.TempDir(), "gtc.db")})
	defer s.Close()
	plan := strings.Join(explain(t, s.wdb, sqlText{SQL: currentOfEachSQL, Args: []any{`[["ds","a"]]`}}), "\n")
	assert.Contains(t, plan, "SEARCH items USING INDEX sqlite_autoindex_items_1 (dataset_name=? AND id=?)")
	plan = strings.Join(explain(t, s.wdb, sqlText{SQL: deleteTagsSQL, Args: []any{`[[1,"a"]]`}}), "\n")
	assert.Contains(t, plan, "SEARCH item_tags USING COVERING INDEX item_tags_item (item_pk=? AND tag=?)")
}
