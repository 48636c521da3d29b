package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"

	gtc "github.com/gtc-dev/gtc"
)

var _ gtc.TagCounter = (*itemStore)(nil)

// tagCountsSQL sums tag_counts (schema version 4), the exact number of items per (tag,
// dataset_name, status) that triggers on item_tags maintain, into the count of each tag over
// the selected items; item_tags itself is not read. Without a dataset it is one pass over
// tag_counts in key order, which the per-tag totals need anyway (the table has one row per
// tag, dataset and status in use, not one per item). %s is the status condition.
const tagCountsSQL = `SELECT tag, sum(n) FROM tag_counts%s GROUP BY tag`

// tagCountsInDatasetSQL is tagCountsSQL for one dataset: a loose index scan lists the
// distinct tags (one seek each) and each tag's sum reads only its (tag, dataset_name) range
// of the key, so the other datasets' rows are never visited. A tag only other datasets
// carry sums to NULL. %s is the extra condition on x.
const tagCountsInDatasetSQL = `
WITH RECURSIVE t(tag) AS (
  SELECT min(tag) FROM tag_counts
  UNION ALL
  SELECT (SELECT min(tag) FROM tag_counts WHERE tag > t.tag) FROM t WHERE t.tag IS NOT NULL
)
SELECT tag, (SELECT sum(n) FROM tag_counts x WHERE x.tag = t.tag AND x.dataset_name = ?%s) FROM t WHERE tag IS NOT NULL`

// manualPKsSQL lists the primary keys of the selected items that carry one of the manual
// tags (the JSON array of the first argument) as one comma-separated text. The rows come
// from the tags' ranges of the primary key; one long text is far cheaper to hand over than
// a row per key, and de-duplicating in Go is cheaper than letting SQLite build a temporary
// b-tree for count(DISTINCT). %s is the extra condition.
const manualPKsSQL = `SELECT coalesce(group_concat(item_pk), '') FROM item_tags
WHERE tag IN (SELECT value FROM json_each(?))%s`

// tagCountStatements are the three statements of CountTags for spec: the item count, the
// per-tag counts, and the keys of items with a manual tag (manual is the JSON array of the
// manual tags among the counted ones).
func tagCountStatements(spec gtc.TagCountSpec, manual string) (items, tags, manualPKs sqlText) {
	var c conds
	if spec.DatasetName != "" {
		c.add("dataset_name = ?", spec.DatasetName)
	}
	if spec.Status != "" {
		c.add("status = ?", string(spec.Status))
	}
	items = sqlText{SQL: "SELECT count(*) FROM items" + c.where(), Args: c.args}
	switch {
	case spec.DatasetName != "" && spec.Status != "":
		tags = sqlText{SQL: fmt.Sprintf(tagCountsInDatasetSQL, " AND x.status = ?"), Args: []any{spec.DatasetName, string(spec.Status)}}
	case spec.DatasetName != "":
		tags = sqlText{SQL: fmt.Sprintf(tagCountsInDatasetSQL, ""), Args: []any{spec.DatasetName}}
	case spec.Status != "":
		tags = sqlText{SQL: fmt.Sprintf(tagCountsSQL, " WHERE status = ?"), Args: []any{string(spec.Status)}}
	default:
		tags = sqlText{SQL: fmt.Sprintf(tagCountsSQL, "")}
	}
	extra, args := manualPKConds(spec)
	manualPKs = sqlText{SQL: fmt.Sprintf(manualPKsSQL, extra), Args: append([]any{manual}, args...)}
	return items, tags, manualPKs
}

// manualPKConds renders the dataset and status of spec as conditions on item_tags, each
// starting with " AND ".
func manualPKConds(spec gtc.TagCountSpec) (string, []any) {
	var b strings.Builder
	var args []any
	if spec.DatasetName != "" {
		b.WriteString(" AND dataset_name = ?")
		args = append(args, spec.DatasetName)
	}
	if spec.Status != "" {
		if spec.DatasetName == "" {
			// Status is the third column of the key: naming every dataset lets the walk seek
			// the (tag, dataset, status) ranges instead of reading every row of the tag.
			b.WriteString(" AND dataset_name IN (" + datasetsSQL + ")")
		}
		b.WriteString(" AND status = ?")
		args = append(args, string(spec.Status))
	}
	return b.String(), args
}

