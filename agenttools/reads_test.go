package agenttools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gtc "github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/codec"
	"github.com/gtc-dev/gtc/storage/sqlite"
	"github.com/gtc-dev/gtc/tagging"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rdBase is the fixture's clock origin.
var rdBase = time.Date(2025, 11, 20, 10, 0, 0, 0, time.UTC)

// rdKnown is the fixture's vocabulary.
var rdKnown = []string{"difficulty:hard", "source:sme", "topic:install"}

type rdFixtureItem struct {
	ds, id   string
	status   gtc.Status
	manual   []string
	updated  time.Duration // after rdBase
	reviewed bool
	assigned string
	comment  string
	history  []gtc.HistoryEntry
}

// rdFixture: six items over three datasets. "password" is in the conversation of
// quiet-harbor and (in capitals) router-2, and only in the id and comment of
// password-reset-guide.
var rdFixture = []rdFixtureItem{
	{ds: "customer-feedback", id: "amber-falcon", status: gtc.StatusApproved, manual: []string{"source:sme", "topic:instal"},
		updated: time.Hour, reviewed: true, history: []gtc.HistoryEntry{U("Install fails with error 1603 on Windows 11"), A("Run the installer as an administrator.")}},
	{ds: "customer-feedback", id: "quiet-harbor", status: gtc.StatusDraft, manual: []string{"topic:install"},
		updated: 2 * time.Hour, assigned: "bob@example.com", history: []gtc.HistoryEntry{U("How do I reset my password?"), A("Use the reset link.")}},
	{ds: "customer-feedback", id: "password-reset-guide", status: gtc.StatusDraft, comment: "password reset",
		updated: 30 * time.Minute, history: []gtc.HistoryEntry{U("Where is the login page?"), A("Top right.")}},
	{ds: "network-diagnostics", id: "router-1", status: gtc.StatusSkipped, manual: []string{"difficulty:hard", "topic:install"},
		updated: 3 * time.Hour, reviewed: true, history: []gtc.HistoryEntry{U("Router firmware install keeps failing after the update to version 4.2 of the firmware"), A("Reset it first."), U("Still failing"), A("Call support.")}},
	{ds: "network-diagnostics", id: "router-2", status: gtc.StatusDeleted, manual: []string{"turns:three"},
		updated: 4 * time.Hour, reviewed: true, history: []gtc.HistoryEntry{U("PASSWORD reset for the router admin"), A("Hold the button.")}},
	{ds: "Mixed DS", id: "x1", status: gtc.StatusDraft, history: []gtc.HistoryEntry{U("hello")}},
}

// rdOpen opens a SQLite store in the test's directory holding items.
func rdOpen(t *testing.T, items ...*gtc.Item) gtc.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(t.TempDir(), "gtc.db"), Synchronous: "NORMAL"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	for _, it := range items {
		_, err := st.Items().Create(context.Background(), it)
		require.NoError(t, err)
	}
	return st
}

// rdItems builds the fixture items with their computed tags.
func rdItems(t *testing.T, reg *tagging.Registry, fix []rdFixtureItem) []*gtc.Item {
	t.Helper()
	var out []*gtc.Item
	for _, f := range fix {
		it := gtc.NewItem(f.ds, f.id)
		it.Bucket = gtc.DeriveBucket(f.ds, f.id)
		it.Status = f.status
		it.ManualTags = append([]string{}, f.manual...)
		it.UpdatedAt = rdBase.Add(f.updated)
		if f.reviewed {
			r := rdBase.Add(f.updated - time.Minute)
			it.ReviewedAt = &r
		}
		if f.assigned != "" {
			a := f.assigned
			it.AssignedTo = &a
		}
		it.Comment = f.comment
		it.History = append(it.History, f.history...)
		it.ComputedTags = reg.Compute(it)
		out = append(out, it)
	}
	return out
}

func rdNew(t *testing.T, st gtc.Store) *Reads {
	t.Helper()
	return NewReads(ReadsDeps{Store: st, Registry: defaultRegistry(t),
		Known: func(context.Context) ([]string, error) { return rdKnown, nil }})
}

func rdFixtureReads(t *testing.T) (*Reads, gtc.Store) {
	t.Helper()
	st := rdOpen(t, rdItems(t, defaultRegistry(t), rdFixture)...)
	return rdNew(t, st), st
}

// rdJSON is the data of a result as generic JSON, the form clients see.
func rdJSON(t *testing.T, res ToolResult) map[string]any {
	t.Helper()
	b, err := json.Marshal(res.Data)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m), string(b))
	return m
}

func rdFirstLine(s string) string { first, _, _ := strings.Cut(s, "\n"); return first }

// rdLines are the content lines after the first.
func rdLines(s string) []string { return strings.Split(s, "\n")[1:] }

