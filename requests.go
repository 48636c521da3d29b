package gtc

import "encoding/json"

// Item structure messages.
const (
	MsgHistoryEmpty       = "history fields cannot be empty"
	MsgContextKeyEmpty    = "contextEntries[].key cannot be empty"
	MsgToolNameEmpty      = "toolCalls[].name cannot be empty"
	MsgStepNumberNegative = "toolCalls[].stepNumber cannot be negative"
	MsgExpectationName    = "expectedTools entries must include a non-empty name"
	MsgPluginKindEmpty    = "plugins[].kind cannot be empty"
	MsgReferenceURLEmpty  = "Reference URL cannot be empty"
)

// ImportEntry is one element of a bulk-import body that passed the schema checks.
type ImportEntry struct {
	Item          *Item
	RawManualTags []string
	// IgnoredFields are the output-only keys the element carried, sorted.
	IgnoredFields []string
	// Sent records which optional server-managed keys the element set (non-null).
	SentUpdatedAt, SentCreatedAt, SentCreatedBy bool
}

// --- item PUT bodies -----------------------------------------------------------------------

// Opt is a body key that may be absent, null, or set.
type Opt[T any] struct {
	Set  bool // the key is present (possibly null)
	Null bool // the key is present with the value null
	V    T
}

// HistoryPatch is one history entry of a PUT body, before the semantic checks of step 6.
type HistoryPatch struct {
	Role             string
	Msg              *string // msg, or content when msg is absent or null
	TurnID, StepID   *string
	ExpectedBehavior []string // when ExpectedBehaviorOK
	// ExpectedBehaviorSet is true when expectedBehavior (or its alias) is present and not null.
	ExpectedBehaviorSet bool
	ExpectedBehaviorOK  bool
}

// ItemPatch is a schema-checked item PUT body, the input of Curator.UpdateItem.
type ItemPatch struct {
	Status         Opt[string]
	Comment        Opt[string]
	History        Opt[[]HistoryPatch]
	ContextEntries Opt[[]ContextEntry]
	ToolCalls      Opt[[]ToolCall]
	ExpectedTools  Opt[ExpectedTools]
	Feedback       Opt[[]FeedbackEntry]
	Metadata       Opt[json.RawMessage]
	Plugins        Opt[map[string]PluginPayload]
	ManualTags     Opt[[]string]
	TraceIDs       Opt[map[string]string]
	TracePayload   Opt[json.RawMessage]
	ScenarioID     Opt[string]
	ETag           Opt[string]
	Approve        Opt[bool] // assignments route only
	// HasComputedTags and HasTags record the output-only keys, refused after the lookup.
	HasComputedTags, HasTags bool
	// Keys lists the body's keys in document order, so problems are reported in that order.
	Keys []string
}

// CurationUpdate is a checked curation-instructions PUT body.
type CurationUpdate struct {
	Instructions string
	Token        string // _etag, else etag; "" when neither is usable
}

// TagDefinitionRequest is a checked POST /v1/tags/definitions body.
type TagDefinitionRequest struct {
	TagKey      string
	Description string
}
