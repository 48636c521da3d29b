package gtc

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
)

// Key identifies a stored item. (DatasetName, ID) alone is unique; Bucket is the storage
// partition and must match for reads by key.
type Key struct {
	DatasetName string
	Bucket      string
	ID          string
}

func (k Key) String() string { return k.DatasetName + "/" + k.Bucket + "/" + k.ID }

// Store errors. Stores wrap every driver or SDK error into one of these, keeping the cause
// for logs, so errors.Is works on both.
var (
	ErrNotFound               = errors.New("store: not found")
	ErrConflict               = errors.New("store: already exists")
	ErrPreconditionFailed     = errors.New("store: etag mismatch")
	ErrConcurrentModification = errors.New("store: concurrent modification")
	ErrNoChange               = errors.New("store: no change")
	ErrInvalidArgument        = errors.New("store: invalid argument")
	ErrTooLarge               = errors.New("store: document too large")
	ErrUnavailable            = errors.New("store: unavailable")
	// ErrStorageFull is a write refused because the disk (or a size cap of the database)
	// has no room left. Nothing of that write was kept and what was stored before is
	// intact. Unlike ErrUnavailable it is not transient: retrying helps only once someone
	// frees space, so long-running jobs stop on it.
	ErrStorageFull = errors.New("store: out of storage space (the disk is full)")
)

// IsStoreError reports whether err already carries one of the store errors above, so a
// store's error wrapping leaves it as it is.
func IsStoreError(err error) bool {
	for _, sentinel := range [...]error{
		ErrNotFound, ErrConflict, ErrPreconditionFailed, ErrInvalidArgument,
		ErrTooLarge, ErrUnavailable, ErrConcurrentModification, ErrStorageFull,
	} {
		if errors.Is(err, sentinel) {
			return true
		}
	}
	return false
}

// ConflictError reports a create of a (datasetName, id) that already exists, or, from
// Locate, a (datasetName, id) that more than one document holds (data other tools wrote).
type ConflictError struct {
	Existing Key
	// All lists every key holding the (datasetName, id), sorted, when there are several;
	// nil otherwise.
	All []Key
}

func (e *ConflictError) Error() string { return "store: already exists: " + e.Existing.String() }

// Unwrap makes errors.Is(err, ErrConflict) hold.
func (e *ConflictError) Unwrap() error { return ErrConflict }

// MaxItemBytes is the largest canonical document a store accepts (1.5 MiB).
const MaxItemBytes = 1572864

// Store is one backend holding every persisted entity of the product.
type Store interface {
	Items() ItemStore
	Curation() CurationStore
	TagStore() TagStore
	TagDefinitions() TagDefinitionStore
	// Ping does one trivial read; /readyz calls it with a 2 s deadline.
	Ping(ctx context.Context) error
	// Backend names the implementation ("sqlite", "cosmos").
	Backend() string
	// Maintenance is raw access to every item document, for gtc migrate.
	Maintenance() Maintenance
	// AgentOperations is the agent audit log.
	AgentOperations() AgentOperationStore
	// Revisions are the items' revisions, which Items' writes record.
	Revisions() RevisionStore
	// Leases are the claims the servers of the store hold while they work (lease.go).
	Leases() LeaseStore
	// Jobs are the background jobs of every server of the store (job.go).
	Jobs() JobStore
	// AgentPreviews are the agent tools' dry runs that an execution on any server of the
	// store may apply (agentpreview.go).
	AgentPreviews() AgentPreviewStore
	// Status reports the backend, the index and registry state and the pending-migration
	// estimate.
	Status(ctx context.Context) (StoreStatus, error)
	Close() error
}

