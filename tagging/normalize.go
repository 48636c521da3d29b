package tagging

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// InvalidTagError is returned by Normalize when a raw tag is not of the form group:value.
// Its message is the exact text clients see (INVALID_TAG_FORMAT, domain-and-tags.md §3.1).
type InvalidTagError struct {
	// Raw is the original, un-normalized input.
	Raw string
	// EmptyPart is true when the input had a colon but an empty group or value, false when
	// it had no colon at all.
	EmptyPart bool
}

// Error returns the client-facing message, quoting the raw input unescaped.
func (e *InvalidTagError) Error() string {
	if e.EmptyPart {
		return fmt.Sprintf("Invalid tag format (empty group or value): '%s'", e.Raw)
	}
	return fmt.Sprintf("Invalid tag format (expected group:value): '%s'", e.Raw)
}

// Normalize turns a raw manual tag into its canonical "group:value" form
// (domain-and-tags.md §3.1): lower-cased, no whitespace around colons, internal whitespace
// runs collapsed to one space. It fails with an *InvalidTagError when there is no colon or
// the group or value is empty. Normalize is idempotent.
func Normalize(raw string) (string, error) {
	s := strings.ToLower(strings.TrimSpace(raw))
	// Trimming every colon-separated piece removes whitespace on both sides of every colon,
	// not only the first one, so "a : b : C" and "a:b:c" end up the same.
	pieces := strings.Split(s, ":")
	if len(pieces) == 1 {
		return "", &InvalidTagError{Raw: raw}
	}
	for i, p := range pieces {
		pieces[i] = strings.TrimFunc(p, unicode.IsSpace)
	}
	group := collapseSpace(pieces[0])
	value := collapseSpace(strings.Join(pieces[1:], ":"))
	if group == "" || value == "" {
		return "", &InvalidTagError{Raw: raw, EmptyPart: true}
	}
	return group + ":" + value, nil
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
