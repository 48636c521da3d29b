package storetest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	gtc "github.com/gtc-dev/gtc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func (s *suite) queryTests() []namedTest {
	return []namedTest{
		{"EachFilter", s.eachFilter},           // 15
		{"CombinedFilters", s.combinedFilters}, // 16
		{"SortModes", s.sortModes},             // 17
		{"NonASCIIOrder", s.nonASCIIOrder},     // 18
		{"Paging", s.paging},                   // 19
		{"Scale", s.scale},                     // 20
		{"QueryAllAndCount", s.queryAllCount},  // 21
		{"FiltersFollowWrites", s.filtersFollowWrites},
		{"InvalidQuery", s.invalidQuery},
	}
}

// withRefs sets the rag-compat references of it.
func withRefs(it *gtc.Item, refs ...map[string]any) *gtc.Item {
	data, err := json.Marshal(map[string]any{"references": refs})
	if err != nil {
		panic(err)
	}
	it.Plugins[gtc.RAGCompatSlot] = gtc.PluginPayload{Kind: gtc.RAGCompatSlot, Version: "1.0", Data: data}
	return it
}

// filterFixture is a small store in which every gtc.Filter field selects a distinct,
// non-trivial subset.
func (s *suite) filterFixture(t *testing.T) (gtc.Store, []*gtc.Item) {
	t.Helper()
	st := s.open(t)
	now := s.now()
	var items []*gtc.Item
	add := func(ds, id string, edit func(it *gtc.Item)) {
		it := s.item(ds, id)
		it.UpdatedAt = now.Add(-time.Duration(len(items)) * time.Minute)
		edit(it)
		items = append(items, it)
	}
	add("support", "Apple-1", func(it *gtc.Item) {
		it.Comment = "Äpfel und Birnen"
		it.ManualTags = []string{"topic:fruit"}
		it.ComputedTags = []string{"turns:1"}
	})
	add("support", "apple-2", func(it *gtc.Item) {
		it.Status = gtc.StatusApproved
		it.ManualTags = []string{"topic:fruit", "lang:de"}
		it.History = []gtc.HistoryEntry{{Role: "user", Msg: "alpha"}, {Role: "assistant", Msg: "beta"}}
		it.AssignedTo = ptr("alice@example.com")
	})
	add("support-eu", "pear-3", func(it *gtc.Item) {
		it.Status = gtc.StatusSkipped
		it.ComputedTags = []string{"topic:fruit", "turns:2"}
		withRefs(it, map[string]any{"url": "https://Docs.example.com/Pears", "title": "Birnensorten im Überblick"})
		it.AssignedTo = ptr("bob@example.com")
	})
	add("support-eu", "plum-4", func(it *gtc.Item) {
		it.Status = gtc.StatusDeleted
		it.ManualTags = []string{"lang:de"}
		withRefs(it,
			map[string]any{"url": "https://docs.example.com/plums", "title": "Plums"},
			map[string]any{"url": "https://wiki.example.org/stone-fruit", "content": "Zwetschgen"})
		it.AssignedTo = ptr("alice@example.com")
	})
	add("sales", "APPLE-5", func(it *gtc.Item) {
		it.ComputedTags = []string{"turns:1"}
		it.History = []gtc.HistoryEntry{{Role: "user", Msg: "ÄPFEL kaufen?"}}
		withRefs(it, map[string]any{"url": "https://docs.example.com/apples"})
		it.AssignedTo = ptr("") // stored as unassigned
	})
	add("sales", "kiwi-6", func(it *gtc.Item) {
		it.Status = gtc.StatusApproved
		it.ManualTags = []string{"Topic:Fruit"} // another tag: tags are case-sensitive
		it.Comment = "no references here"
	})
	add("supportive", "fig-7", func(it *gtc.Item) {
		it.Comment = "alphabeta"
		it.ComputedTags = []string{"turns:3"}
		withRefs(it, map[string]any{"url": "https://docs.example.com/figs", "keyExcerpt": "getrocknete Feigen"})
	})
	return st, createAll(t, st, items)
}

