package export

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// This file is the fast path of the pipeline. Decoding every item into maps and encoding
// them again costs about 50 µs an item; most exports run no processor or only processors
// that touch a few top-level keys. For those, a record stays a list of top-level keys with
// their values as canonical JSON bytes (keys sorted at every level, compact, the escaping of
// encoding/json without HTML escaping) — exactly the bytes AppendJSON writes for the decoded
// record — and only the keys a processor reads are decoded. Tests hold the two paths to the
// same output.

// fields is the view of a record that the built-in processors and the projection need, so
// one implementation serves decoded records and raw ones.
type fields interface {
	get(key string) (any, bool)
	set(key string, v any) error
	del(key string)
}

func (r Record) get(key string) (any, bool) {
	v, ok := r[key]
	return v, ok
}

func (r Record) set(key string, v any) error {
	r[key] = v
	return nil
}

func (r Record) del(key string) { delete(r, key) }

// rawRecord is a record whose top-level values are canonical JSON bytes.
type rawRecord struct {
	members []rawMember
	arena   []byte // holds the canonical values; members slice into it
}

type rawMember struct {
	key string
	val []byte
}

func (r *rawRecord) find(key string) int {
	for i := range r.members {
		if r.members[i].key == key {
			return i
		}
	}
	return -1
}

func (r *rawRecord) get(key string) (any, bool) {
	i := r.find(key)
	if i < 0 {
		return nil, false
	}
	v, err := DecodeJSON(r.members[i].val)
	if err != nil {
		return nil, false
	}
	return v, true
}

func (r *rawRecord) set(key string, v any) error {
	b, err := AppendJSON(nil, v)
	if err != nil {
		return err
	}
	if i := r.find(key); i >= 0 {
		r.members[i].val = b
		return nil
	}
	r.members = append(r.members, rawMember{key, b})
	return nil
}

func (r *rawRecord) del(key string) {
	if i := r.find(key); i >= 0 {
		r.members = slices.Delete(r.members, i, i+1)
	}
}

// str returns a top-level string value, or "".
func (r *rawRecord) str(key string) string {
	v, _ := r.get(key)
	s, _ := v.(string)
	return s
}

// appendTo writes the record's JSON: members in key order.
func (r *rawRecord) appendTo(dst []byte) []byte {
	slices.SortFunc(r.members, func(a, b rawMember) int { return cmpStrings(a.key, b.key) })
	dst = append(dst, '{')
	for i, m := range r.members {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, m.key)
		dst = append(dst, ':')
		dst = append(dst, m.val...)
	}
	return append(dst, '}')
}

func cmpStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// canon rewrites JSON into the record encoding. It keeps its member stack between calls.
type canon struct {
	src  []byte
	i    int
	mems []canonMember
	bufs [][]byte // bufs[d] holds the member values of the object being written at depth d
}

type canonMember struct {
	key          []byte // decoded
	vstart, vend int    // canonical value bytes in bufs[depth]
}

func (c *canon) reset(src []byte) {
	c.src, c.i = src, 0
}

func (c *canon) fail(msg string) error {
	return fmt.Errorf("export: invalid JSON at offset %d: %s", c.i, msg)
}

func (c *canon) ws() {
	for c.i < len(c.src) {
		switch c.src[c.i] {
		case ' ', '\t', '\n', '\r':
			c.i++
		default:
			return
		}
	}
}

func (c *canon) eat(b byte) bool {
	if c.i < len(c.src) && c.src[c.i] == b {
		c.i++
		return true
	}
	return false
}

// key reads an object key, decoded. The bytes are the source's when it has no escapes.
func (c *canon) key() ([]byte, error) {
	if c.i >= len(c.src) || c.src[c.i] != '"' {
		return nil, c.fail("expected a key")
	}
	start := c.i + 1
	for j := start; j < len(c.src); j++ {
		b := c.src[j]
		if b == '"' {
			c.i = j + 1
			return c.src[start:j], nil
		}
		if b == '\\' || b < 0x20 || b >= utf8.RuneSelf {
			break
		}
	}
	d := decoder{b: c.src, i: c.i}
	s := d.str()
	if d.err != nil {
		return nil, d.err
	}
	c.i = d.i
	return []byte(s), nil
}

// topKey interns the keys of the item's API JSON, so building a record does not allocate
// them.
func topKey(b []byte) string {
	if k, ok := apiKeys[string(b)]; ok {
		return k
	}
	return string(b)
}

