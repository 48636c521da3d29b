package gtc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseJSONKeepsOrderAndLastDuplicate(t *testing.T) {
	v, err := parseJSON([]byte(` {"b": 1, "a": [true, null, "x\u00e9\ud83d\ude00"], "b": 2.50e3} `))
	require.NoError(t, err)
	require.Equal(t, jObject, v.kind)
	var got []string
	for m := v.members(); m.next(); {
		got = append(got, m.key.String()+"="+m.val.kind.String()+":"+string(v.doc.data[m.val.start:m.val.end]))
	}
	assert.Equal(t, []string{"b=number:2.50e3", `a=array:[true, null, "x\u00e9\ud83d\ude00"]`}, got,
		"a repeated key keeps its first position and takes the last value, literal kept")
	last, ok := v.get("b")
	require.True(t, ok)
	assert.Equal(t, "2.50e3", last.text())
	assert.Equal(t, `{"b":2.50e3,"a":[true,null,"xé😀"]}`, string(v.raw()))
}

func TestParseJSONRejects(t *testing.T) {
	for _, tc := range []struct{ in, err string }{
		{"", "invalid JSON at byte 0: unexpected end of input"},
		{" ", "invalid JSON at byte 1: unexpected end of input"},
		{"{", "invalid JSON at byte 1: expected a string key"},
		{"{\"a\":}", "invalid JSON at byte 5: unexpected character '}'"},
		{"[1,]", "invalid JSON at byte 3: unexpected character ']'"},
		{"{\"a\":1,}", "invalid JSON at byte 7: expected a string key"},
		{"01", "invalid JSON at byte 1: unexpected data after the top-level value"},
		{"1.", "invalid JSON at byte 2: invalid number"},
		{"-", "invalid JSON at byte 1: invalid number"},
		{"\"\\x\"", "invalid JSON at byte 2: invalid escape in a string"},
		{"\"a\x01\"", "invalid JSON at byte 2: control character in a string"},
		{"{} x", "invalid JSON at byte 3: unexpected data after the top-level value"},
		{"[1] [2]", "invalid JSON at byte 4: unexpected data after the top-level value"},
		{"\"\xff\"", "invalid JSON at byte 1: invalid UTF-8"},
		{"nul", "invalid JSON at byte 0: invalid literal"},
		{"{\"a\" 1}", "invalid JSON at byte 5: expected ':' after an object key"},
		{"'a'", "invalid JSON at byte 0: unexpected character '\\''"},
		{"[1 2]", "invalid JSON at byte 3: expected ',' or ']' in an array"},
		{"\"\\u12\"", "invalid JSON at byte 3: invalid \\u escape"},
		{"{\"a\":1 \"b\":2}", "invalid JSON at byte 7: expected ',' or '}' in an object"},
		{"[\"\\ud800\\u12\"]", "invalid JSON at byte 10: invalid \\u escape"},
		{"\"abc", "invalid JSON at byte 4: unexpected end of input in a string"},
		{"\"ab\\", "invalid JSON at byte 3: unexpected end of input in a string"},
		{"[1e]", "invalid JSON at byte 3: invalid number"},
		{"[-01]", "invalid JSON at byte 3: expected ',' or ']' in an array"},
		{"{1:2}", "invalid JSON at byte 1: expected a string key"},
		{"[\"ok\", \"\xc3(\"]", "invalid JSON at byte 8: invalid UTF-8"},
		{"[.5]", "invalid JSON at byte 1: unexpected character '.'"},
		{"[tru]", "invalid JSON at byte 1: invalid literal"},
		{"{\"a\":[1,2}", "invalid JSON at byte 9: expected ',' or ']' in an array"},
		{strings.Repeat("[", MaxJSONDepth+2) + strings.Repeat("]", MaxJSONDepth+2), "invalid JSON at byte 513: nesting deeper than 512 levels"},
		{strings.Repeat(`{"a":`, MaxJSONDepth+1) + "1" + strings.Repeat("}", MaxJSONDepth+1), "invalid JSON at byte 2565: nesting deeper than 512 levels"},
	} {
		_, err := parseJSON([]byte(tc.in))
		assert.EqualError(t, err, tc.err, "%.40q", tc.in)
	}
	_, err := parseJSON([]byte(strings.Repeat(`{"a":`, MaxJSONDepth) + "1" + strings.Repeat("}", MaxJSONDepth)))
	assert.NoError(t, err, "512 levels are allowed")
}

func TestWriteJSONStringEscapesMinimally(t *testing.T) {
	var b bytes.Buffer
	writeJSONString(&b, "a\"b\\c\n\t\x01<>&é\u2028")
	assert.Equal(t, `"a\"b\\c\n\t\u0001<>&é`+"\u2028"+`"`, b.String())
	var back string
	require.NoError(t, json.Unmarshal(b.Bytes(), &back))
	assert.Equal(t, "a\"b\\c\n\t\x01<>&é\u2028", back)
}

