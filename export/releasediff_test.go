// The fuzz builds (scripts/fuzz.sh, -tags fuzzing) leave these tests out: they run on the
// SQLite store (sqlite_test.go), which a fuzz build would instrument.

//go:build !fuzzing

package export

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/history"
	"github.com/gtc-dev/gtc/storage/localfs"
	"github.com/gtc-dev/gtc/storage/sqlite"
)

// newDiffHarness stores n approved items in two datasets, each with one of three topics, in
// a store that keeps two revisions per item, and an exporter that reads field-level changes
// from the item history.
func newDiffHarness(t *testing.T, n int) *harness {
	t.Helper()
	st, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(t.TempDir(), "gtc.db"), Synchronous: "NORMAL",
		History: gtc.HistoryOptions{MaxRevisions: 2}})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	h := &harness{st: st, root: t.TempDir(), clock: gtc.NewFakeClock(time.Date(2026, 1, 16, 0, 0, 0, 0, time.UTC))}
	for i := range n {
		it := fixtureItem([]string{"dataset_b", "dataset_a"}[i%2], i, gtc.StatusApproved)
		it.ManualTags = []string{"source:synthetic", "topic:" + topics[i%5%3]}
		_, err := st.Items().Create(context.Background(), it)
		require.NoError(t, err)
	}
	h.local, err = localfs.Open(h.root)
	require.NoError(t, err)
	t.Cleanup(func() { h.local.Close() })
	h.spy = &spyStore{ArtifactStore: h.local}
	cur := gtc.NewCurator(gtc.CuratorDeps{Store: st})
	pr, fr := Builtins([]string{"_etag"})
	h.x, err = New(Config{Items: st.Items(), Artifacts: h.spy, Clock: h.clock, Processors: pr, Formatters: fr,
		PageSize: 7, TempDir: filepath.Join(h.root, "tmp"),
		RevisionDiff: func(ctx context.Context, k gtc.Key, from, to int64) ([]gtc.PatchOp, error) {
			_, _, ops, err := history.Diff(ctx, cur, k, from, to)
			return ops, err
		}})
	require.NoError(t, err)
	return h
}

// edit writes the item (dataset, fixture number i) once more, changed by fn.
func (h *harness) edit(t *testing.T, ds string, i int, fn func(*gtc.Item)) {
	t.Helper()
	ctx := context.Background()
	cur, err := h.st.Items().Get(ctx, gtc.Key{DatasetName: ds, Bucket: fixtureBucket, ID: fmt.Sprintf("gt-%06d", i)})
	require.NoError(t, err)
	next := cur.Clone()
	fn(next)
	_, err = h.st.Items().Replace(ctx, cur, next)
	require.NoError(t, err)
}

// allPages reads a comparison page by page and returns its items and the counts of each page.
func allPages(t *testing.T, x *Exporter, a, b string, opts DiffOptions) ([]DiffItem, []DiffCounts) {
	t.Helper()
	var items []DiffItem
	var counts []DiffCounts
	for page := 0; ; page++ {
		require.Less(t, page, 100, "the pages end")
		d, err := x.DiffReleases(context.Background(), a, b, opts)
		require.NoError(t, err)
		require.LessOrEqual(t, len(d.Items), opts.Limit)
		items = append(items, d.Items...)
		counts = append(counts, d.Counts)
		if d.NextCursor == nil {
			return items, counts
		}
		require.Len(t, d.Items, opts.Limit, "a page that is not the last is full")
		opts.Cursor = *d.NextCursor
	}
}

func itemKeys(items []DiffItem) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.Kind + " " + it.DatasetName + "/" + it.ID
	}
	return out
}