// ItemStore keeps ground-truth items.
type ItemStore interface {
	Get(ctx context.Context, k Key) (*Item, error)
	Locate(ctx context.Context, datasetName, id string) (Key, error)
	Create(ctx context.Context, it *Item) (*Item, error)
	// CreateEach creates the items as Create does, each standing or falling alone, and
	// returns each one's error, in order. It is how an import writes: a store writes many
	// new items faster together than one at a time. Of items with one (datasetName, id),
	// the first is the one created (RepeatedInCall).
	CreateEach(ctx context.Context, items []*Item) []error
	Replace(ctx context.Context, prev, next *Item) (*Item, error)
	// ReplaceEach writes each pair's Next over its Prev as Replace does, conditional on the
	// stored ETag still being Prev's, each pair standing or falling alone, and returns each
	// one's stored item or error, in order. It is how a bulk tag operation writes: a store
	// writes many items faster together than one at a time. A pair whose item an earlier pair
	// of the call names is refused (RepeatedReplaceInCall).
	ReplaceEach(ctx context.Context, pairs []Replacement) ([]*Item, []error)
	DeleteDataset(ctx context.Context, datasetName string) (DatasetDeletion, error)

	Query(ctx context.Context, q Query) (QueryPage, error)
	QueryAll(ctx context.Context, q Query) iter.Seq2[*Item, error]
	Count(ctx context.Context, f Filter) (int, error)
	Scan(ctx context.Context, s ScanSpec, cursor string, limit int) (ScanPage, error)

	CountByStatus(ctx context.Context) (map[Status]int, error)
	Datasets(ctx context.Context) ([]string, error)
	// Eligible streams the keys of the self-serve pool: (draft and unassigned) or (skipped
	// and assigned to someone other than e.User), optionally restricted to datasets whose
	// name starts with e.DatasetPrefix. Order unspecified.
	Eligible(ctx context.Context, e EligibleSpec) iter.Seq2[Key, error]
}

// RepeatedInCall returns, for each item of a CreateEach call whose (datasetName, id) an
// earlier item of the same call holds, the error that refuses it: a *ConflictError naming the
// earlier item's key. A store writes the items of one call in any order, so the first of
// them is the one created whichever it writes first. Nil items are left to the store.
func RepeatedInCall(items []*Item) map[int]error {
	var out map[int]error
	first := make(map[[2]string]int, len(items))
	for i, it := range items {
		if it == nil {
			continue
		}
		k := [2]string{it.DatasetName, it.ID}
		j, seen := first[k]
		if !seen {
			first[k] = i
			continue
		}
		if out == nil {
			out = map[int]error{}
		}
		out[i] = fmt.Errorf("create %s: %w", it.Key(), &ConflictError{Existing: items[j].Key()})
	}
	return out
}

// Replacement is one write of ReplaceEach: Next replaces Prev while the stored ETag is still
// Prev's. Both have the same key.
type Replacement struct {
	Prev, Next *Item
}

// RepeatedReplaceInCall returns, for each pair of a ReplaceEach call whose item (datasetName,
// id) an earlier pair of the same call names, the error that refuses it: ErrInvalidArgument.
// A store writes the pairs of one call in any order, so a second write of one item could
// not tell which version it replaces; the first pair of an item is the one written. Pairs
// with a nil Prev are left to the store.
func RepeatedReplaceInCall(pairs []Replacement) map[int]error {
	var out map[int]error
	first := make(map[[2]string]int, len(pairs))
	for i, r := range pairs {
		if r.Prev == nil {
			continue
		}
		k := [2]string{r.Prev.DatasetName, r.Prev.ID}
		j, seen := first[k]
		if !seen {
			first[k] = i
			continue
		}
		if out == nil {
			out = map[int]error{}
		}
		out[i] = fmt.Errorf("replace %s: %w: pair %d of the call already replaces it", r.Prev.Key(), ErrInvalidArgument, j)
	}
	return out
}

// EligibleSpec selects the self-serve pool.
type EligibleSpec struct {
	User          string
	DatasetPrefix string
}

// EligibleSampler is implemented by stores that can draw from the self-serve pool without
// streaming all of it: a uniform random sample of up to n distinct keys, none of exclude.
// The curation service uses it when the store offers it and falls back to reservoir
// sampling over Eligible otherwise.
type EligibleSampler interface {
	SampleEligible(ctx context.Context, e EligibleSpec, n int, exclude map[Key]bool) ([]Key, error)
}

