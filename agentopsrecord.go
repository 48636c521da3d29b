package gtc

import (
	"encoding/json"
	"fmt"
	"time"
)

// AgentOpRecord is the stored JSON of an agent operation header, the same in every store: the
// fields of AgentOperation with its times in the stored format (microseconds, UTC, fixed
// width), so stores can compare and sort them as text. The JSON names are those of the data
// already stored; a store adds its own keys (a Cosmos DB document embeds the record next to
// its id and write id).
type AgentOpRecord struct {
	OperationID       string          `json:"operationId"`
	Kind              string          `json:"kind"`
	Actor             string          `json:"actor"`
	Via               string          `json:"via"`
	Args              json.RawMessage `json:"args"`
	Tags              []string        `json:"tags"`
	UserAgent         string          `json:"userAgent"`
	PreviewID         string          `json:"previewId"`
	PreviewedAt       string          `json:"previewedAt"`
	StartedAt         string          `json:"startedAt"`
	FinishedAt        *string         `json:"finishedAt"`
	Status            string          `json:"status"`
	Counts            AgentOpCounts   `json:"counts"`
	ExcludedAtPreview AgentOpExcluded `json:"excludedAtPreview"`
	UndoOf            *string         `json:"undoOf"`
	UndoneBy          *string         `json:"undoneBy"`
}

// NewAgentOpRecord checks o and returns its stored form. A nil operation, an empty id, args
// that are not JSON or a time that would not read back are ErrInvalidArgument, refused before
// the store writes anything. A store with further rules on ids checks them itself.
func NewAgentOpRecord(o *AgentOperation) (*AgentOpRecord, error) {
	if o == nil {
		return nil, fmt.Errorf("%w: nil operation", ErrInvalidArgument)
	}
	if o.OperationID == "" {
		return nil, fmt.Errorf("%w: empty operation id", ErrInvalidArgument)
	}
	if len(o.Args) > 0 && !json.Valid(o.Args) {
		return nil, fmt.Errorf("%w: operation %s: args are not valid JSON", ErrInvalidArgument, o.OperationID)
	}
	r := &AgentOpRecord{
		OperationID: o.OperationID, Kind: o.Kind, Actor: o.Actor, Via: o.Via, Args: o.Args,
		Tags: o.Tags, UserAgent: o.UserAgent, PreviewID: o.PreviewID, Status: o.Status,
		Counts: o.Counts, ExcludedAtPreview: o.ExcludedAtPreview,
		UndoOf: clonePtr(o.UndoOf), UndoneBy: clonePtr(o.UndoneBy),
	}
	var err error
	if r.PreviewedAt, err = storedTimeChecked("previewedAt", o.PreviewedAt); err != nil {
		return nil, err
	}
	if r.StartedAt, err = storedTimeChecked("startedAt", o.StartedAt); err != nil {
		return nil, err
	}
	if r.FinishedAt, err = storedFinishedAt(o.FinishedAt); err != nil {
		return nil, err
	}
	return r, nil
}

// Operation reads the record back. A stored time that does not parse is a damaged store,
// nothing the caller can fix: ErrUnavailable.
func (r *AgentOpRecord) Operation() (*AgentOperation, error) {
	o := &AgentOperation{
		OperationID: r.OperationID, Kind: r.Kind, Actor: r.Actor, Via: r.Via, Args: r.Args,
		Tags: r.Tags, UserAgent: r.UserAgent, PreviewID: r.PreviewID, Status: r.Status,
		Counts: r.Counts, ExcludedAtPreview: r.ExcludedAtPreview, UndoOf: r.UndoOf, UndoneBy: r.UndoneBy,
	}
	// A nil Args is stored as JSON null; it reads back as nil, not as the bytes "null".
	if string(o.Args) == "null" {
		o.Args = nil
	}
	var err error
	if o.PreviewedAt, err = ParseTime(r.PreviewedAt); err == nil {
		o.StartedAt, err = ParseTime(r.StartedAt)
	}
	if err == nil && r.FinishedAt != nil {
		var t time.Time
		if t, err = ParseTime(*r.FinishedAt); err == nil {
			o.FinishedAt = &t
		}
	}
	if err != nil {
		return nil, fmt.Errorf("stored agent operation %s unreadable: %w: %w", r.OperationID, ErrUnavailable, err)
	}
	return o, nil
}

