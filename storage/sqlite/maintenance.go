package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"strconv"
	"time"

	gtc "github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/codec"
)

// maintenance implements gtc.Maintenance over two tables: items, and raw_items, which holds
// the documents that are not in the current stored form (legacy documents loaded with
// InsertRaw). gtc migrate reads both and turns every raw_items row into an items row.
type maintenance struct {
	s *Store
}

var _ gtc.Maintenance = (*maintenance)(nil)

// Maintenance returns raw access to every item document, legacy ones included, for gtc
// migrate.
func (s *Store) Maintenance() gtc.Maintenance { return s.maintenance }

// markerKey names the meta row of the migration marker.
const markerKey = "migration_marker"

// migrationMarker is the value of the marker row, with the field names of the Cosmos DB
// marker (cosmos.Marker), so both stores describe a migration alike.
type migrationMarker struct {
	IndexVersion int    `json:"indexVersion"`
	MigratedAt   string `json:"migratedAt"`
	MigratedBy   string `json:"migratedBy"`
}

// systemKeys are removed from every body ScanRaw returns: a document copied out of Cosmos DB
// may still carry its system properties and derived index fields.
var systemKeys = [...]string{"_etag", "_rid", "_self", "_attachments", "_ts", "gtcIndex"}

// rawRow is a raw_items row ready to be inserted.
type rawRow struct {
	ds, id, bucket, etag, doc string
}

// InsertRaw stores doc exactly as given, with a new ETag, beside the items: a document in a
// legacy shape that no query, scan or count sees, only Maintenance,
// until gtc migrate has converted it. Its datasetName and id must be strings, and its
// docType, when set, that of an item; anything else is ErrInvalidArgument. The same
// (datasetName, id) may be inserted more than once, and beside an item, as foreign data can
// hold it; DuplicateIDs reports it.
func (s *Store) InsertRaw(ctx context.Context, doc map[string]any) error {
	return s.InsertRawBatch(ctx, []map[string]any{doc})
}

// InsertRawBatch is InsertRaw for many documents in one transaction: all of them are stored
// or none.
func (s *Store) InsertRawBatch(ctx context.Context, docs []map[string]any) error {
	rows := make([]rawRow, len(docs))
	for i, doc := range docs {
		r, err := s.encodeRaw(doc)
		if err != nil {
			return err
		}
		rows[i] = r
	}
	st := &s.stmts
	return s.write(ctx, "insert raw", func(w *wtx) error {
		ins := w.stmt(st.rawInsert)
		for _, r := range rows {
			if _, err := ins.Exec(r.ds, r.id, r.bucket, r.etag, r.doc); err != nil {
				return wrapErr("insert raw", err)
			}
		}
		return nil
	})
}

func (s *Store) encodeRaw(doc map[string]any) (rawRow, error) {
	if doc == nil {
		return rawRow{}, fmt.Errorf("sqlite: insert raw: %w: nil document", gtc.ErrInvalidArgument)
	}
	ds, ok := doc["datasetName"].(string)
	if !ok {
		return rawRow{}, fmt.Errorf("sqlite: insert raw: %w: datasetName must be a string, got %T", gtc.ErrInvalidArgument, doc["datasetName"])
	}
	id, ok := doc["id"].(string)
	if !ok {
		return rawRow{}, fmt.Errorf("sqlite: insert raw: %w: id must be a string, got %T", gtc.ErrInvalidArgument, doc["id"])
	}
	// Curation and other documents are never item documents: they would be scanned,
	// and migrated, as items.
	if dt := doc["docType"]; dt != nil && dt != gtc.DocTypeItem {
		return rawRow{}, fmt.Errorf("sqlite: insert raw %s/%s: %w: docType %v is not an item document", ds, id, gtc.ErrInvalidArgument, dt)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return rawRow{}, fmt.Errorf("sqlite: insert raw %s/%s: %w: %w", ds, id, gtc.ErrInvalidArgument, err)
	}
	bucket, err := bucketText(doc["bucket"])
	if err != nil {
		return rawRow{}, fmt.Errorf("sqlite: insert raw %s/%s: %w: %w", ds, id, gtc.ErrInvalidArgument, err)
	}
	return rawRow{ds: ds, id: id, bucket: bucket, etag: s.newETag(), doc: string(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))}, nil
}

