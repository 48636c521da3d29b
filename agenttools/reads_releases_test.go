package agenttools

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	gtc "github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/export"
	"github.com/gtc-dev/gtc/history"
	"github.com/gtc-dev/gtc/storage/localfs"
)

// relFixture is a store of six approved support items (q-0 … q-5) and release r1 of them,
// then, before release r2: q-1's comment rewritten at length, q-4 made a draft, q-9 added on
// topic:billing. It returns the read tools over an exporter of that store, and an edit
// function.
func relFixture(t *testing.T) (*Reads, *export.Exporter, func(id string, fn func(*gtc.Item))) {
	t.Helper()
	ctx := context.Background()
	mk := func(id string) *gtc.Item {
		it := gtc.NewItem("support", id)
		it.Bucket = gtc.DeriveBucket("support", id)
		it.Status = gtc.StatusApproved
		it.ManualTags = []string{"topic:keys"}
		it.Comment = "first draft"
		it.History = []gtc.HistoryEntry{U("How do I reset my password?"), A("Use the link.")}
		return it
	}
	var items []*gtc.Item
	for i := range 6 {
		items = append(items, mk(fmt.Sprintf("q-%d", i)))
	}
	st := rdOpen(t, items...)
	root := t.TempDir()
	local, err := localfs.Open(root)
	require.NoError(t, err)
	t.Cleanup(func() { _ = local.Close() })
	cur := gtc.NewCurator(gtc.CuratorDeps{Store: st})
	pr, fr := export.Builtins(nil)
	x, err := export.New(export.Config{Items: st.Items(), Artifacts: local, Processors: pr, Formatters: fr, TempDir: filepath.Join(root, "tmp"),
		RevisionDiff: func(ctx context.Context, k gtc.Key, from, to int64) ([]gtc.PatchOp, error) {
			_, _, ops, err := history.Diff(ctx, cur, k, from, to)
			return ops, err
		}})
	require.NoError(t, err)
	release := func(name string) {
		rp, err := x.ResolveRelease(ctx, &gtc.ReleaseRequest{Name: name, Formats: []string{"jsonl"}}, "alice@example.com")
		require.NoError(t, err)
		_, err = x.CreateRelease(ctx, rp)
		require.NoError(t, err)
	}
	edit := func(id string, fn func(*gtc.Item)) {
		it, err := st.Items().Get(ctx, gtc.Key{DatasetName: "support", Bucket: gtc.DeriveBucket("support", id), ID: id})
		require.NoError(t, err)
		next := it.Clone()
		fn(next)
		_, err = st.Items().Replace(ctx, it, next)
		require.NoError(t, err)
	}
	release("r1")
	edit("q-1", func(it *gtc.Item) { it.Comment = strings.Repeat("checked again; ", 100) })
	edit("q-4", func(it *gtc.Item) { it.Status = gtc.StatusDraft })
	added := mk("q-9")
	added.ManualTags = []string{"topic:billing"}
	_, err = st.Items().Create(ctx, added)
	require.NoError(t, err)
	release("r2")
	r := NewReads(ReadsDeps{Store: st, Curator: cur, Registry: defaultRegistry(t), Releases: x})
	return r, x, edit
}

