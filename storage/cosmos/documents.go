package cosmos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	gtc "github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/codec"
	"github.com/gtc-dev/gtc/storage/internal/parallel"
)

// ---- curation instructions (in the items container, reference layout) ----

type curationStore struct {
	s *Store
}

var _ gtc.CurationStore = (*curationStore)(nil)

func curationKey(ds string) azcosmos.PartitionKey { return itemKey(ds, gtc.CurationBucket) }

// Get point-reads the dataset's document.
func (cs *curationStore) Get(ctx context.Context, datasetName string) (*gtc.CurationInstructions, error) {
	if cs.s.closed.Load() {
		return nil, errClosed("get curation")
	}
	if datasetName == "" {
		return nil, fmt.Errorf("cosmos: get curation: %w", gtc.ErrNotFound)
	}
	resp, err := cs.s.gt.ReadItem(ctx, curationKey(datasetName), gtc.CurationDocID(datasetName), nil)
	if err != nil {
		return nil, fmt.Errorf("cosmos: get curation %s: %w", datasetName, wrapErr("get curation", err))
	}
	var head struct {
		ETag string `json:"_etag"`
	}
	_ = json.Unmarshal(resp.Value, &head)
	c, err := codec.DecodeStoredCuration(resp.Value, head.ETag)
	if err != nil {
		return nil, fmt.Errorf("cosmos: stored curation document unreadable: %w: %w", gtc.ErrUnavailable, err)
	}
	return c, nil
}

// Put creates the document (ifMatch == "") or replaces it if its ETag is ifMatch.
func (cs *curationStore) Put(ctx context.Context, c *gtc.CurationInstructions, ifMatch string) (*gtc.CurationInstructions, bool, error) {
	if c == nil || c.DatasetName == "" {
		return nil, false, fmt.Errorf("cosmos: put curation: %w: a dataset name is required", gtc.ErrInvalidArgument)
	}
	if cs.s.closed.Load() {
		return nil, false, errClosed("put curation")
	}
	doc := codec.CurationStoredJSON(c)
	stored, err := codec.DecodeStoredCuration(doc, "")
	if err != nil {
		return nil, false, fmt.Errorf("cosmos: put curation: %w: %w", gtc.ErrInvalidArgument, err)
	}
	ds := c.DatasetName
	var resp azcosmos.ItemResponse
	if ifMatch == "" {
		resp, err = cs.s.gt.CreateItem(ctx, curationKey(ds), doc, nil)
	} else {
		resp, err = cs.s.gt.ReplaceItem(ctx, curationKey(ds), gtc.CurationDocID(ds), doc, &azcosmos.ItemOptions{IfMatchEtag: etagPtr(ifMatch)})
	}
	if err != nil {
		return nil, false, fmt.Errorf("cosmos: put curation %s: %w", ds, wrapErr("put curation", err))
	}
	stored.ETag = string(resp.ETag)
	return stored, ifMatch == "", nil
}

// ---- the tag store: one document {"id": "tags|global", "pk": "global", "tags": [...]} ----

type tagStore struct {
	s *Store
}

var _ gtc.TagStore = (*tagStore)(nil)

const (
	tagsDocID = "tags|global"
	tagsPK    = "global"
)

type tagsDoc struct {
	ID      string   `json:"id"`
	DocType string   `json:"docType"`
	PK      string   `json:"pk"`
	Tags    []string `json:"tags"`
	ETag    string   `json:"_etag,omitempty"`
}

func (ts *tagStore) read(ctx context.Context) (*tagsDoc, error) {
	var d tagsDoc
	found, err := ts.s.readByKey(ctx, ts.s.tags, "pk", tagsPK, tagsDocID, &d)
	if err != nil || !found {
		return nil, err
	}
	return &d, nil
}

func sortedSet(ss []string) []string {
	return slices.Compact(slices.Sorted(slices.Values(ss)))
}

// List returns the stored tags, sorted and unique.
func (ts *tagStore) List(ctx context.Context) ([]string, error) {
	if ts.s.closed.Load() {
		return nil, errClosed("list tags")
	}
	d, err := ts.read(ctx)
	if err != nil || d == nil {
		return []string{}, err
	}
	return sortedSet(d.Tags), nil
}

