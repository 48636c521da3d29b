package agenttools

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/gtc-dev/gtc"
)

// An execution's locks are leases in the store, so every server of a store sees them: an
// execution holds one lease per tag it changes (for an undo, one on the operation it
// undoes) and one on its caller (one execution at a time per user), held by its operation
// id. The running execution renews them every third of
// BulkOptions.LeaseTTL; a server that dies leaves them for at most that long, after which
// any server's Repair finds the operation without a live lease and marks it interrupted.

// lockNames are the leases an execution of a holds: its tags, or for an undo the operation
// it undoes.
func lockNames(a opArgs) []string {
	if a.Operation == gtc.AgentKindUndo {
		return []string{undoLockName(a.OperationID)}
	}
	return tagLockNames(a.tags())
}

// opLockNames are the leases the execution of op holds while it runs.
func opLockNames(op *gtc.AgentOperation) []string {
	if op.UndoOf != nil {
		return []string{undoLockName(*op.UndoOf)}
	}
	return tagLockNames(op.Tags)
}

func tagLockNames(tags []string) []string {
	names := make([]string, len(tags))
	for i, t := range tags {
		names[i] = "agent-tag:" + t
	}
	slices.Sort(names)
	return slices.Compact(names)
}

func undoLockName(opID string) string { return "agent-undo:" + opID }

// userLockName is the lease that keeps a caller to one execution at a time.
func userLockName(user string) string { return "agent-user:" + user }

// lockHolder returns the operation holding a live lease of names, or "".
func (b *Bulk) lockHolder(ctx context.Context, names []string) string {
	now := b.leaseClock()
	for _, n := range names {
		l, err := b.leases.Get(ctx, n)
		if err == nil && l.LiveAt(now) {
			return l.Holder
		}
	}
	return ""
}

// leaseClock is the time leases are judged by here: the server's own, as the stores judge
// expiry by theirs.
func (b *Bulk) leaseClock() time.Time { return time.Now() }

// takeLocks acquires the leases of names for opID, all or none. A lease another operation
// holds is returned as busy (its name and holder), with nothing held.
func (b *Bulk) takeLocks(ctx context.Context, opID string, names []string) (held []gtc.Lease, busy *gtc.Lease, err error) {
	for _, n := range names {
		l, err := b.leases.Acquire(ctx, n, opID, b.opts.LeaseTTL)
		if err != nil {
			b.dropLocks(held)
			if h, ok := errors.AsType[*gtc.LeaseHeldError](err); ok {
				return nil, &h.Lease, nil
			}
			return nil, nil, err
		}
		held = append(held, l)
	}
	return held, nil, nil
}

// dropLocks releases leases; one that is already gone or taken is no error.
func (b *Bulk) dropLocks(leases []gtc.Lease) {
	ctx := context.WithoutCancel(b.baseCtx)
	for _, l := range leases {
		if err := b.leases.Release(ctx, l); err != nil {
			b.log.Warn("agent operation: releasing a lock failed; it expires by itself", "lease", l.Name, "err", err)
		}
	}
}

// heartbeat renews ex's leases until the walk is over (stopBeat). A lease that another
// server has taken meanwhile (this one could not renew it in time) stops the walk: the
// operation ends interrupted, and the other server may already have repaired it.
func (b *Bulk) heartbeat(ctx context.Context, ex *execution) {
	defer close(ex.beatDone)
	ex.mu.Lock()
	held := ex.leases
	ex.mu.Unlock()
	held = gtc.KeepLeases(ctx, b.leases, held, b.opts.LeaseTTL, func(l gtc.Lease) {
		b.log.Error("agent operation: lost its lock to another server; stopping", "operation_id", ex.op.OperationID, "lease", l.Name)
		ex.stop(gtc.AgentOpInterrupted)
	}, func(l gtc.Lease, err error) {
		b.log.Warn("agent operation: renewing a lock failed; retrying", "operation_id", ex.op.OperationID, "lease", l.Name, "err", err)
	})
	ex.mu.Lock()
	ex.leases = held
	ex.mu.Unlock()
}
