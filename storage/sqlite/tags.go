package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	gtc "github.com/gtc-dev/gtc"
)

// tagStore implements gtc.TagStore. The set is one row per tag rather than one record, so a
// union or a difference is a handful of single-row statements; running them as one write
// operation of the serialized writer gives what the ETag-conditional retry loop gives on
// Cosmos: concurrent calls never lose each other's changes.
type tagStore struct {
	s *Store
}

var _ gtc.TagStore = (*tagStore)(nil)

// List returns the stored tags in byte order.
func (ts *tagStore) List(ctx context.Context) ([]string, error) {
	if ts.s.closed.Load() {
		return nil, errClosed("list tags")
	}
	rows, err := ts.s.stmts.storeTags.QueryContext(ctx)
	if err != nil {
		return nil, wrapErr("list tags", err)
	}
	return scanTags("list tags", rows)
}

// Add unions tags into the set and returns the set as this write left it.
func (ts *tagStore) Add(ctx context.Context, tags []string) ([]string, error) {
	return ts.change(ctx, "add tags", tags, ts.s.stmts.storeTagInsert)
}

// Remove subtracts tags from the set (absent tags are a no-op) and returns the set as this
// write left it.
func (ts *tagStore) Remove(ctx context.Context, tags []string) ([]string, error) {
	return ts.change(ctx, "remove tags", tags, ts.s.stmts.storeTagDelete)
}

