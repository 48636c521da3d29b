package codec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/gtc-dev/gtc"
)

// The stored form is read on every list page, every scan page of an export or a recompute,
// and every GET. The reader walks the document once with a jsontext.Decoder over its bytes:
// raw values are sliced out of the document without a copy, unknown keys are skipped, and a
// missing or null key reads as its default.

// storedOptions read stored documents leniently: a repeated key counts with its last value,
// and invalid UTF-8 is kept as it was written.
var storedOptions = jsonv2.JoinOptions(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))

type storedDecoder struct {
	buf bytes.Buffer
	dec jsontext.Decoder
	tmp []byte
}

var storedDecoders = sync.Pool{New: func() any { return new(storedDecoder) }}

var errTrailingData = errors.New("stored document: data after the top-level value")

// DecodeStoredItem reads a stored document. Missing nullable keys read as null and unknown
// keys are ignored. The ETag is not part of the document; the store sets it. Raw values of
// the item share doc's bytes, so doc must not be modified afterwards.
func DecodeStoredItem(doc []byte) (*gtc.Item, error) {
	d := storedDecoders.Get().(*storedDecoder)
	defer func() {
		d.buf = bytes.Buffer{}
		storedDecoders.Put(d)
	}()
	d.buf = *bytes.NewBuffer(doc)
	d.dec.Reset(&d.buf, storedOptions)
	it := &gtc.Item{}
	if err := d.object(itemTable, unsafe.Pointer(it)); err != nil {
		return nil, storedError(err)
	}
	if _, err := d.dec.ReadToken(); err != io.EOF {
		if err == nil {
			err = errTrailingData
		}
		return nil, storedError(err)
	}
	it.FillDefaults()
	return it, nil
}

func storedError(err error) error {
	if errors.Is(err, errTrailingData) {
		return err
	}
	return fmt.Errorf("stored document: %w", err)
}

// object reads an object (or null, which leaves the struct as it is) into the struct at p.
func (d *storedDecoder) object(t *table, p unsafe.Pointer) error {
	tok, err := d.dec.ReadToken()
	if err != nil {
		return err
	}
	switch tok.Kind() {
	case 'n':
		return nil
	case '{':
	default:
		return fmt.Errorf("%s: expected an object", d.dec.StackPointer())
	}
	next := 0 // the stored form writes the fields in table order: try the next one first
	for d.dec.PeekKind() != '}' {
		name, err := d.dec.ReadValue()
		if err != nil {
			return err
		}
		var f *field
		for next < len(t.fields) && t.fields[next].api {
			next++
		}
		if k := d.key(name); next < len(t.fields) && t.fields[next].key == k {
			f = &t.fields[next]
		} else if f = t.byKey[k]; f != nil {
			next = f.pos
		}
		next++
		if f == nil || f.api {
			if err := d.dec.SkipValue(); err != nil {
				return err
			}
			continue
		}
		if err := d.value(f, f.at(p)); err != nil {
			return err
		}
	}
	if _, err := d.dec.ReadToken(); err != nil {
		return err
	}
	for i := range t.fields {
		// A required raw value always reads as a JSON value: a missing one is null.
		if f := &t.fields[i]; f.required && f.kind == kRaw && len(*(*json.RawMessage)(f.at(p))) == 0 {
			*(*json.RawMessage)(f.at(p)) = json.RawMessage("null")
		}
	}
	return nil
}

// key is the text of an object name; a name without escapes is looked up without a copy.
func (d *storedDecoder) key(name jsontext.Value) string {
	if bytes.IndexByte(name, '\\') < 0 {
		return unsafe.String(unsafe.SliceData(name[1:]), len(name)-2)
	}
	d.tmp, _ = jsontext.AppendUnquote(d.tmp[:0], name)
	return string(d.tmp)
}

// str reads a string; null reads as "".
func (d *storedDecoder) str() (string, error) {
	v, err := d.dec.ReadValue()
	if err != nil {
		return "", err
	}
	switch v.Kind() {
	case 'n':
		return "", nil
	case '"':
		if bytes.IndexByte(v, '\\') < 0 {
			return string(v[1 : len(v)-1]), nil
		}
		d.tmp, _ = jsontext.AppendUnquote(d.tmp[:0], v)
		return string(d.tmp), nil
	}
	return "", fmt.Errorf("%s: expected a string", d.dec.StackPointer())
}

// isNull consumes a null if one is next.
func (d *storedDecoder) isNull() (bool, error) {
	if d.dec.PeekKind() != 'n' {
		return false, nil
	}
	_, err := d.dec.ReadToken()
	return true, err
}

func (d *storedDecoder) time() (t time.Time, null bool, err error) {
	if null, err := d.isNull(); null || err != nil {
		return time.Time{}, true, err
	}
	s, err := d.str()
	if err != nil {
		return time.Time{}, false, err
	}
	if t, err = time.Parse(time.RFC3339Nano, s); err != nil {
		return time.Time{}, false, fmt.Errorf("%s: invalid date-time", d.dec.StackPointer())
	}
	return t.UTC(), false, nil
}

