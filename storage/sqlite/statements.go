package sqlite

import (
	"context"
	"database/sql"
	"slices"
	"strings"
)

// currentColumns are the columns of an item a replace reads first (storedColumns).
const currentColumns = `pk, bucket, etag, status, assigned_to, sk_assigned, sk_tag_count, sk_references,
  sk_reviewed, sk_updated, sk_has_answer, sk_recent, rev_head`

// currentOfEachSQL reads currentColumns of many items, whose keys travel as one JSON array of
// [dataset_name, id] pairs: the first column is an item's position in it, and a missing item
// has no row. Each item is one lookup in the (dataset_name, id) index.
const currentOfEachSQL = `SELECT k.key, ` + currentColumns + ` FROM json_each(?) AS k
  JOIN items ON items.dataset_name = k.value ->> 0 AND items.id = k.value ->> 1`

// deleteTagsSQL deletes the item_tags rows of any number of items, which travel as one JSON
// array of [item_pk, tag] pairs (tagChanges); each is one lookup in item_tags_item.
const deleteTagsSQL = `DELETE FROM item_tags WHERE (item_pk, tag) IN (SELECT value ->> 0, value ->> 1 FROM json_each(?))`

// itemColumns are the columns Create sets besides the key, in the order of columnArgs.
const itemColumns = `status, assigned_to, etag, index_v,
  sk_reviewed, sk_updated, sk_has_answer, sk_tag_count, sk_references, sk_assigned, sk_recent,
  ref_urls, search_text, doc`

// statements are prepared once per pool; database/sql prepares each on every connection
// that runs it and keeps it there.
type statements struct {
	all []*sql.Stmt

	// readers
	ping, get, locate, docsByPK, curationGet, maxPK *sql.Stmt
	storeTags, definitionGet, definitions           *sql.Stmt
	pending, markerGet                              *sql.Stmt
	agentOpGet, agentOpExists, agentItems           *sql.Stmt
	agentRunning                                    *sql.Stmt

	// writer
	savepoint, release, rollbackTo                *sql.Stmt
	keyOf, insertItem, currentOf, currentOfEach   *sql.Stmt
	revisionInsert, revisionList, revisionGet     *sql.Stmt
	revisionListAfter                             *sql.Stmt
	revisionChain, revisionDocs, revisionMaxRID   *sql.Stmt
	revisionDelete, revisionRebase                *sql.Stmt
	deleteRevisionsOf                             *sql.Stmt
	update                                        [updateVariants]*sql.Stmt
	insertTags, deleteTags, deleteTagsOf          *sql.Stmt
	deleteItems, deleteCuration                   *sql.Stmt
	curationETag, curationInsert, curationUpdate  *sql.Stmt
	storeTagInsert, storeTagDelete, storeTagsInTx *sql.Stmt
	definitionCreated, definitionInsert           *sql.Stmt
	definitionUpdate, definitionDelete            *sql.Stmt
	rawInsert, rawTake, rawHeld                   *sql.Stmt
	itemRow, tagsOf, deleteItem, markerPut        *sql.Stmt
	agentOpInsert, agentTagInsert, agentOpDoc     *sql.Stmt
	agentOpUpdate, agentItemsEnd, agentItemPut    *sql.Stmt
	agentOpHeld, agentOpsDelete                   *sql.Stmt
}

