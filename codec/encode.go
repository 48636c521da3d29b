package codec

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/gtc-dev/gtc"
)

// form is one of the written forms of an item.
type form uint8

const (
	formAPI    form = iota // every key, nulls written, derived and api keys, milliseconds
	formStored             // no api keys, sparse nulls left out, microseconds
	// formRecord is what an export writes for an item: the API form with the keys of every
	// object in byte order and the top-level keys whose value is null left out (nested nulls
	// are written). Raw JSON values go through the caller's canonicalizer, which sorts their
	// keys the same way.
	formRecord
)

// AppendItemAPI appends the API form of the item to dst.
func AppendItemAPI(dst []byte, it *gtc.Item) []byte {
	w := writer{b: dst, fm: formAPI}
	w.object(itemTable, unsafe.Pointer(it), false)
	return w.b
}

// ItemAPIJSON returns the API form of the item.
func ItemAPIJSON(it *gtc.Item) []byte { return AppendItemAPI(nil, it) }

// AppendItemStored appends the stored form of the item to dst.
func AppendItemStored(dst []byte, it *gtc.Item) []byte {
	w := writer{b: dst, fm: formStored}
	w.object(itemTable, unsafe.Pointer(it), false)
	return w.b
}

// ItemStoredJSON returns the stored form of the item: the canonical document the stores keep.
func ItemStoredJSON(it *gtc.Item) []byte { return AppendItemStored(nil, it) }

// SortRaw appends a raw JSON value (a non-null json.RawMessage of an item) in the record
// form to dst.
type SortRaw func(dst []byte, raw json.RawMessage) ([]byte, error)

// AppendItemRecord appends the record form of the item to dst. member, when not nil, is
// called for each top-level key written, with the span of its value in the result.
func AppendItemRecord(dst []byte, it *gtc.Item, sortRaw SortRaw, member func(key string, start, end int)) ([]byte, error) {
	w := writer{b: dst, fm: formRecord, sortRaw: sortRaw, member: member}
	w.object(itemTable, unsafe.Pointer(it), true)
	return w.b, w.err
}

// writer writes one form of an item.
type writer struct {
	b       []byte
	fm      form
	sortRaw SortRaw                          // the record form's canonicalizer
	member  func(key string, start, end int) // told of the record form's top-level keys
	err     error                            // the first error of sortRaw
}

// AppendString appends s as a JSON string. Most strings need no escape at all; those are
// copied between quotes, and any other is quoted by jsontext (invalid UTF-8 is written as
// U+FFFD).
func AppendString(b []byte, s string) []byte {
	if plainString(s) {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	b, _ = jsontext.AppendQuote(b, s)
	return b
}

// plainString reports whether jsontext's minimal escaping leaves s as it is: valid UTF-8
// with no control character, quote or backslash. ASCII is checked eight bytes at a time: a
// byte below 0x20, a quote or a backslash makes its lane's high bit 1 in bad, and the high
// bit of a byte at or above 0x80 says the rest of s is not ASCII.
func plainString(s string) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	bs := unsafe.Slice(unsafe.StringData(s), len(s)) // read only
	i := 0
	for ; i+8 <= len(bs); i += 8 {
		x := binary.LittleEndian.Uint64(bs[i:])
		if x&highs != 0 {
			break
		}
		q, bsl := x^(ones*'"'), x^(ones*'\\')
		if bad := (x - ones*0x20) | (q-ones)&^q | (bsl-ones)&^bsl; bad&highs != 0 {
			return false
		}
	}
	ascii := true
	for ; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' {
			return false
		} else if c >= utf8.RuneSelf {
			ascii = false
		}
	}
	return ascii || utf8.ValidString(s)
}

// appendTime writes t in UTC as gtc.APITimeLayout (milliseconds) or gtc.StoredTimeLayout
// (microseconds) would: the seconds by time's own RFC 3339 fast path, then the fraction.
func appendTime(b []byte, t time.Time, fm form) []byte {
	t = t.UTC()
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339)
	b = b[:len(b)-1] // the Z, written again after the fraction
	frac, digits := t.Nanosecond()/1e6, 3
	if fm == formStored {
		frac, digits = t.Nanosecond()/1e3, 6
	}
	b = append(b, '.')
	for i := digits - 1; i >= 0; i-- {
		b = append(b, byte('0'+frac/pow10[i]%10))
	}
	return append(b, 'Z', '"')
}

