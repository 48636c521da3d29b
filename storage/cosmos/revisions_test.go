package cosmos_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	gtc "github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/codec"
	"github.com/gtc-dev/gtc/storage/cosmos"
	"github.com/gtc-dev/gtc/storage/cosmos/cosmostest"
	"github.com/gtc-dev/gtc/storage/storetest/testenv"
)

func as(ctx context.Context, user, source string) context.Context {
	ctx = gtc.WithCaller(ctx, gtc.Caller{UserID: user})
	if source != "" {
		ctx = gtc.WithChange(ctx, gtc.Change{Source: source})
	}
	return ctx
}

// allRevisions lists every revision of (ds, id), newest first, limit per page.
func allRevisions(t *testing.T, st *cosmos.Store, ds, id string, limit int) []*gtc.Revision {
	t.Helper()
	var out []*gtc.Revision
	for cursor := ""; ; {
		page, err := st.Revisions().List(t.Context(), ds, id, cursor, limit)
		require.NoError(t, err)
		require.LessOrEqual(t, len(page.Revisions), limit)
		out = append(out, page.Revisions...)
		if cursor = page.Next; cursor == "" {
			return out
		}
	}
}

// A create records revision 1 with the whole item, by the caller and through the source of
// the context; a replace records the next one with the fields it changed, and the ETags
// before and after each write.
func TestRevisionsRecordCreateAndReplace(t *testing.T) {
	env := testenv.Cosmos(t)
	st, _ := cosmostest.Open(t, env, nil)
	ctx := t.Context()

	created, err := st.Items().Create(as(ctx, "alice", gtc.SourceImport), newItem("ds", "q1"))
	require.NoError(t, err)
	assert.EqualValues(t, 1, created.Revision)

	revs := allRevisions(t, st, "ds", "q1", 10)
	require.Len(t, revs, 1)
	r1 := revs[0]
	assert.EqualValues(t, 1, r1.Number)
	assert.Equal(t, "ds", r1.DatasetName)
	assert.Equal(t, "q1", r1.ID)
	assert.Equal(t, "alice", r1.Actor)
	assert.Equal(t, gtc.SourceImport, r1.Source)
	assert.Empty(t, r1.ETagBefore)
	assert.Equal(t, created.ETag, r1.ETagAfter)
	require.Len(t, r1.Ops, 1)
	assert.Equal(t, "add", r1.Ops[0].Op)
	assert.Equal(t, "", r1.Ops[0].Path)

	next := created.Clone()
	next.Comment = "checked twice"
	replaced, err := st.Items().Replace(as(ctx, "bob", ""), created, next)
	require.NoError(t, err)
	assert.EqualValues(t, 2, replaced.Revision)

	revs = allRevisions(t, st, "ds", "q1", 10)
	require.Len(t, revs, 2)
	r2 := revs[0]
	assert.EqualValues(t, 2, r2.Number)
	assert.Equal(t, "bob", r2.Actor)
	assert.Equal(t, gtc.SourceAPI, r2.Source, "a context without a change is an API write")
	assert.Equal(t, created.ETag, r2.ETagBefore)
	assert.Equal(t, replaced.ETag, r2.ETagAfter)
	assert.Contains(t, r2.Paths(), "/comment")
	assert.Equal(t, created.ETag, revs[1].ETagAfter, "revision 1's etagAfter is revision 2's etagBefore")

	// The operations rebuild the versions: undoing revision 2 from the current item gives
	// exactly what revision 1 recorded.
	cur, err := st.Items().Get(ctx, created.Key())
	require.NoError(t, err)
	before, err := codec.ApplyStored(codec.ItemStoredJSON(cur), r2.Ops, true)
	require.NoError(t, err)
	assert.JSONEq(t, string(revs[1].Ops[0].Value), string(before))

	got, err := st.Revisions().Get(ctx, "ds", "q1", 2)
	require.NoError(t, err)
	assert.Equal(t, r2, got)
	got, err = st.Revisions().Get(ctx, "ds", "q1", 1)
	require.NoError(t, err)
	assert.Equal(t, revs[1], got)
	for _, n := range []int64{0, 3, 99} {
		_, err = st.Revisions().Get(ctx, "ds", "q1", n)
		assert.ErrorIs(t, err, gtc.ErrNotFound, "revision %d", n)
	}
	_, err = st.Revisions().Get(ctx, "ds", "no-such-item", 1)
	assert.ErrorIs(t, err, gtc.ErrNotFound)
	page, err := st.Revisions().List(ctx, "ds", "no-such-item", "", 10)
	require.NoError(t, err)
	assert.Empty(t, page.Revisions)
	assert.Empty(t, page.Next)
}

