package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"

	gtc "github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/codec"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func (s *suite) maintenanceTests() []namedTest {
	return []namedTest{
		{"ScanRawSeesLegacy", s.maintScanRaw},       // 37
		{"ReplaceRaw", s.maintReplaceRaw},           // 37
		{"MoveRaw", s.maintMoveRaw},                 // 37
		{"MoveRawConflict", s.maintMoveRawConflict}, // 37
		{"MarkerAndStatus", s.maintMarkerStatus},    // 38
	}
}

const legacyBucketUUID = "6f1c2d3e-0a1b-4c5d-8e9f-001122334455"

// legacyDocs are v1 documents as an older backend stored them: no docType, a numeric
// bucket, a single mixed tags list.
func legacyDocs() []map[string]any {
	return []map[string]any{
		{
			"id": "legacy-num", "datasetName": "maint", "bucket": 3, "status": "draft",
			"synthQuestion": "How do I reset my password?", "answer": "Use the reset link.",
			"tags": []any{"Source:SME", "long_doc"}, "totalReferences": 0, "comment": nil,
			"updatedAt": "2025-05-01T10:00:00Z",
		},
		{
			"id": "legacy-uuid", "datasetName": "maint-other", "bucket": legacyBucketUUID,
			"status": "approved", "docType": "ground-truth-item", "schemaVersion": "v1",
			"editedQuestion": "Which form renews a permit?", "answer": "Form P-12.",
			"refs":      []any{map[string]any{"url": "https://example.com/p12", "bonus": false}},
			"tags":      []any{"topic:permits"},
			"updatedAt": "2025-05-01T10:00:00Z",
		},
	}
}

// rawAll reads a ScanRaw to its end in pages of limit.
func rawAll(t *testing.T, m gtc.Maintenance, datasets []string, limit int) []gtc.RawDoc {
	t.Helper()
	var out []gtc.RawDoc
	cursor := ""
	for range 100000 {
		page, err := m.ScanRaw(ctxT(t), datasets, cursor, limit)
		require.NoError(t, err)
		require.LessOrEqual(t, len(page.Docs), limit)
		out = append(out, page.Docs...)
		if page.Next == "" {
			return out
		}
		require.NotEmpty(t, page.Docs, "a page with a Next cursor must not be empty")
		cursor = page.Next
	}
	t.Fatal("raw scan does not end")
	return nil
}

func rawByID(docs []gtc.RawDoc) map[string]gtc.RawDoc {
	out := make(map[string]gtc.RawDoc, len(docs))
	for _, d := range docs {
		out[d.DatasetName()+"/"+d.ID] = d
	}
	return out
}

// bodyOf is the canonical document of it as ReplaceRaw and MoveRaw take it.
func bodyOf(t *testing.T, it *gtc.Item) map[string]any {
	t.Helper()
	body, err := gtc.DecodeRawObject(codec.ItemStoredJSON(it))
	require.NoError(t, err)
	return body
}

// maintFixture stores two current items and the legacy documents.
func (s *suite) maintFixture(t *testing.T) (gtc.Store, []*gtc.Item) {
	t.Helper()
	require.NotNil(t, s.h.Raw, "%s: Harness.Raw is required for the maintenance behaviours", s.h.Name)
	st := s.open(t)
	a := s.item("maint", "current-a")
	a.Comment = "current a"
	b := s.item("maint", "current-b")
	items := []*gtc.Item{create(t, st, a), create(t, st, b)}
	for _, doc := range legacyDocs() {
		s.h.Raw(t, st, doc)
	}
	return st, items
}