// rdCheckEnvelope checks the invariants every answer keeps.
func rdCheckEnvelope(t *testing.T, res ToolResult) {
	t.Helper()
	assert.LessOrEqual(t, len([]rune(res.Content)), MaxToolContentLength)
	m := rdJSON(t, res)
	_, hasErr := m["error"]
	assert.Equal(t, hasErr, res.IsError, "isError is true exactly when data.error exists")
	if hasErr {
		assert.Equal(t, res.Content, m["error"].(map[string]any)["message"])
	}
}

func rdErrCode(t *testing.T, res ToolResult) string {
	t.Helper()
	require.True(t, res.IsError, res.Content)
	return rdJSON(t, res)["error"].(map[string]any)["code"].(string)
}

// --- tag_stats ------------------------------------------------------------------------------

func TestTagStats(t *testing.T) {
	r, _ := rdFixtureReads(t)
	ctx := context.Background()
	type row struct {
		tag, kind string
		count     int
		inVocab   any // nil for computed
	}
	tests := []struct {
		name      string
		args      map[string]any
		first     string
		rows      []row // the head of data.tags, in order
		distinct  int
		scanned   int
		without   int
		truncated bool
		contains  []string
	}{
		{
			name:     "defaults: every tag by count, then name",
			args:     map[string]any{"kind": "all", "sort_by": "count", "limit": 50},
			scanned:  6,
			without:  2,
			distinct: 12,
			first:    "Tag usage over 6 items (all datasets, all statuses), by count, 12 of 12 tags:",
			rows: []row{
				{"question_length:short", "computed", 6, nil},
				{"retrieval_behavior:no_refs", "computed", 6, nil},
				{"turns:singleturn", "computed", 5, nil},
				{"dataset:customer-feedback", "computed", 3, nil},
				{"dataset:network-diagnostics", "computed", 2, nil},
				{"topic:install", "manual", 2, true},
				{"dataset:Mixed DS", "computed", 1, nil},
				{"difficulty:hard", "manual", 1, true},
				{"source:sme", "manual", 1, true},
				{"topic:instal", "manual", 1, false},
				{"turns:multiturn", "computed", 1, nil},
				{"turns:three", "manual", 1, false},
			},
			contains: []string{
				"retrieval_behavior:no_refs 6 (computed)",
				"topic:install 2 (manual)",
				"topic:instal 1 (manual, not in vocabulary)",
				"turns:three 1 (manual, not in vocabulary)",
				"dataset:Mixed DS 1 (computed)",
				"Items without manual tags: 2.",
			},
		},
		{
			name:     "manual tags by name",
			args:     map[string]any{"kind": "manual", "sort_by": "name", "limit": 50},
			scanned:  6,
			without:  2,
			distinct: 5,
			first:    "Tag usage over 6 items (all datasets, all statuses, manual tags), by name, 5 of 5 tags:",
			rows: []row{
				{"difficulty:hard", "manual", 1, true},
				{"source:sme", "manual", 1, true},
				{"topic:instal", "manual", 1, false},
				{"topic:install", "manual", 2, true},
				{"turns:three", "manual", 1, false},
			},
		},
		{
			name:     "computed group with a case-keeping value",
			args:     map[string]any{"kind": "computed", "group": "Dataset", "sort_by": "count", "limit": 50},
			scanned:  6,
			without:  2,
			distinct: 3,
			first:    "Tag usage over 6 items (all datasets, all statuses, computed tags, group dataset), by count, 3 of 3 tags:",
			rows: []row{
				{"dataset:customer-feedback", "computed", 3, nil},
				{"dataset:network-diagnostics", "computed", 2, nil},
				{"dataset:Mixed DS", "computed", 1, nil},
			},
		},
		{
			name:     "group given as 'topic:'",
			args:     map[string]any{"group": "topic:", "sort_by": "count", "limit": 50},
			scanned:  6,
			without:  2,
			distinct: 2,
			first:    "Tag usage over 6 items (all datasets, all statuses, group topic), by count, 2 of 2 tags:",
			rows:     []row{{"topic:install", "manual", 2, true}, {"topic:instal", "manual", 1, false}},
		},
		{
			name:     "dataset and status",
			args:     map[string]any{"dataset": "customer-feedback", "status": "draft", "kind": "manual", "limit": 50},
			scanned:  2,
			without:  1,
			distinct: 1,
			first:    "Tag usage over 2 items (dataset customer-feedback, status draft, manual tags), by count, 1 of 1 tag:",
			rows:     []row{{"topic:install", "manual", 1, true}},
		},
		{
			name:      "limit cuts the list",
			args:      map[string]any{"kind": "manual", "limit": 2},
			scanned:   6,
			without:   2,
			distinct:  5,
			truncated: true,
			first:     "Tag usage over 6 items (all datasets, all statuses, manual tags), by count, 2 of 5 tags:",
			rows:      []row{{"topic:install", "manual", 2, true}, {"difficulty:hard", "manual", 1, true}},
			contains:  []string{"\n… and 3 more tags\n"},
		},
		{
			name:     "nothing matches",
			args:     map[string]any{"dataset": "Mixed DS", "status": "approved", "limit": 50},
			first:    "Tag usage over 0 items (dataset Mixed DS, status approved), by count, 0 of 0 tags.",
			contains: []string{"Items without manual tags: 0."},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := r.TagStats(ctx, tc.args)
			rdCheckEnvelope(t, res)
			require.False(t, res.IsError, res.Content)
			assert.Equal(t, tc.first, rdFirstLine(res.Content))
			for _, c := range tc.contains {
				assert.Contains(t, res.Content, c)
			}
			d := res.Data.(TagStatsData)
			assert.Equal(t, tc.scanned, d.ItemsScanned)
			assert.Equal(t, tc.without, d.ItemsWithoutManualTags)
			assert.Equal(t, tc.distinct, d.DistinctTags)
			assert.Equal(t, tc.truncated, d.Truncated)
			require.GreaterOrEqual(t, len(d.Tags), len(tc.rows))
			for i, want := range tc.rows {
				got := d.Tags[i]
				assert.Equal(t, want.tag, got.Tag, "row %d", i)
				assert.Equal(t, want.kind, got.Kind, "row %d", i)
				assert.Equal(t, want.count, got.Count, "row %d", i)
				if want.inVocab == nil {
					assert.Nil(t, got.InVocabulary, "row %d", i)
				} else if assert.NotNil(t, got.InVocabulary, "row %d", i) {
					assert.Equal(t, want.inVocab, *got.InVocabulary, "row %d", i)
				}
			}
			// Every count and tag of data is in the text, unless the text ran out of room.
			for _, st := range d.Tags {
				assert.Contains(t, res.Content, fmt.Sprintf("%s %s (%s", st.Tag, Count(st.Count), st.Kind))
			}
		})
	}
}

