package cosmos

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"reflect"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	gtc "github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/codec"
)

// maintenance is the raw access of gtc migrate (gtc.Maintenance): every item document as
// stored, legacy ones included, and writes of converted documents through the same encoder,
// registration and conditional writes as the item API, so a converted document is
// indistinguishable from one the API wrote.
type maintenance struct {
	s *Store
}

var _ gtc.Maintenance = (*maintenance)(nil)

// Maintenance returns the raw access of gtc migrate.
func (s *Store) Maintenance() gtc.Maintenance { return &maintenance{s: s} }

// rawItem selects the item documents gtc migrate examines: docType ground-truth-item,
// or no docType but a datasetName (the oldest legacy documents). Curation documents have a
// docType of their own.
const rawItem = "(c.docType = 'ground-truth-item' OR (NOT IS_DEFINED(c.docType) AND IS_DEFINED(c.datasetName)))"

// rawScanOrder is the order of the ScanSpec whose hash a raw-scan cursor carries. No item scan
// has it, so a cursor of Scan never passes for one of ScanRaw or the other way round: their
// continuation tokens belong to different query texts.
const rawScanOrder gtc.ScanOrder = -1

// strippedKeys are the system properties Cosmos DB adds to every document and the derived
// fields gtc adds to the canonical one (doc.go); a RawDoc's Body has none of them.
var strippedKeys = []string{"_etag", "_rid", "_self", "_attachments", "_ts", "gtcIndex", "gtcExact"}

// rawKeyPaths are the paths of the items container's partition key, in order.
var rawKeyPaths = [...]string{"datasetName", "bucket"}

// rawQuery selects (the count of, for "VALUE COUNT(1)") the item documents of datasets
// (every dataset when empty), across partitions.
func rawQuery(selection string, datasets []string) sqlQuery {
	b := &builder{}
	b.add(rawItem)
	if len(datasets) > 0 {
		b.in("c.datasetName", "d", dedupe(datasets))
	}
	return sqlQuery{text: "SELECT " + selection + " FROM c WHERE " + b.where(), params: b.params}
}

// pendingQuery counts the item documents gtc migrate must at least re-index: no gtcIndex,
// or one of an older version.
func pendingQuery() sqlQuery {
	return sqlQuery{
		text:   "SELECT VALUE COUNT(1) FROM c WHERE " + rawItem + " AND (NOT IS_DEFINED(c.gtcIndex) OR c.gtcIndex.v != @v)",
		params: []azcosmos.QueryParameter{{Name: "@v", Value: gtc.IndexVersion}},
	}
}

// ScanRaw is one cross-partition query over the item documents, paged by continuation token.
func (m *maintenance) ScanRaw(ctx context.Context, datasets []string, cursor string, limit int) (gtc.RawPage, error) {
	const op = "scan raw"
	s := m.s
	if limit < 1 {
		return gtc.RawPage{}, fmt.Errorf("cosmos: %s: %w: limit %d", op, gtc.ErrInvalidArgument, limit)
	}
	if s.closed.Load() {
		return gtc.RawPage{}, errClosed(op)
	}
	spec := gtc.ScanSpec{DatasetNames: datasets, Order: rawScanOrder}
	token := ""
	if cursor != "" {
		c, err := gtc.DecodeScanCursor(cursor, spec)
		if err == nil && c.T == "" {
			err = fmt.Errorf("%w: cursor has no position", gtc.ErrInvalidArgument)
		}
		if err != nil {
			return gtc.RawPage{}, fmt.Errorf("cosmos: %s: %w", op, err)
		}
		token = c.T
	}
	out := gtc.RawPage{Docs: []gtc.RawDoc{}}
	next, err := s.tokenPage(ctx, op, rawQuery("*", datasets), spec, min(limit, gtc.MaxQueryLimit), token, func(row []byte) (bool, error) {
		d, err := rawDocOf(row)
		if err != nil {
			return false, fmt.Errorf("cosmos: %s: %w", op, err)
		}
		out.Docs = append(out.Docs, d)
		return true, nil
	})
	if err != nil {
		return gtc.RawPage{}, err
	}
	out.Next = next
	return out, nil
}

