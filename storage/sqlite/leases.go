package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	gtc "github.com/gtc-dev/gtc"
)

// leaseStore implements gtc.LeaseStore over the leases table. A SQLite store has one
// server, so its leases are seen by that server alone; they give it the same code path as a
// store shared by several.
type leaseStore struct{ s *Store }

var _ gtc.LeaseStore = leaseStore{}

// Leases returns the store's leases.
func (s *Store) Leases() gtc.LeaseStore { return leaseStore{s} }

// leaseTime is a lease's expiry as stored: Unix microseconds.
func leaseTime(t time.Time) int64 { return t.UnixMicro() }

func (l leaseStore) now() time.Time { return l.s.clock.Now().UTC().Truncate(time.Microsecond) }

// leaseSQL reads one lease by name.
const leaseSQL = `SELECT holder, expires, etag FROM leases WHERE name = ?`

// scanLease reads the row of leaseSQL for the lease name.
func scanLease(row *sql.Row, name string) (gtc.Lease, error) {
	var holder, etag string
	var expires int64
	err := row.Scan(&holder, &expires, &etag)
	if errors.Is(err, sql.ErrNoRows) {
		return gtc.Lease{}, fmt.Errorf("sqlite: lease %s: %w", name, gtc.ErrNotFound)
	}
	if err != nil {
		return gtc.Lease{}, wrapErr("read lease", err)
	}
	return gtc.Lease{Name: name, Holder: holder, Expires: time.UnixMicro(expires).UTC(), ETag: etag}, nil
}

func (l leaseStore) Acquire(ctx context.Context, name, holder string, ttl time.Duration) (gtc.Lease, error) {
	if err := gtc.CheckLease(name, holder, ttl); err != nil {
		return gtc.Lease{}, fmt.Errorf("sqlite: acquire lease: %w", err)
	}
	var out gtc.Lease
	err := l.s.write(ctx, "acquire lease", func(w *wtx) error {
		now := l.now()
		cur, err := scanLease(w.tx.QueryRow(leaseSQL, name), name)
		switch {
		case errors.Is(err, gtc.ErrNotFound):
		case err != nil:
			return err
		case cur.Holder != holder && cur.LiveAt(now):
			return fmt.Errorf("sqlite: acquire lease: %w", &gtc.LeaseHeldError{Lease: cur})
		}
		out = gtc.Lease{Name: name, Holder: holder, Expires: now.Add(ttl), ETag: l.s.newETag()}
		_, err = w.tx.Exec(`INSERT INTO leases (name, holder, expires, etag) VALUES (?, ?, ?, ?)
  ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires = excluded.expires, etag = excluded.etag`,
			name, holder, leaseTime(out.Expires), out.ETag)
		return wrapErr("acquire lease", err)
	})
	return out, err
}

func (l leaseStore) Renew(ctx context.Context, lease gtc.Lease, ttl time.Duration) (gtc.Lease, error) {
	if err := gtc.CheckLease(lease.Name, lease.Holder, ttl); err != nil {
		return gtc.Lease{}, fmt.Errorf("sqlite: renew lease: %w", err)
	}
	var out gtc.Lease
	err := l.s.write(ctx, "renew lease", func(w *wtx) error {
		out = gtc.Lease{Name: lease.Name, Holder: lease.Holder, Expires: l.now().Add(ttl), ETag: l.s.newETag()}
		res, err := w.tx.Exec(`UPDATE leases SET expires = ?, etag = ? WHERE name = ? AND holder = ? AND etag = ?`,
			leaseTime(out.Expires), out.ETag, lease.Name, lease.Holder, lease.ETag)
		if err != nil {
			return wrapErr("renew lease", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return wrapErr("renew lease", err)
		} else if n == 1 {
			return nil
		}
		if _, err := scanLease(w.tx.QueryRow(leaseSQL, lease.Name), lease.Name); err != nil {
			return err
		}
		return fmt.Errorf("sqlite: renew lease %s: %w", lease.Name, gtc.ErrPreconditionFailed)
	})
	return out, err
}

func (l leaseStore) Release(ctx context.Context, lease gtc.Lease) error {
	return l.s.write(ctx, "release lease", func(w *wtx) error {
		_, err := w.tx.Exec(`DELETE FROM leases WHERE name = ? AND holder = ? AND etag = ?`, lease.Name, lease.Holder, lease.ETag)
		return wrapErr("release lease", err)
	})
}

func (l leaseStore) Get(ctx context.Context, name string) (gtc.Lease, error) {
	if l.s.closed.Load() {
		return gtc.Lease{}, errClosed("get lease")
	}
	return scanLease(l.s.rdb.QueryRowContext(ctx, leaseSQL, name), name)
}
