package tagging

import (
	"fmt"
	"sync"
	"testing"

	gtc "github.com/gtc-dev/gtc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The computed-tag test vectors, in order.
func TestComputeVectors(t *testing.T) {
	base := []string{"dataset:support", "question_length:short", "retrieval_behavior:no_refs", "turns:singleturn"}
	noAnswer := []string{"dataset:support", "answer:no_answer", "question_length:short", "retrieval_behavior:no_refs", "turns:singleturn"}
	multi := []string{"dataset:support", "question_length:short", "retrieval_behavior:no_refs", "turns:multiturn"}
	tests := []struct {
		id   string
		item *gtc.Item
		want []string
	}{
		{"T01", newItem("support", ""), base},
		{"T02", newItem("DS One", refsData("https://docs.example.com/install"),
			U("Where do I download the installer?"), A("Use the download page.")),
			[]string{"dataset:DS One", "question_length:short", "retrieval_behavior:single", "turns:singleturn"}},
		{"T03", newItem("support", "", U(W(10)), A("ok")), base},
		{"T04", newItem("support", "", U(W(11)), A("ok")),
			[]string{"dataset:support", "question_length:medium", "retrieval_behavior:no_refs", "turns:singleturn"}},
		{"T05", newItem("support", "", U(W(30)), A("ok")),
			[]string{"dataset:support", "question_length:medium", "retrieval_behavior:no_refs", "turns:singleturn"}},
		{"T06", newItem("support", "", U(W(31)), A("ok")),
			[]string{"dataset:support", "question_length:long", "retrieval_behavior:no_refs", "turns:singleturn"}},
		{"T07", newItem("support", "", U("q"), A("  NO_ANSWER  ")), noAnswer},
		{"T08", newItem("support", "", U("q"), A("No_Answer")), noAnswer},
		{"T09", newItem("support", "", U("q"), A("no answer")), base},
		{"T10", newItem("support", "", U("q"), A("NO_ANSWER.")), base},
		{"T11", newItem("support", "", U("a"), A("b"), U("c")), multi},
		{"T12", newItem("support", "", U("Initial"), turn("planner", "Draft"), U("Follow-up"), A("Final")), multi},
		{"T13", newItem("support", "", A("NO_ANSWER")), noAnswer},
		{"T14", newItem("support", refsData("https://kb.example.com/article/CS431120"), U("q"), A("a")),
			[]string{"dataset:support", "question_length:short", "reference_type:article", "retrieval_behavior:single", "turns:singleturn"}},
		{"T15", newItem("support", refsData("https://support.example.com/help/product/page.html", "https://x.example/helpdesk"), U("q"), A("a")),
			[]string{"dataset:support", "question_length:short", "reference_type:helpcenter", "retrieval_behavior:two_refs", "turns:singleturn"}},
		{"T16", newItem("support", refsData("https://abcs12.example/helpdesk"), U("q"), A("a")),
			[]string{"dataset:support", "question_length:short", "reference_type:article", "reference_type:helpcenter", "retrieval_behavior:single", "turns:singleturn"}},
		{"T17", newItem("support", refsData("https://a.example/1", "https://a.example/2", "https://a.example/3"), U("q"), A("a")),
			[]string{"dataset:support", "question_length:short", "retrieval_behavior:rich", "turns:singleturn"}},
		{"T18", newItem("support", `{"references": [], "totalReferences": 5}`, U("q"), A("a")), base},
		{"T19", newItem("support", `{"totalReferences": 5}`, U("q"), A("a")), base},
		{"T20", newItem("support", `{"refs": [{"url":"https://a.example/1"}, {"url":"https://a.example/HELP/2"}]}`, U("q"), A("a")), base},
		{"T21", newItem("support", refsData("https://example.com/HELP/x", "https://example.com/cs-123", "https://example.com/Cs9"), U("q"), A("a")),
			[]string{"dataset:support", "question_length:short", "reference_type:article", "reference_type:helpcenter", "retrieval_behavior:rich", "turns:singleturn"}},
		{"T22", newItem("support", refsData("https://example.com/cs-123"), U("q"), A("a")),
			[]string{"dataset:support", "question_length:short", "retrieval_behavior:single", "turns:singleturn"}},
		{"T23", newItem("support", "", turn("  USER ", "  where is it  "), A("here")), base},
		{"T24", newItem("support", "", U(W(40)), A("a"), U("short one")), multi},
		{"T25", newItem("support", "", U("q"), A("NO_ANSWER"), U("q2"), turn("tool", "result")), multi},
		{"T26", newItem("CamelCase", "", U("q"), A("a")),
			[]string{"dataset:CamelCase", "question_length:short", "retrieval_behavior:no_refs", "turns:singleturn"}},
		{"T27", newItem("support", "", U("a"), U("b")), base},
		{"T28", newItem("support", `{"retrievals": {"tc1": {"candidates": [{"url":"https://a.example/CS1"}, {"url":"https://b.example/2"}]}}}`, U("q"), A("a")), base},
		{"T29", newItem("support", `{"references": [{"url": "  https://kb.example.com/help/x  ", "visitedAt": "2025-01-02T10:01:00.000Z", "turnId": "t1"}]}`, U("q"), A("a")),
			[]string{"dataset:support", "question_length:short", "reference_type:helpcenter", "retrieval_behavior:single", "turns:singleturn"}},
		{"T30", newItem("support", refsData("https://kb.example.com/CS1", "https://kb.example.com/CS2", "https://kb.example.com/help/3", "https://kb.example.com/4"), U(W(31))),
			[]string{"dataset:support", "question_length:long", "reference_type:article", "reference_type:helpcenter", "retrieval_behavior:rich", "turns:singleturn"}},
		{"T31", newItem("support", "", U("one\ttwo\nthree   four"), A("x")), base},
	}
	reg := defaultRegistry(t)
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			before := tt.item.Clone()
			got := reg.Compute(tt.item)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, before, tt.item, "Compute must not modify the item")
		})
	}
}

