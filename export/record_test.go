package export

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
)

// stdJSON is what encoding/json writes for v with HTML escaping off, its strings then
// written in jsontext's minimal escaping: the reference the record encoding must match byte
// for byte.
func stdJSON(t testing.TB, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(v))
	out, err := jsontext.AppendFormat(nil, bytes.TrimSuffix(b.Bytes(), []byte("\n")))
	require.NoError(t, err)
	return out
}

var trickyStrings = []string{
	"", "plain", `quote " and \ backslash`, "<b>&amp;</b>", "tab\tnew\nline\rcr", "\b\f\x00\x01\x1f\x7f",
	"é ü 漢字 🙂", "line\u2028sep\u2029para", "bad \xff utf8 \xc3", "/slash/", "\u00e9", strings.Repeat("x", 300),
}

func randValue(r *rand.Rand, depth int) any {
	k := r.IntN(8)
	if depth > 3 {
		k = r.IntN(4)
	}
	switch k {
	case 0:
		return nil
	case 1:
		return r.IntN(2) == 0
	case 2:
		return json.Number([]string{"0", "-1", "12345678901234567890", "3.25", "1e-7", "-0.5E+10"}[r.IntN(6)])
	case 3:
		return trickyStrings[r.IntN(len(trickyStrings))] + strconv.Itoa(r.IntN(3))
	case 4, 5:
		m := map[string]any{}
		for i := 0; i < r.IntN(6); i++ {
			m[trickyStrings[r.IntN(len(trickyStrings))]+strconv.Itoa(i)] = randValue(r, depth+1)
		}
		return m
	default:
		a := []any{}
		for i := 0; i < r.IntN(5); i++ {
			a = append(a, randValue(r, depth+1))
		}
		return a
	}
}

func TestAppendJSONMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		v := randValue(r, 0)
		got, err := AppendJSON(nil, v)
		require.NoError(t, err)
		require.Equal(t, string(stdJSON(t, v)), string(got), "value %#v", v)
	}
}

func TestAppendJSONRefusesBadNumbers(t *testing.T) {
	_, err := AppendJSON(nil, map[string]any{"n": json.Number("12abc")})
	assert.Error(t, err)
}

func TestDecodeJSONMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 2000; i++ {
		data := stdJSON(t, randValue(r, 0))
		// Escapes encoding/json never writes, and whitespace, must decode the same too.
		data = bytes.ReplaceAll(data, []byte(`\u00e9`), []byte(`\u00E9`))
		data = bytes.ReplaceAll(data, []byte(`:`), []byte(" : "))
		var want any
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		require.NoError(t, dec.Decode(&want))
		got, err := DecodeJSON(data)
		require.NoError(t, err, "%s", data)
		require.Equal(t, want, got, "%s", data)
	}
	for _, doc := range []string{`"\ud83d\ude42 \ud800 x"`, `{"a":1,"a":2}`, `"\/"`} {
		var want any
		dec := json.NewDecoder(strings.NewReader(doc))
		dec.UseNumber()
		require.NoError(t, dec.Decode(&want))
		got, err := DecodeJSON([]byte(doc))
		require.NoError(t, err)
		assert.Equal(t, want, got, doc)
	}
}

func TestDecodeJSONRejectsInvalidInput(t *testing.T) {
	for _, doc := range []string{``, `{`, `{"a"}`, `[1,]`, `01`, `1.`, `"\x"`, "\"a\x01\"", `tru`, `{} x`, `{"a":1,}`} {
		_, err := DecodeJSON([]byte(doc))
		assert.Error(t, err, doc)
	}
}

// canonicalOf runs the fast path's canonicalizer on one JSON document.
func canonicalOf(t testing.TB, doc []byte) ([]byte, error) {
	var c canon
	return c.canonical(nil, doc)
}