func TestCompareReleases(t *testing.T) {
	r, _, edit := relFixture(t)
	ctx := context.Background()

	res := r.CompareReleases(ctx, map[string]any{"from": "r1", "to": "r2", "limit": 20})
	rdCheckEnvelope(t, res)
	require.False(t, res.IsError, res.Content)
	lines := strings.Split(res.Content, "\n")
	assert.Equal(t, "r1 → r2: 1 added, 1 removed, 1 changed, 4 unchanged.", lines[0])
	assert.Equal(t, "Tag shift: topic:billing +1 (0 → 1), topic:keys -1 (6 → 5).", lines[1])
	assert.Equal(t, "Added, removed or changed items, in (dataset, id) order:", lines[2])
	assert.Equal(t, "changed support/q-1 r1 → r2", lines[3])
	assert.True(t, strings.HasPrefix(lines[4], `  replace /comment: "first draft" → "checked again; checked again;`), lines[4])
	assert.True(t, strings.HasSuffix(lines[4], "… (1,502 bytes)"), lines[4])
	assert.Equal(t, []string{"removed support/q-4 r1", "added support/q-9 r1", "No more added, removed or changed items."}, lines[5:])

	d := rdJSON(t, res)
	assert.Equal(t, map[string]any{"added": 1.0, "removed": 1.0, "changed": 1.0, "unchanged": 4.0}, d["counts"])
	assert.Len(t, d["tagShift"], 2)
	assert.Nil(t, d["nextCursor"])
	items := d["items"].([]any)
	require.Len(t, items, 3)
	changed := items[0].(map[string]any)
	assert.Equal(t, 1.0, changed["fromRevision"])
	assert.Equal(t, 2.0, changed["toRevision"])
	change := changed["changes"].([]any)[0].(map[string]any)
	assert.Equal(t, "/comment", change["path"])
	assert.Equal(t, "first draft", change["old"])
	assert.Equal(t, 1502.0, change["valueBytes"], "a long value is shortened and its size given")
	assert.True(t, strings.HasSuffix(change["value"].(string), "…"))
	assert.NotContains(t, items[1], "toRevision", "removed")
	assert.NotContains(t, items[2], "fromRevision", "added")

	// One item a page, on with the cursor, only the changed and removed ones.
	res = r.CompareReleases(ctx, map[string]any{"from": "r1", "to": "r2", "limit": 1, "kind": "removed"})
	require.False(t, res.IsError, res.Content)
	assert.Equal(t, "removed support/q-4 r1", rdLines(res.Content)[2])
	assert.Equal(t, "No more removed items.", rdLines(res.Content)[3])
	res = r.CompareReleases(ctx, map[string]any{"from": "r1", "to": "r2", "limit": 1})
	d = rdJSON(t, res)
	cursor := d["nextCursor"].(string)
	assert.Contains(t, res.Content, fmt.Sprintf("More added, removed or changed items: call again with cursor %q.", cursor))
	res = r.CompareReleases(ctx, map[string]any{"from": "r1", "to": "r2", "limit": 1, "cursor": cursor})
	require.False(t, res.IsError, res.Content)
	next := rdJSON(t, res)["items"].([]any)
	require.Len(t, next, 1)
	assert.Equal(t, "q-4", next[0].(map[string]any)["id"], "the item after the first page's")

	// Since r2.
	edit("q-2", func(it *gtc.Item) { it.Comment = "after r2" })
	res = r.CompareReleases(ctx, map[string]any{"from": "r2", "to": "current", "limit": 20})
	require.False(t, res.IsError, res.Content)
	assert.Equal(t, []string{
		"r2 → current (the items r2's selection holds now): 0 added, 0 removed, 1 changed, 5 unchanged.",
		"Tag counts: the same in both.",
		"Added, removed or changed items, in (dataset, id) order:",
		"changed support/q-2 r1 → r2",
		`  replace /comment: "first draft" → "after r2"`,
		"No more added, removed or changed items.",
	}, strings.Split(res.Content, "\n"))
}

func TestCompareReleasesErrors(t *testing.T) {
	r, x, _ := relFixture(t)
	ctx := context.Background()
	res := r.CompareReleases(ctx, map[string]any{"from": "r1", "to": "r3", "limit": 20})
	rdCheckEnvelope(t, res)
	assert.Equal(t, CodeNotFound, rdErrCode(t, res))
	assert.Equal(t, "Not found: Release 'r3' not found. Release names are case-sensitive.", res.Content)

	_, err := x.DeleteRelease(ctx, "r1", "root@example.com")
	require.NoError(t, err)
	res = r.CompareReleases(ctx, map[string]any{"from": "r1", "to": "current", "limit": 20})
	rdCheckEnvelope(t, res)
	assert.Equal(t, CodeNotFound, rdErrCode(t, res))
	assert.True(t, strings.HasPrefix(res.Content, "Not found: Release 'r1' was deleted (on "), res.Content)
	assert.Equal(t, "root@example.com", rdJSON(t, res)["error"].(map[string]any)["deletedBy"])

	res = r.CompareReleases(ctx, map[string]any{"from": "r2", "to": "current", "limit": 20, "cursor": "yesterday"})
	rdCheckEnvelope(t, res)
	assert.Equal(t, CodeInvalidInput, rdErrCode(t, res))
	assert.Contains(t, res.Content, "cursor: not a nextCursor of this comparison")

	res = r.CompareReleases(ctx, map[string]any{"from": "r2", "to": "r2", "limit": 20, "kind": "changed"})
	require.False(t, res.IsError, res.Content)
	assert.Equal(t, "r2 → r2: 0 added, 0 removed, 0 changed, 6 unchanged.\nTag counts: the same in both.\nNo changed items.", res.Content)

	none := NewReads(ReadsDeps{Store: rdOpen(t)})
	res = none.CompareReleases(ctx, map[string]any{"from": "r2", "to": "current"})
	rdCheckEnvelope(t, res)
	assert.Equal(t, CodeNotFound, rdErrCode(t, res))
}
