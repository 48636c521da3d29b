package agenttools

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/gtc-dev/gtc"
)

const (
	// journalChunk is how many items are journaled and written per step.
	journalChunk = 100
	// chunksInFlight is how many steps of one execution run at once.
	chunksInFlight = 2
	// outageFailures consecutive failed items abort a run as a store outage.
	outageFailures = 20
)

// execution is one running operation.
type execution struct {
	op      *gtc.AgentOperation
	plan    *plan
	entries []gtc.AgentOpItem
	done    chan struct{}
	// stopBeat ends the heartbeat that renews leases; beatDone closes when it has ended.
	stopBeat context.CancelFunc
	beatDone chan struct{}

	mu        sync.Mutex
	leases    []gtc.Lease // its tag locks (bulk_leases.go)
	processed int
	counts    gtc.AgentOpCounts
	failures  int    // failed items in a row
	outcome   string // completed while the walk goes on; failed or interrupted stop it
}

// stopped reports whether the walk must stop.
func (e *execution) stopped() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.outcome != gtc.AgentOpCompleted
}

// stop ends the walk with outcome, unless it already ended.
func (e *execution) stop(outcome string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.outcome == gtc.AgentOpCompleted {
		e.outcome = outcome
	}
}

// record stores the result of item i and counts failures in a row.
func (e *execution) record(i int, res, reason string, it *gtc.Item) {
	e.mu.Lock()
	defer e.mu.Unlock()
	en := &e.entries[i]
	en.Result = res
	if reason != "" {
		en.Reason = &reason
	}
	if it != nil {
		etag := it.ETag
		en.ETagAfter = &etag
		en.ManualTagsAfter = slices.Clone(it.ManualTags)
	}
	e.processed++
	bump(&e.counts, res)
	if res == gtc.AgentItemFailed {
		e.failures++
	} else {
		e.failures = 0
	}
	if e.failures >= outageFailures && e.outcome == gtc.AgentOpCompleted {
		e.outcome = gtc.AgentOpFailed
	}
}

func (e *execution) snapshot() (gtc.AgentOperation, int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	op := *e.op
	op.Counts = e.counts
	return op, e.processed
}

// execute runs a previewed operation: permission, the matching preview, slots and
// tag locks, the audit header, then the writes, detached from the request. target is the
// operation an undo reverts (nil otherwise).
func (b *Bulk) execute(ctx context.Context, call ToolCall, a opArgs, target *gtc.AgentOperation) ToolResult {
	if !b.canWrite(call.Caller) {
		return ToolFailure(CodeForbidden, "Forbidden: executing tag changes needs one of the roles "+joinQuoted(b.opts.WriteRoles)+"; previews are open to everyone.", nil)
	}
	// A preview that changed between its read and its consumption (a new dry run of the
	// same parameters, or another server's execution that could not start and gave it back)
	// is read again.
	for range consumeAttempts {
		if r, again := b.tryExecute(ctx, call, a, target); !again {
			return r
		}
	}
	return ToolFailure(CodeBusy, "Not executed: the preview kept changing while it was being executed (a new dry run of the same parameters, or an execution on another server); try again.", nil)
}

// consumeAttempts bounds how many times execute reads a preview that changed before it
// could consume it.
const consumeAttempts = 3

// noPreview answers an execution without a preview to apply.
func noPreview() ToolResult {
	return ToolFailure(CodeNoPreview, "Not executed: you have no preview for exactly these parameters (none, or it expired or was evicted). Call with dry_run=true first, show it to the user, then repeat with dry_run=false.", nil)
}

// alreadyExecuted answers an execution of a preview that operation opID consumed.
func (b *Bulk) alreadyExecuted(ctx context.Context, opID string) ToolResult {
	status := gtc.AgentOpRunning
	if op, err := b.audit.Get(ctx, opID); err == nil {
		status = op.Status
	}
	return ToolFailure(CodeAlreadyExecuted, "Not executed again: this preview was already executed as "+opID+" ("+status+"). Preview again for a new change.",
		map[string]any{"operationId": opID, "status": status})
}

