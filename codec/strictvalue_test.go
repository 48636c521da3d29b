package codec

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

	"github.com/gtc-dev/gtc"
)

func TestParseJSONKeepsOrderAndLastDuplicate(t *testing.T) {
	v, err := parseJSON([]byte(` {"b": 1, "a": [true, null, "x\u00e9\ud83d\ude00"], "b": 2.50e3} `))
	require.NoError(t, err)
	require.Equal(t, Object, v.kind)
	var got []string
	for m := v.Members(); m.Next(); {
		got = append(got, m.Key.String()+"="+m.Val.kind.String()+":"+string(m.Val.bytes()))
	}
	assert.Equal(t, []string{"b=number:2.50e3", `a=array:[true, null, "x\u00e9\ud83d\ude00"]`}, got,
		"a repeated key keeps its first position and takes the last value, literal kept")
	last, ok := v.Get("b")
	require.True(t, ok)
	assert.Equal(t, "2.50e3", last.Text())
	assert.Equal(t, `{"b":2.50e3,"a":[true,null,"xé😀"]}`, string(v.Raw()))
}

// A body that is not JSON is refused with the message of jsontext, which says what is wrong
// and where; a body cut short says so in words of its own, not io.ErrUnexpectedEOF's.
func TestParseJSONRejects(t *testing.T) {
	for _, tc := range []struct{ in, err string }{
		{"", "jsontext: unexpected end of input"},
		{" ", "jsontext: unexpected end of input after offset 1"},
		{"{", "jsontext: unexpected end of input after offset 1"},
		{"{\"a\":}", "jsontext: missing value after object name within \"/a\" after offset 5"},
		{"[1,]", "jsontext: invalid character ',' at start of value after offset 2"},
		{"{\"a\":1,}", "jsontext: invalid character ',' at start of value after offset 6"},
		{"01", "jsontext: invalid character '1' after top-level value after offset 1"},
		{"1.", "jsontext: unexpected end of input"},
		{"-", "jsontext: unexpected end of input"},
		{"\"\\x\"", "jsontext: invalid escape sequence `\\x` in string after offset 1"},
		{"\"a\x01\"", "jsontext: invalid character '\\x01' in string (expecting non-control character) after offset 2"},
		{"{} x", "jsontext: invalid character 'x' after top-level value after offset 3"},
		{"[1] [2]", "jsontext: invalid character '[' after top-level value after offset 4"},
		{"nul", "jsontext: unexpected end of input after offset 3"},
		{"{\"a\" 1}", "jsontext: invalid character '1' after object name (expecting ':') within \"/a\" after offset 5"},
		{"'a'", "jsontext: invalid character '\\'' at start of value"},
		{"[1 2]", "jsontext: invalid character '2' after array element (expecting ',' or ']') after offset 3"},
		{"\"\\u12\"", "jsontext: invalid escape sequence `\\u12\"` in string after offset 1"},
		{"{\"a\":1 \"b\":2}", "jsontext: invalid character '\"' after object value (expecting ',' or '}') after offset 7"},
		{"\"abc", "jsontext: unexpected end of input after offset 4"},
		{"[1e]", "jsontext: invalid character ']' in number (expecting digit) within \"/0\" after offset 3"},
		{"[-01]", "jsontext: invalid character '1' after array element (expecting ',' or ']') after offset 3"},
		{"{1:2}", "jsontext: object member name must be a string after offset 1"},
		{"[tru]", "jsontext: invalid character ']' in literal true (expecting 'e') within \"/0\" after offset 4"},
		{"{\"a\":[1,2}", "jsontext: invalid character '}' after array element (expecting ',' or ']') within \"/a\" after offset 9"},
		// Invalid UTF-8, as bytes or as an escaped lone surrogate.
		{"\"\xff\"", "jsontext: invalid UTF-8 after offset 1"},
		{"[\"ok\", \"\xc3(\"]", "jsontext: invalid UTF-8 within \"/1\" after offset 8"},
		{`"\ud800"`, "jsontext: invalid surrogate pair `\\ud800\"` in string after offset 1"},
		{"[\"\\ud800\\u12\"]", "jsontext: invalid surrogate pair `\\ud800\\u12\"]` in string within \"/0\" after offset 2"},
	} {
		_, err := parseJSON([]byte(tc.in))
		assert.Equal(t, tc.err, syntaxMessage(err), "%.40q", tc.in)
	}
}

