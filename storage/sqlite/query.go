package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"
	"sync"

	gtc "github.com/gtc-dev/gtc"
)

// sortColumns maps each ordering to its sort-key column. Every key ends with the
// id; pk, appended to every ORDER BY, makes the order total even across datasets that share
// an id, so pages never overlap.
var sortColumns = map[gtc.SortKey]string{
	gtc.SortReviewedAt: "sk_reviewed",
	gtc.SortUpdatedAt:  "sk_updated",
	gtc.SortID:         "id",
	gtc.SortHasAnswer:  "sk_has_answer",
	gtc.SortTagCount:   "sk_tag_count",
	gtc.SortReferences: "sk_references",
	gtc.SortAssignedAt: "sk_assigned",
	gtc.SortRecent:     "sk_recent",
}

// queryAllPage is the page size QueryAll reads with.
const queryAllPage = 500

// queryAllBytes bounds the documents of one QueryAll page: a page ends with the item whose
// document reaches this many bytes in total (a page has at least one item). Small items
// come queryAllPage at a time; items of a megabyte a few at a time, so what a page holds in
// memory does not grow with the size of the items.
const queryAllBytes = 8 << 20

// sqlText is one statement with its arguments.
type sqlText struct {
	SQL  string
	Args []any
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// conds collects SQL conditions with their arguments, in order.
type conds struct {
	sql  []string
	args []any
}

func (c *conds) add(cond string, args ...any) {
	c.sql = append(c.sql, cond)
	c.args = append(c.args, args...)
}

func (c *conds) where() string {
	if len(c.sql) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(c.sql, " AND ")
}

// keyConds adds the status, dataset and prefix filters on the columns of table alias t
// ("" for items): item_tags carries copies of both columns.
func keyConds(c *conds, f gtc.Filter, t string) error {
	if len(f.Statuses) > 0 {
		sts := dedupeStatuses(f.Statuses)
		args := make([]any, len(sts))
		for i, st := range sts {
			if !st.Valid() {
				return fmt.Errorf("%w: unknown status %q", gtc.ErrInvalidArgument, st)
			}
			args[i] = string(st)
		}
		if len(sts) == 1 {
			c.add(t+"status = ?", args...)
		} else {
			c.add(t+"status IN ("+placeholders(len(sts))+")", args...)
		}
	}
	if len(f.DatasetNames) > 0 {
		names := dedupe(f.DatasetNames)
		args := make([]any, len(names))
		for i, n := range names {
			args[i] = n
		}
		if len(names) == 1 {
			c.add(t+"dataset_name = ?", args...)
		} else {
			c.add(t+"dataset_name IN ("+placeholders(len(names))+")", args...)
		}
	}
	if p := f.DatasetPrefix; p != "" {
		// The range lets an index on dataset_name find the prefix; 0xFF never occurs in
		// UTF-8, so every name starting with p sorts below p+"\xff". substr is the rule itself.
		col := t + "dataset_name"
		c.add(col+" >= ? AND "+col+" < ? AND substr("+col+", 1, length(?)) = ?", p, p+"\xff", p, p)
	}
	return nil
}

// itemConds adds the filters on columns only items has.
func itemConds(c *conds, f gtc.Filter) {
	if f.IDContains != "" {
		c.add("instr(items.id, ?) > 0", f.IDContains)
	}
	if f.Keyword != "" {
		if strings.Contains(f.Keyword, "\x1f") {
			c.add("0") // it would match across two fields
		} else {
			c.add("instr(items.search_text, ?) > 0", f.Keyword)
		}
	}
	for _, u := range dedupe(f.RefURLContains) {
		switch {
		case u == "":
			c.add("items.ref_urls <> ''") // a substring of any URL, if there is one
		case strings.Contains(u, "\x1f"):
			c.add("0")
		default:
			c.add("instr(items.ref_urls, ?) > 0", u)
		}
	}
	if f.AssignedTo != nil {
		if *f.AssignedTo == "" {
			c.add("items.assigned_to IS NULL")
		} else {
			c.add("items.assigned_to = ?", *f.AssignedTo)
		}
	}
}

// whereClause renders a filter on items as " WHERE …" (or "") with its arguments.
func whereClause(f gtc.Filter) (string, []any, error) {
	var c conds
	if err := keyConds(&c, f, ""); err != nil {
		return "", nil, err
	}
	for _, t := range dedupe(f.AllTags) {
		c.add("EXISTS (SELECT 1 FROM item_tags t WHERE t.item_pk = items.pk AND t.tag = ?)", t)
	}
	for _, t := range dedupe(f.NoneOfTags) {
		c.add("NOT EXISTS (SELECT 1 FROM item_tags t WHERE t.item_pk = items.pk AND t.tag = ?)", t)
	}
	itemConds(&c, f)
	return c.where(), c.args, nil
}

// tagDrivenConds renders the filters of f that item_tags t0, the range of the first
// required tag, can test alone: dataset, status and the other tags.
func tagDrivenConds(f gtc.Filter, tags []string) (conds, error) {
	var c conds
	c.add("t0.tag = ?", tags[0])
	if err := keyConds(&c, f, "t0."); err != nil {
		return conds{}, err
	}
	for _, t := range tags[1:] {
		c.add("EXISTS (SELECT 1 FROM item_tags t WHERE t.tag = ? AND t.dataset_name = t0.dataset_name AND t.status = t0.status AND t.item_pk = t0.item_pk)", t)
	}
	for _, t := range dedupe(f.NoneOfTags) {
		c.add("NOT EXISTS (SELECT 1 FROM item_tags t WHERE t.item_pk = t0.item_pk AND t.tag = ?)", t)
	}
	return c, nil
}

// countSQL counts the matches of f. With a required tag, the count starts from that tag's
// range of item_tags, where dataset and status are part of the key, and visits items only
// for filters on other columns; a tag filter thus costs what it matches, not what the
// dataset and status filters leave.
func countSQL(f gtc.Filter) (sqlText, error) {
	tags := dedupe(f.AllTags)
	if len(tags) == 0 {
		where, args, err := whereClause(f)
		if err != nil {
			return sqlText{}, err
		}
		return sqlText{SQL: "SELECT count(*) FROM items" + where, Args: args}, nil
	}
	c, err := tagDrivenConds(f, tags)
	if err != nil {
		return sqlText{}, err
	}
	from := " FROM item_tags t0"
	n := len(c.sql)
	itemConds(&c, f)
	if len(c.sql) > n {
		// CROSS JOIN keeps item_tags the outer loop.
		from += " CROSS JOIN items ON items.pk = t0.item_pk"
	}
	return sqlText{SQL: "SELECT count(*)" + from + c.where(), Args: c.args}, nil
}

func dedupe(ss []string) []string {
	if len(ss) < 2 {
		return ss
	}
	return slices.Compact(slices.Sorted(slices.Values(ss)))
}

// orderBy renders the ORDER BY of a sort on items (t is "" or "items.").
func orderBy(k gtc.SortKey, desc bool, t string) string {
	col := t + sortColumns[k]
	if desc {
		return " ORDER BY " + col + " DESC, " + t + "pk DESC"
	}
	return " ORDER BY " + col + ", " + t + "pk"
}

// orderIndex names the index that yields q's order directly, with the equality filters of q
// as its leading columns where one exists, or "" when every index would need a sort.
func orderIndex(q gtc.Query) string {
	f := q.Filter
	oneStatus := len(dedupeStatuses(f.Statuses)) == 1
	oneDataset := len(dedupe(f.DatasetNames)) == 1
	switch q.Sort {
	case gtc.SortReviewedAt:
		switch {
		case oneDataset && oneStatus:
			return "items_dataset_status_reviewed"
		case oneStatus:
			return "items_status_reviewed"
		}
		return "items_sk_reviewed"
	case gtc.SortUpdatedAt:
		return "items_sk_updated"
	case gtc.SortHasAnswer:
		return "items_sk_has_answer"
	case gtc.SortTagCount:
		return "items_sk_tag_count"
	case gtc.SortReferences:
		return "items_sk_references"
	case gtc.SortID:
		switch {
		case oneDataset && oneStatus:
			return "items_status_dataset_id"
		case oneDataset:
			return "sqlite_autoindex_items_1" // UNIQUE (dataset_name, id)
		}
	case gtc.SortAssignedAt:
		if f.AssignedTo != nil && *f.AssignedTo != "" && oneStatus {
			return "items_assigned"
		}
	case gtc.SortRecent:
		if oneDataset {
			return "items_dataset_recent"
		}
	}
	return ""
}

func dedupeStatuses(sts []gtc.Status) []gtc.Status {
	if len(sts) < 2 {
		return sts
	}
	return slices.Compact(slices.Sorted(slices.Values(sts)))
}

// walkFactor weighs a step of an ordered index walk that tests the filter on the index
// entry alone (plus tag probes) against a step of the filter-first plan (a row read for its
// sort key, then a sort). A walk that must read each row to test the filter costs about
// what a filter-first step costs.
const walkFactor = 4

// walkReadsRows reports whether walking idx must read each item row to test q's filter.
func walkReadsRows(q gtc.Query, idx string) bool {
	f := q.Filter
	if f.IDContains != "" || f.Keyword != "" || len(f.RefURLContains) > 0 {
		return true
	}
	var hasStatus, hasDataset, hasAssigned bool
	switch idx {
	case "items_dataset_status_reviewed", "items_status_dataset_id":
		hasStatus, hasDataset = true, true
	case "items_status_reviewed":
		hasStatus = true
	case "sqlite_autoindex_items_1", "items_dataset_recent":
		hasDataset = true
	case "items_assigned":
		hasStatus, hasAssigned = true, true
	}
	return len(f.Statuses) > 0 && !hasStatus ||
		(len(f.DatasetNames) > 0 || f.DatasetPrefix != "") && !hasDataset ||
		f.AssignedTo != nil && !hasAssigned
}

// pagePlans are the two ways to select the primary keys of a page (see choosePlan).
type pagePlans struct {
	walk        *sqlText // nil when no index yields the order
	filterFirst sqlText
}

// pageStatements returns both page plans of q.
func pageStatements(q gtc.Query) (pagePlans, error) {
	if err := q.Validate(); err != nil {
		return pagePlans{}, err
	}
	const tail = " LIMIT ? OFFSET ?"
	where, args, err := whereClause(q.Filter)
	if err != nil {
		return pagePlans{}, err
	}
	var p pagePlans
	if idx := orderIndex(q); idx != "" {
		p.walk = &sqlText{
			SQL:  "SELECT pk FROM items INDEXED BY " + idx + where + orderBy(q.Sort, q.Desc, "") + tail,
			Args: append(slices.Clip(args), q.Limit, q.Offset),
		}
	}
	tags := dedupe(q.Filter.AllTags)
	if len(tags) == 0 {
		p.filterFirst = sqlText{
			SQL:  "SELECT pk FROM items" + where + orderBy(q.Sort, q.Desc, "") + tail,
			Args: append(slices.Clip(args), q.Limit, q.Offset),
		}
		return p, nil
	}
	// With a required tag the matches come straight from item_tags, where dataset and status
	// are part of the key; CROSS JOIN keeps item_tags the outer loop.
	c, err := tagDrivenConds(q.Filter, tags)
	if err != nil {
		return pagePlans{}, err
	}
	itemConds(&c, q.Filter)
	p.filterFirst = sqlText{
		SQL: "SELECT items.pk FROM item_tags t0 CROSS JOIN items ON items.pk = t0.item_pk" +
			c.where() + orderBy(q.Sort, q.Desc, "items.") + tail,
		Args: append(c.args, q.Limit, q.Offset),
	}
	return p, nil
}

// choosePlan picks the page plan of q, given the exact number of matches and an estimate
// of the number of items.
//
// SQLite's planner, without statistics that describe the data, always prefers an index on
// an equality filter followed by a sort, which reads every candidate. So the store chooses
// itself between
//
//   - walking an index that yields the order (orderIndex), testing each entry against the
//     filter, and stopping after offset+limit matches: with matches spread evenly that
//     reads about (offset+limit)·items/matches entries;
//   - starting from the filter, which reads at least every match, and sorting.
//
// It walks when that reads fewer entries, counting a walk step that needs no row read as
// 1/walkFactor of a filter-first step.
func choosePlan(q gtc.Query, p pagePlans, matches, items int) sqlText {
	if p.walk == nil || matches == 0 {
		return p.filterFirst
	}
	factor := float64(walkFactor)
	if walkReadsRows(q, orderIndex(q)) {
		factor = 1
	}
	if float64(q.Offset+q.Limit)*float64(items)/float64(matches) <= factor*float64(matches) {
		return *p.walk
	}
	return p.filterFirst
}

// stmtCache keeps prepared reader statements by SQL text. The filters produce a bounded
// family of shapes; past the cap, statements are simply not cached.
type stmtCache struct {
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

const stmtCacheCap = 512

// readStmt returns the prepared reader statement of query. The caller closes it when
// cached is false. It must not be called while holding a reader connection: preparing
// takes one, and the :memory: pool has only one.
func (s *Store) readStmt(ctx context.Context, query string) (st *sql.Stmt, cached bool, err error) {
	s.cache.mu.Lock()
	st, ok := s.cache.m[query]
	s.cache.mu.Unlock()
	if ok {
		return st, true, nil
	}
	st, err = s.rdb.PrepareContext(ctx, query)
	if err != nil {
		return nil, false, err
	}
	s.cache.mu.Lock()
	defer s.cache.mu.Unlock()
	if prev, ok := s.cache.m[query]; ok {
		_ = st.Close()
		return prev, true, nil
	}
	if s.cache.m == nil {
		s.cache.m = make(map[string]*sql.Stmt)
	}
	if len(s.cache.m) >= stmtCacheCap {
		return st, false, nil
	}
	s.cache.m[query] = st
	return st, true, nil
}

func (s *Store) closeStmtCache() {
	s.cache.mu.Lock()
	defer s.cache.mu.Unlock()
	for _, st := range s.cache.m {
		_ = st.Close()
	}
	s.cache.m = nil
}

// stmtSet holds the statements of one read transaction, prepared before it begins.
type stmtSet struct {
	m     map[string]*sql.Stmt
	owned []*sql.Stmt
}

func (s *Store) prepareSet(ctx context.Context, qs ...*sqlText) (*stmtSet, error) {
	set := &stmtSet{m: make(map[string]*sql.Stmt, len(qs))}
	for _, q := range qs {
		if q == nil || set.m[q.SQL] != nil {
			continue
		}
		st, cached, err := s.readStmt(ctx, q.SQL)
		if err != nil {
			set.close()
			return nil, err
		}
		if !cached {
			set.owned = append(set.owned, st)
		}
		set.m[q.SQL] = st
	}
	return set, nil
}

func (set *stmtSet) close() {
	for _, st := range set.owned {
		_ = st.Close()
	}
}

// query runs q, which must be in the set, inside tx.
func (set *stmtSet) query(ctx context.Context, tx *sql.Tx, q sqlText) (*sql.Rows, error) {
	return tx.StmtContext(ctx, set.m[q.SQL]).QueryContext(ctx, q.Args...)
}

// readPKs reads a single column of primary keys, plus an optional sort key.
func readPKs(rows *sql.Rows, withKey bool) ([]int64, []string, error) {
	defer rows.Close()
	var pks []int64
	var keys []string
	for rows.Next() {
		var pk int64
		var key string
		var err error
		if withKey {
			err = rows.Scan(&pk, &key)
		} else {
			err = rows.Scan(&pk)
		}
		if err != nil {
			return nil, nil, err
		}
		pks = append(pks, pk)
		keys = append(keys, key)
	}
	return pks, keys, rows.Err()
}

type rawDoc struct {
	etag string
	doc  []byte
}

// docsByPK reads the documents of pks inside tx; the caller decodes them after the read
// transaction has ended.
func (s *Store) docsByPK(ctx context.Context, tx *sql.Tx, pks []int64) (map[int64]rawDoc, error) {
	if len(pks) == 0 {
		return nil, nil
	}
	var b strings.Builder
	b.WriteByte('[')
	for i, pk := range pks {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(pk, 10))
	}
	b.WriteByte(']')
	rows, err := tx.StmtContext(ctx, s.stmts.docsByPK).QueryContext(ctx, b.String())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make(map[int64]rawDoc, len(pks))
	for rows.Next() {
		var pk int64
		var d rawDoc
		if err := rows.Scan(&pk, &d.etag, &d.doc); err != nil {
			return nil, err
		}
		out[pk] = d
	}
	return out, rows.Err()
}

func decodeInOrder(pks []int64, docs map[int64]rawDoc) ([]*gtc.Item, error) {
	items := make([]*gtc.Item, 0, len(pks))
	for _, pk := range pks {
		d, ok := docs[pk]
		if !ok {
			continue // cannot happen inside one read transaction
		}
		it, err := decodeItem(d.doc, d.etag)
		if err != nil {
			return nil, err
		}
		items = append(items, it)
	}
	return items, nil
}

func (s *Store) beginRead(ctx context.Context) (*sql.Tx, error) {
	return s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
}

// Query returns one page in q.Sort order and the exact number of matches, both read in one
// read transaction. The count comes first and steers the page's plan (choosePlan). The page
// is chosen on (sort key, pk) alone, so a sort never carries the documents; they are
// fetched by primary key afterwards.
func (is *itemStore) Query(ctx context.Context, q gtc.Query) (gtc.QueryPage, error) {
	s := is.s
	if s.closed.Load() {
		return gtc.QueryPage{}, errClosed("query")
	}
	count, plans, err := queryStatements(q)
	if err != nil {
		return gtc.QueryPage{}, fmt.Errorf("sqlite: query: %w", err)
	}
	set, err := s.prepareSet(ctx, &count, plans.walk, &plans.filterFirst)
	if err != nil {
		return gtc.QueryPage{}, wrapErr("query", err)
	}
	defer set.close()
	tx, err := s.beginRead(ctx)
	if err != nil {
		return gtc.QueryPage{}, wrapErr("query", err)
	}
	defer func() { _ = tx.Rollback() }()
	page, total, err := s.planQuery(ctx, tx, set, q, count, plans)
	if err != nil {
		return gtc.QueryPage{}, err
	}
	var pks []int64
	if q.Offset < total {
		rows, err := set.query(ctx, tx, page)
		if err != nil {
			return gtc.QueryPage{}, wrapErr("query", err)
		}
		if pks, _, err = readPKs(rows, false); err != nil {
			return gtc.QueryPage{}, wrapErr("query", err)
		}
	}
	docs, err := s.docsByPK(ctx, tx, pks)
	if err != nil {
		return gtc.QueryPage{}, wrapErr("query", err)
	}
	if err := tx.Commit(); err != nil {
		return gtc.QueryPage{}, wrapErr("query", err)
	}
	items, err := decodeInOrder(pks, docs)
	if err != nil {
		return gtc.QueryPage{}, err
	}
	if items == nil {
		items = []*gtc.Item{}
	}
	return gtc.QueryPage{Items: items, Total: total}, nil
}

// queryStatements returns the count and both page plans of q.
func queryStatements(q gtc.Query) (sqlText, pagePlans, error) {
	plans, err := pageStatements(q)
	if err != nil {
		return sqlText{}, pagePlans{}, err
	}
	count, err := countSQL(q.Filter)
	if err != nil {
		return sqlText{}, pagePlans{}, err
	}
	return count, plans, nil
}

// planQuery counts the matches of q inside tx and picks the page statement Query runs
// next.
func (s *Store) planQuery(ctx context.Context, tx *sql.Tx, set *stmtSet, q gtc.Query, count sqlText, plans pagePlans) (sqlText, int, error) {
	var total, items int
	rows, err := set.query(ctx, tx, count)
	if err != nil {
		return sqlText{}, 0, wrapErr("query count", err)
	}
	if err := scanOne(rows, &total); err != nil {
		return sqlText{}, 0, wrapErr("query count", err)
	}
	// pk only grows, so max(pk) bounds the number of items; one index seek.
	if err := tx.StmtContext(ctx, s.stmts.maxPK).QueryRowContext(ctx).Scan(&items); err != nil {
		return sqlText{}, 0, wrapErr("query", err)
	}
	return choosePlan(q, plans, total, items), total, nil
}

func scanOne(rows *sql.Rows, dst any) error {
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return err
		}
		return sql.ErrNoRows
	}
	if err := rows.Scan(dst); err != nil {
		return err
	}
	return rows.Close()
}

