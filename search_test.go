package gtc

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// searchFakeItems is an in-memory ItemStore for the reference search: only Scan works (the
// embedded nil interface makes every other method panic). It honours the statuses of the
// spec, and returns items in (datasetName, id) order only when asked to, so a search that
// asked for another order, or forgot to exclude deleted items, is caught.
type searchFakeItems struct {
	ItemStore
	items   []*Item
	scans   int
	specs   []ScanSpec
	limits  []int
	scanErr error
}

func (f *searchFakeItems) Scan(_ context.Context, s ScanSpec, cursor string, limit int) (ScanPage, error) {
	f.scans++
	f.specs = append(f.specs, s)
	f.limits = append(f.limits, limit)
	if f.scanErr != nil {
		return ScanPage{}, f.scanErr
	}
	var sel []*Item
	for _, it := range f.items {
		if len(s.Statuses) == 0 || slices.Contains(s.Statuses, it.Status) {
			sel = append(sel, it)
		}
	}
	if s.Order == ByDatasetID {
		slices.SortFunc(sel, func(a, b *Item) int {
			return cmp.Or(strings.Compare(a.DatasetName, b.DatasetName), strings.Compare(a.ID, b.ID))
		})
	} else {
		slices.Reverse(sel)
	}
	off := 0
	if cursor != "" {
		n, err := strconv.Atoi(cursor)
		if err != nil {
			return ScanPage{}, err
		}
		off = n
	}
	end := min(off+limit, len(sel))
	page := ScanPage{Items: sel[off:end]}
	if end < len(sel) {
		page.Next = strconv.Itoa(end)
	}
	return page, nil
}

// refItem builds an item whose rag-compat data holds the given reference elements (raw JSON).
func refItem(dataset, id string, status Status, refs ...string) *Item {
	it := NewItem(dataset, id)
	it.Status = status
	it.Plugins[RAGCompatSlot] = PluginPayload{
		Kind:    "rag-compat",
		Version: "1",
		Data:    json.RawMessage(`{"retrievals":[],"references":[` + strings.Join(refs, ",") + `]}`),
	}
	return it
}

func search(t *testing.T, items []*Item, q string, top int) ([]SearchResult, *searchFakeItems) {
	t.Helper()
	f := &searchFakeItems{items: items}
	res, err := NewReferenceSearch(f, 2).Search(context.Background(), q, top)
	require.NoError(t, err)
	require.NotNil(t, res)
	return res, f
}

func urls(res []SearchResult) []string {
	out := make([]string, len(res))
	for i, r := range res {
		out[i] = r.URL
	}
	return out
}

func TestReferenceSearchMatchesEachFieldCaseInsensitively(t *testing.T) {
	items := []*Item{refItem("ds", "gt-1", StatusDraft,
		`{"url":"https://docs.example.com/INSTALL-Guide"}`,
		`{"url":"https://b.example.com","title":"Über Größe"}`,
		`{"url":"https://c.example.com","content":"Run the Installer and REBOOT"}`,
		`{"url":"https://d.example.com","keyExcerpt":"ΣΊΣΥΦΟΣ excerpt"}`,
		`{"url":"https://e.example.com","type":"reboot-only-in-type","messageIndex":1}`,
	)}
	for _, tc := range []struct {
		name, q string
		want    []string
	}{
		{"url", "install-guide", []string{"https://docs.example.com/INSTALL-Guide"}},
		{"title with non-ASCII upper case in the data", "über grö", []string{"https://b.example.com"}},
		{"title with non-ASCII upper case in q", "ÜBER", []string{"https://b.example.com"}},
		{"content", "reboot", []string{"https://c.example.com"}},
		{"keyExcerpt with Greek", "σίσυφ", []string{"https://d.example.com"}},
		{"other keys are not searched", "reboot-only", []string{}},
		{"no match", "nothing like this", []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, _ := search(t, items, tc.q, 10)
			assert.Equal(t, tc.want, urls(res))
		})
	}
}