// checkQuery runs q and compares the page and the total with the model.
func checkQuery(t *testing.T, st gtc.Store, items []*gtc.Item, q gtc.Query, msgAndArgs ...any) {
	t.Helper()
	all := modelQuery(items, q.Filter, q.Sort, q.Desc)
	page, err := st.Items().Query(ctxT(t), q)
	require.NoError(t, err, msgAndArgs...)
	assert.Equal(t, len(all), page.Total, append([]any{"total: "}, msgAndArgs...)...)
	assert.Equal(t, keys(modelPage(all, q.Offset, q.Limit)), keys(page.Items), msgAndArgs...)
}

// 15. Each filter on its own.
func (s *suite) eachFilter(t *testing.T) {
	st, items := s.filterFixture(t)
	cases := map[string]gtc.Filter{
		"no filter":                  {},
		"one status":                 {Statuses: []gtc.Status{gtc.StatusApproved}},
		"two statuses":               {Statuses: []gtc.Status{gtc.StatusSkipped, gtc.StatusDeleted}},
		"deleted is a status":        {Statuses: []gtc.Status{gtc.StatusDeleted}},
		"one dataset":                {DatasetNames: []string{"support"}},
		"two datasets":               {DatasetNames: []string{"sales", "support-eu"}},
		"unknown dataset":            {DatasetNames: []string{"nope"}},
		"dataset prefix":             {DatasetPrefix: "support"},
		"dataset prefix with hyphen": {DatasetPrefix: "support-"},
		"prefix is not substring":    {DatasetPrefix: "port"},
		"manual tag":                 {AllTags: []string{"lang:de"}},
		"manual or computed tag":     {AllTags: []string{"topic:fruit"}},
		"computed tag":               {AllTags: []string{"turns:1"}},
		"tags are case-sensitive":    {AllTags: []string{"Topic:Fruit"}},
		"all of two tags":            {AllTags: []string{"topic:fruit", "lang:de"}},
		"none of a tag":              {NoneOfTags: []string{"topic:fruit"}},
		"none of two tags":           {NoneOfTags: []string{"lang:de", "turns:1"}},
		"id substring":               {IDContains: "pple"},
		"id is case-sensitive":       {IDContains: "APPLE"},
		"keyword lower-cased":        {Keyword: strings.ToLower("ÄPFEL")},
		"keyword in history":         {Keyword: "kaufen"},
		"keyword in id":              {Keyword: "kiwi"},
		"keyword in dataset":         {Keyword: "sales"},
		"keyword in reference title": {Keyword: "überblick"},
		"keyword in reference text":  {Keyword: "zwetschgen"},
		"keyword in key excerpt":     {Keyword: "feigen"},
		"keyword in reference url":   {Keyword: "docs.example.com/pears"},
		"keyword across two fields":  {Keyword: "alphabeta"},
		"keyword with separator":     {Keyword: "alpha\x1fbeta"},
		"ref url":                    {RefURLContains: []string{"docs.example.com"}},
		"ref url is case-sensitive":  {RefURLContains: []string{"Docs.example.com"}},
		"ref urls are ANDed":         {RefURLContains: []string{"plums", "stone-fruit"}},
		"ref urls in one reference":  {RefURLContains: []string{"plums", "figs"}},
		"assigned to a user":         {AssignedTo: ptr("alice@example.com")},
		"unassigned":                 {AssignedTo: ptr("")},
	}
	for name, f := range cases {
		checkQuery(t, st, items, gtc.Query{Filter: f, Sort: gtc.SortID, Limit: 100}, name)
		total := len(modelQuery(items, f, gtc.SortID, false))
		if name != "no filter" && name != "unknown dataset" && name != "keyword with separator" &&
			name != "tags are case-sensitive" && name != "ref urls in one reference" {
			assert.Less(t, total, len(items), "%s: the fixture must leave something out", name)
		}
	}
	// The keyword rule: only "alphabeta" itself matches, never alpha|beta of two fields.
	assert.Equal(t, []string{"fig-7"}, ids(modelQuery(items, gtc.Filter{Keyword: "alphabeta"}, gtc.SortID, false)))
}