// GetRaw point-reads the item document at these key values. ScanRaw reports a null and an
// absent key value alike as nil: the read tries null, and when nothing is there, a query for
// the absent value, which no point read can address.
func (m *maintenance) GetRaw(ctx context.Context, partitionKey []any, id string) (gtc.RawDoc, error) {
	const op = "get raw"
	s := m.s
	if s.closed.Load() {
		return gtc.RawDoc{}, errClosed(op)
	}
	name := fmt.Sprintf("%v/%s", partitionKey, id)
	nulls := map[string]any{}
	for i, v := range partitionKey {
		if v == nil && i < len(rawKeyPaths) {
			nulls[rawKeyPaths[i]] = nil
		}
	}
	pk, err := rawPartitionKey(gtc.RawDoc{PartitionKey: partitionKey, Body: nulls})
	if err != nil {
		return gtc.RawDoc{}, fmt.Errorf("cosmos: %s %s: %w", op, name, err)
	}
	var row []byte
	resp, err := s.gt.ReadItem(ctx, pk, id, nil)
	switch {
	case err == nil:
		row = resp.Value
	case statusOf(err) == http.StatusNotFound && len(nulls) > 0:
		err = s.rows(ctx, s.gt, op, absentKeyQuery(partitionKey, id), func(r []byte) error {
			row = r
			return nil
		})
		if err != nil {
			return gtc.RawDoc{}, err
		}
	default:
		return gtc.RawDoc{}, fmt.Errorf("cosmos: %s %s: %w", op, name, wrapErr(op, err))
	}
	var d gtc.RawDoc
	if row != nil {
		if d, err = rawDocOf(row); err != nil {
			return gtc.RawDoc{}, fmt.Errorf("cosmos: %s %s: %w", op, name, err)
		}
	}
	if row == nil || !isItemDoc(d.Body) {
		return gtc.RawDoc{}, fmt.Errorf("cosmos: %s %s: %w", op, name, gtc.ErrNotFound)
	}
	return d, nil
}

// absentKeyQuery finds the item document id whose key values are those given, nil standing
// for an absent value, across partitions: no partition key names an absent value.
func absentKeyQuery(partitionKey []any, id string) sqlQuery {
	b := &builder{}
	b.add("c.id = " + b.named("@id", id))
	for i, path := range rawKeyPaths {
		if partitionKey[i] == nil {
			b.add("NOT IS_DEFINED(c." + path + ")")
		} else {
			b.add("c." + path + " = " + b.param("k", partitionKey[i]))
		}
	}
	b.add(rawItem)
	return sqlQuery{text: "SELECT * FROM c WHERE " + b.where(), params: b.params}
}

// isItemDoc applies the rule of rawItem to a decoded document.
func isItemDoc(body map[string]any) bool {
	docType, typed := body["docType"]
	_, named := body["datasetName"]
	return docType == gtc.DocTypeItem || !typed && named
}

// CountRaw counts what ScanRaw returns with one cross-partition count (partials summed).
func (m *maintenance) CountRaw(ctx context.Context, datasets []string) (int, error) {
	s := m.s
	if s.closed.Load() {
		return 0, errClosed("count raw")
	}
	return s.count(ctx, s.gt, "count raw", rawQuery("VALUE COUNT(1)", datasets))
}

