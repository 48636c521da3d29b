package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	gtc "github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/codec"
)

// itemStore implements gtc.ItemStore.
type itemStore struct {
	s *Store
	// pageBytes bounds the documents of a QueryAll page (queryAllBytes; tests lower it).
	pageBytes int64
}

var _ gtc.ItemStore = (*itemStore)(nil)

// preparedItem is an item ready to be written: its canonical document, the item exactly as
// that document reads back (what the write returns), and the derived index columns.
type preparedItem struct {
	stored *gtc.Item
	doc    string
	fields gtc.IndexFields
	tags   []string
	// revisions are what the write records (their stored JSON), in the same transaction;
	// revs are the same revisions, which retention may change inside it.
	revisions []revisionRow
	revs      []*gtc.Revision
	history   gtc.HistoryOptions
	at        time.Time
}

// revisionRow is one revision ready to be inserted: planRevisions gives it its rowid and
// links it to the revision before it (prev 0: none).
type revisionRow struct {
	n         int64
	doc       []byte
	rid, prev int64
}

// prepareItem checks and encodes it. Everything that can refuse an item happens here, before
// the write is queued: so the size check comes before any ETag comparison. The item gets the
// revision number that follows prev's (prev is nil for a create), and the write's revisions
// are made ready.
func (s *Store) prepareItem(ctx context.Context, op string, prev, it *gtc.Item) (*preparedItem, error) {
	if it == nil {
		return nil, fmt.Errorf("sqlite: %s: %w: nil item", op, gtc.ErrInvalidArgument)
	}
	if it.DatasetName == "" || it.ID == "" {
		return nil, fmt.Errorf("sqlite: %s: %w: item needs a datasetName and an id", op, gtc.ErrInvalidArgument)
	}
	if !gtc.IsCanonicalUUID(it.Bucket) {
		return nil, fmt.Errorf("sqlite: %s: %w: bucket %q is not a canonical lower-case UUID", op, gtc.ErrInvalidArgument, it.Bucket)
	}
	c := *it // a shallow copy is enough: only top-level fields change
	if c.AssignedTo != nil && *c.AssignedTo == "" {
		// "" means unassigned, exactly like absent and null; all three are stored as null.
		c.AssignedTo = nil
	}
	c.Revision = gtc.NextRevision(prev)
	it = &c
	form := codec.EncodeStored(it)
	doc := form.Doc
	if codec.ContentSize(doc, it.Revision) > gtc.MaxItemBytes {
		return nil, fmt.Errorf("sqlite: %s: %w: canonical document of %s has %d bytes, the limit is %d",
			op, gtc.ErrTooLarge, it.Key(), len(doc), gtc.MaxItemBytes)
	}
	// Decoding the document both validates the raw JSON parts and gives the caller the item
	// exactly as a later Get returns it (UTC times in microseconds, defaults filled).
	stored, err := codec.DecodeStoredItem(doc)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w: item %s does not encode to valid JSON: %w", op, gtc.ErrInvalidArgument, it.Key(), err)
	}
	if !stored.Status.Valid() {
		return nil, fmt.Errorf("sqlite: %s: %w: unknown status %q", op, gtc.ErrInvalidArgument, stored.Status)
	}
	stored.ETag = s.newETag()
	p := &preparedItem{stored: stored, doc: string(doc), fields: gtc.Derive(stored), tags: stored.Tags(),
		history: s.history, at: s.clock.Now()}
	if s.history.Disabled {
		return p, nil
	}
	// The revision diffs the document as written against prev's as read back: the codec
	// writes a document it has read to the same bytes.
	revs, err := codec.ItemRevisions(ctx, prev, stored, form, p.at)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w: item %s: %w", op, gtc.ErrInvalidArgument, it.Key(), err)
	}
	for i, r := range revs {
		if r.ETagAfter == "" {
			r.ETagAfter = stored.ETag
			if i+1 < len(revs) {
				r.ETagAfter = revs[i+1].ETagBefore
			}
		}
		b, err := codec.AppendRevision(nil, r)
		if err != nil {
			return nil, fmt.Errorf("sqlite: %s: revision of %s: %w", op, it.Key(), err)
		}
		p.revisions = append(p.revisions, revisionRow{n: r.Number, doc: b})
	}
	p.revs = revs
	return p, nil
}

// pruneLimit bounds the revisions one write prunes, so that lowering the retention settings
// never makes a single write long: an item's excess goes over its next writes.
const pruneLimit = 32

