package tagging

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	gtc "github.com/gtc-dev/gtc"
)

// MaxTagLength is the longest normalized manual tag, in characters (code points). It is a
// product rule beyond the group:value form: the explorer's tag filter refuses longer tags,
// so a longer tag could be stored but never filtered on.
const MaxTagLength = 100

// InvalidTagKind says which normalization rule a raw tag broke.
type InvalidTagKind int

// The normalization rules, in the order Normalize checks them.
const (
	// TagForbiddenChar: the raw tag contains a comma or a control character that is not
	// whitespace (product rule).
	TagForbiddenChar InvalidTagKind = iota + 1
	// TagInvisibleChar: the raw tag contains an invisible format character (Unicode
	// category Cf, gtc.FormatChar), which would make two tags that look the same different
	// tags, or let "sour\u200bce:x" pass for a "source" tag (product rule).
	TagInvisibleChar
	// TagNoColon: there is no colon.
	TagNoColon
	// TagEmptyPart: the group or the value is empty.
	TagEmptyPart
	// TagTooLong: the normalized tag is longer than MaxTagLength characters (product rule).
	TagTooLong
)

// InvalidTagError is returned by Normalize when a raw tag cannot be normalized. Its message
// is the exact text clients see (INVALID_TAG_FORMAT).
type InvalidTagError struct {
	// Raw is the original, un-normalized input.
	Raw string
	// Kind is the rule the input broke.
	Kind InvalidTagKind
	// Char is the offending character of a TagInvisibleChar error.
	Char rune
}

// Error returns the client-facing message, quoting the raw input unescaped.
func (e *InvalidTagError) Error() string {
	switch e.Kind {
	case TagForbiddenChar:
		return fmt.Sprintf("Invalid tag format (commas and control characters are not allowed): '%s'", e.Raw)
	case TagInvisibleChar:
		return fmt.Sprintf("Invalid tag format (invisible format character U+%04X is not allowed): '%s'", e.Char, e.Raw)
	case TagEmptyPart:
		return fmt.Sprintf("Invalid tag format (empty group or value): '%s'", e.Raw)
	case TagTooLong:
		return fmt.Sprintf("Invalid tag format (longer than %d characters): '%s'", MaxTagLength, e.Raw)
	default:
		return fmt.Sprintf("Invalid tag format (expected group:value): '%s'", e.Raw)
	}
}

// Normalize turns a raw manual tag into its canonical "group:value" form: lower-cased, no
// whitespace around colons, internal whitespace runs collapsed to one space, and in Unicode
// Normalization Form C, so a tag typed with precomposed letters and one typed with combining
// marks are one tag. It fails with an *InvalidTagError when there is no colon or the group
// or value is empty. Normalize is idempotent. It is the one normalization of manual tags: item writes, the tag store, the
// allow-list setting, the groups file, imports and the agent tools' arguments all use it.
//
// Three product rules go beyond that; the first two are checked first, the last one
// last:
//   - a raw tag that contains a comma, or a control character that is not whitespace
//     (unicode.IsControl && !unicode.IsSpace), is refused: comma-separated list filters and
//     the comma form of manualTags on import split on commas, so such a tag could never be
//     addressed, and control characters are invisible in every view;
//   - a raw tag that contains an invisible format character (Unicode category Cf: zero-width
//     spaces and joiners, the byte-order mark, bidirectional controls, the soft hyphen, …)
//     is refused: "sour\u200bce:synthetic" would otherwise be a tag of a group that looks
//     like "source" and escape that group's rules;
//   - a normalized tag longer than MaxTagLength characters (code points) is refused: the
//     explorer's tag filter refuses longer tags, so such a tag could never be filtered on.
//
// A tag that is already normalized is returned as is, without allocating.
func Normalize(raw string) (string, error) {
	if t, ok := alreadyNormalized(raw); ok {
		return t, nil
	}
	if hasForbiddenChar(raw) {
		return "", &InvalidTagError{Raw: raw, Kind: TagForbiddenChar}
	}
	if r, ok := gtc.FormatChar(raw); ok {
		return "", &InvalidTagError{Raw: raw, Kind: TagInvisibleChar, Char: r}
	}
	s := strings.TrimSpace(raw)
	ascii := isASCII(s)
	if !ascii {
		// Composed first, so that a letter typed with a combining mark lower-cases as the
		// precomposed letter does ("I\u0307" as "İ"). strings.ToLower also replaces invalid
		// UTF-8 with U+FFFD, so s is valid from here.
		s = strings.ToLower(norm.NFC.String(s))
	}
	// One pass: whitespace next to any colon (and at the ends) is
	// dropped, every other whitespace run becomes one space. That is what trimming every
	// colon-separated piece and then collapsing the group and the value gives.
	var b strings.Builder
	b.Grow(len(s))
	pending := false    // a whitespace run was skipped since the last written character
	afterColon := false // the last written character is a colon
	for i := 0; i < len(s); {
		c, size := rune(s[i]), 1
		if c >= utf8.RuneSelf {
			c, size = utf8.DecodeRuneInString(s[i:])
		} else if ascii && 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		switch {
		case isSpace(c):
			pending = true
		case c == ':':
			b.WriteByte(':')
			pending, afterColon = false, true
		default:
			if pending && !afterColon && b.Len() > 0 {
				b.WriteByte(' ')
			}
			if s[i] < utf8.RuneSelf {
				b.WriteByte(byte(c))
			} else {
				b.WriteString(s[i : i+size])
			}
			pending, afterColon = false, false
		}
		i += size
	}
	t := b.String()
	if !ascii {
		// Composed again, on the lower-cased text: lower-casing can turn a letter into one
		// that composes with the mark after it.
		t = norm.NFC.String(t)
	}
	colon := strings.IndexByte(t, ':')
	if colon < 0 {
		return "", &InvalidTagError{Raw: raw, Kind: TagNoColon}
	}
	if colon == 0 || colon == len(t)-1 {
		return "", &InvalidTagError{Raw: raw, Kind: TagEmptyPart}
	}
	if utf8.RuneCountInString(t) > MaxTagLength {
		return "", &InvalidTagError{Raw: raw, Kind: TagTooLong}
	}
	return t, nil
}

