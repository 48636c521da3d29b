package cosmos

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	gtc "github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/codec"
)

// Revisions. Every revision of an item is a document of its own in the items container, in
// the item's logical partition (its datasetName and bucket), and the store writes it in the
// same transactional batch as the item write it records: both land or neither does.
//
// A revision document is
//
//	{"id": <item id>⁣<number>, "docType": "ground-truth-revision", "datasetName", "bucket",
//	 "itemId", "number", "gtcRevision": <the revision's stored JSON (codec.AppendRevision), as a string>}
//
// Its id is the item id, U+2063 INVISIBLE SEPARATOR and the revision number in decimal. U+2063
// is an invisible format character (Unicode Cf), which no item id may contain
// (gtc.CheckItemID), so no revision id is ever an item id. When that id would be longer than
// the 1,023 bytes Cosmos DB allows, the item id is replaced by U+2063 and the hex SHA-256 of
// the item id. The revision is kept as a string because Cosmos DB keeps numbers as doubles:
// a value inside an operation must read back byte for byte, or the operations would not
// rebuild the item's versions. Its docType keeps it out of every item query, scan, count and
// gtc migrate's raw access, which all select docType ground-truth-item (or none).
//
// The item's ETag is assigned by Cosmos DB during the write, so a revision is stored without
// its etagAfter; reads fill it in: the etagBefore of the next revision, or the item's current
// ETag for the latest one.

// docTypeRevision is the docType of revision documents.
const docTypeRevision = "ground-truth-revision"

// revisionSep separates the item id from the number in a revision document's id.
const revisionSep = "\u2063"

// maxDocIDBytes is the longest document id Cosmos DB accepts.
const maxDocIDBytes = 1023

// revisionDocID is the id of revision n of the item itemID.
func revisionDocID(itemID string, n int64) string {
	num := strconv.FormatInt(n, 10)
	if id := itemID + revisionSep + num; len(id) <= maxDocIDBytes {
		return id
	}
	return revisionSep + digest(itemID) + revisionSep + num
}

// revisionDoc is a revision document.
type revisionDoc struct {
	ID          string `json:"id"`
	DocType     string `json:"docType"`
	DatasetName string `json:"datasetName"`
	Bucket      string `json:"bucket"`
	ItemID      string `json:"itemId"`
	Number      int64  `json:"number"`
	Revision    string `json:"gtcRevision"`
}

// revisionDocument encodes the revision r of the item at k, without its etagAfter.
func revisionDocument(k gtc.Key, r *gtc.Revision) ([]byte, error) {
	stored := *r
	stored.ETagAfter = ""
	rev, err := codec.AppendRevision(nil, &stored)
	if err != nil {
		return nil, fmt.Errorf("%w: revision %d of %s does not encode: %w", gtc.ErrInvalidArgument, r.Number, k, err)
	}
	return json.Marshal(revisionDoc{ID: revisionDocID(k.ID, r.Number), DocType: docTypeRevision, DatasetName: k.DatasetName,
		Bucket: k.Bucket, ItemID: k.ID, Number: r.Number, Revision: string(rev)})
}

// decodeRevisionDoc reads a revision document (or the projection of its number and revision).
func decodeRevisionDoc(b []byte) (*gtc.Revision, error) {
	var d revisionDoc
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("%w: stored revision unreadable: %w", gtc.ErrUnavailable, err)
	}
	r, err := codec.DecodeRevision([]byte(d.Revision))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", gtc.ErrUnavailable, err)
	}
	return r, nil
}

// batchError is an atomic batch that was not committed: the operation at index failed with
// status (every other one answered 424 Failed Dependency). Index 0 is the item's write.
type batchError struct {
	index  int
	status int
}

func (e *batchError) Error() string {
	what := "the item write"
	if e.index > 0 {
		what = "revision write " + strconv.Itoa(e.index)
	}
	return fmt.Sprintf("transactional batch not committed: %s failed with status %d", what, e.status)
}

