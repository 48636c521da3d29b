package codec

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// The request decoders need three things a struct unmarshaler does not give them together:
// every problem of a body reported with its path in document order, exact key matching,
// and free-form values kept byte-for-byte (64-bit integers, long decimals).
//
// A body is checked once by jsontext (syntax, UTF-8; the nesting depth is bounded here),
// which keeps nothing but the objects in which a key may appear twice. After that a value is
// only where its bytes are: the decoders walk an array or an object one member at a time with
// a jsontext.Decoder over that value's bytes, reading a nested value in one step, and a
// free-form value is copied from its bytes in compact form, never descended into by the
// decoders. So reading a body costs a few words per open array or object, and a few words per
// member of an object whose keys repeat; what is kept (the decoded item) costs more.

// Kind is the JSON type of a value.
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
	return [...]string{"null", "boolean", "number", "string", "array", "object"}[k]
}

// kinds maps the kinds of jsontext to Kind.
var kinds = [256]Kind{'n': Null, 't': Bool, 'f': Bool, '0': Number, '"': String, '[': Array, '{': Object}

// jdoc is a body that parseJSON checked.
type jdoc struct {
	data []byte
	// repeats holds, by offset, the objects in which a key may appear twice (two of their
	// keys hash alike), with their number of members. Only those need the slower walk that
	// drops the repeats.
	repeats map[int]int
}

// reader is a jsontext.Decoder over a part of a body, which it reads without a copy.
type reader struct {
	dec  jsontext.Decoder
	buf  bytes.Buffer
	base int // the offset in the body of what the Decoder reads
}

var (
	readOptions = jsontext.AllowDuplicateNames(true)
	readers     = sync.Pool{New: func() any { return new(reader) }}
)

// reader returns a Decoder over data[start:end]; release gives it back.
func (doc *jdoc) reader(start, end int) *reader {
	r := readers.Get().(*reader)
	r.buf, r.base = *bytes.NewBuffer(doc.data[start:end:end]), start
	r.dec.Reset(&r.buf, readOptions)
	return r
}

func release(r *reader) {
	r.buf = bytes.Buffer{}
	r.dec.Reset(&r.buf, readOptions) // so that the pool holds no body
	readers.Put(r)
}

// value reads the next value (or object key); it is checked already.
func (r *reader) value(doc *jdoc) Value {
	k := r.dec.PeekKind()
	v, _ := r.dec.ReadValue()
	end := r.base + int(r.dec.InputOffset())
	return Value{kind: kinds[k], doc: doc, start: end - len(v), end: end}
}

// Value is one value of a checked body: its kind and where its bytes are. The zero Value
// is null.
type Value struct {
	kind       Kind
	doc        *jdoc
	start, end int
}

// valueAt is the value at offset start of the body.
func (doc *jdoc) valueAt(start int) Value {
	r := doc.reader(start, len(doc.data))
	defer release(r)
	return r.value(doc)
}

// Kind is the value's JSON type.
func (v Value) Kind() Kind { return v.kind }

// bytes is the value's text as written.
func (v Value) bytes() []byte { return v.doc.data[v.start:v.end] }

// Text is a string's value, or a number (or other value) exactly as written.
func (v Value) Text() string {
	if v.kind == String {
		return unquote(v.bytes())
	}
	return string(v.bytes())
}

func (v Value) Bool() bool { return v.kind == Bool && v.bytes()[0] == 't' }

// unquoted is the value of a string that jsontext checked: its bytes in the body when it
// has no escape, else unquoted into *scratch.
func unquoted(quoted []byte, scratch *[]byte) []byte {
	if bytes.IndexByte(quoted, '\\') < 0 {
		return quoted[1 : len(quoted)-1]
	}
	*scratch, _ = jsontext.AppendUnquote((*scratch)[:0], quoted)
	return *scratch
}

func unquote(quoted []byte) string { return string(unquoted(quoted, new([]byte))) }

// Key is an object key of a read body, as written (quotes included).
type Key []byte

