package cosmos

import (
	"cmp"
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"

	gtc "github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/storage/internal/parallel"
)

// sortedRow is one row of a per-partition stream: its key, its sort key and, for streams
// of whole documents, the item.
type sortedRow struct {
	key  gtc.Key
	sk   string
	item *gtc.Item
}

// compareRows orders rows by sort key, then dataset and bucket (ties across partitions),
// reversed as a whole for a descending sort.
func compareRows(a, b *sortedRow, desc bool) int {
	c := strings.Compare(a.sk, b.sk)
	if c == 0 {
		c = cmp.Or(strings.Compare(a.key.DatasetName, b.key.DatasetName), strings.Compare(a.key.Bucket, b.key.Bucket), strings.Compare(a.key.ID, b.key.ID))
	}
	if desc {
		return -c
	}
	return c
}

// stream is one partition's rows in order, consumed lazily page by page.
type stream struct {
	p     partition
	next  func() (page, error, bool)
	stop  func()
	buf   []sortedRow
	pos   int
	done  bool
	whole bool        // rows are whole documents...
	order gtc.SortKey // ...ordered by this key, read from their stored gtcIndex.sk
}

// fill makes buf hold at least one unread row unless the stream is finished.
func (st *stream) fill() error {
	for st.pos >= len(st.buf) && !st.done {
		pg, err, ok := st.next()
		if !ok {
			st.done = true
			return nil
		}
		if err != nil {
			return err
		}
		st.buf, st.pos = st.buf[:0], 0
		for _, raw := range pg.rows {
			r, err := st.decodeRow(raw)
			if err != nil {
				return err
			}
			if r != nil {
				st.buf = append(st.buf, *r)
			}
		}
		if pg.continuation == "" {
			// The last page: no need to ask the pager again.
			if len(st.buf) == 0 {
				st.done = true
			}
			st.next = func() (page, error, bool) { return page{}, nil, false }
		}
	}
	return nil
}

