package cosmos

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	gtc "github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/codec"
	"github.com/gtc-dev/gtc/storage/internal/parallel"
)

// itemStore implements gtc.ItemStore.
type itemStore struct {
	s *Store
}

var _ gtc.ItemStore = (*itemStore)(nil)

// Get point-reads k. A document there that gtc did not write is not found.
func (is *itemStore) Get(ctx context.Context, k gtc.Key) (*gtc.Item, error) {
	if is.s.closed.Load() {
		return nil, errClosed("get")
	}
	if k.DatasetName == "" || k.ID == "" || !gtc.IsCanonicalUUID(k.Bucket) {
		return nil, fmt.Errorf("cosmos: get %s: %w", k, gtc.ErrNotFound)
	}
	it, _, err := is.read(ctx, k)
	return it, err
}

// read point-reads k and also returns the write id of the document.
func (is *itemStore) read(ctx context.Context, k gtc.Key) (*gtc.Item, string, error) {
	resp, err := is.s.gt.ReadItem(ctx, itemKey(k.DatasetName, k.Bucket), k.ID, nil)
	if err != nil {
		return nil, "", fmt.Errorf("cosmos: get %s: %w", k, wrapErr("get", err))
	}
	d, err := decodeItemDoc(resp.Value)
	if err != nil {
		return nil, "", fmt.Errorf("cosmos: get %s: %w", k, err)
	}
	if !d.visible || d.item.DatasetName != k.DatasetName || d.item.Bucket != k.Bucket {
		return nil, "", fmt.Errorf("cosmos: get %s: %w", k, gtc.ErrNotFound)
	}
	return d.item, d.wid, nil
}

// locateQuery finds the buckets holding (datasetName, id); Create leaves the visibility
// rule out so documents awaiting gtc migrate count too, legacy ones without a docType
// included (rawItem).
func locateQuery(ds, id string, visibleOnly bool) sqlQuery {
	b := &builder{}
	b.add("c.datasetName = " + b.named("@ds", ds))
	b.add("c.id = " + b.named("@id", id))
	if visibleOnly {
		b.add(visible)
	} else {
		b.add(rawItem)
	}
	return sqlQuery{text: "SELECT c.bucket FROM c WHERE " + b.where(), params: b.params}
}

// buckets lists the buckets holding (ds, id) as text: a legacy document's bucket may be a
// number, null or absent (RawDoc.BucketString).
func (is *itemStore) buckets(ctx context.Context, ds, id string, visibleOnly bool) ([]string, error) {
	var out []string
	err := is.s.rows(ctx, is.s.gt, "locate", locateQuery(ds, id, visibleOnly), func(row []byte) error {
		d, err := rawDocOf(row)
		if err != nil {
			return fmt.Errorf("cosmos: locate: %w", err)
		}
		out = append(out, d.BucketString())
		return nil
	})
	return out, err
}

// Locate finds the key of (datasetName, id) with one cross-partition projection.
func (is *itemStore) Locate(ctx context.Context, datasetName, id string) (gtc.Key, error) {
	if is.s.closed.Load() {
		return gtc.Key{}, errClosed("locate")
	}
	bs, err := is.buckets(ctx, datasetName, id, true)
	if err != nil {
		return gtc.Key{}, err
	}
	switch len(bs) {
	case 0:
		return gtc.Key{}, fmt.Errorf("cosmos: locate %s/%s: %w", datasetName, id, gtc.ErrNotFound)
	case 1:
		return gtc.Key{DatasetName: datasetName, Bucket: bs[0], ID: id}, nil
	}
	slices.Sort(bs) // the same answer every time: the first bucket names the conflict
	all := make([]gtc.Key, len(bs))
	for i, b := range bs {
		all[i] = gtc.Key{DatasetName: datasetName, Bucket: b, ID: id}
	}
	return gtc.Key{}, fmt.Errorf("cosmos: locate %s/%s: id stored in buckets %v: %w", datasetName, id, bs,
		&gtc.ConflictError{Existing: all[0], All: all})
}

// createWorkers is how many creates of one CreateEach are in flight: each is a few
// round trips, and the SDK retries a throttled (429) one.
const createWorkers = 64

