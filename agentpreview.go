package gtc

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"
)

// Agent previews. A writing agent tool (manage_tags, undo_tag_operation) first answers a dry
// run, and keeps it as a preview: what a later execution of exactly the same arguments by the
// same caller may apply. Previews are kept in the store, so that any server of the store can
// execute a preview another made, and an execution consumes its preview with a conditional
// write, so a preview is executed once whichever servers race for it. The store keeps the
// plan as opaque bytes; the agent tools encode and decode it.

// Agent preview states.
const (
	AgentPreviewOpen     = "open"
	AgentPreviewConsumed = "consumed"
)

// Limits of an agent preview's fields.
const (
	// MaxAgentPreviewIDBytes bounds a preview's id, its arguments' hash and the id of the
	// operation that consumed it.
	MaxAgentPreviewIDBytes = 128
	// MaxAgentPreviewCallerBytes bounds the caller's user id: 256 characters of up to 4
	// bytes each.
	MaxAgentPreviewCallerBytes = 1024
	// MaxAgentPreviewPlanBytes bounds a preview's encoded plan.
	MaxAgentPreviewPlanBytes = 64 << 20
)

// AgentPreview is a kept dry run of one caller: the plan an execution of the same arguments
// (their hash) applies, until ExpiresAt.
type AgentPreview struct {
	// ID names the preview: letters, digits, '_' and '-' only, unique to each dry run (a
	// repeated dry run is a new preview with a new id).
	ID     string
	Caller string
	// Hash is the hash of the tool arguments the preview binds to.
	Hash                 string
	CreatedAt, ExpiresAt time.Time
	// State is AgentPreviewOpen or AgentPreviewConsumed.
	State string
	// OperationID is the operation that consumed the preview ("" while open).
	OperationID string
	// Changes counts the change entries the plan holds, for the bounds.
	Changes int
	// Plan is the plan, encoded by the agent tools; the store keeps its bytes as they are.
	Plan []byte
	// ETag is the version the store holds; SetState is conditional on it.
	ETag string
}

// AgentPreviewBounds bound the previews a store keeps: how many of one caller, how many in
// all, and how many change entries across them all. A bound of 0 or less is no bound.
type AgentPreviewBounds struct{ PerUser, Total, TotalChanges int }

// AgentPreviewStore keeps the agent previews of every server of a store.
type AgentPreviewStore interface {
	// Put keeps p, replacing the caller's preview of the same hash, then evicts the oldest
	// previews past the bounds (the caller's beyond PerUser, then anyone's beyond Total
	// previews or TotalChanges change entries, never p itself). It returns p with its ETag.
	Put(ctx context.Context, p AgentPreview, b AgentPreviewBounds) (AgentPreview, error)
	// Get returns the caller's preview of hash, plan included; ErrNotFound when there is
	// none (never kept, replaced by another, evicted or expired and deleted).
	Get(ctx context.Context, caller, hash string) (AgentPreview, error)
	// SetState writes state and opID while the stored preview is still at p.ETag and
	// returns it with its new ETag; otherwise ErrPreconditionFailed (another server
	// consumed or changed it) or ErrNotFound (it was evicted).
	SetState(ctx context.Context, p AgentPreview, state, opID string) (AgentPreview, error)
	// DeleteExpired removes the previews that expired before t and returns how many.
	DeleteExpired(ctx context.Context, t time.Time) (int, error)
}

// CheckAgentPreview validates a preview before a store keeps it.
func CheckAgentPreview(p AgentPreview) error {
	switch {
	case !isPreviewID(p.ID):
		return fmt.Errorf("%w: a preview id has 1 to %d letters, digits, '_' or '-'", ErrInvalidArgument, MaxAgentPreviewIDBytes)
	case len(p.Caller) > MaxAgentPreviewCallerBytes:
		return fmt.Errorf("%w: a preview's caller has at most %d bytes", ErrInvalidArgument, MaxAgentPreviewCallerBytes)
	case p.Hash == "" || len(p.Hash) > MaxAgentPreviewIDBytes:
		return fmt.Errorf("%w: a preview's hash has 1 to %d bytes", ErrInvalidArgument, MaxAgentPreviewIDBytes)
	case p.CreatedAt.IsZero() || p.ExpiresAt.Before(p.CreatedAt):
		return fmt.Errorf("%w: a preview is created at a time and expires no earlier", ErrInvalidArgument)
	case p.Changes < 0:
		return fmt.Errorf("%w: a preview holds %d changes", ErrInvalidArgument, p.Changes)
	case len(p.Plan) > MaxAgentPreviewPlanBytes:
		return fmt.Errorf("%w: a preview's plan of %d bytes is over %d", ErrTooLarge, len(p.Plan), MaxAgentPreviewPlanBytes)
	}
	return CheckAgentPreviewState(p.State, p.OperationID)
}

// CheckAgentPreviewState validates a preview's state and the operation that consumed it.
func CheckAgentPreviewState(state, opID string) error {
	switch {
	case state != AgentPreviewOpen && state != AgentPreviewConsumed:
		return fmt.Errorf("%w: unknown preview state %q", ErrInvalidArgument, state)
	case state == AgentPreviewConsumed && opID == "":
		return fmt.Errorf("%w: a consumed preview names its operation", ErrInvalidArgument)
	case len(opID) > MaxAgentPreviewIDBytes:
		return fmt.Errorf("%w: an operation id has at most %d bytes", ErrInvalidArgument, MaxAgentPreviewIDBytes)
	}
	return nil
}

func isPreviewID(id string) bool {
	if id == "" || len(id) > MaxAgentPreviewIDBytes {
		return false
	}
	for _, c := range []byte(id) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Evict returns the previews of kept to remove once p has been put: the caller's oldest
// beyond PerUser, then anyone's oldest while more than Total previews or TotalChanges change
// entries remain; never p (matched by caller and hash). kept lists every stored preview,
// p's own entry included or not; oldest is by CreatedAt, then ID.
func (b AgentPreviewBounds) Evict(kept []AgentPreview, p AgentPreview) []AgentPreview {
	order := make([]AgentPreview, 0, len(kept)+1)
	order = append(order, p)
	for _, q := range kept {
		if q.Caller != p.Caller || q.Hash != p.Hash {
			order = append(order, q)
		}
	}
	slices.SortStableFunc(order, func(x, y AgentPreview) int {
		return cmp.Or(x.CreatedAt.Compare(y.CreatedAt), cmp.Compare(x.ID, y.ID))
	})
	self := func(q AgentPreview) bool { return q.Caller == p.Caller && q.Hash == p.Hash }
	gone := make([]bool, len(order))
	var out []AgentPreview
	evict := func(i int) {
		gone[i] = true
		out = append(out, order[i])
	}
	mine, total, changes := 0, len(order), 0
	for _, q := range order {
		if q.Caller == p.Caller {
			mine++
		}
		changes += q.Changes
	}
	for i, q := range order {
		if b.PerUser <= 0 || mine <= b.PerUser {
			break
		}
		if q.Caller == p.Caller && !self(q) {
			evict(i)
			mine--
			total--
			changes -= q.Changes
		}
	}
	over := func() bool {
		return b.Total > 0 && total > b.Total || b.TotalChanges > 0 && changes > b.TotalChanges
	}
	for i, q := range order {
		if !over() {
			break
		}
		if gone[i] || self(q) {
			continue
		}
		evict(i)
		total--
		changes -= q.Changes
	}
	return out
}
