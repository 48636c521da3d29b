package gtc

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// The request decoders need three things a struct unmarshaler does not give them together:
// every problem of a body reported with its path in document order, exact key matching,
// and free-form values kept byte-for-byte (64-bit integers, long decimals).
//
// A body is read once by jsontext, which checks it (syntax, UTF-8; the nesting depth is
// bounded here), into a tape: for each value, in document order, where its bytes are. After
// that a value is only an index into the tape: the decoders walk arrays and objects one
// member at a time, skipping nested values in one step, and a free-form value is copied from
// its bytes in compact form. So a body costs its tape (8 bytes a value) and a few words per
// member of an object whose keys repeat; what is kept (the decoded item) costs more.

type jkind uint8

const (
	jNull jkind = iota
	jBool
	jNumber
	jString
	jArray
	jObject
)

func (k jkind) String() string {
	switch k {
	case jNull:
		return "null"
	case jBool:
		return "boolean"
	case jNumber:
		return "number"
	case jString:
		return "string"
	case jArray:
		return "array"
	default:
		return "object"
	}
}

// kindOf maps a jsontext kind to a jkind.
func kindOf(k jsontext.Kind) jkind {
	switch k {
	case '{':
		return jObject
	case '[':
		return jArray
	case '"':
		return jString
	case 't', 'f':
		return jBool
	case 'n':
		return jNull
	default:
		return jNumber
	}
}

// tapeEntry is one value of a body, an object key, or the end of an array or object. For a
// string, number or literal (keys included), end is where its bytes end; for an array or
// object, end is the index of the entry of its closing bracket, whose start is that bracket.
type tapeEntry struct {
	start, end uint32
}

// The tape is kept in chunks of tapeChunk entries, so a long one grows without copies; the
// first chunk starts small and doubles up to that size.
const (
	tapeShift = 14
	tapeChunk = 1 << tapeShift
)

type tape struct {
	chunks [][]tapeEntry
	n      int
}

func (t *tape) push(e tapeEntry) int {
	last := len(t.chunks) - 1
	switch {
	case last < 0:
		t.chunks = append(t.chunks, make([]tapeEntry, 0, 64))
		last = 0
	case len(t.chunks[last]) == cap(t.chunks[last]):
		if last == 0 && cap(t.chunks[0]) < tapeChunk {
			grown := make([]tapeEntry, len(t.chunks[0]), min(2*cap(t.chunks[0]), tapeChunk))
			copy(grown, t.chunks[0])
			t.chunks[0] = grown
		} else {
			t.chunks = append(t.chunks, make([]tapeEntry, 0, tapeChunk))
			last++
		}
	}
	t.chunks[last] = append(t.chunks[last], e)
	t.n++
	return t.n - 1
}

func (t *tape) at(i int) *tapeEntry { return &t.chunks[i>>tapeShift][i&(tapeChunk-1)] }

// jdoc is a body that parseJSON read.
type jdoc struct {
	data []byte
	tape tape
	// repeats holds, sorted, the tape indexes of the objects in which a key may appear twice
	// (two of their keys hash alike). Only those need the slower walk that drops the repeats.
	repeats []int
}

func (doc *jdoc) mayRepeat(obj int) bool {
	if len(doc.repeats) == 0 {
		return false
	}
	_, found := slices.BinarySearch(doc.repeats, obj)
	return found
}

// jvalue is one value of a read body: its kind and its tape index. The zero jvalue is null.
type jvalue struct {
	kind jkind
	doc  *jdoc
	i    int
}

// valueAt returns the value whose tape index is i.
func (doc *jdoc) valueAt(i int) jvalue {
	return jvalue{kind: kindOf(jsontext.Kind(doc.data[doc.tape.at(i).start])), doc: doc, i: i}
}

// next is the tape index after the value at i and everything it holds.
func (doc *jdoc) next(i int) int {
	e := doc.tape.at(i)
	switch doc.data[e.start] {
	case '{', '[':
		return int(e.end) + 1
	}
	return i + 1
}

// bytes is the value's text as written.
func (v jvalue) bytes() []byte {
	e := v.doc.tape.at(v.i)
	end := e.end
	if v.kind == jArray || v.kind == jObject {
		end = v.doc.tape.at(int(e.end)).start + 1
	}
	return v.doc.data[e.start:end]
}

// text is a string's value, or a number literal exactly as written.
func (v jvalue) text() string {
	switch v.kind {
	case jString:
		return unquote(v.bytes())
	case jNumber:
		return string(v.bytes())
	}
	return ""
}