// planRevisions applies the retention settings to the item's stored revisions, whose newest
// has rowid head (0: none), inside the write's transaction, and gives the revisions the
// write records their rowids, each linked to the one before it. It returns the item's new
// head, to be written with the item row; insertRevisionRows then inserts the revisions.
func planRevisions(w *wtx, st *statements, p *preparedItem, op string, head int64) (int64, error) {
	prev := head
	if len(p.revs) > 0 && codec.MayPrune(p.history, p.revs[len(p.revs)-1].Number) {
		linked, err := prune(w, st, p, op, head)
		if err != nil {
			return 0, err
		}
		if !linked {
			prev = 0
		}
	}
	if len(p.revisions) == 0 {
		return head, nil
	}
	rid, err := w.reserveRIDs(st, len(p.revisions))
	if err != nil {
		return 0, wrapErr(op+" revision", err)
	}
	for i := range p.revisions {
		p.revisions[i].rid, p.revisions[i].prev = rid, prev
		prev = rid
		rid++
	}
	return prev, nil
}

// insertRevisionRows records the revisions planRevisions made ready, in the write's
// transaction.
func insertRevisionRows(w *wtx, st *statements, p *preparedItem, op string) error {
	k := p.stored.Key()
	for _, r := range p.revisions {
		if _, err := w.stmt(st.revisionInsert).Exec(r.rid, k.DatasetName, k.ID, r.n, nullRID(r.prev), string(r.doc)); err != nil {
			return wrapErr(op+" revision", err)
		}
	}
	return nil
}

// nullRID is a revision rowid as a column value: 0 (none) is NULL.
func nullRID(rid int64) any {
	if rid == 0 {
		return nil
	}
	return rid
}

// chainLink is one revision of an item's list: its rowid and number.
type chainLink struct{ rid, n int64 }

