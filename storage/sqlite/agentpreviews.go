package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	gtc "github.com/gtc-dev/gtc"
)

// previewStore implements gtc.AgentPreviewStore over the agent_previews table. Writes go
// through the single writer, each in one transaction: a put with its evictions, a state
// change conditional on the row's ETag.
type previewStore struct{ s *Store }

var _ gtc.AgentPreviewStore = previewStore{}

// AgentPreviews returns the store's agent previews.
func (s *Store) AgentPreviews() gtc.AgentPreviewStore { return previewStore{s} }

// previewSQL reads one preview, plan included, by (caller, hash).
const previewSQL = `SELECT id, created_at, expires_at, state, operation_id, changes, etag, plan
FROM agent_previews WHERE caller = ? AND hash = ?`

// scanPreview reads the row of previewSQL for (caller, hash).
func scanPreview(row *sql.Row, caller, hash string) (gtc.AgentPreview, error) {
	p := gtc.AgentPreview{Caller: caller, Hash: hash}
	var created, expires int64
	err := row.Scan(&p.ID, &created, &expires, &p.State, &p.OperationID, &p.Changes, &p.ETag, &p.Plan)
	if errors.Is(err, sql.ErrNoRows) {
		return gtc.AgentPreview{}, fmt.Errorf("sqlite: agent preview %s: %w", hash, gtc.ErrNotFound)
	}
	if err != nil {
		return gtc.AgentPreview{}, wrapErr("read agent preview", err)
	}
	p.CreatedAt, p.ExpiresAt = time.UnixMicro(created).UTC(), time.UnixMicro(expires).UTC()
	return p, nil
}

func (ps previewStore) Put(ctx context.Context, p gtc.AgentPreview, b gtc.AgentPreviewBounds) (gtc.AgentPreview, error) {
	if err := gtc.CheckAgentPreview(p); err != nil {
		return gtc.AgentPreview{}, fmt.Errorf("sqlite: put agent preview: %w", err)
	}
	plan := p.Plan
	if plan == nil {
		plan = []byte{}
	}
	out := p
	err := ps.s.write(ctx, "put agent preview", func(w *wtx) error {
		out.ETag = ps.s.newETag()
		_, err := w.tx.Exec(`INSERT INTO agent_previews
  (caller, hash, id, created_at, expires_at, state, operation_id, changes, etag, plan) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
  ON CONFLICT (caller, hash) DO UPDATE SET id = excluded.id, created_at = excluded.created_at,
    expires_at = excluded.expires_at, state = excluded.state, operation_id = excluded.operation_id,
    changes = excluded.changes, etag = excluded.etag, plan = excluded.plan`,
			p.Caller, p.Hash, p.ID, p.CreatedAt.UnixMicro(), p.ExpiresAt.UnixMicro(), p.State, p.OperationID, p.Changes, out.ETag, plan)
		if err != nil {
			return wrapErr("put agent preview", err)
		}
		kept, err := previewHeaders(w.tx)
		if err != nil {
			return err
		}
		for _, q := range b.Evict(kept, out) {
			if _, err := w.tx.Exec(`DELETE FROM agent_previews WHERE caller = ? AND hash = ?`, q.Caller, q.Hash); err != nil {
				return wrapErr("evict agent preview", err)
			}
		}
		return nil
	})
	if err != nil {
		return gtc.AgentPreview{}, err
	}
	return out, nil
}

// previewHeaders lists every preview without its plan: what the bounds are judged on.
func previewHeaders(tx *sql.Tx) ([]gtc.AgentPreview, error) {
	rows, err := tx.Query(`SELECT caller, hash, id, created_at, changes FROM agent_previews`)
	if err != nil {
		return nil, wrapErr("list agent previews", err)
	}
	defer rows.Close()
	var out []gtc.AgentPreview
	for rows.Next() {
		var q gtc.AgentPreview
		var created int64
		if err := rows.Scan(&q.Caller, &q.Hash, &q.ID, &created, &q.Changes); err != nil {
			return nil, wrapErr("list agent previews", err)
		}
		q.CreatedAt = time.UnixMicro(created).UTC()
		out = append(out, q)
	}
	return out, wrapErr("list agent previews", rows.Err())
}

func (ps previewStore) Get(ctx context.Context, caller, hash string) (gtc.AgentPreview, error) {
	if ps.s.closed.Load() {
		return gtc.AgentPreview{}, errClosed("get agent preview")
	}
	return scanPreview(ps.s.rdb.QueryRowContext(ctx, previewSQL, caller, hash), caller, hash)
}

func (ps previewStore) SetState(ctx context.Context, p gtc.AgentPreview, state, opID string) (gtc.AgentPreview, error) {
	if err := gtc.CheckAgentPreviewState(state, opID); err != nil {
		return gtc.AgentPreview{}, fmt.Errorf("sqlite: set agent preview state: %w", err)
	}
	out := p
	out.State, out.OperationID = state, opID
	err := ps.s.write(ctx, "set agent preview state", func(w *wtx) error {
		out.ETag = ps.s.newETag()
		res, err := w.tx.Exec(`UPDATE agent_previews SET state = ?, operation_id = ?, etag = ? WHERE caller = ? AND hash = ? AND etag = ?`,
			state, opID, out.ETag, p.Caller, p.Hash, p.ETag)
		if err != nil {
			return wrapErr("set agent preview state", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return wrapErr("set agent preview state", err)
		} else if n == 1 {
			return nil
		}
		var one int
		err = w.tx.QueryRow(`SELECT 1 FROM agent_previews WHERE caller = ? AND hash = ?`, p.Caller, p.Hash).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("sqlite: set agent preview state %s: %w", p.ID, gtc.ErrNotFound)
		}
		if err != nil {
			return wrapErr("set agent preview state", err)
		}
		return fmt.Errorf("sqlite: set agent preview state %s: %w", p.ID, gtc.ErrPreconditionFailed)
	})
	if err != nil {
		return gtc.AgentPreview{}, err
	}
	return out, nil
}

func (ps previewStore) DeleteExpired(ctx context.Context, t time.Time) (int, error) {
	var n int64
	err := ps.s.write(ctx, "delete expired agent previews", func(w *wtx) error {
		res, err := w.tx.Exec(`DELETE FROM agent_previews WHERE expires_at < ?`, t.UnixMicro())
		if err != nil {
			return wrapErr("delete expired agent previews", err)
		}
		n, err = res.RowsAffected()
		return wrapErr("delete expired agent previews", err)
	})
	return int(n), err
}
