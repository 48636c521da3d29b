package codec

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"unsafe"

	"github.com/gtc-dev/gtc"
)

// The record form of an item is what an export writes for it: the API form with the keys of
// every object in byte order and the top-level keys whose value is null left out (nested
// nulls are written). Raw JSON values go through the caller's canonicalizer, which sorts
// their keys the same way.

// SortRaw appends a raw JSON value (a non-null json.RawMessage of an item) in the record
// form to dst.
type SortRaw func(dst []byte, raw json.RawMessage) ([]byte, error)

// AppendItemRecord appends the record form of the item to dst. member, when not nil, is
// called for each top-level key written, with the span of its value in the result.
func AppendItemRecord(dst []byte, it *gtc.Item, sortRaw SortRaw, member func(key string, start, end int)) ([]byte, error) {
	r := recordWriter{b: dst, sortRaw: sortRaw}
	r.object(itemTable, unsafe.Pointer(it), member)
	return r.b, r.err
}

// recordKey is one key of a described struct in the record form: a field, or the key a
// field derives.
type recordKey struct {
	f       *field
	derived bool
}

func (k recordKey) name() string {
	if k.derived {
		return k.f.derived
	}
	return k.f.key
}

// recordOrders holds the keys of every described struct in byte order, built once from
// the field tables.
var recordOrders = func() map[*table][]recordKey {
	orders := map[*table][]recordKey{}
	var add func(t *table)
	add = func(t *table) {
		if _, ok := orders[t]; ok {
			return
		}
		var keys []recordKey
		for i := range t.fields {
			f := &t.fields[i]
			keys = append(keys, recordKey{f: f})
			if f.derive != nil {
				keys = append(keys, recordKey{f: f, derived: true})
			}
		}
		slices.SortFunc(keys, func(a, b recordKey) int { return strings.Compare(a.name(), b.name()) })
		orders[t] = keys
		for i := range t.fields {
			if e := t.fields[i].elem; e != nil {
				add(e)
			}
		}
	}
	add(itemTable)
	return orders
}()

type recordWriter struct {
	b       []byte
	sortRaw SortRaw
	err     error
}

// object writes the struct at p; member is set for the top level only, whose null keys are
// left out.
func (r *recordWriter) object(t *table, p unsafe.Pointer, member func(key string, start, end int)) {
	r.b = append(r.b, '{')
	first := true
	for _, k := range recordOrders[t] {
		f := k.f
		if k.derived {
			first = r.key(first, f.derivedMem)
			start := len(r.b)
			r.b = appendStrings(r.b, f.derive(p))
			if member != nil {
				member(f.derived, start, len(r.b))
			}
			continue
		}
		fp := f.at(p)
		null := false
		if f.isNil(fp) {
			switch {
			case f.omitnil:
				continue
			case f.nullable || f.sparse || !f.emptyWhenNil():
				if member != nil {
					continue // a top-level null is left out
				}
				null = true
			}
		}
		first = r.key(first, f.member)
		start := len(r.b)
		if null {
			r.b = append(r.b, "null"...)
		} else {
			r.value(f, fp)
		}
		if member != nil {
			member(f.key, start, len(r.b))
		}
	}
	r.b = append(r.b, '}')
}

func (r *recordWriter) key(first bool, member []byte) bool {
	if !first {
		r.b = append(r.b, ',')
	}
	r.b = append(r.b, member...)
	return false
}

// value writes the value of f at fp as the API form does, in the record form.
func (r *recordWriter) value(f *field, fp unsafe.Pointer) {
	switch f.kind {
	case kRaw:
		if raw := *(*json.RawMessage)(fp); len(raw) > 0 && string(raw) != "null" {
			var err error
			if r.b, err = r.sortRaw(r.b, raw); err != nil && r.err == nil {
				r.err = err
			}
			return
		}
	case kStruct:
		r.object(f.elem, fp, nil)
		return
	case kStructs:
		hdr := (*sliceHeader)(fp)
		size := f.elem.typ.Size()
		r.b = append(r.b, '[')
		for i := range hdr.len {
			if i > 0 {
				r.b = append(r.b, ',')
			}
			r.object(f.elem, unsafe.Add(hdr.data, uintptr(i)*size), nil)
		}
		r.b = append(r.b, ']')
		return
	case kStructMap:
		m := reflect.NewAt(f.typ, fp).Elem()
		keys := make([]string, 0, m.Len())
		for _, k := range m.MapKeys() {
			keys = append(keys, k.String())
		}
		slices.Sort(keys)
		v := reflect.New(f.typ.Elem()).Elem()
		r.b = append(r.b, '{')
		for i, k := range keys {
			if i > 0 {
				r.b = append(r.b, ',')
			}
			r.b = appendString(r.b, k)
			r.b = append(r.b, ':')
			v.Set(m.MapIndex(reflect.ValueOf(k).Convert(f.typ.Key())))
			r.object(f.elem, v.Addr().UnsafePointer(), nil)
		}
		r.b = append(r.b, '}')
		return
	}
	r.b = appendValue(r.b, f, fp, formAPI)
}
