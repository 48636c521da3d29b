package cosmos

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	gtc "github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/storage/internal/parallel"
)

// The agent audit log lives in its own container, partitioned by
// /operationId: one header document per operation (id = the operation id) and its items in
// page documents of at most agentPageSize entries (id "<operation id>:items:<page>", page p
// holding positions [agentPageSize·p, agentPageSize·(p+1))), all in the operation's partition.
// Pages keep an operation of many thousand items far below the 2 MB document limit while
// appending a chunk rewrites one or two documents, not the whole log of the operation.
//
// Every write stamps the document with a fresh write id ("wid"), as item writes do:
// a create answered 409, or a conditional replace answered 412, may be this very write
// applied before a 503 or a reset that the SDK retried, which the stored wid tells apart.

// Document types of the agent-operations container.
const (
	docTypeAgentOp    = "agent-operation"
	docTypeAgentItems = "agent-operation-items"
)

// agentPageSize is the most items one page document holds.
const agentPageSize = 500

// agentHydrateChunk is how many headers one query of List fetches by id.
const agentHydrateChunk = 100

// agentOpStore implements gtc.AgentOperationStore on the agent-operations container.
type agentOpStore struct {
	s *Store
}

var _ gtc.AgentOperationStore = (*agentOpStore)(nil)

// AgentOperations returns the agent audit log.
func (s *Store) AgentOperations() gtc.AgentOperationStore { return &agentOpStore{s: s} }

// agentOpDoc is a header document: the stored form every store shares (gtc.AgentOpRecord,
// whose fixed-width times make string order time order in queries) with the keys of this
// container. The embedded fields serialize in place, so the document keeps its key order.
type agentOpDoc struct {
	ID      string `json:"id"`
	DocType string `json:"docType"`
	gtc.AgentOpRecord
	WID  string `json:"wid"`
	ETag string `json:"_etag,omitempty"`
}

// agentItemsDoc is one page of an operation's items.
type agentItemsDoc struct {
	ID          string            `json:"id"`
	DocType     string            `json:"docType"`
	OperationID string            `json:"operationId"`
	Page        int               `json:"page"`
	Items       []gtc.AgentOpItem `json:"items"`
	WID         string            `json:"wid"`
	ETag        string            `json:"_etag,omitempty"`
}

func agentPageID(id string, page int) string { return id + ":items:" + strconv.Itoa(page) }

// checkOpID refuses ids no header can have.
func checkOpID(op, id string) error { return checkDocID(op, "operation id", id) }

// encodeAgentOp checks o and turns it into its header document.
func encodeAgentOp(op string, o *gtc.AgentOperation) (*agentOpDoc, error) {
	r, err := gtc.NewAgentOpRecord(o)
	if err != nil {
		return nil, fmt.Errorf("cosmos: %s: %w", op, err)
	}
	if err := checkOpID(op, r.OperationID); err != nil {
		return nil, err
	}
	return &agentOpDoc{ID: r.OperationID, DocType: docTypeAgentOp, AgentOpRecord: *r}, nil
}

// operation reads a header document back into its gtc form.
func (d *agentOpDoc) operation() (*gtc.AgentOperation, error) {
	o, err := d.Operation()
	if err != nil {
		return nil, fmt.Errorf("cosmos: %w", err)
	}
	return o, nil
}

// readHeader reads the header of id; ErrNotFound when there is none. It reads by query, so a
// missing header is "no rows" on every server (readByKey).
func (as *agentOpStore) readHeader(ctx context.Context, op, id string) (*agentOpDoc, error) {
	var d agentOpDoc
	found, err := as.s.readByKey(ctx, as.s.agentOps, "operationId", id, id, &d)
	if err != nil {
		return nil, err
	}
	if !found || d.DocType != docTypeAgentOp {
		return nil, fmt.Errorf("cosmos: %s %s: %w", op, id, gtc.ErrNotFound)
	}
	return &d, nil
}

// storedWID reads the write id of document docID in id's partition ("" when it is absent).
func (as *agentOpStore) storedWID(ctx context.Context, id, docID string) (string, error) {
	var head struct {
		WID string `json:"wid"`
	}
	if _, err := as.s.readByKey(ctx, as.s.agentOps, "operationId", id, docID, &head); err != nil {
		return "", err
	}
	return head.WID, nil
}

