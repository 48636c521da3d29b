// The fuzz builds (scripts/fuzz.sh, -tags fuzzing) leave these tests out: they run on the
// SQLite store (sqlite_test.go), which a fuzz build would instrument.

//go:build !fuzzing

package export

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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
	"github.com/gtc-dev/gtc/storage/localfs"
)

var topics = []string{"keys", "billing", "setup"}

// newReleaseHarness stores n items in two datasets, every third a draft, with one of three
// topics, and an exporter that knows the topic and source tag groups.
func newReleaseHarness(t *testing.T, n int) *harness {
	t.Helper()
	h := &harness{st: newSQLite(t), root: t.TempDir(), clock: gtc.NewFakeClock(time.Date(2026, 1, 16, 0, 0, 0, 0, time.UTC))}
	for i := range n {
		status := gtc.StatusApproved
		if i%3 == 2 {
			status = gtc.StatusDraft
		}
		it := fixtureItem([]string{"dataset_b", "dataset_a"}[i%2], i, status)
		it.ManualTags = []string{"source:synthetic", "topic:" + topics[i%5%3]}
		_, err := h.st.Items().Create(context.Background(), it)
		require.NoError(t, err)
	}
	var err error
	h.local, err = localfs.Open(h.root)
	require.NoError(t, err)
	t.Cleanup(func() { h.local.Close() })
	h.spy = &spyStore{ArtifactStore: h.local}
	pr, fr := Builtins([]string{"_etag"})
	h.x, err = New(Config{Items: h.st.Items(), Artifacts: h.spy, Clock: h.clock, Processors: pr, Formatters: fr,
		PageSize: 7, TempDir: filepath.Join(h.root, "tmp"),
		TagGroups: func(context.Context) ([]string, error) { return []string{"source", "topic", "turns"}, nil }})
	require.NoError(t, err)
	return h
}

func (h *harness) release(t *testing.T, req gtc.ReleaseRequest) (ReleaseInfo, error) {
	t.Helper()
	rp, err := h.x.ResolveRelease(context.Background(), &req, "alice@example.com")
	if err != nil {
		return ReleaseInfo{}, err
	}
	return h.x.CreateRelease(context.Background(), rp)
}

type releaseManifest struct {
	ReleaseSummary
	Files []FileEntry   `json:"files"`
	Items []ReleaseItem `json:"items"`
}

func (h *harness) releaseManifest(t *testing.T, name string) releaseManifest {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(h.root, "exports", "releases", name, "manifest.json"))
	require.NoError(t, err)
	var m releaseManifest
	require.NoError(t, json.Unmarshal(data, &m))
	return m
}

func (h *harness) releaseFile(t *testing.T, name, file string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(h.root, "exports", "releases", name, file))
	require.NoError(t, err)
	return data
}

