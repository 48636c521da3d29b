package cosmos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/storage/internal/parallel"
)

// Agent previews live in the meta container. Each preview has a header document, and its
// plan is cut into chunk documents:
//
//   - The headers of all previews share the partition key previewsPK, so the bounds of Put
//     are judged by one query of one partition. A header's id is the SHA-256 in hex of the
//     caller and the arguments' hash: a user id may have any characters, which ids and
//     partition keys travelling in HTTP headers should not.
//   - The chunks of a preview have the partition key "agent-preview:" and the preview's id,
//     and ids "0", "1"…: at most previewChunkBytes of the plan each (base64 in the document),
//     far below the 2 MB a document may have, where the plan of 10,000 changes may not be.
//
// A preview's chunks are written before its header, under the preview's own id, which no
// other preview has; the header is what Get and SetState read, and every write of it is
// conditional on its ETag (or a create). The chunks of a preview replaced or evicted are
// deleted after the header that named them; a chunk that outlives its header (a failed
// delete) is deleted by DeleteExpired once it has expired, as its preview has. A header
// whose chunks are gone reads as no preview.

const (
	previewsPK        = "agent-previews"
	kindPreview       = "agent-preview"
	kindPreviewChunk  = "agent-preview-chunk"
	previewChunkBytes = 384 << 10 // 512 KiB in base64
	// previewParallel is how many chunk documents of one preview are read, written or
	// deleted at once.
	previewParallel = 4
)

// previewDoc is a preview's header.
type previewDoc struct {
	ID          string `json:"id"`
	PK          string `json:"pk"`
	Kind        string `json:"kind"`
	PreviewID   string `json:"previewId"`
	Caller      string `json:"caller"`
	Hash        string `json:"hash"`
	CreatedAt   string `json:"createdAt"`
	ExpiresAt   string `json:"expiresAt"`
	State       string `json:"state"`
	OperationID string `json:"operationId"`
	Changes     int    `json:"changes"`
	// Chunks is how many chunk documents hold the plan, PlanBytes how many bytes they hold.
	Chunks    int    `json:"chunks"`
	PlanBytes int    `json:"planBytes"`
	ETag      string `json:"_etag,omitempty"`
}

// previewChunkDoc is one chunk of a preview's plan; it expires with its preview.
type previewChunkDoc struct {
	ID        string `json:"id"`
	PK        string `json:"pk"`
	Kind      string `json:"kind"`
	ExpiresAt string `json:"expiresAt"`
	Data      []byte `json:"data"`
}

func previewHeaderID(caller, hash string) string { return digest(caller + "\x00" + hash) }

func previewChunkPK(previewID string) string { return "agent-preview:" + previewID }

// previewStore implements gtc.AgentPreviewStore.
type previewStore struct{ s *Store }

var _ gtc.AgentPreviewStore = previewStore{}

// AgentPreviews returns the store's agent previews.
func (s *Store) AgentPreviews() gtc.AgentPreviewStore { return previewStore{s} }

var headersKey = azcosmos.NewPartitionKeyString(previewsPK)

func newPreviewDoc(p gtc.AgentPreview, chunks int) previewDoc {
	return previewDoc{ID: previewHeaderID(p.Caller, p.Hash), PK: previewsPK, Kind: kindPreview, PreviewID: p.ID,
		Caller: p.Caller, Hash: p.Hash, CreatedAt: gtc.FormatStoredTime(p.CreatedAt), ExpiresAt: gtc.FormatStoredTime(p.ExpiresAt),
		State: p.State, OperationID: p.OperationID, Changes: p.Changes, Chunks: chunks, PlanBytes: len(p.Plan)}
}

// preview is the header's preview, without its plan.
func (d previewDoc) preview() (gtc.AgentPreview, error) {
	created, err := time.Parse(gtc.StoredTimeLayout, d.CreatedAt)
	if err != nil {
		return gtc.AgentPreview{}, fmt.Errorf("cosmos: agent preview %s: %w: createdAt %q: %w", d.PreviewID, gtc.ErrUnavailable, d.CreatedAt, err)
	}
	expires, err := time.Parse(gtc.StoredTimeLayout, d.ExpiresAt)
	if err != nil {
		return gtc.AgentPreview{}, fmt.Errorf("cosmos: agent preview %s: %w: expiresAt %q: %w", d.PreviewID, gtc.ErrUnavailable, d.ExpiresAt, err)
	}
	return gtc.AgentPreview{ID: d.PreviewID, Caller: d.Caller, Hash: d.Hash, CreatedAt: created.UTC(), ExpiresAt: expires.UTC(),
		State: d.State, OperationID: d.OperationID, Changes: d.Changes, ETag: d.ETag}, nil
}

