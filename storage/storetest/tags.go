package storetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	gtc "github.com/gtc-dev/gtc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func (s *suite) tagTests() []namedTest {
	return []namedTest{
		{"Empty", s.tagsEmpty},                  // 34
		{"AddUnionsAndSorts", s.tagsAdd},        // 34
		{"RemoveIsIdempotent", s.tagsRemove},    // 34
		{"ConcurrentChanges", s.tagsConcurrent}, // 34
		{"EmptyTagRefused", s.tagsEmptyRefused}, // the store never holds ""
	}
}

func (s *suite) tagDefinitionTests() []namedTest {
	return []namedTest{
		{"Lifecycle", s.definitionLifecycle},         // 35
		{"ListSorted", s.definitionsSorted},          // 35
		{"DeleteMissing", s.definitionDeleteMissing}, // 35
		{"ConcurrentCreate", s.definitionConcurrent}, // 35: conditional, never two creators
		{"EmptyKeyRefused", s.definitionEmptyKey},    // an empty key is refused
	}
}

func listTags(t *testing.T, st gtc.Store) []string {
	t.Helper()
	got, err := st.TagStore().List(ctxT(t))
	require.NoError(t, err, "list tags")
	return got
}

func addTags(t *testing.T, st gtc.Store, tags ...string) []string {
	t.Helper()
	got, err := st.TagStore().Add(ctxT(t), tags)
	require.NoError(t, err, "add %q", tags)
	return got
}

// 34. A new store has no tags, and removing from it is harmless.
func (s *suite) tagsEmpty(t *testing.T) {
	st := s.open(t)
	assert.Empty(t, listTags(t, st), "a new store lists no tags")
	got, err := st.TagStore().Remove(ctxT(t), []string{"topic:never"})
	require.NoError(t, err, "removing from an empty store")
	assert.Empty(t, got)
	assert.Empty(t, listTags(t, st))
}

// 34. Add unions into the set: the answer and List are the whole set, unique, in byte order.
func (s *suite) tagsAdd(t *testing.T) {
	st := s.open(t)
	got := addTags(t, st, "topic:b", "custom:zebra", "topic:a", "topic:b")
	want := []string{"custom:zebra", "topic:a", "topic:b"}
	assert.Equal(t, want, got, "Add answers the new set, sorted and unique")
	assert.Equal(t, want, listTags(t, st))

	// Byte order, not collation: "ä" (0xC3 0xA4) sorts after every ASCII letter.
	got = addTags(t, st, "topic:a", "custom:äpfel", "custom:apfel", "rephrase:q-7")
	want = []string{"custom:apfel", "custom:zebra", "custom:äpfel", "rephrase:q-7", "topic:a", "topic:b"}
	assert.Equal(t, want, got, "a second Add keeps what was there")
	assert.Equal(t, want, listTags(t, st))

	got = addTags(t, st, "topic:a", "topic:b")
	assert.Equal(t, want, got, "adding present tags changes nothing")
	got = addTags(t, st)
	assert.Equal(t, want, got, "adding nothing answers the set")
}

// 34. Remove subtracts from the set; absent tags are a no-op, and so is removing twice.
func (s *suite) tagsRemove(t *testing.T) {
	st := s.open(t)
	addTags(t, st, "topic:a", "topic:b", "topic:c", "custom:x")

	got, err := st.TagStore().Remove(ctxT(t), []string{"topic:b", "topic:absent", "custom:x"})
	require.NoError(t, err)
	want := []string{"topic:a", "topic:c"}
	assert.Equal(t, want, got, "Remove answers the new set")
	assert.Equal(t, want, listTags(t, st))

	got, err = st.TagStore().Remove(ctxT(t), []string{"topic:b", "custom:x"})
	require.NoError(t, err, "removing again")
	assert.Equal(t, want, got)
	assert.Equal(t, want, listTags(t, st))

	assert.Equal(t, []string{"custom:x", "topic:a", "topic:c"}, addTags(t, st, "custom:x"), "a removed tag can come back")
}

// 34. Sixteen callers changing the set at once never lose each other's changes.
func (s *suite) tagsConcurrent(t *testing.T) {
	st := s.open(t)
	const n = 16
	seed := []string{"keep:bystander"}
	for i := range n {
		seed = append(seed, fmt.Sprintf("old:%02d", i))
	}
	addTags(t, st, seed...)

	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := fmt.Sprintf("new:%02d", i)
			got, err := st.TagStore().Add(ctxT(t), []string{mine, "shared:all"})
			if err == nil && !slices.Contains(got, mine) {
				err = fmt.Errorf("the set Add answered lacks %s: %q", mine, got)
			}
			if err == nil {
				_, err = st.TagStore().Remove(ctxT(t), []string{fmt.Sprintf("old:%02d", i)})
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "caller %d", i)
	}

	want := []string{"keep:bystander"}
	for i := range n {
		want = append(want, fmt.Sprintf("new:%02d", i))
	}
	want = append(want, "shared:all")
	assert.Equal(t, want, listTags(t, st), "every add and every remove landed")
}

