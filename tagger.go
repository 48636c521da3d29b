package gtc

import "strings"

// Tagger prepares the tags of every item the service writes. No write path bypasses it: it
// normalizes rawManual, strips computed keys, recomputes the computed tags, and, when
// validate is true, runs the tag validators. It sets the item's ManualTags and ComputedTags.
type Tagger interface {
	// NormalizeManual normalizes raw manual tags (de-duplicated, sorted) or returns a
	// *TagFormatError naming every bad entry.
	NormalizeManual(raw []string) ([]string, error)
	// Prepare runs the whole pipeline on it. Errors are *TagFormatError or *TagRuleError.
	Prepare(it *Item, rawManual []string, validate bool) (Prepared, error)
}

// Prepared is the result of the tag pipeline.
type Prepared struct {
	ManualTags   []string // normalized, stripped, unique, sorted
	ComputedTags []string // plugin order
	Stripped     []string // computed tags removed from the manual list, sorted
}

// TagProblem is one manual tag that failed normalization.
type TagProblem struct {
	Index   int // position in the raw list
	Message string
}

// TagFormatError reports every manual tag that is not group:value.
type TagFormatError struct {
	Problems []TagProblem
}

func (e *TagFormatError) Error() string {
	msgs := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		msgs[i] = p.Message
	}
	return strings.Join(msgs, "; ")
}

// TagRuleError reports tag validator violations, in validator order.
type TagRuleError struct {
	Messages []string
}

func (e *TagRuleError) Error() string { return strings.Join(e.Messages, "; ") }