// bucketText is the text RawDoc.BucketString gives for the bucket value v once it has been
// stored and read back, so the key a caller derives from a scanned document is the key the
// row is found by.
func bucketText(v any) (string, error) {
	switch b := v.(type) {
	case nil:
		return "", nil
	case string:
		return b, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var back any
	if err := dec.Decode(&back); err != nil {
		return "", err
	}
	return gtc.RawDoc{PartitionKey: []any{nil, back}}.BucketString(), nil
}

// decodeBody reads a stored document as ScanRaw returns it.
func decodeBody(doc []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var body map[string]any
	if err := dec.Decode(&body); err != nil {
		return nil, err
	}
	if body == nil {
		return nil, errors.New("document is not an object")
	}
	for _, k := range systemKeys {
		delete(body, k)
	}
	return body, nil
}

// A raw scan reads the items first, then the legacy documents, each in primary-key order.
const (
	phaseItems = iota
	phaseRaw
)

// rawScanOrder lies far above the real scan orders, so the pseudo specs of rawScanSpec never
// hash like the spec of an item scan.
const rawScanOrder gtc.ScanOrder = 1 << 20

// rawScanSpec is the pseudo scan spec whose hash a raw-scan cursor carries. The phase is part
// of it, so the cursor needs no field of its own to say which table its position (P, a row
// key) belongs to; and a cursor of another dataset list hashes differently.
func rawScanSpec(datasets []string, phase int) gtc.ScanSpec {
	return gtc.ScanSpec{Order: rawScanOrder + gtc.ScanOrder(phase), DatasetNames: datasets}
}

func rawCursor(datasets []string, phase int, after int64) string {
	c := gtc.NewScanCursor(rawScanSpec(datasets, phase))
	c.P = after
	return c.Encode()
}

func decodeRawCursor(cursor string, datasets []string) (phase int, after int64, err error) {
	for _, phase := range [...]int{phaseItems, phaseRaw} {
		var c gtc.ScanCursor
		c, err = gtc.DecodeScanCursor(cursor, rawScanSpec(datasets, phase))
		if err == nil {
			if c.P < 0 {
				return 0, 0, fmt.Errorf("%w: cursor has no position", gtc.ErrInvalidArgument)
			}
			return phase, c.P, nil
		}
	}
	return 0, 0, err
}

// rawColumns are the columns of a raw read, in the order of scannedRow; a legacy document has
// no derived index fields (version 0).
var rawColumns = map[string]string{
	"items":     "pk, dataset_name, id, bucket, etag, index_v, doc",
	"raw_items": "pk, dataset_name, id, bucket, etag, 0, doc",
}

// rawScanSQL is the page statement of one phase. The dataset condition is written
// +dataset_name so that SQLite walks the primary key, reading each row once per scan,
// instead of collecting a whole dataset through the (dataset_name, id) index and sorting it
// for every page.
func rawScanSQL(table string, filtered bool) string {
	q := "SELECT " + rawColumns[table] + " FROM " + table + " WHERE pk > ?"
	if filtered {
		q += " AND +dataset_name IN (SELECT value FROM json_each(?))"
	}
	return q + " ORDER BY pk LIMIT ?"
}

// scannedRow is one row of a raw scan, not yet decoded.
type scannedRow struct {
	pk                   int64
	ds, id, bucket, etag string
	indexV               int
	doc                  []byte
}

// ScanRaw returns the next page of the item documents of datasets (every dataset when
// empty): the items, then the legacy documents. Each page is one or two short statements,
// never a long read transaction.
func (m *maintenance) ScanRaw(ctx context.Context, datasets []string, cursor string, limit int) (gtc.RawPage, error) {
	s := m.s
	if s.closed.Load() {
		return gtc.RawPage{}, errClosed("scan raw")
	}
	if limit < 1 || limit > gtc.MaxQueryLimit {
		return gtc.RawPage{}, fmt.Errorf("sqlite: scan raw: %w: limit %d is not within 1–%d", gtc.ErrInvalidArgument, limit, gtc.MaxQueryLimit)
	}
	phase, after := phaseItems, int64(0)
	if cursor != "" {
		var err error
		if phase, after, err = decodeRawCursor(cursor, datasets); err != nil {
			return gtc.RawPage{}, fmt.Errorf("sqlite: scan raw: %w", err)
		}
	}
	var filter []any
	if len(datasets) > 0 {
		names, err := json.Marshal(datasets)
		if err != nil {
			return gtc.RawPage{}, fmt.Errorf("sqlite: scan raw: %w: %w", gtc.ErrInvalidArgument, err)
		}
		filter = []any{string(names)}
	}

	var page gtc.RawPage
	if phase == phaseItems {
		rows, err := s.scanRows(ctx, "items", filter, after, limit+1)
		if err != nil {
			return gtc.RawPage{}, err
		}
		if len(rows) > limit {
			rows = rows[:limit]
			page.Next = rawCursor(datasets, phaseItems, rows[limit-1].pk)
		}
		if page.Docs, err = rawDocs(rows, true, limit); err != nil {
			return gtc.RawPage{}, err
		}
		if page.Next != "" {
			return page, nil
		}
		phase, after = phaseRaw, 0
	}
	// The rest of the page comes from the legacy documents; one row more tells whether the
	// scan goes on, even when the items filled the page exactly.
	room := limit - len(page.Docs)
	rows, err := s.scanRows(ctx, "raw_items", filter, after, room+1)
	if err != nil {
		return gtc.RawPage{}, err
	}
	if len(rows) > room {
		rows = rows[:room]
		if room > 0 {
			after = rows[room-1].pk
		}
		page.Next = rawCursor(datasets, phaseRaw, after)
	}
	docs, err := rawDocs(rows, false, 0)
	if err != nil {
		return gtc.RawPage{}, err
	}
	page.Docs = append(page.Docs, docs...)
	return page, nil
}

// scanRows reads up to n rows of table after the row key after.
func (s *Store) scanRows(ctx context.Context, table string, filter []any, after int64, n int) ([]scannedRow, error) {
	st, cached, err := s.readStmt(ctx, rawScanSQL(table, filter != nil))
	if err != nil {
		return nil, wrapErr("scan raw", err)
	}
	if !cached {
		defer st.Close()
	}
	args := make([]any, 0, 3)
	args = append(args, after)
	args = append(args, filter...)
	args = append(args, n)
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return nil, wrapErr("scan raw", err)
	}
	out := make([]scannedRow, 0, n)
	for rows.Next() {
		var r scannedRow
		if err := rows.Scan(&r.pk, &r.ds, &r.id, &r.bucket, &r.etag, &r.indexV, &r.doc); err != nil {
			_ = rows.Close()
			return nil, wrapErr("scan raw", err)
		}
		out = append(out, r)
	}
	if err := rows.Close(); err != nil {
		return nil, wrapErr("scan raw", err)
	}
	if err := rows.Err(); err != nil {
		return nil, wrapErr("scan raw", err)
	}
	return out, nil
}