// prune applies the retention settings in the write's transaction: it reads the item's
// oldest revisions, deletes the ones codec.PlanPrune drops and rewrites the oldest kept one,
// which then ends the list; p.revisions become the revisions the plan writes. It reports
// whether any stored revision is kept, for the write's first revision to follow.
func prune(w *wtx, st *statements, p *preparedItem, op string, head int64) (bool, error) {
	below := p.revs[0].Number
	var chain []chainLink // oldest first, all numbered below the write's
	if head != 0 {
		rows, err := w.stmt(st.revisionChain).Query(head)
		if err != nil {
			return false, wrapErr(op+" revisions", err)
		}
		for rows.Next() {
			var l chainLink
			if err := rows.Scan(&l.rid, &l.n); err != nil {
				rows.Close()
				return false, wrapErr(op+" revisions", err)
			}
			if l.n < below {
				chain = append(chain, l)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return false, wrapErr(op+" revisions", err)
		}
	}
	read := func(links []chainLink) ([]*gtc.Revision, error) {
		if len(links) == 0 {
			return nil, nil
		}
		ids := append(make([]byte, 0, 16*len(links)), '[')
		for i, l := range links {
			if i > 0 {
				ids = append(ids, ',')
			}
			ids = strconv.AppendInt(ids, l.rid, 10)
		}
		rows, err := w.stmt(st.revisionDocs).Query(string(append(ids, ']')))
		if err != nil {
			return nil, wrapErr(op+" revisions", err)
		}
		defer rows.Close()
		var out []*gtc.Revision
		for rows.Next() {
			var doc []byte
			if err := rows.Scan(&doc); err != nil {
				return nil, wrapErr(op+" revisions", err)
			}
			r, err := codec.DecodeRevision(doc)
			if err != nil {
				return nil, fmt.Errorf("sqlite: %s: %w: %w", op, gtc.ErrUnavailable, err)
			}
			out = append(out, r)
		}
		if err := rows.Err(); err != nil {
			return nil, wrapErr(op+" revisions", err)
		}
		return out, nil
	}
	oldest, err := read(chain[:min(len(chain), pruneLimit+1)])
	if err != nil {
		return false, err
	}
	later := func(n int64) ([]*gtc.Revision, error) {
		i, _ := slices.BinarySearchFunc(chain, n+1, func(l chainLink, n int64) int { return cmp.Compare(l.n, n) })
		return read(chain[i:])
	}
	plan, err := codec.PlanPrune(p.history, oldest, p.revs, []byte(p.doc), p.at, pruneLimit, later)
	if err != nil {
		return false, err
	}
	ridOf := func(n int64) (int64, error) {
		i, found := slices.BinarySearchFunc(chain, n, func(l chainLink, n int64) int { return cmp.Compare(l.n, n) })
		if !found {
			return 0, fmt.Errorf("sqlite: %s: %w: revision %d of %s is not in its list", op, gtc.ErrUnavailable, n, p.stored.Key())
		}
		return chain[i].rid, nil
	}
	for _, n := range plan.Delete {
		rid, err := ridOf(n)
		if err != nil {
			return false, err
		}
		if _, err := w.stmt(st.revisionDelete).Exec(rid); err != nil {
			return false, wrapErr(op+" prune revisions", err)
		}
	}
	if plan.Rebased != nil {
		rid, err := ridOf(plan.Rebased.Number)
		if err != nil {
			return false, err
		}
		b, err := codec.AppendRevision(nil, plan.Rebased)
		if err != nil {
			return false, fmt.Errorf("sqlite: %s: revision of %s: %w", op, p.stored.Key(), err)
		}
		if _, err := w.stmt(st.revisionRebase).Exec(string(b), rid); err != nil {
			return false, wrapErr(op+" prune revisions", err)
		}
	}
	p.revisions = p.revisions[:0]
	for _, r := range plan.Write {
		b, err := codec.AppendRevision(nil, r)
		if err != nil {
			return false, fmt.Errorf("sqlite: %s: revision of %s: %w", op, p.stored.Key(), err)
		}
		p.revisions = append(p.revisions, revisionRow{n: r.Number, doc: b})
	}
	return len(plan.Delete) < len(chain), nil
}

// columnArgs are the values of itemColumns.
func (p *preparedItem) columnArgs() []any {
	var assigned any
	if p.stored.AssignedTo != nil {
		assigned = *p.stored.AssignedTo
	}
	f := p.fields
	return []any{
		string(p.stored.Status), assigned, p.stored.ETag, f.V,
		f.SK.ReviewedAt, f.SK.UpdatedAt, f.SK.HasAnswer, f.SK.TagCount, f.SK.References, f.SK.AssignedAt, f.SK.Recent,
		f.RefURLs, f.SearchText, p.doc,
	}
}

// Get returns the item with k's dataset and id if its bucket is k.Bucket.
func (is *itemStore) Get(ctx context.Context, k gtc.Key) (*gtc.Item, error) {
	if is.s.closed.Load() {
		return nil, errClosed("get")
	}
	var bucket, etag string
	var doc []byte
	err := is.s.stmts.get.QueryRowContext(ctx, k.DatasetName, k.ID).Scan(&bucket, &etag, &doc)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && bucket != k.Bucket) {
		return nil, fmt.Errorf("sqlite: get %s: %w", k, gtc.ErrNotFound)
	}
	if err != nil {
		return nil, wrapErr("get", err)
	}
	return decodeItem(doc, etag)
}

func decodeItem(doc []byte, etag string) (*gtc.Item, error) {
	it, err := codec.DecodeStoredItem(doc)
	if err != nil {
		return nil, fmt.Errorf("sqlite: stored document unreadable: %w: %w", gtc.ErrUnavailable, err)
	}
	it.ETag = etag
	return it, nil
}

// Locate returns the key of the item with that dataset and id, whatever its bucket.
func (is *itemStore) Locate(ctx context.Context, datasetName, id string) (gtc.Key, error) {
	if is.s.closed.Load() {
		return gtc.Key{}, errClosed("locate")
	}
	var bucket string
	err := is.s.stmts.locate.QueryRowContext(ctx, datasetName, id).Scan(&bucket)
	if errors.Is(err, sql.ErrNoRows) {
		return gtc.Key{}, fmt.Errorf("sqlite: locate %s/%s: %w", datasetName, id, gtc.ErrNotFound)
	}
	if err != nil {
		return gtc.Key{}, wrapErr("locate", err)
	}
	return gtc.Key{DatasetName: datasetName, Bucket: bucket, ID: id}, nil
}

// Create stores a new item. An existing (datasetName, id), in any bucket, gives a
// *gtc.ConflictError carrying its key.
func (is *itemStore) Create(ctx context.Context, it *gtc.Item) (*gtc.Item, error) {
	p, err := is.s.prepareItem(ctx, "create", nil, it)
	if err != nil {
		return nil, err
	}
	err = is.s.write(ctx, "create", func(w *wtx) error {
		return insertItem(w, &is.s.stmts, p)
	})
	if err != nil {
		return nil, err
	}
	return p.stored, nil
}