// AgentOpChange is one change a store makes to a stored header: what Update or SetUndoneBy
// asks for, checked and in stored form before the store reads the header, so a bad request
// reads and writes nothing. Build it with NewAgentOpUpdate or NewAgentOpUndo.
type AgentOpChange struct {
	undo bool
	// Update: the only fields Update stores.
	status     string
	counts     AgentOpCounts
	finishedAt *string
	// SetUndoneBy: the undo to record.
	undoID string
}

// NewAgentOpUpdate checks o for Update: a nil operation, an empty id or a finishedAt that would
// not read back is ErrInvalidArgument. Only Status, Counts and FinishedAt are taken; every
// other field of o is ignored, as the contract asks.
func NewAgentOpUpdate(o *AgentOperation) (*AgentOpChange, error) {
	if o == nil {
		return nil, fmt.Errorf("%w: nil operation", ErrInvalidArgument)
	}
	if o.OperationID == "" {
		return nil, fmt.Errorf("%w: empty operation id", ErrInvalidArgument)
	}
	finished, err := storedFinishedAt(o.FinishedAt)
	if err != nil {
		return nil, err
	}
	return &AgentOpChange{status: o.Status, counts: o.Counts, finishedAt: finished}, nil
}

// NewAgentOpUndo checks undoID for SetUndoneBy: an empty one is ErrInvalidArgument.
func NewAgentOpUndo(undoID string) (*AgentOpChange, error) {
	if undoID == "" {
		return nil, fmt.Errorf("%w: empty undo id", ErrInvalidArgument)
	}
	return &AgentOpChange{undo: true, undoID: undoID}, nil
}

// Apply makes the change c to r and reports whether r changed, so a store can skip a write that would
// store what is already there. An update always counts as a change. Recording the undo r
// already has changes nothing and succeeds, so a caller retrying after a lost answer is not
// told its own undo conflicts; another undo is ErrConflict and leaves r as it was.
func (r *AgentOpRecord) Apply(c *AgentOpChange) (bool, error) {
	if !c.undo {
		r.Status, r.Counts, r.FinishedAt = c.status, c.counts, clonePtr(c.finishedAt)
		return true, nil
	}
	if r.UndoneBy != nil {
		if *r.UndoneBy == c.undoID {
			return false, nil
		}
		return false, fmt.Errorf("%w: already undone by %s", ErrConflict, *r.UndoneBy)
	}
	r.UndoneBy = &c.undoID
	return true, nil
}

// AgentOpStartedBefore is the stored time to compare startedAt with "<" to find the
// operations that started before t (retention). Stored times are whole microseconds, so a t
// between two of them is rounded up: every operation that started before t, and no other,
// compares below it.
func AgentOpStartedBefore(t time.Time) (string, error) {
	t = t.UTC()
	if tr := t.Truncate(time.Microsecond); !tr.Equal(t) {
		t = tr.Add(time.Microsecond)
	}
	return storedTimeChecked("time", t)
}

// storedTimeChecked is t in the stored format, refused with ErrInvalidArgument when it would
// not read back (a year outside 0001–9999), so no store holds a time it cannot parse.
func storedTimeChecked(name string, t time.Time) (string, error) {
	s := FormatStoredTime(t)
	if _, err := ParseTime(s); err != nil {
		return "", fmt.Errorf("%w: %s %s: %w", ErrInvalidArgument, name, t, err)
	}
	return s, nil
}

// storedFinishedAt is storedTimeChecked for the one optional time: nil stays nil (not finished).
func storedFinishedAt(t *time.Time) (*string, error) {
	if t == nil {
		return nil, nil
	}
	s, err := storedTimeChecked("finishedAt", *t)
	if err != nil {
		return nil, err
	}
	return &s, nil
}