// unquote is the value of a string that jsontext checked.
func unquote(quoted []byte) string {
	if bytes.IndexByte(quoted, '\\') < 0 {
		return string(quoted[1 : len(quoted)-1])
	}
	b, _ := jsontext.AppendUnquote(make([]byte, 0, len(quoted)), quoted)
	return string(b)
}

// literal is a number as written, without a copy; valid until the body changes.
func (v jvalue) literal() []byte { return v.bytes() }

func (v jvalue) boolean() bool { return v.kind == jBool && v.bytes()[0] == 't' }

// jkey is an object key of a read body.
type jkey struct {
	quoted []byte // the key as written, quotes included
	esc    bool   // it has an escape
}

func (doc *jdoc) keyAt(i int) jkey {
	e := doc.tape.at(i)
	q := doc.data[e.start:e.end]
	return jkey{quoted: q, esc: bytes.IndexByte(q, '\\') >= 0}
}

// String is the key's value.
func (k jkey) String() string {
	if !k.esc {
		return string(k.quoted[1 : len(k.quoted)-1])
	}
	return unquote(k.quoted)
}

// equal reports whether two keys have the same value.
func (k jkey) equal(o jkey) bool {
	if !k.esc && !o.esc {
		return bytes.Equal(k.quoted, o.quoted)
	}
	return k.String() == o.String()
}

// is reports whether the key is s, without copying it.
func (k jkey) is(s string) bool {
	if !k.esc {
		return string(k.quoted[1:len(k.quoted)-1]) == s
	}
	return k.String() == s
}

// keyset is the keys an object may have. Looking a key up gives its name without a copy.
type keyset map[string]string

func keys(names ...string) keyset {
	ks := make(keyset, len(names))
	for _, n := range names {
		ks[n] = n
	}
	return ks
}

// name returns the key's name when the set has it.
func (ks keyset) name(k jkey) (string, bool) {
	var n string
	var ok bool
	if !k.esc {
		n, ok = ks[string(k.quoted[1:len(k.quoted)-1])]
	} else {
		n, ok = ks[k.String()]
	}
	return n, ok
}

// arrayIter walks the elements of an array: for it := v.elems(); it.next(); { it.i, it.val }.
type arrayIter struct {
	doc *jdoc
	pos int // the tape index of the next element, or of the closing bracket
	end int // the tape index of the closing bracket
	i   int
	val jvalue
}

func (v jvalue) elems() arrayIter {
	return arrayIter{doc: v.doc, pos: v.i + 1, end: int(v.doc.tape.at(v.i).end), i: -1}
}

func (it *arrayIter) next() bool {
	if it.pos >= it.end {
		return false
	}
	it.val = it.doc.valueAt(it.pos)
	it.pos = it.doc.next(it.pos)
	it.i++
	return true
}

// jmember is one member of an object.
type jmember struct {
	key jkey
	val jvalue
}

// memberAt reads the member whose key is at tape index i.
func (doc *jdoc) memberAt(i int) jmember {
	return jmember{key: doc.keyAt(i), val: doc.valueAt(i + 1)}
}

// objectIter walks the members of an object in order of first appearance: a repeated key
// is met once, at its first position, with its last value. For it := v.members(); it.next();
// { it.key, it.val }.
type objectIter struct {
	jmember
	doc    *jdoc
	pos    int // the tape index of the next key, or of the closing brace
	end    int // the tape index of the closing brace
	keyPos int // the tape index of the current member's key
	// plan is repeatPlan of an object whose keys may repeat, nil for the others.
	plan []int
	pi   int
}

func (v jvalue) rawMembers() objectIter {
	return objectIter{doc: v.doc, pos: v.i + 1, end: int(v.doc.tape.at(v.i).end)}
}

func (v jvalue) members() objectIter {
	it := v.rawMembers()
	if v.doc.mayRepeat(v.i) {
		it.plan = v.repeatPlan()
	}
	return it
}

func (it *objectIter) next() bool {
	if it.plan == nil {
		return it.nextRaw()
	}
	for it.pi < len(it.plan) {
		at := it.plan[it.pi]
		it.pi++
		if at >= 0 {
			it.jmember = it.doc.memberAt(at)
			return true
		}
	}
	return false
}

// nextRaw reads the next member as written, repeats included.
func (it *objectIter) nextRaw() bool {
	if it.pos >= it.end {
		return false
	}
	it.keyPos = it.pos
	it.jmember = it.doc.memberAt(it.pos)
	it.pos = it.doc.next(it.pos + 1)
	return true
}

