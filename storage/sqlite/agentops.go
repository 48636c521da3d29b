package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	gtc "github.com/gtc-dev/gtc"
)

// agentOpStore implements gtc.AgentOperationStore on the tables of schema version 3. Every
// write is one operation of the serialized writer, so a read-modify-write of a header (Update,
// SetUndoneBy) cannot interleave with another and needs no ETag.
type agentOpStore struct {
	s *Store
}

var _ gtc.AgentOperationStore = (*agentOpStore)(nil)

// AgentOperations returns the agent audit log.
func (s *Store) AgentOperations() gtc.AgentOperationStore { return s.agentOps }

// agentDeleteBatch is how many operations one write of DeleteBefore removes: an operation
// takes its items (thousands) with it, and one write holds the writer, so retention must not
// delete a year of the log in a single transaction.
const agentDeleteBatch = 50

// encodeAgentOp checks o and turns it into its stored form (gtc.AgentOpRecord, as the Cosmos
// DB store keeps it too).
func encodeAgentOp(op string, o *gtc.AgentOperation) (*gtc.AgentOpRecord, error) {
	r, err := gtc.NewAgentOpRecord(o)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", op, err)
	}
	return r, nil
}

// decodeAgentOp reads a stored header. A row that does not decode is a damaged database,
// nothing the caller can fix: ErrUnavailable.
func decodeAgentOp(raw []byte) (*gtc.AgentOperation, error) {
	var r gtc.AgentOpRecord
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("sqlite: stored agent operation unreadable: %w: %w", gtc.ErrUnavailable, err)
	}
	o, err := r.Operation()
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	return o, nil
}

func requireOpID(op, id string) error {
	if id == "" {
		return fmt.Errorf("sqlite: %s: %w: empty operation id", op, gtc.ErrInvalidArgument)
	}
	return nil
}

// Create stores a new header; an existing id is ErrConflict.
func (as *agentOpStore) Create(ctx context.Context, o *gtc.AgentOperation) error {
	const op = "create agent operation"
	d, err := encodeAgentOp(op, o)
	if err != nil {
		return err
	}
	doc, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("sqlite: %s %s: %w: %w", op, d.OperationID, gtc.ErrInvalidArgument, err)
	}
	st := &as.s.stmts
	return as.s.write(ctx, op, func(w *wtx) error {
		if _, err := w.stmt(st.agentOpInsert).Exec(d.OperationID, d.StartedAt, d.Status, d.Actor, string(doc)); err != nil {
			// The primary key is the only constraint the insert can break: ErrConflict.
			return wrapErr(op+" "+d.OperationID, err)
		}
		for _, tag := range d.Tags {
			if _, err := w.stmt(st.agentTagInsert).Exec(tag, d.StartedAt, d.OperationID); err != nil {
				return wrapErr(op, err)
			}
		}
		return nil
	})
}

// Get returns a header; an unknown id is ErrNotFound.
func (as *agentOpStore) Get(ctx context.Context, id string) (*gtc.AgentOperation, error) {
	const op = "get agent operation"
	if err := requireOpID(op, id); err != nil {
		return nil, err
	}
	if as.s.closed.Load() {
		return nil, errClosed(op)
	}
	var doc []byte
	err := as.s.stmts.agentOpGet.QueryRowContext(ctx, id).Scan(&doc)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sqlite: %s %s: %w", op, id, gtc.ErrNotFound)
	}
	if err != nil {
		return nil, wrapErr(op, err)
	}
	return decodeAgentOp(doc)
}

// change reads the stored header of id inside the write, applies c and stores it; a c that
// changes nothing (the same undo again) writes nothing.
func (as *agentOpStore) change(ctx context.Context, op, id string, c *gtc.AgentOpChange) error {
	st := &as.s.stmts
	return as.s.write(ctx, op, func(w *wtx) error {
		var raw []byte
		err := w.stmt(st.agentOpDoc).QueryRow(id).Scan(&raw)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("sqlite: %s %s: %w", op, id, gtc.ErrNotFound)
		}
		if err != nil {
			return wrapErr(op, err)
		}
		var r gtc.AgentOpRecord
		if err := json.Unmarshal(raw, &r); err != nil {
			return fmt.Errorf("sqlite: stored agent operation %s unreadable: %w: %w", id, gtc.ErrUnavailable, err)
		}
		changed, err := r.Apply(c)
		if err != nil {
			return fmt.Errorf("sqlite: %s %s: %w", op, id, err)
		}
		if !changed {
			return nil
		}
		doc, err := json.Marshal(&r)
		if err != nil {
			return fmt.Errorf("sqlite: %s %s: %w: %w", op, id, gtc.ErrInvalidArgument, err)
		}
		if _, err := w.stmt(st.agentOpUpdate).Exec(r.Status, string(doc), id); err != nil {
			return wrapErr(op, err)
		}
		return nil
	})
}