func TestDefaultRegistryListings(t *testing.T) {
	reg := defaultRegistry(t)
	assert.Equal(t, []string{
		"answer:no_answer", "question_length:long", "question_length:medium", "question_length:short",
		"reference_type:article", "reference_type:helpcenter", "retrieval_behavior:no_refs",
		"retrieval_behavior:rich", "retrieval_behavior:single", "retrieval_behavior:two_refs",
		"turns:multiturn", "turns:singleturn",
	}, reg.StaticKeys())
	assert.Equal(t, []string{"dataset:"}, reg.DynamicPrefixes())
	assert.Equal(t, []string{
		"dataset:_dynamic", "answer:no_answer", "question_length:long", "question_length:medium",
		"question_length:short", "reference_type:article", "reference_type:helpcenter",
		"retrieval_behavior:no_refs", "retrieval_behavior:rich", "retrieval_behavior:single",
		"retrieval_behavior:two_refs", "turns:multiturn", "turns:singleturn",
	}, reg.Keys())
	plugins := reg.Plugins()
	require.Len(t, plugins, 13)
	for i, p := range plugins {
		assert.Equal(t, reg.Keys()[i], p.Key())
	}
}

func TestRegistryListingsAreCopies(t *testing.T) {
	reg := defaultRegistry(t)
	reg.Keys()[0] = "x:y"
	reg.StaticKeys()[0] = "x:y"
	reg.DynamicPrefixes()[0] = "x:"
	reg.Plugins()[0] = nil
	assert.Equal(t, "dataset:_dynamic", reg.Keys()[0])
	assert.Equal(t, "answer:no_answer", reg.StaticKeys()[0])
	assert.Equal(t, []string{"dataset:"}, reg.DynamicPrefixes())
	assert.NotNil(t, reg.Plugins()[0])
}

// fakePlugin lets tests register arbitrary keys and results.
type fakePlugin struct {
	key    string
	result string
	ok     bool
	panics bool
}

func (p fakePlugin) Key() string         { return p.key }
func (p fakePlugin) Description() string { return "fake" }
func (p fakePlugin) Compute(*Input) (string, bool) {
	if p.panics {
		panic("boom")
	}
	return p.result, p.ok
}

func static(key string) fakePlugin { return fakePlugin{key: key, result: key, ok: true} }

func TestNewRegistryErrors(t *testing.T) {
	tests := []struct {
		name    string
		plugins []Plugin
		wantErr string
	}{
		{"duplicate key", []Plugin{TurnsMultiturnPlugin{}, static("turns:multiturn")},
			"Duplicate tag key 'turns:multiturn': a plugin with this key is already registered"},
		{"duplicate dynamic key", []Plugin{DatasetPlugin{}, DatasetPlugin{}},
			"Duplicate tag key 'dataset:_dynamic': a plugin with this key is already registered"},
		{"static under dynamic prefix, dynamic first", []Plugin{DatasetPlugin{}, static("dataset:foo")},
			"computed tag key 'dataset:foo' falls under dynamic prefix 'dataset:'"},
		{"static under dynamic prefix, static first", []Plugin{static("dataset:foo"), DatasetPlugin{}},
			"computed tag key 'dataset:foo' falls under dynamic prefix 'dataset:'"},
		{"upper-case static key", []Plugin{static("Turns:multiturn")}, "invalid computed tag key 'Turns:multiturn'"},
		{"static key without colon", []Plugin{static("turns")}, "invalid computed tag key 'turns'"},
		{"static key with spaces around colon", []Plugin{static("turns : x")}, "invalid computed tag key 'turns : x'"},
		{"empty key", []Plugin{static("")}, "invalid computed tag key ''"},
		{"dynamic key without group", []Plugin{fakePlugin{key: ":_dynamic"}}, "invalid computed tag key ':_dynamic'"},
		{"dynamic key with upper-case group", []Plugin{fakePlugin{key: "Dataset:_dynamic"}}, "invalid computed tag key 'Dataset:_dynamic'"},
		{"dynamic key with colon in group", []Plugin{fakePlugin{key: "a:b:_dynamic"}}, "invalid computed tag key 'a:b:_dynamic'"},
		{"nil plugin", []Plugin{nil}, "computed tag plugin 0 is nil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg, err := NewRegistry(tt.plugins...)
			assert.Nil(t, reg)
			assert.EqualError(t, err, tt.wantErr)
		})
	}
}