// write creates body as document docID of id's partition (ifMatch == "") or replaces it if
// its ETag is ifMatch. An ambiguous outcome (no status, or 409/412 that may answer a retry of
// this very write) is resolved by the write id wid; any other failure is returned as the SDK
// reported it, for the caller to map.
func (as *agentOpStore) write(ctx context.Context, id, docID string, body []byte, wid, ifMatch string) error {
	pk := azcosmos.NewPartitionKeyString(id)
	var err error
	if ifMatch == "" {
		_, err = as.s.agentOps.CreateItem(ctx, pk, body, nil)
	} else {
		_, err = as.s.agentOps.ReplaceItem(ctx, pk, docID, body, &azcosmos.ItemOptions{IfMatchEtag: etagPtr(ifMatch)})
	}
	if err == nil {
		return nil
	}
	st := statusOf(err)
	if (st != 0 && st != http.StatusConflict && st != http.StatusPreconditionFailed) || errors.Is(err, context.Canceled) {
		return err
	}
	rctx, cancel := followUpContext(ctx)
	defer cancel()
	got, rerr := as.storedWID(rctx, id, docID)
	if rerr == nil && got == wid {
		return nil
	}
	if st != 0 {
		return err
	}
	return fmt.Errorf("cosmos: write %s: %w: outcome unknown: %w", docID, gtc.ErrUnavailable, err)
}

// Create stores a new header; an existing id is ErrConflict.
func (as *agentOpStore) Create(ctx context.Context, o *gtc.AgentOperation) error {
	const op = "create agent operation"
	d, err := encodeAgentOp(op, o)
	if err != nil {
		return err
	}
	if as.s.closed.Load() {
		return errClosed(op)
	}
	d.WID = as.s.newWID()
	body, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("cosmos: %s %s: %w: %w", op, d.OperationID, gtc.ErrInvalidArgument, err)
	}
	if err := as.write(ctx, d.OperationID, d.ID, body, d.WID, ""); err != nil {
		return fmt.Errorf("cosmos: %s %s: %w", op, d.OperationID, wrapErr(op, err))
	}
	return nil
}

// Get returns a header; an unknown id is ErrNotFound.
func (as *agentOpStore) Get(ctx context.Context, id string) (*gtc.AgentOperation, error) {
	const op = "get agent operation"
	if err := checkOpID(op, id); err != nil {
		return nil, err
	}
	if as.s.closed.Load() {
		return nil, errClosed(op)
	}
	d, err := as.readHeader(ctx, op, id)
	if err != nil {
		return nil, err
	}
	return d.operation()
}

// change applies c to the header of id with the read → conditional write → retry loop, so
// an Update and a SetUndoneBy racing on one header cannot undo each other. A c that changes
// nothing (the same undo again) ends the call successfully without a write.
func (as *agentOpStore) change(ctx context.Context, op, id string, c *gtc.AgentOpChange) error {
	if as.s.closed.Load() {
		return errClosed(op)
	}
	return retryConditional(ctx, op, func() error {
		d, err := as.readHeader(ctx, op, id)
		if err != nil {
			return err
		}
		changed, err := d.Apply(c)
		if err != nil {
			return fmt.Errorf("cosmos: %s %s: %w", op, id, err)
		}
		if !changed {
			return nil
		}
		etag := d.ETag
		d.ETag, d.WID = "", as.s.newWID()
		body, err := json.Marshal(d)
		if err != nil {
			return fmt.Errorf("cosmos: %s %s: %w: %w", op, id, gtc.ErrInvalidArgument, err)
		}
		err = as.write(ctx, id, id, body, d.WID, etag)
		if statusOf(err) == http.StatusNotFound {
			// Deleted since the read: retried, and the next read reports it.
			return errRace
		}
		return wrapErr(op, raced(err))
	})
}

// Update stores o's Status, Counts and FinishedAt; nothing else changes.
func (as *agentOpStore) Update(ctx context.Context, o *gtc.AgentOperation) error {
	const op = "update agent operation"
	c, err := gtc.NewAgentOpUpdate(o)
	if err != nil {
		return fmt.Errorf("cosmos: %s: %w", op, err)
	}
	if err := checkOpID(op, o.OperationID); err != nil {
		return err
	}
	return as.change(ctx, op, o.OperationID, c)
}