// ReplaceRaw rewrites a document in place, conditional on the ETag it was read with.
func (m *maintenance) ReplaceRaw(ctx context.Context, prev gtc.RawDoc, body map[string]any) (gtc.RawDoc, error) {
	const op = "replace raw"
	s := m.s
	before := codec.RawPrevious(prev)
	p, norm, err := s.prepareRaw(op, body, gtc.NextRevision(before))
	if err != nil {
		return gtc.RawDoc{}, err
	}
	k := p.stored.Key()
	if rawKey(prev) != k {
		return gtc.RawDoc{}, fmt.Errorf("cosmos: %s: %w: the key may not change (%s → %s); another bucket is a move",
			op, gtc.ErrInvalidArgument, prev.KeyString(), k)
	}
	if prev.ETag == "" {
		return gtc.RawDoc{}, fmt.Errorf("cosmos: %s %s: %w: no ETag to match", op, k, gtc.ErrPreconditionFailed)
	}
	// Registered before the write, so the registry never misses a bucket.
	if err := s.registry.ensure(ctx, partition{Dataset: k.DatasetName, Bucket: k.Bucket}); err != nil {
		return gtc.RawDoc{}, err
	}
	revs, err := s.revisionDocs(gtc.WithDefaultChange(ctx, gtc.SourceMigrate), k, before, p.stored)
	if err != nil {
		return gtc.RawDoc{}, fmt.Errorf("cosmos: %s %s: %w", op, k, err)
	}
	if err := s.items.write(ctx, k, p, prev.ETag, revs); err != nil {
		return gtc.RawDoc{}, fmt.Errorf("cosmos: %s %s: %w", op, k, wrapErr(op, err))
	}
	s.rawAssignmentChanged(ctx, prev, p.stored)
	return written(p, norm), nil
}

// MoveRaw creates body at its key, then deletes prev conditionally. Revisions live in their
// item's partition, so a moved item starts a new history in its new bucket: revision 1, of
// source migrate, holding the whole item (the old partition's revisions are not read again;
// DeleteDataset removes them with the dataset).
func (m *maintenance) MoveRaw(ctx context.Context, prev gtc.RawDoc, body map[string]any) (gtc.RawDoc, error) {
	const op = "move raw"
	s := m.s
	p, norm, err := s.prepareRaw(op, body, gtc.NextRevision(nil))
	if err != nil {
		return gtc.RawDoc{}, err
	}
	k, old := p.stored.Key(), rawKey(prev)
	if old.DatasetName != k.DatasetName || old.ID != k.ID {
		return gtc.RawDoc{}, fmt.Errorf("cosmos: %s: %w: a move keeps the datasetName and the id (%s → %s)",
			op, gtc.ErrInvalidArgument, prev.KeyString(), k)
	}
	// Checked before anything is written: a document that cannot be deleted is not copied.
	oldPK, err := rawPartitionKey(prev)
	if err != nil {
		return gtc.RawDoc{}, fmt.Errorf("cosmos: %s %s: %w", op, prev.KeyString(), err)
	}
	if b, ok := prev.PartitionKey[1].(string); ok && b == k.Bucket {
		return gtc.RawDoc{}, fmt.Errorf("cosmos: %s: %w: %s is already in bucket %s; a rewrite in place is ReplaceRaw",
			op, gtc.ErrInvalidArgument, prev.KeyString(), k.Bucket)
	}
	if prev.ETag == "" {
		return gtc.RawDoc{}, fmt.Errorf("cosmos: %s %s: %w: no ETag to match", op, prev.KeyString(), gtc.ErrPreconditionFailed)
	}
	if err := s.registry.ensure(ctx, partition{Dataset: k.DatasetName, Bucket: k.Bucket}); err != nil {
		return gtc.RawDoc{}, err
	}
	revs, err := s.revisionDocs(gtc.WithDefaultChange(ctx, gtc.SourceMigrate), k, nil, p.stored)
	if err != nil {
		return gtc.RawDoc{}, fmt.Errorf("cosmos: %s %s: %w", op, prev.KeyString(), err)
	}
	if err := s.items.write(ctx, k, p, "", revs); err != nil {
		if statusOf(err) != http.StatusConflict {
			return gtc.RawDoc{}, fmt.Errorf("cosmos: %s %s: %w", op, prev.KeyString(), wrapErr(op, err))
		}
		// The new key is taken: by this move's own copy, left by a run that stopped before
		// its delete, or by another document, which must not be overwritten.
		cur, err := s.readRaw(ctx, k)
		if err != nil {
			return gtc.RawDoc{}, fmt.Errorf("cosmos: %s %s: %w", op, prev.KeyString(), err)
		}
		if diff := differingKeys(cur.Body, norm); len(diff) > 0 {
			return gtc.RawDoc{}, fmt.Errorf("cosmos: %s %s: %s holds another document (%s differ): %w",
				op, prev.KeyString(), k, strings.Join(diff, ", "), &gtc.ConflictError{Existing: k})
		}
		p.stored.ETag = cur.ETag
	}
	_, err = s.gt.DeleteItem(ctx, oldPK, prev.ID, &azcosmos.ItemOptions{IfMatchEtag: etagPtr(prev.ETag)})
	switch st := statusOf(err); {
	case err == nil, st == http.StatusNotFound:
	case st == http.StatusPreconditionFailed:
		return gtc.RawDoc{}, fmt.Errorf("cosmos: %s: %w", op, &gtc.MoveIncompleteError{Old: old, New: k})
	default:
		return gtc.RawDoc{}, fmt.Errorf("cosmos: %s %s: the copy at %s is written but the old document is not deleted (a rerun finishes the move): %w",
			op, prev.KeyString(), k, wrapErr(op, err))
	}
	s.rawAssignmentChanged(ctx, prev, p.stored)
	return written(p, norm), nil
}