// CurationStore keeps one curation-instructions document per dataset.
type CurationStore interface {
	Get(ctx context.Context, datasetName string) (*CurationInstructions, error)
	// Put creates (ifMatch == "") or replaces (ifMatch != "") the dataset's document.
	// Create of an existing document → ErrConflict; replace of a missing one → ErrNotFound;
	// a stale token → ErrPreconditionFailed.
	Put(ctx context.Context, doc *CurationInstructions, ifMatch string) (*CurationInstructions, bool, error)
}

// Filter selects items; every set field must match (AND).
type Filter struct {
	Statuses       []Status // OR; empty = every status
	DatasetNames   []string // exact, OR; empty = every dataset
	DatasetPrefix  string   // byte prefix of datasetName; "" = none
	AllTags        []string // each must be in manualTags ∪ computedTags (exact)
	NoneOfTags     []string // none may be
	IDContains     string   // case-sensitive substring of id
	Keyword        string   // already lower-cased; substring of the search text
	RefURLContains []string // each a case-sensitive substring of some reference URL
	AssignedTo     *string  // exact; a pointer to "" means unassigned
}

// SortKey names an ordering.
type SortKey string

// The orderings every store offers.
const (
	SortReviewedAt SortKey = "reviewedAt"
	SortUpdatedAt  SortKey = "updatedAt"
	SortID         SortKey = "id"
	SortHasAnswer  SortKey = "hasAnswer"
	SortTagCount   SortKey = "tagCount"
	SortReferences SortKey = "references"
	SortAssignedAt SortKey = "assignedAt" // ascending only
	SortRecent     SortKey = "recent"     // ascending only: updatedAt desc, then id asc
)

// Valid reports whether k is a known ordering.
func (k SortKey) Valid() bool {
	switch k {
	case SortReviewedAt, SortUpdatedAt, SortID, SortHasAnswer, SortTagCount, SortReferences, SortAssignedAt, SortRecent:
		return true
	}
	return false
}

// Query asks for one page of matching items in one order.
type Query struct {
	Filter Filter
	Sort   SortKey
	Desc   bool
	Offset int // ≥ 0
	Limit  int // 1–1000
}

// MaxQueryLimit is the largest page a store serves.
const MaxQueryLimit = 1000

// Validate checks the query's shape.
func (q Query) Validate() error {
	if !q.Sort.Valid() {
		return fmt.Errorf("%w: unknown sort %q", ErrInvalidArgument, q.Sort)
	}
	if q.Desc && (q.Sort == SortAssignedAt || q.Sort == SortRecent) {
		return fmt.Errorf("%w: sort %q is ascending only", ErrInvalidArgument, q.Sort)
	}
	if q.Offset < 0 || q.Limit < 1 || q.Limit > MaxQueryLimit {
		return fmt.Errorf("%w: offset %d, limit %d", ErrInvalidArgument, q.Offset, q.Limit)
	}
	return q.Filter.Validate()
}

// Validate checks the filter's values that have a closed set.
func (f Filter) Validate() error {
	for _, st := range f.Statuses {
		if !st.Valid() {
			return fmt.Errorf("%w: unknown status %q", ErrInvalidArgument, st)
		}
	}
	return nil
}

// QueryPage is one page of a query with the exact number of matches.
type QueryPage struct {
	Items []*Item
	Total int
}

// ScanOrder selects the order of a scan.
type ScanOrder int

// Scan orders.
const (
	ByDatasetID ScanOrder = iota // (datasetName, id) ascending, keyset; exports, recompute
	AnyOrder                     // whatever is cheapest
)

// ScanSpec selects the items of a scan.
type ScanSpec struct {
	Statuses     []Status
	DatasetNames []string
	Order        ScanOrder
}

