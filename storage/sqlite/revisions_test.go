package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	gtc "github.com/gtc-dev/gtc"
)

// revisionsSeen is everything the revision reads give for the items ids: every page of the
// list, in pages of three, and every revision by its number, whether kept or not.
func revisionsSeen(t *testing.T, s *Store, ids []string, upTo map[string]int64) map[string][]string {
	t.Helper()
	ctx := context.Background()
	out := map[string][]string{}
	for _, id := range ids {
		var seen []string
		cursor := ""
		for {
			page, err := s.Revisions().List(ctx, "ds", id, cursor, 3)
			require.NoError(t, err)
			for _, r := range page.Revisions {
				seen = append(seen, fmt.Sprintf("list %d %s %s %d %d", r.Number, r.Source, r.ETagAfter, r.PrunedBefore, len(r.Ops)))
			}
			if page.Next == "" {
				break
			}
			cursor = page.Next
		}
		for n := int64(1); n <= upTo[id]; n++ {
			r, err := s.Revisions().Get(ctx, "ds", id, n)
			if err != nil {
				require.ErrorIs(t, err, gtc.ErrNotFound)
				seen = append(seen, fmt.Sprintf("get %d: not found", n))
				continue
			}
			seen = append(seen, fmt.Sprintf("get %d %s %d %s", r.Number, r.ETagBefore, len(r.Base), r.At.Format(time.RFC3339Nano)))
		}
		out[id] = seen
	}
	return out
}