// Update stores o's Status, Counts and FinishedAt; nothing else changes.
func (as *agentOpStore) Update(ctx context.Context, o *gtc.AgentOperation) error {
	const op = "update agent operation"
	// Checked before the write, so a bad time stores nothing.
	c, err := gtc.NewAgentOpUpdate(o)
	if err != nil {
		return fmt.Errorf("sqlite: %s: %w", op, err)
	}
	return as.change(ctx, op, o.OperationID, c)
}

// SetUndoneBy records the undo of id. Recording the same undo again succeeds, so a caller
// that retries after a lost answer is not told its own undo conflicts; another undo is
// ErrConflict.
func (as *agentOpStore) SetUndoneBy(ctx context.Context, id, undoID string) error {
	const op = "set undone by"
	if err := requireOpID(op, id); err != nil {
		return err
	}
	c, err := gtc.NewAgentOpUndo(undoID)
	if err != nil {
		return fmt.Errorf("sqlite: %s %s: %w", op, id, err)
	}
	return as.change(ctx, op, id, c)
}

// PutItems stores items at positions first, first+1, … in one write, so a chunk of journaled
// intents or results is stored whole or not at all. An unknown operation is ErrNotFound; a
// first beyond the stored items would leave a gap and is ErrInvalidArgument.
func (as *agentOpStore) PutItems(ctx context.Context, id string, first int, items []gtc.AgentOpItem) error {
	const op = "put agent operation items"
	if err := requireOpID(op, id); err != nil {
		return err
	}
	if first < 0 {
		return fmt.Errorf("sqlite: %s %s: %w: negative position %d", op, id, gtc.ErrInvalidArgument, first)
	}
	docs := make([]string, len(items))
	for i := range items {
		b, err := json.Marshal(&items[i])
		if err != nil {
			return fmt.Errorf("sqlite: %s %s: %w: item %d: %w", op, id, gtc.ErrInvalidArgument, first+i, err)
		}
		docs[i] = string(b)
	}
	st := &as.s.stmts
	return as.s.write(ctx, op, func(w *wtx) error {
		var exists bool
		if err := w.stmt(st.agentOpHeld).QueryRow(id).Scan(&exists); err != nil {
			return wrapErr(op, err)
		}
		if !exists {
			return fmt.Errorf("sqlite: %s %s: %w", op, id, gtc.ErrNotFound)
		}
		var end int
		if err := w.stmt(st.agentItemsEnd).QueryRow(id).Scan(&end); err != nil {
			return wrapErr(op, err)
		}
		if first > end {
			return fmt.Errorf("sqlite: %s %s: %w: position %d leaves a gap after the %d stored items", op, id, gtc.ErrInvalidArgument, first, end)
		}
		for i, doc := range docs {
			if _, err := w.stmt(st.agentItemPut).Exec(id, first+i, doc); err != nil {
				return wrapErr(op, err)
			}
		}
		return nil
	})
}

// Items returns the operation's items in position order, at most limit (≤ 0: all). An
// unknown operation is ErrNotFound, so a caller can tell it from one without items.
func (as *agentOpStore) Items(ctx context.Context, id string, limit int) ([]gtc.AgentOpItem, error) {
	const op = "agent operation items"
	if err := requireOpID(op, id); err != nil {
		return nil, err
	}
	if as.s.closed.Load() {
		return nil, errClosed(op)
	}
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	tx, err := as.s.beginRead(ctx)
	if err != nil {
		return nil, wrapErr(op, err)
	}
	defer func() { _ = tx.Rollback() }()
	var exists bool
	if err := tx.StmtContext(ctx, as.s.stmts.agentOpExists).QueryRowContext(ctx, id).Scan(&exists); err != nil {
		return nil, wrapErr(op, err)
	}
	if !exists {
		return nil, fmt.Errorf("sqlite: %s %s: %w", op, id, gtc.ErrNotFound)
	}
	rows, err := tx.StmtContext(ctx, as.s.stmts.agentItems).QueryContext(ctx, id, limit)
	if err != nil {
		return nil, wrapErr(op, err)
	}
	raws, err := readDocs(rows)
	if err != nil {
		return nil, wrapErr(op, err)
	}
	if err := tx.Commit(); err != nil {
		return nil, wrapErr(op, err)
	}
	out := make([]gtc.AgentOpItem, len(raws))
	for i, raw := range raws {
		if err := json.Unmarshal(raw, &out[i]); err != nil {
			return nil, fmt.Errorf("sqlite: stored item %d of agent operation %s unreadable: %w: %w", i, id, gtc.ErrUnavailable, err)
		}
	}
	return out, nil
}

// readDocs reads a single text column and closes rows; decoding waits until the read
// transaction has ended, so the connection is held for the reads only.
func readDocs(rows *sql.Rows) ([][]byte, error) {
	defer rows.Close()
	var out [][]byte
	for rows.Next() {
		var doc []byte
		if err := rows.Scan(&doc); err != nil {
			return nil, err
		}
		out = append(out, doc)
	}
	return out, rows.Err()
}

