package cosmos_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	gtc "github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/codec"
	"github.com/gtc-dev/gtc/storage/cosmos"
	"github.com/gtc-dev/gtc/storage/cosmos/cosmostest"
	"github.com/gtc-dev/gtc/storage/storetest"
	"github.com/gtc-dev/gtc/storage/storetest/testenv"
)

// decoded is a JSON object as gtc migrate reads documents: numbers as json.Number.
func decoded(t *testing.T, doc []byte) map[string]any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var m map[string]any
	require.NoError(t, dec.Decode(&m))
	return m
}

// plant writes the document a current gtc writes for it into st's items container, behind
// the store's back, as another tool (a bulk loader, a container copy) would: its bucket is
// not registered.
func plant(t *testing.T, env testenv.CosmosEnv, st *cosmos.Store, it *gtc.Item) {
	t.Helper()
	cosmostest.InsertRaw(t, env, st, decoded(t, cosmos.ItemDocument(it)))
}

// scanRaw reads a raw scan of datasets to its end.
func scanRaw(t *testing.T, m gtc.Maintenance, datasets ...string) []gtc.RawDoc {
	t.Helper()
	var out []gtc.RawDoc
	for cursor := ""; ; {
		page, err := m.ScanRaw(t.Context(), datasets, cursor, 100)
		require.NoError(t, err)
		out = append(out, page.Docs...)
		if cursor = page.Next; cursor == "" {
			return out
		}
	}
}

// converted is what gtc migrate makes of a small legacy document (id, question) in dataset
// ds: an item in the bucket its id maps to.
func converted(ds, id, question string) *gtc.Item {
	it := newItem(ds, id)
	it.History = []gtc.HistoryEntry{{Role: "user", Msg: question}}
	return it
}

func skipIdentityGap(t *testing.T, env testenv.CosmosEnv) {
	t.Helper()
	if cosmostest.Gaps(env).IdentityByFirstKeyPath {
		t.Skip(storetest.SkipIdentityByFirstKeyPath)
	}
}

const explicitBucket = "0b0b0b0b-0000-4000-8000-000000000001"