// repeatPlan is how an object whose keys may repeat is read: for each member in document
// order, the tape index of the key of the member to take in its place (the last one with
// its key) when its key appears there first, or -1 when the key appeared before. Members are
// grouped by the hash of their key and compared only within a group, so the plan costs a few
// words per member whatever the keys.
func (v jvalue) repeatPlan() []int {
	n := 0
	for it := v.rawMembers(); it.nextRaw(); {
		n++
	}
	type ref struct {
		hash     uint64
		idx, key int
	}
	refs := make([]ref, 0, n)
	var scratch []byte
	it := v.rawMembers()
	for i := 0; it.nextRaw(); i++ {
		var h uint64
		h, scratch = hashKey(it.key.quoted, scratch)
		refs = append(refs, ref{hash: h, idx: i, key: it.keyPos})
	}
	slices.SortFunc(refs, func(a, b ref) int {
		if a.hash != b.hash {
			return cmp.Compare(a.hash, b.hash)
		}
		return cmp.Compare(a.idx, b.idx)
	})
	plan := make([]int, n)
	for i := range plan {
		plan[i] = -1
	}
	for g := 0; g < len(refs); {
		h := g + 1
		for h < len(refs) && refs[h].hash == refs[g].hash {
			h++
		}
		// The group holds one key, save for a hash collision: take its keys one at a
		// time, in order of first appearance, moving the members of other keys forward.
		group := refs[g:h]
		for len(group) > 0 {
			head := group[0]
			first := v.doc.keyAt(head.key)
			last := head.key
			rest := group[:0]
			for _, r := range group[1:] {
				if v.doc.keyAt(r.key).equal(first) {
					last = r.key
				} else {
					rest = append(rest, r)
				}
			}
			plan[head.idx] = last
			group = rest
		}
		g = h
	}
	return plan
}

// get returns the value of key in an object: its last value when it repeats.
func (v jvalue) get(key string) (jvalue, bool) {
	var found jvalue
	ok := false
	for it := v.rawMembers(); it.nextRaw(); {
		if it.key.is(key) {
			found, ok = it.val, true
		}
	}
	return found, ok
}

// MaxJSONDepth bounds the nesting of request bodies so hostile input cannot exhaust the stack.
const MaxJSONDepth = 512

// keySeed hashes object keys to find the objects whose keys may repeat.
var keySeed = maphash.MakeSeed()

// hashBytes hashes a key's value for hashKey.
var hashBytes = func(b []byte) uint64 { return maphash.Bytes(keySeed, b) }

// hashKey hashes the value of a quoted key; scratch is room to unescape it in.
func hashKey(quoted, scratch []byte) (uint64, []byte) {
	q := quoted[1 : len(quoted)-1]
	if bytes.IndexByte(q, '\\') < 0 {
		return hashBytes(q), scratch
	}
	scratch, _ = jsontext.AppendUnquote(scratch[:0], quoted)
	return hashBytes(scratch), scratch
}

// errTooDeep is the problem of a body nested deeper than MaxJSONDepth.
var errTooDeep = errors.New("exceeded max depth of " + strconv.Itoa(MaxJSONDepth))

// errTooLong is the problem of a body whose offsets do not fit the tape.
var errTooLong = errors.New("input longer than 4 GiB")

// tapeBuilder reads one value from a jsontext.Decoder into a jdoc.
type tapeBuilder struct {
	doc *jdoc
	// open holds the tape indexes of the arrays and objects being read, innermost last.
	open []int
	// hashes holds the key hashes of the objects being read, innermost last; bases says
	// where each object's hashes start.
	hashes  []uint64
	bases   []int
	scratch []byte
}

// UnmarshalJSONFrom reads exactly one value, so json.Unmarshal checks what follows it.
func (b *tapeBuilder) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	doc := b.doc
	for {
		switch k := d.PeekKind(); k {
		case '{', '[':
			if _, err := d.ReadToken(); err != nil {
				return err
			}
			off := d.InputOffset() - 1
			if d.StackDepth() > MaxJSONDepth {
				return &jsontext.SyntacticError{ByteOffset: off, JSONPointer: d.StackPointer(), Err: errTooDeep}
			}
			b.open = append(b.open, doc.tape.push(tapeEntry{start: uint32(off)}))
			if k == '{' {
				b.bases = append(b.bases, len(b.hashes))
			}
		case '}', ']':
			if _, err := d.ReadToken(); err != nil {
				return err
			}
			off := uint32(d.InputOffset() - 1)
			closing := doc.tape.push(tapeEntry{start: off, end: off + 1})
			top := b.open[len(b.open)-1]
			b.open = b.open[:len(b.open)-1]
			doc.tape.at(top).end = uint32(closing)
			if k == '}' {
				base := b.bases[len(b.bases)-1]
				b.bases = b.bases[:len(b.bases)-1]
				if repeats(b.hashes[base:]) {
					doc.repeats = append(doc.repeats, top)
				}
				b.hashes = b.hashes[:base]
			}
		default:
			kind, n := d.StackIndex(d.StackDepth())
			isKey := kind == '{' && n%2 == 0
			v, err := d.ReadValue()
			if err != nil {
				return err
			}
			end := d.InputOffset()
			if end > math.MaxUint32 {
				return &jsontext.SyntacticError{ByteOffset: end, Err: errTooLong}
			}
			doc.tape.push(tapeEntry{start: uint32(end) - uint32(len(v)), end: uint32(end)})
			if isKey {
				var h uint64
				h, b.scratch = hashKey(v, b.scratch)
				b.hashes = appendDoubling(b.hashes, h)
			}
		}
		if d.StackDepth() == 0 {
			return nil
		}
	}
}

