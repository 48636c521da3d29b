package codec

import (
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/gtc-dev/gtc"
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
				if got, want := string(AppendString(nil, s)), quoted(t, s); got != want {
					t.Fatalf("AppendString(%q) = %s, jsontext writes %s", s, got, want)
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
		if got, want := string(AppendString(nil, s)), quoted(t, s); got != want {
			t.Fatalf("AppendString(%q) = %s, jsontext writes %s", s, got, want)
		}
	})
}

// TestAppendTimeIsTheLayout holds the encoders' times to the layouts they are documented by.
func TestAppendTimeIsTheLayout(t *testing.T) {
	zone := time.FixedZone("x", -(5*3600 + 30*60))
	times := []time.Time{
		time.Date(2026, 11, 27, 22, 1, 41, 0, time.UTC),
		time.Date(2026, 1, 2, 3, 4, 5, 7_008_009, zone),
		time.Date(1999, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
		time.Date(1, 1, 1, 0, 0, 0, 1_000, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 120_000, zone),
		time.Unix(0, 0),
	}
	for i := range 1000 {
		times = append(times, time.Unix(int64(i)*7_919_333, int64(i)*1_000_003%1e9))
	}
	for _, tm := range times {
		for _, c := range []struct {
			fm     form
			layout string
		}{{formAPI, gtc.APITimeLayout}, {formStored, gtc.StoredTimeLayout}} {
			want := `"` + tm.UTC().Format(c.layout) + `"`
			if got := string(appendTime(nil, tm, c.fm)); got != want {
				t.Fatalf("appendTime(%v) = %s, the layout writes %s", tm, got, want)
			}
		}
	}
}