func TestDiffReleases(t *testing.T) {
	h := newDiffHarness(t, 40)
	ctx := context.Background()
	_, err := h.release(t, gtc.ReleaseRequest{Name: "v1", Formats: []string{"jsonl"}})
	require.NoError(t, err)
	require.Len(t, h.releaseManifest(t, "v1").Items, 40)

	// Between the releases: gt-000005 is edited (its comment, and its topic from keys to
	// billing); gt-000008 is edited twice, so its first revision is pruned; gt-000002
	// (topic:setup) becomes a draft and leaves the selection; gt-000041, on billing, is new.
	h.edit(t, "dataset_a", 5, func(it *gtc.Item) {
		it.Comment = "rechecked"
		it.ManualTags = []string{"source:synthetic", "topic:billing"}
	})
	h.edit(t, "dataset_b", 8, func(it *gtc.Item) { it.Comment = "once" })
	h.edit(t, "dataset_b", 8, func(it *gtc.Item) { it.Comment = "twice" })
	h.edit(t, "dataset_b", 2, func(it *gtc.Item) { it.Status = gtc.StatusDraft })
	added := fixtureItem("dataset_a", 41, gtc.StatusApproved)
	added.ManualTags = []string{"source:synthetic", "topic:billing"}
	_, err = h.st.Items().Create(ctx, added)
	require.NoError(t, err)
	h.clock.Advance(time.Hour)
	_, err = h.release(t, gtc.ReleaseRequest{Name: "v2", Formats: []string{"jsonl"}})
	require.NoError(t, err)

	d, err := h.x.DiffReleases(ctx, "v1", "v2", DiffOptions{Changes: true})
	require.NoError(t, err)
	assert.Equal(t, "v1", d.From)
	assert.Equal(t, "v2", d.To)
	assert.Equal(t, DiffCounts{Added: 1, Removed: 1, Changed: 2, Unchanged: 37}, d.Counts)
	assert.Equal(t, []TagShift{
		{Tag: "topic:billing", From: 16, To: 18, Delta: 2},
		{Tag: "topic:keys", From: 16, To: 15, Delta: -1},
		{Tag: "topic:setup", From: 8, To: 7, Delta: -1},
	}, d.TagShift, "largest change first, then by tag; unchanged tags are left out")
	assert.Nil(t, d.NextCursor)
	assert.Equal(t, []string{
		"changed dataset_a/gt-000005", "added dataset_a/gt-000041", "removed dataset_b/gt-000002", "changed dataset_b/gt-000008",
	}, itemKeys(d.Items), "in (datasetName, id) order")

	edited, add, removed, pruned := d.Items[0], d.Items[1], d.Items[2], d.Items[3]
	assert.Equal(t, int64(1), *edited.FromRevision)
	assert.Equal(t, int64(2), *edited.ToRevision)
	assert.Equal(t, fixtureBucket, edited.Bucket)
	assert.Empty(t, edited.ChangesUnavailable)
	paths := map[string]gtc.PatchOp{}
	for _, op := range edited.Changes {
		paths[op.Path] = op
	}
	require.Contains(t, paths, "/comment", "%+v", edited.Changes)
	assert.Equal(t, "replace", paths["/comment"].Op)
	assert.JSONEq(t, `"Check against the release notes."`, string(paths["/comment"].Old))
	assert.JSONEq(t, `"rechecked"`, string(paths["/comment"].Value))
	require.Contains(t, paths, "/manualTags/1", "the tag change")
	assert.JSONEq(t, `"topic:keys"`, string(paths["/manualTags/1"].Old))
	assert.JSONEq(t, `"topic:billing"`, string(paths["/manualTags/1"].Value))

	assert.Nil(t, add.FromRevision)
	assert.Equal(t, int64(1), *add.ToRevision)
	assert.Nil(t, add.Changes, "only changed items have changes")
	assert.Equal(t, int64(1), *removed.FromRevision)
	assert.Nil(t, removed.ToRevision)

	assert.Equal(t, int64(1), *pruned.FromRevision)
	assert.Equal(t, int64(3), *pruned.ToRevision)
	assert.Nil(t, pruned.Changes)
	assert.Equal(t, "The item's history no longer holds every revision from 1 to 3: retention pruned them, "+
		"or history was off when they were written.", pruned.ChangesUnavailable)

	// Without changes, the same items without them.
	plain, err := h.x.DiffReleases(ctx, "v1", "v2", DiffOptions{})
	require.NoError(t, err)
	assert.Equal(t, itemKeys(d.Items), itemKeys(plain.Items))
	for _, it := range plain.Items {
		assert.Nil(t, it.Changes)
		assert.Empty(t, it.ChangesUnavailable)
	}

	// Pages of one item cover every item exactly once, each with the counts of the whole.
	items, counts := allPages(t, h.x, "v1", "v2", DiffOptions{Limit: 1})
	assert.Equal(t, itemKeys(d.Items), itemKeys(items))
	for _, c := range counts {
		assert.Equal(t, d.Counts, c)
	}
	items, _ = allPages(t, h.x, "v1", "v2", DiffOptions{Limit: 3})
	assert.Equal(t, itemKeys(d.Items), itemKeys(items))
	items, _ = allPages(t, h.x, "v1", "v2", DiffOptions{Kind: DiffChanged, Limit: 1})
	assert.Equal(t, []string{"changed dataset_a/gt-000005", "changed dataset_b/gt-000008"}, itemKeys(items))

	// The other way round, added and removed swap and the tag shift turns.
	back, err := h.x.DiffReleases(ctx, "v2", "v1", DiffOptions{Kind: DiffAdded})
	require.NoError(t, err)
	assert.Equal(t, DiffCounts{Added: 1, Removed: 1, Changed: 2, Unchanged: 37}, back.Counts)
	assert.Equal(t, []string{"added dataset_b/gt-000002"}, itemKeys(back.Items))
	assert.Equal(t, TagShift{Tag: "topic:billing", From: 18, To: 16, Delta: -2}, back.TagShift[0])

	// A release compared with itself.
	same, err := h.x.DiffReleases(ctx, "v1", "v1", DiffOptions{})
	require.NoError(t, err)
	assert.Equal(t, DiffCounts{Unchanged: 40}, same.Counts)
	assert.Empty(t, same.Items)
	assert.Empty(t, same.TagShift)

	// The current items: after one more edit, only that item differs from v2.
	h.edit(t, "dataset_a", 7, func(it *gtc.Item) { it.Comment = "after v2" })
	now, err := h.x.DiffReleases(ctx, "v2", CurrentRelease, DiffOptions{Changes: true})
	require.NoError(t, err)
	assert.Equal(t, CurrentRelease, now.To)
	assert.Equal(t, DiffCounts{Changed: 1, Unchanged: 39}, now.Counts)
	assert.Empty(t, now.TagShift)
	require.Len(t, now.Items, 1)
	assert.Equal(t, "dataset_a/gt-000007", now.Items[0].DatasetName+"/"+now.Items[0].ID)
	assert.Equal(t, int64(2), *now.Items[0].ToRevision)
	require.Len(t, now.Items[0].Changes, 1)
	assert.Equal(t, "/comment", now.Items[0].Changes[0].Path)
	since, err := h.x.DiffReleases(ctx, "v1", CurrentRelease, DiffOptions{})
	require.NoError(t, err)
	assert.Equal(t, DiffCounts{Added: 1, Removed: 1, Changed: 3, Unchanged: 36}, since.Counts)
	assert.Equal(t, d.TagShift, since.TagShift, "the tags counted in the scan")
	m, err := h.st.Items().Get(ctx, gtc.Key{DatasetName: "dataset_a", Bucket: fixtureBucket, ID: "gt-000007"})
	require.NoError(t, err)
	assert.Equal(t, int64(2), m.Revision)
	_, err = os.Stat(filepath.Join(h.root, "exports", "releases", CurrentRelease))
	assert.True(t, os.IsNotExist(err), "nothing is written")
}