// tryExecute is one attempt of execute; again reports a preview that changed before this
// attempt could consume it.
func (b *Bulk) tryExecute(ctx context.Context, call ToolCall, a opArgs, target *gtc.AgentOperation) (_ ToolResult, again bool) {
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if closed {
		return shuttingDown(), false
	}
	now := b.now()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.opts.ToolTimeout)
	defer cancel()
	pv, err := b.previews.Get(sctx, call.Caller.UserID, a.hash())
	switch {
	case isNotFound(err):
		return noPreview(), false
	case err != nil:
		return b.internal(ctx, "read the preview", err, false), false
	case pv.State == gtc.AgentPreviewConsumed:
		return b.alreadyExecuted(ctx, pv.OperationID), false
	case now.After(pv.ExpiresAt):
		return ToolFailure(CodePreviewExpired, "Not executed: the preview "+pv.ID+" expired at "+ContentTime(pv.ExpiresAt)+". Preview again, show it to the user, then execute.",
			map[string]any{"previewId": pv.ID, "expiredAt": DataTime(pv.ExpiresAt)}), false
	}
	p, err := decodePlan(pv.Plan)
	if err != nil {
		return b.internal(ctx, "read the preview", err, false), false
	}
	p.target = target

	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return shuttingDown(), false
	}
	if len(b.running) >= b.opts.MaxConcurrentOps {
		b.mu.Unlock()
		return ToolFailure(CodeBusy, "Not executed: the server is running as many tag operations as it allows; try again shortly. The preview stays valid.", nil), false
	}
	opID := b.newID("op_")
	argsJSON, _ := json.Marshal(a.wire()) // strings and nils cannot fail
	ua := []rune(call.UserAgent)
	if len(ua) > 200 {
		ua = ua[:200]
	}
	op := &gtc.AgentOperation{OperationID: opID, Kind: a.Operation, Actor: call.Caller.UserID, Via: call.Via, Args: argsJSON,
		Tags: a.tags(), UserAgent: string(ua), PreviewID: pv.ID, PreviewedAt: pv.CreatedAt, StartedAt: now, Status: gtc.AgentOpRunning,
		Counts:            gtc.AgentOpCounts{Planned: len(p.changes)},
		ExcludedAtPreview: gtc.AgentOpExcluded{Unchanged: p.unchanged, Conflict: len(p.skipped)}}
	if a.Operation == gtc.AgentKindUndo {
		op.UndoOf = &a.OperationID
		op.Tags = p.target.Tags
	}
	ex := &execution{op: op, plan: p, done: make(chan struct{}), beatDone: make(chan struct{}),
		outcome: gtc.AgentOpCompleted}
	b.running[opID] = ex
	b.wg.Add(1)
	b.mu.Unlock()

	// The preview is consumed by one execution, on whichever server: a write conditional on
	// the version read.
	consumed, err := b.previews.SetState(sctx, pv, gtc.AgentPreviewConsumed, opID)
	if err != nil {
		b.release(ex, nil, false)
		return b.lostPreview(ctx, sctx, call, a, opID, err)
	}

	// The caller's lease first: a second execution of one user is BUSY whatever its tags.
	leases, busy, err := b.takeLocks(context.WithoutCancel(ctx), opID, append([]string{userLockName(op.Actor)}, lockNames(a)...))
	if err != nil {
		b.release(ex, &consumed, true)
		return b.internal(ctx, "lock the tags", err, false), false
	}
	if busy != nil {
		b.release(ex, &consumed, true)
		holder := busy.Holder
		if busy.Name == userLockName(op.Actor) {
			return ToolFailure(CodeBusy, "Not executed: your operation "+holder+" is still running; one at a time per user. The preview stays valid.",
				map[string]any{"operationId": holder, "actor": op.Actor}), false
		}
		actor := "another user"
		if other, err := b.audit.Get(ctx, holder); err == nil {
			actor = other.Actor
		}
		return ToolFailure(CodeTagBusy, "Not executed: operation "+holder+" by "+actor+" is changing the same tag; try again when it has finished. The preview stays valid.",
			map[string]any{"operationId": holder, "actor": actor}), false
	}
	ex.leases = leases
	if err := b.begin(ctx, op); err != nil {
		b.release(ex, &consumed, true)
		if errors.Is(err, gtc.ErrConflict) {
			return ToolFailure(CodeAlreadyUndone, "Not undone: "+a.OperationID+" was undone by another operation meanwhile.", map[string]any{"operationId": a.OperationID}), false
		}
		return b.internal(ctx, "start the operation", err, false), false
	}
	// The leases are renewed until the walk ends, through a shutdown too (the walk's last
	// journal writes happen under them).
	beatCtx, stopBeat := context.WithCancel(context.WithoutCancel(b.baseCtx))
	ex.stopBeat = stopBeat
	go b.heartbeat(beatCtx, ex)
	go b.run(ex)
	return b.await(ctx, ex), false
}