func codeOf(err error) string {
	var e *gtc.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func TestReleasePinsEveryItemAtItsRevision(t *testing.T) {
	h := newReleaseHarness(t, 30)
	ctx := context.Background()
	info, err := h.release(t, gtc.ReleaseRequest{Name: "v1.0", Formats: []string{"jsonl", "csv"},
		Splits: []gtc.Split{{Name: "train", Ratio: 0.8}, {Name: "test", Ratio: 0.2}}, Notes: "First cut."})
	require.NoError(t, err)
	assert.Equal(t, 20, info.Count, "approved items only, by default")

	m := h.releaseManifest(t, "v1.0")
	assert.Equal(t, "v1.0", m.Name)
	assert.Equal(t, "alice@example.com", m.CreatedBy)
	assert.Equal(t, "First cut.", m.Notes)
	assert.Equal(t, 20, m.Count)
	assert.Equal(t, info.ContentHash, m.ContentHash)
	assert.Equal(t, map[string]int{"approved": 20}, m.Counts.Statuses)
	assert.Equal(t, 10, m.Counts.Datasets["dataset_a"])
	assert.Equal(t, 20, m.Counts.Tags["source:synthetic"])
	require.Len(t, m.Items, 20)
	assert.Equal(t, m.Counts.Splits["train"]+m.Counts.Splits["test"], 20)

	// Each split's jsonl file holds exactly its items, and each item's sha256 is that of its
	// exported line.
	lines := map[string]string{}
	for _, split := range []string{"train", "test"} {
		data := string(h.releaseFile(t, "v1.0", split+".jsonl"))
		for l := range strings.SplitSeq(strings.TrimSuffix(data, "\n"), "\n") {
			if l == "" {
				continue
			}
			var r struct{ DatasetName, ID string }
			require.NoError(t, json.Unmarshal([]byte(l), &r))
			lines[r.DatasetName+"/"+r.ID] = split + "\x00" + l
		}
		assert.NotEmpty(t, h.releaseFile(t, "v1.0", split+".csv"))
	}
	content := sha256.New()
	for i, it := range m.Items {
		if i > 0 {
			prev := m.Items[i-1]
			assert.True(t, prev.DatasetName < it.DatasetName || prev.DatasetName == it.DatasetName && prev.ID < it.ID)
		}
		stored, err := h.st.Items().Get(ctx, gtc.Key{DatasetName: it.DatasetName, Bucket: fixtureBucket, ID: it.ID})
		require.NoError(t, err)
		assert.Equal(t, stored.Revision, it.Revision)
		split, line, ok := strings.Cut(lines[it.DatasetName+"/"+it.ID], "\x00")
		require.True(t, ok, "%s/%s is in a data file", it.DatasetName, it.ID)
		assert.Equal(t, it.Split, split)
		assert.Equal(t, gtc.SplitAt([]gtc.Split{{Name: "test", Ratio: 0.2}, {Name: "train", Ratio: 0.8}}, gtc.SplitHash(it.DatasetName, it.ID)), split)
		sum := sha256.Sum256([]byte(line + "\n"))
		assert.Equal(t, hex.EncodeToString(sum[:]), it.SHA256)
		fmt.Fprintf(content, "%s\x00%s\x00%d\x00%s\n", it.DatasetName, it.ID, it.Revision, it.SHA256)
	}
	assert.Equal(t, "sha256:"+hex.EncodeToString(content.Sum(nil)), m.ContentHash)
	names := []string{}
	for _, f := range m.Files {
		names = append(names, f.Name)
		data := h.releaseFile(t, "v1.0", f.Name)
		sum := sha256.Sum256(data)
		assert.Equal(t, hex.EncodeToString(sum[:]), f.SHA256, f.Name)
	}
	assert.Equal(t, []string{"test.csv", "test.jsonl", "train.csv", "train.jsonl", "README.md"}, names)
	card := string(h.releaseFile(t, "v1.0", "README.md"))
	assert.Contains(t, card, "configs:\n- config_name: default\n  data_files:\n  - split: test\n    path: \"test.jsonl\"\n")
	assert.Contains(t, card, fmt.Sprintf("  - name: train\n    num_examples: %d\n", m.Counts.Splits["train"]))
	assert.Contains(t, card, "First cut.")

	// The same items at the same revisions: the same content hash and splits, later.
	h.clock.Advance(time.Hour)
	again, err := h.release(t, gtc.ReleaseRequest{Name: "v1.0-again", Formats: []string{"jsonl"},
		Splits: []gtc.Split{{Name: "test", Ratio: 0.2}, {Name: "train", Ratio: 0.8}}})
	require.NoError(t, err)
	assert.Equal(t, info.ContentHash, again.ContentHash)
	assert.Equal(t, m.Items, h.releaseManifest(t, "v1.0-again").Items)

	// An edit makes a new revision, and a new content hash.
	first := m.Items[0]
	cur, err := h.st.Items().Get(ctx, gtc.Key{DatasetName: first.DatasetName, Bucket: fixtureBucket, ID: first.ID})
	require.NoError(t, err)
	next := *cur
	next.Comment = "rechecked"
	_, err = h.st.Items().Replace(ctx, cur, &next)
	require.NoError(t, err)
	v2, err := h.release(t, gtc.ReleaseRequest{Name: "v2", Formats: []string{"jsonl"}})
	require.NoError(t, err)
	assert.NotEqual(t, info.ContentHash, v2.ContentHash)
	m2 := h.releaseManifest(t, "v2")
	assert.Equal(t, first.Revision+1, m2.Items[0].Revision)
	assert.NotEqual(t, first.SHA256, m2.Items[0].SHA256)
	assert.Equal(t, m.Items[1].SHA256, m2.Items[1].SHA256)
	assert.Equal(t, gtc.AllSplit, m2.Items[0].Split)

	// The listing, newest first; the summary; streaming the items back.
	list, total, err := h.x.ListReleases(ctx, 0, 10)
	require.NoError(t, err)
	assert.Equal(t, 3, total)
	require.Len(t, list, 3)
	assert.Equal(t, []string{"v1.0-again", "v2", "v1.0"}, []string{list[0].Name, list[1].Name, list[2].Name})
	var streamed []ReleaseItem
	for it, err := range h.x.ReleaseItems(ctx, "v1.0") {
		require.NoError(t, err)
		streamed = append(streamed, it)
	}
	assert.Equal(t, m.Items, streamed)
	f, err := h.x.OpenReleaseFile(ctx, "v1.0", "train.jsonl")
	require.NoError(t, err)
	f.Body.Close()
	assert.Equal(t, gtc.ContentTypeNDJSON, f.ContentType)
	_, err = h.x.OpenReleaseFile(ctx, "v1.0", ".reserved")
	assert.Equal(t, gtc.CodeNotFound, codeOf(err), "only listed files are served")

	// The head and the files of a release, without its items.
	head, files, err := h.x.ReleaseFiles(ctx, "v1.0")
	require.NoError(t, err)
	assert.Equal(t, m.ReleaseSummary, head)
	assert.Equal(t, m.Files, files)
	_, _, err = h.x.ReleaseFiles(ctx, "v0")
	assert.Equal(t, gtc.CodeNotFound, codeOf(err))
}

func TestReleaseNamesAreNeverReused(t *testing.T) {
	h := newReleaseHarness(t, 9)
	ctx := context.Background()
	_, err := h.release(t, gtc.ReleaseRequest{Name: "r1", Formats: []string{"jsonl"}})
	require.NoError(t, err)
	_, err = h.release(t, gtc.ReleaseRequest{Name: "r1", Formats: []string{"jsonl"}})
	assert.Equal(t, gtc.CodeReleaseExists, codeOf(err))

	ts, err := h.x.DeleteRelease(ctx, "r1", "root@example.com")
	require.NoError(t, err)
	assert.Equal(t, "root@example.com", ts.DeletedBy)
	_, err = h.x.ReleaseSummaryOf(ctx, "r1")
	assert.Equal(t, gtc.CodeReleaseDeleted, codeOf(err))
	var left []string
	entries, _ := os.ReadDir(filepath.Join(h.root, "exports", "releases", "r1"))
	for _, e := range entries {
		left = append(left, e.Name())
	}
	assert.Equal(t, []string{".deleted", ".reserved"}, left, "the files are gone, the tombstone stays")
	_, err = h.release(t, gtc.ReleaseRequest{Name: "r1", Formats: []string{"jsonl"}})
	assert.Equal(t, gtc.CodeReleaseExists, codeOf(err))
	assert.ErrorContains(t, err, "deleted")
	_, err = h.x.DeleteRelease(ctx, "r1", "root@example.com")
	assert.Equal(t, gtc.CodeReleaseDeleted, codeOf(err))
	_, err = h.x.DeleteRelease(ctx, "nope", "root@example.com")
	assert.Equal(t, gtc.CodeNotFound, codeOf(err))
	_, total, err := h.x.ListReleases(ctx, 0, 10)
	require.NoError(t, err)
	assert.Zero(t, total)

	// A deletion cut short after its tombstone: the release is deleted all the same, and
	// deleting it again removes what was left.
	_, err = h.release(t, gtc.ReleaseRequest{Name: "r2", Formats: []string{"jsonl"}})
	require.NoError(t, err)
	dir := filepath.Join(h.root, "exports", "releases", "r2")
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".deleted"),
		[]byte(`{"name":"r2","deletedAt":"2026-01-16T00:00:00.000Z","deletedBy":"ops"}`), 0o600))
	_, err = h.x.ReleaseSummaryOf(ctx, "r2")
	assert.Equal(t, gtc.CodeReleaseDeleted, codeOf(err))
	_, err = h.x.OpenReleaseFile(ctx, "r2", "all.jsonl")
	assert.Equal(t, gtc.CodeReleaseDeleted, codeOf(err))
	_, total, err = h.x.ListReleases(ctx, 0, 10)
	require.NoError(t, err)
	assert.Zero(t, total)
	_, err = h.x.DeleteRelease(ctx, "r2", "root@example.com")
	assert.Equal(t, gtc.CodeReleaseDeleted, codeOf(err))
	assert.ErrorContains(t, err, "was deleted")
	left = nil
	entries, _ = os.ReadDir(dir)
	for _, e := range entries {
		left = append(left, e.Name())
	}
	assert.Equal(t, []string{".deleted", ".reserved"}, left, "the rest of the cut-short deletion is done")
}