// Nesting is bounded at MaxJSONDepth levels, well below what jsontext itself allows.
func TestParseJSONBoundsTheDepth(t *testing.T) {
	ok := strings.Repeat(`{"a":[`, MaxJSONDepth/2) + "1" + strings.Repeat("]}", MaxJSONDepth/2)
	_, err := parseJSON([]byte(ok))
	assert.NoError(t, err, "512 levels are allowed")

	for _, tc := range []struct{ in, at string }{
		{strings.Repeat("[", MaxJSONDepth+1) + strings.Repeat("]", MaxJSONDepth+1), "after offset 512"},
		{strings.Repeat(`{"a":`, MaxJSONDepth+1) + "1" + strings.Repeat("}", MaxJSONDepth+1), "after offset 2560"},
		{`{"metadata":` + strings.Repeat("[", 20_000), "after offset 523"},
	} {
		_, err := parseJSON([]byte(tc.in))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "jsontext: exceeded max depth of 512 within")
		assert.Contains(t, err.Error(), tc.at)
	}

	// The request decoders refuse it as a body that is not JSON.
	_, err = DecodeItemObject([]byte(`{"metadata":` + strings.Repeat("[", MaxJSONDepth) + strings.Repeat("]", MaxJSONDepth) + `}`))
	ge, isErr := gtc.AsError(err)
	require.True(t, isErr, "%v", err)
	assert.Equal(t, gtc.CodeInvalidJSON, ge.Code)
	require.Len(t, ge.Fields, 1)
	assert.Equal(t, "body", ge.Fields[0].Field)
	assert.True(t, strings.HasPrefix(ge.Fields[0].Message, "jsontext: exceeded max depth of 512 within \"/metadata/0/0/"), ge.Fields[0].Message)
	assert.Equal(t, "Request validation failed: body: "+ge.Fields[0].Message, ge.Message)
}

// Invalid UTF-8 anywhere in a body, in a key or a free-form value included, refuses it.
func TestInvalidUTF8IsInvalidJSON(t *testing.T) {
	for _, body := range []string{
		"{\"comment\":\"caf\xe9\"}",
		"{\"metadata\":{\"k\xff\":1}}",
		`{"metadata":{"k":"\udc00"}}`,
	} {
		_, err := DecodeItemObject([]byte(body))
		ge, ok := gtc.AsError(err)
		require.True(t, ok, "%q: %v", body, err)
		assert.Equal(t, gtc.CodeInvalidJSON, ge.Code, body)
		require.Len(t, ge.Fields, 1)
		assert.Equal(t, "body", ge.Fields[0].Field)
		assert.Contains(t, ge.Fields[0].Message, "jsontext: invalid ")
	}
}

// FuzzParseJSON checks the parser against encoding/json: the same inputs are accepted (up to
// the depth limit, lone surrogates aside), and what the parser writes back decodes to the
// same value.
func FuzzParseJSON(f *testing.F) {
	for _, s := range []string{`{}`, `[]`, `{"a":[1,2,{"b":null}]}`, `"\ud83d\ude00"`, `1e400`, `-0.0`, `{"a":1,"a":2}`, `[[[]]]`, `"\u00e9"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := parseJSON(data)
		valid := json.Valid(data) && utf8.Valid(data)
		if err != nil {
			// encoding/json accepts an escaped lone surrogate; jsontext refuses it as
			// invalid UTF-8.
			if valid && !strings.Contains(err.Error(), "max depth") && !strings.Contains(err.Error(), "surrogate") {
				t.Fatalf("rejected valid JSON %q: %v", data, err)
			}
			return
		}
		if !valid {
			t.Fatalf("accepted invalid JSON %q", data)
		}
		out := v.Raw()
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
	item, oerr := DecodeItemObject([]byte(body))
	return []any{string(v.Raw()), entries, ierr, item, oerr}
}

func TestRepeatedKeysKeepFirstPositionAndLastValue(t *testing.T) {
	v, err := parseJSON([]byte(repeatBodies[0]))
	require.NoError(t, err)
	md, ok := v.Get("metadata")
	require.True(t, ok)
	assert.Equal(t, `{"ab":4,"cd":2,"ef":{"x":[1,{"q":3,"r":2}],"y":2}}`, string(md.Raw()))

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
