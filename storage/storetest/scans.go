package storetest

import (
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"testing"

	gtc "github.com/gtc-dev/gtc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func (s *suite) scanTests() []namedTest {
	return []namedTest{
		{"ByDatasetID", s.scanByDatasetID},       // 22
		{"WritesDuringScan", s.scanWritesDuring}, // 23
		{"ForeignCursor", s.scanForeignCursor},   // 24
		{"AnyOrder", s.scanAnyOrder},             // 25
		{"InvalidLimit", s.scanInvalidLimit},
	}
}

// scanAll reads a scan to its end from cursor, in pages of limit.
func scanAll(t *testing.T, st gtc.Store, spec gtc.ScanSpec, cursor string, limit int) (items []*gtc.Item, cursors []string) {
	t.Helper()
	for range 100000 {
		page, err := st.Items().Scan(ctxT(t), spec, cursor, limit)
		require.NoError(t, err)
		require.LessOrEqual(t, len(page.Items), limit)
		items = append(items, page.Items...)
		if page.Next == "" {
			return items, cursors
		}
		require.NotEmpty(t, page.Items, "a page with a Next cursor must not be empty")
		cursors = append(cursors, page.Next)
		cursor = page.Next
	}
	t.Fatal("scan does not end")
	return nil, nil
}

// 22. ByDatasetID returns (datasetName, id) order with every page size, and resuming from
// any cursor yields exactly the rest.
func (s *suite) scanByDatasetID(t *testing.T) {
	st := s.open(t)
	r := rand.New(rand.NewPCG(22, 22))
	items := createAll(t, st, s.randomItems(r, 60))
	specs := []gtc.ScanSpec{
		{Order: gtc.ByDatasetID},
		{Order: gtc.ByDatasetID, Statuses: []gtc.Status{gtc.StatusDraft, gtc.StatusSkipped}},
		{Order: gtc.ByDatasetID, DatasetNames: []string{"ds-c", "ds-a"}, Statuses: []gtc.Status{gtc.StatusApproved}},
		{Order: gtc.ByDatasetID, DatasetNames: []string{"absent"}},
	}
	for _, spec := range specs {
		want := keys(modelScan(items, spec))
		for _, limit := range []int{1, 7, 100} {
			got, cursors := scanAll(t, st, spec, "", limit)
			assert.Equal(t, want, keys(got), "%+v limit %d", spec, limit)
			if limit == 100 {
				continue // resuming from every cursor of the smaller page sizes covers it
			}
			// Resuming from cursor i yields exactly the rest: the page it reads is the page
			// after cursor i, and the cursor of that page is cursor i+1, whose rest is checked
			// in turn ("" after the last). A store that names the same position with another
			// cursor has its rest read in full.
			for i, c := range cursors {
				from := min((i+1)*limit, len(want))
				page, err := st.Items().Scan(ctxT(t), spec, c, limit)
				require.NoError(t, err, "%+v limit %d: resume from cursor %d", spec, limit, i)
				assert.Equal(t, want[from:min(from+limit, len(want))], keys(page.Items), "%+v limit %d: resume from cursor %d", spec, limit, i)
				next := ""
				if i+1 < len(cursors) {
					next = cursors[i+1]
				}
				if page.Next != next {
					rest, _ := scanAll(t, st, spec, c, limit)
					assert.Equal(t, want[from:], keys(rest), "%+v limit %d: resume from cursor %d", spec, limit, i)
				}
			}
		}
	}
}