// parseJSON reads one complete JSON document (RFC 8259, UTF-8 throughout) with nothing but
// whitespace after it, and returns its top-level value. A repeated key is allowed; the
// walks take its last value, at its first position.
func parseJSON(data []byte) (jvalue, error) {
	doc := &jdoc{data: data}
	b := &tapeBuilder{doc: doc}
	if err := json.Unmarshal(data, b, jsontext.AllowDuplicateNames(true)); err != nil {
		return jvalue{}, err
	}
	slices.Sort(doc.repeats)
	return doc.valueAt(0), nil
}

// appendDoubling is append that doubles the capacity when it grows, so that growing a long
// list costs about twice its final size in all rather than the five times of append.
func appendDoubling[T any](s []T, v T) []T {
	if len(s) == cap(s) {
		s = append(make([]T, 0, max(64, 2*cap(s))), s...)
	}
	return append(s, v)
}

// repeats reports whether two hashes are equal; it reorders hs.
func repeats(hs []uint64) bool {
	if len(hs) < 2 {
		return false
	}
	if len(hs) <= 16 {
		for i := range hs {
			for j := i + 1; j < len(hs); j++ {
				if hs[i] == hs[j] {
					return true
				}
			}
		}
		return false
	}
	slices.Sort(hs)
	for i := 1; i < len(hs); i++ {
		if hs[i] == hs[i-1] {
			return true
		}
	}
	return false
}

// raw returns the value as compact JSON: no whitespace, a repeated key kept once at its
// first position with its last value, strings escaped as jsontext escapes them (minimally:
// no HTML escaping, non-ASCII kept as is), number literals copied verbatim.
func (v jvalue) raw() []byte {
	if v.doc == nil {
		return []byte("null")
	}
	return v.appendRaw(make([]byte, 0, len(v.bytes())))
}

// appendRaw appends the compact form of v to out.
func (v jvalue) appendRaw(out []byte) []byte {
	switch v.kind {
	case jString:
		return appendString(out, v.bytes())
	case jArray:
		out = append(out, '[')
		for it := v.elems(); it.next(); {
			if it.i > 0 {
				out = append(out, ',')
			}
			out = it.val.appendRaw(out)
		}
		return append(out, ']')
	case jObject:
		out = append(out, '{')
		first := true
		for it := v.members(); it.next(); {
			if !first {
				out = append(out, ',')
			}
			first = false
			out = appendString(out, it.key.quoted)
			out = append(out, ':')
			out = it.val.appendRaw(out)
		}
		return append(out, '}')
	default:
		return append(out, v.bytes()...)
	}
}

// appendString appends a checked string in the escaping of jsontext.AppendQuote.
func appendString(out, quoted []byte) []byte {
	if bytes.IndexByte(quoted, '\\') < 0 {
		// Nothing to unescape, and nothing to escape: a checked string has no control
		// character, no bare quote or backslash and no invalid UTF-8.
		return append(out, quoted...)
	}
	out, _ = jsontext.AppendQuote(out, unquote(quoted))
	return out
}

// errEndOfInput says what io.ErrUnexpectedEOF means in a body: it ends before its value does.
var errEndOfInput = errors.New("unexpected end of input")

// syntaxMessage is what a body's syntax error says: the message of jsontext, in words that
// name the body rather than the reader of the body.
func syntaxMessage(err error) string {
	var se *jsontext.SyntacticError
	if !errors.As(err, &se) {
		return fmt.Sprint(err)
	}
	if errors.Is(se.Err, io.ErrUnexpectedEOF) {
		c := *se
		c.Err = errEndOfInput
		return c.Error()
	}
	return se.Error()
}