// EnsureRegistered adds k's bucket to its dataset's registry entry when it is missing.
func (m *maintenance) EnsureRegistered(ctx context.Context, k gtc.Key) error {
	if k.DatasetName == "" || !gtc.IsCanonicalUUID(k.Bucket) {
		return fmt.Errorf("cosmos: register %s: %w: the registry holds canonical UUID buckets of named datasets", k, gtc.ErrInvalidArgument)
	}
	if m.s.closed.Load() {
		return errClosed("register")
	}
	return m.s.registry.ensure(ctx, partition{Dataset: k.DatasetName, Bucket: k.Bucket})
}

// DuplicateIDs merges, dataset by dataset, the id-ordered projections of the registered
// buckets (the duplicates pass of migrate.Job.Run), so that documents sharing an id arrive one
// after the other.
func (m *maintenance) DuplicateIDs(ctx context.Context, datasets []string) iter.Seq2[[]gtc.Key, error] {
	s := m.s
	return func(yield func([]gtc.Key, error) bool) {
		if s.closed.Load() {
			yield(nil, errClosed("duplicate ids"))
			return
		}
		parts, err := s.registry.partitions(ctx, datasets, "")
		if err != nil {
			yield(nil, err)
			return
		}
		for _, ps := range datasetGroups(parts) {
			ms := mergeSpec{
				parts:    ps,
				query:    idQuery,
				pageSize: clampPage(s.opts.PageSize, len(ps)),
				order:    gtc.SortID,
			}
			var same []gtc.Key // the keys of the id being read
			flush := func() bool {
				if len(same) < 2 {
					return true
				}
				keys := slices.Clone(same)
				slices.SortFunc(keys, func(a, b gtc.Key) int { return strings.Compare(a.String(), b.String()) })
				return yield(keys, nil)
			}
			for row, err := range s.merge(ctx, "duplicate ids", ms) {
				if err != nil {
					yield(nil, err)
					return
				}
				if len(same) > 0 && same[0].ID != row.key.ID {
					if !flush() {
						return
					}
					same = same[:0]
				}
				same = append(same, row.key)
			}
			if !flush() {
				return
			}
		}
	}
}

// idQuery lists the ids of one partition's item documents in order, each as its own sort key
// (the shape merge reads).
func idQuery(p partition) (sqlQuery, bool) {
	b := partitionWhere(p)
	b.add(rawItem)
	return sqlQuery{text: "SELECT c.id, c.id AS sk FROM c WHERE " + b.where() + " ORDER BY c.id", params: b.params, pk: &p}, true
}

// WriteMigrationMarker records a complete gtc migrate run. The job writes it only after a run
// over every dataset that registered the bucket of every item it read,
// so the registry is then known complete too, and registryRebuiltAt is set with migratedAt.
func (m *maintenance) WriteMigrationMarker(ctx context.Context, by string) error {
	s := m.s
	if s.closed.Load() {
		return errClosed("write marker")
	}
	now := gtc.FormatStoredTime(s.clock.Now())
	return s.updateMarker(ctx, func(mk *Marker) {
		mk.MigratedAt, mk.MigratedBy, mk.IndexVersion = now, by, gtc.IndexVersion
		mk.RegistryRebuiltAt = now
	})
}