func decodeAgentOps(raws [][]byte) ([]*gtc.AgentOperation, error) {
	out := make([]*gtc.AgentOperation, 0, len(raws))
	for _, raw := range raws {
		o, err := decodeAgentOp(raw)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

// agentListSQL is the count and the page of List for f. With a tag the walk starts from
// agent_operation_tags, whose key is already in listing order within one tag.
func agentListSQL(f gtc.AgentOpFilter) (count, page sqlText) {
	if f.Tag != "" {
		from := ` FROM agent_operation_tags t JOIN agent_operations o ON o.operation_id = t.operation_id WHERE t.tag = ?`
		args := []any{f.Tag}
		// Without an actor the count needs no header: the foreign key guarantees one.
		count = sqlText{SQL: `SELECT count(*) FROM agent_operation_tags WHERE tag = ?`, Args: args}
		if f.Actor != "" {
			from += ` AND o.actor = ?`
			args = append(args, f.Actor)
			count = sqlText{SQL: `SELECT count(*)` + from, Args: args}
		}
		page = sqlText{SQL: `SELECT o.doc` + from + ` ORDER BY t.started_at DESC, t.operation_id DESC LIMIT ?`,
			Args: append(slices.Clone(args), f.Limit)}
		return count, page
	}
	from := ` FROM agent_operations`
	var args []any
	if f.Actor != "" {
		from += ` WHERE actor = ?`
		args = append(args, f.Actor)
	}
	count = sqlText{SQL: `SELECT count(*)` + from, Args: args}
	page = sqlText{SQL: `SELECT doc` + from + ` ORDER BY started_at DESC, operation_id DESC LIMIT ?`,
		Args: append(slices.Clone(args), f.Limit)}
	return count, page
}

// List returns the matching headers newest first and how many match in all, both read in
// one read transaction so the total is that of the page.
func (as *agentOpStore) List(ctx context.Context, f gtc.AgentOpFilter) ([]*gtc.AgentOperation, int, error) {
	const op = "list agent operations"
	if f.Limit < 1 || f.Limit > 1000 {
		return nil, 0, fmt.Errorf("sqlite: %s: %w: limit %d is not within 1–1000", op, gtc.ErrInvalidArgument, f.Limit)
	}
	if as.s.closed.Load() {
		return nil, 0, errClosed(op)
	}
	count, page := agentListSQL(f)
	set, err := as.s.prepareSet(ctx, &count, &page)
	if err != nil {
		return nil, 0, wrapErr(op, err)
	}
	defer set.close()
	tx, err := as.s.beginRead(ctx)
	if err != nil {
		return nil, 0, wrapErr(op, err)
	}
	defer func() { _ = tx.Rollback() }()
	var total int
	if err := tx.StmtContext(ctx, set.m[count.SQL]).QueryRowContext(ctx, count.Args...).Scan(&total); err != nil {
		return nil, 0, wrapErr(op, err)
	}
	rows, err := set.query(ctx, tx, page)
	if err != nil {
		return nil, 0, wrapErr(op, err)
	}
	raws, err := readDocs(rows)
	if err != nil {
		return nil, 0, wrapErr(op, err)
	}
	if err := tx.Commit(); err != nil {
		return nil, 0, wrapErr(op, err)
	}
	out, err := decodeAgentOps(raws)
	if err != nil {
		return nil, 0, err
	}
	return out, total, nil
}

// Running returns every header whose status is running, newest first.
func (as *agentOpStore) Running(ctx context.Context) ([]*gtc.AgentOperation, error) {
	const op = "running agent operations"
	if as.s.closed.Load() {
		return nil, errClosed(op)
	}
	rows, err := as.s.stmts.agentRunning.QueryContext(ctx)
	if err != nil {
		return nil, wrapErr(op, err)
	}
	raws, err := readDocs(rows)
	if err != nil {
		return nil, wrapErr(op, err)
	}
	return decodeAgentOps(raws)
}

// DeleteBefore deletes every operation that is not running and started before t, with its
// items and tags (ON DELETE CASCADE), agentDeleteBatch operations per write, and returns how
// many it deleted. Each batch commits on its own: an error after some batches leaves the
// log shorter but consistent, and the next run deletes the rest.
func (as *agentOpStore) DeleteBefore(ctx context.Context, t time.Time) (int, error) {
	const op = "delete agent operations"
	bound, err := gtc.AgentOpStartedBefore(t)
	if err != nil {
		return 0, fmt.Errorf("sqlite: %s: %w", op, err)
	}
	total := 0
	for {
		var n int64
		err := as.s.write(ctx, op, func(w *wtx) error {
			res, err := w.stmt(as.s.stmts.agentOpsDelete).Exec(bound, agentDeleteBatch)
			if err != nil {
				return wrapErr(op, err)
			}
			n, err = res.RowsAffected()
			return wrapErr(op, err)
		})
		if err != nil {
			return total, err
		}
		total += int(n)
		if n < agentDeleteBatch {
			return total, nil
		}
	}
}
