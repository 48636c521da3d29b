package gtc

import (
	"context"
	"encoding/json"
	"time"
)

// Agent operation kinds.
const (
	AgentKindFindAndTag = "find_and_tag"
	AgentKindDeleteTag  = "delete_tag"
	AgentKindMergeTags  = "merge_tags"
	AgentKindUndo       = "undo"
)

// Agent operation statuses. Running is the only status a store lists for startup repair.
const (
	AgentOpRunning     = "running"
	AgentOpCompleted   = "completed"
	AgentOpPartial     = "partial"
	AgentOpFailed      = "failed"
	AgentOpInterrupted = "interrupted"
)

// Per-item results of an agent operation. Pending is the journaled intent written before
// the item's write; every other value is final.
const (
	AgentItemPending         = "pending"
	AgentItemApplied         = "applied"
	AgentItemSkippedChanged  = "skipped_changed"
	AgentItemSkippedConflict = "skipped_conflict"
	AgentItemSkippedMissing  = "skipped_missing"
	AgentItemFailed          = "failed"
	AgentItemNotAttempted    = "not_attempted"
)

// AgentOpCounts counts the items of an operation by result.
type AgentOpCounts struct {
	Planned         int `json:"planned"`
	Applied         int `json:"applied"`
	SkippedChanged  int `json:"skippedChanged"`
	SkippedConflict int `json:"skippedConflict"`
	SkippedMissing  int `json:"skippedMissing"`
	Failed          int `json:"failed"`
	NotAttempted    int `json:"notAttempted"`
}

// AgentOpExcluded counts the candidates a preview left out.
type AgentOpExcluded struct {
	Unchanged int `json:"unchanged"`
	Conflict  int `json:"conflict"`
}

// AgentOperation is the header of one executed agent tag operation: the audit-log entry
// without its items. After Create only Status, Counts, FinishedAt and UndoneBy change.
type AgentOperation struct {
	OperationID string `json:"operationId"`
	Kind        string `json:"kind"`
	Actor       string `json:"actor"`
	Via         string `json:"via"`
	// Args are the canonical arguments of the call (snake_case keys, as the tool takes them).
	Args json.RawMessage `json:"args"`
	// Tags lists every tag the arguments name (normalized, sorted), so the log can be
	// filtered by tag.
	Tags              []string        `json:"tags"`
	UserAgent         string          `json:"userAgent"`
	PreviewID         string          `json:"previewId"`
	PreviewedAt       time.Time       `json:"previewedAt"`
	StartedAt         time.Time       `json:"startedAt"`
	FinishedAt        *time.Time      `json:"finishedAt"`
	Status            string          `json:"status"`
	Counts            AgentOpCounts   `json:"counts"`
	ExcludedAtPreview AgentOpExcluded `json:"excludedAtPreview"`
	UndoOf            *string         `json:"undoOf"`
	UndoneBy          *string         `json:"undoneBy"`
}

// AgentOpItem is one item of an operation, in the order the operation walks them.
type AgentOpItem struct {
	DatasetName string  `json:"datasetName"`
	Bucket      string  `json:"bucket"`
	ID          string  `json:"id"`
	Result      string  `json:"result"`
	Reason      *string `json:"reason"`
	ETagBefore  string  `json:"etagBefore"`
	ETagAfter   *string `json:"etagAfter"`
	// ManualTagsBefore are the manual tags the preview saw; PlannedTags what the operation
	// writes (kept so startup repair can tell a journaled write that landed).
	ManualTagsBefore []string `json:"manualTagsBefore"`
	PlannedTags      []string `json:"plannedTags"`
	// ManualTagsAfter are the stored manual tags after an applied write; nil otherwise.
	ManualTagsAfter []string `json:"manualTagsAfter"`
}

// Key returns the item's store key.
func (it AgentOpItem) Key() Key {
	return Key{DatasetName: it.DatasetName, Bucket: it.Bucket, ID: it.ID}
}

// AgentOpFilter selects operations for List.
type AgentOpFilter struct {
	Actor string // exact; "" = everyone
	Tag   string // only operations whose Tags contain it; "" = any
	Limit int    // most headers returned (1–1000)
}

// AgentOperationStore keeps the agent audit log (conformance tests in
// storage/storetest/agentops.go).
type AgentOperationStore interface {
	// Create stores a new header; an existing id is ErrConflict.
	Create(ctx context.Context, op *AgentOperation) error
	// Get returns a header; an unknown id is ErrNotFound.
	Get(ctx context.Context, id string) (*AgentOperation, error)
	// Update stores op's Status, Counts and FinishedAt; nothing else changes. An unknown id
	// is ErrNotFound.
	Update(ctx context.Context, op *AgentOperation) error
	// SetUndoneBy records the undo of id. An unknown id is ErrNotFound; an operation
	// already undone (by another undo) is ErrConflict.
	SetUndoneBy(ctx context.Context, id, undoID string) error
	// PutItems stores items at positions first, first+1, … of the operation, replacing
	// entries already there (a journaled intent replaced by its result) and appending the
	// rest. Positions start at 0 and are written without gaps.
	PutItems(ctx context.Context, id string, first int, items []AgentOpItem) error
	// Items returns the operation's items in position order, at most limit (≤ 0: all).
	Items(ctx context.Context, id string, limit int) ([]AgentOpItem, error)
	// List returns the matching headers newest first (StartedAt, then OperationID, both
	// descending) and how many match in all.
	List(ctx context.Context, f AgentOpFilter) ([]*AgentOperation, int, error)
	// Running returns every header whose status is running, for startup repair.
	Running(ctx context.Context) ([]*AgentOperation, error)
	// DeleteBefore deletes every operation that is not running and started before t, with
	// its items, and returns how many it deleted (retention).
	DeleteBefore(ctx context.Context, t time.Time) (int, error)
}
