package storetest

import (
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
)

func (s *suite) agentPreviewTests() []namedTest {
	return []namedTest{
		{"RoundTripOfALargePlan", s.previewRoundTrip},
		{"SameArgumentsReplace", s.previewReplace},
		{"BoundsEvictTheOldest", s.previewBounds},
		{"SetStateIsConditional", s.previewSetState},
		{"ConcurrentConsumesOneWins", s.previewConcurrent},
		{"DeleteExpired", s.previewDeleteExpired},
		{"BadArguments", s.previewBadArguments},
	}
}

// previewFixture is an open preview of caller for hash, created at the harness clock plus
// offset and living 15 minutes, holding changes entries and plan.
func (s *suite) previewFixture(id, caller, hash string, offset time.Duration, changes int, plan []byte) gtc.AgentPreview {
	at := s.now().Add(offset).UTC().Truncate(time.Microsecond)
	return gtc.AgentPreview{ID: id, Caller: caller, Hash: hash, CreatedAt: at, ExpiresAt: at.Add(15 * time.Minute),
		State: gtc.AgentPreviewOpen, Changes: changes, Plan: plan}
}

// randomPlan is n bytes that do not compress.
func randomPlan(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// A preview is read back as it was put, whatever its caller's characters and however large
// its plan: one of 2.1 MB is more than a Cosmos DB document may hold.
func (s *suite) previewRoundTrip(t *testing.T) {
	s.skipMissingRead(t)
	st := s.open(t)
	ps := st.AgentPreviews()
	_, err := ps.Get(ctxT(t), "alice", "h1")
	require.ErrorIs(t, err, gtc.ErrNotFound)

	for i, c := range []struct {
		caller string
		plan   []byte
	}{
		{"alice", randomPlan(1, 2_100_000)},
		{"Zoë 用户 😀", []byte(`{"changes":[]}`)},
		{strings.Repeat("😀", gtc.MaxAgentPreviewCallerBytes/4), randomPlan(2, 1000)},
	} {
		p := s.previewFixture("pv_"+string(rune('A'+i)), c.caller, "h1", time.Duration(i)*time.Second, 10000, c.plan)
		put, err := ps.Put(ctxT(t), p, gtc.AgentPreviewBounds{PerUser: 16, Total: 256, TotalChanges: 200000})
		require.NoError(t, err, "caller %q", c.caller)
		assert.NotEmpty(t, put.ETag)
		p.ETag = put.ETag
		assert.Equal(t, p, put)
		got, err := ps.Get(ctxT(t), c.caller, "h1")
		require.NoError(t, err, "caller %q", c.caller)
		assert.True(t, len(got.Plan) == len(c.plan) && string(got.Plan) == string(c.plan), "the plan of %d bytes read back (%d)", len(c.plan), len(got.Plan))
		got.Plan = c.plan
		assert.Equal(t, p, got, "caller %q", c.caller)
	}
	_, err = ps.Get(ctxT(t), "alice", "h2")
	assert.ErrorIs(t, err, gtc.ErrNotFound, "another hash is another preview")
	_, err = ps.Get(ctxT(t), "Zoë", "h1")
	assert.ErrorIs(t, err, gtc.ErrNotFound, "another caller's preview is not theirs")
}

// A caller's second preview of the same arguments replaces the first: the first's version
// can no longer be consumed.
func (s *suite) previewReplace(t *testing.T) {
	s.skipMissingRead(t)
	st := s.open(t)
	ps := st.AgentPreviews()
	b := gtc.AgentPreviewBounds{PerUser: 16, Total: 256, TotalChanges: 200000}
	first, err := ps.Put(ctxT(t), s.previewFixture("pv_1", "alice", "h", 0, 3, []byte("first")), b)
	require.NoError(t, err)
	second, err := ps.Put(ctxT(t), s.previewFixture("pv_2", "alice", "h", time.Second, 2, []byte("second")), b)
	require.NoError(t, err)
	got, err := ps.Get(ctxT(t), "alice", "h")
	require.NoError(t, err)
	assert.Equal(t, second, got)
	_, err = ps.SetState(ctxT(t), first, gtc.AgentPreviewConsumed, "op_1")
	assert.ErrorIs(t, err, gtc.ErrPreconditionFailed, "the replaced preview is not the one stored")
	got, err = ps.Get(ctxT(t), "alice", "h")
	require.NoError(t, err)
	assert.Equal(t, gtc.AgentPreviewOpen, got.State)
}

// Past a bound the oldest previews go: the caller's own beyond the per-user bound (others'
// stay), then anyone's beyond the total count or the total change entries; never the one
// just put, however many changes it holds.
func (s *suite) previewBounds(t *testing.T) {
	s.skipMissingRead(t)
	st := s.open(t)
	ps := st.AgentPreviews()
	at := time.Duration(0)
	put := func(id, caller string, changes int, b gtc.AgentPreviewBounds) {
		t.Helper()
		at += time.Second
		_, err := ps.Put(ctxT(t), s.previewFixture(id, caller, id, at, changes, []byte(id)), b)
		require.NoError(t, err, id)
	}
	kept := func(caller, id string) bool {
		t.Helper()
		_, err := ps.Get(ctxT(t), caller, id)
		if err != nil {
			require.ErrorIs(t, err, gtc.ErrNotFound, id)
		}
		return err == nil
	}

	perUser := gtc.AgentPreviewBounds{PerUser: 2, Total: 100, TotalChanges: 1000}
	put("a1", "alice", 1, perUser)
	put("b1", "bob", 1, perUser)
	put("a2", "alice", 1, perUser)
	put("a3", "alice", 1, perUser)
	assert.False(t, kept("alice", "a1"), "alice's oldest goes past her bound")
	assert.True(t, kept("alice", "a2"))
	assert.True(t, kept("alice", "a3"))
	assert.True(t, kept("bob", "b1"), "another caller's preview stays")

	total := gtc.AgentPreviewBounds{PerUser: 10, Total: 3, TotalChanges: 1000}
	put("c1", "carol", 1, total) // 4 previews: b1 is the oldest
	assert.False(t, kept("bob", "b1"), "the oldest of anyone goes past the total")
	assert.True(t, kept("alice", "a2"))
	assert.True(t, kept("carol", "c1"))

	changes := gtc.AgentPreviewBounds{PerUser: 10, Total: 100, TotalChanges: 100}
	put("d1", "dave", 60, changes) // 1+1+1+60 entries
	assert.True(t, kept("alice", "a2"))
	put("d2", "dave", 60, changes) // over 100 entries: the oldest go until it fits
	assert.False(t, kept("alice", "a2"))
	assert.False(t, kept("alice", "a3"))
	assert.False(t, kept("carol", "c1"))
	assert.False(t, kept("dave", "d1"))
	assert.True(t, kept("dave", "d2"))
	put("e1", "erin", 500, changes)
	assert.True(t, kept("erin", "e1"), "the preview just put stays, over the bound alone")
	assert.False(t, kept("dave", "d2"))
}

// SetState is conditional on the version read: a stale version is refused, the plan is
// kept through state changes, and a preview gone is ErrNotFound.
func (s *suite) previewSetState(t *testing.T) {
	s.skipMissingRead(t)
	st := s.open(t)
	ps := st.AgentPreviews()
	plan := randomPlan(4, 400_000) // more than one Cosmos DB chunk
	_, err := ps.Put(ctxT(t), s.previewFixture("pv_1", "alice", "h", 0, 5, plan), gtc.AgentPreviewBounds{})
	require.NoError(t, err)
	read, err := ps.Get(ctxT(t), "alice", "h")
	require.NoError(t, err)

	consumed, err := ps.SetState(ctxT(t), read, gtc.AgentPreviewConsumed, "op_1")
	require.NoError(t, err)
	assert.Equal(t, gtc.AgentPreviewConsumed, consumed.State)
	assert.Equal(t, "op_1", consumed.OperationID)
	assert.NotEqual(t, read.ETag, consumed.ETag)
	got, err := ps.Get(ctxT(t), "alice", "h")
	require.NoError(t, err)
	assert.Equal(t, consumed, got, "the state is stored, the plan kept")

	_, err = ps.SetState(ctxT(t), read, gtc.AgentPreviewConsumed, "op_2")
	assert.ErrorIs(t, err, gtc.ErrPreconditionFailed, "a second consume from the version read before the first")

	reopened, err := ps.SetState(ctxT(t), consumed, gtc.AgentPreviewOpen, "")
	require.NoError(t, err)
	got, err = ps.Get(ctxT(t), "alice", "h")
	require.NoError(t, err)
	assert.Equal(t, reopened, got)
	assert.Equal(t, gtc.AgentPreviewOpen, got.State)
	assert.Empty(t, got.OperationID)
	assert.Equal(t, plan, got.Plan)

	n, err := ps.DeleteExpired(ctxT(t), got.ExpiresAt.Add(time.Second))
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	_, err = ps.SetState(ctxT(t), reopened, gtc.AgentPreviewConsumed, "op_3")
	assert.ErrorIs(t, err, gtc.ErrNotFound, "a preview gone")
}

// Servers racing to consume one preview from the same version: exactly one succeeds.
func (s *suite) previewConcurrent(t *testing.T) {
	s.skipMissingRead(t)
	st := s.open(t)
	ps := st.AgentPreviews()
	p, err := ps.Put(ctxT(t), s.previewFixture("pv_1", "alice", "h", 0, 1, []byte("plan")), gtc.AgentPreviewBounds{})
	require.NoError(t, err)
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			_, errs[i] = ps.SetState(ctxT(t), p, gtc.AgentPreviewConsumed, "op_"+string(rune('a'+i)))
		})
	}
	wg.Wait()
	won := -1
	for i, err := range errs {
		if err == nil {
			assert.Equal(t, -1, won, "two consumed it: %v", errs)
			won = i
			continue
		}
		assert.ErrorIs(t, err, gtc.ErrPreconditionFailed, "op_%c", 'a'+i)
	}
	require.NotEqual(t, -1, won, "%v", errs)
	got, err := ps.Get(ctxT(t), "alice", "h")
	require.NoError(t, err)
	assert.Equal(t, "op_"+string(rune('a'+won)), got.OperationID)
}

