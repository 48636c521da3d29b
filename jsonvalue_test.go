package gtc

import (
	"bytes"
	"encoding/json"
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
	require.Len(t, v.obj, 2)
	assert.Equal(t, "b", v.obj[0].key, "a repeated key keeps its first position")
	assert.Equal(t, "2.50e3", v.obj[0].val.s, "and takes the last value, literal kept")
	assert.Equal(t, `{"b":2.50e3,"a":[true,null,"xé😀"]}`, string(v.raw()))
}

func TestParseJSONRejects(t *testing.T) {
	for _, in := range []string{``, ` `, `{`, `{"a":}`, `[1,]`, `{"a":1,}`, `01`, `1.`, `-`, `"\x"`, "\"a\x01\"", `{} x`,
		`[1] [2]`, "\"\xff\"", `nul`, `{"a" 1}`, `'a'`, `[1 2]`, `"\u12"`} {
		_, err := parseJSON([]byte(in))
		assert.Error(t, err, "%q", in)
	}
	deep := strings.Repeat("[", MaxJSONDepth+2) + strings.Repeat("]", MaxJSONDepth+2)
	_, err := parseJSON([]byte(deep))
	assert.ErrorContains(t, err, "nesting deeper than")
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