// readHeader reads the header of (caller, hash), with its ETag; ErrNotFound when there is
// none.
func (ps previewStore) readHeader(ctx context.Context, caller, hash string) (previewDoc, error) {
	resp, err := ps.s.meta.ReadItem(ctx, headersKey, previewHeaderID(caller, hash), nil)
	if err != nil {
		return previewDoc{}, wrapErr("read agent preview", err)
	}
	var d previewDoc
	if err := json.Unmarshal(resp.Value, &d); err != nil {
		return previewDoc{}, fmt.Errorf("cosmos: read agent preview: %w: %w", gtc.ErrUnavailable, err)
	}
	if d.Caller != caller || d.Hash != hash {
		return previewDoc{}, fmt.Errorf("cosmos: read agent preview: %w: its header names another caller or hash", gtc.ErrUnavailable)
	}
	d.ETag = string(resp.ETag)
	return d, nil
}

func (ps previewStore) Put(ctx context.Context, p gtc.AgentPreview, b gtc.AgentPreviewBounds) (gtc.AgentPreview, error) {
	if err := gtc.CheckAgentPreview(p); err != nil {
		return gtc.AgentPreview{}, fmt.Errorf("cosmos: put agent preview: %w", err)
	}
	const op = "put agent preview"
	if ps.s.closed.Load() {
		return gtc.AgentPreview{}, errClosed(op)
	}
	chunks := splitPlan(p.Plan)
	if err := ps.writeChunks(ctx, p, chunks); err != nil {
		ps.deleteChunks(context.WithoutCancel(ctx), p.ID, len(chunks))
		return gtc.AgentPreview{}, err
	}
	doc := newPreviewDoc(p, len(chunks))
	body, err := json.Marshal(doc)
	if err != nil {
		return gtc.AgentPreview{}, fmt.Errorf("cosmos: %s: %w: %w", op, gtc.ErrInvalidArgument, err)
	}
	out := p
	var replaced *previewDoc
	err = retryConditional(ctx, op, func() error {
		replaced = nil
		cur, err := ps.readHeader(ctx, p.Caller, p.Hash)
		switch {
		case errors.Is(err, gtc.ErrNotFound):
			resp, err := ps.s.meta.CreateItem(ctx, headersKey, body, nil)
			if err != nil {
				return wrapErr(op, raced(err))
			}
			out.ETag = string(resp.ETag)
			return nil
		case err != nil:
			return err
		}
		resp, err := ps.s.meta.ReplaceItem(ctx, headersKey, doc.ID, body, &azcosmos.ItemOptions{IfMatchEtag: etagPtr(cur.ETag)})
		if statusOf(err) == http.StatusNotFound {
			return errRace // deleted meanwhile: create it
		}
		if err != nil {
			return wrapErr(op, raced(err))
		}
		out.ETag = string(resp.ETag)
		replaced = &cur
		return nil
	})
	if err != nil {
		ps.deleteChunks(context.WithoutCancel(ctx), p.ID, len(chunks))
		return gtc.AgentPreview{}, err
	}
	if replaced != nil && replaced.PreviewID != p.ID {
		ps.deleteChunks(ctx, replaced.PreviewID, replaced.Chunks)
	}
	if err := ps.evict(ctx, out, b); err != nil {
		return gtc.AgentPreview{}, err
	}
	return out, nil
}

// splitPlan cuts plan into chunks of at most previewChunkBytes; an empty plan is one empty
// chunk, so that every preview has one.
func splitPlan(plan []byte) [][]byte {
	var out [][]byte
	for len(plan) > previewChunkBytes {
		out = append(out, plan[:previewChunkBytes])
		plan = plan[previewChunkBytes:]
	}
	return append(out, plan)
}

// writeChunks writes the chunk documents of p. They are under p's own partition, which no
// other preview writes, so an upsert (which a retried request repeats harmlessly) cannot
// race.
func (ps previewStore) writeChunks(ctx context.Context, p gtc.AgentPreview, chunks [][]byte) error {
	pk := previewChunkPK(p.ID)
	key := azcosmos.NewPartitionKeyString(pk)
	expires := gtc.FormatStoredTime(p.ExpiresAt)
	return parallel.ForEach(ctx, len(chunks), previewParallel, func(ctx context.Context, i int) error {
		body, err := json.Marshal(previewChunkDoc{ID: strconv.Itoa(i), PK: pk, Kind: kindPreviewChunk, ExpiresAt: expires, Data: chunks[i]})
		if err != nil {
			return fmt.Errorf("cosmos: write agent preview: %w: %w", gtc.ErrInvalidArgument, err)
		}
		_, err = ps.s.meta.UpsertItem(ctx, key, body, nil)
		return wrapErr("write agent preview "+p.ID+" chunk "+strconv.Itoa(i), err)
	})
}