func (st *statements) prepare(ctx context.Context, wdb, rdb *sql.DB) error {
	var err error
	p := func(db *sql.DB, query string) *sql.Stmt {
		if err != nil {
			return nil
		}
		var s *sql.Stmt
		s, err = db.PrepareContext(ctx, query)
		if err == nil {
			st.all = append(st.all, s)
		}
		return s
	}
	st.ping = p(rdb, `SELECT value FROM meta WHERE key = 'store_id'`)
	st.get = p(rdb, `SELECT bucket, etag, doc FROM items WHERE dataset_name = ? AND id = ?`)
	st.locate = p(rdb, `SELECT bucket FROM items WHERE dataset_name = ? AND id = ?`)
	// One statement for any page size: the primary keys travel as one JSON array.
	st.docsByPK = p(rdb, `SELECT pk, etag, doc FROM items WHERE pk IN (SELECT value FROM json_each(?))`)
	st.maxPK = p(rdb, `SELECT coalesce(max(pk), 0) FROM items`)
	st.curationGet = p(rdb, `SELECT etag, doc FROM curation_instructions WHERE dataset_name = ?`)
	st.storeTags = p(rdb, `SELECT tag FROM tag_store ORDER BY tag`)
	st.definitionGet = p(rdb, `SELECT `+definitionColumns+` FROM tag_definitions WHERE tag_key = ?`)
	st.definitions = p(rdb, `SELECT `+definitionColumns+` FROM tag_definitions ORDER BY tag_key`)
	st.pending = p(rdb, pendingSQL)
	st.markerGet = p(rdb, `SELECT value FROM meta WHERE key = '`+markerKey+`'`)
	st.agentOpGet = p(rdb, `SELECT doc FROM agent_operations WHERE operation_id = ?`)
	st.agentOpExists = p(rdb, `SELECT EXISTS (SELECT 1 FROM agent_operations WHERE operation_id = ?)`)
	st.agentItems = p(rdb, `SELECT doc FROM agent_operation_items WHERE operation_id = ? ORDER BY seq LIMIT ?`)
	st.agentRunning = p(rdb, `SELECT doc FROM agent_operations WHERE status = 'running'
  ORDER BY started_at DESC, operation_id DESC`)

	// An item's revisions are a list from items.rev_head through item_revisions.prev (schemaV6),
	// numbers strictly decreasing along it: each walk requires that, so none can loop. A list
	// page walks down to the first revision below the cursor (?3) and stops once it has one
	// more than the page (?4) holds; the walk carries the documents, one read of each row.
	st.revisionList = p(rdb, `WITH RECURSIVE chain(rid, n, prev, below, doc) AS (
    SELECT r.rid, r.n, r.prev, r.n < ?3, r.doc FROM items i JOIN item_revisions r ON r.rid = i.rev_head
    WHERE i.dataset_name = ?1 AND i.id = ?2
  UNION ALL
    SELECT r.rid, r.n, r.prev, c.below + (r.n < ?3), r.doc FROM chain c JOIN item_revisions r ON r.rid = c.prev
    WHERE c.below < ?4 AND r.n < c.n)
  SELECT rid, doc FROM chain WHERE n < ?3 ORDER BY n DESC LIMIT ?4`)
	// The page after a cursor that names its revision's rowid (?3) walks on from there: the
	// first row is that revision itself (no document), if it is still the item's number ?4.
	st.revisionListAfter = p(rdb, `WITH RECURSIVE chain(rid, n, prev, k, doc) AS (
    SELECT rid, n, prev, 0, NULL FROM item_revisions WHERE rid = ?3 AND dataset_name = ?1 AND id = ?2 AND n = ?4
  UNION ALL
    SELECT r.rid, r.n, r.prev, c.k + 1, r.doc FROM chain c JOIN item_revisions r ON r.rid = c.prev
    WHERE c.k < ?5 AND r.n < c.n)
  SELECT rid, doc FROM chain ORDER BY k`)
	st.revisionGet = p(rdb, `WITH RECURSIVE chain(rid, n, prev) AS (
    SELECT r.rid, r.n, r.prev FROM items i JOIN item_revisions r ON r.rid = i.rev_head
    WHERE i.dataset_name = ?1 AND i.id = ?2
  UNION ALL
    SELECT r.rid, r.n, r.prev FROM chain c JOIN item_revisions r ON r.rid = c.prev
    WHERE c.n > ?3 AND r.n < c.n)
  SELECT r.doc FROM chain c JOIN item_revisions r ON r.rid = c.rid WHERE c.n = ?3`)

	// Every store operation runs in a savepoint of its own (or is the whole transaction), and
	// any error undoes it whole. So the writes that may fail a constraint say OR FAIL: SQLite
	// then gives them no statement journal, the copy of every page a statement changes that
	// it keeps to undo that statement alone (a sixth of an import's item inserts).
	st.savepoint = p(wdb, `SAVEPOINT op`)
	st.release = p(wdb, `RELEASE op`)
	st.rollbackTo = p(wdb, `ROLLBACK TO op`)
	st.keyOf = p(wdb, `SELECT bucket FROM items WHERE dataset_name = ? AND id = ?`)
	// An existing (dataset_name, id) inserts nothing and returns no row; the caller then reads
	// the existing item's bucket for the conflict.
	st.insertItem = p(wdb, `INSERT OR FAIL INTO items (id, dataset_name, bucket, `+itemColumns+`, rev_head)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
  ON CONFLICT (dataset_name, id) DO NOTHING RETURNING pk`)
	st.currentOf = p(wdb, `SELECT `+currentColumns+` FROM items WHERE dataset_name = ? AND id = ?`)
	st.currentOfEach = p(wdb, currentOfEachSQL)
	for mask := range updateVariants {
		st.update[mask] = p(wdb, updateSQL(mask))
	}
	// One statement for the tag rows of any number of items of one dataset and status: they
	// travel as one JSON object (tagRows).
	st.insertTags = p(wdb, `INSERT OR FAIL INTO item_tags (tag, dataset_name, status, item_pk)
  SELECT t.value, ?, ?, CAST(i.key AS INTEGER) FROM json_each(?) AS i, json_each(i.value) AS t`)
	st.deleteTags = p(wdb, deleteTagsSQL)
	st.deleteTagsOf = p(wdb, `DELETE FROM item_tags WHERE item_pk = ?`)
	st.deleteItems = p(wdb, `DELETE FROM items WHERE dataset_name = ?`)
	// The rowids and numbers of the list that starts at a revision, oldest first.
	st.revisionChain = p(wdb, `WITH RECURSIVE chain(rid, n, prev) AS (
    SELECT rid, n, prev FROM item_revisions WHERE rid = ?
  UNION ALL
    SELECT r.rid, r.n, r.prev FROM chain c JOIN item_revisions r ON r.rid = c.prev WHERE r.n < c.n)
  SELECT rid, n FROM chain ORDER BY n`)
	// The documents of the revisions whose rowids travel as one JSON array, oldest first.
	st.revisionDocs = p(wdb, `SELECT doc FROM item_revisions WHERE rid IN (SELECT value FROM json_each(?)) ORDER BY n`)
	st.revisionMaxRID = p(wdb, `SELECT coalesce(max(rid), 0) FROM item_revisions`)
	st.revisionDelete = p(wdb, `DELETE FROM item_revisions WHERE rid = ?`)
	// The oldest kept revision carries the item and ends the list.
	st.revisionRebase = p(wdb, `UPDATE item_revisions SET doc = ?, prev = NULL WHERE rid = ?`)
	st.revisionInsert = p(wdb, `INSERT OR FAIL INTO item_revisions (rid, dataset_name, id, n, prev, doc) VALUES (?, ?, ?, ?, ?, ?)`)
	st.deleteRevisionsOf = p(wdb, `DELETE FROM item_revisions WHERE rid IN (
  WITH RECURSIVE chain(rid, n, prev) AS (
      SELECT r.rid, r.n, r.prev FROM items i JOIN item_revisions r ON r.rid = i.rev_head WHERE i.dataset_name = ?
    UNION ALL
      SELECT r.rid, r.n, r.prev FROM chain c JOIN item_revisions r ON r.rid = c.prev WHERE r.n < c.n)
  SELECT rid FROM chain)`)
	st.deleteCuration = p(wdb, `DELETE FROM curation_instructions WHERE dataset_name = ?`)
	st.curationETag = p(wdb, `SELECT etag FROM curation_instructions WHERE dataset_name = ?`)
	st.curationInsert = p(wdb, `INSERT INTO curation_instructions (dataset_name, etag, doc) VALUES (?, ?, ?)`)
	st.curationUpdate = p(wdb, `UPDATE curation_instructions SET etag = ?, doc = ? WHERE dataset_name = ? AND etag = ?`)
	st.storeTagInsert = p(wdb, `INSERT OR IGNORE INTO tag_store (tag) VALUES (?)`)
	st.storeTagDelete = p(wdb, `DELETE FROM tag_store WHERE tag = ?`)
	st.storeTagsInTx = p(wdb, `SELECT tag FROM tag_store ORDER BY tag`)
	st.definitionCreated = p(wdb, `SELECT created_by, created_at FROM tag_definitions WHERE tag_key = ?`)
	st.definitionInsert = p(wdb, `INSERT INTO tag_definitions (`+definitionColumns+`) VALUES (?, ?, ?, ?, ?, ?)`)
	st.definitionUpdate = p(wdb, `UPDATE tag_definitions SET description = ?, updated_at = ?, etag = ? WHERE tag_key = ?`)
	st.definitionDelete = p(wdb, `DELETE FROM tag_definitions WHERE tag_key = ?`)
	st.rawInsert = p(wdb, `INSERT INTO raw_items (dataset_name, id, bucket, etag, doc) VALUES (?, ?, ?, ?, ?)`)
	st.rawTake = p(wdb, `DELETE FROM raw_items WHERE dataset_name = ? AND id = ? AND bucket = ? AND etag = ?`)
	st.rawHeld = p(wdb, `SELECT EXISTS (SELECT 1 FROM raw_items WHERE dataset_name = ? AND id = ? AND bucket = ?)`)
	st.itemRow = p(wdb, `SELECT pk, bucket, etag, index_v, doc, rev_head FROM items WHERE dataset_name = ? AND id = ?`)
	st.tagsOf = p(wdb, `SELECT tag FROM item_tags WHERE item_pk = ?`)
	st.deleteItem = p(wdb, `DELETE FROM items WHERE pk = ?`)
	st.markerPut = p(wdb, `INSERT INTO meta (key, value) VALUES ('`+markerKey+`', ?)
  ON CONFLICT (key) DO UPDATE SET value = excluded.value`)
	st.agentOpInsert = p(wdb, `INSERT INTO agent_operations (operation_id, started_at, status, actor, doc) VALUES (?, ?, ?, ?, ?)`)
	st.agentTagInsert = p(wdb, `INSERT OR IGNORE INTO agent_operation_tags (tag, started_at, operation_id) VALUES (?, ?, ?)`)
	st.agentOpHeld = p(wdb, `SELECT EXISTS (SELECT 1 FROM agent_operations WHERE operation_id = ?)`)
	st.agentOpDoc = p(wdb, `SELECT doc FROM agent_operations WHERE operation_id = ?`)
	st.agentOpUpdate = p(wdb, `UPDATE agent_operations SET status = ?, doc = ? WHERE operation_id = ?`)
	st.agentItemsEnd = p(wdb, `SELECT coalesce(max(seq) + 1, 0) FROM agent_operation_items WHERE operation_id = ?`)
	st.agentItemPut = p(wdb, `INSERT INTO agent_operation_items (operation_id, seq, doc) VALUES (?, ?, ?)
  ON CONFLICT (operation_id, seq) DO UPDATE SET doc = excluded.doc`)
	st.agentOpsDelete = p(wdb, `DELETE FROM agent_operations WHERE operation_id IN (
  SELECT operation_id FROM agent_operations WHERE started_at < ? AND status <> 'running' LIMIT ?)`)
	if err != nil {
		st.close()
	}
	return err
}