// A replace with a stale ETag changes nothing and records nothing.
func TestStaleReplaceRecordsNoRevision(t *testing.T) {
	env := testenv.Cosmos(t)
	st, _ := cosmostest.Open(t, env, nil)
	ctx := t.Context()
	created, err := st.Items().Create(ctx, newItem("ds", "stale"))
	require.NoError(t, err)
	first := created.Clone()
	first.Comment = "first"
	replaced, err := st.Items().Replace(ctx, created, first)
	require.NoError(t, err)

	late := created.Clone()
	late.Comment = "late"
	_, err = st.Items().Replace(ctx, created, late)
	require.ErrorIs(t, err, gtc.ErrPreconditionFailed)

	revs := allRevisions(t, st, "ds", "stale", 10)
	require.Len(t, revs, 2)
	assert.EqualValues(t, 2, revs[0].Number)
	assert.Equal(t, replaced.ETag, revs[0].ETagAfter)
	cur, err := st.Items().Get(ctx, created.Key())
	require.NoError(t, err)
	assert.Equal(t, "first", cur.Comment)
	assert.EqualValues(t, 2, cur.Revision)
}

// An item written before revisions were kept (no revision number) gets, at its first write,
// a baseline of what it was as revision 1 and the change as revision 2.
func TestFirstWriteOfAnOlderItemRecordsItsBaseline(t *testing.T) {
	env := testenv.Cosmos(t)
	st, _ := cosmostest.Open(t, env, nil)
	ctx := t.Context()
	old := newItem("ds", "older")
	old.Comment = "as it was"
	plant(t, env, st, old)
	prev, err := st.Items().Get(ctx, old.Key())
	require.NoError(t, err)
	require.EqualValues(t, 0, prev.Revision)
	page, err := st.Revisions().List(ctx, "ds", "older", "", 10)
	require.NoError(t, err)
	assert.Empty(t, page.Revisions, "an item without a revision number has no revisions")

	next := prev.Clone()
	next.Comment = "as it is"
	replaced, err := st.Items().Replace(as(ctx, "carol", ""), prev, next)
	require.NoError(t, err)
	assert.EqualValues(t, 2, replaced.Revision)

	revs := allRevisions(t, st, "ds", "older", 10)
	require.Len(t, revs, 2)
	change, base := revs[0], revs[1]
	assert.EqualValues(t, 1, base.Number)
	assert.Equal(t, gtc.SourceBaseline, base.Source)
	assert.Equal(t, prev.ETag, base.ETagAfter)
	require.Len(t, base.Ops, 1)
	assert.JSONEq(t, string(codec.ItemStoredJSON(prev)), string(base.Ops[0].Value))
	assert.EqualValues(t, 2, change.Number)
	assert.Equal(t, "carol", change.Actor)
	assert.Equal(t, prev.ETag, change.ETagBefore)
	assert.Equal(t, replaced.ETag, change.ETagAfter)
	assert.Equal(t, []string{"/comment"}, change.Paths())
}

// Pages are newest first; each revision's etagAfter is the next one's etagBefore, across
// page boundaries too; a cursor the store did not issue is refused.
func TestRevisionPagesAreNewestFirst(t *testing.T) {
	env := testenv.Cosmos(t)
	st, _ := cosmostest.Open(t, env, nil)
	ctx := t.Context()
	cur, err := st.Items().Create(ctx, newItem("ds", "paged"))
	require.NoError(t, err)
	etags := []string{cur.ETag}
	for i := range 4 {
		next := cur.Clone()
		next.Comment = strings.Repeat("x", i+1)
		cur, err = st.Items().Replace(ctx, cur, next)
		require.NoError(t, err)
		etags = append(etags, cur.ETag)
	}

	var numbers []int64
	var pages int
	var all []*gtc.Revision
	for cursor := ""; ; pages++ {
		page, err := st.Revisions().List(ctx, "ds", "paged", cursor, 2)
		require.NoError(t, err)
		all = append(all, page.Revisions...)
		for _, r := range page.Revisions {
			numbers = append(numbers, r.Number)
		}
		if cursor = page.Next; cursor == "" {
			break
		}
	}
	assert.Equal(t, []int64{5, 4, 3, 2, 1}, numbers)
	assert.Equal(t, 2, pages, "pages of 2, 2 and 1: two cursors")
	for _, r := range all {
		assert.Equal(t, etags[r.Number-1], r.ETagAfter, "etagAfter of revision %d", r.Number)
		if r.Number > 1 {
			assert.Equal(t, etags[r.Number-2], r.ETagBefore, "etagBefore of revision %d", r.Number)
		}
	}

	_, err = st.Revisions().List(ctx, "ds", "paged", "not-a-cursor", 2)
	assert.ErrorIs(t, err, gtc.ErrInvalidArgument)
}

