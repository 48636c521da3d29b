package gtc

import (
	"bytes"
	"cmp"
	"fmt"
	"hash/maphash"
	"slices"
	"unicode/utf8"
)

// The request decoders need three things encoding/json does not give them together:
// every problem of a body reported with its path in document order, exact key matching,
// and free-form values kept byte-for-byte (64-bit integers, long decimals).
//
// A body is checked once, whole (syntax, UTF-8, nesting depth), without building anything.
// After that a value is only a view of its bytes: the decoders walk arrays and objects one
// member at a time, and a free-form value is copied from its bytes in compact form. So a body
// costs a small multiple of its size to decode, whatever its shape (a few words per member of
// an object whose keys repeat, at worst); what is kept (the decoded item) costs more.

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

// jdoc is a body that passed parseJSON.
type jdoc struct {
	data []byte
	// repeats holds, sorted, the offsets of the objects in which a key may appear twice (two
	// of their keys hash alike). Only those need the slower walk that drops the repeats.
	repeats []int
}

func (doc *jdoc) mayRepeat(objStart int) bool {
	if len(doc.repeats) == 0 {
		return false
	}
	_, found := slices.BinarySearch(doc.repeats, objStart)
	return found
}

// jvalue is one value of a checked body: its kind and where its bytes are. The zero jvalue
// is null.
type jvalue struct {
	kind       jkind
	doc        *jdoc
	start, end int
}

// valueAt returns the value that starts at data[pos].
func (doc *jdoc) valueAt(pos int) jvalue {
	return jvalue{kind: kindAt(doc.data[pos]), doc: doc, start: pos, end: skipValue(doc.data, pos)}
}