func shuttingDown() ToolResult {
	return ToolFailure(CodeBusy, "Not executed: the server is shutting down; try again in a minute. The preview stays valid.", nil)
}

// lostPreview answers an execution whose preview could not be consumed (err): another
// execution consumed it (ALREADY_EXECUTED naming it), it went (NO_PREVIEW), or it changed
// and is read again (again).
func (b *Bulk) lostPreview(ctx, sctx context.Context, call ToolCall, a opArgs, opID string, err error) (_ ToolResult, again bool) {
	switch {
	case isNotFound(err):
		return noPreview(), false
	case !errors.Is(err, gtc.ErrPreconditionFailed):
		return b.internal(ctx, "consume the preview", err, false), false
	}
	now, err := b.previews.Get(sctx, call.Caller.UserID, a.hash())
	switch {
	case isNotFound(err):
		return noPreview(), false
	case err != nil:
		return b.internal(ctx, "read the preview", err, false), false
	case now.State == gtc.AgentPreviewConsumed && now.OperationID == opID:
		// This attempt's own write, applied before a failure of its request was reported:
		// it did not start, so the preview goes back.
		if _, err := b.previews.SetState(sctx, now, gtc.AgentPreviewOpen, ""); err != nil &&
			!errors.Is(err, gtc.ErrPreconditionFailed) && !errors.Is(err, gtc.ErrNotFound) {
			return b.internal(ctx, "consume the preview", err, false), false
		}
	case now.State == gtc.AgentPreviewConsumed:
		return b.alreadyExecuted(ctx, now.OperationID), false
	}
	return ToolResult{}, true
}

// begin records the undo on its target (at most once) and writes the audit header.
func (b *Bulk) begin(ctx context.Context, op *gtc.AgentOperation) error {
	ctx = context.WithoutCancel(ctx)
	if op.UndoOf != nil {
		if err := b.audit.SetUndoneBy(ctx, *op.UndoOf, op.OperationID); err != nil {
			return err
		}
	}
	return b.audit.Create(ctx, op)
}

// await waits for ex up to GTC_AGENT_EXEC_WAIT, or until the caller goes away, and answers
// its result or its progress.
func (b *Bulk) await(ctx context.Context, ex *execution) ToolResult {
	t := time.NewTimer(b.opts.ExecWait)
	defer t.Stop()
	select {
	case <-ex.done:
		op, _ := ex.snapshot()
		return executionResult(&op, ex.plan, ex.entries)
	case <-t.C:
	case <-ctx.Done():
	}
	op, processed := ex.snapshot()
	return runningResult(&op, ex.plan, processed)
}

// release frees the slots and locks of ex; reopen puts its preview, which ex consumed,
// back when ex did not start (a lost race is no matter: someone else changed it).
func (b *Bulk) release(ex *execution, pv *gtc.AgentPreview, reopen bool) {
	ex.mu.Lock()
	leases := ex.leases
	ex.leases = nil
	ex.mu.Unlock()
	b.dropLocks(leases)
	if reopen && pv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), b.opts.ToolTimeout)
		if _, err := b.previews.SetState(ctx, *pv, gtc.AgentPreviewOpen, ""); err != nil &&
			!errors.Is(err, gtc.ErrPreconditionFailed) && !errors.Is(err, gtc.ErrNotFound) {
			b.log.Warn("agent operation: reopening its preview failed", "operation_id", ex.op.OperationID, "preview_id", pv.ID, "err", err)
		}
		cancel()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.running, ex.op.OperationID)
	b.wg.Done()
}

