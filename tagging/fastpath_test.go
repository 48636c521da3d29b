package tagging

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The plugins' hand-written checks replace these expressions; the tests below hold them to
// exactly the same answers.
var (
	articleRegexp       = regexp.MustCompile(`(?i)cs[0-9]+`)
	oracleArticle       = func(u string) bool { return articleRegexp.MatchString(u) }
	oracleHelp          = func(u string) bool { return strings.Contains(strings.ToLower(u), "/help") }
	oracleWords         = func(s string) int { return len(strings.Fields(s)) }
	fastPathCheckInputs = []string{
		"", " ", "one", " one  two\tthree\n", "a\u00a0b\u3000c\u2028d", "\u0085x\u0085", "x\xffy \xfe",
		"https://kb.example.com/CS431120", "https://kb.example.com/cs-1", "https://x.example/cs\u0661",
		"abcs12.example", "https://x.example/cſ1", "https://x.example/Cſ9", "https://x.example/c\u017f",
		"https://x.example/cſx1", "https://x.example/c\xc5", "cs", "cS0", "Cs", "ccs1", "c\xffs1",
		"https://x.example/HELP", "https://a.example/self-help", "/help", "/hel", "/HeLp/x", "/helpdesk",
		"https://bücher.example/Help", "https://x.example/\u212ahelp", "\xff/HELP", "/h\u0130lp",
	}
)

func TestFastPathChecksAgreeWithOriginals(t *testing.T) {
	for _, s := range fastPathCheckInputs {
		assert.Equal(t, oracleArticle(s), hasArticleNumber(s), "article %q", s)
		assert.Equal(t, oracleHelp(s), containsHelpPath(s), "help %q", s)
		assert.Equal(t, oracleWords(s), countWords(s), "words %q", s)
	}
}

// Every character in place of the 'c' or the 's' of an article number: only the case
// foldings the regular expression knows may match.
func TestArticleNumberFoldsLikeTheRegexp(t *testing.T) {
	for r := rune(0); r <= 0x1ffff; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		for _, s := range []string{string(r) + "s1", "c" + string(r) + "1", "x" + string(r) + "s7"} {
			if oracleArticle(s) != hasArticleNumber(s) {
				t.Fatalf("%q (U+%04X): regexp %v, hasArticleNumber %v", s, r, oracleArticle(s), hasArticleNumber(s))
			}
		}
	}
}

func TestPluginChecksDoNotAllocate(t *testing.T) {
	in := NewInput(benchItem())
	require.Len(t, in.ReferenceURLs, 3)
	allocs := testing.AllocsPerRun(100, func() {
		for _, p := range []Plugin{QuestionLengthShortPlugin{}, QuestionLengthMediumPlugin{}, QuestionLengthLongPlugin{},
			ReferenceTypeArticlePlugin{}, ReferenceTypeHelpcenterPlugin{}} {
			p.Compute(in)
		}
	})
	assert.Zero(t, allocs)
}

func FuzzFastPathChecks(f *testing.F) {
	for _, s := range fastPathCheckInputs {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := hasArticleNumber(s), oracleArticle(s); got != want {
			t.Fatalf("hasArticleNumber(%q) = %v, the regexp says %v", s, got, want)
		}
		if got, want := containsHelpPath(s), oracleHelp(s); got != want {
			t.Fatalf("containsHelpPath(%q) = %v, lower-case-and-search says %v", s, got, want)
		}
		if got, want := countWords(s), oracleWords(s); got != want {
			t.Fatalf("countWords(%q) = %d, strings.Fields says %d", s, got, want)
		}
	})
}