// The store never holds the empty tag: a call that contains one stores nothing.
func (s *suite) tagsEmptyRefused(t *testing.T) {
	st := s.open(t)
	_, err := st.TagStore().Add(ctxT(t), []string{"topic:ok", ""})
	assert.ErrorIs(t, err, gtc.ErrInvalidArgument)
	assert.Empty(t, listTags(t, st), "nothing of a refused call is stored")
}

func (s *suite) getDefinition(t *testing.T, st gtc.Store, key string) *gtc.TagDefinition {
	t.Helper()
	d, err := st.TagDefinitions().Get(ctxT(t), key)
	require.NoError(t, err, "get definition %q", key)
	return d
}

func (s *suite) upsertDefinition(t *testing.T, st gtc.Store, key, description string, by *string, at time.Time) (*gtc.TagDefinition, bool) {
	t.Helper()
	d, created, err := st.TagDefinitions().Upsert(ctxT(t), &gtc.TagDefinition{
		TagKey: key, Description: description, CreatedBy: by, CreatedAt: at, UpdatedAt: at,
	})
	require.NoError(t, err, "upsert definition %q", key)
	return d, created
}

// assertDefinition checks every field a caller of the glossary sees.
func assertDefinition(t *testing.T, want, got *gtc.TagDefinition, what string) {
	t.Helper()
	us := func(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }
	assert.Equal(t, want.TagKey, got.TagKey, "%s: tag_key", what)
	assert.Equal(t, want.Description, got.Description, "%s: description", what)
	assert.Equal(t, want.CreatedBy, got.CreatedBy, "%s: created_by", what)
	for name, c := range map[string]struct{ want, got time.Time }{
		"createdAt": {us(want.CreatedAt), got.CreatedAt},
		"updatedAt": {us(want.UpdatedAt), got.UpdatedAt},
	} {
		assert.True(t, c.want.Equal(c.got), "%s: %s: want %s, got %s", what, name, c.want, c.got)
		assert.Equal(t, time.UTC, c.got.Location(), "%s: %s must be UTC", what, name)
	}
}

// 35. Create, read, update (creator and creation time kept), delete, and create again.
func (s *suite) definitionLifecycle(t *testing.T) {
	st := s.open(t)
	loc := time.FixedZone("CET", 3600)
	t0 := time.Date(2025, 1, 2, 11, 0, 0, 123456789, loc)
	first, created := s.upsertDefinition(t, st, "custom:escalation", "Handed to a human – früh.", ptr("alice@example.com"), t0)
	assert.True(t, created, "the first upsert creates")
	require.NotEmpty(t, first.ETag)
	want := &gtc.TagDefinition{TagKey: "custom:escalation", Description: "Handed to a human – früh.",
		CreatedBy: ptr("alice@example.com"), CreatedAt: t0, UpdatedAt: t0}
	assertDefinition(t, want, first, "created")
	assert.Equal(t, 123456, first.UpdatedAt.Nanosecond()/1000, "microseconds kept, truncated")

	got := s.getDefinition(t, st, "custom:escalation")
	assertDefinition(t, want, got, "get after create")
	assert.Equal(t, first.ETag, got.ETag)

	t1 := t0.Add(36 * time.Hour)
	second, created := s.upsertDefinition(t, st, "custom:escalation", "", ptr("bob@example.com"), t1)
	assert.False(t, created, "an existing key is updated")
	assert.NotEqual(t, first.ETag, second.ETag, "every write issues a new ETag")
	want.Description, want.UpdatedAt = "", t1 // creator and creation time stay
	assertDefinition(t, want, second, "updated")
	got = s.getDefinition(t, st, "custom:escalation")
	assertDefinition(t, want, got, "get after update")
	assert.Equal(t, second.ETag, got.ETag)

	require.NoError(t, st.TagDefinitions().Delete(ctxT(t), "custom:escalation"))
	if !s.h.Gaps.MissingReadIsServerError {
		_, err := st.TagDefinitions().Get(ctxT(t), "custom:escalation")
		assert.ErrorIs(t, err, gtc.ErrNotFound, "get after delete")
	}
	list, err := st.TagDefinitions().List(ctxT(t))
	require.NoError(t, err)
	assert.Empty(t, list, "a deleted definition is not listed")
	assert.ErrorIs(t, st.TagDefinitions().Delete(ctxT(t), "custom:escalation"), gtc.ErrNotFound, "delete twice")

	t2 := t1.Add(time.Hour)
	again, created := s.upsertDefinition(t, st, "custom:escalation", "back", ptr("bob@example.com"), t2)
	assert.True(t, created, "a deleted key is created afresh")
	assertDefinition(t, &gtc.TagDefinition{TagKey: "custom:escalation", Description: "back",
		CreatedBy: ptr("bob@example.com"), CreatedAt: t2, UpdatedAt: t2}, again, "re-created")
}