// CreateEach creates the items as Create does, createWorkers at a time.
func (is *itemStore) CreateEach(ctx context.Context, items []*gtc.Item) []error {
	errs := make([]error, len(items))
	for i, err := range gtc.RepeatedInCall(items) {
		errs[i] = err // the creates run at once: the first of an id is the one created
	}
	_ = parallel.ForEach(ctx, len(items), createWorkers, func(ctx context.Context, i int) error {
		if errs[i] == nil {
			_, errs[i] = is.Create(ctx, items[i])
		}
		return nil // each item stands or falls alone
	})
	return errs
}

// replaceWorkers is how many replaces of one ReplaceEach are in flight: each is one
// conditional write (a transactional batch with its revisions), and the SDK retries a
// throttled (429) one.
const replaceWorkers = 64

// ReplaceEach writes each pair as Replace does, replaceWorkers at a time.
func (is *itemStore) ReplaceEach(ctx context.Context, pairs []gtc.Replacement) ([]*gtc.Item, []error) {
	out := make([]*gtc.Item, len(pairs))
	errs := make([]error, len(pairs))
	for i, err := range gtc.RepeatedReplaceInCall(pairs) {
		errs[i] = err // the writes run at once: the first pair of an item is the one written
	}
	_ = parallel.ForEach(ctx, len(pairs), replaceWorkers, func(ctx context.Context, i int) error {
		if errs[i] == nil {
			out[i], errs[i] = is.Replace(ctx, pairs[i].Prev, pairs[i].Next)
		}
		return nil // each item stands or falls alone
	})
	for i := range pairs {
		if errs[i] == nil && out[i] == nil {
			errs[i] = wrapErr("replace", ctx.Err()) // not started: ctx ended
		}
	}
	return out, errs
}

// Create registers the bucket, checks (datasetName, id) and creates the document.
func (is *itemStore) Create(ctx context.Context, it *gtc.Item) (*gtc.Item, error) {
	s := is.s
	if s.closed.Load() {
		return nil, errClosed("create")
	}
	if it != nil {
		it = it.Clone()
		it.Revision = gtc.NextRevision(nil)
	}
	p, err := s.prepareItem("create", it)
	if err != nil {
		return nil, err
	}
	k := p.stored.Key()
	if err := s.registry.ensure(ctx, partition{Dataset: k.DatasetName, Bucket: k.Bucket}); err != nil {
		return nil, err
	}
	bs, err := is.buckets(ctx, k.DatasetName, k.ID, false)
	if err != nil {
		return nil, err
	}
	if len(bs) > 0 {
		return nil, fmt.Errorf("cosmos: create %s: %w", k, &gtc.ConflictError{Existing: gtc.Key{DatasetName: k.DatasetName, Bucket: bs[0], ID: k.ID}})
	}
	revs, err := s.revisionDocs(ctx, k, nil, p.stored)
	if err != nil {
		return nil, fmt.Errorf("cosmos: create %s: %w", k, err)
	}
	if err := is.write(ctx, k, p, "", revs); err != nil {
		if statusOf(err) == http.StatusConflict {
			return nil, fmt.Errorf("cosmos: create %s: %w", k, &gtc.ConflictError{Existing: k})
		}
		return nil, fmt.Errorf("cosmos: create %s: %w", k, wrapErr("create", err))
	}
	s.assignmentChanged(ctx, nil, p.stored)
	return p.stored, nil
}