func ids(items []*gtc.Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.ID
	}
	return out
}

// 16. Filters combine with AND.
func (s *suite) combinedFilters(t *testing.T) {
	st, items := s.filterFixture(t)
	cases := map[string]gtc.Filter{
		"status and dataset": {Statuses: []gtc.Status{gtc.StatusDraft, gtc.StatusApproved}, DatasetNames: []string{"support", "sales"}},
		"dataset and tag":    {DatasetNames: []string{"support"}, AllTags: []string{"topic:fruit"}},
		"status, dataset and tag": {
			Statuses: []gtc.Status{gtc.StatusApproved}, DatasetNames: []string{"support"}, AllTags: []string{"topic:fruit"},
		},
		"prefix and none of":   {DatasetPrefix: "support", NoneOfTags: []string{"lang:de"}},
		"tag and keyword":      {AllTags: []string{"topic:fruit"}, Keyword: "birnen"},
		"tag and assignee":     {AllTags: []string{"lang:de"}, AssignedTo: ptr("alice@example.com")},
		"tags and status":      {AllTags: []string{"topic:fruit", "turns:2"}, Statuses: []gtc.Status{gtc.StatusSkipped}},
		"id and ref url":       {IDContains: "p", RefURLContains: []string{"docs.example.com"}},
		"unassigned and tag":   {AssignedTo: ptr(""), AllTags: []string{"turns:1"}},
		"contradiction":        {Statuses: []gtc.Status{gtc.StatusDeleted}, AllTags: []string{"topic:fruit"}, NoneOfTags: []string{"topic:fruit"}},
		"everything at once":   {Statuses: []gtc.Status{gtc.StatusDraft}, DatasetPrefix: "s", AllTags: []string{"turns:1"}, NoneOfTags: []string{"lang:de"}, IDContains: "p", Keyword: "pfel", AssignedTo: ptr("")},
		"tag with dataset set": {DatasetNames: []string{"support", "support-eu"}, AllTags: []string{"topic:fruit"}, Statuses: []gtc.Status{gtc.StatusDraft, gtc.StatusSkipped}},
	}
	for name, f := range cases {
		for _, k := range []gtc.SortKey{gtc.SortID, gtc.SortReviewedAt} {
			checkQuery(t, st, items, gtc.Query{Filter: f, Sort: k, Desc: k == gtc.SortReviewedAt, Limit: 100}, name)
		}
	}
}

// sortFixture has the ties every sort key must break the same way: equal reviewedAt,
// null reviewedAt, equal updatedAt, equal tag and reference counts, equal assignedAt.
func (s *suite) sortFixture(t *testing.T) (gtc.Store, []*gtc.Item) {
	t.Helper()
	st := s.open(t)
	now := s.now()
	t1, t2 := now.Add(-2*time.Hour), now.Add(-time.Hour)
	var items []*gtc.Item
	for i, id := range []string{"m", "b", "x", "a", "q", "c", "z", "k", "e", "w", "d", "n"} {
		it := s.item([]string{"alpha", "beta"}[i%2], id)
		it.UpdatedAt = []time.Time{t1, t2, now}[i%3]
		switch i % 4 {
		case 0: // reviewedAt null
		case 1, 2:
			it.ReviewedAt = ptr(t1) // equal reviewedAt
		case 3:
			it.ReviewedAt = ptr(t2.Add(time.Duration(i) * time.Microsecond))
		}
		if i%3 == 0 {
			it.History = []gtc.HistoryEntry{{Role: "user", Msg: "q"}, {Role: "assistant", Msg: "answer"}}
		} else if i%3 == 1 {
			it.History = []gtc.HistoryEntry{{Role: "user", Msg: "q"}, {Role: "assistant", Msg: "  "}}
		}
		it.ManualTags = []string{"a:1", "b:2", "c:3"}[:i%3]
		it.ComputedTags = []string{"c:3", "d:4"}[:i%2] // overlaps: the union counts once
		refs := make([]map[string]any, i%3)
		for r := range refs {
			refs[r] = map[string]any{"url": fmt.Sprintf("https://r/%d", r)}
		}
		if len(refs) > 0 {
			withRefs(it, refs...)
		}
		if i%2 == 0 {
			it.AssignedTo = ptr("u@example.com")
			it.AssignedAt = ptr([]time.Time{t1, t2}[i%4/2])
		}
		items = append(items, it)
	}
	return st, createAll(t, st, items)
}

