package gtc

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func U(m string) HistoryEntry { return HistoryEntry{Role: "user", Msg: m} }
func A(m string) HistoryEntry { return HistoryEntry{Role: "assistant", Msg: m} }

func withRefs(it *Item, data string) *Item {
	it.Plugins[RAGCompatSlot] = PluginPayload{Kind: RAGCompatSlot, Version: "1.0", Data: json.RawMessage(data)}
	return it
}

func TestApprovalRules(t *testing.T) {
	oneRef := `{"references":[{"url":"https://a.example/1"}]}`
	msg5 := "expectedTools.required references toolCalls that do not exist: "
	cases := []struct {
		name string
		item func() *Item
		want []string
	}{
		{"empty history", func() *Item { return NewItem("d", "i") }, []string{MsgApprovalNoHistory}},
		{"empty history with references", func() *Item { return withRefs(NewItem("d", "i"), oneRef) }, []string{MsgApprovalNoHistory}},
		{"question only", func() *Item { it := NewItem("d", "i"); it.History = []HistoryEntry{U("q")}; return it }, []string{MsgApprovalNoAgentTurn}},
		{"question and a reference", func() *Item {
			it := NewItem("d", "i")
			it.History = []HistoryEntry{U("q")}
			return withRefs(it, oneRef)
		}, nil},
		{"legacy totalReferences is not read", func() *Item {
			it := NewItem("d", "i")
			it.History = []HistoryEntry{U("q")}
			return withRefs(it, `{"totalReferences": 2}`)
		}, []string{MsgApprovalNoAgentTurn}},
		{"answer only with a reference", func() *Item {
			it := NewItem("d", "i")
			it.History = []HistoryEntry{A("a")}
			return withRefs(it, oneRef)
		}, []string{MsgApprovalNoUserTurn}},
		{"planner counts as agent", func() *Item {
			it := NewItem("d", "i")
			it.History = []HistoryEntry{U("q"), {Role: "planner", Msg: "p"}}
			return it
		}, nil},
		{"tool calls without required", func() *Item {
			it := NewItem("d", "i")
			it.History = []HistoryEntry{U("q"), A("a")}
			it.ToolCalls = []ToolCall{{Name: "search"}}
			return it
		}, []string{MsgApprovalNoRequiredTool}},
		{"waived by a reference", func() *Item {
			it := NewItem("d", "i")
			it.History = []HistoryEntry{U("q"), A("a")}
			it.ToolCalls = []ToolCall{{Name: "search"}}
			return withRefs(it, oneRef)
		}, nil},
		{"waived by canBypassRequiredTools", func() *Item {
			it := NewItem("d", "i")
			it.History = []HistoryEntry{U("q"), A("a")}
			it.ToolCalls = []ToolCall{{Name: "search"}}
			it.Plugins["custom"] = PluginPayload{Kind: "custom", Data: json.RawMessage(`{"canBypassRequiredTools": true}`)}
			return it
		}, nil},
		{"bypass must be JSON true", func() *Item {
			it := NewItem("d", "i")
			it.History = []HistoryEntry{U("q"), A("a")}
			it.ToolCalls = []ToolCall{{Name: "search"}}
			it.Plugins["custom"] = PluginPayload{Kind: "custom", Data: json.RawMessage(`{"canBypassRequiredTools": "true"}`)}
			return it
		}, []string{MsgApprovalNoRequiredTool}},
		{"unknown required tools, sorted", func() *Item {
			it := NewItem("d", "i")
			it.History = []HistoryEntry{U("q"), A("a")}
			it.ToolCalls = []ToolCall{{Name: "search"}}
			it.ExpectedTools.Required = []ToolExpectation{{Name: "search"}, {Name: "fetch"}, {Name: "a-tool"}}
			return it
		}, []string{msg5 + "a-tool, fetch"}},
		{"required without tool calls", func() *Item {
			it := NewItem("d", "i")
			it.History = []HistoryEntry{U("q"), A("a")}
			it.ExpectedTools.Required = []ToolExpectation{{Name: "x"}}
			return it
		}, []string{msg5 + "x"}},
		{"all good", func() *Item {
			it := NewItem("d", "i")
			it.History = []HistoryEntry{U("q"), A("a")}
			it.ToolCalls = []ToolCall{{Name: "search"}}
			it.ExpectedTools.Required = []ToolExpectation{{Name: "search"}}
			return it
		}, nil},
	}
	for _, tc := range cases {
		var got []string
		for _, e := range ApprovalErrors(tc.item()) {
			got = append(got, e.Message)
		}
		assert.Equal(t, tc.want, got, tc.name)
	}
}