// 37. ScanRaw returns the legacy documents, which Query, Scan and Count do not see, with
// their stored key values and without system properties; CountRaw matches.
func (s *suite) maintScanRaw(t *testing.T) {
	st, items := s.maintFixture(t)
	m := st.Maintenance()

	page, err := st.Items().Query(ctxT(t), gtc.Query{Sort: gtc.SortID, Limit: 100})
	require.NoError(t, err)
	assert.Equal(t, 2, page.Total, "Query must not see legacy documents")
	n, err := st.Items().Count(ctxT(t), gtc.Filter{})
	require.NoError(t, err)
	assert.Equal(t, 2, n, "Count must not see legacy documents")
	scanned, _ := scanAll(t, st, gtc.ScanSpec{Order: gtc.ByDatasetID}, "", 10)
	assert.Equal(t, keys(items), keys(scanned), "Scan must not see legacy documents")

	for _, limit := range []int{1, 3, 100} {
		docs := rawAll(t, m, nil, limit)
		got := rawByID(docs)
		assert.Len(t, docs, 4, "limit %d: every item document exactly once", limit)
		require.Len(t, got, 4, "limit %d", limit)

		num := got["maint/legacy-num"]
		assert.Equal(t, "3", num.BucketString(), "a numeric bucket is returned as stored")
		require.Len(t, num.PartitionKey, 2)
		assert.Equal(t, "maint", num.PartitionKey[0])
		assert.Equal(t, "How do I reset my password?", num.Body["synthQuestion"])
		assert.Equal(t, []any{"Source:SME", "long_doc"}, num.Body["tags"])
		assert.Equal(t, json.Number("0"), num.Body["totalReferences"], "numbers decode as json.Number")
		assert.NotEmpty(t, num.ETag)

		for _, d := range docs {
			for _, sys := range []string{"_etag", "_rid", "_self", "_attachments", "_ts", "gtcIndex"} {
				assert.NotContains(t, d.Body, sys, "%s: system and index fields are removed", d.KeyString())
			}
		}
		cur := got["maint/current-a"]
		assert.Equal(t, items[0].ETag, cur.ETag, "a current document has the ETag the item API reports")
		assert.Equal(t, bodyOf(t, items[0]), cur.Body, "a current document's body is its canonical document")
		assert.Equal(t, []any{"maint", items[0].Bucket}, cur.PartitionKey)
	}

	only := rawByID(rawAll(t, m, []string{"maint-other"}, 10))
	assert.Equal(t, []string{"maint-other/legacy-uuid"}, slices.Sorted(mapKeys(only)))
	for _, c := range []struct {
		datasets []string
		want     int
	}{{nil, 4}, {[]string{"maint"}, 3}, {[]string{"maint-other", "maint"}, 4}, {[]string{"absent"}, 0}} {
		n, err := m.CountRaw(ctxT(t), c.datasets)
		require.NoError(t, err)
		assert.Equal(t, c.want, n, "CountRaw(%v)", c.datasets)
	}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// 37. ReplaceRaw writes conditionally: a legacy document with a canonical bucket becomes a
// visible item in place; a stale ETag changes nothing.
func (s *suite) maintReplaceRaw(t *testing.T) {
	st, _ := s.maintFixture(t)
	m := st.Maintenance()
	old := rawByID(rawAll(t, m, nil, 100))["maint-other/legacy-uuid"]

	conv := gtc.NewItem("maint-other", "legacy-uuid")
	conv.Bucket = legacyBucketUUID
	conv.Status = gtc.StatusApproved
	conv.ManualTags = []string{"topic:permits"}
	conv.History = []gtc.HistoryEntry{{Role: "user", Msg: "Which form renews a permit?"}, {Role: "assistant", Msg: "Form P-12."}}
	conv.UpdatedAt = s.now()
	k := conv.Key()

	wrongKey := bodyOf(t, conv)
	wrongKey["id"] = "other-id"
	_, err := m.ReplaceRaw(ctxT(t), old, wrongKey)
	assert.ErrorIs(t, err, gtc.ErrInvalidArgument, "ReplaceRaw may not change the key")

	stale := old
	stale.ETag = `"00000000000000000000000000000000"`
	_, err = m.ReplaceRaw(ctxT(t), stale, bodyOf(t, conv))
	require.ErrorIs(t, err, gtc.ErrPreconditionFailed)
	_, err = st.Items().Get(ctxT(t), k)
	assert.ErrorIs(t, err, gtc.ErrNotFound, "a refused replace writes nothing")

	written, err := m.ReplaceRaw(ctxT(t), old, bodyOf(t, conv))
	require.NoError(t, err)
	assert.NotEqual(t, old.ETag, written.ETag, "a write issues a new ETag")
	assert.Equal(t, "legacy-uuid", written.ID)

	got := get(t, st, k)
	assert.Equal(t, written.ETag, got.ETag)
	assert.Equal(t, []string{"topic:permits"}, got.ManualTags)
	assert.Equal(t, "Form P-12.", gtc.AnswerText(got))
	page, err := st.Items().Query(ctxT(t), gtc.Query{Filter: gtc.Filter{DatasetNames: []string{"maint-other"}}, Sort: gtc.SortID, Limit: 10})
	require.NoError(t, err)
	assert.Equal(t, 1, page.Total, "the replaced document is visible to queries")

	docs := rawByID(rawAll(t, m, nil, 100))
	assert.Len(t, docs, 4, "a replace neither adds nor removes documents")
	assert.Equal(t, bodyOf(t, got), docs["maint-other/legacy-uuid"].Body)
	n, err := m.CountRaw(ctxT(t), nil)
	require.NoError(t, err)
	assert.Equal(t, 4, n)

	// The ETag it was read with is now stale.
	_, err = m.ReplaceRaw(ctxT(t), old, bodyOf(t, conv))
	assert.ErrorIs(t, err, gtc.ErrPreconditionFailed)

	// A current item replaced raw keeps its key and takes the new body.
	cur := docs["maint/current-a"]
	next := get(t, st, gtc.Key{DatasetName: "maint", Bucket: gtc.DeriveBucket("maint", "current-a"), ID: "current-a"})
	next.Comment = "rewritten by maintenance"
	w2, err := m.ReplaceRaw(ctxT(t), cur, bodyOf(t, next))
	require.NoError(t, err)
	again := get(t, st, next.Key())
	assert.Equal(t, "rewritten by maintenance", again.Comment)
	assert.Equal(t, w2.ETag, again.ETag)
}

// 37. MoveRaw creates at the new key and deletes the old document; a repeated move of the
// same document is accepted.
func (s *suite) maintMoveRaw(t *testing.T) {
	s.skipIdentityByFirstKeyPath(t)
	st, _ := s.maintFixture(t)
	m := st.Maintenance()
	old := rawByID(rawAll(t, m, nil, 100))["maint/legacy-num"]

	conv := gtc.NewItem("maint", "legacy-num")
	conv.Bucket = gtc.DeriveBucket("maint", "legacy-num")
	conv.ManualTags = []string{"custom:long_doc", "source:sme"}
	conv.History = []gtc.HistoryEntry{{Role: "user", Msg: "How do I reset my password?"}, {Role: "assistant", Msg: "Use the reset link."}}
	conv.UpdatedAt = s.now()

	stale := old
	stale.ETag = `"00000000000000000000000000000000"`
	_, err := m.MoveRaw(ctxT(t), stale, bodyOf(t, conv))
	require.ErrorIs(t, err, gtc.ErrPreconditionFailed, "a move from a stale ETag never deletes")
	var mi *gtc.MoveIncompleteError
	if errors.As(err, &mi) {
		// The store created first and kept both copies (MOVE_INCOMPLETE).
		assert.Equal(t, conv.Key(), mi.New)
	} else {
		// The store refused before creating: nothing was moved.
		_, gerr := st.Items().Get(ctxT(t), conv.Key())
		assert.ErrorIs(t, gerr, gtc.ErrNotFound)
	}
	assert.Contains(t, rawByID(rawAll(t, m, nil, 100)), "maint/legacy-num", "the old document remains")

	moved, err := m.MoveRaw(ctxT(t), old, bodyOf(t, conv))
	require.NoError(t, err)
	assert.Equal(t, conv.Bucket, moved.BucketString())
	got := get(t, st, conv.Key())
	assert.Equal(t, moved.ETag, got.ETag)
	assert.Equal(t, []string{"custom:long_doc", "source:sme"}, got.ManualTags)

	docs := rawAll(t, m, []string{"maint"}, 100)
	byKey := map[string]bool{}
	for _, d := range docs {
		byKey[d.KeyString()] = true
	}
	assert.Len(t, docs, 3, "the old document is gone, the new one is there")
	assert.False(t, byKey["maint/3/legacy-num"], "the old document is deleted")
	assert.True(t, byKey["maint/"+conv.Bucket+"/legacy-num"])
	page, err := st.Items().Query(ctxT(t), gtc.Query{Filter: gtc.Filter{DatasetNames: []string{"maint"}}, Sort: gtc.SortID, Limit: 10})
	require.NoError(t, err)
	assert.Equal(t, 3, page.Total)

	// A rerun of the same move (as after a crash between the two steps) is accepted and
	// changes nothing.
	_, err = m.MoveRaw(ctxT(t), old, bodyOf(t, conv))
	require.NoError(t, err, "a move whose target already holds the same document finishes")
	assert.Equal(t, got.ETag, get(t, st, conv.Key()).ETag)
	n, err := m.CountRaw(ctxT(t), nil)
	require.NoError(t, err)
	assert.Equal(t, 4, n)
}

// 37. A move onto a key that holds a different document is a conflict naming it; nothing
// changes.
func (s *suite) maintMoveRawConflict(t *testing.T) {
	s.skipIdentityByFirstKeyPath(t)
	st, items := s.maintFixture(t)
	m := st.Maintenance()
	s.h.Raw(t, st, map[string]any{
		"id": "current-a", "datasetName": "maint", "bucket": 9, "synthQuestion": "A second copy",
		"tags": []any{},
	})
	var dup gtc.RawDoc
	for _, d := range rawAll(t, m, []string{"maint"}, 100) {
		if d.ID == "current-a" && d.BucketString() == "9" {
			dup = d
		}
	}
	require.NotEmpty(t, dup.ETag, "the second copy is scanned")

	conv := gtc.NewItem("maint", "current-a")
	conv.Bucket = items[0].Bucket
	conv.History = []gtc.HistoryEntry{{Role: "user", Msg: "A second copy"}}
	conv.UpdatedAt = s.now()
	_, err := m.MoveRaw(ctxT(t), dup, bodyOf(t, conv))
	require.ErrorIs(t, err, gtc.ErrConflict)
	var ce *gtc.ConflictError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, items[0].Key(), ce.Existing)

	assert.Equal(t, "current a", get(t, st, items[0].Key()).Comment, "the existing item is untouched")
	docs := rawByID(rawAll(t, m, []string{"maint"}, 100))
	assert.Len(t, docs, 3)
	n, err := m.CountRaw(ctxT(t), []string{"maint"})
	require.NoError(t, err)
	assert.Equal(t, 4, n, "both copies remain")
}

