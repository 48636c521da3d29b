// Package migrate brings stored documents to the current storage format: the v1 → v2 item
// conversion (Convert, a pure function) and the gtc migrate job (Run). README.md, "Upgrading
// from the legacy shape", describes both.
package migrate

import (
	"time"

	gtc "github.com/gtc-dev/gtc"
)

// Env is everything Convert needs besides the document: no I/O, no clock, no randomness.
type Env struct {
	// Tagger is the tag pipeline the API uses (normalization, computed tags, validators).
	Tagger gtc.Tagger
	// IsComputed is the computed-tag registry's rule: whether tag is a computed tag given the
	// item's current computed tags (nil = only the static keys and dynamic prefixes).
	IsComputed func(tag string, computed []string) bool
	// TagMap is --tag-map: a legacy tag string mapped to its replacement, or to nil to drop it;
	// applied to each raw entry before normalization.
	TagMap map[string]*string
	// Now is the run's start time, used where the mapping says "now".
	Now time.Time
}

// Kind is the write a converted document needs.
type Kind string

// Kinds of write.
const (
	KindNone    Kind = "none"    // the stored document is already current
	KindReindex Kind = "reindex" // same content, storage form only (null keys, times, index fields)
	KindMigrate Kind = "migrate" // a legacy document converted to v2
)

// Result is what a document becomes.
type Result struct {
	// Item is the converted item; Body is its canonical document (numbers as json.Number),
	// what the store writes.
	Item *gtc.Item
	Body map[string]any
	Kind Kind
	// Legacy reports that the document was in the legacy shape.
	Legacy bool
	// NewKey is set when the document must move to another partition key (its bucket is
	// absent, not a UUID, or not in canonical spelling).
	NewKey *gtc.Key
	// Changes lists what differs between the stored and the converted document, by
	// top-level path, in a stable order.
	Changes []Change
	// Summary is the human description of the conversion used by the dry-run diff line,
	// e.g. "legacy → v2; history built (2 turns) from editedQuestion+answer; …".
	Summary string
	// Warnings are the problems that do not stop the write, in the order found.
	Warnings []Warning
	// ConvertedTags are the manual tags of the converted item that the conversion made from
	// bare legacy tag names (custom:<name>, LEGACY_TAG_CONVERTED), sorted: tags the
	// document's author never wrote, so gtc import accepts them without --register-tags.
	ConvertedTags []string
}

// Change is one difference between the stored and the converted document. Before and After
// are nil both for a null value and for an absent key; Added and Removed tell the absent
// cases apart (the canonical form drops null top-level keys, which would otherwise read as
// null → null).
type Change struct {
	Path   string `json:"path"`
	Before any    `json:"before"`
	After  any    `json:"after"`
	// Added: the key is new (absent from the stored document).
	Added bool `json:"added,omitempty"`
	// Removed: the key is gone from the converted document.
	Removed bool `json:"removed,omitempty"`
}

// Warning is a problem of a document that is still written.
type Warning struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Warning codes of the mapping.
const (
	WarnUnknownStatus        = "UNKNOWN_STATUS"
	WarnInvalidDatetime      = "INVALID_DATETIME"
	WarnLegacyFieldDropped   = "LEGACY_FIELD_DROPPED"
	WarnHistoryEntryDropped  = "HISTORY_ENTRY_DROPPED"
	WarnHistoryTagsRemoved   = "HISTORY_TAGS_REMOVED"
	WarnReferenceDropped     = "REFERENCE_DROPPED"
	WarnLegacyTagConverted   = "LEGACY_TAG_CONVERTED"
	WarnLegacyTagDropped     = "LEGACY_TAG_DROPPED"
	WarnComputedTagsStripped = "COMPUTED_TAGS_STRIPPED"
	WarnTagRuleViolation     = "TAG_RULE_VIOLATION"
	WarnApprovalRulesNotMet  = "APPROVAL_RULES_NOT_MET"
)

// Error codes of the job.
const (
	CodeInvalidDocument        = "INVALID_DOCUMENT"
	CodeBucketNeedsMove        = "BUCKET_NEEDS_MOVE"
	CodeUnaddressableDocument  = "UNADDRESSABLE_DOCUMENT"
	CodeDuplicateID            = "DUPLICATE_ID"
	CodeConcurrentModification = "CONCURRENT_MODIFICATION"
	CodeMoveIncomplete         = "MOVE_INCOMPLETE"
	CodeWriteFailed            = "WRITE_FAILED"
)

// DocError is a document that cannot be converted; it is left untouched.
type DocError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *DocError) Error() string { return e.Code + ": " + e.Message }