// Add unions tags into the set.
func (ts *tagStore) Add(ctx context.Context, tags []string) ([]string, error) {
	return ts.change(ctx, "add tags", tags, func(cur []string) []string { return append(cur, tags...) })
}

// Remove subtracts tags from the set.
func (ts *tagStore) Remove(ctx context.Context, tags []string) ([]string, error) {
	return ts.change(ctx, "remove tags", tags, func(cur []string) []string {
		return slices.DeleteFunc(cur, func(t string) bool { return slices.Contains(tags, t) })
	})
}

// change applies fn with the read → conditional write → retry loop.
func (ts *tagStore) change(ctx context.Context, op string, tags []string, fn func([]string) []string) ([]string, error) {
	if ts.s.closed.Load() {
		return nil, errClosed(op)
	}
	if slices.Contains(tags, "") {
		// Refused before any write, so nothing of the call is stored.
		return nil, fmt.Errorf("cosmos: %s: %w: empty tag", op, gtc.ErrInvalidArgument)
	}
	pk := azcosmos.NewPartitionKeyString(tagsPK)
	var out []string
	// Every tag change rewrites the one tag-store document, so all writers contend on it;
	// each lost race means another writer's change landed, so tagStoreAttempts attempts see
	// that many concurrent writers through (conditionalAttempts, 5, gave up under 16).
	err := retryConditionalN(ctx, op, tagStoreAttempts, func() error {
		d, err := ts.read(ctx)
		if err != nil {
			return err
		}
		if d == nil {
			out = sortedSet(fn(nil))
			body, _ := json.Marshal(tagsDoc{ID: tagsDocID, DocType: "tags", PK: tagsPK, Tags: out})
			_, err := ts.s.tags.CreateItem(ctx, pk, body, nil)
			return wrapErr(op, raced(err))
		}
		cur := sortedSet(d.Tags)
		out = sortedSet(fn(slices.Clone(cur)))
		if slices.Equal(out, cur) {
			return nil
		}
		etag := d.ETag
		d.Tags, d.ETag = out, ""
		body, _ := json.Marshal(d)
		_, err = ts.s.tags.ReplaceItem(ctx, pk, tagsDocID, body, &azcosmos.ItemOptions{IfMatchEtag: etagPtr(etag)})
		return wrapErr(op, raced(err))
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []string{}
	}
	return out, nil
}

// ---- tag definitions: one document per key, partitioned by /tag_key ----

type tagDefinitionStore struct {
	s *Store
}

var _ gtc.TagDefinitionStore = (*tagDefinitionStore)(nil)

type definitionDoc struct {
	ID          string  `json:"id"`
	TagKey      string  `json:"tag_key"`
	Description string  `json:"description"`
	CreatedBy   *string `json:"created_by"`
	CreatedAt   string  `json:"createdAt"`
	UpdatedAt   string  `json:"updatedAt"`
	DocType     string  `json:"docType"`
	ETag        string  `json:"_etag,omitempty"`
}

func (d *definitionDoc) definition() (*gtc.TagDefinition, error) {
	out := &gtc.TagDefinition{TagKey: d.TagKey, Description: d.Description, CreatedBy: d.CreatedBy, ETag: d.ETag}
	var err error
	if out.CreatedAt, err = gtc.ParseTime(d.CreatedAt); err == nil {
		out.UpdatedAt, err = gtc.ParseTime(d.UpdatedAt)
	}
	if err != nil {
		return nil, fmt.Errorf("cosmos: stored tag definition %q unreadable: %w: %w", d.TagKey, gtc.ErrUnavailable, err)
	}
	return out, nil
}

// checkTagKey refuses keys no definition can have.
func checkTagKey(op, key string) error { return checkDocID(op, "tag key", key) }

// checkDocID refuses a value used as a document id that no document can have: empty, or
// with a character Cosmos DB forbids in ids.
func checkDocID(op, what, v string) error {
	if v == "" {
		return fmt.Errorf("cosmos: %s: %w: empty %s", op, gtc.ErrInvalidArgument, what)
	}
	if strings.ContainsAny(v, `/\?#`) {
		return fmt.Errorf("cosmos: %s: %w: %s %q contains one of / \\ ? #", op, gtc.ErrInvalidArgument, what, v)
	}
	return nil
}

func (ds *tagDefinitionStore) read(ctx context.Context, key string) (*definitionDoc, error) {
	var d definitionDoc
	found, err := ds.s.readByKey(ctx, ds.s.definitions, "tag_key", key, key, &d)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("cosmos: get tag definition %q: %w", key, gtc.ErrNotFound)
	}
	return &d, nil
}