func TestQuestionAnswerDerivation(t *testing.T) {
	it := NewItem("d", "i")
	it.History = []HistoryEntry{U("Initial"), {Role: "planner", Msg: "Draft"}, U("Follow-up"), A("Final")}
	assert.Equal(t, "Follow-up", QuestionText(it))
	assert.Equal(t, "Final", AnswerText(it))
	it.History = []HistoryEntry{U("q"), A("NO_ANSWER"), U("q2"), {Role: "tool", Msg: "result"}, {Role: " USER ", Msg: "  "}}
	assert.Equal(t, "q2", QuestionText(it), "a blank user turn is skipped")
	assert.Equal(t, "result", AnswerText(it))
}

// uuidV5 computes a name-based UUID from first principles, independently of the library.
func uuidV5(ns, name string) string {
	nsb, _ := hex.DecodeString(strings.ReplaceAll(ns, "-", ""))
	h := sha1.Sum(append(nsb, name...))
	b := h[:16]
	b[6] = b[6]&0x0f | 0x50
	b[8] = b[8]&0x3f | 0x80
	s := hex.EncodeToString(b)
	return s[0:8] + "-" + s[8:12] + "-" + s[12:16] + "-" + s[16:20] + "-" + s[20:]
}

func TestDeriveBucket(t *testing.T) {
	for _, tc := range []struct{ ds, id string }{{"support", "gt-001"}, {"DS One", "sleek-voxel"}, {"x", ""}, {"日本", "ü"}} {
		h := fnv.New32a()
		h.Write([]byte(tc.id))
		want := uuidV5("6edbeb1e-b0a9-4f2c-9671-e01729dbbce3", fmt.Sprintf("%s#%d", tc.ds, h.Sum32()%5))
		assert.Equal(t, want, DeriveBucket(tc.ds, tc.id))
		assert.True(t, IsCanonicalUUID(DeriveBucket(tc.ds, tc.id)))
	}
	seen := map[string]bool{}
	for i := 0; i < 200; i++ {
		seen[DeriveBucket("support", fmt.Sprint(i))] = true
	}
	assert.Len(t, seen, BucketCount, "a dataset spreads over exactly K buckets")
}

func TestParseUUID(t *testing.T) {
	for in, want := range map[string]string{
		"3F0E9A57-55C1-5D0B-9A3E-6B1F9F2D7C10": "3f0e9a57-55c1-5d0b-9a3e-6b1f9f2d7c10",
		"3f0e9a5755c15d0b9a3e6b1f9f2d7c10":     "3f0e9a57-55c1-5d0b-9a3e-6b1f9f2d7c10",
	} {
		got, ok := ParseUUID(in)
		assert.True(t, ok, in)
		assert.Equal(t, want, got)
	}
	for _, bad := range []string{"", "3f0e9a57-55c1-5d0b-9a3e-6b1f9f2d7c1", "3f0e9a5755c1-5d0b-9a3e-6b1f9f2d7c10x", "zf0e9a5755c15d0b9a3e6b1f9f2d7c10", "3f0e9a57_55c1_5d0b_9a3e_6b1f9f2d7c10"} {
		_, ok := ParseUUID(bad)
		assert.False(t, ok, bad)
	}
}

// seqReader yields a fixed byte sequence, then repeats it, so draws are predictable.
type seqReader struct {
	data []byte
	pos  int
}

func (r *seqReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = r.data[r.pos%len(r.data)]
		r.pos++
	}
	return len(p), nil
}