func TestReferenceSearchSkipsDeletedItems(t *testing.T) {
	items := []*Item{
		refItem("ds", "a", StatusDeleted, `{"url":"https://deleted.example.com","title":"needle"}`),
		refItem("ds", "b", StatusDraft, `{"url":"https://draft.example.com","title":"needle"}`),
		refItem("ds", "c", StatusApproved, `{"url":"https://approved.example.com","title":"needle"}`),
		refItem("ds", "d", StatusSkipped, `{"url":"https://skipped.example.com","title":"needle"}`),
	}
	res, f := search(t, items, "needle", 10)
	assert.Equal(t, []string{"https://draft.example.com", "https://approved.example.com", "https://skipped.example.com"}, urls(res))
	for _, s := range f.specs {
		assert.NotContains(t, s.Statuses, StatusDeleted)
		assert.Len(t, s.Statuses, 3)
	}
}

func TestReferenceSearchOrder(t *testing.T) {
	// Inserted out of order: the result follows (datasetName, id), then the array order.
	items := []*Item{
		refItem("zeta", "a", StatusDraft, `{"url":"https://z-a"}`),
		refItem("alpha", "b", StatusDraft, `{"url":"https://alpha-b-2"}`, `{"url":"https://alpha-b-1"}`),
		refItem("alpha", "a", StatusApproved, `{"url":"https://alpha-a"}`),
		refItem("mid", "x", StatusSkipped, `{"url":"https://mid-x-1"}`, `{"url":"https://mid-x-0"}`),
	}
	res, f := search(t, items, "https://", 50)
	assert.Equal(t, []string{
		"https://alpha-a",
		"https://alpha-b-2", "https://alpha-b-1",
		"https://mid-x-1", "https://mid-x-0",
		"https://z-a",
	}, urls(res))
	for _, s := range f.specs {
		assert.Equal(t, ByDatasetID, s.Order)
	}
}

func TestReferenceSearchFirstHitPerURLWins(t *testing.T) {
	items := []*Item{
		refItem("ds", "b", StatusDraft, `{"url":"https://same","title":"from b"}`),
		refItem("ds", "a", StatusDraft,
			`{"url":"https://other","title":"needle"}`,
			`{"url":"  https://same ","title":"needle from a"}`,
			`{"url":"https://same","title":"needle again"}`),
	}
	res, _ := search(t, items, "needle", 10)
	require.Len(t, res, 2)
	assert.Equal(t, "a:ref:0", res[0].ID)
	assert.Equal(t, "a:ref:1", res[1].ID, "url is compared trimmed; the first hit in scan order wins")
	assert.Equal(t, "https://same", res[1].URL)
	assert.Equal(t, "needle from a", *res[1].Title)

	// A reference that does not match does not claim its url: a later match still counts.
	res, _ = search(t, items, "from b", 10)
	require.Len(t, res, 1)
	assert.Equal(t, "b:ref:0", res[0].ID)
}

func TestReferenceSearchTopStopsTheScan(t *testing.T) {
	var items []*Item
	for i := range 10 {
		items = append(items, refItem("ds", "gt-"+strconv.Itoa(i), StatusDraft,
			`{"url":"https://x/`+strconv.Itoa(i)+`/a","title":"hit"}`,
			`{"url":"https://x/`+strconv.Itoa(i)+`/b","title":"hit"}`))
	}
	// Page size 2: hits 1–4 come from page 1, hit 5 from page 2; page 3 is never read.
	res, f := search(t, items, "hit", 5)
	assert.Len(t, res, 5)
	assert.Equal(t, 2, f.scans)
	assert.Equal(t, []int{2, 2}, f.limits)

	res, f = search(t, items, "hit", 4)
	assert.Len(t, res, 4)
	assert.Equal(t, 1, f.scans)

	// Without enough hits the whole store is read.
	res, f = search(t, items, "/3/", 5)
	assert.Equal(t, []string{"https://x/3/a", "https://x/3/b"}, urls(res))
	assert.Equal(t, 5, f.scans)

	res, f = search(t, items, "hit", 0)
	assert.Empty(t, res)
	assert.Equal(t, 0, f.scans)
}

