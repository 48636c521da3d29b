package export

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/codec"
)

// This file is the fast path of the pipeline. Decoding every item into maps and encoding
// them again costs several times more than the rest of an export; most exports run no
// processor or only processors that touch a few top-level keys. For those, a record stays a
// list of top-level keys with their values in the record encoding (keys sorted at every
// level, compact, jsontext's escaping) — exactly the bytes AppendJSON writes for the decoded
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

// rawRecord is a record whose top-level values are in the record encoding.
type rawRecord struct {
	members []rawMember // in key order
	arena   []byte      // holds the values; members slice into it
}

type rawMember struct {
	key string
	val []byte
}

func (r *rawRecord) find(key string) int {
	i, found := slices.BinarySearchFunc(r.members, key, func(m rawMember, k string) int { return strings.Compare(m.key, k) })
	if !found {
		return -1
	}
	return i
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
	r.setRaw(key, b)
	return nil
}

// setRaw sets a member, keeping the members in key order.
func (r *rawRecord) setRaw(key string, val []byte) {
	i, found := slices.BinarySearchFunc(r.members, key, func(m rawMember, k string) int { return strings.Compare(m.key, k) })
	if found {
		r.members[i].val = val
		return
	}
	r.members = slices.Insert(r.members, i, rawMember{key, val})
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
	dst = append(dst, '{')
	for i, m := range r.members {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = codec.AppendString(dst, m.key)
		dst = append(dst, ':')
		dst = append(dst, m.val...)
	}
	return append(dst, '}')
}

// readOptions read JSON as the records hold it: a repeated key is the record encoding's
// business (the last value counts) and invalid UTF-8 becomes U+FFFD.
var readOptions = []jsontext.Options{jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)}

// canon rewrites JSON read by jsontext into the record encoding: no whitespace, object keys
// sorted by their bytes (code point order) at every level — of a repeated key the last
// value counts, as when decoding into a map —, strings in jsontext's minimal escaping with
// invalid UTF-8 as U+FFFD, numbers as written. Byte order, not the UTF-16 order of
// jsontext.ReorderRawObjects, because it is the order of the decoded record's sorted map
// keys. A canon keeps its decoder and buffers between calls; it is not safe for concurrent
// use.
type canon struct {
	dec   jsontext.Decoder
	src   bytes.Buffer
	mems  []canonMember
	bufs  [][]byte // bufs[d] holds the members of the object being written at depth d
	name  []byte   // an unquoted object name
	spans []span   // the top-level members of the record being built
}

// canonMember is one member of an object being sorted: its key (unquoted) and its text
// (quoted key, colon, value), both in the depth's buffer.
type canonMember struct {
	kStart, kEnd int
	mStart, mEnd int
}

// start makes the decoder read doc; nothing is copied and doc is not changed.
func (c *canon) start(doc []byte) {
	c.src = *bytes.NewBuffer(doc)
	c.dec.Reset(&c.src, readOptions...)
}

// canonical appends the record encoding of the one JSON value in doc to dst.
func (c *canon) canonical(dst []byte, doc json.RawMessage) ([]byte, error) {
	c.start(doc)
	dst, err := c.value(dst, 0)
	if err == nil {
		if _, err = c.dec.ReadToken(); err == io.EOF {
			return dst, nil
		} else if err == nil {
			err = fmt.Errorf("data after the value at offset %d", c.dec.InputOffset())
		}
	}
	return dst, fmt.Errorf("export: invalid JSON: %w", err)
}

// value appends the record encoding of the decoder's next value to dst.
func (c *canon) value(dst []byte, depth int) ([]byte, error) {
	switch c.dec.PeekKind() {
	case '{':
		return c.object(dst, depth)
	case '[':
		if _, err := c.dec.ReadToken(); err != nil {
			return dst, err
		}
		dst = append(dst, '[')
		for n := 0; c.dec.PeekKind() != ']'; n++ {
			if n > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = c.value(dst, depth+1); err != nil {
				return dst, err
			}
		}
		if _, err := c.dec.ReadToken(); err != nil {
			return dst, err
		}
		return append(dst, ']'), nil
	}
	v, err := c.dec.ReadValue()
	if err != nil {
		return dst, err
	}
	if v[0] == '"' {
		return appendQuoted(dst, v), nil
	}
	return append(dst, v...), nil // numbers as written, literals
}

// appendQuoted appends the JSON string v (as read) in jsontext's minimal escaping.
func appendQuoted(dst []byte, v jsontext.Value) []byte {
	if bytes.IndexByte(v, '\\') < 0 && utf8.Valid(v) {
		return append(dst, v...)
	}
	s, _ := jsontext.AppendUnquote(nil, v) // invalid UTF-8 and lone surrogates become U+FFFD
	dst, _ = jsontext.AppendQuote(dst, s)
	return dst
}

