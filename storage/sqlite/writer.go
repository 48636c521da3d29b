package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	gtc "github.com/gtc-dev/gtc"
)

// maxBatch caps how many queued writes share one transaction, so one commit never holds
// the queue for long.
const maxBatch = 64

// How the writer gathers a batch. Taking only the writes queued at the moment a commit
// ends gives a batch of the writers that arrived during that commit: with 16 concurrent
// writers whose requests take longer to prepare than a commit takes, about five, each
// paying for a fifth of the fsyncs. So the writer expects as many writes as it has recently
// seen waiting at once (the peak of writers queued or waiting for their commit, over the
// last one to two peakWindows) and holds the batch open until they have come, until no
// write has come for gatherGap, or for gatherMax at most. A lone writer is never held: the
// peak it makes is one.
const (
	gatherGap  = 2 * time.Millisecond
	gatherMax  = 10 * time.Millisecond
	peakWindow = time.Second
)

// States of a writeOp; the writer and the caller race for the first transition.
const (
	opPending   int32 = iota
	opTaken           // the writer runs it; the caller waits for the result
	opAbandoned       // the caller gave up first; the writer skips it
)

// writeOp is one store operation queued for the writer.
type writeOp struct {
	ctx   context.Context
	name  string
	run   func(w *wtx) error
	state atomic.Int32
	done  chan error // buffered; receives exactly one result unless abandoned
	// bulk marks a write of many items (writeBulk), which is not counted among the waiting
	// writes.
	bulk bool
}

// wtx is the view of the shared write transaction an operation gets. Statements run with
// a context of their own: an operation's cancelled context must not interrupt the batch
// it shares with others (SQLite rolls back the whole transaction of an interrupted write).
type wtx struct {
	tx    *sql.Tx
	stmts map[*sql.Stmt]*sql.Stmt
	// lastRID is the largest rowid of item_revisions taken in this transaction (ridRead:
	// read from the table, once).
	lastRID int64
	ridRead bool
}

// reserveRIDs returns the first of n consecutive new rowids of item_revisions. The writer
// holds the database's only write transaction, so the largest rowid, read once in it, stays
// the largest but for the ones reserved here; an operation undone leaves a gap, never a
// rowid taken twice.
func (w *wtx) reserveRIDs(st *statements, n int) (int64, error) {
	if !w.ridRead {
		if err := w.stmt(st.revisionMaxRID).QueryRow().Scan(&w.lastRID); err != nil {
			return 0, err
		}
		w.ridRead = true
	}
	first := w.lastRID + 1
	w.lastRID += int64(n)
	return first, nil
}

// stmt returns st bound to the write transaction; database/sql reuses the statement
// already prepared on the writer connection.
func (w *wtx) stmt(st *sql.Stmt) *sql.Stmt {
	if ts, ok := w.stmts[st]; ok {
		return ts
	}
	ts := w.tx.Stmt(st)
	w.stmts[st] = ts
	return ts
}

// write queues run for the writer and waits for its result, which arrives only after the
// transaction holding it has committed. If ctx ends before the writer has taken the
// operation, it is never run and the context error is returned; once taken, it runs to the
// end and its real result is returned.
func (s *Store) write(ctx context.Context, name string, run func(w *wtx) error) error {
	return s.enqueue(ctx, &writeOp{ctx: ctx, name: name, run: run, done: make(chan error, 1)})
}

// writeBulk is write for an operation that carries many items (a chunk of ReplaceEach). Such
// a write shares its commit among its items already, so the writer never holds a batch open
// waiting for company on its account: it is not counted among the waiting writes the writer
// expects. It still joins the batch of whatever else is queued or expected.
func (s *Store) writeBulk(ctx context.Context, name string, run func(w *wtx) error) error {
	return s.enqueue(ctx, &writeOp{ctx: ctx, name: name, run: run, done: make(chan error, 1), bulk: true})
}

// enqueue queues op and waits for its result (write).
func (s *Store) enqueue(ctx context.Context, op *writeOp) error {
	name := op.name
	if err := ctx.Err(); err != nil {
		return wrapErr(name, err)
	}
	if s.closed.Load() {
		return errClosed(name)
	}
	// This write waits from now until the writer answers it (runBatch counts it out).
	counted := int64(1)
	if op.bulk {
		counted = 0
	}
	n := s.waiting.Add(counted)
	for p := s.peak.Load(); n > p && !s.peak.CompareAndSwap(p, n); p = s.peak.Load() {
	}
	select {
	case s.queue <- op:
	case <-ctx.Done():
		s.waiting.Add(-counted)
		return wrapErr(name, ctx.Err())
	case <-s.stop:
		s.waiting.Add(-counted)
		return errClosed(name)
	}
	select {
	case err := <-op.done:
		return err
	case <-ctx.Done():
		if op.state.CompareAndSwap(opPending, opAbandoned) {
			return wrapErr(name, ctx.Err())
		}
		return <-op.done
	}
}

