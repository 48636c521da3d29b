package codec

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
// A body is checked once by jsontext (syntax, UTF-8; the nesting depth is bounded here),
// which keeps nothing but the positions of the objects in which a key may appear twice.
// After that a value is only where its bytes are: the decoders walk an array or an object one
// member at a time with a jsontext.Decoder over that value's bytes, reading a nested value in
// one step, and a free-form value is copied from its bytes in compact form, never descended
// into by the decoders. So reading a body costs a few words per open array or object, and a
// few words per member of an object whose keys repeat; what is kept (the decoded item) costs
// more.

type Kind uint8

const (
	Null Kind = iota
	Bool
	Number
	String
	Array
	Object
)

func (k Kind) String() string {
	switch k {
	case Null:
		return "null"
	case Bool:
		return "boolean"
	case Number:
		return "number"
	case String:
		return "string"
	case Array:
		return "array"
	default:
		return "object"
	}
}

// kindOf maps a jsontext kind to a Kind.
func jkindOf(k jsontext.Kind) Kind {
	switch k {
	case '{':
		return Object
	case '[':
		return Array
	case '"':
		return String
	case 't', 'f':
		return Bool
	case 'n':
		return Null
	default:
		return Number
	}
}

// jdoc is a body that parseJSON checked.
type jdoc struct {
	data []byte
	// repeats holds, by offset, the objects in which a key may appear twice (two of their
	// keys hash alike), with the number of their members. Only those need the slower walk
	// that drops the repeats.
	repeats []repeating
	// free holds readers to reuse.
	free []*reader
}

// repeating is an object whose keys may repeat: its offset and its number of members.
type repeating struct{ start, members int }

// mayRepeat returns the number of members of the object at offset obj when its keys may
// repeat, or 0.
func (doc *jdoc) mayRepeat(obj int) int {
	if len(doc.repeats) == 0 {
		return 0
	}
	i, found := slices.BinarySearchFunc(doc.repeats, obj, func(r repeating, obj int) int { return cmp.Compare(r.start, obj) })
	if !found {
		return 0
	}
	return doc.repeats[i].members
}

// reader is a jsontext.Decoder over a part of a body.
type reader struct {
	dec  jsontext.Decoder
	buf  bytes.Buffer
	base int // the offset in the body of what the Decoder reads
}

var readOptions = jsontext.AllowDuplicateNames(true)

// reader returns a Decoder over data[start:end].
func (doc *jdoc) reader(start, end int) *reader {
	var r *reader
	if n := len(doc.free); n > 0 {
		r, doc.free = doc.free[n-1], doc.free[:n-1]
	} else {
		r = new(reader)
	}
	r.buf = *bytes.NewBuffer(doc.data[start:end:end])
	r.dec.Reset(&r.buf, readOptions)
	r.base = start
	return r
}

func (doc *jdoc) release(r *reader) {
	r.buf = bytes.Buffer{}
	doc.free = append(doc.free, r)
}

// value reads the next value; it is checked already.
func (r *reader) value(doc *jdoc) Value {
	k := r.dec.PeekKind()
	v, _ := r.dec.ReadValue()
	end := r.base + int(r.dec.InputOffset())
	return Value{kind: jkindOf(k), doc: doc, start: end - len(v), end: end}
}

// key reads the next object name; start is its offset in the body.
func (r *reader) Key(doc *jdoc) (k Key, start int) {
	v, _ := r.dec.ReadValue()
	end := r.base + int(r.dec.InputOffset())
	start = end - len(v)
	return doc.keyOf(start, end), start
}

func (doc *jdoc) keyOf(start, end int) Key {
	q := doc.data[start:end]
	return Key{quoted: q, esc: bytes.IndexByte(q, '\\') >= 0}
}

// Value is one value of a checked body: its kind and where its bytes are. The zero Value
// is null.
type Value struct {
	kind       Kind
	doc        *jdoc
	start, end int
}