func TestReferenceSearchTitleAndChunk(t *testing.T) {
	items := []*Item{refItem("ds", "gt", StatusDraft,
		`{"url":"https://1","title":"T","content":"the content","keyExcerpt":"the excerpt"}`,
		`{"url":"https://2","title":"","content":"","keyExcerpt":"the excerpt"}`,
		`{"url":"https://3","keyExcerpt":"the excerpt"}`,
		`{"url":"https://4","content":null,"keyExcerpt":""}`,
		`{"url":"https://5","title":7,"content":{"not":"a string"}}`,
	)}
	res, _ := search(t, items, "https://", 10)
	require.Len(t, res, 5)
	str := func(p *string) any {
		if p == nil {
			return nil
		}
		return *p
	}
	assert.Equal(t, "T", str(res[0].Title))
	assert.Equal(t, "the content", str(res[0].Chunk))
	assert.Nil(t, res[1].Title, "an empty title is null")
	assert.Equal(t, "the excerpt", str(res[1].Chunk), "empty content falls back to keyExcerpt")
	assert.Equal(t, "the excerpt", str(res[2].Chunk))
	assert.Nil(t, res[3].Chunk, "neither content nor keyExcerpt: null")
	assert.Nil(t, res[4].Title)
	assert.Nil(t, res[4].Chunk)
}

func TestReferenceSearchRawPayloadAndID(t *testing.T) {
	ref := `{"url":"https://docs.example.com/install","title":"Install","content":"Run the installer…","bonus":false,` +
		`"custom":{"n":12345678901234567890123,"list":[1,"two",null]},"messageIndex":3}`
	items := []*Item{refItem("support", "gt-001", StatusApproved,
		`42`,                          // not an object: skipped, still counts for the index
		`{"title":"no url, install"}`, // no url: skipped
		`{"url":"   ","content":"install"}`,
		ref,
	)}
	res, _ := search(t, items, "INSTALL", 5)
	require.Len(t, res, 1)
	assert.Equal(t, "gt-001:ref:3", res[0].ID, "the index is the position in the stored array")

	b, err := json.Marshal(res[0])
	require.NoError(t, err)
	assert.Equal(t, `{"id":"gt-001:ref:3","url":"https://docs.example.com/install","title":"Install","chunk":"Run the installer…",`+
		`"raw_payload":{"itemId":"gt-001","datasetName":"support","reference":`+ref+`}}`, string(b))

	p, ok := res[0].RawPayload.(ReferencePayload)
	require.True(t, ok)
	assert.Equal(t, ref, string(p.Reference), "the reference is kept byte for byte")
}

func TestReferenceSearchNullTitleAndChunkOnTheWire(t *testing.T) {
	res, _ := search(t, []*Item{refItem("ds", "x", StatusDraft, `{"url":"https://only-url"}`)}, "only", 5)
	require.Len(t, res, 1)
	b, err := json.Marshal(res)
	require.NoError(t, err)
	assert.JSONEq(t, `[{"id":"x:ref:0","url":"https://only-url","title":null,"chunk":null,
		"raw_payload":{"itemId":"x","datasetName":"ds","reference":{"url":"https://only-url"}}}]`, string(b))
}

func TestReferenceSearchItemsWithoutReferences(t *testing.T) {
	noPlugin := NewItem("ds", "a")
	bad := NewItem("ds", "b")
	bad.Plugins[RAGCompatSlot] = PluginPayload{Data: json.RawMessage(`{"references":{"url":"https://x"}}`)}
	res, _ := search(t, []*Item{noPlugin, bad, refItem("ds", "c", StatusDraft, `{"url":"https://x"}`)}, "x", 5)
	assert.Equal(t, []string{"https://x"}, urls(res))
	assert.Equal(t, "c:ref:0", res[0].ID)
}

func TestReferenceSearchScanError(t *testing.T) {
	f := &searchFakeItems{scanErr: ErrUnavailable}
	_, err := NewReferenceSearch(f, 0).Search(context.Background(), "q", 5)
	require.ErrorIs(t, err, ErrUnavailable)
	assert.NotErrorIs(t, err, ErrSearchBackend, "a store failure is not a search backend failure")
	assert.Equal(t, []int{DefaultSearchPageSize}, f.limits)
}