// SetUndoneBy records the undo of id, conditional on the header's ETag, so of two undos
// racing exactly one succeeds and the other reads the winner's and gets ErrConflict.
// Recording the same undo again succeeds, so a caller retrying after a lost answer is not
// told its own undo conflicts.
func (as *agentOpStore) SetUndoneBy(ctx context.Context, id, undoID string) error {
	const op = "set undone by"
	if err := checkOpID(op, id); err != nil {
		return err
	}
	c, err := gtc.NewAgentOpUndo(undoID)
	if err != nil {
		return fmt.Errorf("cosmos: %s %s: %w", op, id, err)
	}
	return as.change(ctx, op, id, c)
}

// agentDocHead is what PutItems needs to know of every document of an operation.
type agentDocHead struct {
	DocType string `json:"docType"`
	Page    int    `json:"page"`
	N       int    `json:"n"`
}

// itemsEnd reads, in one query of the operation's partition, whether its header exists and
// how many items it holds (the end of the last page; positions have no gaps).
func (as *agentOpStore) itemsEnd(ctx context.Context, op, id string) (bool, int, error) {
	q := sqlQuery{
		text:   "SELECT c.docType, c.page, ARRAY_LENGTH(c.items) AS n FROM c WHERE c.operationId = @id",
		params: []azcosmos.QueryParameter{{Name: "@id", Value: id}},
	}
	header, end := false, 0
	err := eachRow(ctx, as.s, as.s.agentOps, op, q, func(h agentDocHead) error {
		switch h.DocType {
		case docTypeAgentOp:
			header = true
		case docTypeAgentItems:
			end = max(end, h.Page*agentPageSize+h.N)
		}
		return nil
	})
	return header, end, err
}

// PutItems stores items at positions first, first+1, … by rewriting the one or two pages
// they fall in, each with the read → conditional write → retry loop, lowest page first:
// a failure leaves a prefix of the chunk stored, never a gap. An unknown operation is
// ErrNotFound; a first beyond the stored items would leave a gap and is ErrInvalidArgument.
func (as *agentOpStore) PutItems(ctx context.Context, id string, first int, items []gtc.AgentOpItem) error {
	const op = "put agent operation items"
	if err := checkOpID(op, id); err != nil {
		return err
	}
	if first < 0 {
		return fmt.Errorf("cosmos: %s %s: %w: negative position %d", op, id, gtc.ErrInvalidArgument, first)
	}
	if as.s.closed.Load() {
		return errClosed(op)
	}
	header, end, err := as.itemsEnd(ctx, op, id)
	if err != nil {
		return err
	}
	if !header {
		return fmt.Errorf("cosmos: %s %s: %w", op, id, gtc.ErrNotFound)
	}
	if first > end {
		return fmt.Errorf("cosmos: %s %s: %w: position %d leaves a gap after the %d stored items", op, id, gtc.ErrInvalidArgument, first, end)
	}
	for pos := first; pos < first+len(items); {
		page := pos / agentPageSize
		stop := min(first+len(items), (page+1)*agentPageSize)
		if err := as.putPage(ctx, op, id, page, pos-page*agentPageSize, items[pos-first:stop-first]); err != nil {
			return err
		}
		pos = stop
	}
	return nil
}

// putPage writes chunk into page at offset (within the page), replacing entries already
// there and appending the rest.
func (as *agentOpStore) putPage(ctx context.Context, op, id string, page, offset int, chunk []gtc.AgentOpItem) error {
	docID := agentPageID(id, page)
	return retryConditional(ctx, op, func() error {
		var cur agentItemsDoc
		found, err := as.s.readByKey(ctx, as.s.agentOps, "operationId", id, docID, &cur)
		if err != nil {
			return err
		}
		if offset > len(cur.Items) {
			return fmt.Errorf("cosmos: %s %s: %w: position %d leaves a gap after the %d stored items",
				op, id, gtc.ErrInvalidArgument, page*agentPageSize+offset, page*agentPageSize+len(cur.Items))
		}
		etag := cur.ETag
		doc := agentItemsDoc{ID: docID, DocType: docTypeAgentItems, OperationID: id, Page: page, WID: as.s.newWID()}
		doc.Items = append(cur.Items[:offset:offset], chunk...)
		if tail := offset + len(chunk); tail < len(cur.Items) {
			doc.Items = append(doc.Items, cur.Items[tail:]...)
		}
		body, err := json.Marshal(&doc)
		if err != nil {
			return fmt.Errorf("cosmos: %s %s: %w: %w", op, id, gtc.ErrInvalidArgument, err)
		}
		if !found {
			etag = ""
		}
		err = as.write(ctx, id, docID, body, doc.WID, etag)
		if statusOf(err) == http.StatusNotFound {
			return errRace // the page went between the read and the replace
		}
		return wrapErr(op, raced(err))
	})
}