// Get returns the definition of key.
func (ds *tagDefinitionStore) Get(ctx context.Context, key string) (*gtc.TagDefinition, error) {
	if err := checkTagKey("get tag definition", key); err != nil {
		return nil, err
	}
	if ds.s.closed.Load() {
		return nil, errClosed("get tag definition")
	}
	d, err := ds.read(ctx, key)
	if err != nil {
		return nil, err
	}
	return d.definition()
}

// List returns every definition in byte order of the key.
func (ds *tagDefinitionStore) List(ctx context.Context) ([]*gtc.TagDefinition, error) {
	if ds.s.closed.Load() {
		return nil, errClosed("list tag definitions")
	}
	out := []*gtc.TagDefinition{}
	q := sqlQuery{text: "SELECT * FROM c WHERE c.docType = 'tag-definition'"}
	err := eachRow(ctx, ds.s, ds.s.definitions, "list tag definitions", q, func(d definitionDoc) error {
		def, err := d.definition()
		if err != nil {
			return err
		}
		out = append(out, def)
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TagKey < out[j].TagKey })
	return out, nil
}

// Upsert creates d, or replaces an existing definition's description and UpdatedAt while
// keeping its creator and creation time; conditional on the ETag it read.
func (ds *tagDefinitionStore) Upsert(ctx context.Context, d *gtc.TagDefinition) (*gtc.TagDefinition, bool, error) {
	const op = "upsert tag definition"
	if d == nil {
		return nil, false, fmt.Errorf("cosmos: %s: %w: nil definition", op, gtc.ErrInvalidArgument)
	}
	if err := checkTagKey(op, d.TagKey); err != nil {
		return nil, false, err
	}
	if ds.s.closed.Load() {
		return nil, false, errClosed(op)
	}
	pk := azcosmos.NewPartitionKeyString(d.TagKey)
	var out *gtc.TagDefinition
	var created bool
	err := retryConditional(ctx, op, func() error {
		cur, err := ds.read(ctx, d.TagKey)
		var resp azcosmos.ItemResponse
		var doc definitionDoc
		switch {
		case err == nil:
			doc = *cur
			doc.Description, doc.UpdatedAt, doc.ETag = d.Description, gtc.FormatStoredTime(d.UpdatedAt), ""
			body, _ := json.Marshal(doc)
			resp, err = ds.s.definitions.ReplaceItem(ctx, pk, d.TagKey, body, &azcosmos.ItemOptions{IfMatchEtag: etagPtr(cur.ETag)})
			created = false
		case errors.Is(err, gtc.ErrNotFound):
			doc = definitionDoc{ID: d.TagKey, TagKey: d.TagKey, Description: d.Description, CreatedBy: d.CreatedBy,
				CreatedAt: gtc.FormatStoredTime(d.CreatedAt), UpdatedAt: gtc.FormatStoredTime(d.UpdatedAt), DocType: "tag-definition"}
			body, _ := json.Marshal(doc)
			resp, err = ds.s.definitions.CreateItem(ctx, pk, body, nil)
			created = true
		default:
			return err
		}
		if err != nil {
			return wrapErr(op, raced(err))
		}
		doc.ETag = string(resp.ETag)
		out, err = doc.definition()
		return err
	})
	if err != nil {
		return nil, false, err
	}
	return out, created, nil
}