var allSorts = []gtc.SortKey{
	gtc.SortReviewedAt, gtc.SortUpdatedAt, gtc.SortID, gtc.SortHasAnswer, gtc.SortTagCount,
	gtc.SortReferences, gtc.SortAssignedAt, gtc.SortRecent,
}

func ascendingOnly(k gtc.SortKey) bool { return k == gtc.SortAssignedAt || k == gtc.SortRecent }

// 17. Every sort mode in both directions equals the model's order.
func (s *suite) sortModes(t *testing.T) {
	st, items := s.sortFixture(t)
	filters := map[string]gtc.Filter{
		"all":            {},
		"one dataset":    {DatasetNames: []string{"alpha"}},
		"one status":     {Statuses: []gtc.Status{gtc.StatusDraft}},
		"dataset+status": {DatasetNames: []string{"beta"}, Statuses: []gtc.Status{gtc.StatusDraft}},
		"assignee":       {AssignedTo: ptr("u@example.com"), Statuses: []gtc.Status{gtc.StatusDraft}},
		"tag":            {AllTags: []string{"c:3"}},
	}
	for _, k := range allSorts {
		for _, desc := range []bool{false, true} {
			if desc && ascendingOnly(k) {
				continue
			}
			for name, f := range filters {
				checkQuery(t, st, items, gtc.Query{Filter: f, Sort: k, Desc: desc, Limit: 100}, "%s desc=%v %s", k, desc, name)
			}
		}
	}
	// The model's orders must really be exercised by ties.
	byReviewed := modelQuery(items, gtc.Filter{}, gtc.SortReviewedAt, false)
	assert.Nil(t, byReviewed[0].ReviewedAt, "null reviewedAt sorts as the oldest")
}

// 18. Ids with non-ASCII characters sort by the bytes of their UTF-8 encoding.
func (s *suite) nonASCIIOrder(t *testing.T) {
	st := s.open(t)
	names := []string{"zebra", "Zebra", "ápple", "apple", "ñandú", "漢字", "かな", "𝄞-clef", "\uff5e-tilde", "é", "e\u0301", "~", "ÿ"}
	var items []*gtc.Item
	for _, id := range names {
		items = append(items, s.item("unicode", id))
	}
	createAll(t, st, items)
	want := slices.Clone(names)
	sort.Strings(want)
	for _, desc := range []bool{false, true} {
		page, err := st.Items().Query(ctxT(t), gtc.Query{Sort: gtc.SortID, Desc: desc, Limit: 100})
		require.NoError(t, err)
		w := slices.Clone(want)
		if desc {
			slices.Reverse(w)
		}
		assert.Equal(t, w, ids(page.Items), "desc=%v", desc)
	}
	scan, err := st.Items().Scan(ctxT(t), gtc.ScanSpec{Order: gtc.ByDatasetID}, "", 100)
	require.NoError(t, err)
	assert.Equal(t, want, ids(scan.Items), "scans use the same byte order")
}

