package codec

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
)

// variedEdits returns a chain of items, each the one before with a few random changes: sparse
// members that come and go, scalars that change, lists that grow and shrink, raw objects.
func variedEdits(n int) []*gtc.Item {
	rng := rand.New(rand.NewPCG(7, 11))
	it := gtc.NewItem("ds", "q1")
	it.Bucket = "11428b3b-6aaf-538d-b00a-ee67737d6bed"
	it.UpdatedAt = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	out := []*gtc.Item{it}
	word := func() string { return []string{"a", "b é", "c\"q\"", "d/e~f", "", "line\nbreak"}[rng.IntN(6)] }
	for range n {
		next := out[len(out)-1].Clone()
		for range 1 + rng.IntN(3) {
			switch rng.IntN(10) {
			case 0:
				next.Comment = word()
			case 1:
				if rng.IntN(2) == 0 {
					u := word()
					at := next.UpdatedAt.Add(time.Minute)
					next.AssignedTo, next.AssignedAt = &u, &at
				} else {
					next.AssignedTo, next.AssignedAt = nil, nil
				}
			case 2:
				next.History = append(next.History, gtc.HistoryEntry{Role: "user", Msg: "turn " + word()})
			case 3:
				if len(next.History) > 0 {
					next.History = next.History[:rng.IntN(len(next.History))]
				}
			case 4:
				next.Metadata = json.RawMessage(`{"seq":` + string(rune('0'+rng.IntN(10))) + `,"a/b":[1,{"c":"~"}]}`)
			case 5:
				next.ManualTags = append(next.ManualTags, "x:"+word())
			case 6:
				next.Status = []gtc.Status{gtc.StatusDraft, gtc.StatusApproved, gtc.StatusSkipped}[rng.IntN(3)]
			case 7:
				if rng.IntN(2) == 0 {
					next.TraceIDs = map[string]string{"run": word()}
				} else {
					next.TraceIDs = nil
				}
			case 8:
				next.UpdatedAt = next.UpdatedAt.Add(time.Duration(rng.IntN(1e6)) * time.Microsecond)
			case 9:
				if len(next.History) > 0 {
					next.History[0].Msg = "first " + word()
				}
			}
		}
		out = append(out, next)
	}
	return out
}

// The diff of two items' members is the diff of their whole documents: parsing only the
// members that changed, and comparing scalars as written, names the same operations.
func TestDiffMembersMatchesWholeDocumentDiff(t *testing.T) {
	items := variedEdits(300)
	kinds := map[string]int{}
	for i := 1; i < len(items); i++ {
		for _, pair := range [][2]*gtc.Item{{items[i-1], items[i]}, {items[i], items[i-1]}, {items[0], items[i]}} {
			docA, msA := storedMembers(pair[0])
			docB, msB := storedMembers(pair[1])
			got, err := diffMembers(msA, msB)
			require.NoError(t, err)
			a, err := withoutRevision(docA)
			require.NoError(t, err)
			b, err := withoutRevision(docB)
			require.NoError(t, err)
			want := diffNodes(nil, "", a, b)
			require.Equal(t, want, got, "from %s\nto %s", docA, docB)
			for _, op := range got {
				kinds[op.Op]++
			}
		}
	}
	for _, op := range []string{"add", "remove", "replace"} {
		require.Positive(t, kinds[op], "the edits make %q operations", op)
	}
}

// A revision is stored as json.Marshal writes it with minimal escaping, so that revisions
// written before and after read the same.
func TestAppendRevisionWritesWhatMarshalWrites(t *testing.T) {
	items := variedEdits(100)
	at := time.Date(2026, 3, 4, 5, 6, 7, 891234567, time.UTC)
	var revs []*gtc.Revision
	for i := 1; i < len(items); i++ {
		ops, err := DiffItems(items[i-1], items[i])
		require.NoError(t, err)
		revs = append(revs, &gtc.Revision{DatasetName: "ds", ID: "q\"1\u2028", Number: int64(i), At: at.Add(time.Duration(i) * time.Millisecond),
			Actor: "curator <a&b>", Source: gtc.SourceAPI, ETagBefore: "e1", ETagAfter: "e2", Ops: ops})
	}
	first := &gtc.Revision{DatasetName: "ds", ID: "q1", Number: 9, At: at.In(time.FixedZone("x", 3600)), Actor: "", Source: "agent:op-1",
		OperationID: "op-1", ETagAfter: "e9", PrunedBefore: 9, Base: codec0(items[5])}
	revs = append(revs, first, &gtc.Revision{DatasetName: "ds", ID: "q1", Number: 1, At: time.Time{}})
	for _, r := range revs {
		got, err := AppendRevision([]byte("prefix"), r)
		require.NoError(t, err)
		want, err := jsonv2.Marshal(r, jsontext.EscapeForHTML(false), jsontext.EscapeForJS(false))
		require.NoError(t, err)
		require.Equal(t, "prefix"+string(want), string(got))
		back, err := DecodeRevision(got[len("prefix"):])
		require.NoError(t, err)
		require.Len(t, back.Ops, len(r.Ops))
		for i := range r.Ops {
			require.Equal(t, r.Ops[i], back.Ops[i])
		}
	}
	_, err := AppendRevision(nil, &gtc.Revision{Ops: []gtc.PatchOp{{Op: "add", Path: "/x", Value: json.RawMessage{}}}})
	require.ErrorContains(t, err, "empty value")
	_, err = AppendRevision(nil, &gtc.Revision{At: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)})
	require.ErrorContains(t, err, "outside the years")
}

func codec0(it *gtc.Item) json.RawMessage { return ItemStoredJSON(it) }
