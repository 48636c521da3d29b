package cosmos

import (
	"context"
	"fmt"

	gtc "github.com/gtc-dev/gtc"
)

// Scan reads one batch of a resumable scan. A limit above gtc.MaxQueryLimit is
// served as gtc.MaxQueryLimit.
func (is *itemStore) Scan(ctx context.Context, spec gtc.ScanSpec, cursor string, limit int) (gtc.ScanPage, error) {
	s := is.s
	if limit < 1 {
		return gtc.ScanPage{}, fmt.Errorf("cosmos: scan: %w: limit %d", gtc.ErrInvalidArgument, limit)
	}
	if s.closed.Load() {
		return gtc.ScanPage{}, errClosed("scan")
	}
	limit = min(limit, gtc.MaxQueryLimit)
	if spec.Order != gtc.ByDatasetID && spec.Order != gtc.AnyOrder {
		return gtc.ScanPage{}, fmt.Errorf("cosmos: scan: %w: unknown scan order %d", gtc.ErrInvalidArgument, spec.Order)
	}
	var pos *gtc.ScanCursor
	if cursor != "" {
		c, err := gtc.DecodeScanCursor(cursor, spec)
		if err != nil {
			return gtc.ScanPage{}, fmt.Errorf("cosmos: scan: %w", err)
		}
		pos = &c
	}
	if spec.Order == gtc.AnyOrder {
		return is.scanAny(ctx, spec, pos, limit)
	}
	return is.scanByDatasetID(ctx, spec, pos, limit)
}

// scanAny is one cross-partition filter query paged by continuation token.
func (is *itemStore) scanAny(ctx context.Context, spec gtc.ScanSpec, pos *gtc.ScanCursor, limit int) (gtc.ScanPage, error) {
	s := is.s
	b := itemWhere(nil)
	filterConds(b, gtc.Filter{Statuses: spec.Statuses, DatasetNames: spec.DatasetNames})
	q := sqlQuery{text: "SELECT * FROM c WHERE " + b.where(), params: b.params}
	token := ""
	if pos != nil {
		token = pos.T
	}
	out := gtc.ScanPage{Items: []*gtc.Item{}}
	next, err := s.tokenPage(ctx, "scan", q, spec, limit, token, func(raw []byte) (bool, error) {
		d, err := decodeItemDoc(raw)
		if err != nil {
			return false, fmt.Errorf("cosmos: scan: %w", err)
		}
		if d.visible {
			out.Items = append(out.Items, d.item)
		}
		return d.visible, nil
	})
	if err != nil {
		return gtc.ScanPage{}, err
	}
	out.Next = next
	return out, nil
}

// tokenPage reads the cross-partition query q from token, page by page, until take has
// accepted a row of a page or the query ends, and returns the cursor of spec that resumes
// after the last page read ("" when the query is finished). Pages without a row take wants
// (empty pages are normal across partitions) are read through, and the cursor always names
// the position after the last page read, so a resumed scan neither repeats nor skips rows.
func (s *Store) tokenPage(ctx context.Context, op string, q sqlQuery, spec gtc.ScanSpec, limit int, token string, take func(row []byte) (bool, error)) (string, error) {
	next, taken := "", false
	for p, err := range s.pages(ctx, s.gt, op, q, limit, token) {
		if err != nil {
			return "", err
		}
		for _, row := range p.rows {
			ok, err := take(row)
			if err != nil {
				return "", err
			}
			taken = taken || ok
		}
		next = p.continuation
		if taken {
			break
		}
	}
	if next == "" {
		return "", nil
	}
	c := gtc.NewScanCursor(spec)
	c.T = next
	return c.Encode(), nil
}

// scanByDatasetID merges, dataset after dataset, the id-ordered queries of the dataset's
// buckets, resuming after the cursor's (datasetName, id).
func (is *itemStore) scanByDatasetID(ctx context.Context, spec gtc.ScanSpec, pos *gtc.ScanCursor, limit int) (gtc.ScanPage, error) {
	s := is.s
	parts, err := s.registry.partitions(ctx, spec.DatasetNames, "")
	if err != nil {
		return gtc.ScanPage{}, err
	}
	f := gtc.Filter{Statuses: spec.Statuses}
	items := make([]*gtc.Item, 0, limit+1)
	for _, ps := range datasetGroups(parts) {
		ds := ps[0].Dataset
		if pos != nil && ds < pos.D {
			continue
		}
		var after *string
		if pos != nil && ds == pos.D {
			after = &pos.I
		}
		ms := mergeSpec{
			parts:    ps,
			query:    func(p partition) (sqlQuery, bool) { return fullQuery(p, f, "c.id", false, after) },
			pageSize: clampPage(limit, len(ps)),
			whole:    true,
			order:    gtc.SortID,
		}
		for row, err := range s.merge(ctx, "scan", ms) {
			if err != nil {
				return gtc.ScanPage{}, err
			}
			items = append(items, row.item)
			if len(items) > limit {
				break
			}
		}
		if len(items) > limit {
			break
		}
	}
	out := gtc.ScanPage{Items: items}
	if len(items) > limit {
		out.Items = items[:limit]
		last := items[limit-1]
		c := gtc.NewScanCursor(spec)
		c.D, c.I = last.DatasetName, last.ID
		out.Next = c.Encode()
	}
	return out, nil
}