var apiKeys = func() map[string]string {
	m := map[string]string{}
	for _, k := range []string{"id", "datasetName", "bucket", "status", "docType", "schemaVersion",
		"manualTags", "computedTags", "tags", "comment", "assignedTo", "assignedAt", "updatedAt",
		"updatedBy", "reviewedAt", "_etag", "scenarioId", "history", "contextEntries", "traceIds",
		"toolCalls", "expectedTools", "feedback", "metadata", "plugins", "createdBy", "createdAt",
		"tracePayload", "totalReferences", "references"} {
		m[k] = k
	}
	return m
}()

// value appends the canonical form of the value at c.i to dst.
func (c *canon) value(dst []byte, depth int) ([]byte, error) {
	if depth > maxDepth {
		return dst, errors.New("export: JSON nested too deep")
	}
	if c.i >= len(c.src) {
		return dst, c.fail("unexpected end")
	}
	switch b := c.src[c.i]; {
	case b == '{':
		return c.object(dst, depth)
	case b == '[':
		c.i++
		dst = append(dst, '[')
		c.ws()
		if c.eat(']') {
			return append(dst, ']'), nil
		}
		for n := 0; ; n++ {
			if n > 0 {
				dst = append(dst, ',')
			}
			c.ws()
			var err error
			if dst, err = c.value(dst, depth+1); err != nil {
				return dst, err
			}
			c.ws()
			if c.eat(',') {
				continue
			}
			if c.eat(']') {
				return append(dst, ']'), nil
			}
			return dst, c.fail("expected ',' or ']'")
		}
	case b == '"':
		return c.str(dst)
	case b == '-' || b >= '0' && b <= '9':
		end, ok := numberEnd(c.src, c.i)
		if !ok {
			return dst, c.fail("invalid number")
		}
		dst = append(dst, c.src[c.i:end]...)
		c.i = end
		return dst, nil
	default:
		for _, lit := range []string{"true", "false", "null"} {
			if bytes.HasPrefix(c.src[c.i:], []byte(lit)) {
				c.i += len(lit)
				return append(dst, lit...), nil
			}
		}
		return dst, c.fail("unexpected character")
	}
}

// str copies a string that needs no change and re-escapes the others.
func (c *canon) str(dst []byte) ([]byte, error) {
	start := c.i
	for j := start + 1; j < len(c.src); j++ {
		b := c.src[j]
		if b == '"' {
			c.i = j + 1
			return append(dst, c.src[start:c.i]...), nil
		}
		if b == '\\' || b < 0x20 {
			break
		}
		if b >= utf8.RuneSelf {
			r, size := utf8.DecodeRune(c.src[j:])
			if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
				break
			}
			j += size - 1
		}
	}
	d := decoder{b: c.src, i: c.i}
	s := d.str()
	if d.err != nil {
		return dst, d.err
	}
	c.i = d.i
	return appendString(dst, s), nil
}