func TestTagStatsDataShape(t *testing.T) {
	r, _ := rdFixtureReads(t)
	m := rdJSON(t, r.TagStats(context.Background(), map[string]any{"group": "turns", "sort_by": "name", "limit": 50}))
	assert.Equal(t, map[string]any{
		"itemsScanned": 6.0, "distinctTags": 3.0, "itemsWithoutManualTags": 2.0, "truncated": false,
		"tags": []any{
			map[string]any{"tag": "turns:multiturn", "kind": "computed", "count": 1.0, "inVocabulary": nil},
			map[string]any{"tag": "turns:singleturn", "kind": "computed", "count": 5.0, "inVocabulary": nil},
			map[string]any{"tag": "turns:three", "kind": "manual", "count": 1.0, "inVocabulary": false},
		},
	}, m)
}

// rdPlainStore hides the store's TagCounter, so tag_stats takes the scanning fallback.
type rdPlainStore struct {
	gtc.Store
	items gtc.ItemStore
}

func (s rdPlainStore) Items() gtc.ItemStore { return s.items }

type rdPlainItems struct{ gtc.ItemStore }

func TestTagStatsFallbackAgrees(t *testing.T) {
	r, st := rdFixtureReads(t)
	_, ok := st.Items().(gtc.TagCounter)
	require.True(t, ok, "the SQLite store counts tags from its index")
	plain := rdNew(t, rdPlainStore{Store: st, items: rdPlainItems{st.Items()}})
	_, ok = plain.store.Items().(gtc.TagCounter)
	require.False(t, ok)
	for _, args := range []map[string]any{
		{"limit": 500},
		{"dataset": "customer-feedback", "limit": 500},
		{"status": "draft", "limit": 500},
		{"dataset": "network-diagnostics", "status": "deleted", "kind": "manual", "limit": 500},
	} {
		fast, slow := r.TagStats(context.Background(), args), plain.TagStats(context.Background(), args)
		assert.Equal(t, slow, fast, "%v", args)
	}
}

func TestTagStatsUnknownDataset(t *testing.T) {
	r, _ := rdFixtureReads(t)
	res := r.TagStats(context.Background(), map[string]any{"dataset": "customer-feedbak", "limit": 50})
	rdCheckEnvelope(t, res)
	assert.Equal(t, CodeUnknownDataset, rdErrCode(t, res))
	assert.Equal(t, "Unknown dataset 'customer-feedbak'. Known datasets: Mixed DS, customer-feedback, network-diagnostics.", res.Content)
	assert.Equal(t, []any{"Mixed DS", "customer-feedback", "network-diagnostics"}, rdJSON(t, res)["error"].(map[string]any)["knownDatasets"])
}

