package sqlite

import (
	"context"
	"database/sql"
	"iter"
	"math/rand/v2"
	"strings"

	gtc "github.com/gtc-dev/gtc"
)

var _ gtc.EligibleSampler = (*itemStore)(nil)

// poolConds is the self-serve pool: draft and unassigned, or skipped and not held by the
// caller (gtc.ItemStore.Eligible).
func poolConds(e gtc.EligibleSpec) *conds {
	c := &conds{}
	c.add("((items.status = 'draft' AND items.assigned_to IS NULL) OR "+
		"(items.status = 'skipped' AND (items.assigned_to IS NULL OR items.assigned_to <> ?)))", e.User)
	if p := e.DatasetPrefix; p != "" {
		c.add("items.dataset_name >= ? AND items.dataset_name < ? AND substr(items.dataset_name, 1, length(?)) = ?", p, p+"\xff", p, p)
	}
	return c
}

// Eligible streams the keys of the pool in one pass over its covering index.
func (is *itemStore) Eligible(ctx context.Context, e gtc.EligibleSpec) iter.Seq2[gtc.Key, error] {
	return func(yield func(gtc.Key, error) bool) {
		if is.s.closed.Load() {
			yield(gtc.Key{}, errClosed("eligible"))
			return
		}
		c := poolConds(e)
		rows, err := is.s.rdb.QueryContext(ctx, "SELECT dataset_name, id, bucket FROM items INDEXED BY items_pool"+c.where(), c.args...)
		if err != nil {
			yield(gtc.Key{}, wrapErr("eligible", err))
			return
		}
		defer func() { _ = rows.Close() }()
		for rows.Next() {
			var k gtc.Key
			if err := rows.Scan(&k.DatasetName, &k.ID, &k.Bucket); err != nil {
				yield(gtc.Key{}, wrapErr("eligible", err))
				return
			}
			if !yield(k, nil) {
				return
			}
		}
		if err := rows.Err(); err != nil {
			yield(gtc.Key{}, wrapErr("eligible", err))
		}
	}
}

// SampleEligible draws up to n keys of the pool uniformly at random, leaving out exclude.
//
// It first probes random primary keys: a probe hits a pool member with the same chance for
// every member, so the accepted keys are a uniform sample (rejection sampling), and each
// round costs one indexed lookup of a few dozen keys, whatever the size of the store. When
// the pool is a small part of the table the probes rarely hit; then it orders the pool by
// random() in one pass over the covering index, which is cheap exactly because the pool is
// small.
func (is *itemStore) SampleEligible(ctx context.Context, e gtc.EligibleSpec, n int, exclude map[gtc.Key]bool) ([]gtc.Key, error) {
	if is.s.closed.Load() {
		return nil, errClosed("sample eligible")
	}
	if n <= 0 {
		return []gtc.Key{}, nil
	}
	tx, err := is.s.beginRead(ctx)
	if err != nil {
		return nil, wrapErr("sample eligible", err)
	}
	defer func() { _ = tx.Rollback() }()
	var maxPK int64
	if err := tx.QueryRowContext(ctx, "SELECT coalesce(max(pk), 0) FROM items").Scan(&maxPK); err != nil {
		return nil, wrapErr("sample eligible", err)
	}
	out := make([]gtc.Key, 0, n)
	taken := map[gtc.Key]bool{}
	accept := func(keys []gtc.Key) {
		for _, k := range keys {
			if len(out) < n && !exclude[k] && !taken[k] {
				taken[k] = true
				out = append(out, k)
			}
		}
	}
	c := poolConds(e)
	for round := 0; round < sampleProbeRounds && len(out) < n && maxPK > 0; round++ {
		probes := make([]any, 0, 4*n+8)
		for range cap(probes) {
			probes = append(probes, 1+rand.Int64N(maxPK))
		}
		q := probeSQL(c, probes)
		keys, err := keysIn(ctx, tx, q.SQL, q.Args, probes)
		if err != nil {
			return nil, err
		}
		accept(keys)
	}
	if len(out) == n {
		return out, nil
	}
	// Few probes hit: the pool is small, so a full pass over it is cheap.
	q := poolSQL(e, n+len(exclude)+len(out))
	keys, err := keysIn(ctx, tx, "SELECT pk, dataset_name, id, bucket FROM items WHERE pk IN ("+q.SQL+")", q.Args, nil)
	if err != nil {
		return nil, err
	}
	rand.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	accept(keys)
	return out, nil
}

// probeSQL looks up the probed primary keys that are in the pool. NOT INDEXED keeps the
// planner on the primary key: the pool's index would read the whole pool.
func probeSQL(c *conds, pks []any) sqlText {
	return sqlText{SQL: "SELECT pk, dataset_name, id, bucket FROM items NOT INDEXED WHERE pk IN (" +
		placeholders(len(pks)) + ") AND " + strings.Join(c.sql, " AND "), Args: append(append([]any{}, pks...), c.args...)}
}

// sampleProbeRounds bounds the random-key rounds before the pool is read in full.
const sampleProbeRounds = 3

// keysIn runs a query selecting (pk, dataset_name, id, bucket) and returns the keys, in the
// order of order (primary keys) when given, else as the rows come.
func keysIn(ctx context.Context, tx *sql.Tx, q string, args []any, order []any) ([]gtc.Key, error) {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, wrapErr("sample eligible", err)
	}
	defer func() { _ = rows.Close() }()
	byPK := map[int64]gtc.Key{}
	var keys []gtc.Key
	for rows.Next() {
		var pk int64
		var k gtc.Key
		if err := rows.Scan(&pk, &k.DatasetName, &k.ID, &k.Bucket); err != nil {
			return nil, wrapErr("sample eligible", err)
		}
		byPK[pk] = k
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil {
		return nil, wrapErr("sample eligible", err)
	}
	if order == nil {
		return keys, nil
	}
	keys = keys[:0]
	for _, o := range order {
		if k, ok := byPK[o.(int64)]; ok {
			keys = append(keys, k)
		}
	}
	return keys, nil
}

// poolSQL is the sampling statement: the pool in random order, limit rows.
func poolSQL(e gtc.EligibleSpec, limit int) sqlText {
	c := poolConds(e)
	return sqlText{SQL: "SELECT pk FROM items INDEXED BY items_pool" + c.where() + " ORDER BY random() LIMIT ?",
		Args: append(append([]any{}, c.args...), limit)}
}
