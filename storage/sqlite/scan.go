package sqlite

import (
	"context"
	"fmt"
	"slices"

	gtc "github.com/gtc-dev/gtc"
)

// scanSQL returns the statement of one scan page; it reads limit+1 rows so the page knows
// whether anything follows.
func scanSQL(spec gtc.ScanSpec, pos *gtc.ScanCursor, limit int) (sqlText, error) {
	where, args, err := whereClause(gtc.Filter{Statuses: spec.Statuses, DatasetNames: spec.DatasetNames})
	if err != nil {
		return sqlText{}, err
	}
	args = slices.Clip(args)
	and := func(cond string) {
		if where == "" {
			where = " WHERE " + cond
		} else {
			where += " AND " + cond
		}
	}
	var order string
	switch spec.Order {
	case gtc.ByDatasetID:
		if pos != nil {
			and("(dataset_name, id) > (?, ?)")
			args = append(args, pos.D, pos.I)
		}
		order = " ORDER BY dataset_name, id"
	case gtc.AnyOrder:
		if pos != nil {
			and("pk > ?")
			args = append(args, pos.P)
		}
		order = " ORDER BY pk"
	default:
		return sqlText{}, fmt.Errorf("%w: unknown scan order %d", gtc.ErrInvalidArgument, spec.Order)
	}
	return sqlText{
		SQL:  "SELECT pk, dataset_name, id, etag, doc FROM items" + where + order + " LIMIT ?",
		Args: append(args, limit+1),
	}, nil
}

// Scan reads one batch of a resumable scan. A limit above gtc.MaxQueryLimit is served as
// gtc.MaxQueryLimit; Next tells the caller where to go on. Like a QueryAll page, a batch
// also ends at the item whose documents reach pageBytes, so large items come a few at a
// time.
func (is *itemStore) Scan(ctx context.Context, spec gtc.ScanSpec, cursor string, limit int) (gtc.ScanPage, error) {
	s := is.s
	if s.closed.Load() {
		return gtc.ScanPage{}, errClosed("scan")
	}
	if limit < 1 {
		return gtc.ScanPage{}, fmt.Errorf("sqlite: scan: %w: limit %d", gtc.ErrInvalidArgument, limit)
	}
	limit = min(limit, gtc.MaxQueryLimit)
	if spec.Order != gtc.ByDatasetID && spec.Order != gtc.AnyOrder {
		return gtc.ScanPage{}, fmt.Errorf("sqlite: scan: %w: unknown scan order %d", gtc.ErrInvalidArgument, spec.Order)
	}
	var pos *gtc.ScanCursor
	if cursor != "" {
		c, err := gtc.DecodeScanCursor(cursor, spec)
		if err != nil {
			return gtc.ScanPage{}, fmt.Errorf("sqlite: scan: %w", err)
		}
		pos = &c
	}
	q, err := scanSQL(spec, pos, limit)
	if err != nil {
		return gtc.ScanPage{}, fmt.Errorf("sqlite: scan: %w", err)
	}
	st, cached, err := s.readStmt(ctx, q.SQL)
	if err != nil {
		return gtc.ScanPage{}, wrapErr("scan", err)
	}
	if !cached {
		defer st.Close()
	}
	rows, err := st.QueryContext(ctx, q.Args...)
	if err != nil {
		return gtc.ScanPage{}, wrapErr("scan", err)
	}
	type row struct {
		pk     int64
		ds, id string
		etag   string
		doc    []byte
	}
	var got []row
	var size int64
	more := false
	for rows.Next() {
		if len(got) == limit || size >= is.pageBytes {
			more = true // a row follows the batch
			break
		}
		var r row
		if err := rows.Scan(&r.pk, &r.ds, &r.id, &r.etag, &r.doc); err != nil {
			_ = rows.Close()
			return gtc.ScanPage{}, wrapErr("scan", err)
		}
		got = append(got, r)
		size += int64(len(r.doc))
	}
	if err := rows.Err(); err != nil {
		_ = rows.Close()
		return gtc.ScanPage{}, wrapErr("scan", err)
	}
	if err := rows.Close(); err != nil {
		return gtc.ScanPage{}, wrapErr("scan", err)
	}
	var page gtc.ScanPage
	page.Items = make([]*gtc.Item, 0, len(got))
	for _, r := range got {
		it, err := decodeItem(r.doc, r.etag)
		if err != nil {
			return gtc.ScanPage{}, err
		}
		page.Items = append(page.Items, it)
	}
	if more {
		last := got[len(got)-1]
		c := gtc.NewScanCursor(spec)
		if spec.Order == gtc.ByDatasetID {
			c.D, c.I = last.ds, last.id
		} else {
			c.P = last.pk
		}
		page.Next = c.Encode()
	}
	return page, nil
}
