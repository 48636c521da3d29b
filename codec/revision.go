package codec

import (
	"bytes"
	"context"
	stdjson "encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/gtc-dev/gtc"
)

// Revisions are diffs of an item's stored form. A node is one value of a stored document:
// a scalar (its text as stored), an array, or an object whose members keep their order, so
// that undoing a change inside a free-form value (metadata, tool arguments) gives back the
// bytes that were there. The revision key itself is left out of every diff.

type node struct {
	raw   jsontext.Value // a scalar
	kind  jsontext.Kind
	keys  []string // an object's keys, in order
	elems []*node  // an object's values (by keys) or an array's elements
}

// parseNode reads one JSON value into a tree.
func parseNode(b []byte) (*node, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(b), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	n, err := readNode(dec)
	if err != nil {
		return nil, fmt.Errorf("codec: revision: %w", err)
	}
	return n, nil
}

func readNode(dec *jsontext.Decoder) (*node, error) {
	k := dec.PeekKind()
	if k != '{' && k != '[' {
		v, err := dec.ReadValue()
		return &node{kind: k, raw: bytes.Clone(v)}, err
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, err
	}
	n := &node{kind: k}
	for dec.PeekKind() != k+2 {
		if k == '{' {
			t, err := dec.ReadToken()
			if err != nil {
				return nil, err
			}
			n.keys = append(n.keys, t.String())
		}
		c, err := readNode(dec)
		if err != nil {
			return nil, err
		}
		n.elems = append(n.elems, c)
	}
	_, err := dec.ReadToken()
	return n, err
}

// appendNode writes a tree compactly.
func appendNode(b []byte, n *node) []byte {
	if n.kind != '{' && n.kind != '[' {
		return append(b, n.raw...)
	}
	b = append(b, byte(n.kind))
	for i, c := range n.elems {
		if i > 0 {
			b = append(b, ',')
		}
		if n.kind == '{' {
			b = AppendString(b, n.keys[i])
			b = append(b, ':')
		}
		b = appendNode(b, c)
	}
	return append(b, byte(n.kind+2))
}

func (n *node) json() []byte { return appendNode(nil, n) }

func (n *node) member(key string) int { return slices.Index(n.keys, key) }

// pointerToken escapes one JSON Pointer reference token (RFC 6901).
func pointerToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// diffNodes appends the operations that turn a into b at path.
func diffNodes(ops []gtc.PatchOp, path string, a, b *node) []gtc.PatchOp {
	switch {
	case a.kind == '{' && b.kind == '{' && (path == "" || appendsOnly(a, b) && appendsOnly(b, a)):
		for i, k := range a.keys {
			j := i // the two usually list their keys in the same order
			if j >= len(b.keys) || b.keys[j] != k {
				j = b.member(k)
			}
			if j >= 0 {
				ops = diffNodes(ops, path+"/"+pointerToken(k), a.elems[i], b.elems[j])
			}
		}
		// Removed members last first, so that undoing them adds them back in their order.
		for i := len(a.keys) - 1; i >= 0; i-- {
			if k := a.keys[i]; b.member(k) < 0 {
				ops = append(ops, gtc.PatchOp{Op: "remove", Path: path + "/" + pointerToken(k), Old: a.elems[i].json()})
			}
		}
		for j, k := range b.keys {
			if a.member(k) < 0 {
				ops = append(ops, gtc.PatchOp{Op: "add", Path: path + "/" + pointerToken(k), Value: b.elems[j].json()})
			}
		}
		return ops
	case a.kind == '[' && b.kind == '[':
		common := min(len(a.elems), len(b.elems))
		for i := range common {
			ops = diffNodes(ops, path+"/"+strconv.Itoa(i), a.elems[i], b.elems[i])
		}
		for i := len(a.elems) - 1; i >= common; i-- { // from the end, so each index is still valid
			ops = append(ops, gtc.PatchOp{Op: "remove", Path: path + "/" + strconv.Itoa(i), Old: a.elems[i].json()})
		}
		for i := common; i < len(b.elems); i++ {
			ops = append(ops, gtc.PatchOp{Op: "add", Path: path + "/" + strconv.Itoa(i), Value: b.elems[i].json()})
		}
		return ops
	}
	if scalar := func(n *node) bool { return n.kind != '{' && n.kind != '[' }; scalar(a) && scalar(b) {
		if !bytes.Equal(a.raw, b.raw) { // scalars and unparsed members: compared as written
			ops = append(ops, gtc.PatchOp{Op: "replace", Path: path, Old: bytes.Clone(a.raw), Value: bytes.Clone(b.raw)})
		}
		return ops
	}
	if aj, bj := a.json(), b.json(); !bytes.Equal(aj, bj) {
		ops = append(ops, gtc.PatchOp{Op: "replace", Path: path, Old: aj, Value: bj})
	}
	return ops
}