func TestTagStatsManyTagsFitTheText(t *testing.T) {
	reg := defaultRegistry(t)
	it := rdItems(t, reg, rdFixture[:1])[0]
	for i := range 450 {
		it.ManualTags = append(it.ManualTags, fmt.Sprintf("topic:a-rather-long-tag-name-to-fill-the-text-%03d", i))
	}
	r := rdNew(t, rdOpen(t, it))
	res := r.TagStats(context.Background(), map[string]any{"limit": 500})
	rdCheckEnvelope(t, res)
	require.False(t, res.IsError)
	d := res.Data.(TagStatsData)
	assert.Equal(t, 456, len(d.Tags), "450 + 2 manual + 4 computed tags")
	assert.False(t, d.Truncated)
	assert.Less(t, len(res.Content), MaxToolContentLength)
	lines := rdLines(res.Content)
	assert.Equal(t, "Items without manual tags: 0.", lines[len(lines)-1], "the closing line always fits")
	shown := len(lines) - 2
	assert.Equal(t, fmt.Sprintf("… and %d more tags (%d of them in data.tags)", 456-shown, 456-shown), lines[len(lines)-2])
}

// --- dataset_stats --------------------------------------------------------------------------

func TestDatasetStats(t *testing.T) {
	r, _ := rdFixtureReads(t)
	ctx := context.Background()
	cf := fmt.Sprintf("customer-feedback: 3 items (draft 2, approved 1, skipped 0, deleted 0), last updated %s", ContentTime(rdBase.Add(2*time.Hour)))
	nd := fmt.Sprintf("network-diagnostics: 2 items (draft 0, approved 0, skipped 1, deleted 1), last updated %s", ContentTime(rdBase.Add(4*time.Hour)))
	mx := fmt.Sprintf("Mixed DS: 1 item (draft 1, approved 0, skipped 0, deleted 0), last updated %s", ContentTime(rdBase))
	all := "3 datasets, 6 items (draft 3, approved 1, skipped 1, deleted 1):"
	tests := []struct {
		name      string
		args      map[string]any
		want      []string // whole content, line by line
		truncated bool
	}{
		{"by name", map[string]any{"sort_by": "name", "limit": 50}, []string{all, mx, cf, nd}, false},
		{"by total", map[string]any{"sort_by": "total", "limit": 50}, []string{all, cf, nd, mx}, false},
		{"by updatedAt", map[string]any{"sort_by": "updatedAt", "limit": 50}, []string{all, nd, cf, mx}, false},
		{"limit", map[string]any{"sort_by": "total", "limit": 1}, []string{all, cf, "… and 2 more datasets"}, true},
		{"one dataset", map[string]any{"dataset": "network-diagnostics", "sort_by": "name", "limit": 50},
			[]string{"1 dataset, 2 items (draft 0, approved 0, skipped 1, deleted 1):", nd}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := r.DatasetStats(ctx, tc.args)
			rdCheckEnvelope(t, res)
			require.False(t, res.IsError, res.Content)
			assert.Equal(t, strings.Join(tc.want, "\n"), res.Content)
			assert.Equal(t, tc.truncated, res.Data.(DatasetStatsData).Truncated)
		})
	}

	m := rdJSON(t, r.DatasetStats(ctx, map[string]any{"sort_by": "total", "limit": 1}))
	assert.Equal(t, map[string]any{
		"totals": map[string]any{"draft": 3.0, "approved": 1.0, "skipped": 1.0, "deleted": 1.0, "total": 6.0},
		"datasets": []any{map[string]any{"datasetName": "customer-feedback", "draft": 2.0, "approved": 1.0, "skipped": 0.0,
			"deleted": 0.0, "total": 3.0, "lastUpdatedAt": "2025-11-20T12:00:00.000Z"}},
		"truncated": true,
	}, m)

	res := r.DatasetStats(ctx, map[string]any{"dataset": "nope", "limit": 50})
	assert.Equal(t, CodeUnknownDataset, rdErrCode(t, res))
}

func TestDatasetStatsEmptyStore(t *testing.T) {
	r := rdNew(t, rdOpen(t))
	res := r.DatasetStats(context.Background(), map[string]any{"limit": 50})
	assert.Equal(t, "0 datasets, 0 items (draft 0, approved 0, skipped 0, deleted 0).", res.Content)
	assert.Equal(t, []any{}, rdJSON(t, res)["datasets"])
}

// --- search_items ---------------------------------------------------------------------------

func rdSearchArgs(kv ...any) map[string]any {
	args := map[string]any{"sort_by": "updatedAt", "sort_order": "desc", "limit": 10, "offset": 0}
	for i := 0; i < len(kv); i += 2 {
		args[kv[i].(string)] = kv[i+1]
	}
	return args
}

func rdIDs(res ToolResult) []string {
	var ids []string
	for _, it := range res.Data.(SearchItemsData).Items {
		ids = append(ids, it.ID)
	}
	return ids
}

