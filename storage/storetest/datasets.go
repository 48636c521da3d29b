package storetest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	gtc "github.com/gtc-dev/gtc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func (s *suite) aggregateTests() []namedTest {
	return []namedTest{
		{"CountByStatus", s.countByStatus}, // 26
		{"Datasets", s.datasets},           // 27
	}
}

func (s *suite) assignmentTests() []namedTest {
	return []namedTest{
		{"Eligible", s.eligible},     // 28
		{"ClaimRace", s.claimRace},   // 29
		{"QueueQuery", s.queueQuery}, // 30
	}
}

func (s *suite) datasetTests() []namedTest {
	return []namedTest{
		{"DeleteDataset", s.deleteDataset}, // 32
	}
}

func (s *suite) curationTests() []namedTest {
	return []namedTest{
		{"Lifecycle", s.curationLifecycle}, // 33
		{"GetMissing", s.curationGetMissing},
	}
}

func (s *suite) healthTests() []namedTest {
	return []namedTest{
		{"Ping", s.ping},                       // 39
		{"PingUnavailable", s.pingUnavailable}, // 39
	}
}

func (s *suite) putCuration(t *testing.T, st gtc.Store, ds, text, ifMatch string) (*gtc.CurationInstructions, bool) {
	t.Helper()
	doc, created, err := st.Curation().Put(ctxT(t), &gtc.CurationInstructions{
		DatasetName: ds, Instructions: text, UpdatedAt: s.now(), UpdatedBy: ptr("curator@example.com"),
	}, ifMatch)
	require.NoError(t, err)
	return doc, created
}

// 26. CountByStatus reports all four statuses, zeros included, and ignores curation
// documents.
func (s *suite) countByStatus(t *testing.T) {
	st := s.open(t)
	empty, err := st.Items().CountByStatus(ctxT(t))
	require.NoError(t, err)
	assert.Equal(t, map[gtc.Status]int{gtc.StatusDraft: 0, gtc.StatusApproved: 0, gtc.StatusSkipped: 0, gtc.StatusDeleted: 0}, empty)

	want := map[gtc.Status]int{gtc.StatusDraft: 3, gtc.StatusApproved: 2, gtc.StatusSkipped: 0, gtc.StatusDeleted: 1}
	var items []*gtc.Item
	for status, n := range want {
		for i := range n {
			it := s.item(fmt.Sprint("ds-", i%2), fmt.Sprintf("%s-%d", status, i))
			it.Status = status
			items = append(items, it)
		}
	}
	createAll(t, st, items)
	s.putCuration(t, st, "ds-0", "rules", "")
	s.putCuration(t, st, "curation-only", "rules", "")

	got, err := st.Items().CountByStatus(ctxT(t))
	require.NoError(t, err)
	assert.Equal(t, want, got)
}

// 27. Datasets are sorted and distinct; a dataset with only curation instructions is absent,
// and a deleted dataset disappears.
func (s *suite) datasets(t *testing.T) {
	st := s.open(t)
	got, err := st.Items().Datasets(ctxT(t))
	require.NoError(t, err)
	assert.Empty(t, got)

	var items []*gtc.Item
	for i, ds := range []string{"zeta", "Alpha", "alpha", "beta", "zeta", "älpha", "alpha-2", "beta"} {
		it := s.item(ds, fmt.Sprint("item-", i))
		if i%3 == 0 {
			it.Status = gtc.StatusDeleted // deleted items still name their dataset
		}
		items = append(items, it)
	}
	createAll(t, st, items)
	s.putCuration(t, st, "curation-only", "rules", "")
	s.putCuration(t, st, "beta", "rules", "")

	got, err = st.Items().Datasets(ctxT(t))
	require.NoError(t, err)
	assert.Equal(t, []string{"Alpha", "alpha", "alpha-2", "beta", "zeta", "älpha"}, got)

	_, err = st.Items().DeleteDataset(ctxT(t), "beta")
	require.NoError(t, err)
	got, err = st.Items().Datasets(ctxT(t))
	require.NoError(t, err)
	assert.Equal(t, []string{"Alpha", "alpha", "alpha-2", "zeta", "älpha"}, got)
}

