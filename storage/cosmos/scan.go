package cosmos

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"

	gtc "github.com/gtc-dev/gtc"
)

// cursorVersion is the format version of scan cursors.
const cursorVersion = 1

// scanCursor is the JSON inside a cursor: the version, the spec's hash and the position:
// the last (datasetName, id) of a ByDatasetID scan, or the continuation token of an
// AnyOrder scan (stored verbatim).
type scanCursor struct {
	V int    `json:"v"`
	H string `json:"h"`
	D string `json:"d,omitempty"`
	I string `json:"i,omitempty"`
	T string `json:"t,omitempty"`
}

func encodeCursor(c scanCursor) string {
	b, _ := json.Marshal(c) // strings and ints cannot fail
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s, hash string, order gtc.ScanOrder) (scanCursor, error) {
	var c scanCursor
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || json.Unmarshal(raw, &c) != nil {
		return c, fmt.Errorf("%w: malformed cursor", gtc.ErrInvalidArgument)
	}
	if c.V != cursorVersion {
		return c, fmt.Errorf("%w: cursor version %d is not supported", gtc.ErrInvalidArgument, c.V)
	}
	if c.H != hash {
		return c, fmt.Errorf("%w: cursor belongs to another scan", gtc.ErrInvalidArgument)
	}
	if order == gtc.ByDatasetID && (c.D == "" || c.I == "") || order == gtc.AnyOrder && c.T == "" {
		return c, fmt.Errorf("%w: cursor has no position", gtc.ErrInvalidArgument)
	}
	return c, nil
}

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
	hash := spec.Hash()
	var pos *scanCursor
	if cursor != "" {
		c, err := decodeCursor(cursor, hash, spec.Order)
		if err != nil {
			return gtc.ScanPage{}, fmt.Errorf("cosmos: scan: %w", err)
		}
		pos = &c
	}
	if spec.Order == gtc.AnyOrder {
		return is.scanAny(ctx, spec, hash, pos, limit)
	}
	return is.scanByDatasetID(ctx, spec, hash, pos, limit)
}

// scanAny is one cross-partition filter query paged by continuation token.
func (is *itemStore) scanAny(ctx context.Context, spec gtc.ScanSpec, hash string, pos *scanCursor, limit int) (gtc.ScanPage, error) {
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
			it, ok, err := decodeItemDoc(raw)
			if err != nil {
				return gtc.ScanPage{}, fmt.Errorf("cosmos: scan: %w", err)
			}
			if ok {
				out.Items = append(out.Items, it)
			}
		}
		if p.continuation != "" {
			out.Next = encodeCursor(scanCursor{V: cursorVersion, H: hash, T: p.continuation})
		}
		if len(out.Items) > 0 {
			break
		}
	}
	return out, nil
}

// scanByDatasetID merges, dataset after dataset, the id-ordered queries of the dataset's
// buckets, resuming after the cursor's (datasetName, id).
func (is *itemStore) scanByDatasetID(ctx context.Context, spec gtc.ScanSpec, hash string, pos *scanCursor, limit int) (gtc.ScanPage, error) {
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
			full:     true,
			sortKey:  func(it *gtc.Item) string { return it.ID },
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
		out.Next = encodeCursor(scanCursor{V: cursorVersion, H: hash, D: last.DatasetName, I: last.ID})
	}
	return out, nil
}
