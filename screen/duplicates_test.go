package screen

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
)

func dupItem(dataset, id string, status gtc.Status, metadata string, history ...gtc.HistoryEntry) *gtc.Item {
	it := gtc.NewItem(dataset, id)
	it.Status = status
	it.History = history
	if metadata != "" {
		it.Metadata = json.RawMessage(metadata)
	}
	return it
}

// candidatesOf serves the approved items of each dataset and counts the calls.
func candidatesOf(calls map[string]int, items ...*gtc.Item) func(string) []*gtc.Item {
	return func(ds string) []*gtc.Item {
		if calls != nil {
			calls[ds]++
		}
		var out []*gtc.Item
		for _, it := range items {
			if it.DatasetName == ds {
				out = append(out, it)
			}
		}
		return out
	}
}

func reasons(ws []gtc.DuplicateWarning) []string {
	out := []string{}
	for _, w := range ws {
		out = append(out, w.ItemID+">"+w.DuplicateID+": "+w.MatchReason)
	}
	return out
}

// Worked examples of duplicate detection.
func TestDuplicateExamples(t *testing.T) {
	cases := []struct {
		name        string
		draft, cand *gtc.Item
		want        string // "" for no warning
	}{
		{"question and answer",
			dupItem("ds", "d", gtc.StatusDraft, "", U("How  do I   Reset?"), A("Click reset.")),
			dupItem("ds", "c", gtc.StatusApproved, "", U("how do i reset?"), A("click  RESET.")),
			"exact question and answer match"},
		{"question",
			dupItem("ds", "d", gtc.StatusDraft, "", U("How do I reset?"), A("Click reset.")),
			dupItem("ds", "c", gtc.StatusApproved, "", U("How do I reset?"), A("Use the menu.")),
			"exact question match"},
		{"history and generic",
			dupItem("ds", "d", gtc.StatusDraft, `{"k":1}`, A("Status OK")),
			dupItem("ds", "c", gtc.StatusApproved, `{"k":1}`, A("status ok")),
			"exact history and generic fields match"},
		{"history",
			dupItem("ds", "d", gtc.StatusDraft, "", A("Status OK")),
			dupItem("ds", "c", gtc.StatusApproved, `{"k":1}`, A("status ok")),
			"exact history match"},
		{"generic",
			dupItem("ds", "d", gtc.StatusDraft, `{"k":1,"e":""}`),
			dupItem("ds", "c", gtc.StatusApproved, `{"k":1}`),
			"exact generic fields match"},
		{"nothing",
			dupItem("ds", "d", gtc.StatusDraft, ""),
			dupItem("ds", "c", gtc.StatusApproved, ""),
			""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ws := DuplicateWarnings([]*gtc.Item{c.draft}, candidatesOf(nil, c.cand))
			if c.want == "" {
				assert.Empty(t, ws)
				return
			}
			require.Len(t, ws, 1)
			assert.Equal(t, gtc.DuplicateWarning{ItemID: "d", DuplicateID: "c", DuplicateQuestion: gtc.QuestionText(c.cand),
				DuplicateStatus: "approved", MatchReason: c.want}, ws[0])
		})
	}
}

func TestDuplicateWarningShape(t *testing.T) {
	d := dupItem("ds", "d", gtc.StatusDraft, "", U("  How do I RESET?  "))
	c := dupItem("ds", "c", gtc.StatusApproved, "", U("planner text"), U("  How  do I reset? "), A("x"))
	ws := DuplicateWarnings([]*gtc.Item{d}, candidatesOf(nil, c))
	require.Len(t, ws, 1)
	js, err := json.Marshal(ws[0])
	require.NoError(t, err)
	// duplicateQuestion is the candidate's question text (trimmed), not normalized.
	assert.JSONEq(t, `{"itemId":"d","duplicateId":"c","duplicateQuestion":"How  do I reset?","duplicateStatus":"approved","matchReason":"exact question match"}`, string(js))
}