// countRevisionDocs counts the revision documents of the items container, behind the store.
func countRevisionDocs(t *testing.T, env testenv.CosmosEnv, st *cosmos.Store) int {
	t.Helper()
	c := cosmostest.Container(t, env, st, st.Containers().GroundTruth)
	pager := c.NewQueryItemsPager("SELECT c.id FROM c WHERE c.docType = 'ground-truth-revision'", azcosmos.NewPartitionKey(), nil)
	n := 0
	for pager.More() {
		resp, err := pager.NextPage(t.Context())
		require.NoError(t, err)
		n += len(resp.Items)
	}
	return n
}

// Deleting a dataset deletes its revisions; an item created again starts a new history.
func TestDeleteDatasetRemovesRevisions(t *testing.T) {
	env := testenv.Cosmos(t)
	st, _ := cosmostest.Open(t, env, nil)
	ctx := t.Context()
	for _, id := range []string{"a", "b"} {
		it, err := st.Items().Create(ctx, newItem("gone", id))
		require.NoError(t, err)
		next := it.Clone()
		next.Comment = "edited"
		_, err = st.Items().Replace(ctx, it, next)
		require.NoError(t, err)
	}
	_, err := st.Items().Create(ctx, newItem("kept", "c"))
	require.NoError(t, err)
	require.Equal(t, 5, countRevisionDocs(t, env, st))

	del, err := st.Items().DeleteDataset(ctx, "gone")
	require.NoError(t, err)
	assert.Equal(t, 2, del.Items, "revisions are not counted as items")
	assert.Equal(t, 1, countRevisionDocs(t, env, st), "only the other dataset's revision is left")

	again, err := st.Items().Create(ctx, newItem("gone", "a"))
	require.NoError(t, err)
	revs := allRevisions(t, st, "gone", "a", 10)
	require.Len(t, revs, 1)
	assert.Equal(t, again.ETag, revs[0].ETagAfter)
}

// Revision documents never show up where items are read.
func TestRevisionsAreNotItems(t *testing.T) {
	env := testenv.Cosmos(t)
	st, _ := cosmostest.Open(t, env, nil)
	ctx := t.Context()
	var keys []gtc.Key
	for _, id := range []string{"r1", "r2", "r3"} {
		it, err := st.Items().Create(ctx, newItem("vis", id))
		require.NoError(t, err)
		for i := range 2 {
			next := it.Clone()
			next.Comment = strings.Repeat("y", i+1)
			it, err = st.Items().Replace(ctx, it, next)
			require.NoError(t, err)
		}
		keys = append(keys, it.Key())
	}
	require.Equal(t, 9, countRevisionDocs(t, env, st))

	n, err := st.Items().Count(ctx, gtc.Filter{})
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	counts, err := st.Items().CountByStatus(ctx)
	require.NoError(t, err)
	assert.Equal(t, 3, counts[gtc.StatusDraft])

	page, err := st.Items().Query(ctx, gtc.Query{Sort: gtc.SortID, Limit: 100})
	require.NoError(t, err)
	assert.Equal(t, 3, page.Total)
	assert.Len(t, page.Items, 3)

	for _, order := range []gtc.ScanOrder{gtc.ByDatasetID, gtc.AnyOrder} {
		var got []string
		for cursor := ""; ; {
			sp, err := st.Items().Scan(ctx, gtc.ScanSpec{Order: order}, cursor, 100)
			require.NoError(t, err)
			for _, it := range sp.Items {
				got = append(got, it.ID)
			}
			if cursor = sp.Next; cursor == "" {
				break
			}
		}
		assert.ElementsMatch(t, []string{"r1", "r2", "r3"}, got, "scan order %d", order)
	}
	var all []string
	for it, err := range st.Items().QueryAll(ctx, gtc.Query{Sort: gtc.SortID, Limit: 100}) {
		require.NoError(t, err)
		all = append(all, it.ID)
	}
	assert.Equal(t, []string{"r1", "r2", "r3"}, all)

	var eligible []gtc.Key
	for k, err := range st.Items().Eligible(ctx, gtc.EligibleSpec{User: "someone"}) {
		require.NoError(t, err)
		eligible = append(eligible, k)
	}
	assert.ElementsMatch(t, keys, eligible)

	ds, err := st.Items().Datasets(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"vis"}, ds)

	m := st.Maintenance()
	raw := scanRaw(t, m)
	assert.Len(t, raw, 3)
	for _, d := range raw {
		assert.Equal(t, gtc.DocTypeItem, d.Body["docType"])
	}
	nRaw, err := m.CountRaw(ctx, nil)
	require.NoError(t, err)
	assert.Equal(t, 3, nRaw)
	for dup, err := range m.DuplicateIDs(ctx, nil) {
		require.NoError(t, err)
		t.Errorf("a revision made %v look like a duplicate", dup)
	}
	for _, k := range keys {
		loc, err := st.Items().Locate(ctx, k.DatasetName, k.ID)
		require.NoError(t, err)
		assert.Equal(t, k, loc)
	}
}