// unquoted returns the content of the JSON string v (as read), in scratch when it has
// escapes or invalid UTF-8.
func unquoted(v jsontext.Value, scratch []byte) []byte {
	if bytes.IndexByte(v, '\\') < 0 && utf8.Valid(v) {
		return v[1 : len(v)-1]
	}
	s, _ := jsontext.AppendUnquote(scratch[:0], v)
	return s
}

// object writes an object's members sorted by key.
func (c *canon) object(dst []byte, depth int) ([]byte, error) {
	if _, err := c.dec.ReadToken(); err != nil {
		return dst, err
	}
	base := len(c.mems)
	for len(c.bufs) <= depth {
		c.bufs = append(c.bufs, nil)
	}
	// Members go to this depth's buffer: only one object per depth is being written at a
	// time, and dst always belongs to a shallower level.
	buf := c.bufs[depth][:0]
	sorted := true
	for c.dec.PeekKind() != '}' {
		v, err := c.dec.ReadValue()
		if err != nil {
			c.mems = c.mems[:base]
			return dst, err
		}
		var m canonMember
		if bytes.IndexByte(v, '\\') < 0 && utf8.Valid(v) {
			m.mStart = len(buf)
			m.kStart, m.kEnd = m.mStart+1, m.mStart+len(v)-1
			buf = append(buf, v...)
		} else {
			c.name = unquoted(v, c.name)
			m.kStart = len(buf)
			buf = append(buf, c.name...)
			m.kEnd, m.mStart = len(buf), len(buf)
			buf, _ = jsontext.AppendQuote(buf, c.name)
		}
		buf = append(buf, ':')
		if buf, err = c.value(buf, depth+1); err != nil {
			c.mems = c.mems[:base]
			return dst, err
		}
		m.mEnd = len(buf)
		if n := len(c.mems); sorted && n > base && bytes.Compare(buf[c.mems[n-1].kStart:c.mems[n-1].kEnd], buf[m.kStart:m.kEnd]) >= 0 {
			sorted = false
		}
		c.mems = append(c.mems, m)
	}
	mems := c.mems[base:]
	c.mems = c.mems[:base]
	if _, err := c.dec.ReadToken(); err != nil {
		return dst, err
	}
	c.bufs[depth] = buf
	if !sorted {
		// By key, then by position: of a repeated key the last one is written.
		slices.SortFunc(mems, func(a, b canonMember) int {
			if c := bytes.Compare(buf[a.kStart:a.kEnd], buf[b.kStart:b.kEnd]); c != 0 {
				return c
			}
			return a.mStart - b.mStart
		})
	}
	dst = append(dst, '{')
	n := 0
	for k, m := range mems {
		if !sorted && k+1 < len(mems) && bytes.Equal(buf[mems[k+1].kStart:mems[k+1].kEnd], buf[m.kStart:m.kEnd]) {
			continue // a later duplicate wins
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		dst = append(dst, buf[m.mStart:m.mEnd]...)
	}
	return append(dst, '}'), nil
}

// projectRaw is the projection on the fast path. The references are copied from the
// record's plugins, where they are already in the record encoding, by the rag-compat reader
// every other part of gtc uses; only an entry whose url needs trimming is decoded and
// written again.
func (r *rawRecord) projectRaw() error {
	var data []byte
	if i := r.find("plugins"); i >= 0 {
		var err error
		if data, err = rawAt(r.members[i].val, gtc.RAGCompatSlot, "data"); err != nil {
			return err
		}
	}
	out, n := []byte{'['}, 0
	var err error
	gtc.ReferenceEntries(data, func(raw json.RawMessage, url string, padded bool) {
		if err != nil {
			return
		}
		if n++; n > 1 {
			out = append(out, ',')
		}
		if !padded {
			out = append(out, raw...)
			return
		}
		var m any
		if m, err = DecodeJSON(raw); err == nil {
			m.(map[string]any)["url"] = url
			out, err = AppendJSON(out, m)
		}
	})
	if err != nil {
		return err
	}
	r.setRaw("totalReferences", strconv.AppendInt(nil, int64(n), 10))
	if n > 0 {
		r.setRaw("references", append(out, ']'))
	}
	return nil
}

var decoders = sync.Pool{New: func() any { return new(canon) }}

// rawAt follows object keys through a document in the record encoding (so no key repeats)
// and returns the value it finds; it is nil when a key is missing or a value on the way is
// not an object.
func rawAt(doc []byte, keys ...string) (jsontext.Value, error) {
	c := decoders.Get().(*canon)
	defer decoders.Put(c)
	c.start(doc)
	for _, k := range keys {
		if c.dec.PeekKind() != '{' {
			return nil, nil
		}
		if _, err := c.dec.ReadToken(); err != nil {
			return nil, err
		}
		found := false
		for !found && c.dec.PeekKind() == '"' {
			v, err := c.dec.ReadValue()
			if err != nil {
				return nil, err
			}
			if found = string(unquoted(v, c.name)) == k; !found {
				if err := c.dec.SkipValue(); err != nil {
					return nil, err
				}
			}
		}
		if !found {
			return nil, nil
		}
	}
	return c.dec.ReadValue()
}