// The first matching rule decides, whatever else also matches.
func TestDuplicateRulePrecedence(t *testing.T) {
	d := dupItem("ds", "d", gtc.StatusDraft, `{"k":1}`, U("Q"), A("A"))
	cands := []*gtc.Item{
		dupItem("ds", "same-everything", gtc.StatusApproved, `{"k":1}`, U("q"), A("a")),
		dupItem("ds", "same-q-other-history", gtc.StatusApproved, `{"k":1}`, A("before"), U("q"), A("different")),
		dupItem("ds", "empty-answer", gtc.StatusApproved, "", U("q")),
	}
	assert.Equal(t, []string{
		"d>same-everything: exact question and answer match",
		"d>same-q-other-history: exact question match",
		"d>empty-answer: exact question match",
	}, reasons(DuplicateWarnings([]*gtc.Item{d}, candidatesOf(nil, cands...))))

	// No question on one side: history, then generic.
	d = dupItem("ds", "d", gtc.StatusDraft, `{"k":1}`, A("Only an answer"))
	cands = []*gtc.Item{
		dupItem("ds", "h", gtc.StatusApproved, `{"k":2}`, A("only an answer")),
		dupItem("ds", "g", gtc.StatusApproved, `{"k":1}`, A("another answer")),
		dupItem("ds", "hg", gtc.StatusApproved, `{"k":1}`, A("ONLY  an answer")),
		dupItem("ds", "role-differs", gtc.StatusApproved, `{"k":2}`, gtc.HistoryEntry{Role: "agent", Msg: "Only an answer"}),
	}
	assert.Equal(t, []string{
		"d>h: exact history match",
		"d>g: exact generic fields match",
		"d>hg: exact history and generic fields match",
	}, reasons(DuplicateWarnings([]*gtc.Item{d}, candidatesOf(nil, cands...))))
}

func TestDuplicateCapSameIDAndOrder(t *testing.T) {
	var cands []*gtc.Item
	for i := range 6 {
		cands = append(cands, dupItem("ds", fmt.Sprintf("c%d", i), gtc.StatusApproved, "", U("same question")))
	}
	// A candidate with the draft's own id is skipped and does not use up the cap.
	cands[1].ID = "d1"
	drafts := []*gtc.Item{
		dupItem("ds", "d1", gtc.StatusDraft, "", U("Same question")),
		dupItem("ds", "d2", gtc.StatusApproved, "", U("Same question")), // not a draft: not checked
		dupItem("ds", "d3", gtc.StatusDeleted, "", U("Same question")),
		dupItem("ds", "d4", gtc.StatusDraft, "", U("same  QUESTION")),
	}
	assert.Equal(t, []string{
		"d1>c0: exact question match", "d1>c2: exact question match", "d1>c3: exact question match",
		"d4>c0: exact question match", "d4>d1: exact question match", "d4>c2: exact question match",
	}, reasons(DuplicateWarnings(drafts, candidatesOf(nil, cands...))))

	// Warnings follow candidate order even when different rules select the candidates.
	d := dupItem("ds", "d", gtc.StatusDraft, `{"k":1}`, U("q"), A("a"))
	mixed := []*gtc.Item{
		dupItem("ds", "none", gtc.StatusApproved, `{"k":2}`, U("x")),
		dupItem("ds", "generic", gtc.StatusApproved, `{"k":1}`, U("x")),
		dupItem("ds", "question", gtc.StatusApproved, "", U("q")),
		dupItem("ds", "history", gtc.StatusApproved, "", U("q"), A("a")),
		dupItem("ds", "late", gtc.StatusApproved, "", U("q")),
	}
	assert.Equal(t, []string{
		"d>generic: exact generic fields match",
		"d>question: exact question match",
		"d>history: exact question and answer match",
	}, reasons(DuplicateWarnings([]*gtc.Item{d}, candidatesOf(nil, mixed...))))
}

