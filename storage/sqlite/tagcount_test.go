package sqlite

import (
	"context"
	crand "crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	gtc "github.com/gtc-dev/gtc"
	gtcmigrate "github.com/gtc-dev/gtc/migrate"
	"github.com/gtc-dev/gtc/storage/storetest/testenv"
	"github.com/gtc-dev/gtc/tagging"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tagCountSpecs are the selections the index count is checked on: every dataset and status
// alone and together, a dataset no item has, and no computed tags at all.
func tagCountSpecs(reg *tagging.Registry) []gtc.TagCountSpec {
	base := gtc.TagCountSpec{ComputedKeys: reg.StaticKeys(), ComputedPrefixes: reg.DynamicPrefixes()}
	specs := []gtc.TagCountSpec{base, {}}
	for _, ds := range append(tagFixtureDatasets, "no-such-dataset") {
		s := base
		s.DatasetName = ds
		specs = append(specs, s)
		for _, st := range gtc.Statuses {
			s.Status = st
			specs = append(specs, s)
		}
	}
	for _, st := range gtc.Statuses {
		s := base
		s.Status = st
		specs = append(specs, s)
	}
	return specs
}

func specName(s gtc.TagCountSpec) string {
	return fmt.Sprintf("dataset=%q status=%q computed=%d", s.DatasetName, s.Status, len(s.ComputedKeys))
}

// assertTagCountsExact checks tag_counts against item_tags itself: one row per (tag,
// dataset_name, status) some item carries, with the number of its rows, and nothing else.
func assertTagCountsExact(t *testing.T, db *sql.DB, when string) {
	t.Helper()
	read := func(q string) []string {
		rows, err := db.Query(q)
		require.NoError(t, err, q)
		defer rows.Close()
		var out []string
		for rows.Next() {
			var tag, ds, st string
			var n int
			require.NoError(t, rows.Scan(&tag, &ds, &st, &n))
			out = append(out, fmt.Sprintf("%s|%s|%s|%d", tag, ds, st, n))
		}
		require.NoError(t, rows.Err())
		return out
	}
	want := read(`SELECT tag, dataset_name, status, count(*) FROM item_tags GROUP BY tag, dataset_name, status ORDER BY 1, 2, 3`)
	got := read(`SELECT tag, dataset_name, status, n FROM tag_counts ORDER BY 1, 2, 3`)
	assert.Equal(t, want, got, "tag_counts %s", when)
}

// TestCountTagsMatchesScan checks the index count against the portable scan over the same
// data, and tag_counts against item_tags, after every kind of write that moves items between
// tags, statuses and datasets: replaces of tags and status (alone and together), computed
// tags recomputed, creates, writes that fail (stale ETag, duplicate key, alone and inside a
// batch), dataset deletions, and gtc migrate turning legacy documents into items in place and
// by moving them, or rewriting and moving existing items.
func TestCountTagsMatchesScan(t *testing.T) {
	if testenv.RaceEnabled {
		t.Skip("a long sequential differential test: run without the race detector (scripts/test.sh, norace phase)")
	}
	ctx := context.Background()
	s := openTest(t, Options{Path: filepath.Join(t.TempDir(), "gtc.db"), Synchronous: "NORMAL"})
	t.Cleanup(func() { _ = s.Close() })
	reg, err := tagging.NewDefaultRegistry()
	require.NoError(t, err)
	base := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	r := rand.New(rand.NewPCG(7, 7))
	var items []*gtc.Item
	for n := range 200 {
		items = append(items, tagFixtureItem(r, reg, n, base))
	}
	// Odd data: a manual tag that is also a computed key, a computed tag no plugin owns any
	// more, and an item with no tags at all.
	items[0].ManualTags = append(items[0].ManualTags, items[0].ComputedTags[0])
	items[1].ComputedTags = append(items[1].ComputedTags, "legacy:old-plugin")
	items[2].ManualTags, items[2].ComputedTags = []string{}, []string{}
	require.NoError(t, s.items.createMany(ctx, items))

	check := func(t *testing.T, when string) {
		t.Helper()
		for _, spec := range tagCountSpecs(reg) {
			fast, err := s.items.CountTags(ctx, spec)
			require.NoError(t, err)
			slow, err := gtc.CountTagsByScan(ctx, s.items, spec)
			require.NoError(t, err)
			assert.Equal(t, slow, fast, "%s, %s", when, specName(spec))
		}
		assertTagCountsExact(t, s.rdb, when)
	}
	check(t, "after the load")
	all, err := s.items.CountTags(ctx, tagCountSpecs(reg)[0])
	require.NoError(t, err)
	assert.Equal(t, 200, all.Items)
	assert.Greater(t, all.WithoutManualTags, 30, "about a third of the fixture has no manual tag")
	assert.Less(t, all.WithoutManualTags, 100)

	// Replaces: new manual tags, a status change, both at once, new computed tags (a new
	// question), and a write that leaves the tags and status alone.
	for n := 3; n < 200; n += 7 {
		cur, err := s.items.Get(ctx, items[n].Key())
		require.NoError(t, err)
		next := cur.Clone()
		switch n % 6 {
		case 0:
			next.ManualTags = []string{"topic:renamed", "source:sme"}
		case 1:
			next.ManualTags = []string{}
		case 2:
			next.Status = gtc.StatusDeleted
		case 3:
			next.Status = gtc.Statuses[(slices.Index(gtc.Statuses, cur.Status)+1)%len(gtc.Statuses)]
			next.ManualTags = []string{"topic:moved", "difficulty:hard"}
		case 4:
			next.History = []gtc.HistoryEntry{{Role: "user", Msg: benchText(r, 40)}, {Role: "assistant", Msg: "NO_ANSWER"},
				{Role: "user", Msg: "and then?"}, {Role: "assistant", Msg: "done"}}
			next.Plugins = map[string]gtc.PluginPayload{}
			next.ComputedTags = reg.Compute(next)
		default:
			next.Comment = "looked at"
		}
		_, err = s.items.Replace(ctx, cur, next)
		require.NoError(t, err)
	}
	// Failed writes change nothing: a stale ETag, and a batch with a duplicate key.
	stale := items[3].Clone()
	stale.ETag = `"00000000000000000000000000000000"`
	next := stale.Clone()
	next.Status, next.ManualTags = gtc.StatusApproved, []string{"topic:never"}
	_, err = s.items.Replace(ctx, stale, next)
	require.ErrorIs(t, err, gtc.ErrPreconditionFailed)
	fresh := tagFixtureItem(r, reg, 400, base)
	fresh.ManualTags = []string{"topic:never"}
	assert.Error(t, s.items.createMany(ctx, []*gtc.Item{fresh, items[10]}), "the whole batch fails")
	check(t, "after replaces and failed writes")

	// Concurrent creates go through the batching writer, where a failing create (a
	// duplicate) is rolled back to its savepoint and the others commit.
	var wg sync.WaitGroup
	for n := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var it *gtc.Item
			if n%2 == 0 {
				it = tagFixtureItem(rand.New(rand.NewPCG(9, uint64(n))), reg, 4000+n, base)
				it.ManualTags = append(it.ManualTags, "topic:concurrent")
			} else {
				it = items[100+n]
			}
			_, err := s.items.Create(ctx, it)
			if n%2 == 0 {
				assert.NoError(t, err)
			} else {
				assert.Error(t, err)
			}
		}()
	}
	wg.Wait()
	check(t, "after concurrent creates")

	// Datasets deleted: the item_tags rows go by ON DELETE CASCADE.
	for _, ds := range []string{"legal", "Mixed Case DS"} {
		_, err = s.items.DeleteDataset(ctx, ds)
		require.NoError(t, err)
	}
	check(t, "after deleting datasets")

	// gtc migrate: legacy documents of a new dataset and of an existing one become items,
	// converted in place (canonical bucket) or moved (numeric bucket).
	var legacy []map[string]any
	for n := range 120 {
		ds := []string{"imported", "billing-agent"}[n%2]
		id := fmt.Sprintf("legacy-%04d", n)
		doc := map[string]any{
			"id": id, "datasetName": ds, "status": string(gtc.Statuses[n%len(gtc.Statuses)]),
			"synthQuestion": "How do I " + benchText(r, 1+n%30) + "?", "answer": "Like this.",
			"tags":    [][]any{{}, {"Source:SME"}, {"topic:install", "difficulty:easy"}, {"topic:legacy"}}[n%4],
			"comment": nil, "totalReferences": 0, "updatedAt": "2025-05-01T10:00:00Z",
		}
		if n%3 == 0 {
			doc["bucket"] = n % 7
		} else {
			doc["bucket"] = gtc.DeriveBucket(ds, id)
		}
		legacy = append(legacy, doc)
	}
	require.NoError(t, s.InsertRawBatch(ctx, legacy))
	check(t, "with legacy documents not yet migrated") // no query, scan or count sees them
	sum, err := (&gtcmigrate.Job{Store: s, Env: tagCountMigrateEnv(t, reg, base), RunID: "tag-counts"}).Run(ctx)
	require.NoError(t, err)
	require.Zero(t, sum.Failed, sum.Errors)
	require.Equal(t, 120, sum.Migrated)
	require.Positive(t, sum.Moved)
	check(t, "after gtc migrate")

	// The maintenance writes on existing items: rewritten in place with another status and
	// tags, and moved to another bucket.
	m := s.Maintenance()
	for n := 11; n < 200; n += 13 {
		cur, err := s.items.Get(ctx, items[n].Key())
		if errors.Is(err, gtc.ErrNotFound) {
			continue // its dataset was deleted
		}
		require.NoError(t, err)
		prev, err := m.GetRaw(ctx, []any{cur.DatasetName, cur.Bucket}, cur.ID)
		require.NoError(t, err)
		next := cur.Clone()
		next.ManualTags = []string{"topic:maintained"}
		if n%2 == 0 {
			next.Status = gtc.StatusSkipped
			_, err = m.ReplaceRaw(ctx, prev, body(t, next))
		} else {
			next.Bucket = "00000000-0000-4000-8000-000000000001"
			_, err = m.MoveRaw(ctx, prev, body(t, next))
		}
		require.NoError(t, err)
	}
	check(t, "after maintenance writes")
}