// kindAt is the kind of the value whose first byte is c.
func kindAt(c byte) jkind {
	switch c {
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

// text is a string's value, or a number literal exactly as written.
func (v jvalue) text() string {
	switch v.kind {
	case jString:
		s, _, _ := UnquoteJSONString(v.doc.data, v.start)
		return s
	case jNumber:
		return string(v.doc.data[v.start:v.end])
	}
	return ""
}

// literal is a number as written, without a copy; valid until the body changes.
func (v jvalue) literal() []byte { return v.doc.data[v.start:v.end] }

func (v jvalue) boolean() bool { return v.kind == jBool && v.doc.data[v.start] == 't' }

// skipSpace returns the index of the first non-space byte at or after i.
func skipSpace(d []byte, i int) int {
	for i < len(d) {
		switch d[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// skipValue returns the index just past the checked value at d[i].
func skipValue(d []byte, i int) int {
	switch d[i] {
	case '"':
		return skipString(d, i)
	case '{', '[':
		depth := 0
		for ; i < len(d); i++ {
			switch d[i] {
			case '"':
				i = skipString(d, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return i
	default: // number or literal
		for i < len(d) {
			switch d[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return i
			}
			i++
		}
		return i
	}
}

// skipString returns the index just past the checked string whose quote is d[i].
func skipString(d []byte, i int) int {
	i++
	for {
		q := bytes.IndexByte(d[i:], '"')
		if q < 0 {
			return len(d)
		}
		i += q
		// The quote closes the string unless an odd number of backslashes escapes it.
		n := 0
		for d[i-1-n] == '\\' {
			n++
		}
		i++
		if n%2 == 0 {
			return i
		}
	}
}

// jkey is an object key of a checked body.
type jkey struct {
	quoted []byte // the key as written, quotes included
	esc    bool   // it has an escape
}

func (doc *jdoc) keyAt(pos int) (jkey, int) {
	end := skipString(doc.data, pos)
	q := doc.data[pos:end]
	return jkey{quoted: q, esc: bytes.IndexByte(q, '\\') >= 0}, end
}

// String is the key's value.
func (k jkey) String() string {
	if !k.esc {
		return string(k.quoted[1 : len(k.quoted)-1])
	}
	s, _, _ := UnquoteJSONString(k.quoted, 0)
	return s
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
	pos int
	i   int
	val jvalue
}

func (v jvalue) elems() arrayIter { return arrayIter{doc: v.doc, pos: v.start + 1, i: -1} }

// nextItem finds where the next element or member of a container starts, from pos (just
// after the opening bracket or the previous item): past a comma when there is one. At the
// closing bracket it returns that position and false.
func nextItem(d []byte, pos int, closing byte) (int, bool) {
	pos = skipSpace(d, pos)
	switch d[pos] {
	case closing:
		return pos, false
	case ',':
		pos = skipSpace(d, pos+1)
	}
	return pos, true
}

func (it *arrayIter) next() bool {
	pos, ok := nextItem(it.doc.data, it.pos, ']')
	if !ok {
		it.pos = pos
		return false
	}
	it.val = it.doc.valueAt(pos)
	it.pos = it.val.end
	it.i++
	return true
}

// jmember is one member of an object.
type jmember struct {
	key jkey
	val jvalue
}

// memberAt reads the member whose key starts at data[pos].
func (doc *jdoc) memberAt(pos int) jmember {
	k, pos := doc.keyAt(pos)
	pos = skipSpace(doc.data, pos)
	pos = skipSpace(doc.data, pos+1) // the colon
	return jmember{key: k, val: doc.valueAt(pos)}
}

// objectIter walks the members of an object in order of first appearance: a repeated key
// is met once, at its first position, with its last value. For it := v.members(); it.next();
// { it.key, it.val }.
type objectIter struct {
	jmember
	doc    *jdoc
	pos    int // where the next member (or the closing brace) is, after a comma or not
	keyPos int // where the key of the current member starts
	// plan is repeatPlan of an object whose keys may repeat, nil for the others.
	plan []int
	pi   int
}

func (v jvalue) members() objectIter {
	it := objectIter{doc: v.doc, pos: v.start + 1}
	if v.doc.mayRepeat(v.start) {
		it.plan, _ = v.repeatPlan()
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
	pos, ok := nextItem(it.doc.data, it.pos, '}')
	if !ok {
		it.pos = pos
		return false
	}
	it.keyPos = pos
	it.jmember = it.doc.memberAt(pos)
	it.pos = it.val.end
	return true
}

// repeatPlan is how an object whose keys may repeat is read: for each member in document
// order, where the member to take in its place starts (the last one with its key) when its
// key appears there first, or -1 when the key appeared before. It also returns where the
// object ends. Members are grouped by the hash of their key and compared only within a
// group, so the plan costs a few words per member whatever the keys.
func (v jvalue) repeatPlan() ([]int, int) {
	n := 0
	it := objectIter{doc: v.doc, pos: v.start + 1}
	for it.nextRaw() {
		n++
	}
	type ref struct {
		hash     uint64
		idx, key int
	}
	refs := make([]ref, 0, n)
	var scratch []byte
	it = objectIter{doc: v.doc, pos: v.start + 1}
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
			first, _ := v.doc.keyAt(head.key)
			last := head.key
			rest := group[:0]
			for _, r := range group[1:] {
				if k, _ := v.doc.keyAt(r.key); k.equal(first) {
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
	return plan, it.pos + 1
}

// get returns the value of key in an object: its last value when it repeats.
func (v jvalue) get(key string) (jvalue, bool) {
	var found jvalue
	ok := false
	raw := objectIter{doc: v.doc, pos: v.start + 1}
	for raw.nextRaw() {
		if raw.key.is(key) {
			found, ok = raw.val, true
		}
	}
	return found, ok
}

// MaxJSONDepth bounds the nesting of request bodies so hostile input cannot exhaust the stack.
const MaxJSONDepth = 512

// JSONSyntaxError describes why a body is not JSON.
type JSONSyntaxError struct {
	Offset int
	Msg    string
}

func (e *JSONSyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at byte %d: %s", e.Offset, e.Msg)
}

// keySeed hashes object keys to find the objects whose keys may repeat.
var keySeed = maphash.MakeSeed()

// jparser checks a body. It builds nothing but the list of objects whose keys may repeat.
type jparser struct {
	data []byte
	pos  int
	// hashes holds the key hashes of the objects being read, innermost last.
	hashes  []uint64
	repeats []int
	scratch []byte
}

// parseJSON checks one complete JSON document (RFC 8259) with nothing but whitespace after
// it, and returns its top-level value.
func parseJSON(data []byte) (jvalue, error) {
	if !utf8.Valid(data) {
		return jvalue{}, &JSONSyntaxError{Offset: firstInvalidUTF8(data), Msg: "invalid UTF-8"}
	}
	p := &jparser{data: data}
	p.skipSpace()
	start := p.pos
	if err := p.value(0); err != nil {
		return jvalue{}, err
	}
	end := p.pos
	p.skipSpace()
	if p.pos != len(p.data) {
		return jvalue{}, p.fail("unexpected data after the top-level value")
	}
	slices.Sort(p.repeats)
	doc := &jdoc{data: data, repeats: p.repeats}
	return jvalue{kind: kindAt(data[start]), doc: doc, start: start, end: end}, nil
}

func firstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b)
}

func (p *jparser) fail(msg string) error { return &JSONSyntaxError{Offset: p.pos, Msg: msg} }

func (p *jparser) skipSpace() { p.pos = skipSpace(p.data, p.pos) }

func (p *jparser) value(depth int) error {
	if depth > MaxJSONDepth {
		return p.fail(fmt.Sprintf("nesting deeper than %d levels", MaxJSONDepth))
	}
	if p.pos >= len(p.data) {
		return p.fail("unexpected end of input")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		return p.str()
	case c == 't':
		return p.literal("true")
	case c == 'f':
		return p.literal("false")
	case c == 'n':
		return p.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	default:
		return p.fail(fmt.Sprintf("unexpected character %q", c))
	}
}

func (p *jparser) literal(word string) error {
	if !bytes.HasPrefix(p.data[p.pos:], []byte(word)) {
		return p.fail("invalid literal")
	}
	p.pos += len(word)
	return nil
}

func (p *jparser) object(depth int) error {
	start := p.pos
	p.pos++ // {
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return nil
	}
	base := len(p.hashes)
	for {
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return p.fail("expected a string key")
		}
		keyStart := p.pos
		if err := p.str(); err != nil {
			return err
		}
		var h uint64
		h, p.scratch = hashKey(p.data[keyStart:p.pos], p.scratch)
		p.hashes = appendDoubling(p.hashes, h)
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return p.fail("expected ':' after an object key")
		}
		p.pos++
		p.skipSpace()
		if err := p.value(depth + 1); err != nil {
			return err
		}
		p.skipSpace()
		if p.pos >= len(p.data) {
			return p.fail("unexpected end of input in an object")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			if repeats(p.hashes[base:]) {
				p.repeats = appendDoubling(p.repeats, start)
			}
			p.hashes = p.hashes[:base]
			return nil
		default:
			return p.fail("expected ',' or '}' in an object")
		}
	}
}

// hashBytes hashes a key's value for hashKey.
var hashBytes = func(b []byte) uint64 { return maphash.Bytes(keySeed, b) }

// hashKey hashes the value of a quoted key; scratch is room to unescape it in.
func hashKey(quoted, scratch []byte) (uint64, []byte) {
	q := quoted[1 : len(quoted)-1]
	if bytes.IndexByte(q, '\\') < 0 {
		return hashBytes(q), scratch
	}
	scratch = scratch[:0]
	for i := 1; i < len(quoted)-1; {
		if c := quoted[i]; c != '\\' {
			scratch = append(scratch, c)
			i++
			continue
		}
		r, next, _, _ := decodeEscape(quoted, i)
		scratch = utf8.AppendRune(scratch, r)
		i = next
	}
	return hashBytes(scratch), scratch
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

func (p *jparser) array(depth int) error {
	p.pos++ // [
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return nil
	}
	for {
		p.skipSpace()
		if err := p.value(depth + 1); err != nil {
			return err
		}
		p.skipSpace()
		if p.pos >= len(p.data) {
			return p.fail("unexpected end of input in an array")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			return nil
		default:
			return p.fail("expected ',' or ']' in an array")
		}
	}
}

func (p *jparser) number() error {
	d := p.data
	if p.pos < len(d) && d[p.pos] == '-' {
		p.pos++
	}
	if p.pos >= len(d) {
		return p.fail("invalid number")
	}
	if d[p.pos] == '0' {
		p.pos++
	} else if d[p.pos] >= '1' && d[p.pos] <= '9' {
		for p.pos < len(d) && d[p.pos] >= '0' && d[p.pos] <= '9' {
			p.pos++
		}
	} else {
		return p.fail("invalid number")
	}
	if p.pos < len(d) && d[p.pos] == '.' {
		p.pos++
		n := p.pos
		for p.pos < len(d) && d[p.pos] >= '0' && d[p.pos] <= '9' {
			p.pos++
		}
		if p.pos == n {
			return p.fail("invalid number")
		}
	}
	if p.pos < len(d) && (d[p.pos] == 'e' || d[p.pos] == 'E') {
		p.pos++
		if p.pos < len(d) && (d[p.pos] == '+' || d[p.pos] == '-') {
			p.pos++
		}
		n := p.pos
		for p.pos < len(d) && d[p.pos] >= '0' && d[p.pos] <= '9' {
			p.pos++
		}
		if p.pos == n {
			return p.fail("invalid number")
		}
	}
	return nil
}

func (p *jparser) str() error {
	end, problem := skipJSONString(p.data, p.pos)
	p.pos = end
	if problem != "" {
		return p.fail(problem)
	}
	return nil
}

// raw returns the value as compact JSON: no whitespace, a repeated key kept once at its
// first position with its last value, strings escaped minimally (no HTML escaping, non-ASCII
// kept as is), number literals copied verbatim.
func (v jvalue) raw() []byte {
	if v.kind == jNull && v.doc == nil {
		return []byte("null")
	}
	e := jencoder{doc: v.doc, out: make([]byte, 0, v.end-v.start)}
	e.value(v.start)
	return e.out
}

// jencoder writes checked values in compact form.
type jencoder struct {
	doc *jdoc
	out []byte
}

// value writes the value at data[pos] and returns the index after it.
func (e *jencoder) value(pos int) int {
	d := e.doc.data
	switch d[pos] {
	case '"':
		return e.str(pos)
	case '[':
		e.out = append(e.out, '[')
		pos = skipSpace(d, pos+1)
		for first := true; d[pos] != ']'; first = false {
			if !first {
				e.out = append(e.out, ',')
				pos = skipSpace(d, pos+1) // the comma
			}
			pos = skipSpace(d, e.value(pos))
		}
		e.out = append(e.out, ']')
		return pos + 1
	case '{':
		if e.doc.mayRepeat(pos) {
			return e.objectDropRepeats(pos)
		}
		e.out = append(e.out, '{')
		pos = skipSpace(d, pos+1)
		for first := true; d[pos] != '}'; first = false {
			if !first {
				e.out = append(e.out, ',')
				pos = skipSpace(d, pos+1)
			}
			pos = e.member(pos)
		}
		e.out = append(e.out, '}')
		return pos + 1
	default:
		end := skipValue(d, pos)
		e.out = append(e.out, d[pos:end]...)
		return end
	}
}

// member writes the member at data[pos] and returns the index of what follows it (a comma
// or the closing brace).
func (e *jencoder) member(pos int) int {
	d := e.doc.data
	pos = e.str(pos)
	e.out = append(e.out, ':')
	pos = skipSpace(d, pos)
	pos = skipSpace(d, pos+1) // the colon
	return skipSpace(d, e.value(pos))
}

// objectDropRepeats writes an object whose keys may repeat: each key once, at its first
// position, with its last value.
func (e *jencoder) objectDropRepeats(pos int) int {
	plan, end := jvalue{kind: jObject, doc: e.doc, start: pos}.repeatPlan()
	e.out = append(e.out, '{')
	first := true
	for _, at := range plan {
		if at < 0 {
			continue
		}
		if !first {
			e.out = append(e.out, ',')
		}
		first = false
		e.member(at)
	}
	e.out = append(e.out, '}')
	return end
}

// str writes the string at data[pos] as writeJSONString writes its value, and returns the
// index after it.
func (e *jencoder) str(pos int) int {
	d := e.doc.data
	end := skipString(d, pos)
	q := d[pos:end]
	if bytes.IndexByte(q, '\\') < 0 {
		// Nothing to unescape, and nothing writeJSONString would escape: a checked string
		// has no control character, no bare quote or backslash and no invalid UTF-8.
		e.out = append(e.out, q...)
		return end
	}
	e.out = append(e.out, '"')
	for i := pos + 1; i < end-1; {
		c := d[i]
		if c != '\\' {
			e.out = append(e.out, c)
			i++
			continue
		}
		r, next, _, _ := decodeEscape(d, i)
		i = next
		switch {
		case r == '"' || r == '\\':
			e.out = append(e.out, '\\', byte(r))
		case r == '\n':
			e.out = append(e.out, '\\', 'n')
		case r == '\r':
			e.out = append(e.out, '\\', 'r')
		case r == '\t':
			e.out = append(e.out, '\\', 't')
		case r < 0x20:
			e.out = append(e.out, '\\', 'u', '0', '0', hexDigits[r>>4], hexDigits[r&0xf])
		default:
			e.out = utf8.AppendRune(e.out, r)
		}
	}
	e.out = append(e.out, '"')
	return end
}

const hexDigits = "0123456789abcdef"

func writeJSONString(buf *bytes.Buffer, s string) {
	buf.WriteByte('"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			buf.WriteString(s[start:i])
			switch c {
			case '"', '\\':
				buf.WriteByte('\\')
				buf.WriteByte(c)
			case '\n':
				buf.WriteString(`\n`)
			case '\r':
				buf.WriteString(`\r`)
			case '\t':
				buf.WriteString(`\t`)
			default:
				buf.WriteString(`\u00`)
				buf.WriteByte(hexDigits[c>>4])
				buf.WriteByte(hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			buf.WriteString(s[start:i])
			buf.WriteString(`\ufffd`)
			i += size
			start = i
			continue
		}
		i += size
	}
	buf.WriteString(s[start:])
	buf.WriteByte('"')
}