var pow10 = [...]int{1, 10, 100, 1000, 10000, 100000}

func appendStrings(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendString(b, s)
	}
	return append(b, ']')
}

// object writes the struct at p; top is whether it is the item itself.
func (w *writer) object(t *table, p unsafe.Pointer, top bool) {
	keys := t.keys
	if w.fm == formRecord {
		keys = t.sorted
	}
	b := append(w.b, '{')
	first := true
	for _, k := range keys {
		f := k.f
		if (f.api || k.derived) && w.fm == formStored {
			continue
		}
		fp := f.at(p)
		null := false
		if !k.derived && f.isNil(fp) {
			switch {
			case f.omitnil, f.sparse && w.fm == formStored, top && w.fm == formRecord && f.nilIsNull:
				continue
			case f.nilIsNull:
				null = true
			}
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		if k.derived {
			b = append(b, f.derivedMem...)
		} else {
			b = append(b, f.member...)
		}
		start := len(b)
		switch {
		case k.derived:
			b = appendStrings(b, f.derive(p))
		case null:
			b = append(b, "null"...)
		default:
			w.b = b
			w.value(f, fp)
			b = w.b
		}
		if top && w.member != nil {
			w.member(k.name(), start, len(b))
		}
	}
	w.b = append(b, '}')
}

// value writes the value of f at fp; a nil value that reaches it is written empty.
func (w *writer) value(f *field, fp unsafe.Pointer) {
	b := w.b
	switch f.kind {
	case kString:
		s := *(*string)(fp)
		if s == "" && f.def != "" {
			s = f.def
		}
		b = AppendString(b, s)
	case kStringPtr:
		b = AppendString(b, **(**string)(fp))
	case kInt64Ptr:
		b = strconv.AppendInt(b, **(**int64)(fp), 10)
	case kInt64:
		b = strconv.AppendInt(b, *(*int64)(fp), 10)
	case kTime:
		b = appendTime(b, *(*time.Time)(fp), w.fm)
	case kTimePtr:
		b = appendTime(b, **(**time.Time)(fp), w.fm)
	case kRaw:
		// Whitespace around the value is not part of it: reading a document back drops it, so
		// writing it would make the same item encode two ways.
		r := bytes.Trim(*(*json.RawMessage)(fp), " \t\r\n")
		switch {
		case len(r) == 0 || string(r) == "null":
			b = append(b, "{}"...)
		case w.fm == formRecord:
			var err error
			if b, err = w.sortRaw(b, r); err != nil && w.err == nil {
				w.err = err
			}
		default:
			b = append(b, r...)
		}
	case kStrings:
		b = appendStrings(b, *(*[]string)(fp))
	case kStringMap:
		m := *(*map[string]string)(fp)
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendString(b, k)
			b = append(b, ':')
			b = AppendString(b, m[k])
		}
		b = append(b, '}')
	case kStruct:
		w.object(f.elem, fp, false)
		return
	case kStructs:
		hdr := (*sliceHeader)(fp)
		size := f.elem.typ.Size()
		w.b = append(w.b, '[')
		for i := range hdr.len {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			w.object(f.elem, unsafe.Add(hdr.data, uintptr(i)*size), false)
		}
		w.b = append(w.b, ']')
		return
	case kStructMap:
		w.structMap(f, fp)
		return
	default:
		panic("codec: unknown kind")
	}
	w.b = b
}

type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}

// structMap writes a map of described structs with its keys sorted. Such maps are small (an
// item's plugin slots); their values are copied out once, through reflection.
func (w *writer) structMap(f *field, fp unsafe.Pointer) {
	m := reflect.NewAt(f.typ, fp).Elem()
	keys := make([]string, 0, m.Len())
	for _, k := range m.MapKeys() {
		keys = append(keys, k.String())
	}
	slices.Sort(keys)
	v := reflect.New(f.typ.Elem()).Elem()
	w.b = append(w.b, '{')
	for i, k := range keys {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.b = AppendString(w.b, k)
		w.b = append(w.b, ':')
		v.Set(m.MapIndex(reflect.ValueOf(k).Convert(f.typ.Key())))
		w.object(f.elem, v.Addr().UnsafePointer(), false)
	}
	w.b = append(w.b, '}')
}