// CountTags counts the tags of the items spec selects (gtc.TagCounter) in one read
// transaction; no document is read. The item count comes from an items index, the per-tag
// counts from tag_counts, and the items without manual tags are the selected items less
// those in the item_tags ranges of the manual tags among the counted ones (whether a tag is
// manual depends on spec, so that part cannot be kept counted in advance): only the rows of
// manual tags are walked, not those of the computed tags every item carries.
func (is *itemStore) CountTags(ctx context.Context, spec gtc.TagCountSpec) (gtc.TagCounts, error) {
	const op = "count tags"
	s := is.s
	if s.closed.Load() {
		return gtc.TagCounts{}, errClosed(op)
	}
	if spec.Status != "" && !spec.Status.Valid() {
		return gtc.TagCounts{}, fmt.Errorf("sqlite: %s: %w: unknown status %q", op, gtc.ErrInvalidArgument, spec.Status)
	}
	tx, err := s.beginRead(ctx)
	if err != nil {
		return gtc.TagCounts{}, wrapErr(op, err)
	}
	defer func() { _ = tx.Rollback() }()

	itemsQ, tagsQ, _ := tagCountStatements(spec, "")
	out := gtc.TagCounts{Tags: map[string]int{}}
	if err := tx.QueryRowContext(ctx, itemsQ.SQL, itemsQ.Args...).Scan(&out.Items); err != nil {
		return gtc.TagCounts{}, wrapErr(op, err)
	}
	if out.Items == 0 {
		return out, nil
	}
	manual, err := readTagCounts(ctx, tx, tagsQ, spec, out.Tags)
	if err != nil {
		return gtc.TagCounts{}, wrapErr(op, err)
	}
	out.WithoutManualTags = out.Items
	if len(manual) > 0 {
		list, _ := json.Marshal(manual) // strings cannot fail
		_, _, pksQ := tagCountStatements(spec, string(list))
		var pks string
		if err := tx.QueryRowContext(ctx, pksQ.SQL, pksQ.Args...).Scan(&pks); err != nil {
			return gtc.TagCounts{}, wrapErr(op, err)
		}
		n, err := countDistinctPKs(pks)
		if err != nil {
			return gtc.TagCounts{}, fmt.Errorf("sqlite: %s: %w", op, err)
		}
		out.WithoutManualTags = out.Items - n
	}
	if err := tx.Commit(); err != nil {
		return gtc.TagCounts{}, wrapErr(op, err)
	}
	return out, nil
}

// readTagCounts runs the per-tag count into counts and returns the manual tags among the
// counted ones.
func readTagCounts(ctx context.Context, tx *sql.Tx, q sqlText, spec gtc.TagCountSpec, counts map[string]int) ([]string, error) {
	rows, err := tx.QueryContext(ctx, q.SQL, q.Args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var manual []string
	for rows.Next() {
		var tag string
		var n sql.NullInt64
		if err := rows.Scan(&tag, &n); err != nil {
			return nil, err
		}
		if n.Int64 <= 0 {
			continue // a tag of other datasets or statuses only
		}
		counts[tag] = int(n.Int64)
		if !spec.IsComputed(tag) {
			manual = append(manual, tag)
		}
	}
	return manual, rows.Err()
}

// countDistinctPKs counts the distinct keys of a comma-separated list of non-negative
// integers. Row keys are dense in practice, so a bitmap over them is small; a list whose
// largest key would make the bitmap much larger than the list itself is sorted instead.
func countDistinctPKs(list string) (int, error) {
	if list == "" {
		return 0, nil
	}
	pks, hi, err := parsePKs(list)
	if err != nil {
		return 0, err
	}
	if hi/64 > int64(4*len(pks)+1024) {
		slices.Sort(pks)
		return len(slices.Compact(pks)), nil
	}
	set := make([]uint64, hi/64+1)
	for _, pk := range pks {
		set[pk/64] |= 1 << (pk % 64)
	}
	n := 0
	for _, w := range set {
		n += bits.OnesCount64(w)
	}
	return n, nil
}

// parsePKs reads a non-empty comma-separated list of non-negative decimal integers and
// returns them with the largest. It is a plain loop over the bytes: the list holds a key for
// every manual tag of every selected item, and strings.Split with strconv.ParseInt cost
// several times as much.
func parsePKs(list string) ([]int64, int64, error) {
	pks := make([]int64, 0, strings.Count(list, ",")+1)
	var hi, pk int64
	start := 0
	for i := 0; i <= len(list); i++ {
		if i == len(list) || list[i] == ',' {
			if i == start {
				return nil, 0, fmt.Errorf("unexpected item key %q", list[start:i])
			}
			pks = append(pks, pk)
			hi = max(hi, pk)
			pk, start = 0, i+1
			continue
		}
		d := list[i] - '0'
		if d > 9 || pk > (math.MaxInt64-int64(d))/10 {
			end := strings.IndexByte(list[i:], ',')
			if end < 0 {
				end = len(list) - i
			}
			return nil, 0, fmt.Errorf("unexpected item key %q", list[start:i+end])
		}
		pk = pk*10 + int64(d)
	}
	return pks, hi, nil
}
