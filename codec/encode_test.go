package codec

import (
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// quoted is what jsontext writes for s, the escaping every codec must agree with.
func quoted(t testing.TB, s string) string {
	b, _ := jsontext.AppendQuote(nil, s)
	return string(b)
}

// TestAppendStringIsJSONText holds the strings the item encoders write to jsontext's
// escaping, whatever lane of an eight-byte word a special byte falls in.
func TestAppendStringIsJSONText(t *testing.T) {
	specials := []string{"\x00", "\x1f", "\x7f", "\"", "\\", "é", "\u2028", "<", "\xff", "\xe2\x82", "😀", " ", "!", "#", "[", "]", "\x20"}
	for _, sp := range specials {
		for n := 0; n <= 17; n++ {
			for at := 0; at <= n; at++ {
				s := strings.Repeat("a", at) + sp + strings.Repeat("b", n-at)
				if got, want := string(appendString(nil, s)), quoted(t, s); got != want {
					t.Fatalf("appendString(%q) = %s, jsontext writes %s", s, got, want)
				}
			}
		}
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain text of some length", "tab\there", "quote\"d", "back\\slash", "é and 😀", "\xffbad", "line\u2028sep"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := string(appendString(nil, s)), quoted(t, s); got != want {
			t.Fatalf("appendString(%q) = %s, jsontext writes %s", s, got, want)
		}
	})
}