// Hash identifies the spec independently of the order and repetition of its lists, so a
// scan cursor stays valid across restarts and for an equivalent spec.
func (s ScanSpec) Hash() string {
	sts := make([]string, len(s.Statuses))
	for i, st := range s.Statuses {
		sts[i] = string(st)
	}
	set := func(ss []string) string {
		return strings.Join(slices.Compact(slices.Sorted(slices.Values(ss))), "\x1f")
	}
	h := sha256.New()
	fmt.Fprintf(h, "scan\x00%d\x00%s\x00%s", s.Order, set(sts), set(s.DatasetNames))
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// ScanCursorVersion is the format version of scan cursors.
const ScanCursorVersion = 1

// ScanCursor is what a store's scan cursor holds: the format version, the hash of the spec it
// belongs to, and the position. Cursors are opaque to callers (URL-safe base64 of this JSON).
type ScanCursor struct {
	V int    `json:"v"`
	H string `json:"h"`
	D string `json:"d,omitempty"` // ByDatasetID: datasetName of the last item
	I string `json:"i,omitempty"` // ByDatasetID: id of the last item
	P int64  `json:"p,omitempty"` // AnyOrder on SQLite: row key of the last item
	T string `json:"t,omitempty"` // AnyOrder on Cosmos DB: the continuation token, verbatim
}

// NewScanCursor starts a cursor of spec at the current version.
func NewScanCursor(spec ScanSpec) ScanCursor { return ScanCursor{V: ScanCursorVersion, H: spec.Hash()} }

// Encode returns the cursor string.
func (c ScanCursor) Encode() string {
	b, _ := json.Marshal(c) // strings and ints cannot fail
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodeScanCursor reads a cursor string of spec; anything else (garbage, another version,
// another spec, no position) is ErrInvalidArgument.
func DecodeScanCursor(s string, spec ScanSpec) (ScanCursor, error) {
	var c ScanCursor
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || json.Unmarshal(raw, &c) != nil {
		return c, fmt.Errorf("%w: malformed cursor", ErrInvalidArgument)
	}
	if c.V != ScanCursorVersion {
		return c, fmt.Errorf("%w: cursor version %d is not supported", ErrInvalidArgument, c.V)
	}
	if c.H != spec.Hash() {
		return c, fmt.Errorf("%w: cursor belongs to another scan", ErrInvalidArgument)
	}
	if spec.Order == ByDatasetID && (c.D == "" || c.I == "") || spec.Order == AnyOrder && c.P <= 0 && c.T == "" {
		return c, fmt.Errorf("%w: cursor has no position", ErrInvalidArgument)
	}
	return c, nil
}

// ScanPage is one batch of a scan; Next is "" when the scan is finished.
type ScanPage struct {
	Items []*Item
	Next  string
}

// DatasetDeletion counts what DeleteDataset removed.
type DatasetDeletion struct {
	Items    int
	Curation bool
}

// UpdateAttempts is how many times Update tries before giving up on a contended item.
const UpdateAttempts = 3

// Update reads k, calls fn on a deep copy and writes the result conditionally on the ETag it
// read. On a lost race it reads again and calls fn again, 3 attempts in all, then
// ErrConcurrentModification. fn returning ErrNoChange skips the write and returns the item
// as read.
func Update(ctx context.Context, s ItemStore, k Key, fn func(cur *Item) (*Item, error)) (*Item, error) {
	for range UpdateAttempts {
		cur, err := s.Get(ctx, k)
		if err != nil {
			return nil, err
		}
		next, err := fn(cur.Clone())
		if errors.Is(err, ErrNoChange) {
			return cur, nil
		}
		if err != nil {
			return nil, err
		}
		out, err := s.Replace(ctx, cur, next)
		if errors.Is(err, ErrPreconditionFailed) {
			continue
		}
		return out, err
	}
	return nil, ErrConcurrentModification
}

// SoftDelete sets status deleted and keeps the assignment. expect is the client's token
// ("" = none); a non-empty token that does not match gives ErrPreconditionFailed and is never
// retried. prepare stamps updatedAt and refreshes the computed tags. An item that is already
// deleted is returned without a write.
func SoftDelete(ctx context.Context, s ItemStore, k Key, expect string, prepare func(*Item) error) (*Item, error) {
	return Update(ctx, s, k, func(cur *Item) (*Item, error) {
		if expect != "" && !SameETag(expect, cur.ETag) {
			return nil, ErrPreconditionFailed
		}
		if cur.Status == StatusDeleted {
			return nil, ErrNoChange
		}
		cur.Status = StatusDeleted
		if prepare != nil {
			if err := prepare(cur); err != nil {
				return nil, err
			}
		}
		return cur, nil
	})
}
