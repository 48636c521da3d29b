package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/export"
)

// storedRelease is a release's manifest as the command left it in the data directory.
type storedRelease struct {
	Name        string         `json:"name"`
	CreatedBy   string         `json:"createdBy"`
	CreatedAt   string         `json:"createdAt"`
	Notes       string         `json:"notes"`
	Selection   map[string]any `json:"selection"`
	ContentHash string         `json:"contentHash"`
	Count       int            `json:"count"`
	Records     int            `json:"records"`
	Counts      struct {
		Splits map[string]int `json:"splits"`
		Tags   map[string]int `json:"tags"`
	} `json:"counts"`
	Files []struct {
		Name   string `json:"name"`
		Bytes  int64  `json:"bytes"`
		SHA256 string `json:"sha256"`
		Items  int    `json:"items"`
	} `json:"files"`
	Items []struct {
		DatasetName string `json:"datasetName"`
		ID          string `json:"id"`
		Split       string `json:"split"`
	} `json:"items"`
}

func readRelease(t *testing.T, dir, name string) (storedRelease, []byte) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "exports", "releases", name, "manifest.json"))
	require.NoError(t, err)
	var m storedRelease
	require.NoError(t, json.Unmarshal(data, &m))
	return m, data
}

// lines splits output into its lines.
func lines(s string) []string {
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

func TestReleaseCreateListShowGet(t *testing.T) {
	dir := t.TempDir()
	e := env(dir)
	_, stderr, code := runGTC(t, e, "seed", "--items", "60", "--datasets", "2")
	require.Equal(t, 0, code, stderr)

	// Approved items of every dataset, in two splits and two formats.
	out, stderr, code := runGTC(t, e, "release", "create", "v1.0", "--split", "train=0.8,test=0.2",
		"--format", "jsonl", "--format", "csv", "--notes", "First cut.", "--actor", "ci-bot")
	require.Equal(t, 0, code, stderr)
	m, manifest := readRelease(t, dir, "v1.0")
	assert.Positive(t, m.Count)
	assert.Equal(t, "ci-bot", m.CreatedBy)
	assert.Equal(t, "First cut.", m.Notes)
	assert.Equal(t, "approved", m.Selection["status"])
	assert.Equal(t, map[string]any{"train": 0.8, "test": 0.2}, m.Selection["splits"])
	assert.Equal(t, m.Count, m.Counts.Splits["train"]+m.Counts.Splits["test"])
	assert.Positive(t, m.Counts.Splits["train"])
	assert.Positive(t, m.Counts.Splits["test"])
	for _, split := range []string{"train", "test"} {
		data, err := os.ReadFile(filepath.Join(dir, "exports", "releases", "v1.0", split+".jsonl"))
		require.NoError(t, err)
		assert.Equal(t, m.Counts.Splits[split], bytes.Count(data, []byte("\n")), "%s.jsonl holds its split's items", split)
	}

	got := lines(out)
	assert.Equal(t, fmt.Sprintf("release v1.0: %d items, %d records", m.Count, m.Records), got[0])
	assert.Equal(t, "content hash: "+m.ContentHash, got[1])
	assert.Equal(t, []string{"FILE", "ITEMS", "BYTES", "SHA256"}, fields(got[2]))
	require.Len(t, got, 3+len(m.Files), out)
	for i, f := range m.Files {
		items := fmt.Sprint(f.Items)
		if f.Name == "README.md" {
			items = "-"
		}
		assert.Equal(t, []string{f.Name, items, fmt.Sprint(f.Bytes), f.SHA256}, fields(got[3+i]))
	}
	assert.Len(t, m.Files, 5, "two formats for two splits, and the dataset card")

	// Every status of one dataset, stratified by topic.
	_, stderr, code = runGTC(t, e, "release", "create", "--status", "", "--dataset", "customer-support",
		"--split", "train=0.5", "--split", "test=0.5", "--stratify-by", "topic", "--format", "jsonl", "v2")
	require.Equal(t, 0, code, stderr)
	m2, _ := readRelease(t, dir, "v2")
	assert.Equal(t, 30, m2.Count, "half of the 60 items are in customer-support")
	assert.Equal(t, "", m2.Selection["status"])
	assert.Equal(t, []any{"customer-support"}, m2.Selection["datasets"])
	assert.Equal(t, "topic", m2.Selection["stratifyBy"])
	for _, it := range m2.Items {
		assert.Equal(t, "customer-support", it.DatasetName)
	}
	assert.Equal(t, 30, m2.Counts.Splits["train"]+m2.Counts.Splits["test"])

	// The list, newest first.
	out, stderr, code = runGTC(t, e, "release", "list")
	require.Equal(t, 0, code, stderr)
	got = lines(out)
	require.Len(t, got, 4, out)
	assert.Equal(t, []string{"NAME", "CREATED", "BY", "ITEMS", "CONTENT HASH"}, fields(got[0]))
	assert.Equal(t, []string{"v2", m2.CreatedAt, m2.CreatedBy, "30", m2.ContentHash}, fields(got[1]))
	assert.True(t, strings.HasPrefix(m2.CreatedBy, "cli:"), "without --actor, the release is the command line's: %s", m2.CreatedBy)
	assert.Equal(t, []string{"v1.0", m.CreatedAt, "ci-bot", fmt.Sprint(m.Count), m.ContentHash}, fields(got[2]))
	assert.Equal(t, "2 of 2 releases", got[3])
	out, stderr, code = runGTC(t, e, "release", "list", "--limit", "1")
	require.Equal(t, 0, code, stderr)
	got = lines(out)
	require.Len(t, got, 3, out)
	assert.Equal(t, "v2", fields(got[1])[0])
	assert.Equal(t, "1 of 2 releases", got[2])

	// Reading releases does not need the item store: with a Cosmos DB store that cannot be
	// reached they are still listed.
	unreachable := append(slices.Clone(e), "GTC_REPO_BACKEND=cosmos", "GTC_COSMOS_ENDPOINT=http://127.0.0.1:9/",
		"GTC_COSMOS_KEY="+base64.StdEncoding.EncodeToString([]byte("not-a-real-key")))
	out, stderr, code = runGTC(t, unreachable, "release", "list")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "2 of 2 releases", lines(out)[3])

	// show: the head in words, the split sizes, the files; --json the manifest as stored.
	out, stderr, code = runGTC(t, e, "release", "show", "v1.0")
	require.Equal(t, 0, code, stderr)
	head, files, ok := strings.Cut(out, "\n\n")
	require.True(t, ok, out)
	shown, tagLines := map[string]string{}, map[string]string{}
	label := ""
	for _, l := range lines(head) {
		f := fields(l)
		if strings.HasPrefix(l, " ") { // a further line of the label above
			require.Len(t, f, 1, l)
			f = []string{label, f[0]}
		}
		require.Len(t, f, 2, l)
		label = f[0]
		shown[label] = f[1]
		if label == "tags" {
			group, _, _ := strings.Cut(f[1], ": ")
			tagLines[group] = f[1]
		}
	}
	for tag, n := range m.Counts.Tags {
		group, value, _ := strings.Cut(tag, ":")
		assert.Regexp(t, `^`+regexp.QuoteMeta(group)+`: (.*, )?`+regexp.QuoteMeta(fmt.Sprintf("%s %d", value, n))+`(,|$)`, tagLines[group], tag)
	}
	assert.Contains(t, tagLines, "topic", "one line per tag group")
	assert.Equal(t, "v1.0", shown["release"])
	assert.Equal(t, m.CreatedAt+" by ci-bot", shown["created"])
	assert.Equal(t, "First cut.", shown["notes"])
	assert.Equal(t, fmt.Sprintf("%d (%d records)", m.Count, m.Records), shown["items"])
	assert.Equal(t, m.ContentHash, shown["content hash"])
	assert.Equal(t, "approved; datasets: all", shown["selection"])
	assert.Equal(t, fmt.Sprintf("test %d (0.2), train %d (0.8)", m.Counts.Splits["test"], m.Counts.Splits["train"]), shown["splits"])
	assert.Equal(t, "jsonl, csv", shown["formats"])
	assert.Equal(t, "approved "+fmt.Sprint(m.Count), shown["statuses"])
	got = lines(files)
	require.Len(t, got, 1+len(m.Files), files)
	for i, f := range m.Files {
		assert.Equal(t, f.Name, fields(got[1+i])[0])
	}
	out, stderr, code = runGTC(t, e, "release", "show", "v2")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, lines(out), "selection      every status; datasets: customer-support")
	assert.Contains(t, lines(out), "stratified by  topic")

	out, stderr, code = runGTC(t, e, "release", "show", "--json", "v1.0")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, string(manifest), out)

	// get: a data file to a file, the manifest to stdout.
	path := filepath.Join(dir, "train.jsonl")
	out, stderr, code = runGTC(t, e, "release", "get", "v1.0", "train.jsonl", "--out", path)
	require.Equal(t, 0, code, stderr)
	stored, err := os.ReadFile(filepath.Join(dir, "exports", "releases", "v1.0", "train.jsonl"))
	require.NoError(t, err)
	fetched, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(stored, fetched))
	assert.Equal(t, fmt.Sprintf("release get: train.jsonl (%d bytes) written to %s\n", len(stored), path), out)
	out, stderr, code = runGTC(t, e, "release", "get", "v1.0", "--out", "-")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, string(manifest), out)
	_, stderr, code = runGTC(t, e, "release", "get", "v1.0", ".reserved", "--out", filepath.Join(dir, "x"))
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "release get: File not found")
	assert.NoFileExists(t, filepath.Join(dir, "x"))
	_, stderr, code = runGTC(t, e, "release", "show", "v9")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "release show: Release 'v9' not found")
}