// FilterTag is the form in which a list filter compares a tag (the tags and excludeTags
// parameters of the explorer list): trimmed, and in Unicode Normalization Form C like every
// normalized tag, so a filter typed with combining marks finds the tag; otherwise exact and
// case-sensitive. A dataset tag ("dataset:<name>") is only trimmed: it carries its dataset
// name byte for byte, and dataset names are stored exactly as sent.
func FilterTag(raw string) string {
	t := strings.TrimSpace(raw)
	if isASCII(t) {
		return t
	}
	if g, _, ok := strings.Cut(t, ":"); ok && strings.TrimSpace(g) == "dataset" {
		return t
	}
	return norm.NFC.String(t)
}

// NormalizeGroupName is the canonical form of a tag group name (the text before the colon
// of a tag): lower-cased, whitespace runs collapsed to one space, in Unicode Normalization
// Form C, as Normalize writes the group of a tag.
func NormalizeGroupName(raw string) string {
	return norm.NFC.String(collapseSpace(strings.ToLower(raw)))
}

// alreadyNormalized reports whether raw is printable ASCII that Normalize would return
// unchanged: lower-case, a colon with text on both sides, single spaces only between two
// characters that are not colons, no comma, at most MaxTagLength bytes. Tags come back from
// the UI in this form on almost every save, so this is the common case.
func alreadyNormalized(raw string) (string, bool) {
	n := len(raw)
	if n < 3 || n > MaxTagLength {
		return "", false
	}
	colon := -1
	for i := 0; i < n; i++ {
		c := raw[i]
		switch {
		case c < ' ' || c >= 0x7f || c == ',' || 'A' <= c && c <= 'Z':
			return "", false
		case c == ' ':
			// Not at either end, not doubled, not next to a colon.
			if i == 0 || i == n-1 || raw[i-1] == ' ' || raw[i-1] == ':' || raw[i+1] == ':' {
				return "", false
			}
		case c == ':':
			if colon < 0 {
				colon = i
			}
		}
	}
	if colon <= 0 || colon == n-1 {
		return "", false
	}
	return raw, true
}

// hasForbiddenChar reports whether raw contains a comma or a control character that is not
// whitespace. Invalid UTF-8 decodes to U+FFFD, which is neither.
func hasForbiddenChar(raw string) bool {
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c >= utf8.RuneSelf {
			return hasForbiddenRune(raw[i:])
		}
		if c == ',' || c == 0x7f || c < ' ' && !isSpace(rune(c)) {
			return true
		}
	}
	return false
}

func hasForbiddenRune(s string) bool {
	for _, r := range s {
		if r == ',' || unicode.IsControl(r) && !unicode.IsSpace(r) {
			return true
		}
	}
	return false
}

// isSpace is unicode.IsSpace with an ASCII fast path.
func isSpace(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\v', '\f', '\r':
		return true
	}
	return r >= utf8.RuneSelf && unicode.IsSpace(r)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// Parse normalizes tag and splits it at its first colon.
func Parse(tag string) (group, value string, err error) {
	n, err := Normalize(tag)
	if err != nil {
		return "", "", err
	}
	group, value, _ = strings.Cut(n, ":")
	return group, value, nil
}

// collapseSpace replaces every whitespace run with one ASCII space and trims the ends.
func collapseSpace(s string) string { return strings.Join(strings.Fields(s), " ") }

// tagGroup is the text before the first colon of an already-normalized tag; a tag without a
// colon has no group.
func tagGroup(tag string) (string, bool) {
	g, _, ok := strings.Cut(tag, ":")
	return g, ok
}

// sortedUnique returns a sorted copy of tags without repeats, never nil.
func sortedUnique(tags []string) []string {
	out := append([]string{}, tags...)
	slices.Sort(out)
	return slices.Compact(out)
}

// NormalizeFilterTag normalizes one tag an agent tool filters or changes by, like Normalize,
// except that "dataset:<name>" keeps the name as given (trimmed), since computed dataset tags
// carry the dataset name byte for byte.
func NormalizeFilterTag(raw string) (string, error) {
	if g, v, ok := strings.Cut(raw, ":"); ok && strings.EqualFold(strings.TrimSpace(g), "dataset") {
		if v = strings.TrimSpace(v); v != "" && !hasForbiddenChar(v) {
			return "dataset:" + v, nil
		}
	}
	return Normalize(raw)
}