// close releases the prepared statements; closing the pools afterwards reports any real
// problem, so errors here are not interesting.
func (st *statements) close() {
	for _, s := range st.all {
		_ = s.Close()
	}
	st.all = nil
}

// Replace sets only the indexed columns that change, because SQLite rewrites the entries of
// every index on a column named in SET, changed or not. The unindexed columns are always
// set; the indexed ones form five groups, so 32 prepared variants cover every case. The
// sort keys that move with updatedAt form one group: every edit changes them, while tag
// maintenance (recompute) leaves them alone and so touches none of their indexes.
const (
	changesStatus     = 1 << iota // status
	changesAssignment             // assigned_to, sk_assigned
	changesTagCount               // sk_tag_count
	changesReferences             // sk_references
	changesEdit                   // sk_reviewed, sk_updated, sk_has_answer, sk_recent

	updateVariants = 1 << 5
)

// alwaysSet are the columns every Replace writes.
var alwaysSet = []string{"etag", "index_v", "ref_urls", "search_text", "doc", "rev_head"}

func updateColumns(mask int) []string {
	cols := slices.Clone(alwaysSet)
	if mask&changesEdit != 0 {
		cols = append(cols, "sk_reviewed", "sk_updated", "sk_has_answer", "sk_recent")
	}
	if mask&changesStatus != 0 {
		cols = append(cols, "status")
	}
	if mask&changesAssignment != 0 {
		cols = append(cols, "assigned_to", "sk_assigned")
	}
	if mask&changesTagCount != 0 {
		cols = append(cols, "sk_tag_count")
	}
	if mask&changesReferences != 0 {
		cols = append(cols, "sk_references")
	}
	return cols
}

// updateSQL is the conditional write of one variant: it matches only while the stored ETag
// is the one the caller read.
func updateSQL(mask int) string {
	cols := updateColumns(mask)
	return "UPDATE OR FAIL items SET (" + strings.Join(cols, ", ") + ") = (" + placeholders(len(cols)) + ")" +
		" WHERE dataset_name = ? AND id = ? AND bucket = ? AND etag = ?"
}
