package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	gtc "github.com/gtc-dev/gtc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// eligibleFixture creates every combination of status (four) and assignee (none, the user,
// another user), in two datasets, and returns the items.
func (s *suite) eligibleFixture(t *testing.T, st gtc.Store) []*gtc.Item {
	var items []*gtc.Item
	n := 0
	for _, ds := range []string{"team-a", "other"} {
		for _, status := range gtc.Statuses {
			for _, user := range []string{"", "me@example.com", "you@example.com"} {
				n++
				it := s.item(ds, fmt.Sprintf("e-%02d", n))
				it.Status = status
				if user != "" {
					it.AssignedTo, it.AssignedAt = ptr(user), ptr(s.now())
				}
				items = append(items, it)
			}
		}
	}
	createAll(t, st, items)
	return items
}

// eligibleModel is the pool rule: draft and unassigned, or skipped and not held by user.
func eligibleModel(items []*gtc.Item, e gtc.EligibleSpec) []gtc.Key {
	var out []gtc.Key
	for _, it := range items {
		assigned := ""
		if it.AssignedTo != nil {
			assigned = *it.AssignedTo
		}
		in := (it.Status == gtc.StatusDraft && assigned == "") || (it.Status == gtc.StatusSkipped && assigned != e.User)
		if in && (e.DatasetPrefix == "" || len(it.DatasetName) >= len(e.DatasetPrefix) && it.DatasetName[:len(e.DatasetPrefix)] == e.DatasetPrefix) {
			out = append(out, it.Key())
		}
	}
	return sortKeys(out)
}

func sortKeys(ks []gtc.Key) []gtc.Key {
	slices.SortFunc(ks, func(a, b gtc.Key) int {
		if c := cmpString(a.DatasetName, b.DatasetName); c != 0 {
			return c
		}
		return cmpString(a.ID, b.ID)
	})
	return ks
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// 28. Eligible follows the pool rule on every combination of status and assignee, and the
// prefix restriction works.
func (s *suite) eligible(t *testing.T) {
	st := s.open(t)
	items := s.eligibleFixture(t, st)
	for _, e := range []gtc.EligibleSpec{
		{User: "me@example.com"},
		{User: "you@example.com"},
		{User: "nobody@example.com"},
		{User: "me@example.com", DatasetPrefix: "team-"},
		{User: "me@example.com", DatasetPrefix: "zzz"},
	} {
		var got []gtc.Key
		for k, err := range st.Items().Eligible(ctxT(t), e) {
			require.NoError(t, err)
			got = append(got, k)
		}
		want := eligibleModel(items, e)
		assert.Equal(t, want, sortKeys(got), "pool for %+v", e)
	}
	// Draft and unassigned: in; skipped held by me: not in for me, in for others.
	assert.Len(t, eligibleModel(items, gtc.EligibleSpec{User: "me@example.com"}), 2*(1+2))

	sampler, ok := st.Items().(gtc.EligibleSampler)
	if !ok {
		return
	}
	want := eligibleModel(items, gtc.EligibleSpec{User: "me@example.com"})
	got, err := sampler.SampleEligible(ctxT(t), gtc.EligibleSpec{User: "me@example.com"}, 100, nil)
	require.NoError(t, err)
	assert.Equal(t, want, sortKeys(got), "a sample larger than the pool is the whole pool")
	exclude := map[gtc.Key]bool{want[0]: true}
	got, err = sampler.SampleEligible(ctxT(t), gtc.EligibleSpec{User: "me@example.com"}, 100, exclude)
	require.NoError(t, err)
	assert.Equal(t, want[1:], sortKeys(got), "excluded keys are never drawn")
	got, err = sampler.SampleEligible(ctxT(t), gtc.EligibleSpec{User: "me@example.com", DatasetPrefix: "team-"}, 2, nil)
	require.NoError(t, err)
	assert.Len(t, got, 2)
	for _, k := range got {
		assert.Equal(t, "team-a", k.DatasetName)
		assert.Contains(t, want, k)
	}
	// Every member of the pool can be drawn: over many one-item samples each turns up.
	seen := map[gtc.Key]int{}
	for range 300 {
		one, err := sampler.SampleEligible(ctxT(t), gtc.EligibleSpec{User: "me@example.com"}, 1, nil)
		require.NoError(t, err)
		require.Len(t, one, 1)
		seen[one[0]]++
	}
	assert.Len(t, seen, len(want), "a uniform draw reaches every eligible item: %v", seen)
}

// 29. Ten goroutines claim one item through Update with the claim rule: exactly one owns it.
func (s *suite) claimRace(t *testing.T) {
	st := s.open(t)
	it := s.item("team-a", "contended")
	createAll(t, st, []*gtc.Item{it})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var winners []string
	var lost int
	for i := range 10 {
		user := fmt.Sprintf("curator-%d@example.com", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := gtc.Update(ctxT(t), st.Items(), it.Key(), func(cur *gtc.Item) (*gtc.Item, error) {
				if cur.Status != gtc.StatusDraft || (cur.AssignedTo != nil && *cur.AssignedTo != user) {
					return nil, errTaken
				}
				cur.AssignedTo, cur.AssignedAt = ptr(user), ptr(s.now())
				return cur, nil
			})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				winners = append(winners, user)
			case errors.Is(err, errTaken), errors.Is(err, gtc.ErrConcurrentModification):
				lost++
			default:
				t.Errorf("claim: %v", err)
			}
		}()
	}
	wg.Wait()
	require.Len(t, winners, 1, "exactly one claim succeeds")
	assert.Equal(t, 9, lost)
	got, err := st.Items().Get(ctxT(t), it.Key())
	require.NoError(t, err)
	assert.Equal(t, winners[0], *got.AssignedTo)
}

var errTaken = errors.New("taken")