// Behaviour 38, Cosmos only: current-format documents another tool wrote into buckets the
// registry does not know are listed by Datasets and served by queries and scans once the
// registry has learnt the buckets, by a rebuild or by EnsureRegistered (gtc migrate).
func TestBucketsOtherToolsWroteAreServedOnceRegistered(t *testing.T) {
	env := testenv.Cosmos(t)
	for _, c := range []struct {
		name     string
		register func(t *testing.T, st *cosmos.Store, keys []gtc.Key)
	}{
		{"RebuildRegistry", func(t *testing.T, st *cosmos.Store, _ []gtc.Key) {
			require.NoError(t, st.RebuildRegistry(t.Context()))
		}},
		{"EnsureRegistered", func(t *testing.T, st *cosmos.Store, keys []gtc.Key) {
			for _, k := range keys {
				require.NoError(t, st.Maintenance().EnsureRegistered(t.Context(), k))
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, _ := cosmostest.Open(t, env, nil)
			ctx := t.Context()
			_, err := st.Items().Create(ctx, newItem("api", "x"))
			require.NoError(t, err)
			a := newItem("loaded", "a")
			b := newItem("loaded", "b")
			b.Bucket, b.Comment = explicitBucket, "in a bucket of its own"
			plant(t, env, st, a)
			plant(t, env, st, b)

			names, err := st.Items().Datasets(ctx)
			require.NoError(t, err)
			assert.Equal(t, []string{"api"}, names, "buckets the registry does not know are not listed yet")

			c.register(t, st, []gtc.Key{a.Key(), b.Key()})

			names, err = st.Items().Datasets(ctx)
			require.NoError(t, err)
			assert.Equal(t, []string{"api", "loaded"}, names)
			page, err := st.Items().Query(ctx, gtc.Query{Filter: gtc.Filter{DatasetNames: []string{"loaded"}}, Sort: gtc.SortID, Limit: 10})
			require.NoError(t, err)
			assert.Equal(t, 2, page.Total)
			require.Len(t, page.Items, 2, "the query serves both documents")
			for i, want := range []*gtc.Item{a, b} {
				assert.JSONEq(t, string(codec.ItemStoredJSON(want)), string(codec.ItemStoredJSON(page.Items[i])))
			}
			scan, err := st.Items().Scan(ctx, gtc.ScanSpec{DatasetNames: []string{"loaded"}, Order: gtc.ByDatasetID}, "", 10)
			require.NoError(t, err)
			assert.Len(t, scan.Items, 2, "a scan in (datasetName, id) order serves both")
		})
	}
}

// Behaviour 38, Cosmos only: one (datasetName, id) in two buckets, which only other tools can
// write, is reported by DuplicateIDs, and Locate answers a conflict naming both copies.
func TestDuplicateIDsAreReportedAndLocateNamesBothCopies(t *testing.T) {
	env := testenv.Cosmos(t)
	skipIdentityGap(t, env)
	st, _ := cosmostest.Open(t, env, nil)
	ctx := t.Context()
	x := newItem("dup", "x")
	copyOfX := newItem("dup", "x")
	copyOfX.Bucket, copyOfX.Comment = explicitBucket, "a second copy"
	for _, it := range []*gtc.Item{x, copyOfX, newItem("dup", "y"), newItem("other", "x")} {
		plant(t, env, st, it)
	}
	require.NoError(t, st.RebuildRegistry(ctx))
	both := []gtc.Key{x.Key(), copyOfX.Key()}
	if both[1].Bucket < both[0].Bucket {
		both[0], both[1] = both[1], both[0]
	}

	m := st.Maintenance()
	duplicates := func(datasets ...string) [][]gtc.Key {
		var out [][]gtc.Key
		for keys, err := range m.DuplicateIDs(ctx, datasets) {
			require.NoError(t, err)
			out = append(out, keys)
		}
		return out
	}
	assert.Equal(t, [][]gtc.Key{both}, duplicates(), "every dataset")
	assert.Equal(t, [][]gtc.Key{both}, duplicates("dup"))
	assert.Empty(t, duplicates("other"), "the same id in another dataset is no duplicate")

	_, err := st.Items().Locate(ctx, "dup", "x")
	var ce *gtc.ConflictError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, both[0], ce.Existing)
	assert.Equal(t, both, ce.All, "the conflict carries both keys")
	assert.Contains(t, err.Error(), both[1].Bucket, "the message names the other copy too")
	k, err := st.Items().Locate(ctx, "dup", "y")
	require.NoError(t, err)
	assert.Equal(t, "y", k.ID)
}

// Legacy documents whose bucket is null or a boolean are read by their stored key values and
// moved to the bucket their id maps to.
func TestNullAndBooleanBucketsAreReadAndMoved(t *testing.T) {
	env := testenv.Cosmos(t)
	skipIdentityGap(t, env)
	st, _ := cosmostest.Open(t, env, nil)
	ctx := t.Context()
	m := st.Maintenance()
	buckets := map[string]any{"null-bucket": nil, "bool-bucket": true}
	for id, b := range buckets {
		cosmostest.InsertRaw(t, env, st, map[string]any{"id": id, "datasetName": "odd", "bucket": b, "synthQuestion": "Q " + id, "tags": []any{}})
	}
	docs := scanRaw(t, m, "odd")
	require.Len(t, docs, 2)
	for _, d := range docs {
		assert.Equal(t, []any{"odd", buckets[d.ID]}, d.PartitionKey, d.ID)
		got, err := m.GetRaw(ctx, d.PartitionKey, d.ID)
		require.NoError(t, err, d.ID)
		assert.Equal(t, d.ETag, got.ETag)
		assert.Equal(t, d.Body, got.Body)

		conv := converted("odd", d.ID, "Q "+d.ID)
		moved, err := m.MoveRaw(ctx, d, decoded(t, codec.ItemStoredJSON(conv)))
		require.NoError(t, err, d.ID)
		it, err := st.Items().Get(ctx, conv.Key())
		require.NoError(t, err, "the moved item is served")
		assert.Equal(t, moved.ETag, it.ETag)
		_, err = m.GetRaw(ctx, d.PartitionKey, d.ID)
		assert.ErrorIs(t, err, gtc.ErrNotFound, "%s: the old document is gone", d.ID)
	}
	n, err := m.CountRaw(ctx, []string{"odd"})
	require.NoError(t, err)
	assert.Equal(t, 2, n)
}

