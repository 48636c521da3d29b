package tagging

import (
	"encoding/json"
	"strings"
	"testing"

	gtc "github.com/gtc-dev/gtc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// contractItems are valid items of every awkward shape a plugin must survive.
func contractItems() map[string]*gtc.Item {
	return map[string]*gtc.Item{
		"new item":              gtc.NewItem("support", "id"),
		"zero item":             {},
		"empty strings":         newItem("", "", U(""), A("")),
		"whitespace only":       newItem("support", "", U(" \t\n"), turn("", "  ")),
		"null rag data":         newItem("support", "null", U("q")),
		"bad references":        newItem("support", `{"references": [1, null, "x", {"url": ""}, {"url": 3}, {}]}`, U("q")),
		"references not a list": newItem("support", `{"references": {"url": "https://a.example/help"}}`, U("q")),
		"rich": newItem("support", refsData("https://kb.example.com/CS1", "https://kb.example.com/help", "https://x.example/3"),
			U(W(20)), A("NO_ANSWER"), U("again")),
	}
}

func TestPluginContract(t *testing.T) {
	for _, p := range DefaultPlugins() {
		t.Run(p.Key(), func(t *testing.T) {
			dynamic := strings.HasSuffix(p.Key(), DynamicSuffix)
			for name, it := range contractItems() {
				var tag1, tag2 string
				var ok1, ok2 bool
				require.NotPanics(t, func() {
					tag1, ok1 = p.Compute(NewInput(it))
					tag2, ok2 = p.Compute(NewInput(it))
				}, name)
				assert.Equal(t, tag1, tag2, "%s: not deterministic", name)
				assert.Equal(t, ok1, ok2, "%s: not deterministic", name)
				if !ok1 {
					assert.Empty(t, tag1, "%s: a tag that does not apply must be empty", name)
					continue
				}
				if dynamic {
					prefix := strings.TrimSuffix(p.Key(), DynamicSuffix) + ":"
					assert.True(t, strings.HasPrefix(tag1, prefix) && len(tag1) > len(prefix), "%s: %q outside %q", name, tag1, prefix)
				} else {
					assert.Equal(t, p.Key(), tag1, "%s: a static plugin must return its key", name)
				}
			}
		})
	}
}

func TestPluginDescriptions(t *testing.T) {
	want := map[string]string{
		"answer:no_answer":            "The final agent answer is the no_answer marker.",
		"question_length:long":        "The latest user question has more than 30 words.",
		"question_length:medium":      "The latest user question has 11 to 30 words.",
		"question_length:short":       "The latest user question has at most 10 words.",
		"reference_type:article":      "A reference URL contains an article number (CS followed by digits).",
		"reference_type:helpcenter":   "A reference URL points into a /help path.",
		"retrieval_behavior:no_refs":  "The item has no references.",
		"retrieval_behavior:rich":     "The item has three or more references.",
		"retrieval_behavior:single":   "The item has exactly one reference.",
		"retrieval_behavior:two_refs": "The item has exactly two references.",
		"turns:multiturn":             "The conversation has more than two turns.",
		"turns:singleturn":            "The conversation has at most two turns.",
		"dataset:_dynamic":            "The dataset the item belongs to.",
	}
	plugins := DefaultPlugins()
	require.Len(t, plugins, len(want))
	for _, p := range plugins {
		assert.Equal(t, want[p.Key()], p.Description(), p.Key())
	}
}

// Every item gets exactly one tag of each mutually exclusive family, whatever its size.
func TestPluginFamiliesAreExclusive(t *testing.T) {
	reg := defaultRegistry(t)
	families := []string{"question_length:", "retrieval_behavior:", "turns:"}
	for words := 0; words <= 35; words++ {
		for nrefs := 0; nrefs <= 4; nrefs++ {
			for turns := 0; turns <= 4; turns++ {
				urls := make([]string, nrefs)
				for i := range urls {
					urls[i] = "https://a.example/" + strings.Repeat("x", i+1)
				}
				history := []gtc.HistoryEntry{}
				for i := range turns {
					if i == 0 {
						history = append(history, U(W(words)))
					} else {
						history = append(history, A("a"))
					}
				}
				got := reg.Compute(newItem("support", refsData(urls...), history...))
				for _, f := range families {
					n := 0
					for _, tag := range got {
						if strings.HasPrefix(tag, f) {
							n++
						}
					}
					assert.Equal(t, 1, n, "family %s, words=%d refs=%d turns=%d: %v", f, words, nrefs, turns, got)
				}
			}
		}
	}
}

func TestPluginThresholds(t *testing.T) {
	tests := []struct {
		name   string
		plugin Plugin
		in     Input
		want   bool
	}{
		{"short at ShortMaxWords", QuestionLengthShortPlugin{}, Input{Question: W(ShortMaxWords)}, true},
		{"short above ShortMaxWords", QuestionLengthShortPlugin{}, Input{Question: W(ShortMaxWords + 1)}, false},
		{"short without question", QuestionLengthShortPlugin{}, Input{}, true},
		{"medium at ShortMaxWords", QuestionLengthMediumPlugin{}, Input{Question: W(ShortMaxWords)}, false},
		{"medium above ShortMaxWords", QuestionLengthMediumPlugin{}, Input{Question: W(ShortMaxWords + 1)}, true},
		{"medium at MediumMaxWords", QuestionLengthMediumPlugin{}, Input{Question: W(MediumMaxWords)}, true},
		{"long at MediumMaxWords", QuestionLengthLongPlugin{}, Input{Question: W(MediumMaxWords)}, false},
		{"long above MediumMaxWords", QuestionLengthLongPlugin{}, Input{Question: W(MediumMaxWords + 1)}, true},
		{"rich below minimum", RetrievalBehaviorRichPlugin{}, Input{ReferenceCount: RichMinReferences - 1}, false},
		{"rich at minimum", RetrievalBehaviorRichPlugin{}, Input{ReferenceCount: RichMinReferences}, true},
		{"article lower-case", ReferenceTypeArticlePlugin{}, Input{ReferenceURLs: []string{"https://x.example/cs1"}}, true},
		{"article needs digits", ReferenceTypeArticlePlugin{}, Input{ReferenceURLs: []string{"https://x.example/cs-1"}}, false},
		{"article ASCII digits only", ReferenceTypeArticlePlugin{}, Input{ReferenceURLs: []string{"https://x.example/cs\u0661"}}, false},
		{"helpcenter upper-case", ReferenceTypeHelpcenterPlugin{}, Input{ReferenceURLs: []string{"https://x.example/HELP"}}, true},
		{"helpcenter needs slash", ReferenceTypeHelpcenterPlugin{}, Input{ReferenceURLs: []string{"https://a.example/self-help"}}, false},
		{"no answer needs exact marker", AnswerNoAnswerPlugin{}, Input{Answer: "no-answer"}, false},
		{"no answer empty", AnswerNoAnswerPlugin{}, Input{Answer: ""}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.Item = gtc.NewItem("support", "id")
			tag, ok := tt.plugin.Compute(&tt.in)
			assert.Equal(t, tt.want, ok)
			if ok {
				assert.Equal(t, tt.plugin.Key(), tag)
			}
		})
	}
}