func TestSearchItems(t *testing.T) {
	r, _ := rdFixtureReads(t)
	ctx := context.Background()
	tests := []struct {
		name  string
		args  map[string]any
		total int
		ids   []string
		first string
	}{
		{"no filter: every status, newest first", rdSearchArgs(), 6,
			[]string{"router-2", "router-1", "quiet-harbor", "amber-falcon", "password-reset-guide", "x1"},
			"6 items match (no filter); showing 1-6 by updatedAt desc:"},
		{"keyword matches the conversation only, in any case (not password-reset-guide: id and comment)", rdSearchArgs("keyword", "Password"), 2,
			[]string{"router-2", "quiet-harbor"},
			`2 items match (keyword "password"); showing 1-2 by updatedAt desc:`},
		{"keyword and status", rdSearchArgs("keyword", "password", "status", "draft"), 1,
			[]string{"quiet-harbor"},
			`1 item matches (keyword "password", status draft); showing 1-1 by updatedAt desc:`},
		{"keyword from the conversation", rdSearchArgs("keyword", "login page"), 1,
			[]string{"password-reset-guide"}, `1 item matches (keyword "login page"); showing 1-1 by updatedAt desc:`},
		{"tags are normalized", rdSearchArgs("tags", []string{" Topic : Install "}), 2,
			[]string{"router-1", "quiet-harbor"},
			"2 items match (tags topic:install); showing 1-2 by updatedAt desc:"},
		{"a dataset tag keeps its case", rdSearchArgs("tags", []string{"dataset:Mixed DS"}), 1,
			[]string{"x1"}, "1 item matches (tags dataset:Mixed DS); showing 1-1 by updatedAt desc:"},
		{"exclude tags", rdSearchArgs("dataset", "customer-feedback", "exclude_tags", []string{"topic:install", "topic:instal"}), 1,
			[]string{"password-reset-guide"},
			"1 item matches (dataset customer-feedback, without tags topic:install, topic:instal); showing 1-1 by updatedAt desc:"},
		{"computed filter tag", rdSearchArgs("tags", []string{"turns:multiturn"}), 1, []string{"router-1"},
			"1 item matches (tags turns:multiturn); showing 1-1 by updatedAt desc:"},
		{"by id ascending", rdSearchArgs("sort_by", "id", "sort_order", "asc", "dataset", "customer-feedback"), 3,
			[]string{"amber-falcon", "password-reset-guide", "quiet-harbor"},
			"3 items match (dataset customer-feedback); showing 1-3 by id asc:"},
		{"reviewedAt ascending: never reviewed first", rdSearchArgs("sort_by", "reviewedAt", "sort_order", "asc"), 6,
			[]string{"x1", "password-reset-guide", "quiet-harbor", "amber-falcon", "router-1", "router-2"},
			"6 items match (no filter); showing 1-6 by reviewedAt asc:"},
		{"by tag count", rdSearchArgs("sort_by", "tagCount", "sort_order", "desc", "limit", 2), 6,
			[]string{"router-1", "amber-falcon"},
			"6 items match (no filter); showing 1-2 by tagCount desc:"},
		{"offset and limit", rdSearchArgs("limit", 2, "offset", 2), 6,
			[]string{"quiet-harbor", "amber-falcon"},
			"6 items match (no filter); showing 3-4 by updatedAt desc:"},
		{"offset and limit with a keyword", rdSearchArgs("keyword", "e", "limit", 2, "offset", 1), 6,
			[]string{"router-1", "quiet-harbor"},
			`6 items match (keyword "e"); showing 2-3 by updatedAt desc:`},
		{"offset past the end", rdSearchArgs("offset", 10), 6, nil,
			"6 items match (no filter); offset 10 is past the last one, nothing to show."},
		{"no match", rdSearchArgs("keyword", "zzz", "dataset", "Mixed DS"), 0, nil,
			`No items match (keyword "zzz", dataset Mixed DS).`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := r.SearchItems(ctx, tc.args)
			rdCheckEnvelope(t, res)
			require.False(t, res.IsError, res.Content)
			d := res.Data.(SearchItemsData)
			assert.Equal(t, tc.total, d.Total)
			assert.Equal(t, tc.ids, rdIDs(res))
			assert.Equal(t, tc.first, rdFirstLine(res.Content))
			for i, it := range d.Items {
				assert.Contains(t, res.Content, fmt.Sprintf("%d. %s/%s [%s]", d.Offset+i+1, it.DatasetName, it.ID, it.Status))
			}
		})
	}
}