// A store of schema version 5 kept the revisions in an index by item; version 6 links each
// item's revisions into a list. After the upgrade every item lists and gets exactly the
// revisions it did before, pruned ones included, and later writes continue each list.
func TestSchemaV6LinksTheRevisionsOfAVersion5Store(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "gtc.db")
	clock := testClock()
	// At most four revisions an item: the items written more often have pruned ones, and
	// their oldest kept revision carries the item.
	opts := Options{Path: path, Clock: clock, History: gtc.HistoryOptions{MaxRevisions: 4}}
	s := openTest(t, opts)
	r := rand.New(rand.NewPCG(6, 6))
	var ids []string
	upTo := map[string]int64{}
	cur := map[string]*gtc.Item{}
	for i := range 40 {
		it := gtc.NewItem("ds", "item-"+strconv.Itoa(i))
		it.Bucket = gtc.DeriveBucket("ds", it.ID)
		it.UpdatedAt = clock.Now()
		c, err := s.Items().Create(ctx, it)
		require.NoError(t, err)
		ids, cur[it.ID] = append(ids, it.ID), c
	}
	// Writes of all items interleave, as they do in use: no item's revisions are adjacent.
	for range 160 {
		id := ids[r.IntN(len(ids))]
		next := *cur[id]
		next.Comment = fmt.Sprintf("edit %d", r.IntN(1000))
		clock.Advance(time.Minute)
		c, err := s.Items().Replace(ctx, cur[id], &next)
		require.NoError(t, err)
		cur[id] = c
	}
	for _, id := range ids {
		upTo[id] = cur[id].Revision
	}
	before := revisionsSeen(t, s, ids, upTo)
	pruned := 0
	for _, id := range ids {
		if upTo[id] > 4 {
			pruned++
		}
	}
	require.Greater(t, pruned, 10, "the fixture has items with pruned revisions")
	require.NoError(t, s.Close())

	// The file as version 5 leaves it: no list columns, the revisions indexed by item, and
	// nothing of the later versions.
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	for _, stmt := range []string{
		`DROP TABLE leases`,
		`DROP TABLE jobs`,
		`DROP TABLE agent_previews`,
		`ALTER TABLE items DROP COLUMN rev_head`,
		`ALTER TABLE item_revisions DROP COLUMN prev`,
		`CREATE UNIQUE INDEX item_revisions_by_item ON item_revisions (dataset_name, id, n)`,
		`PRAGMA user_version = 5`,
	} {
		_, err := db.Exec(stmt)
		require.NoError(t, err, stmt)
	}
	require.NoError(t, db.Close())

	s = openTest(t, opts)
	t.Cleanup(func() { _ = s.Close() })
	var v, indexes int
	require.NoError(t, s.rdb.QueryRow("PRAGMA user_version").Scan(&v))
	assert.Equal(t, SchemaVersion, v)
	require.NoError(t, s.rdb.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE name = 'item_revisions_by_item'`).Scan(&indexes))
	assert.Zero(t, indexes, "the index by item is gone")
	assert.Equal(t, before, revisionsSeen(t, s, ids, upTo), "every revision reads as before the upgrade")

	// A write after the upgrade continues the item's list, and retention still prunes it.
	id := ids[0]
	for range 5 {
		next := *cur[id]
		next.Comment += "+"
		c, err := s.Items().Replace(ctx, cur[id], &next)
		require.NoError(t, err)
		cur[id] = c
	}
	page, err := s.Revisions().List(ctx, "ds", id, "", 10)
	require.NoError(t, err)
	n := cur[id].Revision
	require.Len(t, page.Revisions, 4)
	for i, rev := range page.Revisions {
		assert.Equal(t, n-int64(i), rev.Number)
	}
	assert.Equal(t, n-3, page.Revisions[3].PrunedBefore, "the oldest kept revision carries the item")
	var rows int
	require.NoError(t, s.rdb.QueryRow(`SELECT count(*) FROM item_revisions WHERE dataset_name = 'ds' AND id = ?`, id).Scan(&rows))
	assert.Equal(t, 4, rows, "the pruned revisions are deleted, not only unlinked")
}

// A page after a cursor walks on from the cursor's revision. Whatever the cursor, a number
// alone, one whose revision has been pruned since, or one naming another item's revision,
// the page is the same as the listing from the newest gives.
func TestRevisionCursorsGiveTheSamePages(t *testing.T) {
	ctx := context.Background()
	clock := testClock()
	s := openTest(t, Options{Path: filepath.Join(t.TempDir(), "gtc.db"), Clock: clock, History: gtc.HistoryOptions{MaxRevisions: 20}})
	t.Cleanup(func() { _ = s.Close() })
	cur := map[string]*gtc.Item{}
	for _, id := range []string{"a", "b"} {
		it := gtc.NewItem("ds", id)
		it.Bucket = gtc.DeriveBucket("ds", id)
		c, err := s.Items().Create(ctx, it)
		require.NoError(t, err)
		cur[id] = c
	}
	edit := func(id string) {
		t.Helper()
		next := *cur[id]
		next.Comment += "."
		c, err := s.Items().Replace(ctx, cur[id], &next)
		require.NoError(t, err)
		cur[id] = c
	}
	for range 16 { // interleaved, so neither item's revisions are adjacent rows
		edit("a")
		edit("b")
	}
	numbersOf := func(page gtc.RevisionPage) []int64 {
		var ns []int64
		for _, r := range page.Revisions {
			ns = append(ns, r.Number)
		}
		return ns
	}
	list := func(id, cursor string, limit int) gtc.RevisionPage {
		t.Helper()
		page, err := s.Revisions().List(ctx, "ds", id, cursor, limit)
		require.NoError(t, err, "cursor %q", cursor)
		return page
	}
	all := numbersOf(list("a", "", 100))
	require.Len(t, all, 17)

	var paged []int64
	cursors := []string{}
	for cursor := ""; ; {
		page := list("a", cursor, 5)
		paged = append(paged, numbersOf(page)...)
		if page.Next == "" {
			break
		}
		cursor = page.Next
		cursors = append(cursors, cursor)
	}
	assert.Equal(t, all, paged, "pages of five, one after the other")
	require.Len(t, cursors, 3)

	num, _, ok := strings.Cut(cursors[0], ".")
	require.True(t, ok, "a cursor names its revision's rowid: %q", cursors[0])
	assert.Equal(t, numbersOf(list("a", cursors[0], 5)), numbersOf(list("a", num, 5)), "the number alone")
	nextB := list("b", "", 5).Next
	require.True(t, strings.HasPrefix(nextB, num+"."), "%s, %s", nextB, num)
	_, ridB, _ := strings.Cut(nextB, ".")
	// b's revision of the same number: the page is a's all the same (ETags tell them apart).
	assert.Equal(t, list("a", num, 5).Revisions, list("a", num+"."+ridB, 5).Revisions, "another item's rowid")

	// Six more edits with at most 20 revisions keep revisions 4 to 23: the revision of the
	// last cursor (3) is pruned, and with it every one older.
	last := cursors[2]
	require.True(t, strings.HasPrefix(last, "3."), last)
	for range 6 {
		edit("a")
	}
	require.Len(t, list("a", "", 100).Revisions, 20)
	assert.Equal(t, gtc.RevisionPage{}, list("a", last, 5), "a cursor whose revision was pruned: nothing older is left")
	assert.Equal(t, []int64{7, 6, 5, 4}, numbersOf(list("a", cursors[1], 5)), "the cursor before it still reads")

	for _, bad := range []string{"abc", "0", "3.", "3.x", "3.0", "-1.4", ".5"} {
		_, err := s.Revisions().List(ctx, "ds", "a", bad, 5)
		assert.ErrorIs(t, err, gtc.ErrInvalidArgument, "cursor %q", bad)
	}
}
