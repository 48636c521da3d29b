package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	gtc "github.com/gtc-dev/gtc"
)

// jobStore implements gtc.JobStore over the jobs table. A SQLite store has one server, so
// its jobs are that server's; they take the same code path as a store shared by several.
type jobStore struct{ s *Store }

var _ gtc.JobStore = jobStore{}

// Jobs returns the store's jobs.
func (s *Store) Jobs() gtc.JobStore { return jobStore{s} }

// encodeJob checks j and returns its record's JSON.
func encodeJob(op string, j gtc.Job) (*gtc.JobRecord, []byte, error) {
	r, err := gtc.NewJobRecord(j)
	if err != nil {
		return nil, nil, fmt.Errorf("sqlite: %s: %w", op, err)
	}
	doc, err := json.Marshal(r)
	if err != nil {
		return nil, nil, fmt.Errorf("sqlite: %s %s: %w: %w", op, j.ID, gtc.ErrInvalidArgument, err)
	}
	return r, doc, nil
}

// decodeJob reads a stored row. A row that does not decode is a damaged database:
// ErrUnavailable.
func decodeJob(doc, etag string) (gtc.Job, error) {
	var r gtc.JobRecord
	if err := json.Unmarshal([]byte(doc), &r); err != nil {
		return gtc.Job{}, fmt.Errorf("sqlite: stored job unreadable: %w: %w", gtc.ErrUnavailable, err)
	}
	j, err := r.Job(etag)
	if err != nil {
		return gtc.Job{}, fmt.Errorf("sqlite: %w", err)
	}
	return j, nil
}

func (js jobStore) Create(ctx context.Context, j gtc.Job) (gtc.Job, error) {
	const op = "create job"
	r, doc, err := encodeJob(op, j)
	if err != nil {
		return gtc.Job{}, err
	}
	etag := js.s.newETag()
	err = js.s.write(ctx, op, func(w *wtx) error {
		_, err := w.tx.Exec(`INSERT INTO jobs (id, created_at, finished_at, doc, etag) VALUES (?, ?, ?, ?, ?)`,
			r.ID, r.CreatedAt, r.FinishedAt, string(doc), etag)
		return wrapErr(op+" "+r.ID, err) // the primary key is the only constraint: ErrConflict
	})
	if err != nil {
		return gtc.Job{}, err
	}
	j.ETag = etag
	return j, nil
}

const jobSQL = `SELECT doc, etag FROM jobs WHERE id = ?`

func scanJob(row interface{ Scan(...any) error }, id string) (gtc.Job, error) {
	var doc, etag string
	err := row.Scan(&doc, &etag)
	if errors.Is(err, sql.ErrNoRows) {
		return gtc.Job{}, fmt.Errorf("sqlite: job %s: %w", id, gtc.ErrNotFound)
	}
	if err != nil {
		return gtc.Job{}, wrapErr("read job", err)
	}
	return decodeJob(doc, etag)
}

func (js jobStore) Get(ctx context.Context, id string) (gtc.Job, error) {
	if js.s.closed.Load() {
		return gtc.Job{}, errClosed("get job")
	}
	return scanJob(js.s.rdb.QueryRowContext(ctx, jobSQL, id), id)
}

func (js jobStore) Replace(ctx context.Context, j gtc.Job) (gtc.Job, error) {
	const op = "replace job"
	r, doc, err := encodeJob(op, j)
	if err != nil {
		return gtc.Job{}, err
	}
	etag := js.s.newETag()
	err = js.s.write(ctx, op, func(w *wtx) error {
		res, err := w.tx.Exec(`UPDATE jobs SET finished_at = ?, doc = ?, etag = ? WHERE id = ? AND etag = ?`,
			r.FinishedAt, string(doc), etag, r.ID, j.ETag)
		if err != nil {
			return wrapErr(op, err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return wrapErr(op, err)
		} else if n == 1 {
			return nil
		}
		if _, err := scanJob(w.tx.QueryRow(jobSQL, r.ID), r.ID); err != nil {
			return err
		}
		return fmt.Errorf("sqlite: %s %s: %w", op, r.ID, gtc.ErrPreconditionFailed)
	})
	if err != nil {
		return gtc.Job{}, err
	}
	j.ETag = etag
	return j, nil
}

func (js jobStore) Unfinished(ctx context.Context, limit int) ([]gtc.Job, error) {
	if js.s.closed.Load() {
		return nil, errClosed("list unfinished jobs")
	}
	rows, err := js.s.rdb.QueryContext(ctx, `SELECT doc, etag FROM jobs WHERE finished_at IS NULL ORDER BY created_at LIMIT ?`, max(limit, 0))
	if err != nil {
		return nil, wrapErr("list unfinished jobs", err)
	}
	defer rows.Close()
	var out []gtc.Job
	for rows.Next() {
		j, err := scanJob(rows, "")
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, wrapErr("list unfinished jobs", rows.Err())
}

func (js jobStore) DeleteFinished(ctx context.Context, t time.Time) (int, error) {
	var n int64
	err := js.s.write(ctx, "delete finished jobs", func(w *wtx) error {
		res, err := w.tx.Exec(`DELETE FROM jobs WHERE finished_at IS NOT NULL AND finished_at < ?`, gtc.FormatStoredTime(t))
		if err != nil {
			return wrapErr("delete finished jobs", err)
		}
		n, err = res.RowsAffected()
		return wrapErr("delete finished jobs", err)
	})
	return int(n), err
}