func TestSearchItemsTextAndData(t *testing.T) {
	r, _ := rdFixtureReads(t)
	res := r.SearchItems(context.Background(), rdSearchArgs("keyword", "password", "limit", 1))
	assert.Equal(t, strings.Join([]string{
		`2 items match (keyword "password"); showing 1-1 by updatedAt desc:`,
		`1. network-diagnostics/router-2 [deleted] updated 2025-11-20T14:00:00Z "PASSWORD reset for the router admin" manual: turns:three | computed: dataset:network-diagnostics, question_length:short, retrieval_behavior:no_refs, turns:singleturn`,
		`… and 1 more; call search_items again with offset 1.`,
	}, "\n"), res.Content)
	assert.Equal(t, map[string]any{"total": 2.0, "offset": 0.0, "items": []any{map[string]any{
		"datasetName": "network-diagnostics", "bucket": gtc.DeriveBucket("network-diagnostics", "router-2"), "id": "router-2",
		"status": "deleted", "question": "PASSWORD reset for the router admin", "manualTags": []any{"turns:three"},
		"computedTags": []any{"dataset:network-diagnostics", "question_length:short", "retrieval_behavior:no_refs", "turns:singleturn"},
		"tagCount":     5.0, "updatedAt": "2025-11-20T14:00:00.000Z", "reviewedAt": "2025-11-20T13:59:00.000Z", "assignedTo": nil,
	}}}, rdJSON(t, res))

	res = r.SearchItems(context.Background(), rdSearchArgs("sort_by", "reviewedAt", "dataset", "customer-feedback", "status", "draft", "tags", []string{"topic:install"}))
	assert.Equal(t, `1. customer-feedback/quiet-harbor [draft] updated 2025-11-20T12:00:00Z reviewed never "How do I reset my password?" manual: topic:install | computed: dataset:customer-feedback, question_length:short, retrieval_behavior:no_refs, turns:singleturn`,
		rdLines(res.Content)[0])
	it := res.Data.(SearchItemsData).Items[0]
	assert.Nil(t, it.ReviewedAt)
	require.NotNil(t, it.AssignedTo)
	assert.Equal(t, "bob@example.com", *it.AssignedTo)
}

func TestSearchItemsErrors(t *testing.T) {
	r, _ := rdFixtureReads(t)
	res := r.SearchItems(context.Background(), rdSearchArgs("tags", []string{"topic:install", "install"}))
	rdCheckEnvelope(t, res)
	assert.Equal(t, CodeInvalidTag, rdErrCode(t, res))
	assert.Equal(t, "Invalid tag format (expected group:value): 'install'", res.Content)
	assert.Equal(t, []any{map[string]any{"field": "tags[1]", "message": res.Content}}, rdJSON(t, res)["error"].(map[string]any)["fields"])

	res = r.SearchItems(context.Background(), rdSearchArgs("exclude_tags", []string{"a:"}))
	assert.Equal(t, CodeInvalidTag, rdErrCode(t, res))

	res = r.SearchItems(context.Background(), rdSearchArgs("dataset", "Customer-Feedback"))
	assert.Equal(t, CodeUnknownDataset, rdErrCode(t, res))
}

func TestSearchItemsLongPageFitsTheText(t *testing.T) {
	reg := defaultRegistry(t)
	var fix []rdFixtureItem
	for i := range 60 {
		fix = append(fix, rdFixtureItem{ds: "big", id: fmt.Sprintf("item-%02d", i), status: gtc.StatusDraft, updated: time.Duration(i) * time.Minute,
			manual:  []string{"topic:" + strings.Repeat("x", 90), "source:" + strings.Repeat("y", 90)},
			history: []gtc.HistoryEntry{U(strings.Repeat("question words ", 20))}})
	}
	r := rdNew(t, rdOpen(t, rdItems(t, reg, fix)...))
	res := r.SearchItems(context.Background(), rdSearchArgs("limit", 50))
	rdCheckEnvelope(t, res)
	assert.Len(t, res.Data.(SearchItemsData).Items, 50)
	lines := rdLines(res.Content)
	last := lines[len(lines)-1]
	assert.Equal(t, fmt.Sprintf("… and %d more; call search_items again with offset %d.", 60-len(lines)+1, len(lines)-1), last)
}

// --- get_item -------------------------------------------------------------------------------