// 38. After the pending documents are rewritten, EnsureRegistered for every item and
// WriteMigrationMarker, Status reports a complete index and registry.
func (s *suite) maintMarkerStatus(t *testing.T) {
	s.skipIdentityByFirstKeyPath(t)
	st, _ := s.maintFixture(t)
	m := st.Maintenance()
	before, err := st.Status(ctxT(t))
	require.NoError(t, err)
	assert.Equal(t, st.Backend(), before.Backend)
	if before.Pending >= 0 {
		assert.GreaterOrEqual(t, before.Pending, 2, "the legacy documents are pending")
	}

	for _, d := range rawAll(t, m, nil, 100) {
		if _, legacy := d.Body["tags"]; !legacy {
			continue
		}
		conv := gtc.NewItem(d.DatasetName(), d.ID)
		conv.Bucket = gtc.DeriveBucket(d.DatasetName(), d.ID)
		conv.History = []gtc.HistoryEntry{{Role: "user", Msg: fmt.Sprint(d.Body["synthQuestion"], d.Body["editedQuestion"])}}
		conv.UpdatedAt = s.now()
		var err error
		if d.BucketString() == conv.Bucket {
			_, err = m.ReplaceRaw(ctxT(t), d, bodyOf(t, conv))
		} else {
			_, err = m.MoveRaw(ctxT(t), d, bodyOf(t, conv))
		}
		require.NoError(t, err, d.KeyString())
	}
	for _, d := range rawAll(t, m, nil, 100) {
		require.NoError(t, m.EnsureRegistered(ctxT(t), gtc.Key{DatasetName: d.DatasetName(), Bucket: d.BucketString(), ID: d.ID}))
	}
	require.NoError(t, m.WriteMigrationMarker(ctxT(t), "gtc migrate test"))

	after, err := st.Status(ctxT(t))
	require.NoError(t, err)
	assert.True(t, after.IndexComplete, "index complete after the marker")
	assert.True(t, after.RegistryComplete, "registry complete after the marker")
	require.NotNil(t, after.MigratedAt)
	assert.Contains(t, []int{0, -1}, after.Pending, "nothing pending")
	datasets, err := st.Items().Datasets(ctxT(t))
	require.NoError(t, err)
	assert.Equal(t, []string{"maint", "maint-other"}, datasets)

	for dups, err := range m.DuplicateIDs(ctxT(t), nil) {
		require.NoError(t, err)
		t.Errorf("no duplicates expected, got %v", dups)
	}
}