func (k Key) String() string { return unquote(k) }

// Is reports whether the key is s, without a copy when it has no escape.
func (k Key) Is(s string) bool { return string(unquoted(k, new([]byte))) == s }

// KeySet is the keys an object may have. Looking a key up gives its name without a copy.
type KeySet map[string]string

func Keys(names ...string) KeySet {
	ks := make(KeySet, len(names))
	for _, n := range names {
		ks[n] = n
	}
	return ks
}

// Name returns the key's name when the set has it.
func (ks KeySet) Name(k Key) (name string, ok bool) {
	name, ok = ks[string(unquoted(k, new([]byte)))]
	return name, ok
}

// Iter walks the elements of an array (I, Val) or the members of an object (Key, Val):
// for it := v.Elems(); it.Next(); { … }. The members of an object come in order of first
// appearance: a repeated key is met once, at its first position, with its last value.
type Iter struct {
	I   int // the position of the current element or member, as written
	Key Key
	Val Value
	doc *jdoc
	r   *reader // nil once the walk is over, or when it follows take
	// An object whose keys may repeat is read from its members ms: take is the plan.
	ms   []member
	take []int32
}

// member is where one member of an object is: its quoted key and its value (or its end).
type member struct{ key, keyEnd, value int }

// Elems walks an array, or an object with its members as written.
func (v Value) Elems() Iter {
	r := v.doc.reader(v.start, v.end)
	_, _ = r.dec.ReadToken()
	return Iter{I: -1, doc: v.doc, r: r}
}

func (v Value) Members() Iter {
	it := v.Elems()
	n := v.doc.repeats[v.start]
	if n == 0 {
		return it
	}
	ms := make([]member, 0, n)
	for it.r.dec.PeekKind() != '}' {
		k, val := it.r.value(v.doc), it.r.value(v.doc)
		ms = append(ms, member{k.start, k.end, val.start})
	}
	release(it.r)
	return Iter{I: -1, doc: v.doc, ms: ms, take: plan(v.doc.data[:v.end], ms)}
}

func (it *Iter) Next() bool {
	if it.I++; it.I < len(it.take) {
		m := it.ms[it.take[it.I]]
		it.Key, it.Val = Key(it.doc.data[m.key:m.keyEnd]), it.doc.valueAt(m.value)
		return true
	} else if it.r == nil {
		return false
	} else if k := it.r.dec.PeekKind(); k == ']' || k == '}' {
		release(it.r)
		it.r = nil
		return false
	}
	if k, _ := it.r.dec.StackIndex(1); k == '{' {
		it.Key = Key(it.r.value(it.doc).bytes())
	}
	it.Val = it.r.value(it.doc)
	return true
}

// plan says how the members ms of an object, their keys quoted in obj, are read when a
// repeated key is kept once, at its first position, with its last value: in the order of
// the keys' first positions, the index of the member with each key's last value. It costs
// two words per member whatever the keys.
func plan(obj []byte, ms []member) []int32 {
	var sa, sb []byte
	esc := bytes.IndexByte(obj[ms[0].key:], '\\') >= 0 // else the keys compare as written
	compare := func(a, b int32) int {
		ka, kb := obj[ms[a].key:ms[a].keyEnd], obj[ms[b].key:ms[b].keyEnd]
		if esc {
			ka, kb = unquoted(ka, &sa), unquoted(kb, &sb)
		}
		return bytes.Compare(ka, kb)
	}
	order := make([]int32, len(ms))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return cmp.Or(compare(a, b), cmp.Compare(a, b)) })
	take, first := make([]int32, len(ms)), int32(0) // by member: the last one with its key, or -1
	for g, i := range order {
		if g > 0 && compare(order[g-1], i) == 0 {
			take[i], take[first] = -1, i
		} else {
			take[i], first = i, i
		}
	}
	return slices.DeleteFunc(take, func(j int32) bool { return j < 0 })
}