// deleteChunks deletes the n chunk documents of a preview no header names any more, as far
// as it can: what is left expires and DeleteExpired deletes it.
func (ps previewStore) deleteChunks(ctx context.Context, previewID string, n int) {
	key := azcosmos.NewPartitionKeyString(previewChunkPK(previewID))
	_ = parallel.ForEach(ctx, n, previewParallel, func(ctx context.Context, i int) error {
		_, _ = ps.s.meta.DeleteItem(ctx, key, strconv.Itoa(i), nil)
		return nil
	})
}

// headerRow is what the bounds and the expiry are judged on.
type headerRow struct {
	ID        string `json:"id"`
	PreviewID string `json:"previewId"`
	Caller    string `json:"caller"`
	Hash      string `json:"hash"`
	CreatedAt string `json:"createdAt"`
	Changes   int    `json:"changes"`
	Chunks    int    `json:"chunks"`
	ETag      string `json:"_etag"`
}

// evict deletes the previews past the bounds b once p has been put. A preview changed or
// deleted meanwhile (its ETag moved on) is left to the next put.
func (ps previewStore) evict(ctx context.Context, p gtc.AgentPreview, b gtc.AgentPreviewBounds) error {
	const op = "evict agent previews"
	if b.PerUser <= 0 && b.Total <= 0 && b.TotalChanges <= 0 {
		return nil
	}
	rows, err := collectRows[headerRow](ctx, ps.s, ps.s.meta, op, sqlQuery{
		text: "SELECT c.id, c.previewId, c.caller, c.hash, c.createdAt, c.changes, c.chunks, c._etag FROM c " +
			"WHERE c.pk = @pk AND c.kind = '" + kindPreview + "'",
		params: []azcosmos.QueryParameter{{Name: "@pk", Value: previewsPK}},
	})
	if err != nil {
		return err
	}
	kept := make([]gtc.AgentPreview, 0, len(rows))
	byKey := make(map[string]headerRow, len(rows))
	for _, r := range rows {
		created, err := time.Parse(gtc.StoredTimeLayout, r.CreatedAt)
		if err != nil {
			return fmt.Errorf("cosmos: %s: %w: createdAt %q: %w", op, gtc.ErrUnavailable, r.CreatedAt, err)
		}
		kept = append(kept, gtc.AgentPreview{ID: r.PreviewID, Caller: r.Caller, Hash: r.Hash, CreatedAt: created, Changes: r.Changes, ETag: r.ETag})
		byKey[r.ID] = r
	}
	for _, q := range b.Evict(kept, p) {
		r := byKey[previewHeaderID(q.Caller, q.Hash)]
		if _, err := ps.deleteHeader(ctx, op, r); err != nil {
			return err
		}
	}
	return nil
}

// deleteHeader deletes the header r while it is at r's ETag, then its chunks; false when it
// changed or went meanwhile.
func (ps previewStore) deleteHeader(ctx context.Context, op string, r headerRow) (bool, error) {
	_, err := ps.s.meta.DeleteItem(ctx, headersKey, r.ID, &azcosmos.ItemOptions{IfMatchEtag: etagPtr(r.ETag)})
	if st := statusOf(err); st == http.StatusNotFound || st == http.StatusPreconditionFailed {
		return false, nil
	}
	if err != nil {
		return false, wrapErr(op, err)
	}
	ps.deleteChunks(ctx, r.PreviewID, r.Chunks)
	return true, nil
}

func (ps previewStore) Get(ctx context.Context, caller, hash string) (gtc.AgentPreview, error) {
	if ps.s.closed.Load() {
		return gtc.AgentPreview{}, errClosed("get agent preview")
	}
	d, err := ps.readHeader(ctx, caller, hash)
	if err != nil {
		return gtc.AgentPreview{}, err
	}
	p, err := d.preview()
	if err != nil {
		return gtc.AgentPreview{}, err
	}
	if p.Plan, err = ps.readPlan(ctx, d); err != nil {
		return gtc.AgentPreview{}, err
	}
	return p, nil
}