// run walks the change list in chunks: journal the intents, write the items in batches,
// journal the results; then it finishes the header.
func (b *Bulk) run(ex *execution) {
	ctx := b.baseCtx
	store := context.WithoutCancel(ctx) // the log is written even while shutting down
	changes := ex.plan.changes
	ex.entries = make([]gtc.AgentOpItem, len(changes))
	for i, c := range changes {
		ex.entries[i] = gtc.AgentOpItem{DatasetName: c.key.DatasetName, Bucket: c.key.Bucket, ID: c.key.ID, Result: gtc.AgentItemPending,
			ETagBefore: c.etag, ManualTagsBefore: c.before, PlannedTags: c.after}
	}
	// Chunks overlap: while the store writes one, the next one's intents are journaled and
	// its items read and prepared. Each chunk's intents are journaled before any of its
	// writes, in chunk order, so the journal never has a gap.
	slots := make(chan struct{}, chunksInFlight)
	var walking sync.WaitGroup
	for next := 0; next < len(changes); next += journalChunk {
		slots <- struct{}{}
		if ex.stopped() {
			break
		}
		end := min(next+journalChunk, len(changes))
		if err := b.audit.PutItems(store, ex.op.OperationID, next, ex.entries[next:end]); err != nil {
			b.log.Error("agent operation: journaling failed", "operation_id", ex.op.OperationID, "err", err)
			ex.stop(gtc.AgentOpFailed)
			break
		}
		walking.Go(func() {
			defer func() { <-slots }()
			b.writeChunk(ctx, ex, next, end)
			b.finishChunk(store, ex, next, end)
		})
	}
	walking.Wait()
	// What the run did not reach is logged as not attempted, so the entry lists every
	// previewed item.
	first := -1
	ex.mu.Lock()
	for i := range ex.entries {
		if ex.entries[i].Result == gtc.AgentItemPending {
			if first < 0 {
				first = i / journalChunk * journalChunk
			}
			ex.entries[i].Result = gtc.AgentItemNotAttempted
			ex.counts.NotAttempted++
		}
	}
	ex.mu.Unlock()
	for i := first; i >= 0 && i < len(ex.entries); i += journalChunk {
		end := min(i+journalChunk, len(ex.entries))
		if err := b.audit.PutItems(store, ex.op.OperationID, i, ex.entries[i:end]); err != nil {
			b.log.Error("agent operation: logging not attempted items failed", "operation_id", ex.op.OperationID, "err", err)
			break
		}
	}
	ex.mu.Lock()
	ex.counts.Planned = len(changes)
	outcome := ex.outcome
	if outcome == gtc.AgentOpCompleted && ex.counts.Applied != len(changes) {
		outcome = gtc.AgentOpPartial
	}
	finished := b.now()
	ex.op.Status, ex.op.Counts, ex.op.FinishedAt = outcome, ex.counts, &finished
	ex.mu.Unlock()
	if err := b.audit.Update(store, ex.op); err != nil {
		b.log.Error("agent operation: finishing the audit entry failed", "operation_id", ex.op.OperationID, "err", err)
	}
	b.log.Info("agent operation", "operation_id", ex.op.OperationID, "actor", ex.op.Actor, "via", ex.op.Via, "kind", ex.op.Kind,
		"status", outcome, "planned", ex.counts.Planned, "applied", ex.counts.Applied, "skipped_changed", ex.counts.SkippedChanged,
		"skipped_conflict", ex.counts.SkippedConflict, "skipped_missing", ex.counts.SkippedMissing, "failed", ex.counts.Failed,
		"not_attempted", ex.counts.NotAttempted)
	ex.stopBeat()
	<-ex.beatDone
	b.release(ex, nil, false)
	close(ex.done)
}

// writeChunk writes items [from, to) in batches through the tag save path, which hands
// each batch to the store at once (ItemStore.ReplaceEach: SQLite writes it in a few shared
// transactions, Cosmos DB as parallel requests). The rate limit applies to every write: a
// batch is as many items as it lets through, at least one. A shutdown, or twenty failures in
// a row (a store outage), stops the walk after the batch in flight: items not started stay
// pending.
func (b *Bulk) writeChunk(ctx context.Context, ex *execution, from, to int) {
	// The walk outlives the call that started it: its writes are the operation's actor's.
	ctx = gtc.WithChange(gtc.WithCaller(ctx, gtc.Caller{UserID: ex.op.Actor}),
		gtc.Change{Source: gtc.SourceAgentPrefix + ex.op.OperationID, OperationID: ex.op.OperationID})
	for next := from; next < to && !ex.stopped(); {
		n, err := b.limiter.take(ctx, to-next)
		if err != nil {
			ex.stop(gtc.AgentOpInterrupted)
			return
		}
		b.writeBatch(ctx, ex, next, next+n)
		next += n
	}
}

// finishChunk journals the results of items [from, to); items of the chunk not walked stay
// pending until the not-attempted pass.
func (b *Bulk) finishChunk(ctx context.Context, ex *execution, from, to int) {
	if to <= from {
		return
	}
	if err := b.audit.PutItems(ctx, ex.op.OperationID, from, ex.entries[from:to]); err != nil {
		b.log.Error("agent operation: journaling results failed", "operation_id", ex.op.OperationID, "err", err)
	}
}