// Kind is the value's JSON type.
func (v Value) Kind() Kind { return v.kind }

// bytes is the value's text as written.
func (v Value) bytes() []byte { return v.doc.data[v.start:v.end] }

// text is a string's value, or a number literal exactly as written.
func (v Value) Text() string {
	switch v.kind {
	case String:
		return unquote(v.bytes())
	case Number:
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
func (v Value) literal() []byte { return v.bytes() }

func (v Value) Bool() bool { return v.kind == Bool && v.bytes()[0] == 't' }

// Key is an object key of a read body.
type Key struct {
	quoted []byte // the key as written, quotes included
	esc    bool   // it has an escape
}

// String is the key's value.
func (k Key) String() string {
	if !k.esc {
		return string(k.quoted[1 : len(k.quoted)-1])
	}
	return unquote(k.quoted)
}

// equal reports whether two keys have the same value.
func (k Key) equal(o Key) bool {
	if !k.esc && !o.esc {
		return bytes.Equal(k.quoted, o.quoted)
	}
	return k.String() == o.String()
}

// is reports whether the key is s, without copying it.
func (k Key) Is(s string) bool {
	if !k.esc {
		return string(k.quoted[1:len(k.quoted)-1]) == s
	}
	return k.String() == s
}

// KeySet is the keys an object may have. Looking a key up gives its name without a copy.
type KeySet map[string]string

func Keys(names ...string) KeySet {
	ks := make(KeySet, len(names))
	for _, n := range names {
		ks[n] = n
	}
	return ks
}

// name returns the key's name when the set has it.
func (ks KeySet) Name(k Key) (string, bool) {
	var n string
	var ok bool
	if !k.esc {
		n, ok = ks[string(k.quoted[1:len(k.quoted)-1])]
	} else {
		n, ok = ks[k.String()]
	}
	return n, ok
}

// open returns a reader over the array or object v, its opening bracket read.
func (v Value) open() *reader {
	r := v.doc.reader(v.start, v.end)
	_, _ = r.dec.ReadToken()
	return r
}

// ArrayIter walks the elements of an array: for it := v.Elems(); it.Next(); { it.I, it.Val }.
type ArrayIter struct {
	doc *jdoc
	r   *reader // nil once the walk is over
	I   int     // the index of the current element
	Val Value   // the current element
}

func (v Value) Elems() ArrayIter {
	return ArrayIter{doc: v.doc, r: v.open(), I: -1}
}

func (it *ArrayIter) Next() bool {
	if it.r == nil {
		return false
	}
	if it.r.dec.PeekKind() == ']' {
		it.doc.release(it.r)
		it.r = nil
		return false
	}
	it.Val = it.r.value(it.doc)
	it.I++
	return true
}

// Member is one member of an object.
type Member struct {
	Key Key
	Val Value
}

// ObjectIter walks the members of an object in order of first appearance: a repeated key
// is met once, at its first position, with its last value. For it := v.Members(); it.Next();
// { it.Key, it.Val }.
type ObjectIter struct {
	Member
	v        Value
	r        *reader // nil once the walk is over
	keyStart int     // the offset of the current member's key
	// plan is repeatPlan of an object whose keys may repeat, nil for the others: the
	// members, and in order which of them to take.
	ms   []member
	plan []int32
	pi   int
}

func (v Value) rawMembers() ObjectIter {
	return ObjectIter{v: v, r: v.open()}
}

func (v Value) Members() ObjectIter {
	if n := v.doc.mayRepeat(v.start); n > 0 {
		ms, plan := v.repeatPlan(n)
		return ObjectIter{v: v, ms: ms, plan: plan}
	}
	return v.rawMembers()
}

func (it *ObjectIter) Next() bool {
	if it.plan == nil {
		return it.nextRaw()
	}
	for it.pi < len(it.plan) {
		j := it.plan[it.pi]
		it.pi++
		if j >= 0 {
			it.Member = it.v.doc.memberAt(it.ms[j], it.v.end)
			return true
		}
	}
	return false
}

// nextRaw reads the next member as written, repeats included.
func (it *ObjectIter) nextRaw() bool {
	if it.r == nil {
		return false
	}
	if it.r.dec.PeekKind() == '}' {
		it.v.doc.release(it.r)
		it.r = nil
		return false
	}
	it.Key, it.keyStart = it.r.Key(it.v.doc)
	it.Val = it.r.value(it.v.doc)
	return true
}

// member is where one member of an object whose keys may repeat is.
type member struct {
	hash                    uint64
	keyStart, keyEnd, value uint32
}

// memberAt reads the member m of an object that ends at end.
func (doc *jdoc) memberAt(m member, end int) Member {
	r := doc.reader(int(m.value), end)
	v := r.value(doc)
	doc.release(r)
	return Member{Key: doc.keyOf(int(m.keyStart), int(m.keyEnd)), Val: v}
}

// repeatPlan is how an object of n members whose keys may repeat is read: its members, and
// for each in document order, the index of the member to take in its place (the last one with
// its key) when its key appears there first, or -1 when the key appeared before.
func (v Value) repeatPlan(n int) ([]member, []int32) {
	ms := make([]member, 0, n)
	var scratch []byte
	for it := v.rawMembers(); it.nextRaw(); {
		var h uint64
		h, scratch = hashKey(it.Key.quoted, scratch)
		ms = append(ms, member{hash: h, keyStart: uint32(it.keyStart),
			keyEnd: uint32(it.keyStart + len(it.Key.quoted)), value: uint32(it.Val.start)})
	}
	keyOfM := func(i int32) Key { return v.doc.keyOf(int(ms[i].keyStart), int(ms[i].keyEnd)) }
	return ms, plan(ms, func(a, b int32) bool { return keyOfM(a).equal(keyOfM(b)) })
}

// plan says which members to take when a repeated key is kept once, at its first position,
// with its last value: for each member in order, the index of the member to take in its
// place, or -1. Members are grouped by the hash of their key and compared with same only
// within a group, so the plan costs a few words per member whatever the keys.
func plan(ms []member, same func(a, b int32) bool) []int32 {
	order := make([]int32, len(ms))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int {
		if c := cmp.Compare(ms[a].hash, ms[b].hash); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	take := make([]int32, len(ms))
	for i := range take {
		take[i] = -1
	}
	for g := 0; g < len(order); {
		h := g + 1
		for h < len(order) && ms[order[h]].hash == ms[order[g]].hash {
			h++
		}
		// The group holds one key, save for a hash collision: take its keys one at a
		// time, in order of first appearance, moving the members of other keys forward.
		group := order[g:h]
		for len(group) > 0 {
			head := group[0]
			last := head
			rest := group[:0]
			for _, m := range group[1:] {
				if same(m, head) {
					last = m
				} else {
					rest = append(rest, m)
				}
			}
			take[head] = last
			group = rest
		}
		g = h
	}
	return take
}

// get returns the value of key in an object: its last value when it repeats.
func (v Value) Get(key string) (Value, bool) {
	var found Value
	ok := false
	for it := v.rawMembers(); it.nextRaw(); {
		if it.Key.Is(key) {
			found, ok = it.Val, true
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

// errTooLong is the problem of a body whose offsets do not fit in 32 bits.
var errTooLong = errors.New("input longer than 4 GiB")

// checker checks one value read from a jsontext.Decoder and finds the objects of a jdoc
// whose keys may repeat.
type checker struct {
	doc *jdoc
	// hashes holds the key hashes of the objects being read, innermost last; open says
	// where each object starts and where its hashes start.
	hashes  []uint64
	open    []struct{ start, base int }
	scratch []byte
}

// UnmarshalJSONFrom reads exactly one value, so json.Unmarshal checks what follows it.
func (c *checker) UnmarshalJSONFrom(d *jsontext.Decoder) error {
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
			if k == '{' {
				c.open = append(c.open, struct{ start, base int }{int(off), len(c.hashes)})
			}
		case '}', ']':
			if _, err := d.ReadToken(); err != nil {
				return err
			}
			if k == '}' {
				o := c.open[len(c.open)-1]
				c.open = c.open[:len(c.open)-1]
				if repeats(c.hashes[o.base:]) {
					c.doc.repeats = append(c.doc.repeats, repeating{o.start, len(c.hashes) - o.base})
				}
				c.hashes = c.hashes[:o.base]
			}
		default:
			kind, n := d.StackIndex(d.StackDepth())
			if kind == '{' && n%2 == 0 {
				v, err := d.ReadValue()
				if err != nil {
					return err
				}
				var h uint64
				h, c.scratch = hashKey(v, c.scratch)
				c.hashes = appendDoubling(c.hashes, h)
			} else if err := d.SkipValue(); err != nil {
				return err
			}
			if end := d.InputOffset(); end > math.MaxUint32 {
				return &jsontext.SyntacticError{ByteOffset: end, Err: errTooLong}
			}
		}
		if d.StackDepth() == 0 {
			return nil
		}
	}
}

// parseJSON checks one complete JSON document (RFC 8259, UTF-8 throughout) with nothing but
// whitespace after it, and returns its top-level value. A repeated key is allowed; the
// walks take its last value, at its first position.
func parseJSON(data []byte) (Value, error) {
	doc := &jdoc{data: data}
	if err := json.Unmarshal(data, &checker{doc: doc}, jsontext.AllowDuplicateNames(true)); err != nil {
		return Value{}, err
	}
	slices.SortFunc(doc.repeats, func(a, b repeating) int { return cmp.Compare(a.start, b.start) })
	r := doc.reader(0, len(data))
	v := r.value(doc)
	doc.release(r)
	return v, nil
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
func (v Value) Raw() []byte {
	if v.doc == nil {
		return []byte("null")
	}
	return v.appendRaw(make([]byte, 0, v.end-v.start))
}

// appendRaw appends the compact form of v to out. It reads v once, token by token; the
// members of an object whose keys may repeat are noted as they are written, and rewritten
// in place when the object closes.
func (v Value) appendRaw(out []byte) []byte {
	switch v.kind {
	case String:
		return appendQuoted(out, v.bytes())
	case Array, Object:
	default:
		return append(out, v.bytes()...)
	}
	doc := v.doc
	r := doc.reader(v.start, v.end)
	defer doc.release(r)
	d := &r.dec
	// open holds, for each open container, whether it is an object whose keys may repeat
	// and where its members start in tracked.
	type frame struct {
		repeats  bool
		body     int // where its members start in out
		firstMem int // its first member in tracked
	}
	var open []frame
	var tracked []member // members of the open objects whose keys may repeat
	var scratch []byte
	for {
		kind, n := d.StackIndex(d.StackDepth())
		if n > 0 && (kind == '[' || n%2 == 0) && d.PeekKind() != ']' && d.PeekKind() != '}' {
			out = append(out, ',')
		}
		isKey := kind == '{' && n%2 == 0
		switch k := d.PeekKind(); k {
		case '{', '[':
			_, _ = d.ReadToken()
			off := r.base + int(d.InputOffset()) - 1
			out = append(out, byte(k))
			n := 0
			if k == '{' {
				n = doc.mayRepeat(off)
			}
			if n > 0 && cap(tracked)-len(tracked) < n {
				tracked = slices.Grow(tracked, n)
			}
			open = append(open, frame{repeats: n > 0, body: len(out), firstMem: len(tracked)})
		case '}', ']':
			_, _ = d.ReadToken()
			f := open[len(open)-1]
			open = open[:len(open)-1]
			if f.repeats {
				out, scratch = dropRepeats(out, f.body, tracked[f.firstMem:], scratch)
				tracked = tracked[:f.firstMem]
			}
			out = append(out, byte(k))
		default:
			val, _ := d.ReadValue()
			start := len(out)
			if k == '"' {
				out = appendQuoted(out, val)
			} else {
				out = append(out, val...)
			}
			if isKey {
				if open[len(open)-1].repeats {
					tracked = append(tracked, member{hash: hashBytes(out[start:]),
						keyStart: uint32(start), keyEnd: uint32(len(out))})
				}
				out = append(out, ':')
			}
		}
		if d.StackDepth() == 0 {
			return out
		}
	}
}

// dropRepeats rewrites the members of an object written to out[body:], which start at ms
// (their keys written in the escaping of appendQuoted, so equal keys are equal bytes):
// a repeated key is kept once, at its first position, with its last value.
func dropRepeats(out []byte, body int, ms []member, scratch []byte) ([]byte, []byte) {
	if len(ms) < 2 {
		return out, scratch
	}
	// Member i is out[ms[i].keyStart:ms[i].value]: up to the comma before the next one.
	for i := range ms {
		ms[i].value = uint32(len(out))
		if i+1 < len(ms) {
			ms[i].value = ms[i+1].keyStart - 1
		}
	}
	keyOfM := func(i int32) []byte { return out[ms[i].keyStart:ms[i].keyEnd] }
	take := plan(ms, func(a, b int32) bool { return bytes.Equal(keyOfM(a), keyOfM(b)) })
	scratch = append(scratch[:0], out[body:]...)
	out = out[:body]
	for _, j := range take {
		if j < 0 {
			continue
		}
		if len(out) > body {
			out = append(out, ',')
		}
		out = append(out, scratch[int(ms[j].keyStart)-body:int(ms[j].value)-body]...)
	}
	return out, scratch
}

// appendQuoted appends a checked string in the escaping of jsontext.AppendQuote.
func appendQuoted(out, quoted []byte) []byte {
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

// Path names a place in a body, as errors[].field writes it: "body", "history[0].msg",
// `metadata["a b"]`. The text is only made when a problem is reported, so walking the
// elements of a large body costs nothing per element. The zero Path is the body.
type Path struct {
	up   *Path
	name string
	raw  Key // a key as the body writes it, when name is not set
	idx  int
	kind uint8
}

const (
	pathBody uint8 = iota
	pathKey
	pathRawKey
	pathIndex
)

func (p *Path) Key(k string) Path { return Path{up: p, name: k, kind: pathKey} }

// keyAt is key for a key of the body, read only if the path is written.
func (p *Path) KeyAt(k Key) Path { return Path{up: p, raw: k, kind: pathRawKey} }

func (p *Path) Index(i int) Path { return Path{up: p, idx: i, kind: pathIndex} }

func (p Path) String() string {
	if p.kind == pathBody {
		return "body"
	}
	var b bytes.Buffer
	p.write(&b)
	return b.String()
}

// write writes the path of p; the body's own path is empty.
func (p *Path) write(b *bytes.Buffer) {
	if p.kind == pathBody {
		return
	}
	if p.up != nil {
		p.up.write(b)
	}
	if p.kind == pathIndex {
		b.WriteByte('[')
		b.WriteString(strconv.Itoa(p.idx))
		b.WriteByte(']')
		return
	}
	name := p.name
	if p.kind == pathRawKey {
		name = p.raw.String()
	}
	if !plainKey(name) {
		b.WriteByte('[')
		q, _ := jsontext.AppendQuote(b.AvailableBuffer(), name)
		b.Write(q)
		b.WriteByte(']')
		return
	}
	if b.Len() > 0 {
		b.WriteByte('.')
	}
	b.WriteString(name)
}

func plainKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