// FuzzParseJSON checks the parser against encoding/json: the same inputs are accepted (up to
// the depth limit), and what the parser writes back decodes to the same value.
func FuzzParseJSON(f *testing.F) {
	for _, s := range []string{`{}`, `[]`, `{"a":[1,2,{"b":null}]}`, `"\ud800"`, `1e400`, `-0.0`, `{"a":1,"a":2}`, `[[[]]]`, `"\u00e9"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := parseJSON(data)
		valid := json.Valid(data) && utf8.Valid(data)
		if err != nil {
			if valid && !strings.Contains(err.Error(), "nesting deeper") {
				t.Fatalf("rejected valid JSON %q: %v", data, err)
			}
			return
		}
		if !valid {
			t.Fatalf("accepted invalid JSON %q", data)
		}
		out := v.raw()
		var a, b any
		da := json.NewDecoder(bytes.NewReader(data))
		da.UseNumber()
		require.NoError(t, da.Decode(&a))
		db := json.NewDecoder(bytes.NewReader(out))
		db.UseNumber()
		require.NoError(t, db.Decode(&b), "re-encoded %q", out)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("round trip changed the value: %q → %q", data, out)
		}
	})
}

// repeatBodies have keys that repeat, as written or through escapes, at every level.
var repeatBodies = []string{
	`{"metadata":{"ab":1,"cd":2,"ab":3,"ef":{"x":1,"y":2,"x":[1,{"q":1,"r":2,"q":3}]},"\u0061b":4},` +
		`"comment":"a","comment":"b","zz":1,"yy":2,"zz":3,"history":[{"role":"u","msg":"m","role":"v","qq":1,"qq":2}]}`,
	`[{"id":"a","datasetName":"d","id":"b","traceIds":{"t1":"x","t2":"y","t1":"z"},` +
		`"plugins":{"p1":{"kind":"k","data":{"a":1,"a":2}},"p2":{"kind":"k"},"p1":{"kind":"k2"}},` +
		`"toolCalls":[{"name":"n","arguments":{"aa":1,"bb":2,"aa":[3]},"name":"m","xx":1,"xy":2,"xx":3}]}]`,
	`{"history":[{"role":"user","content":"c","msg":"m","msg":null,"expected_behavior":["a"],"expectedBehavior":null}],` +
		`"status":"draft","etag":"e","status":"approved"}`,
}

func decodeAll(t *testing.T, body string) []any {
	v, err := parseJSON([]byte(body))
	require.NoError(t, err)
	entries, ierr := DecodeImport([]byte(body))
	patch, perr := DecodeItemPatch([]byte(body), false)
	return []any{string(v.raw()), entries, ierr, patch, perr}
}

func TestRepeatedKeysKeepFirstPositionAndLastValue(t *testing.T) {
	v, err := parseJSON([]byte(repeatBodies[0]))
	require.NoError(t, err)
	md, ok := v.get("metadata")
	require.True(t, ok)
	assert.Equal(t, `{"ab":4,"cd":2,"ef":{"x":[1,{"q":3,"r":2}],"y":2}}`, string(md.raw()))

	_, err = DecodeItemPatch([]byte(repeatBodies[0]), false)
	ge, _ := AsError(err)
	require.NotNil(t, ge)
	assert.Equal(t, []FieldError{{"zz", "unknown field"}, {"yy", "unknown field"}, {"history[0].qq", "unknown field"}},
		ge.Fields, "a repeated unknown key is reported once, at its first position")

	p, err := DecodeItemPatch([]byte(repeatBodies[2]), false)
	require.NoError(t, err)
	assert.Equal(t, []string{"history", "status", "etag"}, p.Keys)
	assert.Equal(t, "approved", p.Status.V)
	require.Len(t, p.History.V, 1)
	assert.Equal(t, "c", *p.History.V[0].Msg, "msg is null, so content is the message")
	assert.False(t, p.History.V[0].ExpectedBehaviorSet, "expectedBehavior (null) wins over its alias")
}

// Objects whose keys may repeat are found by hashing keys; keys that hash alike but differ
// must still be told apart. With a hash that makes most keys collide, every result is the same.
func TestRepeatedKeysSurviveHashCollisions(t *testing.T) {
	var want [][]any
	for _, b := range repeatBodies {
		want = append(want, decodeAll(t, b))
	}
	real := hashBytes
	t.Cleanup(func() { hashBytes = real })
	hashBytes = func(b []byte) uint64 { return uint64(len(b)) }
	for i, b := range repeatBodies {
		v, err := parseJSON([]byte(b))
		require.NoError(t, err)
		require.NotEmpty(t, v.doc.repeats)
		assert.Equal(t, want[i], decodeAll(t, b), b)
	}
}

// A legitimate item of 10 MiB, a long conversation, decodes whole, free-form values included.
func TestLargeLegitItemDecodes(t *testing.T) {
	var b bytes.Buffer
	b.WriteString(`[{"id":"long","datasetName":"d","metadata":{"n":12345678901234567890,"s":"x\u00e9"},"history":[`)
	const turns = 40_000
	for i := range turns {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"role":"user","msg":"turn %d %s"}`, i, strings.Repeat("words ", 40))
	}
	b.WriteString(`]}]`)
	require.Greater(t, b.Len(), 10<<20)
	entries, err := DecodeImport(b.Bytes())
	require.NoError(t, err)
	require.Len(t, entries, 1)
	it := entries[0].Item
	require.Len(t, it.History, turns)
	assert.Equal(t, "turn 39999 "+strings.TrimSpace(strings.Repeat("words ", 40)), it.History[turns-1].Msg)
	assert.Equal(t, `{"n":12345678901234567890,"s":"xé"}`, string(it.Metadata))
}