// object writes an object's members sorted by key; of repeated keys the last one counts,
// as when decoding into a map.
func (c *canon) object(dst []byte, depth int) ([]byte, error) {
	c.i++
	c.ws()
	if c.eat('}') {
		return append(dst, '{', '}'), nil
	}
	base := len(c.mems)
	defer func() { c.mems = c.mems[:base] }()
	for len(c.bufs) <= depth {
		c.bufs = append(c.bufs, nil)
	}
	// Member values go to this depth's buffer: only one object per depth is being written
	// at a time, and dst always belongs to a shallower level.
	buf := c.bufs[depth][:0]
	for {
		c.ws()
		key, err := c.key()
		if err != nil {
			return dst, err
		}
		c.ws()
		if !c.eat(':') {
			return dst, c.fail("expected ':'")
		}
		c.ws()
		vstart := len(buf)
		if buf, err = c.value(buf, depth+1); err != nil {
			return dst, err
		}
		c.mems = append(c.mems, canonMember{key, vstart, len(buf)})
		c.ws()
		if c.eat(',') {
			continue
		}
		if c.eat('}') {
			break
		}
		return dst, c.fail("expected ',' or '}'")
	}
	c.bufs[depth] = buf
	mems := c.mems[base:]
	slices.SortStableFunc(mems, func(a, b canonMember) int { return bytes.Compare(a.key, b.key) })
	dst = append(dst, '{')
	n := 0
	for k, m := range mems {
		if k+1 < len(mems) && bytes.Equal(mems[k+1].key, m.key) {
			continue // a later duplicate wins
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		dst = appendString(dst, string(m.key))
		dst = append(dst, ':')
		dst = append(dst, buf[m.vstart:m.vend]...)
	}
	return append(dst, '}'), nil
}

// projectRaw is the projection on the fast path (the rag-compat reader of projection.go on
// canonical bytes): only plugins["rag-compat"].data.references is looked at, and entries
// are copied as bytes unless their url needs trimming.
func (r *rawRecord) projectRaw() error {
	var refs [][]byte
	if i := r.find("plugins"); i >= 0 {
		list := lookupPath(r.members[i].val, "rag-compat", "data", "references")
		for _, el := range arrayElements(list) {
			if len(el) == 0 || el[0] != '{' {
				continue
			}
			u := lookupPath(el, "url")
			if len(u) == 0 || u[0] != '"' {
				continue
			}
			v, err := DecodeJSON(u)
			if err != nil {
				return err
			}
			s := v.(string)
			t := strings.TrimSpace(s)
			if t == "" {
				continue
			}
			if t != s {
				m, err := DecodeJSON(el)
				if err != nil {
					return err
				}
				m.(map[string]any)["url"] = t
				if el, err = AppendJSON(nil, m); err != nil {
					return err
				}
			}
			refs = append(refs, el)
		}
	}
	r.setRaw("totalReferences", strconv.AppendInt(nil, int64(len(refs)), 10))
	if len(refs) > 0 {
		b := append(make([]byte, 0, 256), '[')
		for k, el := range refs {
			if k > 0 {
				b = append(b, ',')
			}
			b = append(b, el...)
		}
		r.setRaw("references", append(b, ']'))
	}
	return nil
}

func (r *rawRecord) setRaw(key string, val []byte) {
	if i := r.find(key); i >= 0 {
		r.members[i].val = val
		return
	}
	r.members = append(r.members, rawMember{key, val})
}

// lookupPath follows object keys through canonical JSON and returns the value's bytes, or
// nil when a key is missing or a value on the way is not an object.
func lookupPath(doc []byte, keys ...string) []byte {
	for _, k := range keys {
		doc = objectMember(doc, k)
		if doc == nil {
			return nil
		}
	}
	return doc
}

// objectMember returns the bytes of member key of a compact JSON object.
func objectMember(obj []byte, key string) []byte {
	if len(obj) < 2 || obj[0] != '{' {
		return nil
	}
	i := 1
	for i < len(obj) && obj[i] != '}' {
		kEnd := skipValue(obj, i)
		if kEnd < 0 || kEnd >= len(obj) || obj[kEnd] != ':' {
			return nil
		}
		vStart := kEnd + 1
		vEnd := skipValue(obj, vStart)
		if vEnd < 0 {
			return nil
		}
		if k, ok := plainString(obj[i:kEnd]); ok && k == key || !ok && decodedEquals(obj[i:kEnd], key) {
			return obj[vStart:vEnd]
		}
		i = vEnd
		if i < len(obj) && obj[i] == ',' {
			i++
		}
	}
	return nil
}

// arrayElements splits a compact JSON array into its elements' bytes.
func arrayElements(arr []byte) [][]byte {
	if len(arr) < 2 || arr[0] != '[' {
		return nil
	}
	var out [][]byte
	i := 1
	for i < len(arr) && arr[i] != ']' {
		end := skipValue(arr, i)
		if end < 0 {
			return nil
		}
		out = append(out, arr[i:end])
		i = end
		if i < len(arr) && arr[i] == ',' {
			i++
		}
	}
	return out
}

// skipValue returns the end of the compact JSON value starting at b[i], or -1.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		for j := i + 1; j < len(b); j++ {
			switch b[j] {
			case '\\':
				j++
			case '"':
				return j + 1
			}
		}
		return -1
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end := skipValue(b, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' {
		j++
	}
	return j
}

// plainString returns the content of a JSON string without escapes.
func plainString(s []byte) (string, bool) {
	if len(s) < 2 || bytes.IndexByte(s[1:len(s)-1], '\\') >= 0 {
		return "", false
	}
	return string(s[1 : len(s)-1]), true
}

func decodedEquals(s []byte, key string) bool {
	v, err := DecodeJSON(s)
	return err == nil && v == key
}