func TestIDGenerator(t *testing.T) {
	// A source of zeros draws the same words every time.
	g := NewIDGenerator(&seqReader{data: []byte{0}})
	first := g.New(func(string) bool { return false })
	assert.Regexp(t, `^[a-z]+-[a-z]+$`, first)
	// Every two-word draw collides: after 5 draws, 4 hex digits are appended.
	draws := 0
	id := g.New(func(s string) bool { draws++; return s == first })
	assert.Equal(t, first+"-0000", id)
	assert.Equal(t, 6, draws, "five word draws, then the suffixed one")
	g = NewIDGenerator(&seqReader{data: []byte{1, 2, 3, 4, 5, 6, 7, 8, 9}})
	assert.NotEqual(t, g.New(func(string) bool { return false }), g.New(func(string) bool { return false }))
}

func TestETags(t *testing.T) {
	tok := NewETag(bytes.NewReader(bytes.Repeat([]byte{0xfe}, 16)))
	assert.Equal(t, `"`+strings.Repeat("fe", 16)+`"`, tok)
	assert.True(t, SameETag(tok, strings.Trim(tok, `"`)))
	assert.True(t, SameETag("W/"+tok, tok))
	assert.False(t, SameETag("*", tok))
	assert.False(t, SameETag(`"a","b"`, `"a"`))
	assert.Equal(t, `"abc"`, ETagHeader("abc"))
	assert.Equal(t, `"abc"`, ETagHeader(`"abc"`))
}

func TestParseTime(t *testing.T) {
	for in, want := range map[string]string{
		"2025-01-02T10:00:00Z":                "2025-01-02T10:00:00.000000Z",
		"2025-01-02T11:00:00+01:00":           "2025-01-02T10:00:00.000000Z",
		"2025-01-02T10:00:00.1234567891Z":     "2025-01-02T10:00:00.123456Z",
		"2025-01-02T10:00:00":                 "2025-01-02T10:00:00.000000Z",
		"2025-01-02T10:00:00.5":               "2025-01-02T10:00:00.500000Z",
		"2025-01-01T23:30:00.000000001-00:45": "2025-01-02T00:15:00.000000Z",
	} {
		got, err := ParseTime(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, FormatStoredTime(got), in)
	}
	for _, bad := range []string{"", "yesterday", "2025-13-01T00:00:00Z", "2025-01-02", "0000-01-01T00:00:00Z"} {
		_, err := ParseTime(bad)
		assert.Error(t, err, bad)
	}
	assert.Equal(t, "2025-01-02T10:00:00.123Z", FormatAPITime(time.Date(2025, 1, 2, 10, 0, 0, 123456000, time.UTC)))
}

func TestDeriveSortKeys(t *testing.T) {
	it := NewItem("d", "id1")
	it.UpdatedAt = time.Date(2025, 1, 2, 3, 4, 5, 678901000, time.UTC)
	it.History = []HistoryEntry{U("Äpfel"), A("yes")}
	it.Comment = "Note"
	withRefs(it, `{"references":[{"url":" https://X.example/a ","title":"Title"},{"title":"no url"}]}`)
	it.ManualTags = []string{"a:b"}
	it.ComputedTags = []string{"dataset:d", "a:b"}
	f := Derive(it)
	assert.Equal(t, "00000000000000000000"+"20250102030405678901"+"id1", f.SK.ReviewedAt)
	assert.Equal(t, "20250102030405678901"+"id1", f.SK.UpdatedAt)
	assert.Equal(t, "1"+f.SK.ReviewedAt, f.SK.HasAnswer)
	assert.Equal(t, "000002id1", f.SK.TagCount)
	assert.Equal(t, "000001id1", f.SK.References, "a reference without url is not counted")
	assert.Equal(t, "79749897969594321098id1", f.SK.Recent)
	assert.Equal(t, "https://X.example/a", f.RefURLs)
	assert.Equal(t, "id1\x1fd\x1fnote\x1fäpfel\x1fyes\x1fhttps://x.example/a\x1ftitle\x1f\x1f", f.SearchText)
	newer := Derive(&Item{ID: "id1", UpdatedAt: it.UpdatedAt.Add(time.Microsecond)})
	assert.Less(t, newer.SK.Recent, f.SK.Recent, "a newer update sorts first in the recent order")
}