func TestReleaseRefusesBadRequests(t *testing.T) {
	h := newReleaseHarness(t, 9)
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
	_, err := h.release(t, gtc.ReleaseRequest{Name: "-bad", Formats: []string{"jsonl", "nope"},
		Splits: []gtc.Split{{Name: "train", Ratio: 0.7}, {Name: "Test", Ratio: 0.2}}, StratifyBy: "colour"})
	assert.Equal(t, []string{"name", "splits.Test", "splits", "stratifyBy", "formats[1]"}, fields(err))
	_, err = h.release(t, gtc.ReleaseRequest{Name: "ok", Formats: []string{"json_items", "json_snapshot_payload"},
		Tags: []string{"topic:keys"}, ExcludeTags: []string{"topic:keys", "nocolon"}})
	assert.Equal(t, []string{"filters.excludeTags[1]", "filters.excludeTags", "formats[1]"}, fields(err))

	// A selection without items is refused, and leaves the name free.
	_, err = h.release(t, gtc.ReleaseRequest{Name: "empty", Formats: []string{"jsonl"}, Tags: []string{"topic:none"}})
	assert.Equal(t, []string{"filters"}, fields(err))
	_, err = os.Stat(filepath.Join(h.root, "exports", "releases", "empty"))
	assert.True(t, os.IsNotExist(err), "nothing is left of a refused release")
	_, err = h.release(t, gtc.ReleaseRequest{Name: "empty", Formats: []string{"jsonl"}})
	require.NoError(t, err)
}