// 19. Pages concatenate to the full order, with exact totals; past the end is empty.
func (s *suite) paging(t *testing.T) {
	st := s.open(t)
	r := rand.New(rand.NewPCG(19, 19))
	items := createAll(t, st, s.randomItems(r, 31))
	f := gtc.Filter{Statuses: []gtc.Status{gtc.StatusDraft, gtc.StatusApproved, gtc.StatusSkipped}}
	for _, k := range []gtc.SortKey{gtc.SortReviewedAt, gtc.SortUpdatedAt, gtc.SortTagCount} {
		all := modelQuery(items, f, k, true)
		require.NotEmpty(t, all)
		for _, limit := range []int{1, 5, 7, 1000} {
			var got []gtc.Key
			for offset := 0; offset < len(all); offset += limit {
				page, err := st.Items().Query(ctxT(t), gtc.Query{Filter: f, Sort: k, Desc: true, Offset: offset, Limit: limit})
				require.NoError(t, err)
				require.Equal(t, len(all), page.Total, "%s limit %d offset %d", k, limit, offset)
				require.LessOrEqual(t, len(page.Items), limit)
				got = append(got, keys(page.Items)...)
			}
			assert.Equal(t, keys(all), got, "%s limit %d: pages concatenate to the full order", k, limit)
		}
		past, err := st.Items().Query(ctxT(t), gtc.Query{Filter: f, Sort: k, Desc: true, Offset: len(all) + 3, Limit: 10})
		require.NoError(t, err)
		assert.Empty(t, past.Items, "a page past the end is empty")
		assert.Equal(t, len(all), past.Total, "with the right total")
	}
}

// Vocabulary of the random fixtures.
var (
	randomStatuses = []gtc.Status{gtc.StatusDraft, gtc.StatusDraft, gtc.StatusApproved, gtc.StatusSkipped, gtc.StatusDeleted}
	randomTags     = []string{"topic:a", "topic:b", "topic:c", "lang:en", "lang:de", "q:good", "q:bad", "src:x"}
	randomWords    = []string{"apfel", "Birne", "kiwi", "Mango", "pflaume", "über", "straße", "naïve", "東京", "wasser"}
	randomUsers    = []string{"ann@example.com", "ben@example.com", "cy@example.com"}
)

// randomItems returns n items over 3 datasets (each spread over its 5 derived buckets)
// with random statuses, tags, texts, references, assignees and times.
func (s *suite) randomItems(r *rand.Rand, n int) []*gtc.Item {
	now := s.now()
	words := func(k int) string {
		w := make([]string, k)
		for i := range w {
			w[i] = randomWords[r.IntN(len(randomWords))]
		}
		return strings.Join(w, " ")
	}
	out := make([]*gtc.Item, n)
	for i := range out {
		ds := []string{"ds-a", "ds-b", "ds-c"}[r.IntN(3)]
		it := s.item(ds, fmt.Sprintf("item-%05d-%s", i, randomWords[r.IntN(len(randomWords))]))
		it.Status = randomStatuses[r.IntN(len(randomStatuses))]
		// Coarse times make ties in every time-based key.
		it.UpdatedAt = now.Add(-time.Duration(r.IntN(40)) * time.Hour)
		if r.IntN(3) > 0 {
			it.ReviewedAt = ptr(now.Add(-time.Duration(r.IntN(40)) * time.Hour))
		}
		it.Comment = words(r.IntN(4))
		for range r.IntN(3) {
			it.History = append(it.History,
				gtc.HistoryEntry{Role: "user", Msg: words(1 + r.IntN(3))},
				gtc.HistoryEntry{Role: "assistant", Msg: words(r.IntN(3))})
		}
		for range r.IntN(3) {
			it.ManualTags = append(it.ManualTags, randomTags[r.IntN(len(randomTags))])
		}
		for range r.IntN(3) {
			it.ComputedTags = append(it.ComputedTags, randomTags[r.IntN(len(randomTags))])
		}
		var refs []map[string]any
		for range r.IntN(3) {
			refs = append(refs, map[string]any{
				"url":   fmt.Sprintf("https://docs.example.com/%s/%d", randomWords[r.IntN(len(randomWords))], r.IntN(5)),
				"title": words(2),
			})
		}
		if refs != nil {
			withRefs(it, refs...)
		}
		if r.IntN(2) == 0 {
			it.AssignedTo = ptr(randomUsers[r.IntN(len(randomUsers))])
			it.AssignedAt = ptr(now.Add(-time.Duration(r.IntN(10)) * time.Hour))
		}
		out[i] = it
	}
	return out
}