func TestReleaseDeleteKeepsTheName(t *testing.T) {
	dir := t.TempDir()
	e := env(dir)
	_, stderr, code := runGTC(t, e, "seed", "--items", "30", "--datasets", "2")
	require.Equal(t, 0, code, stderr)
	_, stderr, code = runGTC(t, e, "release", "create", "r1", "--format", "jsonl")
	require.Equal(t, 0, code, stderr)
	m, _ := readRelease(t, dir, "r1")
	assert.Equal(t, map[string]int{gtc.AllSplit: m.Count}, m.Counts.Splits, "no --split: one split")

	out, stderr, code := runGTC(t, e, "release", "delete", "r1", "--actor", "root")
	require.Equal(t, 0, code, stderr)
	var tomb struct{ DeletedAt, DeletedBy string }
	data, err := os.ReadFile(filepath.Join(dir, "exports", "releases", "r1", ".deleted"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &tomb))
	assert.Equal(t, "root", tomb.DeletedBy)
	assert.Equal(t, "release r1 deleted by root at "+tomb.DeletedAt+"; its name stays taken\n", out)
	entries, err := os.ReadDir(filepath.Join(dir, "exports", "releases", "r1"))
	require.NoError(t, err)
	var left []string
	for _, en := range entries {
		left = append(left, en.Name())
	}
	assert.Equal(t, []string{".deleted", ".reserved"}, left, "the files are gone, the tombstone stays")

	// The name is never given again; reading or deleting it says who deleted it, and when.
	out, stderr, code = runGTC(t, e, "release", "create", "r1", "--format", "jsonl")
	assert.Equal(t, 2, code, stderr)
	assert.Empty(t, out)
	assert.Contains(t, stderr, "release create: Release name 'r1' belonged to a deleted release; a name is never reused")
	_, err = os.Stat(filepath.Join(dir, "exports", "releases", "r1", "manifest.json"))
	assert.True(t, os.IsNotExist(err))
	for _, cmd := range []string{"show", "delete"} {
		_, stderr, code = runGTC(t, e, "release", cmd, "r1")
		assert.Equal(t, 2, code, stderr)
		assert.Contains(t, stderr, "release "+cmd+": Release 'r1' was deleted by root at "+tomb.DeletedAt)
	}
	out, stderr, code = runGTC(t, e, "release", "list")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "0 of 0 releases", lines(out)[1])

	// A live name is refused too.
	_, stderr, code = runGTC(t, e, "release", "create", "r2", "--format", "jsonl")
	require.Equal(t, 0, code, stderr)
	_, stderr, code = runGTC(t, e, "release", "create", "r2", "--format", "csv")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "release create: Release 'r2' already exists")
	_, stderr, code = runGTC(t, e, "release", "delete", "r3")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "release delete: Release 'r3' not found")
}