// write creates p's document at k (ifMatch == "", create-only) or replaces the document there
// if its ETag is ifMatch, and sets p.stored.ETag. With revs (revision documents), it writes
// them in the same transactional batch. An ambiguous outcome is resolved by the write id
// (landed); any other failure is returned as the SDK reported it, for the caller to map.
func (is *itemStore) write(ctx context.Context, k gtc.Key, p *preparedItem, ifMatch string, revs *revWrites) error {
	pk := itemKey(k.DatasetName, k.Bucket)
	var etag string
	var err error
	switch {
	case revs != nil && len(revs.docs) > 0:
		etag, err = is.writeBatch(ctx, k, p, ifMatch, revs)
	case ifMatch == "":
		var resp azcosmos.ItemResponse
		resp, err = is.s.gt.CreateItem(ctx, pk, p.doc, nil)
		etag = string(resp.ETag)
	default:
		var resp azcosmos.ItemResponse
		resp, err = is.s.gt.ReplaceItem(ctx, pk, k.ID, p.doc, &azcosmos.ItemOptions{IfMatchEtag: etagPtr(ifMatch)})
		etag = string(resp.ETag)
	}
	if err != nil {
		var be *batchError
		if errors.As(err, &be) && be.index != 0 {
			// The item write was not what failed: a revision document was refused.
			if be.status == http.StatusRequestEntityTooLarge {
				return fmt.Errorf("cosmos: write %s: %w: %w", k, gtc.ErrTooLarge, err)
			}
			return fmt.Errorf("cosmos: write %s: %w: %w", k, gtc.ErrUnavailable, err)
		}
		// A 409 or 412 can be this very write, applied before a 503 or a reset that was retried.
		if ok, lerr := is.landed(ctx, k, p, err); ok {
			return lerr
		}
		return err
	}
	p.stored.ETag = etag
	if p.stored.ETag == "" {
		if cur, err := is.Get(ctx, k); err == nil {
			p.stored.ETag = cur.ETag
		}
	}
	return nil
}

// landed resolves an ambiguous write (no status, or 409 on a retried create): the write
// happened when the document carries this write's id. When it reports true, the
// outcome is known: nil with p.stored.ETag set, or ErrUnavailable.
func (is *itemStore) landed(ctx context.Context, k gtc.Key, p *preparedItem, werr error) (bool, error) {
	st := statusOf(werr)
	if st != 0 && st != http.StatusConflict && st != http.StatusPreconditionFailed {
		return false, nil
	}
	if errors.Is(werr, context.Canceled) {
		return false, nil
	}
	rctx, cancel := followUpContext(ctx)
	defer cancel()
	cur, wid, err := is.read(rctx, k)
	if err == nil && wid == p.wid {
		p.stored.ETag = cur.ETag
		return true, nil
	}
	if st == http.StatusConflict || st == http.StatusPreconditionFailed {
		return false, nil
	}
	return true, fmt.Errorf("cosmos: write %s: %w: outcome unknown: %w", k, gtc.ErrUnavailable, werr)
}

// Replace writes next over prev if the document's ETag is still prev's.
func (is *itemStore) Replace(ctx context.Context, prev, next *gtc.Item) (*gtc.Item, error) {
	s := is.s
	if prev == nil || next == nil {
		return nil, fmt.Errorf("cosmos: replace: %w: nil item", gtc.ErrInvalidArgument)
	}
	if s.closed.Load() {
		return nil, errClosed("replace")
	}
	k := prev.Key()
	if next.Key() != k {
		return nil, fmt.Errorf("cosmos: replace: %w: key %s differs from %s", gtc.ErrInvalidArgument, next.Key(), k)
	}
	next = next.Clone()
	next.Revision = gtc.NextRevision(prev)
	p, err := s.prepareItem("replace", next)
	if err != nil {
		return nil, err
	}
	if prev.ETag == "" {
		return nil, fmt.Errorf("cosmos: replace %s: %w: no ETag to match", k, gtc.ErrPreconditionFailed)
	}
	revs, err := s.revisionDocs(ctx, k, prev, p.stored)
	if err != nil {
		return nil, fmt.Errorf("cosmos: replace %s: %w", k, err)
	}
	if err := is.write(ctx, k, p, prev.ETag, revs); err != nil {
		return nil, fmt.Errorf("cosmos: replace %s: %w", k, wrapErr("replace", err))
	}
	s.assignmentChanged(ctx, prev, p.stored)
	return p.stored, nil
}

// revWrites are the revision documents a write upserts in its batch and the ids of the
// revision documents it deletes there (retention).
type revWrites struct {
	docs    [][]byte
	deletes []string
}