// 30. The queue query (assignee, draft, by assignedAt) lists exactly that user's drafts in
// assignment order.
func (s *suite) queueQuery(t *testing.T) {
	st := s.open(t)
	now := s.now()
	var items []*gtc.Item
	n := 0
	for _, user := range []string{"me@example.com", "you@example.com", ""} {
		for _, status := range gtc.Statuses {
			for range 3 {
				n++
				it := s.item([]string{"one", "two"}[n%2], fmt.Sprintf("q-%02d", n))
				it.Status = status
				if user != "" {
					it.AssignedTo = ptr(user)
					// Equal assignment times on purpose: the id breaks the tie.
					it.AssignedAt = ptr(now.Add(-time.Duration((n*7)%5) * time.Minute))
				}
				items = append(items, it)
			}
		}
	}
	createAll(t, st, items)
	f := gtc.Filter{AssignedTo: ptr("me@example.com"), Statuses: []gtc.Status{gtc.StatusDraft}}
	want := modelQuery(items, f, gtc.SortAssignedAt, false)
	require.Len(t, want, 3)
	for _, it := range want {
		assert.Equal(t, "me@example.com", *it.AssignedTo)
	}
	checkQuery(t, st, items, gtc.Query{Filter: f, Sort: gtc.SortAssignedAt, Limit: 25}, "queue")
	checkQuery(t, st, items, gtc.Query{Filter: f, Sort: gtc.SortAssignedAt, Offset: 1, Limit: 1}, "queue page 2")

	// Reassigning moves the item to the other queue.
	moved := want[0]
	_, err := gtc.Update(ctxT(t), st.Items(), moved.Key(), func(cur *gtc.Item) (*gtc.Item, error) {
		cur.AssignedTo, cur.AssignedAt = ptr("you@example.com"), ptr(now)
		return cur, nil
	})
	require.NoError(t, err)
	page, err := st.Items().Query(ctxT(t), gtc.Query{Filter: f, Sort: gtc.SortAssignedAt, Limit: 25})
	require.NoError(t, err)
	assert.Equal(t, keys(want[1:]), keys(page.Items))
	assert.Equal(t, 2, page.Total)
}

// 32. DeleteDataset removes every item and the curation document of one dataset, returns
// the counts, is idempotent, and lets the ids be created again.
func (s *suite) deleteDataset(t *testing.T) {
	st := s.open(t)
	var items []*gtc.Item
	for i, status := range []gtc.Status{gtc.StatusDraft, gtc.StatusApproved, gtc.StatusSkipped, gtc.StatusDeleted, gtc.StatusDraft} {
		it := s.item("doomed", fmt.Sprint("d-", i))
		it.Status = status
		it.ManualTags = []string{"topic:x"}
		items = append(items, it)
	}
	keep := s.item("kept", "d-0")
	keep.ManualTags = []string{"topic:x"}
	items = append(items, keep)
	createAll(t, st, items)
	s.putCuration(t, st, "doomed", "rules", "")
	s.putCuration(t, st, "kept", "rules", "")

	res, err := st.Items().DeleteDataset(ctxT(t), "doomed")
	require.NoError(t, err)
	assert.Equal(t, gtc.DatasetDeletion{Items: 5, Curation: true}, res)

	for _, it := range items[:5] {
		_, err := st.Items().Locate(ctxT(t), it.DatasetName, it.ID)
		assert.ErrorIs(t, err, gtc.ErrNotFound, "%s is gone", it.Key())
	}
	n, err := st.Items().Count(ctxT(t), gtc.Filter{DatasetNames: []string{"doomed"}})
	require.NoError(t, err)
	assert.Zero(t, n)
	n, err = st.Items().Count(ctxT(t), gtc.Filter{AllTags: []string{"topic:x"}})
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the tags of the deleted items are gone too")
	if !s.h.Gaps.MissingReadIsServerError {
		_, err = st.Curation().Get(ctxT(t), "doomed")
		assert.ErrorIs(t, err, gtc.ErrNotFound, "the curation document is gone")
	}
	get(t, st, keep.Key())
	_, err = st.Curation().Get(ctxT(t), "kept")
	assert.NoError(t, err, "other datasets are left alone")

	again, err := st.Items().DeleteDataset(ctxT(t), "doomed")
	require.NoError(t, err)
	assert.Equal(t, gtc.DatasetDeletion{}, again, "a second delete finds nothing")

	reborn := create(t, st, s.item("doomed", "d-0"))
	assert.Equal(t, gtc.StatusDraft, get(t, st, reborn.Key()).Status, "deleted ids can be created again")
}