// randomFilter draws a filter over the vocabulary of randomItems.
func randomFilter(r *rand.Rand) gtc.Filter {
	var f gtc.Filter
	pick := func(p int) bool { return r.IntN(100) < p }
	if pick(50) {
		for range 1 + r.IntN(2) {
			f.Statuses = append(f.Statuses, gtc.Statuses[r.IntN(4)])
		}
	}
	if pick(40) {
		for range 1 + r.IntN(2) {
			f.DatasetNames = append(f.DatasetNames, []string{"ds-a", "ds-b", "ds-c", "ds-x"}[r.IntN(4)])
		}
	}
	if pick(10) {
		f.DatasetPrefix = []string{"ds-", "ds-b", "d"}[r.IntN(3)]
	}
	if pick(40) {
		for range 1 + r.IntN(2) {
			f.AllTags = append(f.AllTags, randomTags[r.IntN(len(randomTags))])
		}
	}
	if pick(20) {
		f.NoneOfTags = append(f.NoneOfTags, randomTags[r.IntN(len(randomTags))])
	}
	if pick(10) {
		f.IDContains = fmt.Sprint(r.IntN(10))
	}
	if pick(15) {
		f.Keyword = strings.ToLower(randomWords[r.IntN(len(randomWords))])
	}
	if pick(10) {
		f.RefURLContains = []string{randomWords[r.IntN(len(randomWords))]}
	}
	if pick(20) {
		f.AssignedTo = ptr(append([]string{""}, randomUsers...)[r.IntN(len(randomUsers)+1)])
	}
	return f
}

// 20. Scale items; random filter, sort and page combinations equal the model.
func (s *suite) scale(t *testing.T) {
	st := s.open(t)
	r := rand.New(rand.NewPCG(20, uint64(s.h.Scale)))
	items := createAll(t, st, s.randomItems(r, s.h.Scale))
	buckets := map[string]bool{}
	for _, it := range items {
		buckets[it.DatasetName+"/"+it.Bucket] = true
	}
	require.Len(t, buckets, 15, "the fixture spans 3 datasets × 5 buckets")
	for i := range 20 {
		q := gtc.Query{Filter: randomFilter(r), Sort: allSorts[r.IntN(len(allSorts))], Limit: []int{1, 10, 25, 100, 1000}[r.IntN(5)]}
		q.Desc = !ascendingOnly(q.Sort) && r.IntN(2) == 0
		total := len(modelQuery(items, q.Filter, q.Sort, q.Desc))
		if total > 0 && r.IntN(3) > 0 {
			q.Offset = r.IntN(total + q.Limit)
		}
		checkQuery(t, st, items, q, "combination %d: %+v", i, q)
	}
	// The dataset/status/tag list query of the explorer, at several depths.
	f := gtc.Filter{DatasetNames: []string{"ds-b"}, Statuses: []gtc.Status{gtc.StatusDraft}, AllTags: []string{"topic:a"}}
	for _, offset := range []int{0, 25, 100} {
		checkQuery(t, st, items, gtc.Query{Filter: f, Sort: gtc.SortReviewedAt, Desc: true, Offset: offset, Limit: 25}, "explorer list at %d", offset)
	}
}