// runWriter is the writer goroutine: it takes one queued operation, adds whatever else is
// queued at that moment, waits for the writers it expects (see gatherGap), and runs them
// as one transaction (group commit).
func (s *Store) runWriter() {
	defer close(s.writerDone)
	batch := make([]*writeOp, 0, maxBatch)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var prevPeak int64
	window := time.Now()
	for {
		select {
		case <-s.stop:
			return
		case op := <-s.queue:
			batch = append(batch[:0], op)
		}
		batch = s.drain(batch)
		now := time.Now()
		if now.Sub(window) >= peakWindow {
			prevPeak, window = s.peak.Swap(s.waiting.Load()), now
		}
		if want := int(min(maxBatch, max(prevPeak, s.peak.Load()))); len(batch) < want {
			deadline := now.Add(gatherMax)
			timer.Reset(gatherGap)
		gather:
			for len(batch) < want {
				select {
				case op := <-s.queue:
					batch = s.drain(append(batch, op))
					timer.Reset(min(gatherGap, time.Until(deadline)))
				case <-timer.C:
					break gather
				case <-s.stop:
					break gather // the operations taken are still run and answered
				}
			}
			timer.Stop()
		}
		s.runBatch(batch)
		clear(batch)
	}
}

// drain adds the operations queued at this moment to batch, up to maxBatch.
func (s *Store) drain(batch []*writeOp) []*writeOp {
	for len(batch) < maxBatch {
		select {
		case op := <-s.queue:
			batch = append(batch, op)
		default:
			return batch
		}
	}
	return batch
}

func (s *Store) runBatch(batch []*writeOp) {
	live := make([]*writeOp, 0, len(batch))
	for _, op := range batch {
		if !op.state.CompareAndSwap(opPending, opTaken) {
			s.answered(op) // abandoned by its caller
			continue
		}
		if err := op.ctx.Err(); err != nil {
			s.answer(op, wrapErr(op.name, err))
			continue
		}
		live = append(live, op)
	}
	if len(live) == 0 {
		return
	}
	results := make([]error, len(live))
	if err := s.runTx(live, results); err != nil {
		for i := range results {
			results[i] = err
		}
	}
	for i, op := range live {
		s.answer(op, results[i])
	}
}

// answer gives op its result; the write stops waiting first, so a caller that has its
// result is no longer counted among the waiting writes.
func (s *Store) answer(op *writeOp, err error) {
	s.answered(op)
	op.done <- err
}

// answered counts op out of the waiting writes (a bulk write was never counted in).
func (s *Store) answered(op *writeOp) {
	if !op.bulk {
		s.waiting.Add(-1)
	}
}

// runTx runs ops in one BEGIN IMMEDIATE transaction, each in its own savepoint, and
// commits. It fills results with each operation's own outcome and returns an error that
// replaces every result when the transaction as a whole failed.
func (s *Store) runTx(ops []*writeOp, results []error) error {
	ctx := context.Background()
	tx, err := s.wdb.BeginTx(ctx, nil) // BEGIN IMMEDIATE through _txlock
	if err != nil {
		return wrapErr("begin", err)
	}
	w := &wtx{tx: tx, stmts: make(map[*sql.Stmt]*sql.Stmt, 8)}
	if len(ops) == 1 {
		// The transaction is the savepoint.
		if results[0] = ops[0].run(w); results[0] != nil {
			if err := tx.Rollback(); err != nil && !errors.Is(err, sql.ErrTxDone) {
				return rolledBack(results[0], "rollback", err)
			}
			return nil
		}
	} else {
		for i, op := range ops {
			if _, err := w.stmt(s.stmts.savepoint).Exec(); err != nil {
				_ = tx.Rollback()
				return wrapErr("savepoint", err)
			}
			results[i] = op.run(w)
			if results[i] != nil {
				if _, err := w.stmt(s.stmts.rollbackTo).Exec(); err != nil {
					_ = tx.Rollback()
					return rolledBack(results[i], "rollback to savepoint", err)
				}
			}
			if _, err := w.stmt(s.stmts.release).Exec(); err != nil {
				_ = tx.Rollback()
				return wrapErr("release savepoint", err)
			}
		}
	}
	err = tx.Commit()
	if err == nil {
		s.commits.Add(1)
		s.committedWrites.Add(uint64(len(ops)))
	}
	if err != nil {
		cerr := wrapErr("commit", err)
		for i := range results {
			if results[i] == nil {
				results[i] = cerr
			}
		}
	}
	return nil
}

// rolledBack is the error of a batch whose rollback failed after an operation failed with
// cause. A full disk (SQLITE_FULL) may make SQLite roll back the whole transaction, not
// only the failing statement; the ROLLBACK (TO) that follows then fails for want of a
// transaction. Every operation of the batch was undone by the full disk, so each gets the
// full-disk error rather than a misleading "unavailable".
func rolledBack(cause error, op string, err error) error {
	if errors.Is(cause, gtc.ErrStorageFull) {
		return fmt.Errorf("sqlite: the shared transaction was rolled back: %w", cause)
	}
	return wrapErr(op, err)
}

// Commits reports how many write transactions the store has committed and how many writes
// they carried; with synchronous=FULL each commit is one fsync, so writes/commits is how many
// writes share one.
func (s *Store) Commits() (commits, writes uint64) {
	return s.commits.Load(), s.committedWrites.Load()
}