// A batch the server does not commit leaves nothing behind: here the item replace is
// applied first and the revision write after it is refused, so the server rolls the item
// back; the replace fails as unavailable, the item is unchanged and no revision is added.
func TestBatchThatFailsLeavesNoRevision(t *testing.T) {
	env := testenv.Cosmos(t)
	st, f := openFaulty(t, nil)
	ctx := t.Context()
	created, err := st.Items().Create(ctx, newItem("ds", "atomic"))
	require.NoError(t, err)
	// A document in the item's partition with the id revision 2 will have, which the
	// tampered batch tries to create (not upsert), so that operation fails with 409.
	cosmostest.InsertRaw(t, env, st, map[string]any{"id": "atomic\u20632", "docType": "placeholder",
		"datasetName": "ds", "bucket": created.Bucket})
	isBatch := func(r *http.Request, _ string) bool { return r.Header.Get("x-ms-cosmos-is-batch-request") != "" }
	var answer []map[string]any
	r := f.add(&rule{match: isBatch, times: 1, respond: func(req *http.Request, next http.RoundTripper) (*http.Response, error) {
		body, err := readBody(req)
		if err != nil {
			return nil, err
		}
		setBody(req, strings.Replace(body, `"operationType":"Upsert"`, `"operationType":"Create"`, 1))
		resp, err := next.RoundTrip(req)
		if err == nil && resp.StatusCode == http.StatusMultiStatus {
			raw, rerr := readResp(resp)
			if rerr != nil {
				return nil, rerr
			}
			_ = json.Unmarshal([]byte(raw), &answer)
		}
		return resp, err
	}})
	next := created.Clone()
	next.Comment = "never stored"
	_, err = st.Items().Replace(ctx, created, next)
	require.ErrorIs(t, err, gtc.ErrUnavailable)
	assert.NotErrorIs(t, err, gtc.ErrPreconditionFailed)
	assert.EqualValues(t, 1, r.seen.Load())
	require.Len(t, answer, 2, "the server answered 207 with one result per operation")
	assert.EqualValues(t, http.StatusFailedDependency, answer[0]["statusCode"], "the item replace was rolled back")
	assert.EqualValues(t, http.StatusConflict, answer[1]["statusCode"])

	cur, err := st.Items().Get(ctx, created.Key())
	require.NoError(t, err)
	assert.Equal(t, created.ETag, cur.ETag, "the item is as it was")
	assert.Empty(t, cur.Comment)
	revs := allRevisions(t, st, "ds", "atomic", 10)
	require.Len(t, revs, 1)
	assert.EqualValues(t, 1, revs[0].Number)
}

func readBody(r *http.Request) (string, error) {
	if r.Body == nil {
		return "", nil
	}
	b, err := io.ReadAll(r.Body)
	_ = r.Body.Close()
	return string(b), err
}

func setBody(r *http.Request, body string) {
	r.Body = io.NopCloser(strings.NewReader(body))
	r.ContentLength = int64(len(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(body)), nil }
}

// readResp reads an answer's body and leaves it readable again.
func readResp(resp *http.Response) (string, error) {
	b, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return string(b), err
}

// An item too large to travel twice in one transactional batch (2 MB) is created with a first
// revision that records the addition without the copy; its history and every later version
// read as usual.
func TestRevisionOfALargeItemLeavesTheCopyOut(t *testing.T) {
	env := testenv.Cosmos(t)
	st, _ := cosmostest.Open(t, env, nil)
	ctx := t.Context()
	big := newItem("ds", "big")
	big.Comment = strings.Repeat("x", 1200<<10)
	created, err := st.Items().Create(ctx, big)
	require.NoError(t, err)
	next := created.Clone()
	next.Comment = strings.Repeat("y", 1200<<10)
	_, err = st.Items().Replace(ctx, created, next)
	require.NoError(t, err)

	revs := allRevisions(t, st, "ds", "big", 10)
	require.Len(t, revs, 2)
	first := revs[1]
	assert.Equal(t, []string{""}, first.Paths(), "the first revision still says the item was added")
	assert.Empty(t, first.Ops[0].Value, "without a second copy of the item")
	undone, err := codec.ApplyStored(codec.ItemStoredJSON(next), revs[0].Ops, true)
	require.NoError(t, err)
	was, err := codec.DecodeStoredItem(undone)
	require.NoError(t, err)
	assert.Equal(t, big.Comment, was.Comment, "the first version is rebuilt from the item")

	small, err := st.Items().Create(ctx, newItem("ds", "small"))
	require.NoError(t, err)
	revs = allRevisions(t, st, "ds", small.ID, 10)
	require.Len(t, revs, 1)
	assert.NotEmpty(t, revs[0].Ops[0].Value, "a smaller item's first revision holds the whole item")
}
