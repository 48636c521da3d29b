package ledger

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var k1 = Key{Dataset: "ds", Bucket: "b0", ID: "item-1"}

// store is what the server holds in a fabricated history: the current state per item.
type store map[Key]Current

func (s store) fetch(_ context.Context, k Key) (Current, error) { return s[k], nil }

func doc(comment string, tags ...string) map[string]any {
	t := make([]any, len(tags))
	for i, v := range tags {
		t[i] = v
	}
	return map[string]any{"comment": comment, "manualTags": t, "status": "draft"}
}

func at(etag string, d map[string]any) store {
	return store{k1: {Found: true, ETag: etag, Doc: d}}
}

func TestHistoriesThatKeepEveryWrite(t *testing.T) {
	for _, tc := range []struct {
		name    string
		record  func(l *Ledger)
		server  store
		acked   int
		unknown int
		kept    int
	}{
		{
			name: "a clean chain of conditional writes",
			record: func(l *Ledger) {
				l.Base(k1, "e0")
				l.Ack(k1, "e0", "e1", Fields{"comment": "c1"})
				l.Ack(k1, "e1", "e2", Fields{"comment": "c2", "manualTags": []string{"intent:action", "source:sme"}})
			},
			server: at("e2", doc("c2", "intent:action", "source:sme")),
			acked:  2,
		},
		{
			name: "no write at all: the item still holds its base",
			record: func(l *Ledger) {
				l.Base(k1, "e0")
			},
			server: at("e0", doc("")),
		},
		{
			name: "a self-serve claim gives a second base the writes continue from",
			record: func(l *Ledger) {
				l.Base(k1, "e0") // after import
				l.Base(k1, "e1") // after the claim, a write of the server's own
				l.Ack(k1, "e1", "e2", Fields{"comment": "c2", "status": "approved"})
			},
			server: at("e2", map[string]any{"comment": "c2", "status": "approved"}),
			acked:  1,
		},
		{
			name: "an unknown write that landed on the last acknowledged state",
			record: func(l *Ledger) {
				l.Base(k1, "e0")
				l.Ack(k1, "e0", "e1", Fields{"comment": "c1"})
				l.Unknown(k1, "e1", Fields{"comment": "c2"})
			},
			server:  at("e9", doc("c2")),
			acked:   1,
			unknown: 1,
			kept:    1,
		},
		{
			name: "an unknown write that did not land",
			record: func(l *Ledger) {
				l.Base(k1, "e0")
				l.Ack(k1, "e0", "e1", Fields{"comment": "c1"})
				l.Unknown(k1, "e1", Fields{"comment": "c2"})
			},
			server:  at("e1", doc("c1")),
			acked:   1,
			unknown: 1,
		},
		{
			name: "an unknown write landed and the client went on from the state it re-read",
			record: func(l *Ledger) {
				l.Base(k1, "e0")
				l.Unknown(k1, "e0", Fields{"comment": "c1"})
				l.Ack(k1, "x1", "e2", Fields{"comment": "c2"}) // x1: what the GET after the timeout showed
			},
			server:  at("e2", doc("c2")),
			acked:   1,
			unknown: 1,
			kept:    1,
		},
		{
			name: "two writes of unknown outcome in a row, both landed, the client re-read between them",
			record: func(l *Ledger) {
				l.Base(k1, "e0")
				l.Ack(k1, "e0", "e1", Fields{"comment": "c1"})
				l.Unknown(k1, "e1", Fields{"comment": "c2"})
				l.Unknown(k1, "x1", Fields{"comment": "c3"}) // x1: the first one's result, read back
			},
			server:  at("x2", doc("c3")),
			acked:   1,
			unknown: 2,
			kept:    2,
		},
		{
			name: "an early write of unknown outcome that did not land, a later one that did",
			record: func(l *Ledger) {
				l.Base(k1, "e0")
				l.Unknown(k1, "e0", Fields{"comment": "c1"}) // did not land; the re-read showed e0
				l.Ack(k1, "e0", "e1", Fields{"comment": "c2"})
				l.Ack(k1, "e1", "e2", Fields{"comment": "c3"})
				l.Unknown(k1, "e2", Fields{"comment": "c4"}) // landed as x1
				l.Ack(k1, "x1", "e4", Fields{"comment": "c5"})
			},
			// Taking the first write for the one that made x1 would skip e0 → e1 → e2.
			server:  at("e4", doc("c5")),
			acked:   3,
			unknown: 2,
			kept:    1,
		},
		{
			name: "of two writes of unknown outcome on one state, the second landed",
			record: func(l *Ledger) {
				l.Base(k1, "e0")
				l.Ack(k1, "e0", "e1", Fields{"comment": "c1"})
				l.Unknown(k1, "e1", Fields{"comment": "c2"})
				l.Unknown(k1, "e1", Fields{"comment": "c3"}) // the re-read still showed e1
			},
			server:  at("x1", doc("c3")),
			acked:   1,
			unknown: 2,
			kept:    1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := New()
			tc.record(l)
			r, err := l.Check(context.Background(), tc.server.fetch)
			require.NoError(t, err)
			assert.Empty(t, r.Problems)
			assert.True(t, r.OK())
			assert.Equal(t, 1, r.Items)
			assert.Equal(t, tc.acked, r.Acked)
			assert.Equal(t, tc.unknown, r.Unknown)
			assert.Equal(t, tc.kept, r.UnknownKept)
			assert.Zero(t, r.ProblemItems)
		})
	}
}