func TestNewRegistryAcceptsUnrelatedKeys(t *testing.T) {
	// "datasets:x" shares the letters of "dataset:" but not the prefix.
	reg, err := NewRegistry(DatasetPlugin{}, static("datasets:x"), fakePlugin{key: "topic area:_dynamic"})
	require.NoError(t, err)
	assert.Equal(t, []string{"datasets:x"}, reg.StaticKeys())
	assert.Equal(t, []string{"dataset:", "topic area:"}, reg.DynamicPrefixes())
}

func TestIsComputed(t *testing.T) {
	reg := defaultRegistry(t)
	tests := []struct {
		tag     string
		current []string
		want    bool
	}{
		{"turns:multiturn", nil, true},
		{"dataset:anything", nil, true},
		{"dataset:DS One", nil, true},
		{"datasets:x", nil, false},
		{"answer:yes", nil, false},
		{"question_length:tiny", nil, false},
		{"Turns:MultiTurn", nil, false}, // exact comparison: callers normalize first
		{"source:sme", nil, false},
		{"source:sme", []string{"source:sme"}, true},
		{"dataset:_dynamic", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.tag, func(t *testing.T) {
			assert.Equal(t, tt.want, reg.IsComputed(tt.tag, tt.current))
		})
	}
}

func TestSplitManual(t *testing.T) {
	reg := defaultRegistry(t)
	kept, stripped := reg.SplitManual(
		[]string{"dataset:old", "source:sme", "turns:multiturn", "topic:x"},
		[]string{"dataset:new", "question_length:short", "retrieval_behavior:no_refs", "turns:singleturn"},
	)
	assert.Equal(t, []string{"source:sme", "topic:x"}, kept)
	assert.Equal(t, []string{"dataset:old", "turns:multiturn"}, stripped)

	kept, stripped = reg.SplitManual(nil, nil)
	assert.NotNil(t, kept)
	assert.NotNil(t, stripped)
	assert.Empty(t, kept)
	assert.Empty(t, stripped)
}

func TestComputeDropsContractBreaches(t *testing.T) {
	logger, buf := captureLogger()
	reg, err := NewRegistry(
		fakePlugin{key: "a:one", result: "a:two", ok: true},       // static returning another tag
		fakePlugin{key: "b:_dynamic", result: "b:", ok: true},     // empty dynamic remainder
		fakePlugin{key: "c:_dynamic", result: "d:x", ok: true},    // outside its prefix
		fakePlugin{key: "e:_dynamic", result: "e:same", ok: true}, // fine
		fakePlugin{key: "e2:_dynamic", result: "e2:x", ok: false}, // not applicable: ignored silently
		fakePlugin{key: "f:one", panics: true},                    // panics
		static("g:one"),                                           // fine
		fakePlugin{key: "h:_dynamic", result: "h:x", ok: true},    // fine
		fakePlugin{key: "i:_dynamic", result: "i:x", ok: true},    // fine
	)
	require.NoError(t, err)
	reg = reg.WithLogger(logger)
	got := reg.Compute(newItem("support", ""))
	assert.Equal(t, []string{"e:same", "g:one", "h:x", "i:x"}, got)

	recs := logRecords(t, buf)
	require.Len(t, recs, 4)
	for _, r := range recs {
		assert.Equal(t, "ERROR", r["level"])
		assert.Equal(t, "item-1", r["item_id"])
	}
	assert.Equal(t, []any{"a:one", "b:_dynamic", "c:_dynamic", "f:one"},
		[]any{recs[0]["plugin"], recs[1]["plugin"], recs[2]["plugin"], recs[3]["plugin"]})
}

func TestComputeKeepsDynamicResultsOfDistinctGroups(t *testing.T) {
	logger, buf := captureLogger()
	reg, err := NewRegistry(
		fakePlugin{key: "x:_dynamic", result: "x:1", ok: true},
		fakePlugin{key: "y:_dynamic", result: "y:1", ok: true},
	)
	require.NoError(t, err)
	got := reg.WithLogger(logger).Compute(newItem("support", ""))
	assert.Equal(t, []string{"x:1", "y:1"}, got)
	assert.Empty(t, buf.String())
}

func TestComputeNeverNil(t *testing.T) {
	reg, err := NewRegistry()
	require.NoError(t, err)
	got := reg.Compute(newItem("support", ""))
	assert.NotNil(t, got)
	assert.Empty(t, got)
	assert.NotNil(t, defaultRegistry(t).Compute(nil))
}

func TestRegistryConcurrentCompute(t *testing.T) {
	reg := defaultRegistry(t)
	want := reg.Compute(newItem("support", refsData("https://kb.example.com/CS1"), U("q"), A("a")))
	var wg sync.WaitGroup
	errs := make(chan string, 32)
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			it := newItem("support", refsData("https://kb.example.com/CS1"), U("q"), A("a"))
			got := reg.Compute(it)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				errs <- fmt.Sprintf("goroutine %d: %v", i, got)
			}
			_ = reg.IsComputed("dataset:x", got)
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
