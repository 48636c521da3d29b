package api

import (
	stdjson "encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Answers keep the bytes encoding/json wrote for them, but for the escaping of jsontext:
// U+2028 and U+2029 are written as they are (as <, > and & already were).
func TestMarshalKeepsEncodingJSONBytesButTheEscaping(t *testing.T) {
	type inner struct {
		N    int64              `json:"n"`
		Opt  *string            `json:"opt,omitempty"`
		Raw  stdjson.RawMessage `json:"raw"`
		When time.Time          `json:"when"`
	}
	v := map[string]any{
		"z":     []string(nil),
		"a":     map[string]int(nil),
		"empty": []int{},
		"text":  "a<b>&c\"\\\n\t\x01é\u2028\u2029",
		"obj":   inner{N: 1 << 60, Raw: stdjson.RawMessage(`{"k": [1, 2.50]}`), When: time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)},
		"f":     0.1,
		"count": stdjson.Number("12"),
		"zero":  stdjson.Number(""),
	}
	got, err := marshal(v)
	require.NoError(t, err)
	old, err := stdjson.Marshal(v)
	require.NoError(t, err)
	assert.Equal(t, `{"a":null,"count":12,"empty":[],"f":0.1,"obj":{"n":1152921504606846976,"raw":{"k":[1,2.50]},"when":"2026-01-02T03:04:05.0000006Z"},`+
		`"text":"a<b>&c\"\\\n\t\u0001é`+"\u2028\u2029"+`","z":null,"zero":0}`, string(got))
	// encoding/json escapes <, >, &, U+2028 and U+2029; nothing else differs.
	assert.Equal(t, string(old), string(unescapeForHTML(got)))
}

// unescapeForHTML writes <, >, &, U+2028 and U+2029 as encoding/json's Marshal escapes them.
func unescapeForHTML(b []byte) []byte {
	var out []byte
	for _, r := range string(b) {
		switch r {
		case '<':
			out = append(out, `\u003c`...)
		case '>':
			out = append(out, `\u003e`...)
		case '&':
			out = append(out, `\u0026`...)
		case '\u2028':
			out = append(out, `\u2028`...)
		case '\u2029':
			out = append(out, `\u2029`...)
		default:
			out = append(out, string(r)...)
		}
	}
	return out
}