func TestCanonicalMatchesRecordEncoding(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 2000; i++ {
		doc := stdJSON(t, randValue(r, 0))
		decoded, err := DecodeJSON(doc)
		require.NoError(t, err)
		got, err := canonicalOf(t, doc)
		require.NoError(t, err)
		require.Equal(t, string(stdJSON(t, decoded)), string(got))
	}
	// Unsorted keys, repeated keys, escapes encoding/json would not write.
	for doc, want := range map[string]string{
		`{"b":1,"a":{"d":[true,false,null],"c":"x"}}`: `{"a":{"c":"x","d":[true,false,null]},"b":1}`,
		`{"a":1,"b":2,"a":3}`:                         `{"a":3,"b":2}`,
		`{"\u0062":"\u003c\u00e9\/"}`:                 `{"b":"<é/"}`,
		`["\u2028", "\b", "\u0008"]`:                  "[\"\u2028\",\"\\b\",\"\\b\"]",
		`{"k\u0000":1,"k":2}`:                         `{"k":2,"k\u0000":1}`,
		// Keys in byte (code point) order, which is the decoded record's: U+FF71 before
		// U+1F600, where UTF-16 order (jsontext.ReorderRawObjects) would put it after.
		`{"\ud83d\ude00":1,"\uff71":2,"a":{"\ud83d\ude00":3,"\uff71":4}}`: "{\"a\":{\"\uff71\":4,\"\U0001F600\":3},\"\uff71\":2,\"\U0001F600\":1}",
		`{"a":1,"a":2,"b":{"c":1,"c":[]}}`:                                `{"a":2,"b":{"c":[]}}`,
		`"bad \ud800 surrogate"`:                                          "\"bad \uFFFD surrogate\"",
	} {
		got, err := canonicalOf(t, []byte(doc))
		require.NoError(t, err)
		assert.Equal(t, want, string(got), doc)
		// The general path (decoded into maps, encoded again) writes the same bytes.
		v, err := DecodeJSON([]byte(doc))
		require.NoError(t, err)
		viaMaps, err := AppendJSON(nil, v)
		require.NoError(t, err)
		assert.Equal(t, want, string(viaMaps), doc)
	}
}