// 23. Items updated between two pages appear once; an item created behind the cursor is not
// returned, one created ahead of it is.
func (s *suite) scanWritesDuring(t *testing.T) {
	st := s.open(t)
	var fixture []*gtc.Item
	for _, ds := range []string{"b", "d"} {
		for i := range 10 {
			fixture = append(fixture, s.item(ds, fmt.Sprintf("id-%02d", i*2)))
		}
	}
	createAll(t, st, fixture)
	spec := gtc.ScanSpec{Order: gtc.ByDatasetID}

	first, err := st.Items().Scan(ctxT(t), spec, "", 8) // b/id-00 … b/id-14
	require.NoError(t, err)
	require.Len(t, first.Items, 8)
	require.NotEmpty(t, first.Next)

	// Update items on both sides of the cursor, create items behind and ahead of it.
	for _, k := range []string{"id-02", "id-16"} {
		_, err := gtc.Update(ctxT(t), st.Items(), gtc.Key{DatasetName: "b", Bucket: gtc.DeriveBucket("b", k), ID: k},
			func(cur *gtc.Item) (*gtc.Item, error) { cur.Comment = "updated mid-scan"; return cur, nil })
		require.NoError(t, err)
	}
	create(t, st, s.item("a", "behind-dataset"))
	create(t, st, s.item("b", "id-01")) // behind the cursor within the dataset
	create(t, st, s.item("b", "id-15")) // ahead of it
	create(t, st, s.item("c", "ahead-dataset"))

	rest, _ := scanAll(t, st, spec, first.Next, 5)
	all := append(keys(first.Items), keys(rest)...)
	seen := map[gtc.Key]int{}
	for _, k := range all {
		seen[k]++
	}
	for k, n := range seen {
		assert.Equal(t, 1, n, "%s appears exactly once", k)
	}
	for _, it := range fixture {
		assert.Contains(t, seen, it.Key(), "an item present for the whole scan appears")
	}
	key := func(ds, id string) gtc.Key { return gtc.Key{DatasetName: ds, Bucket: gtc.DeriveBucket(ds, id), ID: id} }
	assert.NotContains(t, seen, key("a", "behind-dataset"), "created behind the cursor")
	assert.NotContains(t, seen, key("b", "id-01"), "created behind the cursor")
	assert.Contains(t, seen, key("b", "id-15"), "created ahead of the cursor")
	assert.Contains(t, seen, key("c", "ahead-dataset"), "created ahead of the cursor")
}

// 24. A cursor of another spec, or garbage, is ErrInvalidArgument.
func (s *suite) scanForeignCursor(t *testing.T) {
	st := s.open(t)
	var items []*gtc.Item
	for i := range 6 {
		items = append(items, s.item("ds", fmt.Sprint("i", i)))
	}
	createAll(t, st, items)
	spec := gtc.ScanSpec{Order: gtc.ByDatasetID, Statuses: []gtc.Status{gtc.StatusDraft}}
	page, err := st.Items().Scan(ctxT(t), spec, "", 2)
	require.NoError(t, err)
	require.NotEmpty(t, page.Next)

	// The same spec written differently is the same spec.
	same := gtc.ScanSpec{Order: gtc.ByDatasetID, Statuses: []gtc.Status{gtc.StatusDraft, gtc.StatusDraft}}
	_, err = st.Items().Scan(ctxT(t), same, page.Next, 2)
	assert.NoError(t, err)

	for name, other := range map[string]gtc.ScanSpec{
		"other statuses": {Order: gtc.ByDatasetID, Statuses: []gtc.Status{gtc.StatusApproved}},
		"other datasets": {Order: gtc.ByDatasetID, Statuses: []gtc.Status{gtc.StatusDraft}, DatasetNames: []string{"ds"}},
		"other order":    {Order: gtc.AnyOrder, Statuses: []gtc.Status{gtc.StatusDraft}},
	} {
		_, err := st.Items().Scan(ctxT(t), other, page.Next, 2)
		assert.ErrorIs(t, err, gtc.ErrInvalidArgument, name)
	}
	for name, garbage := range map[string]string{
		"not base64":     "%%%not-a-cursor%%%",
		"base64 of junk": base64.RawURLEncoding.EncodeToString([]byte("junk")),
		"empty json":     base64.RawURLEncoding.EncodeToString([]byte("{}")),
		"truncated":      page.Next[:len(page.Next)/2],
	} {
		_, err := st.Items().Scan(ctxT(t), spec, garbage, 2)
		assert.ErrorIs(t, err, gtc.ErrInvalidArgument, name)
	}
}

// 25. AnyOrder returns every matching item exactly once.
func (s *suite) scanAnyOrder(t *testing.T) {
	st := s.open(t)
	r := rand.New(rand.NewPCG(25, 25))
	items := createAll(t, st, s.randomItems(r, 45))
	for _, spec := range []gtc.ScanSpec{
		{Order: gtc.AnyOrder},
		{Order: gtc.AnyOrder, Statuses: []gtc.Status{gtc.StatusDeleted, gtc.StatusDraft}, DatasetNames: []string{"ds-b"}},
	} {
		want := keys(modelScan(items, spec))
		for _, limit := range []int{1, 4, 1000} {
			got, _ := scanAll(t, st, spec, "", limit)
			assert.ElementsMatch(t, want, keys(got), "%+v limit %d", spec, limit)
			assert.Len(t, got, len(want), "no duplicates")
		}
	}
}

// A limit below 1 is ErrInvalidArgument.
func (s *suite) scanInvalidLimit(t *testing.T) {
	st := s.open(t)
	for _, limit := range []int{0, -1} {
		_, err := st.Items().Scan(ctxT(t), gtc.ScanSpec{}, "", limit)
		assert.ErrorIs(t, err, gtc.ErrInvalidArgument, "limit %d", limit)
	}
}
