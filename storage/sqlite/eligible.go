package sqlite

import (
	"context"
	"iter"

	gtc "github.com/gtc-dev/gtc"
)

var _ gtc.EligibleSampler = (*itemStore)(nil)

// poolConds is the self-serve pool: draft and unassigned, or skipped and not held by the
// caller (export-storage-migration.md §3.3, Eligible).
func poolConds(e gtc.EligibleSpec) *conds {
	c := &conds{}
	c.add("((items.status = 'draft' AND items.assigned_to IS NULL) OR "+
		"(items.status = 'skipped' AND (items.assigned_to IS NULL OR items.assigned_to <> ?)))", e.User)
	if p := e.DatasetPrefix; p != "" {
		c.add("items.dataset_name >= ? AND items.dataset_name < ? AND substr(items.dataset_name, 1, length(?)) = ?", p, p+"\xff", p, p)
	}
	return c
}

// Eligible streams the keys of the pool, a page of primary keys at a time.
func (is *itemStore) Eligible(ctx context.Context, e gtc.EligibleSpec) iter.Seq2[gtc.Key, error] {
	return func(yield func(gtc.Key, error) bool) {
		if is.s.closed.Load() {
			yield(gtc.Key{}, errClosed("eligible"))
			return
		}
		c := poolConds(e)
		var after int64
		for {
			args := append(append([]any{}, c.args...), after)
			keys, last, err := is.keysWhere(ctx, "SELECT pk, dataset_name, id, bucket FROM items"+c.where()+
				" AND items.pk > ? ORDER BY items.pk LIMIT 500", args)
			if err != nil {
				yield(gtc.Key{}, err)
				return
			}
			for _, k := range keys {
				if !yield(k, nil) {
					return
				}
			}
			if len(keys) < 500 {
				return
			}
			after = last
		}
	}
}

// SampleEligible draws up to n keys of the pool uniformly at random, leaving out exclude.
// SQLite orders the pool by random() in one pass over the covering index and keeps the
// first rows, so the pool is never carried to Go.
func (is *itemStore) SampleEligible(ctx context.Context, e gtc.EligibleSpec, n int, exclude map[gtc.Key]bool) ([]gtc.Key, error) {
	if is.s.closed.Load() {
		return nil, errClosed("sample eligible")
	}
	if n <= 0 {
		return []gtc.Key{}, nil
	}
	q := poolSQL(e, n+len(exclude))
	tx, err := is.s.beginRead(ctx)
	if err != nil {
		return nil, wrapErr("sample eligible", err)
	}
	defer func() { _ = tx.Rollback() }()
	rows, err := tx.QueryContext(ctx, q.SQL, q.Args...)
	if err != nil {
		return nil, wrapErr("sample eligible", err)
	}
	var pks []any
	for rows.Next() {
		var pk int64
		if err := rows.Scan(&pk); err != nil {
			_ = rows.Close()
			return nil, wrapErr("sample eligible", err)
		}
		pks = append(pks, pk)
	}
	if err := rows.Close(); err != nil {
		return nil, wrapErr("sample eligible", err)
	}
	if len(pks) == 0 {
		return []gtc.Key{}, nil
	}
	rows, err = tx.QueryContext(ctx, "SELECT pk, dataset_name, id, bucket FROM items WHERE pk IN ("+placeholders(len(pks))+")", pks...)
	if err != nil {
		return nil, wrapErr("sample eligible", err)
	}
	byPK := make(map[int64]gtc.Key, len(pks))
	for rows.Next() {
		var pk int64
		var k gtc.Key
		if err := rows.Scan(&pk, &k.DatasetName, &k.ID, &k.Bucket); err != nil {
			_ = rows.Close()
			return nil, wrapErr("sample eligible", err)
		}
		byPK[pk] = k
	}
	if err := rows.Close(); err != nil {
		return nil, wrapErr("sample eligible", err)
	}
	out := make([]gtc.Key, 0, n)
	for _, pk := range pks { // keep the random order
		if k, ok := byPK[pk.(int64)]; ok && !exclude[k] && len(out) < n {
			out = append(out, k)
		}
	}
	return out, nil
}

// keysWhere runs a query selecting (pk, dataset_name, id, bucket) and returns the keys and
// the last primary key.
func (is *itemStore) keysWhere(ctx context.Context, q string, args []any) ([]gtc.Key, int64, error) {
	rows, err := is.s.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, 0, wrapErr("eligible", err)
	}
	defer func() { _ = rows.Close() }()
	var keys []gtc.Key
	var last int64
	for rows.Next() {
		var k gtc.Key
		if err := rows.Scan(&last, &k.DatasetName, &k.ID, &k.Bucket); err != nil {
			return nil, 0, wrapErr("eligible", err)
		}
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, wrapErr("eligible", err)
	}
	return keys, last, nil
}

// poolSQL is the sampling statement: the pool in random order, limit rows.
func poolSQL(e gtc.EligibleSpec, limit int) sqlText {
	c := poolConds(e)
	return sqlText{SQL: "SELECT pk FROM items INDEXED BY items_pool" + c.where() + " ORDER BY random() LIMIT ?",
		Args: append(append([]any{}, c.args...), limit)}
}