// A legacy document without a bucket can be read but not addressed by point operations:
// MoveRaw refuses it as unaddressable (gtc migrate: UNADDRESSABLE_DOCUMENT) and writes nothing.
func TestDocumentWithoutBucketIsUnaddressable(t *testing.T) {
	env := testenv.Cosmos(t)
	st, _ := cosmostest.Open(t, env, nil)
	ctx := t.Context()
	m := st.Maintenance()
	cosmostest.InsertRaw(t, env, st, map[string]any{"id": "no-bucket", "datasetName": "odd", "synthQuestion": "Where?", "tags": []any{}})
	docs := scanRaw(t, m, "odd")
	require.Len(t, docs, 1)
	d := docs[0]
	assert.Equal(t, []any{"odd", nil}, d.PartitionKey)
	assert.NotContains(t, d.Body, "bucket")
	got, err := m.GetRaw(ctx, d.PartitionKey, d.ID)
	require.NoError(t, err, "read by its stored key values")
	assert.Equal(t, d.ETag, got.ETag)

	_, err = m.MoveRaw(ctx, d, decoded(t, codec.ItemStoredJSON(converted("odd", "no-bucket", "Where?"))))
	require.ErrorIs(t, err, gtc.ErrUnaddressable)
	assert.ErrorIs(t, err, gtc.ErrInvalidArgument)
	after := scanRaw(t, m, "odd")
	require.Len(t, after, 1, "nothing was copied")
	assert.Equal(t, d.ETag, after[0].ETag, "nothing was changed")

	_, err = m.GetRaw(ctx, []any{"odd", map[string]any{"a": json.Number("1")}}, "no-bucket")
	assert.ErrorIs(t, err, gtc.ErrUnaddressable, "an object is no partition key value")
}

// A raw-scan cursor resumes only the scan of its own dataset list.
func TestRawScanCursorBelongsToItsDatasetList(t *testing.T) {
	env := testenv.Cosmos(t)
	st, _ := cosmostest.Open(t, env, nil)
	ctx := t.Context()
	m := st.Maintenance()
	for i, ds := range []string{"c1", "c1", "c2"} {
		cosmostest.InsertRaw(t, env, st, map[string]any{"id": string(rune('a' + i)), "datasetName": ds, "bucket": i, "tags": []any{}})
	}
	first, err := m.ScanRaw(ctx, []string{"c1", "c2"}, "", 1)
	require.NoError(t, err)
	require.NotEmpty(t, first.Next)

	_, err = m.ScanRaw(ctx, []string{"c1"}, first.Next, 1)
	assert.ErrorIs(t, err, gtc.ErrInvalidArgument, "another dataset list")
	_, err = st.Items().Scan(ctx, gtc.ScanSpec{DatasetNames: []string{"c1", "c2"}, Order: gtc.AnyOrder}, first.Next, 1)
	assert.ErrorIs(t, err, gtc.ErrInvalidArgument, "an item scan")

	seen := map[string]bool{first.Docs[0].ID: true}
	for cursor := first.Next; cursor != ""; {
		page, err := m.ScanRaw(ctx, []string{"c2", "c1"}, cursor, 1)
		require.NoError(t, err, "the same list in another order resumes")
		for _, d := range page.Docs {
			assert.False(t, seen[d.ID], "%s once", d.ID)
			seen[d.ID] = true
		}
		cursor = page.Next
	}
	assert.Len(t, seen, 3)
}