// tagCountMigrateEnv is the migrate.Env gtc migrate builds: reg, the default groups and
// validators.
func tagCountMigrateEnv(t *testing.T, reg *tagging.Registry, now time.Time) gtcmigrate.Env {
	t.Helper()
	groups, err := tagging.LoadGroups("")
	require.NoError(t, err)
	validators, err := tagging.NewValidators(nil, groups.Schema())
	require.NoError(t, err)
	return gtcmigrate.Env{Tagger: tagging.NewPipeline(reg, validators, nil), IsComputed: reg.IsComputed, Now: now}
}

// TestTagCountsTriggers checks the triggers on item_tags one by one, with statements the
// store does not issue itself too: a delete of an item cascades to its item_tags rows and
// fires the delete trigger (SQLite fires triggers for foreign key actions), a count that
// reaches 0 takes its row away, and an UPDATE of item_tags moves the count.
func TestTagCountsTriggers(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{Path: MemoryPath})
	t.Cleanup(func() { _ = s.Close() })
	mk := func(ds, id string, status gtc.Status, tags ...string) *gtc.Item {
		it := newItem(ds, id)
		it.Status, it.ManualTags = status, tags
		_, err := s.items.Create(ctx, it)
		require.NoError(t, err)
		return it
	}
	mk("a", "1", gtc.StatusDraft, "topic:x", "topic:y")
	mk("a", "2", gtc.StatusDraft, "topic:x")
	mk("a", "3", gtc.StatusApproved, "topic:x")
	mk("b", "1", gtc.StatusDraft, "topic:x", "topic:z")
	counts := func() map[string]int {
		rows, err := s.rdb.Query(`SELECT tag, dataset_name, status, n FROM tag_counts`)
		require.NoError(t, err)
		defer rows.Close()
		out := map[string]int{}
		for rows.Next() {
			var tag, ds, st string
			var n int
			require.NoError(t, rows.Scan(&tag, &ds, &st, &n))
			out[tag+"|"+ds+"|"+st] = n
		}
		require.NoError(t, rows.Err())
		return out
	}
	exec := func(q string, args ...any) {
		t.Helper()
		require.NoError(t, s.write(ctx, "test", func(w *wtx) error {
			_, err := w.tx.Exec(q, args...)
			return err
		}))
	}
	assert.Equal(t, map[string]int{
		"topic:x|a|draft": 2, "topic:y|a|draft": 1, "topic:x|a|approved": 1, "topic:x|b|draft": 1, "topic:z|b|draft": 1,
	}, counts())

	// A delete of an item row: its item_tags rows go by the foreign key's cascade.
	exec(`DELETE FROM items WHERE dataset_name = 'a' AND id = '1'`)
	assert.Equal(t, map[string]int{"topic:x|a|draft": 1, "topic:x|a|approved": 1, "topic:x|b|draft": 1, "topic:z|b|draft": 1},
		counts(), "topic:y reached 0 and its row is gone")
	assertTagCountsExact(t, s.rdb, "after a cascading delete")

	// An UPDATE of item_tags, which the store never issues, moves the count too.
	exec(`UPDATE item_tags SET status = 'skipped', tag = 'topic:w' WHERE dataset_name = 'a' AND status = 'approved'`)
	assert.Equal(t, map[string]int{"topic:x|a|draft": 1, "topic:w|a|skipped": 1, "topic:x|b|draft": 1, "topic:z|b|draft": 1}, counts())
	exec(`UPDATE item_tags SET tag = tag WHERE dataset_name = 'b'`)
	assertTagCountsExact(t, s.rdb, "after updates")

	// A dataset deletion, also through the cascade.
	_, err := s.items.DeleteDataset(ctx, "a")
	require.NoError(t, err)
	assert.Equal(t, map[string]int{"topic:x|b|draft": 1, "topic:z|b|draft": 1}, counts())
	_, err = s.items.DeleteDataset(ctx, "b")
	require.NoError(t, err)
	assert.Empty(t, counts())
}