// queryAllSQL returns the keyset statement of one QueryAll page: after (key, pk) when
// afterPK > 0. Each row carries the byte length of its document, which SQLite reads from the
// row header without loading the document.
func queryAllSQL(where string, args []any, k gtc.SortKey, desc bool, afterKey string, afterPK int64) sqlText {
	col := sortColumns[k]
	args = slices.Clip(args)
	if afterPK > 0 {
		op := ">"
		if desc {
			op = "<"
		}
		if where == "" {
			where = " WHERE "
		} else {
			where += " AND "
		}
		where += "(" + col + ", pk) " + op + " (?, ?)"
		args = append(args, afterKey, afterPK)
	}
	return sqlText{
		SQL:  "SELECT pk, " + col + ", octet_length(doc) FROM items" + where + orderBy(k, desc, "") + " LIMIT ?",
		Args: append(args, queryAllPage),
	}
}

// QueryAll streams every match in q.Sort order. It reads keyset pages, each in its own short
// read transaction, and holds no connection while the consumer runs. A page holds at most
// queryAllPage items and, beyond its first item, at most queryAllBytes of documents.
func (is *itemStore) QueryAll(ctx context.Context, q gtc.Query) iter.Seq2[*gtc.Item, error] {
	return func(yield func(*gtc.Item, error) bool) {
		s := is.s
		check := q
		check.Offset, check.Limit = 0, 1
		if err := check.Validate(); err != nil {
			yield(nil, fmt.Errorf("sqlite: query all: %w", err))
			return
		}
		where, args, err := whereClause(q.Filter)
		if err != nil {
			yield(nil, fmt.Errorf("sqlite: query all: %w", err))
			return
		}
		var afterKey string
		var afterPK int64
		for {
			if s.closed.Load() {
				yield(nil, errClosed("query all"))
				return
			}
			p, err := is.queryAllPage(ctx, queryAllSQL(where, args, q.Sort, q.Desc, afterKey, afterPK), is.pageBytes)
			if err != nil {
				yield(nil, err)
				return
			}
			for _, it := range p.items {
				if !yield(it, nil) {
					return
				}
			}
			if !p.more {
				return
			}
			afterKey, afterPK = p.lastKey, p.lastPK
		}
	}
}