// writeBatch writes p's document at k (ifMatch == "": create-only; else a replace conditional
// on ifMatch) and creates or overwrites the revision documents revs, in one transactional
// batch. It returns the item's new ETag, "" when the answer has none. A batch that was not
// committed is a *batchError.
func (is *itemStore) writeBatch(ctx context.Context, k gtc.Key, p *preparedItem, ifMatch string, revs *revWrites) (string, error) {
	b := is.s.gt.NewTransactionalBatch(itemKey(k.DatasetName, k.Bucket))
	if ifMatch == "" {
		b.CreateItem(p.doc, nil)
	} else {
		b.ReplaceItem(k.ID, p.doc, &azcosmos.TransactionalBatchItemOptions{IfMatchETag: etagPtr(ifMatch)})
	}
	// Upserts, not creates: a revision document left behind by an interrupted dataset
	// deletion (whose items are gone) is overwritten by the item created again in its place.
	for _, r := range revs.docs {
		b.UpsertItem(r, nil)
	}
	for _, id := range revs.deletes {
		b.DeleteItem(id, nil)
	}
	resp, err := is.s.gt.ExecuteTransactionalBatch(ctx, b, nil)
	if err != nil {
		return "", err
	}
	if !resp.Success {
		for i, r := range resp.OperationResults {
			if r.StatusCode != http.StatusFailedDependency {
				return "", &batchError{index: i, status: int(r.StatusCode)}
			}
		}
		return "", &batchError{index: -1, status: resp.RawResponse.StatusCode}
	}
	if len(resp.OperationResults) == 0 {
		return "", nil
	}
	return string(resp.OperationResults[0].ETag), nil
}

// revisionStore implements gtc.RevisionStore.
type revisionStore struct {
	s *Store
}

var _ gtc.RevisionStore = (*revisionStore)(nil)

// Revisions returns the store of item revisions.
func (s *Store) Revisions() gtc.RevisionStore { return &revisionStore{s: s} }

// item reads the item (datasetName, id): a point read in the bucket its id maps to, else
// wherever Locate finds it. nil when there is none.
func (rs *revisionStore) item(ctx context.Context, ds, id string) (*gtc.Item, error) {
	it, err := rs.s.items.Get(ctx, gtc.Key{DatasetName: ds, Bucket: gtc.DeriveBucket(ds, id), ID: id})
	if !errors.Is(err, gtc.ErrNotFound) {
		return it, err
	}
	k, err := rs.s.items.Locate(ctx, ds, id)
	if err == nil {
		it, err = rs.s.items.Get(ctx, k)
	}
	if errors.Is(err, gtc.ErrNotFound) {
		return nil, nil
	}
	return it, err
}

// revisionCursor encodes the number of the last revision of a page.
func revisionCursor(n int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte("rev:" + strconv.FormatInt(n, 10)))
}

func parseRevisionCursor(c string) (int64, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err == nil {
		if s, ok := strings.CutPrefix(string(b), "rev:"); ok {
			if n, perr := strconv.ParseInt(s, 10, 64); perr == nil && n > 0 {
				return n, nil
			}
		}
	}
	return 0, fmt.Errorf("%w: revision cursor %q is not one this store issued", gtc.ErrInvalidArgument, c)
}