func TestReleaseStratifiedSplits(t *testing.T) {
	h := newReleaseHarness(t, 90)
	info, err := h.release(t, gtc.ReleaseRequest{Name: "strat", Formats: []string{"jsonl"}, StratifyBy: "topic",
		Tags: []string{"source:synthetic"}, ExcludeTags: []string{"topic:setup"},
		Splits: []gtc.Split{{Name: "train", Ratio: 0.75}, {Name: "test", Ratio: 0.25}}})
	require.NoError(t, err)
	m := h.releaseManifest(t, "strat")
	assert.Equal(t, info.Count, m.Count)
	assert.Zero(t, m.Counts.Tags["topic:setup"], "excluded")
	perTopic := map[string]map[string]int{}
	for _, it := range m.Items {
		var n int
		fmt.Sscanf(strings.TrimPrefix(it.ID, "gt-"), "%d", &n)
		topic := topics[n%5%3]
		if perTopic[topic] == nil {
			perTopic[topic] = map[string]int{}
		}
		perTopic[topic][it.Split]++
	}
	require.Len(t, perTopic, 2)
	for topic, splits := range perTopic {
		total := splits["train"] + splits["test"]
		assert.InDelta(t, 0.25*float64(total), float64(splits["test"]), 1, "topic %s: %v", topic, splits)
	}
}