// Between two releases an item at the same revision whose exported content differs is
// changed, with no field-level changes.
func TestDiffReleasesComparesContent(t *testing.T) {
	h := newDiffHarness(t, 6)
	_, err := h.release(t, gtc.ReleaseRequest{Name: "a", Formats: []string{"jsonl"}})
	require.NoError(t, err)
	m := h.releaseManifest(t, "a")
	data, err := os.ReadFile(filepath.Join(h.root, "exports", "releases", "a", "manifest.json"))
	require.NoError(t, err)
	other := strings.Replace(string(data), m.Items[2].SHA256, strings.Repeat("0", 64), 1)
	require.NoError(t, os.MkdirAll(filepath.Join(h.root, "exports", "releases", "b"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(h.root, "exports", "releases", "b", "manifest.json"), []byte(other), 0o644))

	d, err := h.x.DiffReleases(context.Background(), "a", "b", DiffOptions{Changes: true})
	require.NoError(t, err)
	assert.Equal(t, DiffCounts{Changed: 1, Unchanged: 5}, d.Counts)
	require.Len(t, d.Items, 1)
	it := d.Items[0]
	assert.Equal(t, m.Items[2].ID, it.ID)
	assert.Equal(t, *it.FromRevision, *it.ToRevision)
	assert.NotNil(t, it.Changes)
	assert.Empty(t, it.Changes)
}

func TestDiffReleasesRefuses(t *testing.T) {
	h := newDiffHarness(t, 6)
	ctx := context.Background()
	for _, name := range []string{"a", "b"} {
		_, err := h.release(t, gtc.ReleaseRequest{Name: name, Formats: []string{"jsonl"}})
		require.NoError(t, err)
	}
	_, err := h.x.DeleteRelease(ctx, "b", "root@example.com")
	require.NoError(t, err)

	_, err = h.x.DiffReleases(ctx, "nope", "a", DiffOptions{})
	assert.Equal(t, gtc.CodeNotFound, codeOf(err))
	_, err = h.x.DiffReleases(ctx, "a", "nope", DiffOptions{})
	assert.Equal(t, gtc.CodeNotFound, codeOf(err))
	_, err = h.x.DiffReleases(ctx, "a", "b", DiffOptions{})
	assert.Equal(t, gtc.CodeReleaseDeleted, codeOf(err))
	_, err = h.x.DiffReleases(ctx, "b", CurrentRelease, DiffOptions{})
	assert.Equal(t, gtc.CodeReleaseDeleted, codeOf(err))

	fields := func(err error) []string {
		var e *gtc.Error
		require.True(t, errors.As(err, &e), "%v", err)
		assert.Equal(t, gtc.CodeValidation, e.Code)
		var out []string
		for _, f := range e.Fields {
			out = append(out, f.Field)
		}
		return out
	}
	_, err = h.x.DiffReleases(ctx, "a", "a", DiffOptions{Kind: "moved", Limit: MaxDiffLimit + 1, Cursor: "not-a-cursor"})
	assert.Equal(t, []string{"kind", "limit", "cursor"}, fields(err))

	// A cursor belongs to its comparison and kind.
	h.edit(t, "dataset_a", 1, func(it *gtc.Item) { it.Comment = "x" })
	h.edit(t, "dataset_a", 3, func(it *gtc.Item) { it.Comment = "x" })
	d, err := h.x.DiffReleases(ctx, "a", CurrentRelease, DiffOptions{Limit: 1})
	require.NoError(t, err)
	require.NotNil(t, d.NextCursor)
	_, err = h.x.DiffReleases(ctx, "a", CurrentRelease, DiffOptions{Limit: 1, Cursor: *d.NextCursor})
	require.NoError(t, err)
	_, err = h.x.DiffReleases(ctx, "a", CurrentRelease, DiffOptions{Limit: 1, Kind: DiffChanged, Cursor: *d.NextCursor})
	assert.Equal(t, []string{"cursor"}, fields(err))
	_, err = h.x.DiffReleases(ctx, "a", "a", DiffOptions{Limit: 1, Cursor: *d.NextCursor})
	assert.Equal(t, []string{"cursor"}, fields(err))

	// No release takes the name that stands for the current items.
	_, err = h.release(t, gtc.ReleaseRequest{Name: CurrentRelease, Formats: []string{"jsonl"}})
	assert.Equal(t, []string{"name"}, fields(err))
}