func TestDuplicateDatasets(t *testing.T) {
	calls := map[string]int{}
	cands := []*gtc.Item{
		dupItem("A", "a1", gtc.StatusApproved, "", U("shared question")),
		dupItem("B", "b1", gtc.StatusApproved, "", U("shared question")),
		dupItem("B", "b2", gtc.StatusDraft, "", U("shared question")), // candidates must be approved
	}
	drafts := []*gtc.Item{
		dupItem("A", "x", gtc.StatusDraft, "", U("shared question")),
		dupItem("B", "y", gtc.StatusDraft, "", U("shared question")),
		dupItem("C", "z", gtc.StatusDraft, "", U("shared question")),
		dupItem("A", "w", gtc.StatusDraft, "", U("shared question")),
		dupItem("D", "v", gtc.StatusApproved, "", U("shared question")),
	}
	assert.Equal(t, []string{
		"x>a1: exact question match",
		"y>b1: exact question match",
		"w>a1: exact question match",
	}, reasons(DuplicateWarnings(drafts, candidatesOf(calls, cands...))))
	// One call per dataset that has a draft.
	assert.Equal(t, map[string]int{"A": 1, "B": 1, "C": 1}, calls)

	// A candidate list that wrongly holds another dataset's items never matches them.
	ws := DuplicateWarnings([]*gtc.Item{drafts[0]}, func(string) []*gtc.Item { return cands[1:2] })
	assert.Empty(t, ws)

	// Never nil: the import response lists [] rather than null.
	assert.Equal(t, []gtc.DuplicateWarning{}, DuplicateWarnings(nil, nil))
}

func TestDuplicateCandidateLimit(t *testing.T) {
	cands := make([]*gtc.Item, DuplicateCandidateLimit+1)
	for i := range cands {
		cands[i] = dupItem("ds", fmt.Sprintf("c%d", i), gtc.StatusApproved, "", U(fmt.Sprintf("question %d", i)))
	}
	d := dupItem("ds", "d", gtc.StatusDraft, "", U(fmt.Sprintf("question %d", DuplicateCandidateLimit)))
	assert.Empty(t, DuplicateWarnings([]*gtc.Item{d}, candidatesOf(nil, cands...)))
	d.History = []gtc.HistoryEntry{U(fmt.Sprintf("question %d", DuplicateCandidateLimit-1))}
	assert.Len(t, DuplicateWarnings([]*gtc.Item{d}, candidatesOf(nil, cands...)), 1)
}