func TestReleaseBadArguments(t *testing.T) {
	dir := t.TempDir()
	e := env(dir)
	_, stderr, code := runGTC(t, e, "seed", "--items", "20", "--datasets", "1")
	require.Equal(t, 0, code, stderr)

	// Every problem of a request, one a line, named by its flag.
	out, stderr, code := runGTC(t, e, "release", "create", "bad name", "--split", "train=0.7,Test=0.2",
		"--format", "jsonl", "--format", "nope", "--status", "done", "--exclude-tag", "nocolon", "--stratify-by", "colour")
	assert.Equal(t, 2, code, stderr)
	assert.Empty(t, out)
	for _, want := range []string{
		`NAME: Release name "bad name" must start with a letter or digit`,
		`--status: Invalid status value 'done'`,
		`--exclude-tag: Tag "nocolon" is not of the form group:value`,
		`--split Test: Split name "Test" must start with a lower-case letter`,
		`--split: The split ratios add up to 0.9; they must add up to 1`,
		`--stratify-by: "colour" is not a tag group (known: `,
		`--format: Unknown export format 'nope' (known: `,
	} {
		assert.Contains(t, stderr, "\n  "+want, "one problem a line")
	}
	assert.Contains(t, stderr, "gtc: release create: the release was not made:\n")

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"release"}, "release: give a subcommand: create, list, show, get, delete or diff"},
		{[]string{"release", "publish"}, `release: unknown subcommand "publish"`},
		{[]string{"release", "create"}, "release create: give one NAME"},
		{[]string{"release", "create", "a", "b"}, "release create: give one NAME"},
		{[]string{"release", "create", "x", "--split", "train"}, `--split "train": must be name=ratio[,name=ratio...]`},
		{[]string{"release", "create", "x", "--split", "train=most"}, `--split "train=most": the ratio of "train" is not a number`},
		{[]string{"release", "create", "x", "--colour", "red"}, "release create: flag provided but not defined: -colour"},
		{[]string{"release", "create", "x", "--tag", "topic:none", "--format", "jsonl"},
			"selection: No item matches the release's selection; an empty release is not made"},
		{[]string{"release", "list", "--limit", "0"}, "release list: --limit 0: must be between 1 and 1000"},
		{[]string{"release", "list", "extra"}, `release list: unexpected argument "extra"`},
		{[]string{"release", "show"}, "release show: give one NAME"},
		{[]string{"release", "get", "x"}, "usage: gtc release get NAME [FILE] --out PATH|-"},
		{[]string{"release", "delete"}, "release delete: give one NAME"},
		{[]string{"release", "diff", "a"}, `release diff: give two releases, A B (B may be "current")`},
		{[]string{"release", "diff", "a", "current", "--kind", "moved"}, `release diff: --kind "moved": must be one of added, removed, changed`},
		{[]string{"release", "diff", "a", "b", "--limit", "501"}, "release diff: --limit 501: must be between 1 and 500"},
	} {
		out, stderr, code := runGTC(t, e, tc.args...)
		assert.Equal(t, 2, code, "%v: %s", tc.args, stderr)
		assert.Contains(t, stderr, tc.want, tc.args)
		assert.Empty(t, out, tc.args)
	}
	entries, err := os.ReadDir(filepath.Join(dir, "releases"))
	if !os.IsNotExist(err) {
		require.NoError(t, err)
		assert.Empty(t, entries, "no refused request leaves anything in storage")
	}

	// A bad flag shows the subcommand's usage and flags.
	_, stderr, _ = runGTC(t, e, "release", "diff", "a", "b", "--kind")
	assert.Contains(t, stderr, "usage: gtc release diff A B [--kind added|removed|changed] [--limit N]\n")
	assert.Contains(t, stderr, "-limit int")
	out, _, code = runGTC(t, e, "release", "help")
	assert.Equal(t, 0, code)
	for _, sub := range []string{"create", "list", "show", "get", "delete", "diff"} {
		assert.Contains(t, out, "\n  gtc release "+sub+" ", sub)
	}
}

