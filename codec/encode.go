package codec

import (
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
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
)

// AppendItemAPI appends the API form of the item to dst.
func AppendItemAPI(dst []byte, it *gtc.Item) []byte {
	return appendObject(dst, itemTable, unsafe.Pointer(it), formAPI)
}

// ItemAPIJSON returns the API form of the item.
func ItemAPIJSON(it *gtc.Item) []byte { return AppendItemAPI(nil, it) }

// AppendItemStored appends the stored form of the item to dst.
func AppendItemStored(dst []byte, it *gtc.Item) []byte {
	return appendObject(dst, itemTable, unsafe.Pointer(it), formStored)
}

// ItemStoredJSON returns the stored form of the item: the canonical document the stores keep.
func ItemStoredJSON(it *gtc.Item) []byte { return AppendItemStored(nil, it) }

// appendString appends s as a JSON string. Most strings need no escape at all; those are
// copied between quotes, and any other is quoted by jsontext (invalid UTF-8 is written as
// U+FFFD).
func appendString(b []byte, s string) []byte {
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
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		if x&highs != 0 {
			break
		}
		q, bs := x^(ones*'"'), x^(ones*'\\')
		if bad := (x - ones*0x20) | (q-ones)&^q | (bs-ones)&^bs; bad&highs != 0 {
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
		b = appendString(b, s)
	}
	return append(b, ']')
}

func appendObject(b []byte, t *table, p unsafe.Pointer, fm form) []byte {
	b = append(b, '{')
	first := true
	for i := range t.fields {
		f := &t.fields[i]
		if f.api && fm != formAPI {
			continue
		}
		fp := f.at(p)
		if f.isNil(fp) {
			switch {
			case f.omitnil, f.sparse && fm == formStored:
				continue
			case f.nullable || f.sparse || !f.emptyWhenNil():
				if !first {
					b = append(b, ',')
				}
				first = false
				b = append(b, f.member...)
				b = append(b, "null"...)
				continue
			}
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, f.member...)
		b = appendValue(b, f, fp, fm)
		if f.derive != nil && fm == formAPI {
			b = append(b, ',')
			b = append(b, f.derivedMem...)
			b = appendStrings(b, f.derive(p))
		}
	}
	return append(b, '}')
}

// emptyWhenNil reports whether a nil value of f is written as an empty value ([] or {})
// rather than null.
func (f *field) emptyWhenNil() bool {
	switch f.kind {
	case kStrings, kStructs, kStringMap, kStructMap:
		return true
	case kRaw:
		return f.object
	}
	return false
}

// appendValue writes the value of f at fp; a nil value that reaches it is written empty.
func appendValue(b []byte, f *field, fp unsafe.Pointer, fm form) []byte {
	switch f.kind {
	case kString:
		s := *(*string)(fp)
		if s == "" && f.def != "" {
			s = f.def
		}
		return appendString(b, s)
	case kStringPtr:
		return appendString(b, **(**string)(fp))
	case kInt64Ptr:
		return strconv.AppendInt(b, **(**int64)(fp), 10)
	case kTime:
		return appendTime(b, *(*time.Time)(fp), fm)
	case kTimePtr:
		return appendTime(b, **(**time.Time)(fp), fm)
	case kRaw:
		r := *(*json.RawMessage)(fp)
		if len(r) == 0 || string(r) == "null" {
			return append(b, "{}"...)
		}
		return append(b, r...)
	case kStrings:
		return appendStrings(b, *(*[]string)(fp))
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
			b = appendString(b, k)
			b = append(b, ':')
			b = appendString(b, m[k])
		}
		return append(b, '}')
	case kStruct:
		return appendObject(b, f.elem, fp, fm)
	case kStructs:
		hdr := (*sliceHeader)(fp)
		size := f.elem.typ.Size()
		b = append(b, '[')
		for i := range hdr.len {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendObject(b, f.elem, unsafe.Add(hdr.data, uintptr(i)*size), fm)
		}
		return append(b, ']')
	case kStructMap:
		return appendStructMap(b, f, fp, fm)
	}
	panic("codec: unknown kind")
}

type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}

// appendStructMap writes a map of described structs with its keys sorted. Such maps are
// small (an item's plugin slots); their values are copied out once, through reflection.
func appendStructMap(b []byte, f *field, fp unsafe.Pointer, fm form) []byte {
	m := reflect.NewAt(f.typ, fp).Elem()
	n := m.Len()
	keys := make([]string, 0, n)
	vals := reflect.MakeSlice(reflect.SliceOf(f.typ.Elem()), n, n)
	iter := m.MapRange()
	for i := 0; iter.Next(); i++ {
		keys = append(keys, iter.Key().String())
		vals.Index(i).SetIterValue(iter)
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(x, y int) int { return strings.Compare(keys[x], keys[y]) })
	b = append(b, '{')
	for j, i := range order {
		if j > 0 {
			b = append(b, ',')
		}
		b = appendString(b, keys[i])
		b = append(b, ':')
		b = appendObject(b, f.elem, vals.Index(i).Addr().UnsafePointer(), fm)
	}
	return append(b, '}')
}