// List reads the item, then one page of its revisions, newest first, with one
// single-partition query. The query also returns the revision just above the page, whose
// etagBefore is the etagAfter of the page's first one. Revisions numbered above the item's
// own revision number are not the item's (left behind by an item deleted with its dataset)
// and are never listed.
func (rs *revisionStore) List(ctx context.Context, datasetName, id string, cursor string, limit int) (gtc.RevisionPage, error) {
	const op = "list revisions"
	out := gtc.RevisionPage{Revisions: []*gtc.Revision{}}
	if limit < 1 {
		return out, fmt.Errorf("cosmos: %s: %w: limit %d", op, gtc.ErrInvalidArgument, limit)
	}
	limit = min(limit, gtc.MaxQueryLimit)
	var last int64 // the number of the last revision of the previous page; 0 for the first page
	if cursor != "" {
		n, err := parseRevisionCursor(cursor)
		if err != nil {
			return out, fmt.Errorf("cosmos: %s: %w", op, err)
		}
		last = n
	}
	if rs.s.closed.Load() {
		return out, errClosed(op)
	}
	if datasetName == "" || id == "" {
		return out, nil
	}
	it, err := rs.item(ctx, datasetName, id)
	if err != nil || it == nil || it.Revision < 1 {
		return out, err
	}
	// hi is the number just above the page: the revision whose etagBefore the page's first
	// one needs; for the first page, the item's ETag stands for it.
	hi := it.Revision + 1
	if last > 0 {
		hi = min(last, hi)
	}
	p := partition{Dataset: it.DatasetName, Bucket: it.Bucket}
	b := partitionWhere(p)
	b.add("c.docType = '" + docTypeRevision + "'")
	b.add("c.itemId = " + b.named("@id", id))
	b.add("c.number <= " + b.named("@hi", min(hi, it.Revision)))
	b.named("@n", limit+2)
	q := sqlQuery{text: "SELECT TOP @n c.number, c.gtcRevision FROM c WHERE " + b.where() + " ORDER BY c.number DESC", params: b.params, pk: &p}
	afterNum, after := it.Revision+1, it.ETag
	more := false
	err = rs.s.rows(ctx, rs.s.gt, op, q, func(row []byte) error {
		r, err := decodeRevisionDoc(row)
		if err != nil {
			return fmt.Errorf("cosmos: %s %s/%s: %w", op, datasetName, id, err)
		}
		switch {
		case r.Number >= hi: // above the page: only its etagBefore is needed
		case len(out.Revisions) == limit:
			more = true
			return nil
		default:
			if r.Number+1 == afterNum {
				r.ETagAfter = after
			}
			out.Revisions = append(out.Revisions, r)
		}
		afterNum, after = r.Number, r.ETagBefore
		return nil
	})
	if err != nil {
		return gtc.RevisionPage{}, err
	}
	if more {
		out.Next = revisionCursor(out.Revisions[len(out.Revisions)-1].Number)
	}
	return out, nil
}

// Get reads the item and point-reads revision n, and for any but the latest revision also
// revision n+1, whose etagBefore is n's etagAfter.
func (rs *revisionStore) Get(ctx context.Context, datasetName, id string, n int64) (*gtc.Revision, error) {
	const op = "get revision"
	if rs.s.closed.Load() {
		return nil, errClosed(op)
	}
	notFound := fmt.Errorf("cosmos: %s %s/%s #%d: %w", op, datasetName, id, n, gtc.ErrNotFound)
	if datasetName == "" || id == "" || n < 1 {
		return nil, notFound
	}
	it, err := rs.item(ctx, datasetName, id)
	if err != nil {
		return nil, err
	}
	if it == nil || n > it.Revision {
		return nil, notFound
	}
	k := it.Key()
	read := func(n int64) (*gtc.Revision, error) {
		resp, err := rs.s.gt.ReadItem(ctx, itemKey(k.DatasetName, k.Bucket), revisionDocID(id, n), nil)
		if statusOf(err) == http.StatusNotFound {
			return nil, notFound
		}
		if err != nil {
			return nil, fmt.Errorf("cosmos: %s %s/%s #%d: %w", op, datasetName, id, n, wrapErr(op, err))
		}
		var head struct {
			DocType string `json:"docType"`
			ItemID  string `json:"itemId"`
		}
		if json.Unmarshal(resp.Value, &head) != nil || head.DocType != docTypeRevision || head.ItemID != id {
			return nil, notFound
		}
		r, err := decodeRevisionDoc(resp.Value)
		if err != nil {
			return nil, fmt.Errorf("cosmos: %s %s/%s #%d: %w", op, datasetName, id, n, err)
		}
		return r, nil
	}
	r, err := read(n)
	if err != nil {
		return nil, err
	}
	if n == it.Revision {
		r.ETagAfter = it.ETag
		return r, nil
	}
	next, err := read(n + 1)
	switch {
	case err == nil:
		r.ETagAfter = next.ETagBefore
	case !errors.Is(err, gtc.ErrNotFound):
		return nil, err
	}
	return r, nil
}