// appendsOnly reports whether the members of b that a lacks all come after the ones they
// share, which are in the same order in both. A member added to an object goes to its end, so
// only then do member-level operations rebuild the object's bytes in both directions; other
// objects are replaced whole. The item's own object is the exception: its members are read by
// key, whatever their order.
func appendsOnly(a, b *node) bool {
	shared, i := 0, 0
	for _, k := range b.keys {
		if a.member(k) < 0 {
			continue
		}
		for i < len(a.keys) && b.member(a.keys[i]) < 0 {
			i++
		}
		if i == len(a.keys) || a.keys[i] != k || shared != slices.Index(b.keys, k) {
			return false
		}
		shared, i = shared+1, i+1
	}
	return true
}

// withoutRevision parses a stored document and drops its revision key.
func withoutRevision(doc []byte) (*node, error) {
	n, err := parseNode(doc)
	if err != nil {
		return nil, err
	}
	if n.kind != '{' {
		return nil, fmt.Errorf("codec: revision: the stored document is not an object")
	}
	if i := n.member("revision"); i >= 0 {
		n.keys, n.elems = slices.Delete(n.keys, i, i+1), slices.Delete(n.elems, i, i+1)
	}
	return n, nil
}

// DiffItems returns the operations that turn the stored form of prev into next's (the
// revision key aside), in document order: changed members of objects and elements of arrays
// are descended into, so each operation names the smallest value that changed. Most changes
// touch a few of the item's keys: the others are compared as written and never parsed.
func DiffItems(prev, next *gtc.Item) ([]gtc.PatchOp, error) {
	_, a := storedMembers(prev)
	_, b := storedMembers(next)
	return diffMembers(a, b)
}

// diffMembers is DiffItems of two stored forms' top-level members. It gives what diffNodes
// gives for the two documents parsed whole, but parses only the members that differ, and
// not even those when both values are scalars: a PUT changes a few of an item's members,
// usually strings.
func diffMembers(a, b []rawMember) ([]gtc.PatchOp, error) {
	// find is the index of key in ms, looked for first at i: the two usually list their keys
	// in the same order.
	find := func(ms []rawMember, i int, key string) int {
		if i < len(ms) && ms[i].key == key {
			return i
		}
		return slices.IndexFunc(ms, func(m rawMember) bool { return m.key == key })
	}
	var ops []gtc.PatchOp
	for i, m := range a {
		j := find(b, i, m.key)
		if j < 0 || bytes.Equal(m.val, b[j].val) {
			continue
		}
		path := "/" + pointerToken(m.key)
		if scalarValue(m.val) && scalarValue(b[j].val) {
			ops = append(ops, gtc.PatchOp{Op: "replace", Path: path, Old: bytes.Clone(m.val), Value: bytes.Clone(b[j].val)})
			continue
		}
		na, err := parseNode(m.val)
		if err != nil {
			return nil, err
		}
		nb, err := parseNode(b[j].val)
		if err != nil {
			return nil, err
		}
		ops = diffNodes(ops, path, na, nb)
	}
	// Removed members last first, so that undoing them adds them back in their order.
	for i := len(a) - 1; i >= 0; i-- {
		if find(b, i, a[i].key) < 0 {
			ops = append(ops, gtc.PatchOp{Op: "remove", Path: "/" + pointerToken(a[i].key), Old: bytes.Clone(a[i].val)})
		}
	}
	for j, m := range b {
		if find(a, j, m.key) < 0 {
			ops = append(ops, gtc.PatchOp{Op: "add", Path: "/" + pointerToken(m.key), Value: bytes.Clone(m.val)})
		}
	}
	return ops, nil
}

// scalarValue reports whether a value as written (no whitespace around it) is a scalar.
func scalarValue(v []byte) bool { return len(v) > 0 && v[0] != '{' && v[0] != '[' }

// rawMember is a top-level member of a stored document, its value as written.
type rawMember struct {
	key string
	val jsontext.Value
}

// StoredForm is an item's stored document with the spans of its top-level members, so that
// a store encodes the item it writes once, for the document and for its revision.
type StoredForm struct {
	Doc     []byte
	members []rawMember // the revision key left out
}

// EncodeStored writes the stored form of it (as ItemStoredJSON does) with its members.
func EncodeStored(it *gtc.Item) StoredForm {
	doc, ms := storedMembers(it)
	return StoredForm{Doc: doc, members: ms}
}