// value reads the value of f into fp.
func (d *storedDecoder) value(f *field, fp unsafe.Pointer) error {
	switch f.kind {
	case kString:
		s, err := d.str()
		*(*string)(fp) = s
		return err
	case kStringPtr:
		if null, err := d.isNull(); null || err != nil {
			*(**string)(fp) = nil
			return err
		}
		s, err := d.str()
		*(**string)(fp) = &s
		return err
	case kInt64Ptr, kInt64:
		if null, err := d.isNull(); null || err != nil {
			if f.kind == kInt64Ptr {
				*(**int64)(fp) = nil
			} else {
				*(*int64)(fp) = 0
			}
			return err
		}
		v, err := d.dec.ReadValue()
		if err != nil {
			return err
		}
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			return fmt.Errorf("%s: expected an integer", d.dec.StackPointer())
		}
		if f.kind == kInt64Ptr {
			*(**int64)(fp) = &n
		} else {
			*(*int64)(fp) = n
		}
		return nil
	case kTime:
		t, _, err := d.time()
		*(*time.Time)(fp) = t
		return err
	case kTimePtr:
		t, null, err := d.time()
		if null || err != nil {
			*(**time.Time)(fp) = nil
		} else {
			*(**time.Time)(fp) = &t
		}
		return err
	case kRaw:
		v, err := d.dec.ReadValue()
		if err != nil {
			return err
		}
		if v.Kind() == 'n' && !f.required {
			v = nil
		}
		*(*json.RawMessage)(fp) = json.RawMessage(v)
		return nil
	case kStrings:
		if null, err := d.isNull(); null || err != nil {
			*(*[]string)(fp) = f.nilOrEmptyStrings()
			return err
		}
		if _, err := d.dec.ReadToken(); err != nil {
			return err
		}
		out := []string{}
		for d.dec.PeekKind() != ']' {
			s, err := d.str()
			if err != nil {
				return err
			}
			out = append(out, s)
		}
		*(*[]string)(fp) = out
		_, err := d.dec.ReadToken()
		return err
	case kStringMap:
		if null, err := d.isNull(); null || err != nil {
			*(*map[string]string)(fp) = nil
			return err
		}
		if err := d.open('{'); err != nil {
			return err
		}
		m := map[string]string{}
		for d.dec.PeekKind() != '}' {
			name, err := d.dec.ReadValue()
			if err != nil {
				return err
			}
			k := strings.Clone(d.key(name))
			if m[k], err = d.str(); err != nil {
				return err
			}
		}
		*(*map[string]string)(fp) = m
		_, err := d.dec.ReadToken()
		return err
	case kStruct:
		return d.object(f.elem, fp)
	case kStructs:
		return d.structs(f, fp)
	case kStructMap:
		return d.structMap(f, fp)
	}
	panic("codec: unknown kind")
}

func (f *field) nilOrEmptyStrings() []string {
	if f.omitnil || f.nullable || f.sparse {
		return nil
	}
	return []string{}
}

// open reads the opening delimiter c.
func (d *storedDecoder) open(c jsontext.Kind) error {
	tok, err := d.dec.ReadToken()
	if err != nil {
		return err
	}
	if tok.Kind() != c {
		return fmt.Errorf("%s: expected %q", d.dec.StackPointer(), c)
	}
	return nil
}

// structs reads an array of described structs (null reads as an empty list); a null element
// reads as a zero element.
func (d *storedDecoder) structs(f *field, fp unsafe.Pointer) error {
	st := f.typ // []S
	size := f.elem.typ.Size()
	hdr := (*sliceHeader)(fp)
	// Start from a fresh empty list; a repeated key counts with its last value.
	reflect.NewAt(st, fp).Elem().Set(reflect.MakeSlice(st, 0, 0))
	if null, err := d.isNull(); null || err != nil {
		return err
	}
	if err := d.open('['); err != nil {
		return err
	}
	for d.dec.PeekKind() != ']' {
		if hdr.len == hdr.cap {
			s := reflect.NewAt(st, fp).Elem()
			grown := reflect.MakeSlice(st, hdr.len, max(4, 2*hdr.cap))
			reflect.Copy(grown, s)
			s.Set(grown)
		}
		hdr.len++ // the new element is zero: MakeSlice zeroes the whole capacity
		if err := d.object(f.elem, unsafe.Add(hdr.data, uintptr(hdr.len-1)*size)); err != nil {
			return err
		}
	}
	_, err := d.dec.ReadToken()
	return err
}

// structMap reads an object of described structs (null reads as an empty map); a null value
// reads as a zero struct.
func (d *storedDecoder) structMap(f *field, fp unsafe.Pointer) error {
	m := reflect.NewAt(f.typ, fp).Elem()
	m.Set(reflect.MakeMap(f.typ))
	if null, err := d.isNull(); null || err != nil {
		return err
	}
	if err := d.open('{'); err != nil {
		return err
	}
	for d.dec.PeekKind() != '}' {
		name, err := d.dec.ReadValue()
		if err != nil {
			return err
		}
		k := reflect.ValueOf(strings.Clone(d.key(name)))
		v := reflect.New(f.elem.typ)
		if err := d.object(f.elem, v.UnsafePointer()); err != nil {
			return err
		}
		m.SetMapIndex(k, v.Elem())
	}
	_, err := d.dec.ReadToken()
	return err
}