func TestTurnsCountsEveryRole(t *testing.T) {
	reg := defaultRegistry(t)
	two := reg.Compute(newItem("support", "", turn("system", "s"), turn("tool", "t")))
	three := reg.Compute(newItem("support", "", turn("system", "s"), turn("tool", "t"), turn("planner", "p")))
	assert.Contains(t, two, "turns:singleturn")
	assert.Contains(t, three, "turns:multiturn")
	assert.Equal(t, 3, MultiTurnMinEntries)
}

func TestDatasetTagKeepsNameVerbatim(t *testing.T) {
	for _, ds := range []string{"DS One", "CamelCase", "version.1.0", " padded "} {
		tag, ok := DatasetPlugin{}.Compute(NewInput(gtc.NewItem(ds, "id")))
		require.True(t, ok, ds)
		assert.Equal(t, "dataset:"+ds, tag)
	}
	_, ok := DatasetPlugin{}.Compute(NewInput(gtc.NewItem("", "id")))
	assert.False(t, ok)
}

func TestNewInput(t *testing.T) {
	it := newItem("support", `{"references": [{"url": "  https://a.example/1 "}, {"url": "https://b.example/2", "title": "t"}]}`,
		U("  first "), A("answer one"), U(" second  "), turn("tool", " result "))
	in := NewInput(it)
	assert.Same(t, it, in.Item)
	assert.Equal(t, "second", in.Question)
	assert.Equal(t, "result", in.Answer)
	assert.Equal(t, []string{"https://a.example/1", "https://b.example/2"}, in.ReferenceURLs)
	assert.Equal(t, 2, in.ReferenceCount)

	raw, err := json.Marshal(in.ReferenceURLs)
	require.NoError(t, err)
	assert.NotEqual(t, "null", string(raw))
}