// storedMembers writes the stored form of it and returns it with its top-level members, the
// revision key left out.
func storedMembers(it *gtc.Item) ([]byte, []rawMember) {
	type span struct {
		key        string
		start, end int
	}
	spans := make([]span, 0, 32)
	w := writer{fm: formStored, member: func(key string, start, end int) {
		if key != "revision" {
			spans = append(spans, span{key, start, end})
		}
	}}
	w.object(itemTable, unsafe.Pointer(it), true)
	ms := make([]rawMember, len(spans))
	for i, sp := range spans {
		ms[i] = rawMember{sp.key, jsontext.Value(w.b[sp.start:sp.end:sp.end])}
	}
	return w.b, ms
}

// wholeItem is the operation of an item's first revision: the whole stored document (the
// revision key aside), from its members, added at the empty path; size is about the
// document's.
func wholeItem(ms []rawMember, size int) []gtc.PatchOp {
	out := make([]byte, 0, size)
	out = append(out, '{')
	for i, m := range ms {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(AppendString(out, m.key), ':')
		out = append(out, m.val...)
	}
	return []gtc.PatchOp{{Op: "add", Path: "", Value: append(out, '}')}}
}

// ApplyStored applies ops to the stored document doc: forward (the version after them from
// the one before) or, with undo, backward (the version before them from the one after). An
// operation that does not fit the document is an error: the revisions do not belong to it.
func ApplyStored(doc []byte, ops []gtc.PatchOp, undo bool) ([]byte, error) {
	root, err := withoutRevision(doc)
	if err != nil {
		return nil, err
	}
	box := &node{kind: '[', elems: []*node{root}} // the whole document is element 0 of a box
	for i := range ops {
		op := ops[i]
		if undo {
			op = ops[len(ops)-1-i]
			switch op.Op {
			case "add":
				op = gtc.PatchOp{Op: "remove", Path: op.Path, Old: op.Value}
			case "remove":
				op = gtc.PatchOp{Op: "add", Path: op.Path, Value: op.Old}
			case "replace":
				op = gtc.PatchOp{Op: "replace", Path: op.Path, Old: op.Value, Value: op.Old}
			}
		}
		if err := applyOp(box, op); err != nil {
			return nil, fmt.Errorf("codec: revision: %s %q: %w", op.Op, op.Path, err)
		}
	}
	return box.elems[0].json(), nil
}

