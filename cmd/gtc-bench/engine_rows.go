package main

import (
	"database/sql"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// engineStmt is one statement the engine side runs, with its arguments.
type engineStmt struct {
	sql  string
	args []any
}

// engineWrite is what one gtc write did to the rows: the statements that do the same.
type engineWrite []engineStmt

// auditTables are the tables besides the items' whose new rows the engine writes too: the
// tag store and the agent's audit log. Their rows are few; each goes with one write.
var auditTables = []string{"tag_store", "agent_operations", "agent_operation_tags", "agent_operation_items"}

// diffWrites reads, from the start store and the store gtc left, the rows gtc wrote, as
// one engineWrite per gtc write: each revision recorded (in order) updates its item's row
// and adds the revision; the first write of an item also applies its tag rows' changes and
// removes the raw (legacy) document it replaced; an item changed without a revision, or
// deleted, is a write of its own. An item's row is written with its final values each time
// and only the columns that differ from the start are set, as gtc sets only the columns
// that change.
func diffWrites(startPath, afterPath string) ([]engineWrite, error) {
	a, err := sql.Open("sqlite", "file:"+startPath+"?mode=ro")
	if err != nil {
		return nil, err
	}
	defer a.Close()
	b, err := sql.Open("sqlite", "file:"+afterPath+"?mode=ro")
	if err != nil {
		return nil, err
	}
	defer b.Close()

	itemCols, err := tableColumns(b, "items")
	if err != nil {
		return nil, err
	}
	startTags, err := pkStrings(a, "SELECT pk, etag FROM items")
	if err != nil {
		return nil, err
	}
	afterTags, err := pkStrings(b, "SELECT pk, etag FROM items")
	if err != nil {
		return nil, err
	}
	// The statements of each changed item, by pk, and the pk of each (dataset, id).
	type itemWrite struct {
		row  engineStmt   // INSERT or UPDATE of the items row
		tags []engineStmt // tag row changes
		raw  []engineStmt // raw documents it replaced
		used bool         // its first write has been emitted
	}
	items := map[int64]*itemWrite{}
	byKey := map[[2]string]int64{}
	var order []int64
	for pk, etag := range afterTags {
		if old, ok := startTags[pk]; ok && old == etag {
			continue
		}
		order = append(order, pk)
	}
	slices.Sort(order)
	for _, pk := range order {
		after, err := selectRow(b, "items", itemCols, "pk", pk)
		if err != nil {
			return nil, err
		}
		w := &itemWrite{}
		if _, existed := startTags[pk]; !existed {
			w.row = insertStmt("items", itemCols, after, "INSERT")
		} else {
			before, err := selectRow(a, "items", itemCols, "pk", pk)
			if err != nil {
				return nil, err
			}
			var set []string
			var args []any
			for i, c := range itemCols {
				if !reflect.DeepEqual(before[i], after[i]) {
					set = append(set, c+" = ?")
					args = append(args, after[i])
				}
			}
			w.row = engineStmt{"UPDATE items SET " + strings.Join(set, ", ") + " WHERE pk = ?", append(args, pk)}
		}
		if w.tags, err = tagChanges(a, b, pk); err != nil {
			return nil, err
		}
		items[pk] = w
		byKey[[2]string{fmt.Sprint(after[slices.Index(itemCols, "dataset_name")]), fmt.Sprint(after[slices.Index(itemCols, "id")])}] = pk
	}

	// Raw documents gtc removed go with the item of their (dataset, id).
	var loose []engineWrite
	rawStart, err := pkKeys(a, "SELECT pk, dataset_name, id FROM raw_items")
	if err != nil {
		return nil, err
	}
	rawAfter, err := pkKeys(b, "SELECT pk, dataset_name, id FROM raw_items")
	if err != nil {
		return nil, err
	}
	for pk, key := range rawStart {
		if _, kept := rawAfter[pk]; kept {
			continue
		}
		del := engineStmt{"DELETE FROM raw_items WHERE pk = ?", []any{pk}}
		if ipk, ok := byKey[key]; ok {
			items[ipk].raw = append(items[ipk].raw, del)
		} else {
			loose = append(loose, engineWrite{del})
		}
	}

	first := func(w *itemWrite) []engineStmt {
		if w.used {
			return []engineStmt{w.row}
		}
		w.used = true
		out := append([]engineStmt{w.row}, w.tags...)
		return append(out, w.raw...)
	}
	var writes []engineWrite
	// One write per revision recorded.
	revCols, err := tableColumns(b, "item_revisions")
	if err != nil {
		return nil, err
	}
	var maxRID int64
	if err := a.QueryRow("SELECT COALESCE(MAX(rid), 0) FROM item_revisions").Scan(&maxRID); err != nil {
		return nil, err
	}
	rows, err := b.Query("SELECT "+strings.Join(revCols, ", ")+" FROM item_revisions WHERE rid > ? ORDER BY rid", maxRID)
	if err != nil {
		return nil, err
	}
	di, ii := slices.Index(revCols, "dataset_name"), slices.Index(revCols, "id")
	for rows.Next() {
		v, err := scanRow(rows, len(revCols))
		if err != nil {
			rows.Close()
			return nil, err
		}
		w := engineWrite{insertStmt("item_revisions", revCols, v, "INSERT")}
		if pk, ok := byKey[[2]string{fmt.Sprint(v[di]), fmt.Sprint(v[ii])}]; ok {
			w = append(first(items[pk]), w...)
		}
		writes = append(writes, w)
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	// Items changed without a revision, then items deleted.
	for _, pk := range order {
		if w := items[pk]; !w.used {
			writes = append(writes, first(w))
		}
	}
	for pk := range startTags {
		if _, ok := afterTags[pk]; !ok {
			writes = append(writes, engineWrite{{"DELETE FROM items WHERE pk = ?", []any{pk}}})
		}
	}
	writes = append(writes, loose...)
	if len(writes) == 0 {
		return nil, nil
	}
	// The new rows of the other tables: each goes with one write, in table order, so a
	// parent row comes before the rows that refer to it.
	k := 0
	for _, t := range auditTables {
		added, err := newRows(a, b, t)
		if err != nil {
			return nil, err
		}
		for _, st := range added {
			writes[k%len(writes)] = append(writes[k%len(writes)], st)
			if t != "agent_operations" && t != "tag_store" {
				k++
			}
		}
	}
	return writes, nil
}

// replayWrites runs writes with batch writes per transaction and returns how many it ran.
// Statements are prepared once, before the first transaction, as gtc's writer prepares its
// own.
func replayWrites(db *sql.DB, writes []engineWrite, batch int) (int, error) {
	prepared := map[string]*sql.Stmt{}
	defer func() {
		for _, st := range prepared {
			st.Close()
		}
	}()
	for _, w := range writes {
		for _, st := range w {
			if _, ok := prepared[st.sql]; !ok {
				p, err := db.Prepare(st.sql)
				if err != nil {
					return 0, fmt.Errorf("%.80s: %w", st.sql, err)
				}
				prepared[st.sql] = p
			}
		}
	}
	for lo := 0; lo < len(writes); lo += batch {
		tx, err := db.Begin()
		if err != nil {
			return lo, err
		}
		for _, w := range writes[lo:min(len(writes), lo+batch)] {
			for _, st := range w {
				if _, err := tx.Stmt(prepared[st.sql]).Exec(st.args...); err != nil {
					_ = tx.Rollback()
					return lo, fmt.Errorf("%.80s: %w", st.sql, err)
				}
			}
		}
		if err := tx.Commit(); err != nil {
			return lo, err
		}
	}
	return len(writes), nil
}

// tagChanges are the tag row deletions and insertions that turn the item pk's tag rows in
// the start store into those gtc left.
func tagChanges(a, b *sql.DB, pk int64) ([]engineStmt, error) {
	const q = "SELECT tag, dataset_name, status FROM item_tags WHERE item_pk = ? ORDER BY tag"
	before, err := stringTriples(a, q, pk)
	if err != nil {
		return nil, err
	}
	after, err := stringTriples(b, q, pk)
	if err != nil {
		return nil, err
	}
	var out []engineStmt
	for t := range before {
		if !after[t] {
			out = append(out, engineStmt{"DELETE FROM item_tags WHERE tag = ? AND dataset_name = ? AND status = ? AND item_pk = ?", []any{t[0], t[1], t[2], pk}})
		}
	}
	for t := range after {
		if !before[t] {
			out = append(out, engineStmt{"INSERT INTO item_tags (tag, dataset_name, status, item_pk) VALUES (?, ?, ?, ?)", []any{t[0], t[1], t[2], pk}})
		}
	}
	return out, nil
}

// newRows are INSERT OR REPLACE statements of the rows of table t that the start store
// does not hold as they are.
func newRows(a, b *sql.DB, t string) ([]engineStmt, error) {
	cols, err := tableColumns(b, t)
	if err != nil {
		return nil, err
	}
	all := func(db *sql.DB) ([][]any, error) {
		rows, err := db.Query("SELECT " + strings.Join(cols, ", ") + " FROM " + t)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var out [][]any
		for rows.Next() {
			v, err := scanRow(rows, len(cols))
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, rows.Err()
	}
	before, err := all(a)
	if err != nil {
		return nil, err
	}
	after, err := all(b)
	if err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(before))
	for _, v := range before {
		seen[fmt.Sprintf("%#v", v)] = true
	}
	var out []engineStmt
	for _, v := range after {
		if !seen[fmt.Sprintf("%#v", v)] {
			out = append(out, insertStmt(t, cols, v, "INSERT OR REPLACE"))
		}
	}
	return out, nil
}

func insertStmt(table string, cols []string, v []any, verb string) engineStmt {
	marks := strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ")
	return engineStmt{verb + " INTO " + table + " (" + strings.Join(cols, ", ") + ") VALUES (" + marks + ")", v}
}

func tableColumns(db *sql.DB, table string) ([]string, error) {
	rows, err := db.Query("SELECT name FROM pragma_table_info(?) ORDER BY cid", table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var cols []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, err
		}
		cols = append(cols, c)
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("no table %s", table)
	}
	return cols, rows.Err()
}

func selectRow(db *sql.DB, table string, cols []string, key string, v any) ([]any, error) {
	rows, err := db.Query("SELECT "+strings.Join(cols, ", ")+" FROM "+table+" WHERE "+key+" = ?", v)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	if !rows.Next() {
		return nil, fmt.Errorf("%s %v: no row", table, v)
	}
	return scanRow(rows, len(cols))
}

func scanRow(rows *sql.Rows, n int) ([]any, error) {
	v := make([]any, n)
	ptrs := make([]any, n)
	for i := range v {
		ptrs[i] = &v[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return nil, err
	}
	for i, x := range v {
		if bs, ok := x.([]byte); ok {
			v[i] = slices.Clone(bs)
		}
	}
	return v, nil
}

func pkStrings(db *sql.DB, q string) (map[int64]string, error) {
	rows, err := db.Query(q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int64]string{}
	for rows.Next() {
		var pk int64
		var s string
		if err := rows.Scan(&pk, &s); err != nil {
			return nil, err
		}
		out[pk] = s
	}
	return out, rows.Err()
}

func pkKeys(db *sql.DB, q string) (map[int64][2]string, error) {
	rows, err := db.Query(q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int64][2]string{}
	for rows.Next() {
		var pk int64
		var d, id string
		if err := rows.Scan(&pk, &d, &id); err != nil {
			return nil, err
		}
		out[pk] = [2]string{d, id}
	}
	return out, rows.Err()
}

func stringTriples(db *sql.DB, q string, args ...any) (map[[3]string]bool, error) {
	rows, err := db.Query(q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[[3]string]bool{}
	for rows.Next() {
		var t [3]string
		if err := rows.Scan(&t[0], &t[1], &t[2]); err != nil {
			return nil, err
		}
		out[t] = true
	}
	return out, rows.Err()
}