// cosmosPruneLimit bounds the revisions one write prunes: the batch holds the item, its one
// or two revisions, the rewritten oldest kept one and these deletes, well under the 100
// operations a transactional batch allows.
const cosmosPruneLimit = 16

// pruneBatchBytes bounds the documents of a batch that prunes: a write whose item and
// revisions are larger postpones its pruning to a later write rather than exceed the 2 MB a
// transactional batch allows.
const pruneBatchBytes = 1 << 20

// wholeItemBatchBytes bounds an item and the whole-item copy of its first revision in one
// batch: past it the revision leaves the copy out (revisionDocs).
const wholeItemBatchBytes = 1792 << 10

// revisionDocs are the revision documents of writing next (as stored) over prev (nil for a
// create) at k, made now, with what retention prunes in the same batch: none when history
// is switched off.
func (s *Store) revisionDocs(ctx context.Context, k gtc.Key, prev, next *gtc.Item) (*revWrites, error) {
	if s.opts.History.Disabled {
		return nil, nil
	}
	now := s.clock.Now()
	form := codec.EncodeStored(next)
	revs, err := codec.ItemRevisions(ctx, prev, next, form, now)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", gtc.ErrInvalidArgument, err)
	}
	// A transactional batch carries at most 2 MB. An item's first revision (or baseline)
	// holds the whole item; for a large item it gives that copy up rather than the write:
	// the revision still says the item was added, and its content is rebuilt from the item
	// by undoing the later revisions, as every earlier version is.
	doc := form.Doc
	if 2*len(doc) > wholeItemBatchBytes {
		for _, r := range revs {
			if len(r.Ops) == 1 && r.Ops[0].Op == "add" && r.Ops[0].Path == "" {
				r.Ops[0].Value = nil
			}
		}
	}
	out := &revWrites{}
	if o := s.opts.History; codec.MayPrune(o, next.Revision) {
		plan, err := s.planPrune(ctx, k, revs, doc, now)
		if err != nil {
			return nil, err
		}
		if plan.Pruning() {
			var docs [][]byte
			size := len(doc)
			for _, r := range append(plan.Write, plan.Rebased) {
				if r == nil {
					continue
				}
				d, err := revisionDocument(k, r)
				if err != nil {
					return nil, err
				}
				docs, size = append(docs, d), size+len(d)
			}
			if size <= pruneBatchBytes {
				out.docs = docs
				for _, n := range plan.Delete {
					out.deletes = append(out.deletes, revisionDocID(k.ID, n))
				}
				return out, nil
			}
		}
	}
	for _, r := range revs {
		d, err := revisionDocument(k, r)
		if err != nil {
			return nil, err
		}
		out.docs = append(out.docs, d)
	}
	return out, nil
}

// planPrune reads the item's oldest revisions (one single-partition query) and decides
// what the write recording revs prunes.
func (s *Store) planPrune(ctx context.Context, k gtc.Key, revs []*gtc.Revision, doc []byte, now time.Time) (codec.Prune, error) {
	const op = "prune revisions"
	read := func(above, below int64, top int) ([]*gtc.Revision, error) {
		p := partition{Dataset: k.DatasetName, Bucket: k.Bucket}
		b := partitionWhere(p)
		b.add("c.docType = '" + docTypeRevision + "'")
		b.add("c.itemId = " + b.named("@id", k.ID))
		b.add("c.number > " + b.named("@above", above))
		b.add("c.number < " + b.named("@below", below))
		text := "SELECT c.number, c.gtcRevision FROM c WHERE " + b.where() + " ORDER BY c.number ASC"
		if top > 0 {
			b.named("@n", top)
			text = "SELECT TOP @n c.number, c.gtcRevision FROM c WHERE " + b.where() + " ORDER BY c.number ASC"
		}
		var out []*gtc.Revision
		err := s.rows(ctx, s.gt, op, sqlQuery{text: text, params: b.params, pk: &p}, func(row []byte) error {
			r, err := decodeRevisionDoc(row)
			if err != nil {
				return fmt.Errorf("cosmos: %s %s: %w", op, k, err)
			}
			out = append(out, r)
			return nil
		})
		return out, err
	}
	below := revs[0].Number
	oldest, err := read(0, below, cosmosPruneLimit+1)
	if err != nil {
		return codec.Prune{}, err
	}
	later := func(n int64) ([]*gtc.Revision, error) { return read(n, below, 0) }
	return codec.PlanPrune(s.opts.History, oldest, revs, doc, now, cosmosPruneLimit, later)
}

