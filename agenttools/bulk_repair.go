package agenttools

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/gtc-dev/gtc"
)

// Repair finishes the operations left running by a server that is gone: one whose locks
// no server holds any more (its leases expired or were never taken). A journaled item whose
// manual tags equal the planned tags and whose ETag moved on since the preview counts as
// applied, every other unfinished one as not attempted, and the operation becomes
// interrupted. Run it at startup, before executions are served, and then every
// BulkOptions.LeaseTTL: a server killed mid-execution is reported within twice that (a
// minute by default) by whichever server repairs first. It returns how many operations it repaired.
//
// Every hour at most, it also deletes the previews that expired more than previewKeep ago.
func (b *Bulk) Repair(ctx context.Context) (int, error) {
	b.sweepPreviews(ctx)
	ops, err := b.audit.Running(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, op := range ops {
		b.mu.Lock()
		_, live := b.running[op.OperationID]
		b.mu.Unlock()
		if live || b.holdsLock(ctx, op) {
			continue
		}
		if err := b.repairOne(ctx, op); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// holdsLock reports whether op's execution still holds a live lease: its server is running
// it. A lease that cannot be read counts as held, so an outage never repairs a live run.
func (b *Bulk) holdsLock(ctx context.Context, op *gtc.AgentOperation) bool {
	for _, n := range opLockNames(op) {
		l, err := b.leases.Get(ctx, n)
		switch {
		case errors.Is(err, gtc.ErrNotFound):
		case err != nil:
			return true
		case l.Holder == op.OperationID && l.LiveAt(b.leaseClock()):
			return true
		}
	}
	return false
}

func (b *Bulk) repairOne(ctx context.Context, op *gtc.AgentOperation) error {
	entries, err := b.audit.Items(ctx, op.OperationID, 0)
	if err != nil {
		return err
	}
	counts := gtc.AgentOpCounts{Planned: op.Counts.Planned}
	for i := range entries {
		e := &entries[i]
		if e.Result == gtc.AgentItemPending {
			e.Result = gtc.AgentItemNotAttempted
			it, err := b.items.Get(ctx, e.Key())
			switch {
			case err == nil && slices.Equal(it.ManualTags, e.PlannedTags) && !gtc.SameETag(it.ETag, e.ETagBefore):
				etag := it.ETag
				e.Result, e.ETagAfter, e.ManualTagsAfter = gtc.AgentItemApplied, &etag, slices.Clone(it.ManualTags)
			case err != nil && !errors.Is(err, gtc.ErrNotFound):
				return err
			}
		}
		bump(&counts, e.Result)
	}
	// Items never journaled were never written.
	counts.NotAttempted += max(0, counts.Planned-len(entries))
	for i := 0; i < len(entries); i += journalChunk {
		if err := b.audit.PutItems(ctx, op.OperationID, i, entries[i:min(i+journalChunk, len(entries))]); err != nil {
			return err
		}
	}
	now := b.now()
	op.Status, op.Counts, op.FinishedAt = gtc.AgentOpInterrupted, counts, &now
	if err := b.audit.Update(ctx, op); err != nil {
		return err
	}
	b.log.Warn("agent operation repaired after a restart", "operation_id", op.OperationID, "actor", op.Actor,
		"applied", counts.Applied, "not_attempted", counts.NotAttempted)
	return nil
}

// Retain deletes the audit entries older than days (GTC_AGENT_AUDIT_RETENTION_DAYS); 0
// keeps everything.
func (b *Bulk) Retain(ctx context.Context, days int) (int, error) {
	if days <= 0 {
		return 0, nil
	}
	return b.audit.DeleteBefore(ctx, b.now().Add(-time.Duration(days)*24*time.Hour))
}

const (
	// previewSweepEvery is how often Repair deletes expired previews.
	previewSweepEvery = time.Hour
	// previewKeep is how long past its expiry a preview is kept, so that an execution is
	// still told it expired (PREVIEW_EXPIRED) or was executed (ALREADY_EXECUTED).
	previewKeep = time.Hour
)

// sweepPreviews deletes the previews that expired more than previewKeep ago, unless it did
// less than previewSweepEvery ago. A failure is logged; the next sweep tries again.
func (b *Bulk) sweepPreviews(ctx context.Context) {
	now := b.now()
	b.mu.Lock()
	due := b.swept.IsZero() || now.Sub(b.swept) >= previewSweepEvery
	if due {
		b.swept = now
	}
	b.mu.Unlock()
	if !due {
		return
	}
	n, err := b.previews.DeleteExpired(ctx, now.Add(-previewKeep))
	switch {
	case err != nil && ctx.Err() == nil:
		b.log.Warn("deleting expired agent previews failed", "err", err)
	case n > 0:
		b.log.Info("expired agent previews deleted", "count", n)
	}
}