func bump(c *gtc.AgentOpCounts, res string) {
	switch res {
	case gtc.AgentItemApplied:
		c.Applied++
	case gtc.AgentItemSkippedChanged:
		c.SkippedChanged++
	case gtc.AgentItemSkippedConflict:
		c.SkippedConflict++
	case gtc.AgentItemSkippedMissing:
		c.SkippedMissing++
	case gtc.AgentItemFailed:
		c.Failed++
	case gtc.AgentItemNotAttempted:
		c.NotAttempted++
	}
}

// Reasons of the per-item results.
const (
	reasonChanged = "changed since preview (etag differs); left as is"
	reasonMissing = "deleted since preview"
)

// writeBatch writes items [from, to) through the tag save path and records each one's
// result. A lost race is never retried; transient store errors are, with backoff, for the
// items that met them.
func (b *Bulk) writeBatch(ctx context.Context, ex *execution, from, to int) {
	pending := make([]int, 0, to-from)
	for i := from; i < to; i++ {
		pending = append(pending, i)
	}
	last := make(map[int]error)
	for attempt := range b.opts.WriteRetries {
		changes := make([]gtc.ManualTagsChange, len(pending))
		for n, i := range pending {
			c := ex.plan.changes[i]
			changes[n] = gtc.ManualTagsChange{Key: c.key, Expect: c.etag, Manual: c.after}
		}
		written, errs := b.saver.SetManualTagsEach(ctx, changes)
		again := pending[:0]
		for n, i := range pending {
			res, reason, final := writeResult(errs[n])
			if final {
				ex.record(i, res, reason, written[n])
				continue
			}
			last[i] = errs[n]
			again = append(again, i)
		}
		pending = again
		if len(pending) == 0 {
			return
		}
		if ctx.Err() != nil {
			for _, i := range pending {
				ex.record(i, gtc.AgentItemNotAttempted, "interrupted by shutdown", nil)
			}
			ex.stop(gtc.AgentOpInterrupted)
			return
		}
		if attempt < b.opts.WriteRetries-1 {
			d := time.Duration(float64(100*time.Millisecond<<(2*attempt)) * (0.5 + rand.Float64()))
			if b.sleep(ctx, d) != nil {
				break
			}
		}
	}
	for _, i := range pending {
		b.log.Warn("agent operation: item write failed", "item", ex.plan.changes[i].key.String(), "err", last[i])
		ex.record(i, gtc.AgentItemFailed, "store error after retries", nil)
	}
}

// writeResult classifies the outcome of one item's write: its result and reason, and
// whether that is final (false: a transient store error, worth another attempt).
func writeResult(err error) (result, reason string, final bool) {
	var fe *gtc.TagFormatError
	var re *gtc.TagRuleError
	switch {
	case err == nil:
		return gtc.AgentItemApplied, "", true
	case errors.Is(err, gtc.ErrNotFound):
		return gtc.AgentItemSkippedMissing, reasonMissing, true
	case errors.Is(err, gtc.ErrPreconditionFailed):
		return gtc.AgentItemSkippedChanged, reasonChanged, true
	case errors.As(err, &re), errors.As(err, &fe):
		return gtc.AgentItemSkippedConflict, err.Error(), true
	case errors.Is(err, gtc.ErrTooLarge), errors.Is(err, gtc.ErrInvalidArgument):
		return gtc.AgentItemFailed, "the store refused the item", true
	}
	return "", "", false
}

// Close refuses new executions and lets running ones go on for the shutdown grace; what
// is left then is not attempted and the operations end interrupted.
func (b *Bulk) Close(ctx context.Context) {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	done := make(chan struct{})
	go func() { b.wg.Wait(); close(done) }()
	t := time.NewTimer(b.opts.ShutdownGrace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		b.cancel()
		<-done
	case <-ctx.Done():
		b.cancel()
		<-done
	}
	b.cancel()
}

// Wait blocks until every running execution has finished (tests, and after Close).
func (b *Bulk) Wait() { b.wg.Wait() }

func joinQuoted(ss []string) string {
	out := ""
	for i, s := range ss {
		if i > 0 {
			out += ", "
		}
		out += "'" + s + "'"
	}
	return out
}