// allPage is one page of QueryAll: its items, where the next page starts, and whether
// there may be one.
type allPage struct {
	items   []*gtc.Item
	lastKey string
	lastPK  int64
	more    bool
}

func (is *itemStore) queryAllPage(ctx context.Context, q sqlText, budget int64) (allPage, error) {
	s := is.s
	set, err := s.prepareSet(ctx, &q)
	if err != nil {
		return allPage{}, wrapErr("query all", err)
	}
	defer set.close()
	tx, err := s.beginRead(ctx)
	if err != nil {
		return allPage{}, wrapErr("query all", err)
	}
	defer func() { _ = tx.Rollback() }()
	rows, err := set.query(ctx, tx, q)
	if err != nil {
		return allPage{}, wrapErr("query all", err)
	}
	pks, keys, more, err := readBoundedPage(rows, budget)
	if err != nil {
		return allPage{}, wrapErr("query all", err)
	}
	docs, err := s.docsByPK(ctx, tx, pks)
	if err != nil {
		return allPage{}, wrapErr("query all", err)
	}
	if err := tx.Commit(); err != nil {
		return allPage{}, wrapErr("query all", err)
	}
	items, err := decodeInOrder(pks, docs)
	if err != nil {
		return allPage{}, err
	}
	if len(pks) == 0 {
		return allPage{items: items}, nil
	}
	return allPage{items: items, lastKey: keys[len(keys)-1], lastPK: pks[len(pks)-1], more: more}, nil
}

