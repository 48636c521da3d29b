package tagging

import (
	"encoding/json"
	"strings"
	"testing"

	gtc "github.com/gtc-dev/gtc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// oracleURLs is what the domain package reads: the URL of every gtc.References entry.
func oracleURLs(it *gtc.Item) []string {
	out := []string{}
	for _, r := range gtc.References(it) {
		out = append(out, r.URL)
	}
	return out
}

func ragItem(data string) *gtc.Item {
	it := gtc.NewItem("support", "id")
	it.Plugins[gtc.RAGCompatSlot] = gtc.PluginPayload{Kind: gtc.RAGCompatSlot, Version: "1.0", Data: json.RawMessage(data)}
	return it
}

// referenceCases are data objects of every shape the reader must agree with gtc.References
// on; want is the URL list both must produce.
var referenceCases = []struct {
	name string
	data string
	want []string
}{
	{"plain", `{"references": [{"url": "https://a.example/1"}, {"url": "https://b.example/2", "title": "t"}]}`,
		[]string{"https://a.example/1", "https://b.example/2"}},
	{"url trimmed", `{"references": [{"url": "  https://a.example/1 \t"}, {"url": "\u00a0https://b.example/\u3000"}]}`,
		[]string{"https://a.example/1", "https://b.example/"}},
	{"escaped url", `{"references": [{"url": "https:\/\/a.example\/x?q=\"1\"&r=\u00e9\n"}]}`,
		[]string{"https://a.example/x?q=\"1\"&r=é"}},
	{"escaped surrogate pair and lone surrogate", `{"references": [{"url": "https://a.example/\ud83d\ude00/\ud800"}]}`,
		[]string{"https://a.example/😀/\ufffd"}},
	{"escaped whitespace is trimmed", `{"references": [{"url": "\t\n https://a.example/1\u2028"}]}`,
		[]string{"https://a.example/1"}},
	{"escaped key", `{"\u0072eferences": [{"\u0075rl": "https://a.example/1"}]}`, []string{"https://a.example/1"}},
	{"whitespace-only url skipped", `{"references": [{"url": "   "}, {"url": "\u0020\t"}, {"url": ""}, {"url": "https://a.example/1"}]}`,
		[]string{"https://a.example/1"}},
	{"bad entries skipped", `{"references": [1, null, "x", true, [], {"url": ""}, {"url": 3}, {"url": null}, {"url": {"href": "x"}}, {}, {"URL": "https://upper.example"}, {"url": "https://a.example/1"}]}`,
		[]string{"https://a.example/1"}},
	{"repeated url key: last wins", `{"references": [{"url": "https://first.example", "url": "https://last.example"}, {"url": "https://kept.example", "url": null}, {"url": 1, "url": "https://again.example"}]}`,
		[]string{"https://last.example", "https://again.example"}},
	{"repeated references key: last wins", `{"references": [{"url": "https://first.example"}], "references": [{"url": "https://last.example"}]}`,
		[]string{"https://last.example"}},
	{"repeated references key: last is null", `{"references": [{"url": "https://first.example"}], "references": null}`, []string{}},
	{"references null", `{"references": null}`, []string{}},
	{"references not an array", `{"references": {"url": "https://a.example/help"}}`, []string{}},
	{"references a string", `{"references": "https://a.example/help"}`, []string{}},
	{"references empty", `{"references": []}`, []string{}},
	{"no references key", `{"title": "x"}`, []string{}},
	{"legacy keys ignored", `{"refs": [{"url": "https://legacy.example"}], "retrievals": [{"url": "https://r.example"}], "totalReferences": 7, "nested": {"references": [{"url": "https://nested.example"}]}}`,
		[]string{}},
	{"legacy keys next to references", `{"refs": [{"url": "https://legacy.example"}], "references": [{"url": "https://a.example", "refs": [{"url": "https://inner.example"}]}]}`,
		[]string{"https://a.example"}},
	{"data null", `null`, []string{}},
	{"data an array", `[{"url": "https://a.example"}]`, []string{}},
	{"data a string", `"references"`, []string{}},
	{"invalid JSON: trailing garbage", `{"references": [{"url": "https://a.example"}]} x`, []string{}},
	{"invalid JSON: trailing comma", `{"references": [{"url": "https://a.example"},]}`, []string{}},
	{"invalid JSON elsewhere", `{"references": [{"url": "https://a.example"}], "n": 01}`, []string{}},
	{"invalid JSON: bad escape", `{"references": [{"url": "https://a.example"}], "x": "\q"}`, []string{}},
	{"invalid JSON: raw control character", "{\"references\": [{\"url\": \"https://a.example\"}], \"x\": \"a\tb\"}", []string{}},
	{"invalid JSON: truncated", `{"references": [{"url": "https://a.example"}]`, []string{}},
	{"invalid UTF-8 in url", "{\"references\": [{\"url\": \"https://a.example/\xff\"}]}", []string{"https://a.example/\ufffd"}},
	{"invalid UTF-8 elsewhere", "{\"references\": [{\"url\": \"https://a.example/\", \"title\": \"\xfe\"}]}", []string{"https://a.example/"}},
	{"non-ASCII url", `{"references": [{"url": " https://bücher.example/ä "}]}`, []string{"https://bücher.example/ä"}},
	{"numbers and literals", `{"a": -0.5e+10, "b": [true, false, null, 0, 12.25, 1E-3], "references": [{"url": "https://a.example", "bonus": true, "messageIndex": 2}]}`,
		[]string{"https://a.example"}},
	{"whitespace everywhere", " \n{ \"references\" :\t[ { \"url\" : \"https://a.example\" } , { } ] }\r\n", []string{"https://a.example"}},
	{"other value types of bonus and messageIndex", `{"references": [{"url": "https://a.example", "bonus": "yes", "messageIndex": 1.5, "title": 3}]}`,
		[]string{"https://a.example"}},
}

func TestReferenceURLsAgreesWithDomainReader(t *testing.T) {
	for _, tc := range referenceCases {
		t.Run(tc.name, func(t *testing.T) {
			it := ragItem(tc.data)
			got := referenceURLs(it)
			require.Equal(t, tc.want, oracleURLs(it), "the domain reader changed; this case no longer describes it")
			assert.Equal(t, tc.want, got)
			assert.NotNil(t, got)
			assert.Equal(t, gtc.ReferenceCount(it), len(NewInput(it).ReferenceURLs))
		})
	}
}

func TestReferenceURLsWithoutData(t *testing.T) {
	it := gtc.NewItem("support", "id")
	assert.Equal(t, []string{}, referenceURLs(it))
	it.Plugins[gtc.RAGCompatSlot] = gtc.PluginPayload{Kind: gtc.RAGCompatSlot}
	assert.Equal(t, []string{}, referenceURLs(it))
	assert.Equal(t, []string{}, referenceURLs(&gtc.Item{}))
}

func TestReferenceURLsNestingLimit(t *testing.T) {
	// encoding/json refuses documents nested deeper than 10000 levels; so must the reader.
	for _, depth := range []int{maxJSONDepth - 1, maxJSONDepth} {
		deep := strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1)
		data := `{"references": [{"url": "https://a.example"}], "deep": ` + deep + `}`
		it := ragItem(data)
		assert.Equal(t, oracleURLs(it), referenceURLs(it), "depth %d", depth)
	}
	over := `{"references": [{"url": "https://a.example"}], "deep": ` + strings.Repeat("[", maxJSONDepth) + strings.Repeat("]", maxJSONDepth) + `}`
	it := ragItem(over)
	assert.Empty(t, oracleURLs(it))
	assert.Empty(t, referenceURLs(it))
}

func TestReferenceURLsAllocations(t *testing.T) {
	it := benchItem()
	allocs := testing.AllocsPerRun(100, func() { _ = referenceURLs(it) })
	assert.LessOrEqual(t, allocs, 2.0, "one slice and one string for every URL")
}

func FuzzReferenceURLs(f *testing.F) {
	for _, tc := range referenceCases {
		f.Add([]byte(tc.data))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		it := ragItem(string(data))
		want, got := oracleURLs(it), referenceURLs(it)
		if !assert.ObjectsAreEqual(want, got) {
			t.Fatalf("data %q: gtc.References gives %q, the reader %q", data, want, got)
		}
	})
}