// readPlan reads the chunks of d's plan back into one. A chunk that is gone means the
// preview was replaced or evicted since its header was read: ErrNotFound.
func (ps previewStore) readPlan(ctx context.Context, d previewDoc) ([]byte, error) {
	key := azcosmos.NewPartitionKeyString(previewChunkPK(d.PreviewID))
	chunks := make([][]byte, d.Chunks)
	err := parallel.ForEach(ctx, d.Chunks, previewParallel, func(ctx context.Context, i int) error {
		resp, err := ps.s.meta.ReadItem(ctx, key, strconv.Itoa(i), nil)
		if err != nil {
			return wrapErr("read agent preview "+d.PreviewID+" chunk "+strconv.Itoa(i), err)
		}
		var c previewChunkDoc
		if err := json.Unmarshal(resp.Value, &c); err != nil {
			return fmt.Errorf("cosmos: read agent preview %s: %w: %w", d.PreviewID, gtc.ErrUnavailable, err)
		}
		chunks[i] = c.Data
		return nil
	})
	if err != nil {
		return nil, err
	}
	plan := make([]byte, 0, d.PlanBytes)
	for _, c := range chunks {
		plan = append(plan, c...)
	}
	if len(plan) != d.PlanBytes {
		return nil, fmt.Errorf("cosmos: read agent preview %s: %w: its chunks hold %d bytes of %d", d.PreviewID, gtc.ErrNotFound, len(plan), d.PlanBytes)
	}
	return plan, nil
}

func (ps previewStore) SetState(ctx context.Context, p gtc.AgentPreview, state, opID string) (gtc.AgentPreview, error) {
	if err := gtc.CheckAgentPreviewState(state, opID); err != nil {
		return gtc.AgentPreview{}, fmt.Errorf("cosmos: set agent preview state: %w", err)
	}
	const op = "set agent preview state"
	cur, err := ps.readHeader(ctx, p.Caller, p.Hash)
	if err != nil {
		return gtc.AgentPreview{}, err
	}
	if cur.ETag != p.ETag {
		return gtc.AgentPreview{}, fmt.Errorf("cosmos: %s %s: %w", op, p.ID, gtc.ErrPreconditionFailed)
	}
	cur.State, cur.OperationID, cur.ETag = state, opID, ""
	body, err := json.Marshal(cur)
	if err != nil {
		return gtc.AgentPreview{}, fmt.Errorf("cosmos: %s: %w: %w", op, gtc.ErrInvalidArgument, err)
	}
	resp, err := ps.s.meta.ReplaceItem(ctx, headersKey, cur.ID, body, &azcosmos.ItemOptions{IfMatchEtag: etagPtr(p.ETag)})
	if err != nil {
		return gtc.AgentPreview{}, wrapErr(op+" "+p.ID, err)
	}
	out := p
	out.State, out.OperationID, out.ETag = state, opID, string(resp.ETag)
	return out, nil
}

func (ps previewStore) DeleteExpired(ctx context.Context, t time.Time) (int, error) {
	const op = "delete expired agent previews"
	before := []azcosmos.QueryParameter{{Name: "@t", Value: gtc.FormatStoredTime(t)}}
	rows, err := collectRows[headerRow](ctx, ps.s, ps.s.meta, op, sqlQuery{
		text:   "SELECT c.id, c.previewId, c.chunks, c._etag FROM c WHERE c.pk = @pk AND c.kind = '" + kindPreview + "' AND c.expiresAt < @t",
		params: append([]azcosmos.QueryParameter{{Name: "@pk", Value: previewsPK}}, before...),
	})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range rows {
		gone, err := ps.deleteHeader(ctx, op, r)
		if err != nil {
			return n, err
		}
		if gone {
			n++
		}
	}
	// Chunks whose header is gone but that a failed delete left behind.
	type chunkRow struct {
		PK string `json:"pk"`
		ID string `json:"id"`
	}
	left, err := collectRows[chunkRow](ctx, ps.s, ps.s.meta, op, sqlQuery{
		text:   "SELECT c.pk, c.id FROM c WHERE c.kind = '" + kindPreviewChunk + "' AND c.expiresAt < @t",
		params: before,
	})
	if err != nil {
		return n, err
	}
	err = parallel.ForEach(ctx, len(left), previewParallel, func(ctx context.Context, i int) error {
		_, err := ps.s.meta.DeleteItem(ctx, azcosmos.NewPartitionKeyString(left[i].PK), left[i].ID, nil)
		if statusOf(err) == http.StatusNotFound {
			return nil
		}
		return wrapErr(op, err)
	})
	return n, err
}