// DeleteDataset removes the dataset's items, revisions, curation document, assignment records and,
// last, its registry entry, so an interrupted run leaves a registry that still covers every
// remaining item.
func (is *itemStore) DeleteDataset(ctx context.Context, datasetName string) (gtc.DatasetDeletion, error) {
	s := is.s
	var out gtc.DatasetDeletion
	if s.closed.Load() {
		return out, errClosed("delete dataset")
	}
	if datasetName == "" {
		return out, fmt.Errorf("cosmos: delete dataset: %w: empty dataset name", gtc.ErrInvalidArgument)
	}
	parts, err := s.registry.partitions(ctx, []string{datasetName}, "")
	if err != nil {
		return out, err
	}
	var mu sync.Mutex
	for _, p := range parts {
		b := partitionWhere(p)
		q := sqlQuery{text: "SELECT c.id, c.docType FROM c WHERE " + b.where(), params: b.params, pk: &p}
		type row struct {
			ID      string `json:"id"`
			DocType string `json:"docType"`
		}
		rows, err := collectRows[row](ctx, s, s.gt, "delete dataset", q)
		if err != nil {
			return out, err
		}
		err = parallel.ForEach(ctx, len(rows), 8, func(ctx context.Context, i int) error {
			_, err := s.gt.DeleteItem(ctx, p.key(), rows[i].ID, nil)
			if statusOf(err) == http.StatusNotFound {
				return nil
			}
			if err != nil {
				return wrapErr("delete dataset", err)
			}
			if rows[i].DocType == gtc.DocTypeItem {
				mu.Lock()
				out.Items++
				mu.Unlock()
			}
			return nil
		})
		if err != nil {
			return out, err
		}
	}
	_, err = s.gt.DeleteItem(ctx, itemKey(datasetName, gtc.CurationBucket), gtc.CurationDocID(datasetName), nil)
	switch {
	case err == nil:
		out.Curation = true
	case statusOf(err) != http.StatusNotFound:
		return out, wrapErr("delete dataset curation", err)
	}
	if err := s.deleteAssignments(ctx, datasetName); err != nil {
		return out, err
	}
	if err := s.registry.remove(ctx, datasetName); err != nil {
		return out, err
	}
	return out, nil
}

// CountByStatus counts each status with one cross-partition count, four in parallel.
func (is *itemStore) CountByStatus(ctx context.Context) (map[gtc.Status]int, error) {
	if is.s.closed.Load() {
		return nil, errClosed("count by status")
	}
	counts := make([]int, len(gtc.Statuses))
	err := parallel.ForEach(ctx, len(gtc.Statuses), len(gtc.Statuses), func(ctx context.Context, i int) error {
		n, err := is.Count(ctx, gtc.Filter{Statuses: []gtc.Status{gtc.Statuses[i]}})
		counts[i] = n
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make(map[gtc.Status]int, len(gtc.Statuses))
	for i, st := range gtc.Statuses {
		out[st] = counts[i]
	}
	return out, nil
}

// Datasets lists the dataset names that hold a visible item, sorted.
func (is *itemStore) Datasets(ctx context.Context) ([]string, error) {
	if is.s.closed.Load() {
		return nil, errClosed("datasets")
	}
	return is.s.registry.datasets(ctx)
}

// Count counts f's matches with one cross-partition count.
func (is *itemStore) Count(ctx context.Context, f gtc.Filter) (int, error) {
	if is.s.closed.Load() {
		return 0, errClosed("count")
	}
	if err := f.Validate(); err != nil {
		return 0, fmt.Errorf("cosmos: count: %w", err)
	}
	q, ok := countQuery(f)
	if !ok {
		return 0, nil
	}
	return is.s.count(ctx, is.s.gt, "count", q)
}
