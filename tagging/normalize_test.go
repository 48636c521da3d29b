package tagging

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/text/unicode/norm"
)

func TestNormalize(t *testing.T) {
	tests := []struct {
		raw     string
		want    string
		wantErr string
	}{
		{raw: "  Source : SME  ", want: "source:sme"},
		{raw: "a : b : C", want: "a:b:c"},
		{raw: "  Topic   Area :  Some  Value ", want: "topic area:some value"},
		{raw: "SOURCE:Sme_Curated", want: "source:sme_curated"},
		{raw: "x:y:z", want: "x:y:z"},
		{raw: "rephrase:Sleek-Voxel", want: "rephrase:sleek-voxel"},
		{raw: "Turns:MultiTurn", want: "turns:multiturn"},
		{raw: "\tgroup\u00a0name\n:\u2003value\u3000two ", want: "group name:value two"},
		{raw: "a:\tb \n : c", want: "a:b:c"},
		{raw: "nocolon", wantErr: "Invalid tag format (expected group:value): 'nocolon'"},
		{raw: "   ", wantErr: "Invalid tag format (expected group:value): '   '"},
		{raw: "", wantErr: "Invalid tag format (expected group:value): ''"},
		{raw: ":x", wantErr: "Invalid tag format (empty group or value): ':x'"},
		{raw: "x:", wantErr: "Invalid tag format (empty group or value): 'x:'"},
		{raw: " : ", wantErr: "Invalid tag format (empty group or value): ' : '"},
		{raw: "::", wantErr: "Invalid tag format (empty group or value): '::'"},
		{raw: "a::", want: "a::"},
		{raw: "a: :b", want: "a::b"},
		{raw: "İstanbul:ẞ", want: "istanbul:ß"},
		{raw: "K:x", want: "k:x"},
		{raw: "\xff:\xfe", want: "\ufffd:\ufffd"},
		{raw: "a:\u0085b\u0085", want: "a:b"},
		{raw: "a\x85:b", want: "a\ufffd:b"},
		// Product rules beyond the group:value form: no commas or non-space control characters, and at
		// most MaxTagLength characters after normalization.
		{raw: "custom:a,b", wantErr: "Invalid tag format (commas and control characters are not allowed): 'custom:a,b'"},
		{raw: ",", wantErr: "Invalid tag format (commas and control characters are not allowed): ','"},
		{raw: "B:x, a:Y", wantErr: "Invalid tag format (commas and control characters are not allowed): 'B:x, a:Y'"},
		{raw: "a:b\x00", wantErr: "Invalid tag format (commas and control characters are not allowed): 'a:b\x00'"},
		{raw: "a:\x1bb", wantErr: "Invalid tag format (commas and control characters are not allowed): 'a:\x1bb'"},
		{raw: "a:b\x7f", wantErr: "Invalid tag format (commas and control characters are not allowed): 'a:b\x7f'"},
		{raw: "A:\u0080B", wantErr: "Invalid tag format (commas and control characters are not allowed): 'A:\u0080B'"},
		{raw: "nocolon,", wantErr: "Invalid tag format (commas and control characters are not allowed): 'nocolon,'"},
		{raw: "\x00", wantErr: "Invalid tag format (commas and control characters are not allowed): '\x00'"},
		{raw: "a:\tb\v\f\r\n", want: "a:b"},
		{raw: "g:" + strings.Repeat("v", 98), want: "g:" + strings.Repeat("v", 98)},
		{raw: "g:" + strings.Repeat("v", 99), wantErr: "Invalid tag format (longer than 100 characters): 'g:" + strings.Repeat("v", 99) + "'"},
		{raw: "  G :  " + strings.Repeat("V", 98) + "  ", want: "g:" + strings.Repeat("v", 98)},
		{raw: "g:" + strings.Repeat("é", 98), want: "g:" + strings.Repeat("é", 98)},
		{raw: "g:" + strings.Repeat("É", 99), wantErr: "Invalid tag format (longer than 100 characters): 'g:" + strings.Repeat("É", 99) + "'"},
		{raw: strings.Repeat("x", 101), wantErr: "Invalid tag format (expected group:value): '" + strings.Repeat("x", 101) + "'"},
		{raw: ":" + strings.Repeat("x", 101), wantErr: "Invalid tag format (empty group or value): ':" + strings.Repeat("x", 101) + "'"},
		{raw: "x:" + strings.Repeat("y", 99) + ",", wantErr: "Invalid tag format (commas and control characters are not allowed): 'x:" + strings.Repeat("y", 99) + ",'"},
		// Invisible format characters (Unicode Cf) are refused, so a look-alike cannot pass
		// for another tag or group.
		{raw: "sour\u200bce:synthetic", wantErr: "Invalid tag format (invisible format character U+200B is not allowed): 'sour\u200bce:synthetic'"},
		{raw: "\ufeffsource:sme", wantErr: "Invalid tag format (invisible format character U+FEFF is not allowed): '\ufeffsource:sme'"},
		{raw: "source:s\u00adme", wantErr: "Invalid tag format (invisible format character U+00AD is not allowed): 'source:s\u00adme'"},
		{raw: "source:\u202eems", wantErr: "Invalid tag format (invisible format character U+202E is not allowed): 'source:\u202eems'"},
		{raw: "topic:a\u200db", wantErr: "Invalid tag format (invisible format character U+200D is not allowed): 'topic:a\u200db'"},
		{raw: "topic:\u2066x\u2069", wantErr: "Invalid tag format (invisible format character U+2066 is not allowed): 'topic:\u2066x\u2069'"},
		{raw: "topic:x\U000E0001", wantErr: "Invalid tag format (invisible format character U+E0001 is not allowed): 'topic:x\U000E0001'"},
		{raw: "a,\u200b:b", wantErr: "Invalid tag format (commas and control characters are not allowed): 'a,\u200b:b'"},
		// Unicode Normalization Form C: combining marks are composed, so NFD and NFC input
		// are one tag; the length counts the composed characters.
		{raw: "Cafe\u0301:Cre\u0300me Bru\u0302le\u0301e", want: "café:crème brûlée"},
		{raw: "café:crème brûlée", want: "café:crème brûlée"},
		{raw: "\u212b:x", want: "å:x"},
		{raw: "topic:a\u0323\u0307", want: "topic:\u1ea1\u0307"},
		{raw: "g:" + strings.Repeat("e\u0301", 98), want: "g:" + strings.Repeat("é", 98)},
		{raw: "g:" + strings.Repeat("e\u0301", 99), wantErr: "Invalid tag format (longer than 100 characters): 'g:" + strings.Repeat("e\u0301", 99) + "'"},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			got, err := Normalize(tt.raw)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Equal(t, tt.wantErr, err.Error())
				var ite *InvalidTagError
				require.True(t, errors.As(err, &ite))
				assert.Equal(t, tt.raw, ite.Raw)
				assert.Empty(t, got)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestNormalizeValueKeepsLaterColons(t *testing.T) {
	// "a::b" has a colon but the value is ":b" after the first split, which is not empty.
	got, err := Normalize("a::b")
	require.NoError(t, err)
	assert.Equal(t, "a::b", got)
}

func TestParse(t *testing.T) {
	group, value, err := Parse("  Topic Area : Some : Value ")
	require.NoError(t, err)
	assert.Equal(t, "topic area", group)
	assert.Equal(t, "some:value", value)

	_, _, err = Parse("nocolon")
	assert.EqualError(t, err, "Invalid tag format (expected group:value): 'nocolon'")
}

// normalizeReference is the tag normalization written out step by step, plus the product
// rules and the composition into Normalization Form C, as the oracle for Normalize's
// one-pass implementation and its fast path.
func normalizeReference(raw string) (string, error) {
	for _, r := range raw {
		if r == ',' || unicode.IsControl(r) && !unicode.IsSpace(r) {
			return "", &InvalidTagError{Raw: raw, Kind: TagForbiddenChar}
		}
	}
	for _, r := range raw {
		if unicode.Is(unicode.Cf, r) {
			return "", &InvalidTagError{Raw: raw, Kind: TagInvisibleChar, Char: r}
		}
	}
	s := norm.NFC.String(strings.ToLower(norm.NFC.String(strings.TrimSpace(raw))))
	pieces := strings.Split(s, ":")
	if len(pieces) == 1 {
		return "", &InvalidTagError{Raw: raw, Kind: TagNoColon}
	}
	for i, p := range pieces {
		pieces[i] = strings.TrimFunc(p, unicode.IsSpace)
	}
	group := strings.Join(strings.Fields(pieces[0]), " ")
	value := strings.Join(strings.Fields(strings.Join(pieces[1:], ":")), " ")
	if group == "" || value == "" {
		return "", &InvalidTagError{Raw: raw, Kind: TagEmptyPart}
	}
	t := group + ":" + value
	if utf8.RuneCountInString(t) > MaxTagLength {
		return "", &InvalidTagError{Raw: raw, Kind: TagTooLong}
	}
	return t, nil
}

func TestNormalizeAgreesWithReference(t *testing.T) {
	inputs := []string{"a:b", "a :b", "a: b", "a  b:c", "A:b", "a:b ", " a:b", "a::", "a: :b", "a:b:", ":",
		"a:b,c", "a:\x00", "\u00a0a:b", "a:\u00a0b", "a\u3000\u3000b:c", "ab", "a:" + strings.Repeat("b", 98),
		"a:" + strings.Repeat("b", 99), "a:" + strings.Repeat("ß", 99), "\xc3:\x28", "İ:İ", "ǅ:ǈ",
		"a\u200b:b", "e\u0301:x", "a: \u0301b", "\u0301a:b", "x:e :\u0301", "\u1e9b\u0323:x", "\u0130\u0301:x"}
	for _, raw := range inputs {
		got, err := Normalize(raw)
		want, wantErr := normalizeReference(raw)
		assert.Equal(t, want, got, "%q", raw)
		assert.Equal(t, fmt.Sprint(wantErr), fmt.Sprint(err), "%q", raw)
	}
}

func TestNormalizeFastPathDoesNotAllocate(t *testing.T) {
	for _, tag := range []string{"source:sme", "topic area:some value", "a::b", "x:y:z", "rephrase:sleek-voxel"} {
		allocs := testing.AllocsPerRun(100, func() {
			if got, err := Normalize(tag); err != nil || got != tag {
				t.Fatalf("Normalize(%q) = %q, %v", tag, got, err)
			}
		})
		assert.Zero(t, allocs, tag)
	}
}

func FuzzNormalize(f *testing.F) {
	for _, s := range []string{
		"  Source : SME  ", "a : b : C", "  Topic   Area :  Some  Value ", "SOURCE:Sme_Curated",
		"x:y:z", "rephrase:Sleek-Voxel", "nocolon", "   ", ":x", "x:", " : ", "a::b",
		"İstanbul:ẞ", "\u0085a\u00a0:\u2028b", "\xff:\xfe", "K:Ω", "a:b,c", "a:\x00b", "a:\u0080",
		"g:" + strings.Repeat("v", 98), "g:" + strings.Repeat("v", 99), "a: :b", "a:b ",
		"sour\u200bce:synthetic", "Cafe\u0301:x", "\u212b:\u2126", "a:\u0323\u0307", "x:e :\u0301",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got, err := Normalize(raw)
		want, wantErr := normalizeReference(raw)
		if got != want || fmt.Sprint(err) != fmt.Sprint(wantErr) {
			t.Fatalf("Normalize(%q) = %q, %v; the step-by-step reference gives %q, %v", raw, got, err, want, wantErr)
		}
		if err != nil {
			messages := []string{
				"Invalid tag format (expected group:value): '" + raw + "'",
				"Invalid tag format (empty group or value): '" + raw + "'",
				"Invalid tag format (commas and control characters are not allowed): '" + raw + "'",
				"Invalid tag format (longer than 100 characters): '" + raw + "'",
			}
			invisible := strings.HasPrefix(err.Error(), "Invalid tag format (invisible format character U+") &&
				strings.HasSuffix(err.Error(), " is not allowed): '"+raw+"'")
			if !slices.Contains(messages, err.Error()) && !invisible {
				t.Fatalf("Normalize(%q) error %q is not one of the five messages", raw, err)
			}
			return
		}
		if !norm.NFC.IsNormalString(got) {
			t.Fatalf("Normalize(%q) = %q is not in Normalization Form C", raw, got)
		}
		if strings.ContainsFunc(got, func(r rune) bool { return unicode.Is(unicode.Cf, r) }) {
			t.Fatalf("Normalize(%q) = %q contains an invisible format character", raw, got)
		}
		if nfd, err := Normalize(norm.NFD.String(raw)); err != nil || nfd != got {
			t.Fatalf("Normalize(NFD of %q) = %q, %v; want %q as for the input itself", raw, nfd, err, got)
		}
		if strings.TrimFunc(got, unicode.IsSpace) != got {
			t.Fatalf("Normalize(%q) = %q has surrounding whitespace", raw, got)
		}
		if strings.ContainsFunc(got, func(r rune) bool { return r == ',' || unicode.IsControl(r) }) {
			t.Fatalf("Normalize(%q) = %q contains a comma or a control character", raw, got)
		}
		if n := utf8.RuneCountInString(got); n > MaxTagLength {
			t.Fatalf("Normalize(%q) = %q has %d characters", raw, got, n)
		}
		group, value, ok := strings.Cut(got, ":")
		if !ok || group == "" || value == "" {
			t.Fatalf("Normalize(%q) = %q is not group:value", raw, got)
		}
		again, err := Normalize(got)
		if err != nil {
			t.Fatalf("Normalize(%q) = %q, which fails to normalize again: %v", raw, got, err)
		}
		if again != got {
			t.Fatalf("Normalize is not idempotent: %q -> %q -> %q", raw, got, again)
		}
	})
}

func TestFilterTag(t *testing.T) {
	for raw, want := range map[string]string{
		" topic:fruit ":          "topic:fruit",
		"Topic:Fruit":            "Topic:Fruit", // exact and case-sensitive otherwise
		"cafe\u0301:cre\u0300me": "café:crème",
		"café:crème":             "café:crème",
		"dataset:Cafe\u0301":     "dataset:Cafe\u0301", // dataset names are kept byte for byte
		" dataset :cafe\u0301 ":  "dataset :cafe\u0301",
		"sour\u200bce:x":         "sour\u200bce:x", // matches no tag; not an error
		"":                       "",
		"  ":                     "",
		"k\u0301ein-doppelpunkt": "\u1e31ein-doppelpunkt",
	} {
		assert.Equal(t, want, FilterTag(raw), "%q", raw)
	}
}

func TestNormalizeGroupName(t *testing.T) {
	assert.Equal(t, "topic area", NormalizeGroupName("  Topic \t Area "))
	assert.Equal(t, "café", NormalizeGroupName("CAFE\u0301"))
	assert.Equal(t, NormalizeGroupName("café"), NormalizeGroupName("cafe\u0301"))
	g, _, err := Parse("Cafe\u0301 Bar:x")
	require.NoError(t, err)
	assert.Equal(t, NormalizeGroupName("Cafe\u0301  Bar"), g, "the group of a normalized tag")
}