// storedReferences must see exactly what References sees.
func TestStoredReferencesAgreeWithReferences(t *testing.T) {
	for _, data := range []string{
		`{"references":[{"url":"https://a","title":"A","content":"c","keyExcerpt":"k","type":"doc","bonus":true}]}`,
		`{"references":[1,"x",null,[],{"url":""},{"url":"  "},{"url":5},{"url":" https://b "},{"title":"t"}]}`,
		`{"references":[{"url":"https://first"}],"other":1,"references":[{"url":"https://last"},{"url":"https://last2"}]}`,
		`{"references":[{"url":"https://kept"}],"references":"not an array"}`,
		`{"references":null}`,
		`{"references":[{"url":"https://a","title":"\u00dcber \"q\"","nested":{"url":"https://no"}}]}`,
		`{"references":[{"url":"https://a"}]} trailing`,
		`{"references":[{"url":"https://a"},]}`,
		`{"references":[{"url":"https://a", "content": "x"}  ,  {"url":"https://b"}]}`,
		`[]`,
		``,
		`not json`,
	} {
		t.Run(data, func(t *testing.T) {
			it := NewItem("ds", "x")
			it.Plugins[RAGCompatSlot] = PluginPayload{Data: json.RawMessage(data)}
			want := References(it)
			got := storedReferences(json.RawMessage(data))
			require.Len(t, got, len(want))
			for i, e := range got {
				w := want[i]
				assert.Equal(t, w, e.ref)
				assert.True(t, json.Valid(e.raw), "raw %q", e.raw)
				var m map[string]any
				require.NoError(t, json.Unmarshal(e.raw, &m))
			}
		})
	}
}

func TestContainsLowerIsToLowerContains(t *testing.T) {
	for _, tc := range []struct{ s, q string }{
		{"Install Guide", "guide"}, {"Install Guide", "GUIDE"}, {"abc", ""}, {"", ""}, {"", "a"},
		{"ab", "abc"}, {"aaab", "aab"}, {"ÄRZTE", "ärz"}, {"temp 5K", "5K"}, {"temp 5K", "5k"},
		{"[Z]", "[z]"}, {"@", "`"}, {"x\x00y", "\x00y"},
	} {
		want := strings.Contains(strings.ToLower(tc.s), strings.ToLower(tc.q))
		assert.Equal(t, want, containsLower(tc.s, strings.ToLower(tc.q)), "%q in %q", tc.q, tc.s)
	}
}

func FuzzContainsLower(f *testing.F) {
	for _, s := range []string{"Install Guide", "ÄRZTE", "temp 5K", "[Z]@`"} {
		f.Add(s, "guide")
	}
	f.Fuzz(func(t *testing.T, s, q string) {
		want := strings.Contains(strings.ToLower(s), strings.ToLower(q))
		if got := containsLower(s, strings.ToLower(q)); got != want {
			t.Fatalf("containsLower(%q, lower(%q)) = %v, want %v", s, q, got, want)
		}
	})
}

func TestNoSearch(t *testing.T) {
	res, err := NoSearch{}.Search(context.Background(), "anything", 50)
	require.NoError(t, err)
	require.NotNil(t, res)
	assert.Empty(t, res)
}

func TestSearchBackendError(t *testing.T) {
	cause := context.DeadlineExceeded
	err := error(&SearchBackendError{Reason: "timeout", Err: cause})
	wrapped := errors.Join(errors.New("context"), err)
	assert.ErrorIs(t, wrapped, ErrSearchBackend)
	assert.ErrorIs(t, wrapped, context.DeadlineExceeded)
	d, ok := SearchBackendDetail(wrapped)
	assert.True(t, ok)
	assert.Equal(t, "Search backend error: timeout", d)

	_, ok = SearchBackendDetail(errors.New("other"))
	assert.False(t, ok)
	assert.ErrorIs(t, &SearchBackendError{Reason: "status 500"}, ErrSearchBackend)
}

func BenchmarkReferenceSearchNoHit(b *testing.B) {
	var items []*Item
	for i := range 1000 {
		items = append(items, refItem("ds", "gt-"+strconv.Itoa(i), StatusDraft,
			`{"url":"https://docs.example.com/a/`+strconv.Itoa(i)+`","title":"Install guide","content":"Run the installer and follow the steps on screen."}`,
			`{"url":"https://docs.example.com/b/`+strconv.Itoa(i)+`","title":"Upgrade","keyExcerpt":"Back up first."}`))
	}
	f := &searchFakeItems{items: items}
	s := NewReferenceSearch(f, 200)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Search(context.Background(), "no such words", 5); err != nil {
			b.Fatal(err)
		}
	}
}