func TestGetItem(t *testing.T) {
	r, st := rdFixtureReads(t)
	ctx := context.Background()
	k := gtc.Key{DatasetName: "customer-feedback", Bucket: gtc.DeriveBucket("customer-feedback", "quiet-harbor"), ID: "quiet-harbor"}
	stored, err := st.Items().Get(ctx, k)
	require.NoError(t, err)
	want := codec.ItemAPIJSON(stored)

	for _, args := range []map[string]any{
		{"dataset": k.DatasetName, "id": k.ID},
		{"dataset": k.DatasetName, "id": k.ID, "bucket": k.Bucket},
		{"dataset": k.DatasetName, "id": k.ID, "bucket": strings.ToUpper(k.Bucket)},
	} {
		res := r.GetItem(ctx, args)
		rdCheckEnvelope(t, res)
		require.False(t, res.IsError, res.Content)
		got, err := json.Marshal(res.Data)
		require.NoError(t, err)
		assert.JSONEq(t, string(want), string(got), "data is the item as GET returns it")
		assert.Contains(t, string(got), `"_etag"`)
		assert.Contains(t, string(got), `"tags"`)
		assert.Equal(t, strings.Join([]string{
			"customer-feedback/quiet-harbor [draft] bucket " + k.Bucket + ", updated 2025-11-20T12:00:00Z, reviewed never, assigned to bob@example.com",
			"Manual tags: topic:install",
			"Computed tags: dataset:customer-feedback, question_length:short, retrieval_behavior:no_refs, turns:singleturn",
			"Comment: none",
			"Conversation (2 turns):",
			"1. user: How do I reset my password?",
			"2. assistant: Use the reset link.",
			"Tool calls (0): none",
			"Expected tools: none",
			"References: 0",
		}, "\n"), res.Content)
	}

	for _, args := range []map[string]any{
		{"dataset": "customer-feedback", "id": "nope"},
		{"dataset": "nope", "id": "quiet-harbor"},
		{"dataset": k.DatasetName, "id": k.ID, "bucket": gtc.DeriveBucket("x", "y")},
	} {
		res := r.GetItem(ctx, args)
		rdCheckEnvelope(t, res)
		assert.Equal(t, CodeNotFound, rdErrCode(t, res), "%v", args)
		assert.True(t, strings.HasPrefix(res.Content, "Not found: no item "+args["dataset"].(string)+"/"+args["id"].(string)), res.Content)
	}
}

func TestGetItemLongConversation(t *testing.T) {
	reg := defaultRegistry(t)
	fix := rdFixtureItem{ds: "long", id: "chat", status: gtc.StatusApproved, reviewed: true, comment: "needs\na  look"}
	for i := range 30 {
		fix.history = append(fix.history, U(fmt.Sprintf("q%d %s", i, strings.Repeat("ab ", 300))), A("ok"))
	}
	it := rdItems(t, reg, []rdFixtureItem{fix})[0]
	step := int64(1)
	it.ToolCalls = []gtc.ToolCall{{ID: "c1", Name: "search_docs", CallType: "tool", StepNumber: &step}, {ID: "c2", Name: "create_ticket", CallType: "tool"}}
	it.ExpectedTools.Required = []gtc.ToolExpectation{{Name: "search_docs"}}
	it.ExpectedTools.NotNeeded = []gtc.ToolExpectation{{Name: "escalate_to_human"}}
	it.Plugins[gtc.RAGCompatSlot] = gtc.PluginPayload{Kind: "rag-compat", Version: "1.0", Data: json.RawMessage(refsData("https://a.example/1", "https://a.example/2"))}
	r := rdNew(t, rdOpen(t, it))
	res := r.GetItem(context.Background(), map[string]any{"dataset": "long", "id": "chat"})
	rdCheckEnvelope(t, res)
	require.False(t, res.IsError, res.Content)
	lines := strings.Split(res.Content, "\n")
	assert.Equal(t, "Comment: needs a look", lines[3])
	assert.Equal(t, "Conversation (60 turns):", lines[4])
	first := lines[5]
	assert.True(t, strings.HasPrefix(first, "1. user: q0 ab ab"), first)
	assert.True(t, strings.HasSuffix(first, "…"), first)
	assert.Equal(t, 500, len([]rune(strings.TrimPrefix(first, "1. user: ")))-1, "a turn is cut at 500 characters")
	n := len(lines)
	assert.Equal(t, []string{"Tool calls (2): search_docs, create_ticket", "Expected tools: required search_docs; not needed escalate_to_human", "References: 2"}, lines[n-3:])
	assert.Regexp(t, `^… \d+ more turns$`, lines[n-4])
	var shown int
	_, err := fmt.Sscanf(lines[n-4], "… %d more turns", &shown)
	require.NoError(t, err)
	assert.Equal(t, 60, shown+(n-4-5), "turn lines plus the rest are every turn")
	assert.LessOrEqual(t, n-4-5, 20, "at most 20 turns")
}

// rdHookStore overrides item store calls.
type rdHookStore struct {
	gtc.Store
	items *rdHookItems
}

func (s rdHookStore) Items() gtc.ItemStore { return s.items }

type rdHookItems struct {
	gtc.ItemStore
	locate   func(ctx context.Context, ds, id string) (gtc.Key, error)
	get      func(ctx context.Context, k gtc.Key) (*gtc.Item, error)
	datasets func(ctx context.Context) ([]string, error)
	queryAll func(ctx context.Context, q gtc.Query) iter.Seq2[*gtc.Item, error]
}