func TestPrintReleaseDiff(t *testing.T) {
	r := func(n int64) *int64 { return &n }
	next := "more"
	d := &export.ReleaseDiff{
		From: "v1", To: "current", Counts: export.DiffCounts{Added: 1, Removed: 1, Changed: 2, Unchanged: 36},
		TagShift: []export.TagShift{{Tag: "topic:keys", From: 12, To: 14, Delta: 2}, {Tag: "source:sme", From: 5, To: 4, Delta: -1}},
		Items: []export.DiffItem{
			{Kind: "added", DatasetName: "support", ID: "q0", ToRevision: r(1)},
			{Kind: "changed", DatasetName: "support", ID: "q1", FromRevision: r(2), ToRevision: r(4), Changes: []gtc.PatchOp{
				{Op: "replace", Path: "/comment", Old: json.RawMessage(`"needs a check"`), Value: json.RawMessage(`"checked"`)},
				{Op: "add", Path: "/reviewedAt", Value: json.RawMessage(`"2026-01-16T00:00:00Z"`)},
			}},
			{Kind: "changed", DatasetName: "support", ID: "q2", FromRevision: r(1), ToRevision: r(3), ChangesUnavailable: "Its revisions before r3 were pruned."},
			{Kind: "removed", DatasetName: "support", ID: "q9", FromRevision: r(5)},
		},
		NextCursor: &next,
	}
	var stdout, stderr bytes.Buffer
	require.NoError(t, printReleaseDiff(&stdout, &stderr, d))
	got := lines(stdout.String())
	require.Len(t, got, 11, stdout.String())
	assert.Equal(t, "v1 → current: 1 added, 1 removed, 2 changed, 36 unchanged", got[0])
	assert.Equal(t, "tag shift:", got[1])
	assert.Equal(t, []string{"topic:keys", "12 → 14", "+2"}, fields(got[2]))
	assert.Equal(t, []string{"source:sme", "5 → 4", "-1"}, fields(got[3]))
	assert.Equal(t, []string{"added", "support/q0", "- → r1"}, fields(got[4]))
	assert.Equal(t, []string{"changed", "support/q1", "r2 → r4"}, fields(got[5]))
	assert.Equal(t, []string{"replace /comment", `"needs a check" → "checked"`}, fields(got[6]))
	assert.Equal(t, []string{"add /reviewedAt", `(none) → "2026-01-16T00:00:00Z"`}, fields(got[7]))
	assert.Equal(t, []string{"changed", "support/q2", "r1 → r3"}, fields(got[8]))
	assert.Equal(t, []string{"(changes unknown: Its revisions before r3 were pruned.)"}, fields(got[9]))
	assert.Equal(t, []string{"removed", "support/q9", "r5 → -"}, fields(got[10]))
	for _, i := range []int{6, 7, 9} {
		assert.True(t, strings.HasPrefix(got[i], "  "), "a change is indented under its item: %q", got[i])
	}
	assert.Equal(t, "release diff: more items than the 4 shown (raise --limit or narrow --kind)\n", stderr.String())

	// Nothing changed: the counts only.
	stdout.Reset()
	stderr.Reset()
	require.NoError(t, printReleaseDiff(&stdout, &stderr, &export.ReleaseDiff{From: "v1", To: "v1", Counts: export.DiffCounts{Unchanged: 40}}))
	assert.Equal(t, "v1 → v1: 0 added, 0 removed, 0 changed, 40 unchanged\n", stdout.String())
	assert.Empty(t, stderr.String())
}