// 21. QueryAll equals the concatenated pages; Count equals Total.
func (s *suite) queryAllCount(t *testing.T) {
	st := s.open(t)
	r := rand.New(rand.NewPCG(21, 21))
	n := s.h.Scale
	items := createAll(t, st, s.randomItems(r, n))
	queries := []gtc.Query{
		{Sort: gtc.SortReviewedAt, Desc: true},
		{Filter: gtc.Filter{Statuses: []gtc.Status{gtc.StatusDraft}}, Sort: gtc.SortUpdatedAt},
		{Filter: gtc.Filter{DatasetNames: []string{"ds-a"}}, Sort: gtc.SortRecent},
		{Filter: gtc.Filter{AllTags: []string{"topic:b"}}, Sort: gtc.SortTagCount, Desc: true},
		{Filter: gtc.Filter{AssignedTo: ptr("ann@example.com"), Statuses: []gtc.Status{gtc.StatusDraft}}, Sort: gtc.SortAssignedAt},
		{Filter: gtc.Filter{Keyword: "apfel"}, Sort: gtc.SortID, Desc: true},
	}
	for i, q := range queries {
		var all []gtc.Key
		for it, err := range st.Items().QueryAll(ctxT(t), q) {
			require.NoError(t, err, "query %d", i)
			all = append(all, it.Key())
		}
		want := modelQuery(items, q.Filter, q.Sort, q.Desc)
		assert.Equal(t, keys(want), all, "query %d: QueryAll streams every match in order", i)

		var pages []gtc.Key
		q.Limit = 97
		total := -1
		for q.Offset = 0; q.Offset < len(want); q.Offset += q.Limit {
			page, err := st.Items().Query(ctxT(t), q)
			require.NoError(t, err)
			pages = append(pages, keys(page.Items)...)
			total = page.Total
		}
		assert.Equal(t, pages, all, "query %d: QueryAll equals the concatenated pages", i)
		count, err := st.Items().Count(ctxT(t), q.Filter)
		require.NoError(t, err)
		assert.Equal(t, len(want), count, "query %d: Count", i)
		if total >= 0 {
			assert.Equal(t, total, count, "query %d: Count equals Total", i)
		}
	}

	// Stopping early is allowed and stops the stream.
	seen := 0
	for _, err := range st.Items().QueryAll(ctxT(t), gtc.Query{Sort: gtc.SortID}) {
		require.NoError(t, err)
		if seen++; seen == 3 {
			break
		}
	}
	assert.Equal(t, 3, seen)
}

// Queries outside the contract's shape are ErrInvalidArgument.
func (s *suite) invalidQuery(t *testing.T) {
	st := s.open(t)
	for name, q := range map[string]gtc.Query{
		"unknown sort":    {Sort: "popularity", Limit: 10},
		"limit 0":         {Sort: gtc.SortID, Limit: 0},
		"limit 1001":      {Sort: gtc.SortID, Limit: 1001},
		"negative offset": {Sort: gtc.SortID, Offset: -1, Limit: 10},
		"assignedAt desc": {Sort: gtc.SortAssignedAt, Desc: true, Limit: 10},
		"recent desc":     {Sort: gtc.SortRecent, Desc: true, Limit: 10},
		"unknown status":  {Filter: gtc.Filter{Statuses: []gtc.Status{"archived"}}, Sort: gtc.SortID, Limit: 10},
	} {
		_, err := st.Items().Query(ctxT(t), q)
		assert.ErrorIs(t, err, gtc.ErrInvalidArgument, name)
	}
}

// Filters and orders see every item as last written: status, tags, assignee and times
// changed by Replace and SoftDelete, in every combination the explorer uses.
func (s *suite) filtersFollowWrites(t *testing.T) {
	st := s.open(t)
	r := rand.New(rand.NewPCG(15, 16))
	items := createAll(t, st, s.randomItems(r, 80))
	for round := range 3 {
		for i := range items {
			if r.IntN(3) > 0 {
				continue
			}
			if r.IntN(4) == 0 {
				out, err := gtc.SoftDelete(ctxT(t), st.Items(), items[i].Key(), "", nil)
				require.NoError(t, err)
				items[i] = out
				continue
			}
			next := s.randomItems(r, 1)[0]
			next.ID, next.DatasetName, next.Bucket = items[i].ID, items[i].DatasetName, items[i].Bucket
			out, err := st.Items().Replace(ctxT(t), items[i], next)
			require.NoError(t, err)
			items[i] = out
		}
		for range 15 {
			q := gtc.Query{Filter: randomFilter(r), Sort: allSorts[r.IntN(len(allSorts))], Limit: 25}
			q.Desc = !ascendingOnly(q.Sort) && r.IntN(2) == 0
			checkQuery(t, st, items, q, "round %d: %+v", round, q)
		}
		f := gtc.Filter{DatasetNames: []string{"ds-a"}, Statuses: []gtc.Status{gtc.StatusDeleted}, AllTags: []string{"topic:a"}}
		checkQuery(t, st, items, gtc.Query{Filter: f, Sort: gtc.SortReviewedAt, Desc: true, Limit: 100}, "round %d: deleted with a tag", round)
	}
}