// change runs st once per tag and reads the resulting set, all in one write operation, so
// the answer is exactly the set this call committed (with whatever was committed before it).
func (ts *tagStore) change(ctx context.Context, op string, tags []string, st *sql.Stmt) ([]string, error) {
	for _, tag := range tags {
		if tag == "" {
			// Refused before the write, so nothing of the call is stored.
			return nil, fmt.Errorf("sqlite: %s: %w: empty tag", op, gtc.ErrInvalidArgument)
		}
	}
	var out []string
	err := ts.s.write(ctx, op, func(w *wtx) error {
		for _, tag := range tags {
			if _, err := w.stmt(st).Exec(tag); err != nil {
				return wrapErr(op, err)
			}
		}
		rows, err := w.stmt(ts.s.stmts.storeTagsInTx).Query()
		if err != nil {
			return wrapErr(op, err)
		}
		out, err = scanTags(op, rows)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// scanTags reads one text column into a non-nil slice and closes rows.
func scanTags(op string, rows *sql.Rows) ([]string, error) {
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var tag string
		if err := rows.Scan(&tag); err != nil {
			return nil, wrapErr(op, err)
		}
		out = append(out, tag)
	}
	if err := rows.Err(); err != nil {
		return nil, wrapErr(op, err)
	}
	return out, nil
}

// tagDefinitionStore implements gtc.TagDefinitionStore.
type tagDefinitionStore struct {
	s *Store
}

var _ gtc.TagDefinitionStore = (*tagDefinitionStore)(nil)

// definitionColumns are read by every query of a definition, in the order of scanDefinition.
const definitionColumns = `tag_key, description, created_by, created_at, updated_at, etag`

// scanner is what *sql.Row and *sql.Rows have in common.
type scanner interface {
	Scan(dest ...any) error
}

// scanDefinition reads one row of definitionColumns.
func scanDefinition(r scanner) (*gtc.TagDefinition, error) {
	var d gtc.TagDefinition
	var createdBy sql.NullString
	var createdAt, updatedAt string
	if err := r.Scan(&d.TagKey, &d.Description, &createdBy, &createdAt, &updatedAt, &d.ETag); err != nil {
		return nil, err
	}
	if createdBy.Valid {
		d.CreatedBy = &createdBy.String
	}
	var err error
	if d.CreatedAt, err = gtc.ParseTime(createdAt); err == nil {
		d.UpdatedAt, err = gtc.ParseTime(updatedAt)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: stored tag definition %q unreadable: %w: %w", d.TagKey, gtc.ErrUnavailable, err)
	}
	return &d, nil
}

// requireKey refuses the empty key, which no definition can have.
func requireKey(op, key string) error {
	if key == "" {
		return fmt.Errorf("sqlite: %s: %w: empty tag key", op, gtc.ErrInvalidArgument)
	}
	return nil
}

// Get returns the definition of key.
func (ds *tagDefinitionStore) Get(ctx context.Context, key string) (*gtc.TagDefinition, error) {
	if err := requireKey("get tag definition", key); err != nil {
		return nil, err
	}
	if ds.s.closed.Load() {
		return nil, errClosed("get tag definition")
	}
	d, err := scanDefinition(ds.s.stmts.definitionGet.QueryRowContext(ctx, key))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sqlite: get tag definition %q: %w", key, gtc.ErrNotFound)
	}
	if err != nil {
		return nil, wrapErr("get tag definition", err)
	}
	return d, nil
}

// List returns every definition in byte order of the key.
func (ds *tagDefinitionStore) List(ctx context.Context) ([]*gtc.TagDefinition, error) {
	if ds.s.closed.Load() {
		return nil, errClosed("list tag definitions")
	}
	rows, err := ds.s.stmts.definitions.QueryContext(ctx)
	if err != nil {
		return nil, wrapErr("list tag definitions", err)
	}
	defer rows.Close()
	out := []*gtc.TagDefinition{}
	for rows.Next() {
		d, err := scanDefinition(rows)
		if err != nil {
			return nil, wrapErr("list tag definitions", err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, wrapErr("list tag definitions", err)
	}
	return out, nil
}

// storedTime is t as a stored column and exactly as it reads back.
func storedTime(op, name string, t time.Time) (string, time.Time, error) {
	s := gtc.FormatStoredTime(t)
	back, err := gtc.ParseTime(s)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("sqlite: %s: %w: %s %s: %w", op, gtc.ErrInvalidArgument, name, t, err)
	}
	return s, back, nil
}

// Upsert creates d, or gives an existing definition d's description and UpdatedAt while
// keeping its creator and creation time. The existence check and the write share one write
// operation, so two concurrent creates of one key cannot both report created.
func (ds *tagDefinitionStore) Upsert(ctx context.Context, d *gtc.TagDefinition) (*gtc.TagDefinition, bool, error) {
	const op = "upsert tag definition"
	if d == nil {
		return nil, false, fmt.Errorf("sqlite: %s: %w: nil definition", op, gtc.ErrInvalidArgument)
	}
	if err := requireKey(op, d.TagKey); err != nil {
		return nil, false, err
	}
	createdAt, createdAtT, err := storedTime(op, "createdAt", d.CreatedAt)
	if err != nil {
		return nil, false, err
	}
	updatedAt, updatedAtT, err := storedTime(op, "updatedAt", d.UpdatedAt)
	if err != nil {
		return nil, false, err
	}
	out := &gtc.TagDefinition{
		TagKey:      d.TagKey,
		Description: d.Description,
		UpdatedAt:   updatedAtT,
		ETag:        ds.s.newETag(),
	}
	var createdBy any
	if d.CreatedBy != nil {
		createdBy = *d.CreatedBy
	}
	st := &ds.s.stmts
	var created bool
	err = ds.s.write(ctx, op, func(w *wtx) error {
		var keptBy sql.NullString
		var keptAt string
		err := w.stmt(st.definitionCreated).QueryRow(d.TagKey).Scan(&keptBy, &keptAt)
		if errors.Is(err, sql.ErrNoRows) {
			if _, err := w.stmt(st.definitionInsert).Exec(d.TagKey, d.Description, createdBy, createdAt, updatedAt, out.ETag); err != nil {
				return wrapErr(op, err)
			}
			created = true
			out.CreatedBy, out.CreatedAt = clonePtr(d.CreatedBy), createdAtT
			return nil
		}
		if err != nil {
			return wrapErr(op, err)
		}
		if _, err := w.stmt(st.definitionUpdate).Exec(d.Description, updatedAt, out.ETag, d.TagKey); err != nil {
			return wrapErr(op, err)
		}
		created = false
		if keptBy.Valid {
			out.CreatedBy = &keptBy.String
		}
		if out.CreatedAt, err = gtc.ParseTime(keptAt); err != nil {
			// A corrupt row: refuse it like Get would, and leave it as it was.
			return fmt.Errorf("sqlite: stored tag definition %q unreadable: %w: %w", d.TagKey, gtc.ErrUnavailable, err)
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return out, created, nil
}

// Delete removes the definition of key.
func (ds *tagDefinitionStore) Delete(ctx context.Context, key string) error {
	const op = "delete tag definition"
	if err := requireKey(op, key); err != nil {
		return err
	}
	return ds.s.write(ctx, op, func(w *wtx) error {
		res, err := w.stmt(ds.s.stmts.definitionDelete).Exec(key)
		if err != nil {
			return wrapErr(op, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return wrapErr(op, err)
		}
		if n == 0 {
			return fmt.Errorf("sqlite: %s %q: %w", op, key, gtc.ErrNotFound)
		}
		return nil
	})
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