// 35. List answers every definition in byte order of the key.
func (s *suite) definitionsSorted(t *testing.T) {
	st := s.open(t)
	empty, err := st.TagDefinitions().List(ctxT(t))
	require.NoError(t, err, "listing an empty store")
	assert.Empty(t, empty)

	// Keys are not normalized, so case and non-ASCII must sort by bytes.
	keys := []string{"topic:b", "Zeta", "custom:x", "älpha", "alpha", "topic:a", "question_length:long"}
	at := s.now()
	for i, k := range keys {
		var by *string
		if i%2 == 0 {
			by = ptr(fmt.Sprint("user-", i, "@example.com"))
		}
		s.upsertDefinition(t, st, k, "about "+k, by, at.Add(time.Duration(i)*time.Second))
	}
	got, err := st.TagDefinitions().List(ctxT(t))
	require.NoError(t, err)
	want := slices.Sorted(slices.Values(keys))
	gotKeys := make([]string, len(got))
	for i, d := range got {
		gotKeys[i] = d.TagKey
		assert.Equal(t, "about "+d.TagKey, d.Description, "%s: description", d.TagKey)
		assert.NotEmpty(t, d.ETag, "%s: etag", d.TagKey)
		i0 := slices.Index(keys, d.TagKey)
		assert.Equal(t, i0%2 != 0, d.CreatedBy == nil, "%s: created_by kept, null included", d.TagKey)
	}
	assert.Equal(t, want, gotKeys)
}

// 35. Delete and Get of a key that was never defined are ErrNotFound.
func (s *suite) definitionDeleteMissing(t *testing.T) {
	st := s.open(t)
	s.upsertDefinition(t, st, "custom:present", "stays", nil, s.now())
	assert.ErrorIs(t, st.TagDefinitions().Delete(ctxT(t), "custom:absent"), gtc.ErrNotFound)
	if !s.h.Gaps.MissingReadIsServerError {
		_, err := st.TagDefinitions().Get(ctxT(t), "custom:absent")
		assert.ErrorIs(t, err, gtc.ErrNotFound)
	}
	assert.Equal(t, "stays", s.getDefinition(t, st, "custom:present").Description, "other definitions are left alone")
}

// 35. Eight curators defining one tag at once: exactly one creates it and stays its
// creator; every other write is an update of that definition.
func (s *suite) definitionConcurrent(t *testing.T) {
	st := s.open(t)
	const n = 8
	at := s.now()
	type result struct {
		by      string
		created bool
		err     error
	}
	results := make([]result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			by := fmt.Sprintf("curator-%d@example.com", i)
			d, created, err := st.TagDefinitions().Upsert(ctxT(t), &gtc.TagDefinition{
				TagKey: "custom:race", Description: "by " + by, CreatedBy: ptr(by),
				CreatedAt: at.Add(time.Duration(i) * time.Millisecond), UpdatedAt: at.Add(time.Duration(i) * time.Millisecond),
			})
			if err == nil && d.Description != "by "+by {
				err = fmt.Errorf("the answer carries another writer's description %q", d.Description)
			}
			results[i] = result{by: by, created: created, err: err}
		}()
	}
	wg.Wait()
	var creators []int
	for i, r := range results {
		require.NoError(t, r.err, "curator %d", i)
		if r.created {
			creators = append(creators, i)
		}
	}
	require.Len(t, creators, 1, "exactly one upsert creates")
	got := s.getDefinition(t, st, "custom:race")
	require.NotNil(t, got.CreatedBy)
	assert.Equal(t, results[creators[0]].by, *got.CreatedBy, "the creator is the one that created")
	assert.True(t, at.Add(time.Duration(creators[0])*time.Millisecond).Equal(got.CreatedAt), "createdAt is the creator's")
	descriptions := make([]string, n)
	for i, r := range results {
		descriptions[i] = "by " + r.by
	}
	assert.Contains(t, descriptions, got.Description, "the description is one writer's, whole")
}

// An empty tag key is refused and nothing is stored.
func (s *suite) definitionEmptyKey(t *testing.T) {
	st := s.open(t)
	_, _, err := st.TagDefinitions().Upsert(ctxT(t), &gtc.TagDefinition{Description: "x", CreatedAt: s.now(), UpdatedAt: s.now()})
	assert.ErrorIs(t, err, gtc.ErrInvalidArgument)
	list, err := st.TagDefinitions().List(ctxT(t))
	require.NoError(t, err)
	assert.Empty(t, list)
}
