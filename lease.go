package gtc

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Leases. What one server of a store does that the others must see while it lasts (an agent
// execution running, the tags it is changing) is a lease in the store: a named claim that its
// holder keeps by renewing it before it expires. A holder that stops renewing (its process
// killed, its machine gone) loses the lease when it expires, so nothing stays claimed by a
// server that is no longer there. Every write of a lease is conditional, so two servers
// never both hold one.

// Lease is a named claim held until Expires.
type Lease struct {
	Name    string
	Holder  string
	Expires time.Time
	// ETag is the version this holder wrote; Renew and Release are conditional on it.
	ETag string
}

// LeaseHeldError refuses a lease another holder keeps; Lease is theirs.
type LeaseHeldError struct{ Lease Lease }

func (e *LeaseHeldError) Error() string {
	return fmt.Sprintf("lease %s is held by %s until %s", e.Lease.Name, e.Lease.Holder, e.Lease.Expires.UTC().Format(time.RFC3339Nano))
}

// Unwrap makes errors.Is(err, ErrConflict) hold.
func (e *LeaseHeldError) Unwrap() error { return ErrConflict }

// MaxLeaseNameBytes bounds a lease's name and its holder's: room for a prefix and a user id
// of 256 characters of up to 4 bytes each, within Cosmos DB's 2 KB partition key value.
const MaxLeaseNameBytes = 1536

// LeaseStore keeps the leases of every server of a store. Expiry is judged by the store's
// clock.
type LeaseStore interface {
	// Acquire gives the lease name to holder until ttl from now, when nobody holds it or
	// its holder let it expire; a live lease of another holder is a *LeaseHeldError. A
	// holder that acquires a lease it holds renews it.
	Acquire(ctx context.Context, name, holder string, ttl time.Duration) (Lease, error)
	// Renew extends l until ttl from now while l.Holder still holds it at l.ETag;
	// otherwise ErrPreconditionFailed (it expired and someone took it) or ErrNotFound.
	Renew(ctx context.Context, l Lease, ttl time.Duration) (Lease, error)
	// Release gives l up while l.Holder still holds it at l.ETag; a lease already taken
	// by another or gone is no error.
	Release(ctx context.Context, l Lease) error
	// Get returns the lease name, live or expired; ErrNotFound when there is none.
	Get(ctx context.Context, name string) (Lease, error)
}

// LiveAt reports whether the lease is held at t.
func (l Lease) LiveAt(t time.Time) bool { return t.Before(l.Expires) }

// CheckLease validates a lease's name, holder and time to live.
func CheckLease(name, holder string, ttl time.Duration) error {
	switch {
	case name == "" || len(name) > MaxLeaseNameBytes:
		return fmt.Errorf("%w: a lease name has 1 to %d bytes", ErrInvalidArgument, MaxLeaseNameBytes)
	case holder == "" || len(holder) > MaxLeaseNameBytes:
		return fmt.Errorf("%w: a lease holder has 1 to %d bytes", ErrInvalidArgument, MaxLeaseNameBytes)
	case ttl < time.Millisecond:
		return fmt.Errorf("%w: a lease lasts at least 1 ms, not %s", ErrInvalidArgument, ttl)
	}
	return nil
}

// KeepLeases renews held every third of ttl until ctx ends, and returns them as they last
// stood, for Release. Renewals are not cancelled by ctx: one in flight when it ends
// completes. A lease that another holder took over (it expired before a renewal) or that is
// gone is reported to lost once and renewed no more: its holder must stop what the lease
// guarded. Any other failure is reported to failed and retried at the next round; either
// callback may be nil.
func KeepLeases(ctx context.Context, ls LeaseStore, held []Lease, ttl time.Duration, lost func(Lease), failed func(Lease, error)) []Lease {
	held = append([]Lease(nil), held...)
	live := make([]bool, len(held))
	for i := range live {
		live[i] = true
	}
	t := time.NewTicker(ttl / 3)
	defer t.Stop()
	renewCtx := context.WithoutCancel(ctx)
	for {
		select {
		case <-ctx.Done():
			return held
		case <-t.C:
		}
		for i, l := range held {
			if !live[i] {
				continue
			}
			renewed, err := ls.Renew(renewCtx, l, ttl)
			switch {
			case err == nil:
				held[i] = renewed
			case errors.Is(err, ErrPreconditionFailed), errors.Is(err, ErrNotFound):
				live[i] = false
				if lost != nil {
					lost(l)
				}
			case failed != nil:
				failed(l, err)
			}
		}
	}
}