// Delete removes the definition of key.
func (ds *tagDefinitionStore) Delete(ctx context.Context, key string) error {
	const op = "delete tag definition"
	if err := checkTagKey(op, key); err != nil {
		return err
	}
	if ds.s.closed.Load() {
		return errClosed(op)
	}
	// Read, then delete conditionally: a missing definition is "no rows" on every server.
	return retryConditional(ctx, op, func() error {
		cur, err := ds.read(ctx, key)
		if err != nil {
			return err
		}
		_, err = ds.s.definitions.DeleteItem(ctx, azcosmos.NewPartitionKeyString(key), key, &azcosmos.ItemOptions{IfMatchEtag: etagPtr(cur.ETag)})
		if statusOf(err) == http.StatusNotFound {
			return errRace
		}
		return wrapErr(op, raced(err))
	})
}

// ---- assignment records (kept for the reference backend; the items are the truth) ----

type assignmentDoc struct {
	ID            string `json:"id"`
	PK            string `json:"pk"`
	GroundTruthID string `json:"ground_truth_id"`
	DatasetName   string `json:"datasetName"`
	Bucket        string `json:"bucket"`
	DocType       string `json:"docType"`
	SchemaVersion string `json:"schemaVersion"`
	AssignedAt    string `json:"assignedAt,omitempty"`
}

func assignmentID(k gtc.Key) string { return k.DatasetName + "|" + k.Bucket + "|" + k.ID }

func assignee(it *gtc.Item) string {
	if it == nil || it.AssignedTo == nil {
		return ""
	}
	return *it.AssignedTo
}

// assignmentChanged makes the records follow an item write: upsert for the new assignee,
// delete for a previous one. The item is the truth, so a failure is only logged.
func (s *Store) assignmentChanged(ctx context.Context, prev, next *gtc.Item) {
	was, now := assignee(prev), assignee(next)
	if was != "" && was != now {
		s.dropAssignment(ctx, was, next.Key())
	}
	if now == "" || (now == was && timesEqual(prev.AssignedAt, next.AssignedAt)) {
		return
	}
	s.putAssignment(ctx, next)
}

// dropAssignment deletes user's record of k; a failure is only logged.
func (s *Store) dropAssignment(ctx context.Context, user string, k gtc.Key) {
	fctx, cancel := followUpContext(ctx)
	defer cancel()
	_, err := s.assignments.DeleteItem(fctx, azcosmos.NewPartitionKeyString("sme:"+user), assignmentID(k), nil)
	if err != nil && statusOf(err) != http.StatusNotFound {
		s.log.Warn("cosmos: assignment record not deleted", "item", k.String(), "user", user, "err", err)
	}
}

// putAssignment upserts the assignment record of it, which has an assignee; a failure is
// only logged.
func (s *Store) putAssignment(ctx context.Context, it *gtc.Item) {
	k := it.Key()
	user := assignee(it)
	doc := assignmentDoc{ID: assignmentID(k), PK: "sme:" + user, GroundTruthID: k.ID, DatasetName: k.DatasetName, Bucket: k.Bucket,
		DocType: "sme-assignment", SchemaVersion: "v1"}
	if it.AssignedAt != nil {
		doc.AssignedAt = gtc.FormatStoredTime(*it.AssignedAt)
	}
	body, _ := json.Marshal(doc)
	fctx, cancel := followUpContext(ctx)
	defer cancel()
	if _, err := s.assignments.UpsertItem(fctx, azcosmos.NewPartitionKeyString(doc.PK), body, nil); err != nil {
		s.log.Warn("cosmos: assignment record not written", "item", k.String(), "user", user, "err", err)
	}
}

func timesEqual(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

// deleteAssignments removes the dataset's assignment records.
func (s *Store) deleteAssignments(ctx context.Context, ds string) error {
	b := &builder{}
	b.add("c.datasetName = " + b.named("@ds", ds))
	q := sqlQuery{text: "SELECT c.id, c.pk FROM c WHERE " + b.where(), params: b.params}
	type rec struct {
		ID string `json:"id"`
		PK string `json:"pk"`
	}
	recs, err := collectRows[rec](ctx, s, s.assignments, "list assignments", q)
	if err != nil {
		return err
	}
	return parallel.ForEach(ctx, len(recs), 8, func(ctx context.Context, i int) error {
		_, err := s.assignments.DeleteItem(ctx, azcosmos.NewPartitionKeyString(recs[i].PK), recs[i].ID, nil)
		if err != nil && statusOf(err) != http.StatusNotFound {
			return wrapErr("delete assignment", err)
		}
		return nil
	})
}