// Status reads the migration marker and counts the item documents that await gtc migrate.
func (s *Store) Status(ctx context.Context) (gtc.StoreStatus, error) {
	out := gtc.StoreStatus{Backend: Backend, Pending: -1}
	if s.closed.Load() {
		return out, errClosed("status")
	}
	mk, err := s.ReadMarker(ctx)
	if err != nil {
		return out, err
	}
	if mk != nil {
		out.IndexComplete = mk.migrated()
		out.RegistryComplete = mk.RegistryRebuiltAt != ""
		if mk.MigratedAt != "" {
			t, err := gtc.ParseTime(mk.MigratedAt)
			if err != nil {
				return out, fmt.Errorf("cosmos: status: %w: the marker's migratedAt %q: %w", gtc.ErrUnavailable, mk.MigratedAt, err)
			}
			out.MigratedAt = &t
		}
	}
	if out.Pending, err = s.count(ctx, s.gt, "count pending", pendingQuery()); err != nil {
		out.Pending = -1
		return out, err
	}
	return out, nil
}

// readRaw point-reads the document at k, whatever it holds.
func (s *Store) readRaw(ctx context.Context, k gtc.Key) (gtc.RawDoc, error) {
	resp, err := s.gt.ReadItem(ctx, itemKey(k.DatasetName, k.Bucket), k.ID, nil)
	if err != nil {
		return gtc.RawDoc{}, fmt.Errorf("cosmos: read %s: %w", k, wrapErr("read", err))
	}
	d, err := rawDocOf(resp.Value)
	if err != nil {
		return gtc.RawDoc{}, fmt.Errorf("cosmos: read %s: %w", k, err)
	}
	return d, nil
}

// rawDocOf reads a stored document as it is.
func rawDocOf(row []byte) (gtc.RawDoc, error) {
	doc, err := gtc.DecodeRawObject(row)
	if err != nil {
		return gtc.RawDoc{}, fmt.Errorf("%w: stored document unreadable: %w", gtc.ErrUnavailable, err)
	}
	id, _ := doc["id"].(string)
	etag, _ := doc["_etag"].(string)
	d := gtc.RawDoc{PartitionKey: []any{doc[rawKeyPaths[0]], doc[rawKeyPaths[1]]}, ID: id, ETag: etag}
	if index, ok := doc["gtcIndex"].(map[string]any); ok {
		if v, ok := index["v"].(json.Number); ok {
			n, _ := v.Int64()
			d.IndexVersion = int(n)
		}
	}
	if exact, ok := doc["gtcExact"].(string); ok {
		// The canonical document, numbers and all, which the fields cannot carry (doc.go).
		if d.Body, err = gtc.DecodeRawObject([]byte(exact)); err != nil {
			return gtc.RawDoc{}, fmt.Errorf("%w: stored document %s: gtcExact unreadable: %w", gtc.ErrUnavailable, id, err)
		}
		return d, nil
	}
	for _, k := range strippedKeys {
		delete(doc, k)
	}
	d.Body = doc
	return d, nil
}

// prepareRaw encodes body as an item write does. body must be exactly the canonical document
// of the item it describes: a key the item does not model, or a value in another form, would
// otherwise be dropped or rewritten without notice. It returns body as written (numbers as
// json.Number).
//
// revision is the number the write gives the item; the body's own revision number (the one it
// was read with) is not compared, and the returned body carries the new one.
func (s *Store) prepareRaw(op string, body map[string]any, revision int64) (*preparedItem, map[string]any, error) {
	if s.closed.Load() {
		return nil, nil, errClosed(op)
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, nil, fmt.Errorf("cosmos: %s: %w: the body does not encode as JSON: %w", op, gtc.ErrInvalidArgument, err)
	}
	want, err := gtc.DecodeRawObject(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("cosmos: %s: %w: the body is not a JSON object", op, gtc.ErrInvalidArgument)
	}
	it, err := codec.DecodeStoredItem(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("cosmos: %s: %w: the body is not an item document: %w", op, gtc.ErrInvalidArgument, err)
	}
	it.Revision = revision
	p, err := s.prepareItem(op, it)
	if err != nil {
		return nil, nil, err
	}
	got, err := gtc.DecodeRawObject(p.canonical)
	if err != nil {
		return nil, nil, fmt.Errorf("cosmos: %s: %w: canonical document unreadable: %w", op, gtc.ErrInvalidArgument, err)
	}
	delete(want, "revision")
	if n, ok := got["revision"]; ok {
		want["revision"] = n
	}
	if diff := differingKeys(want, got); len(diff) > 0 {
		return nil, nil, fmt.Errorf("cosmos: %s %s: %w: the body is not the item's canonical document: %s differ",
			op, p.stored.Key(), gtc.ErrInvalidArgument, strings.Join(diff, ", "))
	}
	return p, want, nil
}