// DeleteExpired removes the previews that expired before the time given, and only those.
func (s *suite) previewDeleteExpired(t *testing.T) {
	s.skipMissingRead(t)
	st := s.open(t)
	ps := st.AgentPreviews()
	soon := s.previewFixture("pv_1", "alice", "h1", 0, 1, []byte("soon"))
	soon.ExpiresAt = soon.CreatedAt.Add(time.Minute)
	late := s.previewFixture("pv_2", "bob", "h2", 0, 1, []byte("late"))
	late.ExpiresAt = late.CreatedAt.Add(10 * time.Minute)
	for _, p := range []gtc.AgentPreview{soon, late} {
		_, err := ps.Put(ctxT(t), p, gtc.AgentPreviewBounds{})
		require.NoError(t, err)
	}
	n, err := ps.DeleteExpired(ctxT(t), soon.ExpiresAt)
	require.NoError(t, err)
	assert.Zero(t, n, "expired at, not before")
	n, err = ps.DeleteExpired(ctxT(t), soon.CreatedAt.Add(5*time.Minute))
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	_, err = ps.Get(ctxT(t), "alice", "h1")
	assert.ErrorIs(t, err, gtc.ErrNotFound)
	got, err := ps.Get(ctxT(t), "bob", "h2")
	require.NoError(t, err)
	assert.Equal(t, late.Plan, got.Plan)
	n, err = ps.DeleteExpired(ctxT(t), soon.CreatedAt.Add(5*time.Minute))
	require.NoError(t, err)
	assert.Zero(t, n)
}

func (s *suite) previewBadArguments(t *testing.T) {
	st := s.open(t)
	ps := st.AgentPreviews()
	good := s.previewFixture("pv_1", "alice", "h", 0, 1, nil)
	for name, bad := range map[string]func(p *gtc.AgentPreview){
		"id with a slash": func(p *gtc.AgentPreview) { p.ID = "pv/1" },
		"long caller":     func(p *gtc.AgentPreview) { p.Caller = strings.Repeat("a", gtc.MaxAgentPreviewCallerBytes+1) },
		"no hash":         func(p *gtc.AgentPreview) { p.Hash = "" },
		"unknown state":   func(p *gtc.AgentPreview) { p.State = "done" },
		"no creation":     func(p *gtc.AgentPreview) { p.CreatedAt = time.Time{} },
	} {
		p := good
		bad(&p)
		_, err := ps.Put(ctxT(t), p, gtc.AgentPreviewBounds{})
		assert.ErrorIs(t, err, gtc.ErrInvalidArgument, name)
	}
	_, err := ps.SetState(ctxT(t), good, gtc.AgentPreviewConsumed, "")
	assert.ErrorIs(t, err, gtc.ErrInvalidArgument, "a consumed preview names its operation")
}