// Items returns the operation's items in position order, at most limit (≤ 0: all), reading
// only the pages the limit reaches. An unknown operation is ErrNotFound, so a caller can tell
// it from one without items.
func (as *agentOpStore) Items(ctx context.Context, id string, limit int) ([]gtc.AgentOpItem, error) {
	const op = "agent operation items"
	if err := checkOpID(op, id); err != nil {
		return nil, err
	}
	if as.s.closed.Load() {
		return nil, errClosed(op)
	}
	b := &builder{}
	b.add("c.operationId = " + b.named("@id", id))
	pageCond := "c.docType = '" + docTypeAgentItems + "'"
	if limit > 0 {
		pageCond += " AND c.page < " + b.named("@pages", (limit+agentPageSize-1)/agentPageSize)
	}
	b.add("(c.docType = '" + docTypeAgentOp + "' OR (" + pageCond + "))")
	q := sqlQuery{text: "SELECT c.docType, c.page, c.items FROM c WHERE " + b.where(), params: b.params}
	header := false
	var pages []agentItemsDoc
	err := eachRow(ctx, as.s, as.s.agentOps, op, q, func(d agentItemsDoc) error {
		if d.DocType == docTypeAgentOp {
			header = true
		} else {
			pages = append(pages, d)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !header {
		return nil, fmt.Errorf("cosmos: %s %s: %w", op, id, gtc.ErrNotFound)
	}
	slices.SortFunc(pages, func(a, b agentItemsDoc) int { return cmp.Compare(a.Page, b.Page) })
	out := []gtc.AgentOpItem{}
	for _, p := range pages {
		out = append(out, p.Items...)
	}
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// agentOpKey is what List sorts by.
type agentOpKey struct {
	ID        string `json:"id"`
	StartedAt string `json:"startedAt"`
}

// newestFirst orders by startedAt, then id, both descending. The stored times have a fixed
// width, so comparing the strings compares the times.
func newestFirst(a, b agentOpKey) int {
	if c := cmp.Compare(b.StartedAt, a.StartedAt); c != 0 {
		return c
	}
	return cmp.Compare(b.ID, a.ID)
}

// agentHeaderWhere starts the conditions of a cross-partition query of headers.
func agentHeaderWhere() *builder {
	b := &builder{}
	b.add("c.docType = '" + docTypeAgentOp + "'")
	return b
}

// List returns the matching headers newest first and how many match in all. Cross-partition
// ORDER BY is beyond what the gateway serves, so it reads the sort key of every
// match (a small projection, which also gives the exact total), sorts in Go and then fetches
// only the headers of the page.
func (as *agentOpStore) List(ctx context.Context, f gtc.AgentOpFilter) ([]*gtc.AgentOperation, int, error) {
	const op = "list agent operations"
	if f.Limit < 1 || f.Limit > 1000 {
		return nil, 0, fmt.Errorf("cosmos: %s: %w: limit %d is not within 1–1000", op, gtc.ErrInvalidArgument, f.Limit)
	}
	if as.s.closed.Load() {
		return nil, 0, errClosed(op)
	}
	b := agentHeaderWhere()
	if f.Actor != "" {
		b.add("c.actor = " + b.named("@actor", f.Actor))
	}
	if f.Tag != "" {
		b.add("ARRAY_CONTAINS(c.tags, " + b.named("@tag", f.Tag) + ")")
	}
	q := sqlQuery{text: "SELECT c.id, c.startedAt FROM c WHERE " + b.where(), params: b.params}
	keys, err := collectRows[agentOpKey](ctx, as.s, as.s.agentOps, op, q)
	if err != nil {
		return nil, 0, err
	}
	slices.SortFunc(keys, newestFirst)
	total := len(keys)
	keys = keys[:min(len(keys), f.Limit)]
	docs, err := as.headersByID(ctx, op, keys)
	if err != nil {
		return nil, 0, err
	}
	out := make([]*gtc.AgentOperation, 0, len(keys))
	for _, k := range keys {
		d, ok := docs[k.ID]
		if !ok {
			continue // deleted since the projection (retention)
		}
		o, err := d.operation()
		if err != nil {
			return nil, 0, err
		}
		out = append(out, o)
	}
	return out, total, nil
}

// headersByID fetches the headers of keys, agentHydrateChunk ids per query, in parallel.
func (as *agentOpStore) headersByID(ctx context.Context, op string, keys []agentOpKey) (map[string]*agentOpDoc, error) {
	chunks := (len(keys) + agentHydrateChunk - 1) / agentHydrateChunk
	found := make([][]agentOpDoc, chunks)
	err := parallel.ForEach(ctx, chunks, hydrateParallel, func(ctx context.Context, i int) error {
		part := keys[i*agentHydrateChunk : min(len(keys), (i+1)*agentHydrateChunk)]
		ids := make([]string, len(part))
		for j, k := range part {
			ids[j] = k.ID
		}
		b := agentHeaderWhere()
		b.in("c.id", "i", ids)
		docs, err := collectRows[agentOpDoc](ctx, as.s, as.s.agentOps, op, sqlQuery{text: "SELECT * FROM c WHERE " + b.where(), params: b.params})
		found[i] = docs
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make(map[string]*agentOpDoc, len(keys))
	for _, docs := range found {
		for i := range docs {
			out[docs[i].ID] = &docs[i]
		}
	}
	return out, nil
}

// Running returns every header whose status is running, newest first.
func (as *agentOpStore) Running(ctx context.Context) ([]*gtc.AgentOperation, error) {
	const op = "running agent operations"
	if as.s.closed.Load() {
		return nil, errClosed(op)
	}
	b := agentHeaderWhere()
	b.add("c.status = " + b.named("@status", gtc.AgentOpRunning))
	docs, err := collectRows[agentOpDoc](ctx, as.s, as.s.agentOps, op, sqlQuery{text: "SELECT * FROM c WHERE " + b.where(), params: b.params})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(docs, func(a, b agentOpDoc) int {
		return newestFirst(agentOpKey{ID: a.ID, StartedAt: a.StartedAt}, agentOpKey{ID: b.ID, StartedAt: b.StartedAt})
	})
	out := make([]*gtc.AgentOperation, 0, len(docs))
	for i := range docs {
		o, err := docs[i].operation()
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

// DeleteBefore deletes every operation that is not running and started before t, with its
// items, and returns how many it deleted. Each operation loses its pages first and its
// header last, so one interrupted here is still listed and the next run finishes it; none
// leaves pages behind without a header.
func (as *agentOpStore) DeleteBefore(ctx context.Context, t time.Time) (int, error) {
	const op = "delete agent operations"
	bound, err := gtc.AgentOpStartedBefore(t)
	if err != nil {
		return 0, fmt.Errorf("cosmos: %s: %w", op, err)
	}
	if as.s.closed.Load() {
		return 0, errClosed(op)
	}
	b := agentHeaderWhere()
	b.add("c.status != " + b.named("@running", gtc.AgentOpRunning))
	b.add("c.startedAt < " + b.named("@before", bound))
	type idRow struct {
		ID string `json:"id"`
	}
	old, err := collectRows[idRow](ctx, as.s, as.s.agentOps, op, sqlQuery{text: "SELECT c.id FROM c WHERE " + b.where(), params: b.params})
	if err != nil {
		return 0, err
	}
	var deleted atomic.Int64
	err = parallel.ForEach(ctx, len(old), partitionQueryParallel, func(ctx context.Context, i int) error {
		id := old[i].ID
		q := sqlQuery{
			text:   "SELECT c.id FROM c WHERE c.operationId = @id AND c.docType = '" + docTypeAgentItems + "'",
			params: []azcosmos.QueryParameter{{Name: "@id", Value: id}},
		}
		pages, err := collectRows[idRow](ctx, as.s, as.s.agentOps, op, q)
		if err != nil {
			return err
		}
		pk := azcosmos.NewPartitionKeyString(id)
		for _, p := range pages {
			if _, err := as.s.agentOps.DeleteItem(ctx, pk, p.ID, nil); err != nil && statusOf(err) != http.StatusNotFound {
				return wrapErr(op, err)
			}
		}
		_, err = as.s.agentOps.DeleteItem(ctx, pk, id, nil)
		switch {
		case err == nil:
			deleted.Add(1)
		case statusOf(err) == http.StatusNotFound:
			// Another process's retention run got there first.
		default:
			return wrapErr(op, err)
		}
		return nil
	})
	return int(deleted.Load()), err
}