func TestDuplicateGenericSignature(t *testing.T) {
	var sg dupSigner
	str := func(s string) *string { return &s }
	it := gtc.NewItem("ds", "i")
	it.ScenarioID = "Scen   1"
	it.ContextEntries = []gtc.ContextEntry{{Key: "k", Value: json.RawMessage(`null`)}}
	it.ToolCalls = []gtc.ToolCall{{Name: "Search", StepNumber: new(int64(0)), Agent: str(""),
		Arguments: json.RawMessage(`{"q":"X","n":1.50,"big":12345678901234567890}`)}}
	it.ExpectedTools.Required = []gtc.ToolExpectation{{Name: "search"}}
	it.Feedback = []gtc.FeedbackEntry{{Source: "", Values: json.RawMessage(`{}`)}}
	it.Metadata = json.RawMessage(`{"b":{"x":null,"y":[]},"a":[null,"",{},[],0,false,"A\u00e9\tB"]}`)
	it.Plugins = map[string]gtc.PluginPayload{"p": {Kind: "K", Data: json.RawMessage(`{"z":{}}`)}}
	it.TraceIDs = map[string]string{"t": "", "u": "U1"}
	it.TracePayload = json.RawMessage(` { } `)
	assert.Equal(t, `{"contextentries":[{"key":"k"}],"expectedtools":{"required":[{"name":"search"}]},`+
		`"metadata":{"a":[0,false,"aé\tb"]},"plugins":{"p":{"kind":"k","version":"1.0"}},"scenarioid":"scen 1",`+
		`"toolcalls":[{"arguments":{"big":12345678901234567890,"n":1.50,"q":"x"},"calltype":"tool","name":"search","stepnumber":0}],`+
		`"traceids":{"u":"u1"}}`, string(sg.generic(it)))

	// Nothing but defaults and pruned values: no signature.
	empty := gtc.NewItem("ds", "e")
	empty.Metadata = json.RawMessage(`{"a":{"b":[null,{}]},"c":""}`)
	empty.TraceIDs = map[string]string{}
	assert.Empty(t, sg.generic(empty))

	// Keys are compared sorted; numbers as stored.
	a := dupItem("ds", "a", gtc.StatusDraft, `{"x":1,"y":[1,2]}`)
	b := dupItem("ds", "b", gtc.StatusApproved, `{"y":[1,2],"x":1}`)
	c := dupItem("ds", "c", gtc.StatusApproved, `{"x":1.0,"y":[1,2]}`)
	d := dupItem("ds", "d", gtc.StatusApproved, `{"x":1,"y":[2,1]}`)
	assert.Equal(t, []string{"a>b: exact generic fields match"}, reasons(DuplicateWarnings([]*gtc.Item{a}, candidatesOf(nil, b, c, d))))
}

func TestDuplicateNormalization(t *testing.T) {
	var sg dupSigner
	it := gtc.NewItem("ds", "i")
	it.History = []gtc.HistoryEntry{
		{Role: "User", Msg: "  Héllo\u00a0\u00a0WORLD\t\n"},
		{Role: "assistant", Msg: "ÉTÉ  ok"},
	}
	assert.Equal(t, "héllo world", string(sg.question(it)))
	assert.Equal(t, "été ok", string(sg.answer(it)))
	assert.Equal(t, "user: héllo world assistant:été ok", string(sg.history(it)))
	assert.Empty(t, sg.history(gtc.NewItem("ds", "e")))
}

// --- benchmark -----------------------------------------------------------------------------

// BenchmarkDuplicateWarnings checks 10,000 realistic drafts against 1,000 approved
// candidates of their dataset; one draft in ten repeats a candidate's conversation.
func BenchmarkDuplicateWarnings(b *testing.B) {
	ticket := func(it *gtc.Item, n int) *gtc.Item {
		it.History[2].Msg = fmt.Sprintf("%s (ticket %d)", it.History[2].Msg, n)
		return it
	}
	cands := make([]*gtc.Item, DuplicateCandidateLimit)
	for j := range cands {
		cands[j] = ticket(realisticItem("ds", 100000+j), j)
		cands[j].Status = gtc.StatusApproved
	}
	drafts := make([]*gtc.Item, 10000)
	for i := range drafts {
		drafts[i] = ticket(realisticItem("ds", i), i)
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		n = len(DuplicateWarnings(drafts, func(string) []*gtc.Item { return cands }))
	}
	b.ReportMetric(float64(n), "warnings/op")
}