// insertItem is the body of Create inside the write transaction: the item row comes first,
// and an existing (datasetName, id) makes its insert write nothing, so a duplicate fails
// before anything is written.
func insertItem(w *wtx, st *statements, p *preparedItem) error {
	return insertItemAs(w, st, p, "create", 0)
}

// insertItemAs is insertItem for the store operation op, which names it in errors. head is
// the rowid of the newest revision the item already has (0: none), for a row that replaces
// one of the same item.
func insertItemAs(w *wtx, st *statements, p *preparedItem, op string, head int64) error {
	head, err := planRevisions(w, st, p, op, head)
	if err != nil {
		return err
	}
	pk, err := insertItemRow(w, st, p, op, head)
	if err != nil {
		return err
	}
	var rows tagRows
	rows.add(pk, p.stored.DatasetName, string(p.stored.Status), p.tags)
	if err := rows.insert(w, st); err != nil {
		return wrapErr(op+" tags", err)
	}
	return insertRevisionRows(w, st, p, op)
}

// insertItemRow inserts the item's row, with head as its newest revision, and returns its
// pk. An existing (datasetName, id) makes the insert write nothing and gives a
// *gtc.ConflictError.
func insertItemRow(w *wtx, st *statements, p *preparedItem, op string, head int64) (int64, error) {
	k := p.stored.Key()
	args := make([]any, 0, 18)
	args = append(args, k.ID, k.DatasetName, k.Bucket)
	args = append(args, p.columnArgs()...)
	args = append(args, nullRID(head))
	var pk int64
	err := w.stmt(st.insertItem).QueryRow(args...).Scan(&pk)
	if errors.Is(err, sql.ErrNoRows) {
		// The item exists: the insert wrote nothing.
		var bucket string
		if err := w.stmt(st.keyOf).QueryRow(k.DatasetName, k.ID).Scan(&bucket); err != nil {
			return 0, wrapErr(op, err)
		}
		return 0, fmt.Errorf("sqlite: %s %s: %w", op, k, &gtc.ConflictError{
			Existing: gtc.Key{DatasetName: k.DatasetName, Bucket: bucket, ID: k.ID},
		})
	}
	if err != nil {
		return 0, wrapErr(op, err)
	}
	return pk, nil
}

// createMany creates items in one transaction: all or none. Tests and benchmarks use it to
// build large fixtures quickly.
func (is *itemStore) createMany(ctx context.Context, items []*gtc.Item) error {
	ps := make([]*preparedItem, len(items))
	for i, it := range items {
		p, err := is.s.prepareItem(ctx, "create", nil, it)
		if err != nil {
			return err
		}
		ps[i] = p
	}
	return is.s.write(ctx, "create many", func(w *wtx) error {
		for _, p := range ps {
			if err := insertItem(w, &is.s.stmts, p); err != nil {
				return err
			}
		}
		return nil
	})
}

// Replace writes next over prev if the stored ETag is still prev.ETag.
func (is *itemStore) Replace(ctx context.Context, prev, next *gtc.Item) (*gtc.Item, error) {
	p, err := is.s.prepareReplace(ctx, prev, next)
	if err != nil {
		return nil, err
	}
	if err := is.writeReplace(ctx, prev, p); err != nil {
		return nil, err
	}
	return p.stored, nil
}

// prepareReplace checks a replace of prev by next and prepares next.
func (s *Store) prepareReplace(ctx context.Context, prev, next *gtc.Item) (*preparedItem, error) {
	if prev == nil || next == nil {
		return nil, fmt.Errorf("sqlite: replace: %w: nil item", gtc.ErrInvalidArgument)
	}
	if k := prev.Key(); next.Key() != k {
		return nil, fmt.Errorf("sqlite: replace: %w: key %s differs from %s", gtc.ErrInvalidArgument, next.Key(), k)
	}
	return s.prepareItem(ctx, "replace", prev, next)
}

// writeReplace writes p, prepared from an item that replaces prev, as one queued write.
func (is *itemStore) writeReplace(ctx context.Context, prev *gtc.Item, p *preparedItem) error {
	st := &is.s.stmts
	return is.s.write(ctx, "replace", func(w *wtx) error {
		cur, err := currentFor(w, st, prev)
		if err != nil {
			return err
		}
		var tags tagChanges
		if err := applyReplace(w, st, prev, cur, p, &tags); err != nil {
			return err
		}
		return tags.flush(w, st)
	})
}