func (h *rdHookItems) Locate(ctx context.Context, ds, id string) (gtc.Key, error) {
	if h.locate != nil {
		return h.locate(ctx, ds, id)
	}
	return h.ItemStore.Locate(ctx, ds, id)
}

func (h *rdHookItems) Get(ctx context.Context, k gtc.Key) (*gtc.Item, error) {
	if h.get != nil {
		return h.get(ctx, k)
	}
	return h.ItemStore.Get(ctx, k)
}

func (h *rdHookItems) Datasets(ctx context.Context) ([]string, error) {
	if h.datasets != nil {
		return h.datasets(ctx)
	}
	return h.ItemStore.Datasets(ctx)
}

func (h *rdHookItems) QueryAll(ctx context.Context, q gtc.Query) iter.Seq2[*gtc.Item, error] {
	if h.queryAll != nil {
		return h.queryAll(ctx, q)
	}
	return h.ItemStore.QueryAll(ctx, q)
}

func rdHooked(t *testing.T, st gtc.Store, hook func(*rdHookItems)) (*Reads, *bytes.Buffer) {
	t.Helper()
	h := &rdHookItems{ItemStore: st.Items()}
	hook(h)
	logger, buf := captureLogger()
	return NewReads(ReadsDeps{Store: rdHookStore{Store: st, items: h}, Registry: defaultRegistry(t), Timeout: 50 * time.Millisecond, Logger: logger,
		Known: func(context.Context) ([]string, error) { return rdKnown, nil }}), buf
}

func TestGetItemAmbiguous(t *testing.T) {
	_, st := rdFixtureReads(t)
	b1, b2 := gtc.DeriveBucket("a", "1"), gtc.DeriveBucket("a", "2")
	r, _ := rdHooked(t, st, func(h *rdHookItems) {
		h.locate = func(_ context.Context, ds, id string) (gtc.Key, error) {
			all := []gtc.Key{{DatasetName: ds, Bucket: b1, ID: id}, {DatasetName: ds, Bucket: b2, ID: id}}
			return gtc.Key{}, fmt.Errorf("locate: %w", &gtc.ConflictError{Existing: all[0], All: all})
		}
	})
	res := r.GetItem(context.Background(), map[string]any{"dataset": "customer-feedback", "id": "quiet-harbor"})
	rdCheckEnvelope(t, res)
	assert.Equal(t, CodeAmbiguousItem, rdErrCode(t, res))
	assert.Contains(t, res.Content, "customer-feedback/quiet-harbor exists in 2 buckets ("+b1+", "+b2+")")
	assert.Equal(t, []any{b1, b2}, rdJSON(t, res)["error"].(map[string]any)["buckets"])
}

func TestReadsStoreFaults(t *testing.T) {
	_, st := rdFixtureReads(t)
	secret := errors.New("disk on fire at /var/lib/gtc")
	r, logs := rdHooked(t, st, func(h *rdHookItems) {
		h.get = func(context.Context, gtc.Key) (*gtc.Item, error) { return nil, secret }
		h.queryAll = func(context.Context, gtc.Query) iter.Seq2[*gtc.Item, error] {
			return func(yield func(*gtc.Item, error) bool) { yield(nil, secret) }
		}
	})
	for name, res := range map[string]ToolResult{
		"get_item":     r.GetItem(context.Background(), map[string]any{"dataset": "customer-feedback", "id": "quiet-harbor"}),
		"search_items": r.SearchItems(context.Background(), rdSearchArgs("keyword", "password")),
	} {
		rdCheckEnvelope(t, res)
		assert.Equal(t, CodeInternal, rdErrCode(t, res), name)
		assert.NotContains(t, res.Content, "disk on fire", "the cause stays in the log")
		assert.Contains(t, res.Content, "nothing changed")
		id := rdJSON(t, res)["error"].(map[string]any)["errorId"].(string)
		assert.Contains(t, res.Content, id)
		assert.Contains(t, logs.String(), id)
	}
	assert.Contains(t, logs.String(), "disk on fire")
}

func TestReadsTimeout(t *testing.T) {
	_, st := rdFixtureReads(t)
	r, _ := rdHooked(t, st, func(h *rdHookItems) {
		h.datasets = func(ctx context.Context) ([]string, error) {
			<-ctx.Done()
			return nil, fmt.Errorf("datasets: %w", ctx.Err())
		}
	})
	for _, res := range []ToolResult{
		r.DatasetStats(context.Background(), map[string]any{"limit": 50}),
		r.TagStats(context.Background(), map[string]any{"dataset": "x", "limit": 50}),
		r.SearchItems(context.Background(), rdSearchArgs("dataset", "x")),
	} {
		rdCheckEnvelope(t, res)
		assert.Equal(t, CodeTimeout, rdErrCode(t, res))
		assert.Contains(t, res.Content, "Timed out after 50ms")
	}
}