// applyOp applies one operation inside box, whose element 0 is the document.
func applyOp(box *node, op gtc.PatchOp) error {
	if op.Op != "add" && op.Op != "remove" && op.Op != "replace" {
		return fmt.Errorf("unknown operation")
	}
	tokens := []string{"0"}
	if op.Path != "" {
		if !strings.HasPrefix(op.Path, "/") {
			return fmt.Errorf("not a JSON Pointer")
		}
		for t := range strings.SplitSeq(op.Path[1:], "/") {
			tokens = append(tokens, strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~"))
		}
	}
	parent := box
	for _, t := range tokens[:len(tokens)-1] {
		i, err := childIndex(parent, t, false)
		if err != nil {
			return err
		}
		parent = parent.elems[i]
	}
	last := tokens[len(tokens)-1]
	var val *node
	if op.Op != "remove" {
		var err error
		if val, err = parseNode(op.Value); err != nil {
			return err
		}
	}
	switch {
	case op.Path == "" && op.Op != "remove": // the whole document
		box.elems[0] = val
		return nil
	case op.Path == "":
		return fmt.Errorf("the whole item cannot be removed")
	}
	switch op.Op {
	case "add":
		if parent.kind == '{' {
			if i := parent.member(last); i >= 0 {
				parent.elems[i] = val
			} else {
				parent.keys, parent.elems = append(parent.keys, last), append(parent.elems, val)
			}
			return nil
		}
		i, err := childIndex(parent, last, true)
		if err != nil {
			return err
		}
		parent.elems = slices.Insert(parent.elems, i, val)
	case "remove", "replace":
		i, err := childIndex(parent, last, false)
		if err != nil {
			return err
		}
		if op.Op == "replace" {
			parent.elems[i] = val
		} else if parent.elems = slices.Delete(parent.elems, i, i+1); parent.kind == '{' {
			parent.keys = slices.Delete(parent.keys, i, i+1)
		}
	}
	return nil
}

// childIndex finds the member or element t of n; with end, an array index may be one past
// the last element (where an add appends).
func childIndex(n *node, t string, end bool) (int, error) {
	switch n.kind {
	case '{':
		if i := n.member(t); i >= 0 {
			return i, nil
		}
		return 0, fmt.Errorf("no member %q", t)
	case '[':
		i, err := strconv.Atoi(t)
		if err != nil || i < 0 || i > len(n.elems) || i == len(n.elems) && !end {
			return 0, fmt.Errorf("no element %q", t)
		}
		return i, nil
	}
	return 0, fmt.Errorf("%q is inside a scalar", t)
}

// ItemRevisions are the revisions a store records when it writes the item next (whose
// Revision the caller set with gtc.NextRevision) over prev, or creates it (prev nil). A
// replace of an item written before revisions were recorded records two: first the item as
// it was (SourceBaseline), then the change. form is next's stored form (EncodeStored); at is
// the time of the write.
func ItemRevisions(ctx context.Context, prev, next *gtc.Item, form StoredForm, at time.Time) ([]*gtc.Revision, error) {
	// The items are written with their members' spans: nothing is read back.
	nextDoc, nextMs := form.Doc, form.members
	if prev == nil {
		return []*gtc.Revision{gtc.NewRevision(ctx, next, next.Revision, at, "", wholeItem(nextMs, len(nextDoc)))}, nil
	}
	prevDoc, prevMs := storedMembers(prev)
	ops, err := diffMembers(prevMs, nextMs)
	if err != nil {
		return nil, err
	}
	change := gtc.NewRevision(ctx, next, next.Revision, at, prev.ETag, ops)
	if prev.Revision > 0 {
		return []*gtc.Revision{change}, nil
	}
	base := gtc.NewRevision(ctx, prev, next.Revision-1, prev.UpdatedAt, "", wholeItem(prevMs, len(prevDoc)))
	base.Source, base.OperationID, base.ETagAfter = gtc.SourceBaseline, "", prev.ETag
	if prev.UpdatedBy != nil {
		base.Actor = *prev.UpdatedBy
	} else {
		base.Actor = ""
	}
	return []*gtc.Revision{base, change}, nil
}

// AppendRevision appends the stored form of a revision: the bytes json.Marshal writes for
// it with minimal escaping, written directly, as every write records one. Its operations'
// values are JSON from stored documents, copied as they are.
func AppendRevision(b []byte, r *gtc.Revision) ([]byte, error) {
	if y := r.At.Year(); y < 0 || y > 9999 {
		return b, fmt.Errorf("codec: revision %d: time %v is outside the years 0 to 9999", r.Number, r.At)
	}
	str := func(key, s string) {
		b = append(append(append(b, ',', '"'), key...), '"', ':')
		b = AppendString(b, s)
	}
	var bad error
	raw := func(key string, v []byte) { // omitted when nil
		switch {
		case v == nil:
		case len(v) == 0:
			bad = fmt.Errorf("codec: revision %d: %s has an empty value", r.Number, key)
		default:
			b = append(append(append(append(b, ',', '"'), key...), '"', ':'), v...)
		}
	}
	b = append(b, `{"datasetName":`...)
	b = AppendString(b, r.DatasetName)
	str("id", r.ID)
	b = strconv.AppendInt(append(b, `,"revision":`...), r.Number, 10)
	b = append(r.At.AppendFormat(append(b, `,"at":"`...), time.RFC3339Nano), '"')
	str("actor", r.Actor)
	str("source", r.Source)
	if r.OperationID != "" {
		str("operationId", r.OperationID)
	}
	str("etagBefore", r.ETagBefore)
	str("etagAfter", r.ETagAfter)
	b = append(b, `,"ops":[`...)
	for i, op := range r.Ops {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"op":`...)
		b = AppendString(b, op.Op)
		str("path", op.Path)
		raw("old", op.Old)
		raw("value", op.Value)
		b = append(b, '}')
	}
	b = append(b, ']')
	b = strconv.AppendInt(append(b, `,"prunedBefore":`...), r.PrunedBefore, 10) // written when 0 too
	raw("base", r.Base)
	return append(b, '}'), bad
}

// DecodeRevision reads the stored form of a revision.
func DecodeRevision(b []byte) (*gtc.Revision, error) {
	var r gtc.Revision
	if err := json.Unmarshal(b, &r, jsontext.AllowInvalidUTF8(true)); err != nil {
		return nil, fmt.Errorf("codec: stored revision unreadable: %w", err)
	}
	return &r, nil
}

// ContentSize is the size of a stored document without its revision member, which the item's
// size limit leaves out: an item at the limit stays writable however many revisions it gets.
func ContentSize(doc []byte, revision int64) int {
	if revision == 0 {
		return len(doc)
	}
	return len(doc) - len(`,"revision":`) - len(strconv.FormatInt(revision, 10))
}

// RawPrevious is the item a maintenance rewrite of prev replaces, as its revision sees it: the
// document read as a stored item, with prev's ETag. A document with a revision number is an
// item whatever its index version (an index format older than this build's included); one
// without is an item written before revisions were kept when it has an index version, else a
// legacy document, which has no previous item (nil).
func RawPrevious(prev gtc.RawDoc) *gtc.Item {
	b, err := stdjson.Marshal(prev.Body) // encoding/json writes DecodeRawObject's json.Number as numbers
	if err != nil {
		return nil
	}
	d, err := DecodeStoredItem(b)
	if err != nil || d.Revision == 0 && prev.IndexVersion == 0 {
		return nil
	}
	d.ETag = prev.ETag
	return d
}