// differingKeys lists, sorted, the top-level keys whose values differ between a and b.
func differingKeys(a, b map[string]any) []string {
	var out []string
	for k, v := range a {
		if w, ok := b[k]; !ok || !reflect.DeepEqual(v, w) {
			out = append(out, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// rawKey is the item key a stored document names, with the bucket as text.
func rawKey(d gtc.RawDoc) gtc.Key {
	return gtc.Key{DatasetName: d.DatasetName(), Bucket: d.BucketString(), ID: d.ID}
}

// written is the RawDoc of a document this store just wrote.
func written(p *preparedItem, body map[string]any) gtc.RawDoc {
	k := p.stored.Key()
	return gtc.RawDoc{PartitionKey: []any{k.DatasetName, k.Bucket}, ID: k.ID, ETag: p.stored.ETag, Body: body, IndexVersion: gtc.IndexVersion}
}

// rawPartitionKey addresses a document by its key values as stored. The SDK can put
// strings, numbers, booleans and null into a partition key; it has no way to name an absent
// value (Cosmos DB's "undefined" key), objects or arrays, so point operations cannot reach
// such a document: gtc migrate reports it as UNADDRESSABLE_DOCUMENT for manual repair.
func rawPartitionKey(d gtc.RawDoc) (azcosmos.PartitionKey, error) {
	unaddressable := func(why string, args ...any) error {
		return fmt.Errorf("%w (%w): %s, and the SDK's point operations cannot address that partition key value",
			gtc.ErrUnaddressable, gtc.ErrInvalidArgument, fmt.Sprintf(why, args...))
	}
	if len(d.PartitionKey) != len(rawKeyPaths) {
		return azcosmos.PartitionKey{}, unaddressable("it has %d partition key values for the %d paths of the container", len(d.PartitionKey), len(rawKeyPaths))
	}
	pk := azcosmos.NewPartitionKey()
	for i, v := range d.PartitionKey {
		path := rawKeyPaths[i]
		switch x := v.(type) {
		case string:
			pk = pk.AppendString(x)
		case json.Number:
			f, err := x.Float64()
			if err != nil {
				return azcosmos.PartitionKey{}, unaddressable("its %s %s is beyond a double", path, x)
			}
			pk = pk.AppendNumber(f)
		case float64:
			pk = pk.AppendNumber(x)
		case bool:
			pk = pk.AppendBool(x)
		case nil:
			if _, present := d.Body[path]; !present {
				return azcosmos.PartitionKey{}, unaddressable("it has no %s", path)
			}
			pk = pk.AppendNull()
		default:
			return azcosmos.PartitionKey{}, unaddressable("its %s is %s", path, jsonKind(v))
		}
	}
	return pk, nil
}

// jsonKind names the JSON type of a decoded value that is not a scalar.
func jsonKind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	}
	return fmt.Sprintf("a %T", v)
}

// rawAssignmentChanged makes the assignment records follow a raw write, as
// assignmentChanged does for item writes; prev is known only as it was stored, and a move
// changes the record's id with the bucket.
func (s *Store) rawAssignmentChanged(ctx context.Context, prev gtc.RawDoc, next *gtc.Item) {
	was, _ := prev.Body["assignedTo"].(string)
	if old := rawKey(prev); was != "" && (was != assignee(next) || old != next.Key()) {
		s.dropAssignment(ctx, was, old)
	}
	if assignee(next) != "" {
		s.putAssignment(ctx, next)
	}
}
