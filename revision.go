package gtc

import (
	"context"
	"encoding/json"
	"time"
)

// A revision records one change of one item: who made it, when, through what, and what it
// changed, field by field. Every write of an item records exactly one revision, in the same
// transaction as the write (the stores' Create and Replace do it), so the revisions of an
// item are a complete account of how it came to be: from its first revision (which carries
// the whole item) every later version can be rebuilt by applying each revision's operations
// in turn, and from the current item every earlier one by undoing them.

// Revision sources: what made a change.
const (
	SourceAPI         = "api"        // an item PUT, delete or other change through the item API
	SourceAssignment  = "assignment" // the assignment API: PUT, assign, unassign, self-serve
	SourceImport      = "import"     // created by a bulk import
	SourceDuplicate   = "duplicate"  // created as a copy of another item
	SourceRecompute   = "recompute"  // computed tags refreshed
	SourceMigrate     = "migrate"    // gtc migrate rewrote the stored document
	SourceRestore     = "restore"    // an earlier revision's content written again
	SourceBaseline    = "baseline"   // the item as it was before its history began
	SourceAgentPrefix = "agent:"     // an agent execution or undo: agent:<operation id>
)

// Revision is one recorded change of an item. Number counts from 1 per item. Ops are the
// field-level changes from the version before to this one; the first revision of an item
// (created, or the baseline of an item written before history was kept) has one "add" of the
// whole item at the empty path.
type Revision struct {
	DatasetName string    `json:"datasetName"`
	ID          string    `json:"id"`
	Number      int64     `json:"revision"`
	At          time.Time `json:"at"`
	Actor       string    `json:"actor"`
	Source      string    `json:"source"`
	OperationID string    `json:"operationId,omitempty"`
	ETagBefore  string    `json:"etagBefore"`
	ETagAfter   string    `json:"etagAfter"`
	Ops         []PatchOp `json:"ops"`
	// PrunedBefore is set on the oldest revision an item keeps once retention has deleted
	// older ones (or the item was written while history was switched off): the revisions
	// numbered below it are gone. It is this revision's own number; 0 on every other one.
	PrunedBefore int64 `json:"prunedBefore,omitempty"`
	// Base is the item's stored document (its revision key aside) as it was after this
	// revision, kept on the oldest revision once older ones are pruned, so that this version
	// and every later one can still be rebuilt forward. Empty on every other revision.
	Base json.RawMessage `json:"base,omitzero"`
}

// PatchOp is one field-level change, in the manner of a JSON Patch (RFC 6902) operation that
// also keeps the value it replaced: "add" (Value), "remove" (Old) or "replace" (Old and Value)
// at Path, a JSON Pointer into the item's stored form ("" is the whole item, "/history/0/msg"
// a turn's text). Values are JSON.
type PatchOp struct {
	Op    string          `json:"op"`
	Path  string          `json:"path"`
	Old   json.RawMessage `json:"old,omitzero"`
	Value json.RawMessage `json:"value,omitzero"`
}

// Paths are the paths the revision changed, in order.
func (r *Revision) Paths() []string {
	out := make([]string, len(r.Ops))
	for i, op := range r.Ops {
		out[i] = op.Path
	}
	return out
}

// HistoryOptions configure how a store keeps revisions. The zero value records every write's
// revision and keeps them all.
type HistoryOptions struct {
	// Disabled records no revisions. Items still get their revision numbers, so switching
	// history on again continues the numbering, with a gap where nothing was recorded.
	Disabled bool
	// MaxRevisions > 0 keeps at most that many revisions per item: a revision is pruned once
	// the item has a revision numbered MaxRevisions or more above it.
	MaxRevisions int
	// MaxAge > 0 prunes revisions recorded longer ago than that.
	MaxAge time.Duration
}

// Prunes reports whether o deletes any revisions.
func (o HistoryOptions) Prunes() bool { return o.MaxRevisions > 0 || o.MaxAge > 0 }

// RevisionPage is one page of an item's revisions, newest first; Next is "" after the last.
type RevisionPage struct {
	Revisions []*Revision
	Next      string
}

// RevisionStore reads the revisions the item writes recorded.
type RevisionStore interface {
	// List returns the revisions of the item (datasetName, id), newest first, at most limit,
	// starting after cursor ("" = from the newest). An item without revisions has an empty
	// page, not ErrNotFound.
	List(ctx context.Context, datasetName, id string, cursor string, limit int) (RevisionPage, error)
	// Get returns revision number n of the item; ErrNotFound when there is none.
	Get(ctx context.Context, datasetName, id string, n int64) (*Revision, error)
}

// Change says what makes the writes of a context: its source and, for an agent's writes,
// the operation id. The stores record it in each revision; without one, a write's source is
// SourceAPI.
type Change struct {
	Source      string
	OperationID string
}

type changeKey struct{}

// WithChange returns a context whose item writes are recorded as made by ch.
func WithChange(ctx context.Context, ch Change) context.Context {
	return context.WithValue(ctx, changeKey{}, ch)
}

// ChangeFrom returns the change of ctx, SourceAPI when it has none.
func ChangeFrom(ctx context.Context) Change {
	if ch, ok := ctx.Value(changeKey{}).(Change); ok && ch.Source != "" {
		return ch
	}
	return Change{Source: SourceAPI}
}

// NewRevision is the revision a store records for a write made in ctx: number n of the item
// it, with the operations ops, at the time at. The actor is the caller of ctx.
func NewRevision(ctx context.Context, it *Item, n int64, at time.Time, etagBefore string, ops []PatchOp) *Revision {
	ch := ChangeFrom(ctx)
	return &Revision{
		DatasetName: it.DatasetName, ID: it.ID, Number: n, At: at.UTC(),
		Actor: CallerFrom(ctx).UserID, Source: ch.Source, OperationID: ch.OperationID,
		ETagBefore: etagBefore, Ops: ops,
	}
}

// NextRevision is the revision number a write of an item gives it: 1 for a new item (prev
// nil), the next number after prev's, and 2 for an item written before revisions were
// recorded (prev.Revision 0), whose first write records its baseline as revision 1.
func NextRevision(prev *Item) int64 {
	switch {
	case prev == nil:
		return 1
	case prev.Revision == 0:
		return 2
	}
	return prev.Revision + 1
}

// WithDefaultChange is ctx with the change source when ctx names none: maintenance writes
// are gtc migrate's unless their caller says otherwise.
func WithDefaultChange(ctx context.Context, source string) context.Context {
	if _, ok := ctx.Value(changeKey{}).(Change); ok {
		return ctx
	}
	return WithChange(ctx, Change{Source: source})
}
