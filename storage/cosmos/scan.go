package cosmos

import (
	"context"
	"fmt"
	"slices"

	gtc "github.com/gtc-dev/gtc"
)

// Scan reads one batch of a resumable scan (§3.7.5). A limit above gtc.MaxQueryLimit is
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
	for p, err := range s.pages(ctx, s.gt, "scan", q, limit, token) {
		if err != nil {
			return gtc.ScanPage{}, err
		}
		for _, raw := range p.rows {
			d, err := decodeItemDoc(raw)
			if err != nil {
				return gtc.ScanPage{}, fmt.Errorf("cosmos: scan: %w", err)
			}
			if d.visible {
				out.Items = append(out.Items, d.item)
			}
		}
		if p.continuation != "" {
			c := gtc.NewScanCursor(spec)
			c.T = p.continuation
			out.Next = c.Encode()
		}
		if len(out.Items) > 0 {
			break
		}
	}
	return out, nil
}

// scanByDatasetID merges, dataset after dataset, the id-ordered queries of the dataset's
// buckets, resuming after the cursor's (datasetName, id).
func (is *itemStore) scanByDatasetID(ctx context.Context, spec gtc.ScanSpec, pos *gtc.ScanCursor, limit int) (gtc.ScanPage, error) {
	s := is.s
	parts, err := s.registry.partitions(ctx, spec.DatasetNames, "")
	if err != nil {
		return gtc.ScanPage{}, err
	}
	var datasets []string
	byName := map[string][]partition{}
	for _, p := range parts {
		if pos != nil && p.Dataset < pos.D {
			continue
		}
		if len(byName[p.Dataset]) == 0 {
			datasets = append(datasets, p.Dataset)
		}
		byName[p.Dataset] = append(byName[p.Dataset], p)
	}
	slices.Sort(datasets)
	f := gtc.Filter{Statuses: spec.Statuses}
	items := make([]*gtc.Item, 0, limit+1)
	for _, ds := range datasets {
		var after *string
		if pos != nil && ds == pos.D {
			after = &pos.I
		}
		ps := byName[ds]
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