func FuzzCanonical(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[1,2,{"z":null,"y":"\u00e9"}]}`, `"\ud800"`, `[]`, `{"a":1,"a":2}`, `-0.5e3`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		v, err := DecodeJSON(doc)
		if err != nil {
			return
		}
		want, err := AppendJSON(nil, v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := canonicalOf(t, doc)
		if err != nil {
			t.Fatalf("canonical failed on a valid document %q: %v", doc, err)
		}
		if !bytes.Equal(want, got) {
			t.Fatalf("canonical %q, decoded and encoded %q", got, want)
		}
	})
}

// oddItem is an item whose free-form parts hold everything the encodings must agree on.
func oddItem() *gtc.Item {
	it := fixtureItem("ds<&>", 42, gtc.StatusApproved)
	it.ID = "gt/é 42"
	it.Metadata = json.RawMessage(`{"z":1,"a":{"y":null,"x":[3.25,-1e-7,123456789012345678901234567890]},"s":"<tag>&\u2028","bad":"\ud800"}`)
	it.TracePayload = json.RawMessage(`{"b":{"d":1,"c":2},"a":"line\nbreak\b"}`)
	it.History[0].Msg = "tab\there \x7f del"
	it.Comment = ""
	it.AssignedTo = nil
	return it
}

func TestFastPathMatchesRecordPath(t *testing.T) {
	pr, _ := Builtins([]string{"_etag", "comment", "plugins"})
	chains := [][]Processor{nil, {MergeTags{}}, {mustLookup(pr, "strip_internal"), MergeTags{}}}
	refsItem := func(data string) *gtc.Item {
		it := fixtureItem("refs", 7, gtc.StatusApproved)
		it.Plugins[gtc.RAGCompatSlot] = gtc.PluginPayload{Kind: gtc.RAGCompatSlot, Version: "1.0", Data: json.RawMessage(data)}
		it.Plugins["other"] = gtc.PluginPayload{Kind: "other", Data: json.RawMessage(`{"references":[{"url":"https://not.counted"}]}`)}
		return it
	}
	items := []*gtc.Item{oddItem(),
		refsItem(`{"references":[1,"x",{"url":7},{"url":"  "},{"title":"no url"},{"url":"\u0020https://a.example/\u00e9 ","z":{"b":1,"a":2}},{"url":"https://b.example","url2":null}],"extra":{"references":[]}}`),
		refsItem(`{"references":{"url":"https://not.a.list"}}`),
		refsItem(`{"refs":[{"url":"https://legacy.key"}]}`),
		refsItem(`{"references":[]}`),
	}
	for i := 0; i < 50; i++ {
		items = append(items, fixtureItem("support", i, gtc.StatusApproved))
	}
	ctx := context.Background()
	for _, chain := range chains {
		require.True(t, fastChain(chain))
		for _, it := range items {
			var scratch bytes.Buffer
			rec, err := BuildRecord(it, &scratch)
			require.NoError(t, err)
			out, err := ApplyAll(ctx, chain, []Record{rec})
			require.NoError(t, err)
			require.Len(t, out, 1)
			require.NoError(t, project(out[0]))
			want, err := AppendJSON(nil, out[0])
			require.NoError(t, err)

			var c canon
			raw, err := buildDirect(it, &c)
			require.NoError(t, err)
			for _, p := range chain {
				require.NoError(t, p.(fieldProcessor).apply(raw, it.ID))
			}
			require.NoError(t, raw.projectRaw())
			assert.Equal(t, string(want), string(raw.appendTo(nil)), "item %s", it.ID)
		}
	}
}

func TestBuildRecordDropsTopLevelNullsOnly(t *testing.T) {
	it := oddItem()
	var scratch bytes.Buffer
	rec, err := BuildRecord(it, &scratch)
	require.NoError(t, err)
	_, has := rec["assignedTo"]
	assert.False(t, has, "a null top-level key is dropped")
	meta := rec["metadata"].(map[string]any)
	a := meta["a"].(map[string]any)
	v, has := a["y"]
	assert.True(t, has, "a nested null is user data and stays")
	assert.Nil(t, v)
	assert.Equal(t, json.Number("123456789012345678901234567890"), a["x"].([]any)[2], "large integers keep their digits")
	assert.NotEmpty(t, rec["_etag"] != nil)
}

func mustLookup(r *ProcessorRegistry, name string) Processor {
	p, ok := r.Lookup(name)
	if !ok {
		panic(name)
	}
	return p
}

// randomItem fills every field of an item, with nulls, empties and odd text mixed in.
func randomItem(r *rand.Rand, i int) *gtc.Item {
	pick := func(ss ...string) string { return ss[r.IntN(len(ss))] }
	str := func() string { return trickyStrings[r.IntN(len(trickyStrings))] }
	ptr := func() *string {
		if r.IntN(3) == 0 {
			return nil
		}
		s := str()
		return &s
	}
	raw := func() json.RawMessage {
		switch r.IntN(5) {
		case 0:
			return nil
		case 1:
			return json.RawMessage("null")
		}
		b, _ := json.Marshal(randValue(r, 1))
		if r.IntN(2) == 0 {
			b = []byte(`{"z":` + string(b) + `,"a":[1,{"y":2,"b":"\u00e9"}]}`)
		}
		return b
	}
	obj := func() json.RawMessage {
		if r.IntN(4) == 0 {
			return nil
		}
		return json.RawMessage(`{"b":` + strconv.Itoa(r.IntN(9)) + `,"a":{"d":null,"c":"` + pick("x", "<&>", "\\u2028") + `"}}`)
	}
	it := &gtc.Item{ID: fmt.Sprintf("it-%d-%s", i, pick("", "é", " ")), DatasetName: pick("a", "b<c>"), Bucket: pick("", "6f1c3d2e-0000-4000-8000-000000000001"),
		Status: gtc.Status(pick("", "draft", "approved")), DocType: pick("", "ground-truth-item"), SchemaVersion: pick("", "v2"),
		Comment: str(), AssignedTo: ptr(), UpdatedBy: ptr(), CreatedBy: ptr(), ETag: pick("", `"abc"`), ScenarioID: str(),
		Metadata: obj(), TracePayload: obj(), UpdatedAt: fixtureNow.Add(time.Duration(r.IntN(1e6)) * time.Second)}
	if r.IntN(2) == 0 {
		t := fixtureNow
		it.AssignedAt, it.ReviewedAt, it.CreatedAt = &t, &t, &t
	}
	for range r.IntN(3) {
		it.ManualTags = append(it.ManualTags, "g:"+str())
		it.ComputedTags = append(it.ComputedTags, "c:"+str())
	}
	for range r.IntN(4) {
		h := gtc.HistoryEntry{Role: pick("user", "assistant", "User "), Msg: str(), TurnID: ptr(), StepID: ptr()}
		if r.IntN(2) == 0 {
			h.ExpectedBehavior = []string{}
			if r.IntN(2) == 0 {
				h.ExpectedBehavior = append(h.ExpectedBehavior, str())
			}
		}
		it.History = append(it.History, h)
	}
	for range r.IntN(3) {
		it.ContextEntries = append(it.ContextEntries, gtc.ContextEntry{Key: str(), Value: raw()})
	}
	for k := range r.IntN(3) {
		tc := gtc.ToolCall{ID: str(), Name: str(), CallType: pick("", "tool", "subagent"), Arguments: raw(), Agent: ptr(), ParallelGroup: ptr(), ParentCallID: ptr(), Response: raw()}
		if r.IntN(2) == 0 {
			n := int64(k - 1)
			tc.StepNumber = &n
		}
		it.ToolCalls = append(it.ToolCalls, tc)
	}
	for range r.IntN(2) {
		it.ExpectedTools.Required = append(it.ExpectedTools.Required, gtc.ToolExpectation{Name: str(), Arguments: raw()})
		it.ExpectedTools.NotNeeded = append(it.ExpectedTools.NotNeeded, gtc.ToolExpectation{Name: str()})
	}
	for range r.IntN(2) {
		it.Feedback = append(it.Feedback, gtc.FeedbackEntry{Source: str(), Values: obj()})
	}
	if r.IntN(3) > 0 {
		it.Plugins = map[string]gtc.PluginPayload{pick("rag-compat", "x y"): {Kind: str(), Version: pick("", "2.0"), Data: obj()}, "a": {Kind: "k"}}
	}
	if r.IntN(2) == 0 {
		it.TraceIDs = map[string]string{str(): str(), "traceId": "t"}
	}
	return it
}

// variedItems are an item with every field filled (oddItem), a new item, fixtures approved
// fixture items, then random items drawn from r.
func variedItems(fixtures, random int, r *rand.Rand) []*gtc.Item {
	items := []*gtc.Item{oddItem(), gtc.NewItem("d", "new")}
	for i := range fixtures {
		items = append(items, fixtureItem("support", i, gtc.StatusApproved))
	}
	for i := range random {
		items = append(items, randomItem(r, i))
	}
	return items
}

// TestDirectMatchesReference holds the fast path's record to the general path's (the
// item's API JSON decoded into maps and encoded again) for items with every field filled.
func TestDirectMatchesReference(t *testing.T) {
	items := variedItems(30, 3000, rand.New(rand.NewPCG(11, 12)))
	var c canon
	for _, it := range items {
		var scratch bytes.Buffer
		rec, err := BuildRecord(it, &scratch)
		require.NoError(t, err)
		want, err := AppendJSON(nil, rec)
		require.NoError(t, err)
		got, err := buildDirect(it, &c)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got.appendTo(nil)), "item %q", it.ID)
	}
}
