package storetest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
)

func (s *suite) leaseTests() []namedTest {
	return []namedTest{
		{"OneHolderAtATime", s.leaseOneHolder},
		{"ExpiredLeaseGoesToTheNext", s.leaseExpiry},
		{"ConcurrentAcquiresOneWins", s.leaseConcurrent},
		{"BadArguments", s.leaseBadArguments},
	}
}

// A lease held by one holder refuses another, naming the holder; its holder acquiring it
// again renews it; once released it is free.
func (s *suite) leaseOneHolder(t *testing.T) {
	s.skipMissingRead(t)
	st, clock := s.openHistory(t, gtc.HistoryOptions{})
	ls := st.Leases()
	_, err := ls.Get(ctxT(t), "tag:topic:a")
	require.ErrorIs(t, err, gtc.ErrNotFound)

	a, err := ls.Acquire(ctxT(t), "tag:topic:a", "replica-a/op_1", 30*time.Second)
	require.NoError(t, err)
	assert.Equal(t, "replica-a/op_1", a.Holder)
	assert.WithinDuration(t, clock.Now().Add(30*time.Second), a.Expires, time.Millisecond)
	assert.NotEmpty(t, a.ETag)

	_, err = ls.Acquire(ctxT(t), "tag:topic:a", "replica-b/op_2", 30*time.Second)
	held, ok := errors.AsType[*gtc.LeaseHeldError](err)
	require.True(t, ok, "%v", err)
	assert.ErrorIs(t, err, gtc.ErrConflict)
	assert.Equal(t, "replica-a/op_1", held.Lease.Holder)
	got, err := ls.Get(ctxT(t), "tag:topic:a")
	require.NoError(t, err)
	assert.Equal(t, a, got, "the refused acquire changed nothing")

	clock.Advance(10 * time.Second)
	again, err := ls.Acquire(ctxT(t), "tag:topic:a", "replica-a/op_1", 30*time.Second)
	require.NoError(t, err, "the holder acquiring again renews")
	assert.True(t, again.Expires.After(a.Expires))
	renewed, err := ls.Renew(ctxT(t), again, time.Minute)
	require.NoError(t, err)
	assert.WithinDuration(t, clock.Now().Add(time.Minute), renewed.Expires, time.Millisecond)
	_, err = ls.Renew(ctxT(t), a, time.Minute)
	assert.ErrorIs(t, err, gtc.ErrPreconditionFailed, "a renewal from a superseded version")

	other, err := ls.Acquire(ctxT(t), "tag:topic:b", "replica-b/op_2", 30*time.Second)
	require.NoError(t, err, "another name is another lease")
	require.NoError(t, ls.Release(ctxT(t), renewed))
	_, err = ls.Get(ctxT(t), "tag:topic:a")
	assert.ErrorIs(t, err, gtc.ErrNotFound, "released")
	require.NoError(t, ls.Release(ctxT(t), renewed), "releasing twice is no error")
	_, err = ls.Acquire(ctxT(t), "tag:topic:a", "replica-b/op_2", 30*time.Second)
	assert.NoError(t, err, "a released lease is free")
	got, err = ls.Get(ctxT(t), "tag:topic:b")
	require.NoError(t, err)
	assert.Equal(t, other, got)
}

// A holder that stops renewing loses the lease when it expires: the next holder takes it,
// the old holder's renewal fails, and its release leaves the new holder's lease alone.
func (s *suite) leaseExpiry(t *testing.T) {
	s.skipMissingRead(t)
	st, clock := s.openHistory(t, gtc.HistoryOptions{})
	ls := st.Leases()
	a, err := ls.Acquire(ctxT(t), "agent-op:op_1", "replica-a", 15*time.Second)
	require.NoError(t, err)
	clock.Advance(14 * time.Second)
	_, err = ls.Acquire(ctxT(t), "agent-op:op_1", "replica-b", 15*time.Second)
	require.ErrorIs(t, err, gtc.ErrConflict, "still live")

	clock.Advance(2 * time.Second)
	got, err := ls.Get(ctxT(t), "agent-op:op_1")
	require.NoError(t, err)
	assert.False(t, got.LiveAt(clock.Now()), "expired, still readable")
	b, err := ls.Acquire(ctxT(t), "agent-op:op_1", "replica-b", 15*time.Second)
	require.NoError(t, err, "an expired lease goes to the next holder")
	assert.Equal(t, "replica-b", b.Holder)

	_, err = ls.Renew(ctxT(t), a, 15*time.Second)
	assert.ErrorIs(t, err, gtc.ErrPreconditionFailed, "the old holder lost it")
	require.NoError(t, ls.Release(ctxT(t), a))
	got, err = ls.Get(ctxT(t), "agent-op:op_1")
	require.NoError(t, err)
	assert.Equal(t, b, got, "the old holder's release leaves the new lease alone")
}

// Holders racing for one free lease: exactly one gets it.
func (s *suite) leaseConcurrent(t *testing.T) {
	s.skipMissingRead(t)
	st, _ := s.openHistory(t, gtc.HistoryOptions{})
	ls := st.Leases()
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			_, errs[i] = ls.Acquire(ctxT(t), "tag:race", fmt.Sprintf("holder-%d", i), time.Minute)
		})
	}
	wg.Wait()
	won := 0
	for i, err := range errs {
		if err == nil {
			won++
			got, gerr := ls.Get(ctxT(t), "tag:race")
			require.NoError(t, gerr)
			assert.Equal(t, fmt.Sprintf("holder-%d", i), got.Holder)
			continue
		}
		assert.ErrorIs(t, err, gtc.ErrConflict, "holder-%d", i)
	}
	assert.Equal(t, 1, won, "%v", errs)
}

func (s *suite) leaseBadArguments(t *testing.T) {
	s.skipMissingRead(t)
	st := s.open(t)
	ls := st.Leases()
	// The longest name is a lease like any other.
	longest := "agent-user:" + strings.Repeat("😀", (gtc.MaxLeaseNameBytes-len("agent-user:"))/4)
	l, err := ls.Acquire(ctxT(t), longest, "op_1", time.Minute)
	require.NoError(t, err)
	got, err := ls.Get(ctxT(t), longest)
	require.NoError(t, err)
	assert.Equal(t, l, got)
	require.NoError(t, ls.Release(ctxT(t), l))
	for _, c := range []struct {
		name, holder string
		ttl          time.Duration
	}{{"", "h", time.Second}, {"n", "", time.Second}, {"n", "h", 0}, {string(make([]byte, gtc.MaxLeaseNameBytes+1)), "h", time.Second}} {
		_, err := ls.Acquire(ctxT(t), c.name, c.holder, c.ttl)
		assert.ErrorIs(t, err, gtc.ErrInvalidArgument, "%q %q %s", c.name, c.holder, c.ttl)
	}
}
