package gtc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"time"
)

// Maintenance is raw access to every item document, legacy ones included, for gtc migrate
// only. Documents without docType but with a datasetName count as items; curation and other
// documents do not.
type Maintenance interface {
	// ScanRaw returns the next page of item documents of datasets (empty = every dataset),
	// in an order the store chooses, starting after cursor ("" = from the beginning). Next is
	// "" when the scan is finished. The cursor is opaque and stays valid across restarts.
	ScanRaw(ctx context.Context, datasets []string, cursor string, limit int) (RawPage, error)
	// GetRaw reads one document by its stored partition key values (RawDoc.PartitionKey) and
	// id, as ScanRaw returns it; ErrNotFound when there is none. gtc migrate re-reads a
	// document with it after losing a race (ErrPreconditionFailed) and converts it again.
	GetRaw(ctx context.Context, partitionKey []any, id string) (RawDoc, error)
	// CountRaw is the number of documents a full ScanRaw over datasets returns.
	CountRaw(ctx context.Context, datasets []string) (int, error)
	// ReplaceRaw writes body over prev, conditional on prev.ETag (ErrPreconditionFailed when
	// the stored document has another, ErrNotFound when it is gone); the key may not change.
	// body is a canonical current-format item document.
	ReplaceRaw(ctx context.Context, prev RawDoc, body map[string]any) (RawDoc, error)
	// MoveRaw creates body at its own key (create-only), then deletes prev conditionally on
	// prev.ETag. A document already at the new key that equals body is accepted (a rerun after
	// a crash finishes the move); a different one is a *ConflictError naming it. When the
	// delete finds another ETag the error is a *MoveIncompleteError: both copies remain.
	MoveRaw(ctx context.Context, prev RawDoc, body map[string]any) (RawDoc, error)
	// EnsureRegistered makes the item's bucket known to the store's registry (Cosmos); a
	// no-op where there is none (SQLite).
	EnsureRegistered(ctx context.Context, k Key) error
	// DuplicateIDs yields every (datasetName, id) of datasets (empty = all) held by more than
	// one document, with all its keys, sorted. SQLite never has any.
	DuplicateIDs(ctx context.Context, datasets []string) iter.Seq2[[]Key, error]
	// WriteMigrationMarker records that every item document is in the current storage
	// format; by names the writer ("gtc migrate <version>").
	WriteMigrationMarker(ctx context.Context, by string) error
}

// ErrUnaddressable reports a document whose partition key the store's point operations
// cannot address (for example a bucket that is an object); it is left for manual repair.
var ErrUnaddressable = errors.New("store: unaddressable document")

// RawDoc is one stored document as it is, legacy or current.
type RawDoc struct {
	// PartitionKey holds the key values exactly as stored: the dataset name and the bucket,
	// which in a legacy document may be a number, a non-canonical string or nil (absent).
	PartitionKey []any
	ID           string
	ETag         string
	// Body is the document decoded with json.Decoder.UseNumber; store system properties
	// (_etag, _rid, _self, _attachments, _ts) and derived index fields (gtcIndex) removed.
	Body map[string]any
	// IndexVersion is the version of the document's derived index fields (SQLite: the
	// index_v column; Cosmos: gtcIndex.v), 0 when it has none (a legacy document). A document
	// below gtc.IndexVersion needs a rewrite even when its content is current.
	IndexVersion int
}

// DatasetName is the document's datasetName, or "" when it has none that is a string.
func (d RawDoc) DatasetName() string {
	s, _ := d.Body["datasetName"].(string)
	return s
}

// BucketString is the stored bucket value as text: a string as it is, a number in its
// JSON spelling, "" when absent or null.
func (d RawDoc) BucketString() string {
	if len(d.PartitionKey) < 2 || d.PartitionKey[1] == nil {
		return ""
	}
	if s, ok := d.PartitionKey[1].(string); ok {
		return s
	}
	return fmt.Sprint(d.PartitionKey[1])
}

// KeyString names the document in messages and reports: datasetName/bucket/id.
func (d RawDoc) KeyString() string {
	return strings.Join([]string{d.DatasetName(), d.BucketString(), d.ID}, "/")
}

// RawPage is one page of ScanRaw.
type RawPage struct {
	Docs []RawDoc
	Next string // "" when the scan is finished
}

// MoveIncompleteError reports a move whose new copy was written but whose old copy could
// not be deleted because it changed since it was read: both copies remain for review.
type MoveIncompleteError struct {
	Old, New Key
}

func (e *MoveIncompleteError) Error() string {
	return "store: move incomplete: the new copy " + e.New.String() + " was written but the old copy " +
		e.Old.String() + " changed since it was read and was kept"
}

// Unwrap makes errors.Is(err, ErrPreconditionFailed) hold.
func (e *MoveIncompleteError) Unwrap() error { return ErrPreconditionFailed }

// StoreStatus is what a store knows about its own state.
type StoreStatus struct {
	Backend string `json:"backend"` // "sqlite" or "cosmos"
	// IndexComplete: every item document is in the current storage format (SQLite: nothing
	// pending; Cosmos: the migration marker has migratedAt).
	IndexComplete bool `json:"indexComplete"`
	// RegistryComplete: the dataset/bucket registry is known complete (SQLite: always).
	RegistryComplete bool `json:"registryComplete"`
	// Pending is the number of documents gtc migrate would change, -1 while unknown.
	Pending int `json:"pending"`
	// MigratedAt is when gtc migrate last recorded a complete run, if ever.
	MigratedAt *time.Time `json:"migratedAt"`
}

// GroupCommitter is implemented by stores whose writes all go through one writer that
// commits the writes queued at the same time in one transaction (SQLite). gtc migrate hands
// such a store every write of a batch at once instead of bounding them by --concurrency,
// which exists for stores that take parallel writes (Cosmos DB and its request units).
type GroupCommitter interface {
	GroupsCommits() bool
}

// DecodeRawObject decodes one document as the maintenance code reads it: a JSON object, with
// numbers kept exactly (json.Number), so that a rewrite never changes a number's spelling.
func DecodeRawObject(b []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("the document is not a JSON object")
	}
	return m, nil
}

// ShortBucket shortens a canonical UUID bucket to its first and last 4 hex digits, as the
// gtc migrate dry-run lines show it; anything else is returned as it is.
func ShortBucket(b string) string {
	if !IsCanonicalUUID(b) {
		return b
	}
	return b[:4] + "…" + b[len(b)-4:]
}

// CopyJSON deep-copies a decoded JSON value: maps and slices are new, scalars (strings,
// json.Number, numbers, bools, nil) are immutable and shared.
func CopyJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = CopyJSON(e)
		}
		return m
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = CopyJSON(e)
		}
		return out
	case []string:
		return slices.Clone(x)
	}
	return v
}