// readBoundedPage reads the (pk, sort key, document bytes) rows of a QueryAll page up to
// the row whose documents reach budget bytes in total. more reports that rows may follow:
// the page was cut short, or it was full.
func readBoundedPage(rows *sql.Rows, budget int64) (pks []int64, keys []string, more bool, err error) {
	defer rows.Close()
	var total int64
	for rows.Next() {
		var pk, size int64
		var key string
		if err := rows.Scan(&pk, &key, &size); err != nil {
			return nil, nil, false, err
		}
		pks = append(pks, pk)
		keys = append(keys, key)
		if total += size; total >= budget {
			return pks, keys, true, rows.Close()
		}
	}
	return pks, keys, len(pks) == queryAllPage, rows.Err()
}

// Count returns the exact number of matches.
func (is *itemStore) Count(ctx context.Context, f gtc.Filter) (int, error) {
	s := is.s
	if s.closed.Load() {
		return 0, errClosed("count")
	}
	q, err := countSQL(f)
	if err != nil {
		return 0, fmt.Errorf("sqlite: count: %w", err)
	}
	st, cached, err := s.readStmt(ctx, q.SQL)
	if err != nil {
		return 0, wrapErr("count", err)
	}
	if !cached {
		defer st.Close()
	}
	var n int
	if err := st.QueryRowContext(ctx, q.Args...).Scan(&n); err != nil {
		return 0, wrapErr("count", err)
	}
	return n, nil
}

// querySQL returns the two statements Query would run for q right now: the count and the
// page. The EXPLAIN QUERY PLAN tests plan exactly these.
func (s *Store) querySQL(ctx context.Context, q gtc.Query) (page, count sqlText, err error) {
	count, plans, err := queryStatements(q)
	if err != nil {
		return sqlText{}, sqlText{}, err
	}
	set, err := s.prepareSet(ctx, &count, plans.walk, &plans.filterFirst)
	if err != nil {
		return sqlText{}, sqlText{}, err
	}
	defer set.close()
	tx, err := s.beginRead(ctx)
	if err != nil {
		return sqlText{}, sqlText{}, wrapErr("query", err)
	}
	defer func() { _ = tx.Rollback() }()
	page, _, err = s.planQuery(ctx, tx, set, q, count, plans)
	return page, count, err
}
