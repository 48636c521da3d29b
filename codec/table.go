package codec

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/gtc-dev/gtc"
)

// kind is how a field's Go type is read and written.
type kind uint8

const (
	kString    kind = iota // string, or a named string type
	kStringPtr             // *string
	kInt64Ptr              // *int64
	kInt64                 // int64
	kTime                  // time.Time
	kTimePtr               // *time.Time
	kRaw                   // json.RawMessage
	kStrings               // []string
	kStringMap             // map[string]string
	kStruct                // a described struct
	kStructs               // []S, S a described struct
	kStructMap             // map[string]S, S a described struct
)

// field is one wire key of a described struct.
type field struct {
	pos    int    // its position in the table
	key    string // the wire key
	goName string
	member []byte // the quoted key and its colon, ready to append
	off    uintptr
	typ    reflect.Type
	kind   kind
	elem   *table // the struct of kStruct, kStructs and kStructMap

	api, readonly, required, nullable, sparse, omitnil, object, orstring, trim, nonblank bool

	// nilIsNull is whether a nil value is written as null rather than as an empty value
	// ([] or {}).
	nilIsNull bool

	def        string // default=
	derived    string // derived=
	derivedMem []byte
	derive     func(unsafe.Pointer) []string
}

// table is the wire description of one struct type, its fields in wire order.
type table struct {
	typ    reflect.Type
	fields []field
	byKey  map[string]*field
	// keys are the keys of the struct as the API and stored forms write them: the fields in
	// order, a derived key right after its field; sorted are the same in byte order, as the
	// record form writes them.
	keys, sorted []wireKey
}

// wireKey is one key of a described struct as written: a field, or the key a derived field
// adds.
type wireKey struct {
	f       *field
	derived bool
}

func (k wireKey) name() string {
	if k.derived {
		return k.f.derived
	}
	return k.f.key
}

// derivations are the computed keys a derived= attribute may name, by struct type and key.
var derivations = map[reflect.Type]map[string]func(unsafe.Pointer) []string{
	reflect.TypeFor[gtc.Item](): {"tags": func(p unsafe.Pointer) []string { return (*gtc.Item)(p).Tags() }},
}

var (
	tablesMu sync.Mutex
	tables   = map[reflect.Type]*table{}
)

// tableOf returns the description of struct type t, built on first use.
func tableOf(t reflect.Type) *table {
	tablesMu.Lock()
	defer tablesMu.Unlock()
	return buildTable(t)
}

var (
	itemTable     = tableOf(reflect.TypeFor[gtc.Item]())
	timeType      = reflect.TypeFor[time.Time]()
	rawType       = reflect.TypeFor[json.RawMessage]()
	int64Type     = reflect.TypeFor[int64]()
	stringType    = reflect.TypeFor[string]()
	stringMapType = reflect.TypeFor[map[string]string]()
)