func TestReleaseDiffCommand(t *testing.T) {
	dir := t.TempDir()
	e := env(dir)
	_, stderr, code := runGTC(t, e, "seed", "--items", "30", "--datasets", "2")
	require.Equal(t, 0, code, stderr)
	_, stderr, code = runGTC(t, e, "release", "create", "approved", "--format", "jsonl")
	require.Equal(t, 0, code, stderr)
	_, stderr, code = runGTC(t, e, "release", "create", "everything", "--status", "", "--format", "jsonl")
	require.Equal(t, 0, code, stderr)
	a, _ := readRelease(t, dir, "approved")
	b, _ := readRelease(t, dir, "everything")
	require.Less(t, a.Count, b.Count, "the seed has items of other statuses")

	out, stderr, code := runGTC(t, e, "release", "diff", "approved", "everything", "--limit", "500")
	require.Equal(t, 0, code, stderr)
	got := lines(out)
	assert.Equal(t, fmt.Sprintf("approved → everything: %d added, 0 removed, 0 changed, %d unchanged", b.Count-a.Count, a.Count), got[0])
	added := 0
	for _, l := range got[1:] {
		if strings.HasPrefix(l, "added") {
			added++
		}
	}
	assert.Equal(t, b.Count-a.Count, added, "one line per added item:\n%s", out)

	out, stderr, code = runGTC(t, e, "release", "diff", "approved", "current")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, fmt.Sprintf("approved → current: 0 added, 0 removed, 0 changed, %d unchanged\n", a.Count), out)

	_, stderr, code = runGTC(t, e, "release", "diff", "approved", "nope")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "Release 'nope' not found")
}