// 33. Curation instructions: create, create again, replace with the current and a stale
// token, a token on a missing document.
func (s *suite) curationLifecycle(t *testing.T) {
	st := s.open(t)
	loc := time.FixedZone("CET", 3600)
	at := time.Date(2025, 1, 2, 11, 0, 0, 123456789, loc)
	doc, created, err := st.Curation().Put(ctxT(t), &gtc.CurationInstructions{
		DatasetName: "support", Instructions: "# Regeln\n– höflich bleiben", UpdatedAt: at, UpdatedBy: ptr("alice@example.com"),
	}, "")
	require.NoError(t, err)
	assert.True(t, created)
	require.NotEmpty(t, doc.ETag)

	got, err := st.Curation().Get(ctxT(t), "support")
	require.NoError(t, err)
	assert.Equal(t, doc.ETag, got.ETag)
	assert.Equal(t, "support", got.DatasetName)
	assert.Equal(t, "# Regeln\n– höflich bleiben", got.Instructions)
	assert.True(t, at.Truncate(time.Microsecond).Equal(got.UpdatedAt), "updatedAt %s", got.UpdatedAt)
	assert.Equal(t, time.UTC, got.UpdatedAt.Location())
	require.NotNil(t, got.UpdatedBy)
	assert.Equal(t, "alice@example.com", *got.UpdatedBy)

	_, _, err = st.Curation().Put(ctxT(t), &gtc.CurationInstructions{DatasetName: "support", Instructions: "again", UpdatedAt: s.now()}, "")
	assert.ErrorIs(t, err, gtc.ErrConflict, "create of an existing document")

	v2, created := s.putCuration(t, st, "support", "v2", got.ETag)
	assert.False(t, created)
	assert.NotEqual(t, got.ETag, v2.ETag)
	got, err = st.Curation().Get(ctxT(t), "support")
	require.NoError(t, err)
	assert.Equal(t, "v2", got.Instructions)
	assert.Equal(t, v2.ETag, got.ETag)

	_, _, err = st.Curation().Put(ctxT(t), &gtc.CurationInstructions{DatasetName: "support", Instructions: "lost", UpdatedAt: s.now()}, doc.ETag)
	assert.ErrorIs(t, err, gtc.ErrPreconditionFailed, "stale token")
	// The store compares tokens exactly; quote and W/ tolerance belong to the API layer.
	_, _, err = st.Curation().Put(ctxT(t), &gtc.CurationInstructions{DatasetName: "support", Instructions: "lost", UpdatedAt: s.now()},
		"W/"+strings.Trim(v2.ETag, `"`))
	assert.ErrorIs(t, err, gtc.ErrPreconditionFailed, "a token that only matches after normalization")

	got, err = st.Curation().Get(ctxT(t), "support")
	require.NoError(t, err)
	assert.Equal(t, "v2", got.Instructions, "failed writes change nothing")

	_, _, err = st.Curation().Put(ctxT(t), &gtc.CurationInstructions{DatasetName: "nowhere", Instructions: "x", UpdatedAt: s.now()}, v2.ETag)
	assert.ErrorIs(t, err, gtc.ErrNotFound, "token on a missing document")
}

// 33. Get of a missing curation document is ErrNotFound.
func (s *suite) curationGetMissing(t *testing.T) {
	s.skipMissingRead(t)
	st := s.open(t)
	_, err := st.Curation().Get(ctxT(t), "absent")
	assert.ErrorIs(t, err, gtc.ErrNotFound)
}

// 39. Ping succeeds on a working store.
func (s *suite) ping(t *testing.T) {
	st := s.open(t)
	ctx, cancel := context.WithTimeout(ctxT(t), 2*time.Second)
	defer cancel()
	assert.NoError(t, st.Ping(ctx))
	assert.NotEmpty(t, st.Backend())
}

// 39. Ping reports ErrUnavailable, within the caller's deadline, once the backend is gone.
func (s *suite) pingUnavailable(t *testing.T) {
	if s.h.Break == nil {
		t.Skipf("skipped: harness %s has no Break hook", s.h.Name)
	}
	st := s.h.New(t)
	t.Cleanup(func() { _ = st.Close() }) // a broken store may fail to close cleanly
	create(t, st, s.item("ds", "before"))
	require.NoError(t, st.Ping(ctxT(t)))

	s.h.Break(t, st)
	const deadline = 2 * time.Second
	ctx, cancel := context.WithTimeout(ctxT(t), deadline)
	defer cancel()
	start := time.Now()
	err := st.Ping(ctx)
	elapsed := time.Since(start)
	require.Error(t, err)
	assert.ErrorIs(t, err, gtc.ErrUnavailable)
	assert.Less(t, elapsed, deadline+500*time.Millisecond, "Ping must answer within the caller's deadline")
}