// A move keeps the reference's assignment record in step: the record of the old key goes,
// one for the new key is written.
func TestAssignmentRecordFollowsAMove(t *testing.T) {
	env := testenv.Cosmos(t)
	skipIdentityGap(t, env)
	st, _ := cosmostest.Open(t, env, nil)
	ctx := t.Context()
	const ann = "ann@example.com"
	cosmostest.InsertRaw(t, env, st, map[string]any{"id": "a1", "datasetName": "ds", "bucket": 7, "synthQuestion": "Q?",
		"tags": []any{}, "assignedTo": ann, "assignedAt": "2025-05-01T10:00:00Z"})
	record, err := json.Marshal(map[string]any{"id": "ds|7|a1", "pk": "sme:" + ann, "ground_truth_id": "a1", "datasetName": "ds",
		"bucket": "7", "docType": "sme-assignment", "schemaVersion": "v1"})
	require.NoError(t, err)
	_, err = cosmostest.Container(t, env, st, st.Containers().Assignments).CreateItem(ctx, azcosmos.NewPartitionKeyString("sme:"+ann), record, nil)
	require.NoError(t, err)

	conv := converted("ds", "a1", "Q?")
	at := time.Date(2025, 5, 1, 10, 0, 0, 0, time.UTC)
	conv.AssignedTo, conv.AssignedAt = ptr(ann), &at
	m := st.Maintenance()
	docs := scanRaw(t, m, "ds")
	require.Len(t, docs, 1)
	_, err = m.MoveRaw(ctx, docs[0], decoded(t, codec.ItemStoredJSON(conv)))
	require.NoError(t, err)
	assert.Equal(t, []string{"sme:" + ann + " ds|" + conv.Bucket + "|a1"}, assignmentRecords(t, env, st))
}

// A raw write takes only a canonical item document: a key the item does not model or a value
// in another spelling would be lost or rewritten without notice, so it is refused and the
// stored document stays as it was.
func TestRawWritesRefuseNonCanonicalBodies(t *testing.T) {
	env := testenv.Cosmos(t)
	st, _ := cosmostest.Open(t, env, nil)
	ctx := t.Context()
	m := st.Maintenance()
	conv := converted("ds", "l1", "Q?")
	cosmostest.InsertRaw(t, env, st, map[string]any{"id": "l1", "datasetName": "ds", "bucket": conv.Bucket, "synthQuestion": "Q?", "tags": []any{"a"}})
	docs := scanRaw(t, m, "ds")
	require.Len(t, docs, 1)

	for name, edit := range map[string]func(body map[string]any){
		"a key the item does not model": func(body map[string]any) { body["tags"] = []any{"a"} },
		"a time in another spelling":    func(body map[string]any) { body["updatedAt"] = "2025-01-02T03:04:05Z" },
		"an explicit null":              func(body map[string]any) { body["reviewedAt"] = nil },
	} {
		body := decoded(t, codec.ItemStoredJSON(conv))
		edit(body)
		_, err := m.ReplaceRaw(ctx, docs[0], body)
		assert.ErrorIs(t, err, gtc.ErrInvalidArgument, name)
	}
	after := scanRaw(t, m, "ds")
	require.Len(t, after, 1)
	assert.Equal(t, docs[0].ETag, after[0].ETag, "nothing was written")

	written, err := m.ReplaceRaw(ctx, docs[0], decoded(t, codec.ItemStoredJSON(conv)))
	require.NoError(t, err, "the canonical document is written")
	it, err := st.Items().Get(ctx, conv.Key())
	require.NoError(t, err)
	assert.Equal(t, written.ETag, it.ETag)
}

// Create refuses an id that a document awaiting gtc migrate already holds, even a legacy one
// without a docType in a numeric bucket: the API never writes a second copy for migrate to
// find.
func TestCreateSeesDocumentsAwaitingMigration(t *testing.T) {
	env := testenv.Cosmos(t)
	st, _ := cosmostest.Open(t, env, nil)
	cosmostest.InsertRaw(t, env, st, map[string]any{"id": "old", "datasetName": "ds", "bucket": 3, "synthQuestion": "Q?", "tags": []any{}})
	_, err := st.Items().Create(t.Context(), newItem("ds", "old"))
	var ce *gtc.ConflictError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, gtc.Key{DatasetName: "ds", Bucket: "3", ID: "old"}, ce.Existing)
	n, err := st.Maintenance().CountRaw(t.Context(), nil)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "nothing was created")
}