// Get returns the value of key in an object: its last value when it repeats.
func (v Value) Get(key string) (found Value, ok bool) {
	for it := v.Elems(); it.Next(); {
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

// hashBytes hashes a key's value.
var hashBytes = func(b []byte) uint64 { return maphash.Bytes(keySeed, b) }

var (
	errTooDeep    = errors.New("exceeded max depth of " + strconv.Itoa(MaxJSONDepth))
	errEndOfInput = errors.New("unexpected end of input") // what io.ErrUnexpectedEOF means in a body
)

// checker checks one value read from a jsontext.Decoder and finds the objects of a jdoc
// whose keys may repeat.
type checker struct {
	doc     *jdoc
	hashes  []uint64 // the key hashes of the objects being read, innermost last
	scratch []byte
}

// UnmarshalJSONFrom reads exactly one value, so json.Unmarshal checks what follows it.
func (c *checker) UnmarshalJSONFrom(d *jsontext.Decoder) error { return c.value(d, d.PeekKind()) }

// value checks the value d reads next, of kind k.
func (c *checker) value(d *jsontext.Decoder, k jsontext.Kind) error {
	if k == '}' || k == ']' { // where a value is missing
		_, err := d.ReadToken()
		return err
	} else if k != '{' && k != '[' {
		return d.SkipValue()
	}
	if _, err := d.ReadToken(); err != nil {
		return err
	} else if d.StackDepth() > MaxJSONDepth {
		return &jsontext.SyntacticError{ByteOffset: d.InputOffset() - 1, JSONPointer: d.StackPointer(), Err: errTooDeep}
	}
	start, base := int(d.InputOffset())-1, len(c.hashes)
	for pk := d.PeekKind(); pk != '}' && pk != ']'; pk = d.PeekKind() {
		// A key, unless a bracket stands in its place: reading that token gives the error.
		if k == '{' && pk != '{' && pk != '[' {
			key, err := d.ReadValue()
			if err != nil {
				return err
			} else if len(c.hashes) == cap(c.hashes) { // double, not the 1.25 of append: a long list costs twice its size
				c.hashes = append(make([]uint64, 0, max(64, 2*cap(c.hashes))), c.hashes...)
			}
			c.hashes, pk = append(c.hashes, hashBytes(unquoted(key, &c.scratch))), d.PeekKind()
		}
		if err := c.value(d, pk); err != nil {
			return err
		}
	}
	hs := c.hashes[base:]
	if slices.Sort(hs); len(slices.Compact(hs)) < len(hs) {
		c.doc.repeats[start] = len(hs)
	}
	c.hashes = c.hashes[:base]
	_, err := d.ReadToken() // the closing bracket, or the error of a wrong one
	return err
}

// parseJSON checks one complete JSON document (RFC 8259, UTF-8 throughout) with nothing but
// whitespace after it, and returns its top-level value. A repeated key is allowed; the
// walks take its last value, at its first position.
func parseJSON(data []byte) (Value, error) {
	doc := &jdoc{data: data, repeats: map[int]int{}}
	if err := json.Unmarshal(data, &checker{doc: doc}, jsontext.AllowDuplicateNames(true)); err != nil {
		return Value{}, err
	}
	return doc.valueAt(0), nil
}

// Raw returns the value as compact JSON: no whitespace, a repeated key kept once at its
// first position with its last value, strings escaped as jsontext escapes them (minimally:
// no HTML escaping, non-ASCII kept as is), number literals copied verbatim.
func (v Value) Raw() []byte {
	if v.doc == nil {
		return []byte("null")
	}
	r := v.doc.reader(v.start, v.end)
	defer release(r)
	var scratch []byte
	return v.doc.appendRaw(r, r.dec.PeekKind(), make([]byte, 0, v.end-v.start), &scratch)
}

// appendRaw appends the compact form of the value r reads next, of kind k, to out, reading it
// once. The members of an object whose keys may repeat are noted as they are written, and
// rewritten in place when the object closes; scratch is room for that.
func (doc *jdoc) appendRaw(r *reader, k jsontext.Kind, out []byte, scratch *[]byte) []byte {
	if k != '{' && k != '[' {
		v, _ := r.dec.ReadValue()
		return appendScalar(out, v)
	}
	_, _ = r.dec.ReadToken()
	n := doc.repeats[r.base+int(r.dec.InputOffset())-1]
	out = append(out, byte(k))
	body, ms := len(out), make([]member, 0, n)
	for pk := r.dec.PeekKind(); pk != k+2; pk = r.dec.PeekKind() { // up to the closing bracket
		if len(out) > body {
			out = append(out, ',')
		}
		if k == '{' {
			key, _ := r.dec.ReadValue()
			start := len(out)
			if out = appendScalar(out, key); n > 0 {
				ms = append(ms, member{key: start, keyEnd: len(out)})
			}
			out, pk = append(out, ':'), r.dec.PeekKind()
		}
		out = doc.appendRaw(r, pk, out, scratch)
	}
	_, _ = r.dec.ReadToken()
	if n > 0 {
		out = dropRepeats(out, body, ms, scratch)
	}
	return append(out, byte(k+2))
}

// dropRepeats rewrites the members ms of an object written to out[body:]: a repeated key is
// kept once, at its first position, with its last value. scratch is room to copy them to.
func dropRepeats(out []byte, body int, ms []member, scratch *[]byte) []byte {
	take := plan(out, ms)
	written := append((*scratch)[:0], out[body:]...)
	*scratch, out = written, out[:body]
	for _, j := range take {
		end := len(written) // a member ends at the comma before the next one, the last one with the object
		if int(j)+1 < len(ms) {
			end = ms[j+1].key - 1 - body
		}
		if len(out) > body {
			out = append(out, ',')
		}
		out = append(out, written[ms[j].key-body:end]...)
	}
	return out
}

// appendScalar appends a checked scalar: a string in the escaping of jsontext.AppendQuote,
// anything else as written.
func appendScalar(out, val []byte) []byte {
	if bytes.IndexByte(val, '\\') < 0 {
		// Nothing to unescape, and nothing to escape: a checked string has no control
		// character, no bare quote or backslash and no invalid UTF-8.
		return append(out, val...)
	}
	out, _ = jsontext.AppendQuote(out, unquote(val))
	return out
}

// syntaxMessage is what a body's syntax error says: the message of jsontext, in words that
// name the body rather than the reader of the body.
func syntaxMessage(err error) string {
	var se *jsontext.SyntacticError
	if !errors.As(err, &se) {
		return fmt.Sprint(err)
	} else if c := *se; errors.Is(se.Err, io.ErrUnexpectedEOF) {
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
	raw  []byte // a quoted key of the body, when name is not set
	idx  int    // the index, when up is set and neither name nor raw is
}

// At is the path of a top-level key.
func At(name string) Path { return Path{name: name} }

func (p *Path) Key(k string) Path { return Path{up: p, name: k} }

// KeyAt is Key for a key of the body, read only if the path is written.
func (p *Path) KeyAt(k Key) Path { return Path{up: p, raw: k} }

func (p *Path) Index(i int) Path { return Path{up: p, idx: i} }

func (p Path) String() string {
	if b := p.append(nil); len(b) > 0 {
		return string(b)
	}
	return "body"
}

// plainKey reports whether a path writes key k after a dot; the others are written ["k"].
func plainKey(k string) bool {
	return k != "" && strings.Trim(k, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-") == ""
}

func (p *Path) append(b []byte) []byte {
	if p.up != nil {
		b = p.up.append(b)
	}
	name := p.name
	switch {
	case p.raw != nil:
		name = unquote(p.raw)
	case name == "" && p.up != nil:
		return fmt.Appendf(b, "[%d]", p.idx)
	case name == "":
		return b
	}
	if !plainKey(name) {
		b, _ = jsontext.AppendQuote(append(b, '['), name)
		return append(b, ']')
	} else if len(b) > 0 {
		b = append(b, '.')
	}
	return append(b, name...)
}
