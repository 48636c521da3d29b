package codec

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A bracket where an object key belongs is refused with the error of that token, wherever
// the object is.
func TestParseJSONRefusesABracketForAKey(t *testing.T) {
	for _, tc := range []struct{ in, err string }{
		{" {{", "jsontext: object member name must be a string after offset 2"},
		{"{[", "jsontext: object member name must be a string after offset 1"},
		{`{"a":1,{`, "jsontext: object member name must be a string after offset 7"},
		{`[{"a":{}}, {"b" {`, `jsontext: invalid character '{' after object name (expecting ':') within "/1/b" after offset 16`},
	} {
		_, err := parseJSON([]byte(tc.in))
		assert.Equal(t, tc.err, syntaxMessage(err), "%q", tc.in)
	}
}

// Objects whose keys repeat inside one another are each compacted once: a repeated key is
// kept at its first position with its last value, at every level.
func TestRawOfNestedRepeats(t *testing.T) {
	v, err := parseJSON([]byte(`{"a": {"x": 1, "x": {"y": 1, "y": 2, "z": 3}}, "b": [{"q": 1, "q": 2}], "a": {"x": [1], "x": {"y": 3, "\u0079": 4}}}`))
	assert.NoError(t, err)
	assert.Equal(t, `{"a":{"x":{"y":4}},"b":[{"q":2}]}`, string(v.Raw()))
	var got []string
	for m := v.Members(); m.Next(); {
		got = append(got, m.Key.String()+"="+string(m.Val.bytes()))
	}
	assert.Equal(t, []string{`a={"x": [1], "x": {"y": 3, "\u0079": 4}}`, `b=[{"q": 1, "q": 2}]`}, got, "values as written")
}

// Bodies decoded at the same time, which share the pool of readers, decode as they do alone.
func TestDecodersShareReadersSafely(t *testing.T) {
	decode := func(body string) []any {
		v, err := parseJSON([]byte(body))
		entries, ierr := DecodeImport([]byte(body))
		item, oerr := DecodeItemObject([]byte(body))
		return []any{string(v.Raw()), err, entries, ierr, item, oerr}
	}
	var want [][]any
	for _, b := range repeatBodies {
		want = append(want, decode(b))
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				k := (g + i) % len(repeatBodies)
				assert.Equal(t, want[k], decode(repeatBodies[k]))
			}
		})
	}
	wg.Wait()
}