// rawDocs decodes scanned rows. An item's key comes from its columns; a legacy document's
// partition key values are the ones in its body, as stored (a number stays a json.Number,
// an absent bucket is nil).
func rawDocs(rows []scannedRow, items bool, capacity int) ([]gtc.RawDoc, error) {
	out := make([]gtc.RawDoc, 0, max(capacity, len(rows)))
	for _, r := range rows {
		d, err := r.rawDoc(items)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

func (r scannedRow) rawDoc(item bool) (gtc.RawDoc, error) {
	body, err := decodeBody(r.doc)
	if err != nil {
		return gtc.RawDoc{}, fmt.Errorf("sqlite: stored document %s/%s/%s unreadable: %w: %w", r.ds, r.bucket, r.id, gtc.ErrUnavailable, err)
	}
	pk := []any{r.ds, r.bucket}
	if !item {
		pk = []any{body["datasetName"], body["bucket"]}
	}
	return gtc.RawDoc{PartitionKey: pk, ID: r.id, ETag: r.etag, Body: body, IndexVersion: r.indexV}, nil
}

// GetRaw reads the document with these partition key values and id, as ScanRaw returns it:
// the item if it has that bucket, else a legacy document stored with that bucket value (the
// first inserted, should foreign data hold several). Every key is addressable here, so the
// answer is never ErrUnaddressable.
func (m *maintenance) GetRaw(ctx context.Context, partitionKey []any, id string) (gtc.RawDoc, error) {
	const op = "get raw"
	s := m.s
	if s.closed.Load() {
		return gtc.RawDoc{}, errClosed(op)
	}
	if len(partitionKey) != 2 {
		return gtc.RawDoc{}, fmt.Errorf("sqlite: %s: %w: a partition key is a dataset name and a bucket, got %d values", op, gtc.ErrInvalidArgument, len(partitionKey))
	}
	name, ok := partitionKey[0].(string)
	if !ok {
		return gtc.RawDoc{}, fmt.Errorf("sqlite: %s: %w: dataset name %v is not a string", op, gtc.ErrInvalidArgument, partitionKey[0])
	}
	bucket, err := bucketText(partitionKey[1])
	if err != nil {
		return gtc.RawDoc{}, fmt.Errorf("sqlite: %s: %w: %w", op, gtc.ErrInvalidArgument, err)
	}
	for _, table := range [...]string{"items", "raw_items"} {
		st, cached, err := s.readStmt(ctx, "SELECT "+rawColumns[table]+" FROM "+table+
			" WHERE dataset_name = ? AND id = ? AND bucket = ? ORDER BY pk LIMIT 1")
		if err != nil {
			return gtc.RawDoc{}, wrapErr(op, err)
		}
		var r scannedRow
		err = st.QueryRowContext(ctx, name, id, bucket).Scan(&r.pk, &r.ds, &r.id, &r.bucket, &r.etag, &r.indexV, &r.doc)
		if !cached {
			_ = st.Close()
		}
		if err == nil {
			return r.rawDoc(table == "items")
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return gtc.RawDoc{}, wrapErr(op, err)
		}
	}
	return gtc.RawDoc{}, fmt.Errorf("sqlite: %s %s/%s/%s: %w", op, name, bucket, id, gtc.ErrNotFound)
}

// CountRaw counts the items and legacy documents of datasets (every dataset when empty).
func (m *maintenance) CountRaw(ctx context.Context, datasets []string) (int, error) {
	s := m.s
	if s.closed.Load() {
		return 0, errClosed("count raw")
	}
	q := `SELECT (SELECT count(*) FROM items) + (SELECT count(*) FROM raw_items)`
	var args []any
	if len(datasets) > 0 {
		names, err := json.Marshal(datasets)
		if err != nil {
			return 0, fmt.Errorf("sqlite: count raw: %w: %w", gtc.ErrInvalidArgument, err)
		}
		q = `SELECT (SELECT count(*) FROM items WHERE dataset_name IN (SELECT value FROM json_each(?))) +
  (SELECT count(*) FROM raw_items WHERE dataset_name IN (SELECT value FROM json_each(?)))`
		args = []any{string(names), string(names)}
	}
	st, cached, err := s.readStmt(ctx, q)
	if err != nil {
		return 0, wrapErr("count raw", err)
	}
	if !cached {
		defer st.Close()
	}
	var n int
	if err := st.QueryRowContext(ctx, args...).Scan(&n); err != nil {
		return 0, wrapErr("count raw", err)
	}
	return n, nil
}

// prepareBody reads body as a stored item document and prepares it like an item of Create
// or Replace: canonical bucket, size limit, derived columns. Keys that are not part of the
// stored form are ignored, as on every read. The write records a revision of source migrate
// (unless ctx says otherwise): the change from prev, or, when prev is a legacy document, the
// item's first revision.
func (s *Store) prepareBody(ctx context.Context, op string, prev gtc.RawDoc, body map[string]any) (*preparedItem, error) {
	if body == nil {
		return nil, fmt.Errorf("sqlite: %s: %w: nil body", op, gtc.ErrInvalidArgument)
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w: %w", op, gtc.ErrInvalidArgument, err)
	}
	it, err := codec.DecodeStoredItem(raw)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w: body is not a stored item document: %w", op, gtc.ErrInvalidArgument, err)
	}
	return s.prepareItem(gtc.WithDefaultChange(ctx, gtc.SourceMigrate), op, codec.RawPrevious(prev), it)
}

// storedRawDoc is what ReplaceRaw and MoveRaw return: p as it is now stored.
func storedRawDoc(p *preparedItem) (gtc.RawDoc, error) {
	k := p.stored.Key()
	return scannedRow{ds: k.DatasetName, id: k.ID, bucket: k.Bucket, etag: p.stored.ETag, indexV: p.fields.V, doc: []byte(p.doc)}.rawDoc(true)
}

// rawKey is the key prev was read at.
func rawKey(prev gtc.RawDoc) gtc.Key {
	return gtc.Key{DatasetName: prev.DatasetName(), Bucket: prev.BucketString(), ID: prev.ID}
}

// ReplaceRaw writes body over prev if prev still has its ETag. A legacy document becomes an
// item (it leaves raw_items); an item is updated in place. The key may not change.
func (m *maintenance) ReplaceRaw(ctx context.Context, prev gtc.RawDoc, body map[string]any) (gtc.RawDoc, error) {
	const op = "replace raw"
	s := m.s
	p, err := s.prepareBody(ctx, op, prev, body)
	if err != nil {
		return gtc.RawDoc{}, err
	}
	k := p.stored.Key()
	if old := rawKey(prev); k != old {
		return gtc.RawDoc{}, fmt.Errorf("sqlite: %s: %w: key %s differs from %s", op, gtc.ErrInvalidArgument, k, old)
	}
	st := &s.stmts
	err = s.write(ctx, op, func(w *wtx) error {
		taken, err := takeRaw(w, st, op, k, prev.ETag)
		if err != nil {
			return err
		}
		if taken {
			// An item of the same (datasetName, id) fails the insert, which rolls the
			// delete back with it.
			return insertItemAs(w, st, p, op, 0)
		}
		var cur storedColumns
		err = cur.scan(w.stmt(st.currentOf).QueryRow(k.DatasetName, k.ID))
		if errors.Is(err, sql.ErrNoRows) || (err == nil && (cur.bucket != k.Bucket || cur.etag != prev.ETag)) {
			return notWritten(w, st, op, k)
		}
		if err != nil {
			return wrapErr(op, err)
		}
		// prev's body need not be the stored one (a caller builds RawDocs), so the tag rows
		// are read, not derived from it as Replace does.
		oldTags, err := tagsOf(w, st, op, cur.pk)
		if err != nil {
			return err
		}
		head, err := planRevisions(w, st, p, op, cur.revHead.Int64)
		if err != nil {
			return err
		}
		mask := p.changes(cur)
		res, err := w.stmt(st.update[mask]).Exec(p.updateArgs(mask, k, prev.ETag, head)...)
		if err != nil {
			return wrapErr(op, err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return wrapErr(op, err)
		} else if n == 0 {
			return notWritten(w, st, op, k)
		}
		var tags tagChanges
		if err := syncTags(w, st, cur.pk, oldTags, cur.status, p, &tags); err != nil {
			return err
		}
		if err := tags.flush(w, st); err != nil {
			return err
		}
		return insertRevisionRows(w, st, p, op)
	})
	if err != nil {
		return gtc.RawDoc{}, err
	}
	return storedRawDoc(p)
}

// MoveRaw stores body at its own key and deletes prev, in one transaction. An item already
// at (datasetName, id) that equals body is a move finished before: prev is deleted if it
// is still there with its ETag, and the item is returned as it is.
func (m *maintenance) MoveRaw(ctx context.Context, prev gtc.RawDoc, body map[string]any) (gtc.RawDoc, error) {
	const op = "move raw"
	s := m.s
	p, err := s.prepareBody(ctx, op, prev, body)
	if err != nil {
		return gtc.RawDoc{}, err
	}
	k, old := p.stored.Key(), rawKey(prev)
	if k.DatasetName != old.DatasetName || k.ID != old.ID {
		return gtc.RawDoc{}, fmt.Errorf("sqlite: %s: %w: %s and %s are not the same item", op, gtc.ErrInvalidArgument, k, old)
	}
	if k.Bucket == old.Bucket {
		return gtc.RawDoc{}, fmt.Errorf("sqlite: %s: %w: %s does not change the bucket", op, gtc.ErrInvalidArgument, k)
	}
	st := &s.stmts
	var existing *scannedRow
	err = s.write(ctx, op, func(w *wtx) error {
		existing = nil
		var pk int64
		var bucket, etag string
		var indexV int
		var doc []byte
		var head sql.NullInt64
		err := w.stmt(st.itemRow).QueryRow(k.DatasetName, k.ID).Scan(&pk, &bucket, &etag, &indexV, &doc, &head)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return wrapErr(op, err)
		}
		held := err == nil
		if held && bucket != old.Bucket {
			// The item already exists apart from prev: the create half of the move is
			// refused, unless it is this very move, done before.
			ex := gtc.Key{DatasetName: k.DatasetName, Bucket: bucket, ID: k.ID}
			if !sameDocument(doc, p.doc) {
				return fmt.Errorf("sqlite: %s %s: %w", op, old, &gtc.ConflictError{Existing: ex})
			}
			taken, err := takeRaw(w, st, op, old, prev.ETag)
			if err != nil {
				return err
			}
			if !taken {
				if err := notWritten(w, st, op, old); errors.Is(err, gtc.ErrPreconditionFailed) {
					return &gtc.MoveIncompleteError{Old: old, New: ex}
				} else if !errors.Is(err, gtc.ErrNotFound) {
					return err
				}
			}
			existing = &scannedRow{ds: ex.DatasetName, id: ex.ID, bucket: ex.Bucket, etag: etag, indexV: indexV, doc: doc}
			return nil
		}
		taken, err := takeRaw(w, st, op, old, prev.ETag)
		if err != nil {
			return err
		}
		var moved int64 // the newest revision of the item the move replaces
		if !taken {
			if !held || etag != prev.ETag {
				return notWritten(w, st, op, old)
			}
			// prev is the item itself, at its old bucket; its revisions stay its own.
			if _, err := w.stmt(st.deleteItem).Exec(pk); err != nil {
				return wrapErr(op, err)
			}
			moved = head.Int64
		}
		return insertItemAs(w, st, p, op, moved)
	})
	if err != nil {
		return gtc.RawDoc{}, err
	}
	if existing != nil {
		return existing.rawDoc(true)
	}
	return storedRawDoc(p)
}

// sameDocument reports whether two stored documents are the same JSON value; the bytes of
// one written by another build of gtc may differ where the values do not.
func sameDocument(a []byte, b string) bool {
	if string(a) == b {
		return true
	}
	da, err := decodeBody(a)
	if err != nil {
		return false
	}
	db, err := decodeBody([]byte(b))
	return err == nil && reflect.DeepEqual(da, db)
}

// takeRaw deletes the legacy document at k if its ETag is etag and reports whether it did.
func takeRaw(w *wtx, st *statements, op string, k gtc.Key, etag string) (bool, error) {
	res, err := w.stmt(st.rawTake).Exec(k.DatasetName, k.ID, k.Bucket, etag)
	if err != nil {
		return false, wrapErr(op, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, wrapErr(op, err)
	}
	return n > 0, nil
}

// notWritten explains, inside the transaction whose conditional write on k matched nothing,
// why: a document still at k has another ETag (ErrPreconditionFailed), or there is none
// (ErrNotFound).
func notWritten(w *wtx, st *statements, op string, k gtc.Key) error {
	var held bool
	if err := w.stmt(st.rawHeld).QueryRow(k.DatasetName, k.ID, k.Bucket).Scan(&held); err != nil {
		return wrapErr(op, err)
	}
	if !held {
		var bucket string
		err := w.stmt(st.keyOf).QueryRow(k.DatasetName, k.ID).Scan(&bucket)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return wrapErr(op, err)
		}
		held = err == nil && bucket == k.Bucket
	}
	if held {
		return fmt.Errorf("sqlite: %s %s: %w", op, k, gtc.ErrPreconditionFailed)
	}
	return fmt.Errorf("sqlite: %s %s: %w", op, k, gtc.ErrNotFound)
}

// tagsOf reads the tags the item_tags rows of an item hold.
func tagsOf(w *wtx, st *statements, op string, pk int64) ([]string, error) {
	rows, err := w.stmt(st.tagsOf).Query(pk)
	if err != nil {
		return nil, wrapErr(op, err)
	}
	var tags []string
	for rows.Next() {
		var tag string
		if err := rows.Scan(&tag); err != nil {
			_ = rows.Close()
			return nil, wrapErr(op, err)
		}
		tags = append(tags, tag)
	}
	if err := rows.Close(); err != nil {
		return nil, wrapErr(op, err)
	}
	if err := rows.Err(); err != nil {
		return nil, wrapErr(op, err)
	}
	return tags, nil
}

// EnsureRegistered does nothing: SQLite has no registry of buckets.
func (m *maintenance) EnsureRegistered(context.Context, gtc.Key) error { return nil }

// duplicatesSQL lists every key of each (datasetName, id) held more than once. The items
// table cannot hold one twice, so every such pair has a legacy document.
const duplicatesSQL = `
WITH dup(ds, id) AS (
  SELECT r.dataset_name, r.id FROM raw_items r%s
  GROUP BY r.dataset_name, r.id
  HAVING count(*) > 1 OR EXISTS (SELECT 1 FROM items i WHERE i.dataset_name = r.dataset_name AND i.id = r.id)
)
SELECT d.ds, d.id, i.bucket FROM dup d JOIN items i ON i.dataset_name = d.ds AND i.id = d.id
UNION ALL
SELECT d.ds, d.id, r.bucket FROM dup d JOIN raw_items r ON r.dataset_name = d.ds AND r.id = d.id
ORDER BY 1, 2, 3`

// DuplicateIDs yields the keys of every (datasetName, id) of datasets (every dataset when
// empty) that an item and a legacy document, or several legacy documents, share: sorted by
// dataset and id, each list by bucket. They are read before the first is yielded, so the
// caller may use the store while it iterates.
func (m *maintenance) DuplicateIDs(ctx context.Context, datasets []string) iter.Seq2[[]gtc.Key, error] {
	return func(yield func([]gtc.Key, error) bool) {
		groups, err := m.duplicates(ctx, datasets)
		if err != nil {
			yield(nil, err)
			return
		}
		for _, g := range groups {
			if !yield(g, nil) {
				return
			}
		}
	}
}

func (m *maintenance) duplicates(ctx context.Context, datasets []string) ([][]gtc.Key, error) {
	s := m.s
	if s.closed.Load() {
		return nil, errClosed("duplicate ids")
	}
	q := fmt.Sprintf(duplicatesSQL, "")
	var args []any
	if len(datasets) > 0 {
		names, err := json.Marshal(datasets)
		if err != nil {
			return nil, fmt.Errorf("sqlite: duplicate ids: %w: %w", gtc.ErrInvalidArgument, err)
		}
		q = fmt.Sprintf(duplicatesSQL, " WHERE r.dataset_name IN (SELECT value FROM json_each(?))")
		args = []any{string(names)}
	}
	rows, err := s.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, wrapErr("duplicate ids", err)
	}
	defer rows.Close()
	var groups [][]gtc.Key
	for rows.Next() {
		var k gtc.Key
		if err := rows.Scan(&k.DatasetName, &k.ID, &k.Bucket); err != nil {
			return nil, wrapErr("duplicate ids", err)
		}
		if n := len(groups); n > 0 && groups[n-1][0].DatasetName == k.DatasetName && groups[n-1][0].ID == k.ID {
			groups[n-1] = append(groups[n-1], k)
		} else {
			groups = append(groups, []gtc.Key{k})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, wrapErr("duplicate ids", err)
	}
	return groups, nil
}

// WriteMigrationMarker records in the meta table that every item is in the current storage
// format, when, and by whom.
func (m *maintenance) WriteMigrationMarker(ctx context.Context, by string) error {
	s := m.s
	v, err := json.Marshal(migrationMarker{
		IndexVersion: gtc.IndexVersion,
		MigratedAt:   gtc.FormatStoredTime(s.clock.Now()),
		MigratedBy:   by,
	})
	if err != nil {
		return fmt.Errorf("sqlite: write migration marker: %w: %w", gtc.ErrInvalidArgument, err)
	}
	st := &s.stmts
	return s.write(ctx, "write migration marker", func(w *wtx) error {
		_, err := w.stmt(st.markerPut).Exec(string(v))
		return wrapErr("write migration marker", err)
	})
}

// pendingSQL counts what gtc migrate would still change. The bound is written into the text,
// not bound, so that the planner can prove the partial index items_index_behind covers it.
var pendingSQL = `SELECT (SELECT count(*) FROM raw_items) +
  (SELECT count(*) FROM items WHERE index_v < ` + strconv.Itoa(gtc.IndexVersion) + `)`

// Status reports what gtc migrate would still change: every legacy document and every item
// whose derived columns are older than gtc.IndexVersion. SQLite has no registry, so it is
// always complete.
func (s *Store) Status(ctx context.Context) (gtc.StoreStatus, error) {
	if s.closed.Load() {
		return gtc.StoreStatus{}, errClosed("status")
	}
	out := gtc.StoreStatus{Backend: s.Backend(), RegistryComplete: true}
	if err := s.stmts.pending.QueryRowContext(ctx).Scan(&out.Pending); err != nil {
		return gtc.StoreStatus{}, wrapErr("status", err)
	}
	out.IndexComplete = out.Pending == 0
	var v string
	err := s.stmts.markerGet.QueryRowContext(ctx).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return out, nil
	}
	if err != nil {
		return gtc.StoreStatus{}, wrapErr("status", err)
	}
	var mk migrationMarker
	if err := json.Unmarshal([]byte(v), &mk); err != nil {
		return gtc.StoreStatus{}, fmt.Errorf("sqlite: status: migration marker unreadable: %w: %w", gtc.ErrUnavailable, err)
	}
	at, err := time.Parse(time.RFC3339Nano, mk.MigratedAt)
	if err != nil {
		return gtc.StoreStatus{}, fmt.Errorf("sqlite: status: migration marker unreadable: %w: %w", gtc.ErrUnavailable, err)
	}
	out.MigratedAt = &at
	return out, nil
}