// The index finds exactly the matches of comparing every draft with every candidate by the
// signatures' definitions, on items drawn from a small space so that all rules fire: generic
// signatures that agree although raw values differ (key order, spaces, pruned members), and
// typed signatures that agree while generic ones differ.
func TestDuplicateIndexAgreesWithPairwise(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	raw := func() json.RawMessage {
		if v := pick("", `null`, `{}`, `{"x":1}`, `{ "x" : 1, "e": "" }`, `{"x":1.0}`, `[null]`, `"A"`, `"a"`); v != "" {
			return json.RawMessage(v)
		}
		return nil
	}
	item := func(id string, status gtc.Status) *gtc.Item {
		it := gtc.NewItem("ds", id)
		it.Status = status
		for range rng.IntN(3) {
			it.History = append(it.History, gtc.HistoryEntry{Role: pick("user", "assistant", "assistant"), Msg: pick("Q", "q ", "A", "b", "B ", "c", "d", "e")})
		}
		it.ScenarioID = pick("", "S", "s")
		if rng.IntN(4) == 0 {
			it.ContextEntries = []gtc.ContextEntry{{Key: pick("", "k"), Value: raw()}}
		}
		if rng.IntN(4) == 0 {
			it.ToolCalls = []gtc.ToolCall{{Name: "search", ID: pick("", "1"), Arguments: raw(), Response: raw()}}
		}
		it.Metadata = raw()
		return it
	}
	var drafts, cands []*gtc.Item
	for i := range 300 {
		drafts = append(drafts, item(fmt.Sprintf("d%d", i), gtc.StatusDraft))
		cands = append(cands, item(fmt.Sprintf("c%d", i), gtc.StatusApproved))
	}
	// Some candidates repeat a draft, with its metadata written another way.
	for i := 0; i < len(cands); i += 5 {
		c := *drafts[i]
		c.ID, c.Status = fmt.Sprintf("c%d", i), gtc.StatusApproved
		if string(c.Metadata) == `{"x":1}` {
			c.Metadata = json.RawMessage(`{ "x" : 1, "e": "" }`)
		}
		cands[i] = &c
	}
	cands[7].ID = drafts[3].ID

	// Each item's signatures, by definition.
	type sigs struct{ q, a, h, g string }
	var sg dupSigner
	of := func(it *gtc.Item) sigs {
		return sigs{string(sg.question(it)), string(sg.answer(it)), string(sg.history(it)), string(sg.generic(it))}
	}
	pairwise := func(drafts, cands []*gtc.Item) (want []string, counts map[string]int) {
		want, counts = []string{}, map[string]int{}
		cs := make([]sigs, len(cands))
		for i, c := range cands {
			cs[i] = of(c)
		}
		for _, d := range drafts {
			ds, n := of(d), 0
			for i, c := range cands {
				reason := ""
				switch {
				case c.ID == d.ID:
				case ds.q != "" && ds.q == cs[i].q:
					reason = MatchQuestion
					if ds.a != "" && ds.a == cs[i].a {
						reason = MatchQuestionAndAnswer
					}
				case ds.h != "" && ds.h == cs[i].h:
					reason = MatchHistory
					if ds.g != "" && ds.g == cs[i].g {
						reason = MatchHistoryAndGeneric
					}
				case ds.g != "" && ds.g == cs[i].g:
					reason = MatchGeneric
				}
				if reason != "" {
					want = append(want, d.ID+">"+c.ID+": "+reason)
					counts[reason]++
					if n++; n == DuplicateWarningLimit {
						break
					}
				}
			}
		}
		return want, counts
	}
	want, counts := pairwise(drafts, cands)
	assert.Equal(t, want, reasons(DuplicateWarnings(drafts, candidatesOf(nil, cands...))))
	// Every rule fired.
	for _, r := range []string{MatchQuestionAndAnswer, MatchQuestion, MatchHistoryAndGeneric, MatchHistory, MatchGeneric} {
		assert.Positive(t, counts[r], r)
	}
	assert.Greater(t, counts[MatchGeneric], 100)

	// The same with one typed signature for every item.
	untyped := func(items []*gtc.Item) (out []*gtc.Item) {
		for _, it := range items {
			c := *it
			c.ScenarioID, c.ContextEntries, c.ToolCalls = "", nil, nil
			out = append(out, &c)
		}
		return out
	}
	drafts1, cands1 := untyped(drafts), untyped(cands)
	want, counts = pairwise(drafts1, cands1)
	assert.Equal(t, want, reasons(DuplicateWarnings(drafts1, candidatesOf(nil, cands1...))))
	assert.Greater(t, counts[MatchGeneric], 100)
}