// TestSchemaV4BackfillsTagCounts opens a database file of schema version 3 that holds items
// and checks that the migration to version 4 fills tag_counts from item_tags exactly, that
// CountTags then agrees with the scan, and that the triggers it installs keep the counts.
func TestSchemaV4BackfillsTagCounts(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "gtc.db")
	reg, err := tagging.NewDefaultRegistry()
	require.NoError(t, err)
	base := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	r := rand.New(rand.NewPCG(5, 5))

	// The file as a build of schema version 3 leaves it: migrations 1 to 3, and items with
	// their item_tags rows as insertItem writes them.
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	tx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	env := migrationEnv{clock: testClock(), random: crand.Reader}
	for v := range 3 {
		require.NoError(t, migrations[v](ctx, tx, env))
	}
	_, err = tx.ExecContext(ctx, "PRAGMA user_version = 3")
	require.NoError(t, err)
	prep := &Store{random: crand.Reader, clock: gtc.SystemClock{}}
	for n := range 300 {
		it := tagFixtureItem(r, reg, n, base)
		if n == 0 {
			it.ComputedTags = append(it.ComputedTags, "legacy:old-plugin")
		}
		p, err := prep.prepareItem(context.Background(), "create", nil, it)
		require.NoError(t, err)
		var pk int64
		args := append([]any{it.ID, it.DatasetName, it.Bucket}, p.columnArgs()...)
		require.NoError(t, tx.QueryRowContext(ctx, `INSERT INTO items (id, dataset_name, bucket, `+itemColumns+`)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING pk`, args...).Scan(&pk))
		for _, tag := range p.tags {
			_, err = tx.ExecContext(ctx, `INSERT INTO item_tags (tag, dataset_name, status, item_pk) VALUES (?, ?, ?, ?)`,
				tag, it.DatasetName, string(p.stored.Status), pk)
			require.NoError(t, err)
		}
	}
	var tables int
	require.NoError(t, tx.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE name = 'tag_counts'`).Scan(&tables))
	require.Zero(t, tables, "a version 3 file has no tag_counts")
	require.NoError(t, tx.Commit())
	require.NoError(t, db.Close())

	s := openTest(t, Options{Path: path})
	t.Cleanup(func() { _ = s.Close() })
	var v, rows int
	require.NoError(t, s.rdb.QueryRow("PRAGMA user_version").Scan(&v))
	assert.Equal(t, SchemaVersion, v)
	require.NoError(t, s.rdb.QueryRow("SELECT count(*) FROM tag_counts").Scan(&rows))
	assert.Greater(t, rows, 100)
	assertTagCountsExact(t, s.rdb, "after the migration")
	check := func(when string) {
		for _, spec := range tagCountSpecs(reg) {
			fast, err := s.items.CountTags(ctx, spec)
			require.NoError(t, err)
			slow, err := gtc.CountTagsByScan(ctx, s.items, spec)
			require.NoError(t, err)
			assert.Equal(t, slow, fast, "%s, %s", when, specName(spec))
		}
	}
	check("after the migration")
	all, err := s.items.CountTags(ctx, gtc.TagCountSpec{})
	require.NoError(t, err)
	assert.Equal(t, 300, all.Items)

	// The triggers the migration installed keep the backfilled counts exact.
	it, err := s.items.Get(ctx, gtc.Key{DatasetName: tagFixtureDatasets[1], Bucket: gtc.DeriveBucket(tagFixtureDatasets[1], "gt-000001"), ID: "gt-000001"})
	require.NoError(t, err)
	next := it.Clone()
	next.Status, next.ManualTags = gtc.StatusApproved, []string{"topic:after-upgrade"}
	_, err = s.items.Replace(ctx, it, next)
	require.NoError(t, err)
	_, err = s.items.DeleteDataset(ctx, tagFixtureDatasets[2])
	require.NoError(t, err)
	assertTagCountsExact(t, s.rdb, "after writes on the migrated file")
	check("after writes on the migrated file")
}

func TestCountTagsRejectsUnknownStatus(t *testing.T) {
	s := openTest(t, Options{Path: MemoryPath})
	t.Cleanup(func() { _ = s.Close() })
	_, err := s.items.CountTags(context.Background(), gtc.TagCountSpec{Status: "archived"})
	assert.ErrorIs(t, err, gtc.ErrInvalidArgument)
	got, err := s.items.CountTags(context.Background(), gtc.TagCountSpec{})
	require.NoError(t, err)
	assert.Equal(t, gtc.TagCounts{Tags: map[string]int{}}, got, "an empty store")
}

// TestCountTagsPlans keeps the tag count on the indexes: the per-tag counts read tag_counts
// alone (never item_tags), in key order without a sort, and within a dataset only that
// dataset's key ranges; no other statement reads the items table or walks item_tags outside
// the key ranges of its filters.
func TestCountTagsPlans(t *testing.T) {
	s := openTest(t, Options{Path: MemoryPath})
	t.Cleanup(func() { _ = s.Close() })
	reg, err := tagging.NewDefaultRegistry()
	require.NoError(t, err)
	for _, spec := range tagCountSpecs(reg) {
		items, tags, pks := tagCountStatements(spec, `["topic:install","source:sme"]`)
		for name, q := range map[string]sqlText{"items": items, "tags": tags, "manual keys": pks} {
			plan := explain(t, s.rdb, q)
			for _, line := range plan {
				if strings.HasPrefix(line, "SCAN item_tags") || strings.HasPrefix(line, "SCAN x") ||
					strings.Contains(line, "TEMP B-TREE") ||
					(strings.HasPrefix(line, "SCAN items") && !strings.Contains(line, "COVERING INDEX")) {
					t.Errorf("%s, %s: %s\nplan:\n  %s", specName(spec), name, line, strings.Join(plan, "\n  "))
				}
			}
		}
		plan := strings.Join(explain(t, s.rdb, tags), "\n")
		assert.NotContains(t, plan, "item_tags", specName(spec))
		switch {
		case spec.DatasetName != "" && spec.Status != "":
			assert.Contains(t, plan, "SEARCH x USING PRIMARY KEY (tag=? AND dataset_name=? AND status=?)", specName(spec))
		case spec.DatasetName != "":
			assert.Contains(t, plan, "SEARCH x USING PRIMARY KEY (tag=? AND dataset_name=?)", specName(spec))
		default:
			assert.Equal(t, "SCAN tag_counts", plan, specName(spec))
		}
		plan = strings.Join(explain(t, s.rdb, pks), "\n")
		switch {
		case spec.DatasetName != "" || spec.Status != "":
			what := "(tag=? AND dataset_name=?)"
			if spec.Status != "" {
				what = "(tag=? AND dataset_name=? AND status=?)"
			}
			assert.Contains(t, plan, "SEARCH item_tags USING PRIMARY KEY "+what, specName(spec))
		default:
			assert.Contains(t, plan, "SEARCH item_tags USING PRIMARY KEY (tag=?)", specName(spec))
		}
	}
}

func TestCountDistinctPKs(t *testing.T) {
	for _, tc := range []struct {
		list string
		want int
	}{
		{"", 0},
		{"1", 1},
		{"0", 1},
		{"3,1,3,2,1", 3},
		{"0,63,64,65,64", 4},
		{"5,9000000000,5,9000000000,7", 3}, // sparse: sorted instead of a bitmap
		{"9223372036854775807,1,9223372036854775807", 2}, // the largest key
	} {
		got, err := countDistinctPKs(tc.list)
		require.NoError(t, err, tc.list)
		assert.Equal(t, tc.want, got, tc.list)
	}
	for _, bad := range []string{"1,x", "x", "1,,2", ",1", "1,", "-1", "1 ", "9223372036854775808", "99999999999999999999"} {
		_, err := countDistinctPKs(bad)
		assert.Error(t, err, bad)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		seen := map[int64]bool{}
		var parts []string
		for range r.IntN(3000) + 1 {
			pk := r.Int64N(int64([]int{100, 5000, 1 << 40}[r.IntN(3)]))
			seen[pk] = true
			parts = append(parts, strconv.FormatInt(pk, 10))
		}
		got, err := countDistinctPKs(strings.Join(parts, ","))
		require.NoError(t, err)
		assert.Equal(t, len(seen), got)
	}
}