func buildTable(t reflect.Type) *table {
	if tb, ok := tables[t]; ok {
		return tb
	}
	tb := &table{typ: t, byKey: map[string]*field{}}
	tables[t] = tb // before the fields, so a recursive type finds it
	for i := range t.NumField() {
		sf := t.Field(i)
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		if !sf.IsExported() {
			panic(fmt.Sprintf("codec: %s.%s: a described field must be exported", t, sf.Name))
		}
		f := field{pos: len(tb.fields), key: name, goName: sf.Name, off: sf.Offset, typ: sf.Type}
		f.member, _ = jsontext.AppendQuote(nil, name)
		f.member = append(f.member, ':')
		if tag := sf.Tag.Get("gtc"); tag != "" {
			for _, a := range strings.Split(tag, ",") {
				a, v, _ := strings.Cut(a, "=")
				switch a {
				case "api":
					f.api = true
				case "readonly":
					f.readonly = true
				case "required":
					f.required = true
				case "nullable":
					f.nullable = true
				case "sparse":
					f.sparse = true
				case "omitnil":
					f.omitnil = true
				case "object":
					f.object = true
				case "orstring":
					f.orstring = true
				case "trim":
					f.trim = true
				case "nonblank":
					f.nonblank = true
				case "default":
					f.def = v
				case "derived":
					f.derived = v
					f.derive = derivations[t][v]
					if f.derive == nil {
						panic(fmt.Sprintf("codec: %s.%s: no derived key %q", t, sf.Name, v))
					}
					f.derivedMem, _ = jsontext.AppendQuote(nil, v)
					f.derivedMem = append(f.derivedMem, ':')
				default:
					panic(fmt.Sprintf("codec: %s.%s: unknown gtc attribute %q", t, sf.Name, a))
				}
			}
		}
		f.kind, f.elem = kindOf(t, sf)
		if (f.object || f.orstring) && f.kind != kRaw {
			panic(fmt.Sprintf("codec: %s.%s: object is for raw JSON values", t, sf.Name))
		}
		empty := f.kind == kStrings || f.kind == kStructs || f.kind == kStringMap || f.kind == kStructMap || f.kind == kRaw && f.object
		f.nilIsNull = (f.nullable || f.sparse || !empty) && f.kind != kInt64
		if f.def != "" && f.kind != kString {
			panic(fmt.Sprintf("codec: %s.%s: default is for strings", t, sf.Name))
		}
		tb.fields = append(tb.fields, f)
	}
	for i := range tb.fields {
		f := &tb.fields[i]
		tb.byKey[f.key] = f
		tb.keys = append(tb.keys, wireKey{f: f})
		if f.derive != nil {
			tb.keys = append(tb.keys, wireKey{f: f, derived: true})
		}
	}
	tb.sorted = slices.SortedFunc(slices.Values(tb.keys), func(a, b wireKey) int { return strings.Compare(a.name(), b.name()) })
	return tb
}

func kindOf(t reflect.Type, sf reflect.StructField) (kind, *table) {
	ft := sf.Type
	switch {
	case ft == rawType:
		return kRaw, nil
	case ft == timeType:
		return kTime, nil
	case ft.Kind() == reflect.String:
		return kString, nil
	case ft.Kind() == reflect.Pointer && ft.Elem() == stringType:
		return kStringPtr, nil
	case ft == int64Type:
		return kInt64, nil
	case ft.Kind() == reflect.Pointer && ft.Elem() == int64Type:
		return kInt64Ptr, nil
	case ft.Kind() == reflect.Pointer && ft.Elem() == timeType:
		return kTimePtr, nil
	case ft.Kind() == reflect.Slice && ft.Elem() == stringType:
		return kStrings, nil
	case ft == stringMapType:
		return kStringMap, nil
	case ft.Kind() == reflect.Struct:
		return kStruct, buildTable(ft)
	case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
		return kStructs, buildTable(ft.Elem())
	case ft.Kind() == reflect.Map && ft.Key() == stringType && ft.Elem().Kind() == reflect.Struct:
		return kStructMap, buildTable(ft.Elem())
	}
	panic(fmt.Sprintf("codec: %s.%s: no wire form for %s", t, sf.Name, ft))
}

// at is the address of field f of the struct at p.
func (f *field) at(p unsafe.Pointer) unsafe.Pointer { return unsafe.Add(p, f.off) }

// isNil reports whether the value of f at fp is nil (a nil pointer, slice, map or raw value;
// a raw value that is the literal null counts as nil).
func (f *field) isNil(fp unsafe.Pointer) bool {
	switch f.kind {
	case kStringPtr, kInt64Ptr, kTimePtr:
		return *(*unsafe.Pointer)(fp) == nil
	case kInt64:
		return *(*int64)(fp) == 0
	case kRaw:
		r := *(*json.RawMessage)(fp)
		return len(r) == 0 || string(r) == "null"
	case kStrings, kStructs:
		return *(*unsafe.Pointer)(fp) == nil // the slice's data pointer
	case kStringMap, kStructMap:
		return *(*unsafe.Pointer)(fp) == nil
	}
	return false
}