// currentFor reads the stored columns of prev's item in the write transaction: ErrNotFound
// when it is gone (or in another bucket), ErrPreconditionFailed when its ETag is no longer
// prev's. It writes nothing.
func currentFor(w *wtx, st *statements, prev *gtc.Item) (storedColumns, error) {
	k := prev.Key()
	var cur storedColumns
	err := cur.scan(w.stmt(st.currentOf).QueryRow(k.DatasetName, k.ID))
	if errors.Is(err, sql.ErrNoRows) {
		return cur, replaceRefused(prev, nil)
	}
	if err != nil {
		return cur, wrapErr("replace", err)
	}
	return cur, replaceRefused(prev, &cur)
}

// replaceRefused is the error of a replace of prev whose item is stored with the columns
// cur (nil: no item of its dataset and id): ErrNotFound when it is gone (or in another
// bucket), ErrPreconditionFailed when its ETag is no longer prev's, else nil.
func replaceRefused(prev *gtc.Item, cur *storedColumns) error {
	k := prev.Key()
	if cur == nil || cur.bucket != k.Bucket {
		return fmt.Errorf("sqlite: replace %s: %w", k, gtc.ErrNotFound)
	}
	if cur.etag != prev.ETag {
		return fmt.Errorf("sqlite: replace %s: %w", k, gtc.ErrPreconditionFailed)
	}
	return nil
}