func TestHistoriesThatLostSomething(t *testing.T) {
	for _, tc := range []struct {
		name   string
		record func(l *Ledger)
		server store
		want   []string // every problem, in order
	}{
		{
			name: "an acknowledged write overwritten by a write that was not conditional",
			record: func(l *Ledger) {
				l.Base(k1, "e0")
				l.Ack(k1, "e0", "e1", Fields{"comment": "mine"})
			},
			// A blind write from a stale read put the old content back under a new tag.
			server: at("e5", doc("")),
			want: []string{
				"current ETag e5 was produced by no write this client recorded or tried",
				`acknowledged write e0 → e1 ({"comment":"mine"}) was lost: the current state does not descend from it`,
			},
		},
		{
			name: "two acknowledged writes on one ETag",
			record: func(l *Ledger) {
				l.Base(k1, "e0")
				l.Ack(k1, "e0", "e1", Fields{"comment": "alice"})
				l.Ack(k1, "e0", "e2", Fields{"comment": "bob"})
			},
			server: at("e2", doc("bob")),
			want: []string{
				`two acknowledged writes on ETag e0: e1 ({"comment":"alice"}) and e2 ({"comment":"bob"}): a conditional write was not conditional`,
				`acknowledged write e0 → e1 ({"comment":"alice"}) was lost: the current state does not descend from it`,
			},
		},
		{
			name: "the current ETag explained by nothing",
			record: func(l *Ledger) {
				l.Base(k1, "e0")
			},
			server: at("e7", doc("")),
			want:   []string{"current ETag e7 was produced by no write this client recorded or tried"},
		},
		{
			name: "the current fields differ from the last acknowledged write",
			record: func(l *Ledger) {
				l.Base(k1, "e0")
				l.Ack(k1, "e0", "e1", Fields{"comment": "c1", "manualTags": []string{"intent:action", "source:sme"}})
			},
			server: at("e1", doc("c1", "source:sme")),
			want:   []string{`current document differs from the last acknowledged write (e0 → e1): manualTags is ["source:sme"], want ["intent:action","source:sme"]`},
		},
		{
			name: "an unknown write half applied",
			record: func(l *Ledger) {
				l.Base(k1, "e0")
				l.Unknown(k1, "e0", Fields{"comment": "c1", "manualTags": []string{"topic:install"}})
			},
			server: at("e3", doc("c1")),
			want:   []string{"current ETag e3 was produced by no write this client recorded or tried"},
		},
		{
			name: "a write on a state the client never recorded",
			record: func(l *Ledger) {
				l.Base(k1, "e0")
				l.Ack(k1, "e5", "e6", Fields{"comment": "c"})
			},
			server: at("e6", doc("c")),
			want:   []string{"chain broken at ETag e5: no recorded write produced it"},
		},
		{
			name: "an ETag the server gave out twice",
			record: func(l *Ledger) {
				l.Base(k1, "e0")
				l.Ack(k1, "e0", "e1", Fields{"comment": "c1"})
				l.Ack(k1, "e1", "e0", Fields{"comment": "c2"})
			},
			server: at("e0", doc("c2")),
			want:   []string{"ETag e0 comes back in its own history: the server reused an ETag"},
		},
		{
			name: "the item deleted after acknowledged writes",
			record: func(l *Ledger) {
				l.Base(k1, "e0")
				l.Ack(k1, "e0", "e1", Fields{"comment": "c1"})
			},
			server: store{},
			want:   []string{"item is gone; 1 acknowledged writes lost"},
		},
		{
			name: "an imported item that vanished without any write",
			record: func(l *Ledger) {
				l.Base(k1, "e0")
			},
			server: store{},
			want:   []string{"item is gone; no recorded write removed it"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := New()
			tc.record(l)
			r, err := l.Check(context.Background(), tc.server.fetch)
			require.NoError(t, err)
			assert.False(t, r.OK())
			assert.Equal(t, 1, r.ProblemItems)
			var got []string
			for _, p := range r.Problems {
				assert.Equal(t, k1, p.Key)
				got = append(got, p.Detail)
			}
			assert.Equal(t, tc.want, got)
			if len(r.Problems) > 0 {
				assert.Equal(t, "ds/b0/item-1: "+tc.want[0], r.Problems[0].String())
			}
		})
	}
}