// decodeRow reads one row of the stream: a whole document, or an (id, sk) projection. It
// returns nil for a document gtc did not write.
func (st *stream) decodeRow(raw []byte) (*sortedRow, error) {
	if st.whole {
		d, err := decodeItemDoc(raw)
		if err != nil || !d.visible {
			return nil, err
		}
		return &sortedRow{key: d.item.Key(), item: d.item, sk: d.sortKey(st.order)}, nil
	}
	var r struct {
		ID string `json:"id"`
		SK string `json:"sk"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("%w: sort-key row unreadable: %w", gtc.ErrUnavailable, err)
	}
	return &sortedRow{key: gtc.Key{DatasetName: st.p.Dataset, Bucket: st.p.Bucket, ID: r.ID}, sk: r.SK}, nil
}

// merger is a k-way merge over partition streams.
type merger struct {
	streams []*stream
	desc    bool
}

func (m *merger) Len() int { return len(m.streams) }
func (m *merger) Less(i, j int) bool {
	a, b := m.streams[i], m.streams[j]
	return compareRows(&a.buf[a.pos], &b.buf[b.pos], m.desc) < 0
}
func (m *merger) Swap(i, j int) { m.streams[i], m.streams[j] = m.streams[j], m.streams[i] }
func (m *merger) Push(x any)    { m.streams = append(m.streams, x.(*stream)) }
func (m *merger) Pop() any {
	old := m.streams
	x := old[len(old)-1]
	m.streams = old[:len(old)-1]
	return x
}

// mergeSpec describes the per-partition queries of a merge.
type mergeSpec struct {
	parts    []partition
	query    func(p partition) (sqlQuery, bool)
	pageSize int
	desc     bool
	whole    bool        // the queries select whole documents...
	order    gtc.SortKey // ...in this order
}

// merge yields the rows of every partition in merged order. The first page of every
// partition is fetched 8 partitions at a time; later pages are fetched as the merge needs them.
func (s *Store) merge(ctx context.Context, op string, ms mergeSpec) iter.Seq2[sortedRow, error] {
	return func(yield func(sortedRow, error) bool) {
		streams := make([]*stream, 0, len(ms.parts))
		defer func() {
			for _, st := range streams {
				st.stop()
			}
		}()
		for _, p := range ms.parts {
			q, ok := ms.query(p)
			if !ok {
				continue
			}
			next, stop := iter.Pull2(s.pages(ctx, s.gt, op, q, ms.pageSize, ""))
			streams = append(streams, &stream{p: p, next: next, stop: stop, whole: ms.whole, order: ms.order})
		}
		err := parallel.ForEach(ctx, len(streams), partitionQueryParallel, func(_ context.Context, i int) error {
			return streams[i].fill()
		})
		if err != nil {
			yield(sortedRow{}, err)
			return
		}
		m := &merger{desc: ms.desc}
		for _, st := range streams {
			if st.pos < len(st.buf) {
				m.streams = append(m.streams, st)
			}
		}
		heap.Init(m)
		for m.Len() > 0 {
			st := m.streams[0]
			row := st.buf[st.pos]
			st.pos++
			if !yield(row, nil) {
				return
			}
			if st.pos >= len(st.buf) {
				if err := st.fill(); err != nil {
					yield(sortedRow{}, err)
					return
				}
			}
			if st.pos < len(st.buf) {
				heap.Fix(m, 0)
			} else {
				heap.Pop(m)
			}
		}
	}
}

// Query serves one page with the exact total: the partition merge (S1) normally, the
// projection scan (S2) for one user's queue.
func (is *itemStore) Query(ctx context.Context, q gtc.Query) (gtc.QueryPage, error) {
	s := is.s
	if err := q.Validate(); err != nil {
		return gtc.QueryPage{}, fmt.Errorf("cosmos: query: %w", err)
	}
	if s.closed.Load() {
		return gtc.QueryPage{}, errClosed("query")
	}
	cq, ok := countQuery(q.Filter)
	if !ok {
		return gtc.QueryPage{Items: []*gtc.Item{}}, nil
	}
	var keys []gtc.Key
	var total int
	if q.Filter.AssignedTo != nil {
		all, err := is.projectionKeys(ctx, q.Filter, q.Sort, q.Desc)
		if err != nil {
			return gtc.QueryPage{}, err
		}
		total = len(all)
		if q.Offset < total {
			keys = all[q.Offset:min(total, q.Offset+q.Limit)]
		}
	} else {
		var parts []partition
		var countErr, partErr error
		done := make(chan struct{})
		go func() {
			defer close(done)
			total, countErr = s.count(ctx, s.gt, "query count", cq)
		}()
		parts, partErr = s.registry.partitions(ctx, q.Filter.DatasetNames, q.Filter.DatasetPrefix)
		<-done
		if err := errors.Join(countErr, partErr); err != nil {
			return gtc.QueryPage{}, err
		}
		if total <= q.Offset {
			return gtc.QueryPage{Items: []*gtc.Item{}, Total: total}, nil
		}
		n := q.Offset + q.Limit
		ms := mergeSpec{
			parts:    parts,
			query:    func(p partition) (sqlQuery, bool) { return topQuery(p, q.Filter, q.Sort, q.Desc, n) },
			pageSize: min(n, 100),
			desc:     q.Desc,
		}
		i := 0
		for row, err := range s.merge(ctx, "query", ms) {
			if err != nil {
				return gtc.QueryPage{}, err
			}
			if i >= q.Offset {
				keys = append(keys, row.key)
			}
			i++
			if i >= n {
				break
			}
		}
	}
	items, err := s.hydrate(ctx, keys)
	if err != nil {
		return gtc.QueryPage{}, err
	}
	return gtc.QueryPage{Items: items, Total: total}, nil
}

// projectionKeys is S2: every match's key across partitions, sorted in memory.
func (is *itemStore) projectionKeys(ctx context.Context, f gtc.Filter, k gtc.SortKey, desc bool) ([]gtc.Key, error) {
	q, ok := projectionQuery(f, k)
	if !ok {
		return nil, nil
	}
	var rows []sortedRow
	err := is.s.rows(ctx, is.s.gt, "query projection", q, func(raw []byte) error {
		var r struct {
			ID      string `json:"id"`
			Dataset string `json:"datasetName"`
			Bucket  string `json:"bucket"`
			SK      string `json:"sk"`
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			return fmt.Errorf("cosmos: query: %w: row unreadable: %w", gtc.ErrUnavailable, err)
		}
		rows = append(rows, sortedRow{key: gtc.Key{DatasetName: r.Dataset, Bucket: r.Bucket, ID: r.ID}, sk: r.SK})
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(rows, func(a, b sortedRow) int { return compareRows(&a, &b, desc) })
	keys := make([]gtc.Key, len(rows))
	for i, r := range rows {
		keys[i] = r.key
	}
	return keys, nil
}

// hydrate point-reads keys, 16 at a time, keeping their order; items deleted meanwhile are
// dropped.
func (s *Store) hydrate(ctx context.Context, keys []gtc.Key) ([]*gtc.Item, error) {
	got := make([]*gtc.Item, len(keys))
	err := parallel.ForEach(ctx, len(keys), hydrateParallel, func(ctx context.Context, i int) error {
		it, err := s.items.Get(ctx, keys[i])
		if errors.Is(err, gtc.ErrNotFound) {
			return nil
		}
		got[i] = it
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]*gtc.Item, 0, len(keys))
	for _, it := range got {
		if it != nil {
			out = append(out, it)
		}
	}
	return out, nil
}

// QueryAll streams every match in order: a merge of per-partition ordered queries of whole
// documents (S1 without TOP), or S2 for one user's queue.
func (is *itemStore) QueryAll(ctx context.Context, q gtc.Query) iter.Seq2[*gtc.Item, error] {
	s := is.s
	return func(yield func(*gtc.Item, error) bool) {
		if !q.Sort.Valid() || (q.Desc && (q.Sort == gtc.SortAssignedAt || q.Sort == gtc.SortRecent)) {
			yield(nil, fmt.Errorf("cosmos: query all: %w: sort %q", gtc.ErrInvalidArgument, q.Sort))
			return
		}
		if err := q.Filter.Validate(); err != nil {
			yield(nil, fmt.Errorf("cosmos: query all: %w", err))
			return
		}
		if s.closed.Load() {
			yield(nil, errClosed("query all"))
			return
		}
		if _, ok := countQuery(q.Filter); !ok {
			return
		}
		if q.Filter.AssignedTo != nil {
			keys, err := is.projectionKeys(ctx, q.Filter, q.Sort, q.Desc)
			if err != nil {
				yield(nil, err)
				return
			}
			for chunk := range slices.Chunk(keys, 100) {
				items, err := s.hydrate(ctx, chunk)
				if err != nil {
					yield(nil, err)
					return
				}
				for _, it := range items {
					if !yield(it, nil) {
						return
					}
				}
			}
			return
		}
		parts, err := s.registry.partitions(ctx, q.Filter.DatasetNames, q.Filter.DatasetPrefix)
		if err != nil {
			yield(nil, err)
			return
		}
		ms := mergeSpec{
			parts:    parts,
			query:    func(p partition) (sqlQuery, bool) { return fullQuery(p, q.Filter, sortField(q.Sort), q.Desc, nil) },
			pageSize: clampPage(s.opts.PageSize, len(parts)),
			desc:     q.Desc,
			whole:    true,
			order:    q.Sort,
		}
		for row, err := range s.merge(ctx, "query all", ms) {
			if err != nil {
				yield(nil, err)
				return
			}
			if !yield(row.item, nil) {
				return
			}
		}
	}
}

// clampPage spreads a page budget over n partitions: clamp(budget ÷ n, 5, 100).
func clampPage(budget, n int) int {
	return min(100, max(5, budget/max(1, n)))
}

// fullQuery selects whole documents of one partition in the order of field; after, when
// set, keeps only ids above it (scans).
func fullQuery(p partition, f gtc.Filter, field string, desc bool, after *string) (sqlQuery, bool) {
	b := itemWhere(&p)
	if !filterConds(b, f) {
		return sqlQuery{}, false
	}
	if after != nil {
		b.add("c.id > " + b.named("@after", *after))
	}
	return sqlQuery{text: "SELECT * FROM c WHERE " + b.where() + " ORDER BY " + field + dir(desc), params: b.params, pk: &p}, true
}

// Eligible streams the self-serve pool with one cross-partition projection.
func (is *itemStore) Eligible(ctx context.Context, e gtc.EligibleSpec) iter.Seq2[gtc.Key, error] {
	s := is.s
	return func(yield func(gtc.Key, error) bool) {
		if s.closed.Load() {
			yield(gtc.Key{}, errClosed("eligible"))
			return
		}
		q := eligibleQuery(e)
		for p, err := range s.pages(ctx, s.gt, "eligible", q, s.opts.PageSize, "") {
			if err != nil {
				yield(gtc.Key{}, err)
				return
			}
			for _, raw := range p.rows {
				var r struct {
					ID      string `json:"id"`
					Dataset string `json:"datasetName"`
					Bucket  string `json:"bucket"`
				}
				if err := json.Unmarshal(raw, &r); err != nil {
					yield(gtc.Key{}, fmt.Errorf("cosmos: eligible: %w: row unreadable: %w", gtc.ErrUnavailable, err))
					return
				}
				if !yield(gtc.Key{DatasetName: r.Dataset, Bucket: r.Bucket, ID: r.ID}, nil) {
					return
				}
			}
		}
	}
}

func eligibleQuery(e gtc.EligibleSpec) sqlQuery {
	b := itemWhere(nil)
	empty := emptyField("c.assignedTo")
	b.add("((c.status = 'draft' AND " + empty + ") OR (c.status = 'skipped' AND (" + empty + " OR c.assignedTo != " + b.named("@user", e.User) + ")))")
	if e.DatasetPrefix != "" {
		b.add("STARTSWITH(c.datasetName, " + b.named("@prefix", e.DatasetPrefix) + ")")
	}
	return sqlQuery{text: "SELECT c.id, c.datasetName, c.bucket FROM c WHERE " + b.where(), params: b.params}
}