// applyReplace writes p over prev's item, whose stored columns were read as cur, in the
// write transaction: its revisions and its row; the changes of its tag rows are gathered
// into tags, for the caller to flush. An error may leave part of it written: the caller's
// write must fail with it.
func applyReplace(w *wtx, st *statements, prev *gtc.Item, cur storedColumns, p *preparedItem, tags *tagChanges) error {
	k := prev.Key()
	head, err := planRevisions(w, st, p, "replace", cur.revHead.Int64)
	if err != nil {
		return err
	}
	mask := p.changes(cur)
	res, err := w.stmt(st.update[mask]).Exec(p.updateArgs(mask, k, prev.ETag, head)...)
	if err != nil {
		return wrapErr("replace", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return wrapErr("replace", err)
	}
	if n == 0 {
		// The row exists (read above, in this transaction): the token is stale.
		return fmt.Errorf("sqlite: replace %s: %w", k, gtc.ErrPreconditionFailed)
	}
	if err := syncTags(w, st, cur.pk, prev.Tags(), string(prev.Status), p, tags); err != nil {
		return err
	}
	return insertRevisionRows(w, st, p, "replace")
}

// storedColumns are the current values of the indexed columns Replace may leave alone.
type storedColumns struct {
	pk                                   int64
	bucket, etag, status                 string
	assignedTo                           sql.NullString
	skAssigned, skTagCount, skReferences string
	skReviewed, skUpdated, skHasAnswer   string
	skRecent                             string
	revHead                              sql.NullInt64
}

// scan reads the row of currentOf.
func (cur *storedColumns) scan(row *sql.Row) error {
	return row.Scan(cur.dest()...)
}

// dest are the scan destinations of currentColumns.
func (cur *storedColumns) dest() []any {
	return []any{&cur.pk, &cur.bucket, &cur.etag, &cur.status, &cur.assignedTo, &cur.skAssigned, &cur.skTagCount,
		&cur.skReferences, &cur.skReviewed, &cur.skUpdated, &cur.skHasAnswer, &cur.skRecent, &cur.revHead}
}

// changes returns the update variant that writes p over cur.
func (p *preparedItem) changes(cur storedColumns) int {
	var mask int
	if string(p.stored.Status) != cur.status {
		mask |= changesStatus
	}
	assigned := sql.NullString{}
	if p.stored.AssignedTo != nil {
		assigned = sql.NullString{String: *p.stored.AssignedTo, Valid: true}
	}
	if assigned != cur.assignedTo || p.fields.SK.AssignedAt != cur.skAssigned {
		mask |= changesAssignment
	}
	if p.fields.SK.TagCount != cur.skTagCount {
		mask |= changesTagCount
	}
	if p.fields.SK.References != cur.skReferences {
		mask |= changesReferences
	}
	sk := p.fields.SK
	if sk.ReviewedAt != cur.skReviewed || sk.UpdatedAt != cur.skUpdated || sk.HasAnswer != cur.skHasAnswer || sk.Recent != cur.skRecent {
		mask |= changesEdit
	}
	return mask
}

// updateArgs are the values of updateSQL(mask) for key k, conditional on ifMatch.
func (p *preparedItem) updateArgs(mask int, k gtc.Key, ifMatch string, head int64) []any {
	f := p.fields
	args := make([]any, 0, 19)
	args = append(args, p.stored.ETag, f.V, f.RefURLs, f.SearchText, p.doc, nullRID(head))
	if mask&changesEdit != 0 {
		args = append(args, f.SK.ReviewedAt, f.SK.UpdatedAt, f.SK.HasAnswer, f.SK.Recent)
	}
	if mask&changesStatus != 0 {
		args = append(args, string(p.stored.Status))
	}
	if mask&changesAssignment != 0 {
		var assigned any
		if p.stored.AssignedTo != nil {
			assigned = *p.stored.AssignedTo
		}
		args = append(args, assigned, f.SK.AssignedAt)
	}
	if mask&changesTagCount != 0 {
		args = append(args, f.SK.TagCount)
	}
	if mask&changesReferences != 0 {
		args = append(args, f.SK.References)
	}
	return append(args, k.DatasetName, k.ID, k.Bucket, ifMatch)
}

// syncTags makes the item's rows in item_tags match p: its tags, with its status. Only the
// differences are written: they are gathered into tags, for the caller to flush (a status
// change deletes the item's rows at once). old and oldStatus describe the rows as they are:
// a replace calls this only after its conditional update matched the ETag of prev, and every
// write keeps item_tags equal to the stored document's tags in the same transaction, so the
// rows are prev's tags with prev's status and need not be read back.
func syncTags(w *wtx, st *statements, pk int64, old []string, oldStatus string, p *preparedItem, tags *tagChanges) error {
	status := string(p.stored.Status)
	if status != oldStatus {
		// Status is part of every row's key: rewrite them all.
		if _, err := w.stmt(st.deleteTagsOf).Exec(pk); err != nil {
			return wrapErr("write tags", err)
		}
		old = nil
	}
	for _, tag := range old {
		if !slices.Contains(p.tags, tag) {
			tags.remove(pk, tag)
		}
	}
	var added []string
	for _, tag := range p.tags {
		if !slices.Contains(old, tag) {
			added = append(added, tag)
		}
	}
	tags.rows.add(pk, p.stored.DatasetName, status, added)
	return nil
}

// tagChanges are the item_tags changes of one or many replaced items, gathered so that each
// kind is one statement (flush): the rows they lose, one JSON array of [item_pk, tag] pairs,
// and the rows they gain. The items are distinct, so the order of the two does not matter.
type tagChanges struct {
	removed []byte
	rows    tagRows
}

// remove gathers the deletion of the row (pk, tag).
func (c *tagChanges) remove(pk int64, tag string) {
	if len(c.removed) == 0 {
		c.removed = append(c.removed, '[')
	} else {
		c.removed = append(c.removed, ',')
	}
	c.removed = append(strconv.AppendInt(append(c.removed, '['), pk, 10), ',')
	c.removed = append(codec.AppendString(c.removed, tag), ']')
}

// flush writes the gathered changes.
func (c *tagChanges) flush(w *wtx, st *statements) error {
	if len(c.removed) > 0 {
		if _, err := w.stmt(st.deleteTags).Exec(string(append(c.removed, ']'))); err != nil {
			return wrapErr("write tags", err)
		}
	}
	return wrapErr("write tags", c.rows.insert(w, st))
}

// tagRows are item_tags rows gathered for one statement per (dataset, status): the tags of
// one item or of many go in together. A group travels as one JSON object, each item's tags
// under its pk, {"17":["a","b"],"18":["a"]}, which SQLite reads with a json_each per item
// and one per tag, each tag a plain string.
type tagRows struct{ groups []tagGroup }

type tagGroup struct {
	datasetName, status string
	object              []byte
}

// add gathers the rows of one item's tags.
func (r *tagRows) add(pk int64, datasetName, status string, tags []string) {
	if len(tags) == 0 {
		return
	}
	i := slices.IndexFunc(r.groups, func(g tagGroup) bool { return g.datasetName == datasetName && g.status == status })
	if i < 0 {
		i = len(r.groups)
		r.groups = append(r.groups, tagGroup{datasetName: datasetName, status: status, object: []byte{'{'}})
	}
	g := &r.groups[i]
	if len(g.object) > 1 {
		g.object = append(g.object, ',')
	}
	g.object = append(strconv.AppendInt(append(g.object, '"'), pk, 10), '"', ':', '[')
	for n, tag := range tags {
		if n > 0 {
			g.object = append(g.object, ',')
		}
		g.object = codec.AppendString(g.object, tag)
	}
	g.object = append(g.object, ']')
}

// insert adds the gathered rows, if any.
func (r *tagRows) insert(w *wtx, st *statements) error {
	for _, g := range r.groups {
		if _, err := w.stmt(st.insertTags).Exec(g.datasetName, g.status, string(append(g.object, '}'))); err != nil {
			return err
		}
	}
	return nil
}

// DeleteDataset hard-deletes every item of the dataset and its curation document.
func (is *itemStore) DeleteDataset(ctx context.Context, datasetName string) (gtc.DatasetDeletion, error) {
	var out gtc.DatasetDeletion
	st := &is.s.stmts
	err := is.s.write(ctx, "delete dataset", func(w *wtx) error {
		// The revisions go first: they are found from the items' rows.
		if _, err := w.stmt(st.deleteRevisionsOf).Exec(datasetName); err != nil {
			return wrapErr("delete dataset revisions", err)
		}
		res, err := w.stmt(st.deleteItems).Exec(datasetName)
		if err != nil {
			return wrapErr("delete dataset items", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return wrapErr("delete dataset items", err)
		}
		// Legacy documents of the dataset go too, or a later gtc migrate would bring the
		// deleted dataset back.
		res, err = w.tx.Exec(`DELETE FROM raw_items WHERE dataset_name = ?`, datasetName)
		if err != nil {
			return wrapErr("delete dataset legacy documents", err)
		}
		raw, err := res.RowsAffected()
		if err != nil {
			return wrapErr("delete dataset legacy documents", err)
		}
		n += raw
		res, err = w.stmt(st.deleteCuration).Exec(datasetName)
		if err != nil {
			return wrapErr("delete dataset curation", err)
		}
		c, err := res.RowsAffected()
		if err != nil {
			return wrapErr("delete dataset curation", err)
		}
		out = gtc.DatasetDeletion{Items: int(n), Curation: c > 0}
		return nil
	})
	if err != nil {
		return gtc.DatasetDeletion{}, err
	}
	return out, nil
}

// CountByStatus counts the items of each status; all four statuses are present.
func (is *itemStore) CountByStatus(ctx context.Context) (map[gtc.Status]int, error) {
	if is.s.closed.Load() {
		return nil, errClosed("count by status")
	}
	rows, err := is.s.rdb.QueryContext(ctx, `SELECT status, count(*) FROM items GROUP BY status`)
	if err != nil {
		return nil, wrapErr("count by status", err)
	}
	defer rows.Close()
	out := make(map[gtc.Status]int, len(gtc.Statuses))
	for _, st := range gtc.Statuses {
		out[st] = 0
	}
	for rows.Next() {
		var st string
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			return nil, wrapErr("count by status", err)
		}
		out[gtc.Status(st)] = n
	}
	if err := rows.Err(); err != nil {
		return nil, wrapErr("count by status", err)
	}
	return out, nil
}

// datasetsSQL lists the distinct dataset names in byte order. It is a SELECT DISTINCT
// written as a loose index scan: one seek in the unique (dataset_name, id) index per
// dataset instead of a walk over every item.
const datasetsSQL = `
WITH RECURSIVE d(name) AS (
  SELECT min(dataset_name) FROM items
  UNION ALL
  SELECT (SELECT min(dataset_name) FROM items WHERE dataset_name > d.name) FROM d WHERE d.name IS NOT NULL
)
SELECT name FROM d WHERE name IS NOT NULL`

// Datasets lists the distinct datasetName of the items, sorted.
func (is *itemStore) Datasets(ctx context.Context) ([]string, error) {
	if is.s.closed.Load() {
		return nil, errClosed("datasets")
	}
	rows, err := is.s.rdb.QueryContext(ctx, datasetsSQL)
	if err != nil {
		return nil, wrapErr("datasets", err)
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, wrapErr("datasets", err)
		}
		out = append(out, name)
	}
	if err := rows.Err(); err != nil {
		return nil, wrapErr("datasets", err)
	}
	return out, nil
}