func TestCheckSumsOverItemsAndReportsReadErrors(t *testing.T) {
	l := New()
	s := store{}
	for i := range 3 {
		k := Key{Dataset: "ds", Bucket: "b", ID: fmt.Sprintf("item-%d", i)}
		l.Base(k, "e0")
		l.Ack(k, "e0", "e1", Fields{"comment": "c"})
		s[k] = Current{Found: true, ETag: "e1", Doc: doc("c")}
	}
	lost := Key{Dataset: "ds", Bucket: "b", ID: "item-1"}
	s[lost] = Current{Found: true, ETag: "e0", Doc: doc("")} // the write was rolled back
	r, err := l.Check(context.Background(), s.fetch)
	require.NoError(t, err)
	assert.Equal(t, 3, r.Items)
	assert.Equal(t, 3, r.Acked)
	assert.Equal(t, 1, r.ProblemItems)
	require.Len(t, r.Problems, 1)
	assert.Equal(t, lost, r.Problems[0].Key)
	assert.Contains(t, r.Problems[0].Detail, "e0 → e1")

	boom := errors.New("connection refused")
	_, err = l.Check(context.Background(), func(context.Context, Key) (Current, error) { return Current{}, boom })
	require.ErrorIs(t, err, boom)
	assert.Contains(t, err.Error(), "read ds/b/item-0")
}

func TestConcurrentRecording(t *testing.T) {
	l := New()
	s := store{}
	var wg sync.WaitGroup
	for w := range 8 {
		k := Key{Dataset: "ds", Bucket: "b", ID: fmt.Sprintf("item-%d", w)}
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.Base(k, "e0")
			prev := "e0"
			for i := 1; i <= 50; i++ {
				next := fmt.Sprintf("e%d", i)
				l.Ack(k, prev, next, Fields{"comment": next})
				prev = next
			}
			l.Unknown(k, prev, Fields{"comment": "never landed"})
		}()
		s[k] = Current{Found: true, ETag: "e50", Doc: doc("e50")}
	}
	wg.Wait()
	r, err := l.Check(context.Background(), s.fetch)
	require.NoError(t, err)
	assert.Empty(t, r.Problems)
	assert.Equal(t, 8*50, r.Acked)
	assert.Equal(t, 8, r.Unknown)
	assert.Zero(t, r.UnknownKept)
}
