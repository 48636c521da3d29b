package codec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/gtc-dev/gtc"
)

// Standard schema messages.
const (
	MsgUnknownField = "unknown field"
	MsgRequired     = "required"
	MsgNotNull      = "must not be null"
	MsgExpString    = "expected string"
	MsgExpInteger   = "expected integer"
	MsgExpBoolean   = "expected boolean"
	MsgExpArray     = "expected array"
	MsgExpObject    = "expected object"
	MsgUUID         = "must be a UUID"
	MsgDateTime     = "must be an RFC 3339 date-time"
)

// Parse parses body for a new Decoder. A body that is not JSON reads as null, and its syntax
// error (a 422 INVALID_JSON naming the body) is the decoder's only problem.
func Parse(body []byte) (*Decoder, Value) {
	v, err := parseJSON(body)
	if err == nil {
		return &Decoder{}, v
	}
	msg := syntaxMessage(err)
	return &Decoder{fatal: &gtc.Error{Code: gtc.CodeInvalidJSON, Message: "Request validation failed: body: " + msg,
		Fields: []gtc.FieldError{{Field: "body", Message: msg}}}}, Value{}
}

// ParseBody parses a request body as JSON. A syntax error is a 422 INVALID_JSON naming the
// body.
func ParseBody(body []byte) (Value, error) {
	d, v := Parse(body)
	return v, d.Err()
}

// Decoder collects the problems of a body in document order. It lists the first
// gtc.MaxFieldErrors and only counts the others, so a body with millions of problems costs no
// more than one with a hundred.
type Decoder struct {
	errs  []gtc.FieldError
	more  int
	fatal error // the body is not JSON, or not the object ParseFields wants: its only problem
	// scratch receives the items of an import once the body has a problem.
	scratch     gtc.ImportEntry
	scratchItem gtc.Item
}

func (d *Decoder) Add(p Path, msg string) {
	switch {
	case d.fatal != nil:
	case len(d.errs) >= gtc.MaxFieldErrors:
		d.more++
	default:
		d.errs = append(d.errs, gtc.FieldError{Field: p.String(), Message: msg})
	}
}

// Unknown reports an unknown key of the object at p.
func (d *Decoder) Unknown(p Path, k Key) { d.Add(p.KeyAt(k), MsgUnknownField) }

// Problems counts every problem found so far, listed or not.
func (d *Decoder) Problems() int { return len(d.errs) + d.more }

// OK reports whether no problem was found yet. Once one was, the body is refused whatever
// follows, so the decoders stop building what they would return and only look for the
// other problems.
func (d *Decoder) OK() bool { return d.Problems() == 0 && d.fatal == nil }

// Err is the 422 listing the problems, or nil.
func (d *Decoder) Err() error {
	if d.fatal != nil || d.OK() {
		return d.fatal
	}
	return gtc.ValidationErrorMore(d.errs, d.more)
}

// Result is v, or the 422 listing the problems when there are some.
func Result[T any](d *Decoder, v T) (T, error) {
	if err := d.Err(); err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}

// Str reads a string; null gives ok=false, a problem unless nullable.
func (d *Decoder) Str(v Value, p Path, nullable bool) (s string, ok bool) {
	switch {
	case v.kind == String:
		return v.Text(), true
	case v.kind != Null:
		d.Add(p, MsgExpString)
	case !nullable:
		d.Add(p, MsgNotNull)
	}
	return "", false
}

// StrPtr reads a string or null (nil).
func (d *Decoder) StrPtr(v Value, p Path) *string {
	if s, ok := d.Str(v, p, true); ok {
		return &s
	}
	return nil
}

func (d *Decoder) Integer(v Value, p Path) (int64, bool) {
	if v.kind == Number && !bytes.ContainsAny(v.bytes(), ".eE") {
		if n, err := strconv.ParseInt(string(v.bytes()), 10, 64); err == nil {
			return n, true
		}
	}
	d.Add(p, MsgExpInteger)
	return 0, false
}

// Object checks that v is an object and reports its unknown keys; into, when not nil,
// receives the value of each known key the object has.
func (d *Decoder) Object(v Value, p Path, known KeySet, into map[string]Value) bool {
	for it := d.Items(v, p, Object, false); it.Next(); {
		if name, ok := known.Name(it.Key); !ok {
			d.Unknown(p, it.Key)
		} else if into != nil {
			into[name] = it.Val
		}
	}
	return v.kind == Object
}

// ParseFields parses body, an object of the given keys, for a new Decoder: it returns the
// value of each key the body has, and reports the other keys. A body that is not JSON or not
// an object is the decoder's only problem.
func ParseFields(body []byte, keys ...string) (*Decoder, map[string]Value) {
	d, v := Parse(body)
	m := map[string]Value{}
	if !d.Object(v, Path{}, Keys(keys...), m) {
		d.fatal = d.Err()
	}
	return d, m
}

// Items walks the elements of v, an array, or the members of v, an object, as want says. A
// value of another kind is reported; null too, unless orNull (then it has none).
func (d *Decoder) Items(v Value, p Path, want Kind, orNull bool) Iter {
	switch {
	case v.kind == want && want == Object:
		return v.Members()
	case v.kind == want:
		return v.Elems()
	case v.kind == Null && orNull:
	case want == Object:
		d.Add(p, MsgExpObject)
	default:
		d.Add(p, MsgExpArray)
	}
	return Iter{}
}

// Strings reads an array of strings or null (nil). A null element is a problem unless
// skipNull; with comma, one comma-separated string is read too (manual tags as an import
// may send them). The list is kept only while the body has no problem.
func (d *Decoder) Strings(v Value, p Path, skipNull, comma bool) (out []string) {
	if v.kind == String && comma {
		for part := range strings.SplitSeq(v.Text(), ",") {
			if t := strings.TrimSpace(part); t != "" && d.OK() {
				out = append(out, t)
			}
		}
		return out
	} else if v.kind == Array {
		out = []string{}
	}
	for it := d.Items(v, p, Array, true); it.Next(); {
		if k := it.Val.kind; k == String && d.OK() {
			out = append(out, it.Val.Text())
		} else if k != String && !(k == Null && skipNull) {
			d.Add(p.Index(it.I), MsgExpString)
		}
	}
	return out
}

// traceIDs reads an object of strings or null (nil). The map is made only while the body
// has no problem.
func (d *Decoder) traceIDs(v Value, p Path) (out map[string]string) {
	if v.kind == Object && d.OK() {
		out = map[string]string{}
	}
	for it := d.Items(v, p, Object, true); it.Next(); {
		if s, ok := d.Str(it.Val, p.KeyAt(it.Key), false); ok && d.OK() {
			out[it.Key.String()] = s
		}
	}
	return out
}

// references checks data.references of the rag-compat slot: an array of objects, each with a
// non-blank string url. Every other key is kept verbatim.
func (d *Decoder) references(data Value, p Path) {
	refs, ok := data.Get("references")
	if rp := p.Key("references"); ok && refs.kind != Array {
		d.Add(rp, MsgExpArray)
	} else if ok {
		for it := refs.Elems(); it.Next(); {
			if ep := rp.Index(it.I); it.Val.kind != Object {
				d.Add(ep, MsgExpObject)
			} else if u, ok := it.Val.Get("url"); !ok || u.kind != String || strings.TrimSpace(u.Text()) == "" {
				d.Add(ep.Key("url"), gtc.MsgReferenceURLEmpty)
			}
		}
	}
}

// toolOverlap reports the tools named in more than one list of expected tools.
func (d *Decoder) toolOverlap(et gtc.ExpectedTools, p Path) {
	lists := map[string]int{} // the lists that name a tool, as bits
	for li, list := range [][]gtc.ToolExpectation{et.Required, et.Optional, et.NotNeeded} {
		for _, e := range list {
			lists[e.Name] |= 1 << li
		}
	}
	overlap := slices.DeleteFunc(slices.Sorted(maps.Keys(lists)), func(n string) bool { return n == "" || lists[n]&(lists[n]-1) == 0 })
	if len(overlap) > 0 {
		d.Add(p, "tools cannot appear in more than one category: "+strings.Join(overlap, ", "))
	}
}

// DecodeImport checks a bulk-import body against the item schema (whole-request checks) and
// returns one entry per element. Any problem fails the whole request with a 422 listing every
// problem. Tag format and tag rules are checked by the caller.
func DecodeImport(body []byte) ([]*gtc.ImportEntry, error) {
	d, v := Parse(body)
	out := []*gtc.ImportEntry{}
	var root Path
	for it := d.Items(v, root, Array, false); it.Next(); {
		if e := d.importItem(it.Val, root.Index(it.I)); e != nil {
			out = append(out, e)
		}
	}
	return Result(d, out)
}

// DecodeItemObject checks one item object exactly as DecodeImport checks each element of an
// import body, with field paths relative to the item ("toolCalls[0].name"). gtc migrate
// validates stored documents with it, so a document is held to the same rules as the API
// holds its input. Any problem is a 422 *gtc.Error listing every problem in Fields.
func DecodeItemObject(doc []byte) (*gtc.ImportEntry, error) {
	d, v := Parse(doc)
	return Result(d, d.importItem(v, Path{}))
}

var emptyObject = json.RawMessage(`{}`)

// The strict item decoder walks the field table: the keys an object may have, which are
// required, how each value is read (by the field's Go type and its wire attributes) all come
// from the description. What the description cannot say (the rules of a field's text: an
// item id, a dataset name, a UUID, the status enum, a length) is the field's rule, run after
// the field is read.

var (
	historyTable     = tableOf(reflect.TypeFor[gtc.HistoryEntry]())
	toolCallTable    = tableOf(reflect.TypeFor[gtc.ToolCall]())
	expectationTable = tableOf(reflect.TypeFor[gtc.ToolExpectation]())
	// blankMessages say what a blank nonblank string is, by field.
	blankMessages = map[*field]string{
		historyTable.byKey["role"]:                                  gtc.MsgHistoryEmpty,
		historyTable.byKey["msg"]:                                   gtc.MsgHistoryEmpty,
		toolCallTable.byKey["name"]:                                 gtc.MsgToolNameEmpty,
		expectationTable.byKey["name"]:                              gtc.MsgExpectationName,
		tableOf(reflect.TypeFor[gtc.ContextEntry]()).byKey["key"]:   gtc.MsgContextKeyEmpty,
		tableOf(reflect.TypeFor[gtc.PluginPayload]()).byKey["kind"]: gtc.MsgPluginKindEmpty,
	}
)

// rule checks the domain rule of the field key of table t, read without a problem from a
// value that is not null into fp; e is the import entry being read. It returns the field's
// problem, or "", and may normalize the value.
func rule(t *table, key string, e *gtc.ImportEntry, fp unsafe.Pointer) string {
	s := func() string { return *(*string)(fp) }
	switch {
	case t == toolCallTable && key == "callType" && s() != "tool" && s() != "subagent":
		return "must be one of: tool, subagent"
	case t == toolCallTable && key == "stepNumber" && **(**int64)(fp) < 0:
		return gtc.MsgStepNumberNegative
	case t != itemTable:
	case key == "id" && s() != "": // a blank id is generated by the importer
		return gtc.CheckItemID(s())
	case key == "datasetName":
		return gtc.CheckDatasetName(s())
	case key == "bucket":
		b, ok := gtc.ParseUUID(s())
		if *(*string)(fp) = b; !ok {
			return MsgUUID
		}
	case key == "status" && !gtc.Status(s()).Valid():
		return "must be one of: " + gtc.StatusList
	case key == "docType" && s() != gtc.DocTypeItem:
		return "must be one of: " + gtc.DocTypeItem
	case key == "schemaVersion" && s() == "":
		return "must be at least 1 character"
	case key == "schemaVersion" && utf8.RuneCountInString(s()) > 32:
		return "must be at most 32 characters"
	case key == "assignedTo" && **(**string)(fp) == "":
		*(**string)(fp) = nil
	case key == "updatedAt":
		e.SentUpdatedAt = true
	}
	return ""
}

// keySets are the keys an object of each table may have: its fields and the keys they
// derive; the item may carry the keys earlier versions wrote in the API form too, which are
// ignored like the server-managed keys.
var keySets = func() map[*table]KeySet {
	sets := map[*table]KeySet{}
	for _, t := range tables {
		ks := KeySet{}
		for _, f := range t.fields {
			ks[f.key], ks[f.derived] = f.key, f.derived
		}
		delete(ks, "")
		sets[t] = ks
	}
	sets[itemTable]["references"], sets[itemTable]["totalReferences"] = "references", "totalReferences"
	return sets
}()

// setDefaults gives the fields of the struct at sp of table t the value a missing key reads
// as: the default, {} for an object, an empty list or map.
func setDefaults(t *table, sp unsafe.Pointer) {
	for i := range t.fields {
		switch f, fp := &t.fields[i], t.fields[i].at(sp); {
		case f.def != "":
			*(*string)(fp) = f.def
		case f.kind == kRaw && f.object && !f.nullable:
			*(*json.RawMessage)(fp) = emptyObject
		case f.kind == kStructs:
			reflect.NewAt(f.typ, fp).Elem().Set(reflect.MakeSlice(f.typ, 0, 0))
		case f.kind == kStruct:
			setDefaults(f.elem, fp)
		}
	}
}

// strictStruct reads object v into the struct at sp, of table t, in document order. An
// unknown key is reported at its place when inline, else all of them first. A required key
// that is missing is reported after the members. e is the import entry when t is the item's
// table.
func (d *Decoder) strictStruct(t *table, e *gtc.ImportEntry, v Value, p Path, sp unsafe.Pointer, inline bool) {
	known := keySets[t]
	if (v.kind != Object || !inline) && !d.Object(v, p, known, nil) {
		return
	}
	var seen uint64
	for m := v.Members(); m.Next(); {
		name, ok := known.Name(m.Key)
		f := t.byKey[name]
		switch fp := p.Key(name); {
		case !ok && inline:
			d.Unknown(p, m.Key)
		case !ok:
		case f == nil || f.readonly: // a server-managed, derived or legacy key
			if inline && d.OK() {
				e.IgnoredFields = append(e.IgnoredFields, name)
			}
		case t == itemTable && name == "manualTags":
			// An import's manual tags are read as sent; the importer applies the tag rules.
			if tags := d.Strings(m.Val, fp, true, true); len(tags) > 0 {
				e.RawManualTags = tags
			}
		default:
			seen |= 1 << ((uintptr(unsafe.Pointer(f)) - uintptr(unsafe.Pointer(&t.fields[0]))) / unsafe.Sizeof(*f))
			before := d.Problems()
			if d.field(f, m.Val, fp, f.at(sp)); d.Problems() == before && m.Val.kind != Null {
				if msg := rule(t, name, e, f.at(sp)); msg != "" {
					d.Add(fp, msg)
				}
			}
		}
	}
	for i, f := range t.fields {
		if f.required && seen&(1<<i) == 0 {
			d.Add(p.Key(f.key), MsgRequired)
		}
	}
}

// field reads v into the value of f at fp by the field's type and attributes.
func (d *Decoder) field(f *field, v Value, p Path, fp unsafe.Pointer) {
	switch f.kind {
	case kString:
		if s, ok := d.Str(v, p, f.nullable || f.def != ""); ok {
			if f.nonblank && strings.TrimSpace(s) == "" {
				d.Add(p, blankMessages[f])
			}
			if f.trim {
				s = strings.TrimSpace(s)
			}
			*(*string)(fp) = s
		}
	case kStringPtr:
		*(**string)(fp) = d.StrPtr(v, p)
	case kInt64Ptr:
		if v.kind != Null {
			if n, ok := d.Integer(v, p); ok {
				*(**int64)(fp) = &n
			}
		}
	case kInt64:
		if n, ok := d.Integer(v, p); ok {
			*(*int64)(fp) = n
		}
	case kTime, kTimePtr:
		if s, ok := d.Str(v, p, true); ok {
			if t, err := gtc.ParseTime(s); err != nil {
				d.Add(p, MsgDateTime)
			} else if f.kind == kTime {
				*(*time.Time)(fp) = t
			} else {
				*(**time.Time)(fp) = &t
			}
		}
	case kRaw:
		*(*json.RawMessage)(fp) = d.raw(f, v, p)
	case kStrings:
		*(*[]string)(fp) = d.Strings(v, p, false, false)
	case kStringMap:
		*(*map[string]string)(fp) = d.traceIDs(v, p)
	case kStruct:
		if setDefaults(f.elem, fp); v.kind != Null {
			d.strictStruct(f.elem, nil, v, p, fp, false)
		}
		if v.kind == Object && f.typ == reflect.TypeFor[gtc.ExpectedTools]() {
			d.toolOverlap(*(*gtc.ExpectedTools)(fp), p)
		}
	case kStructs, kStructMap:
		d.structs(f, v, p, fp)
	}
}

// raw reads a raw JSON value: an object (or a string too, with orstring) when the field says
// object, else any value. Null reads as the default: {} for a non-nullable object, "null"
// for a required value, nil otherwise. The bytes are only copied while the body has no
// problem.
func (d *Decoder) raw(f *field, v Value, p Path) json.RawMessage {
	switch {
	case v.kind == Null && f.object && !f.nullable:
		return emptyObject
	case v.kind == Null && f.required:
		return json.RawMessage("null")
	case v.kind == Null:
	case f.orstring && v.kind != Object && v.kind != String:
		d.Add(p, "expected object or string")
	case f.object && !f.orstring && v.kind != Object:
		d.Add(p, MsgExpObject)
	case d.OK():
		return v.Raw()
	}
	return nil
}

// structs reads an array of described structs (null is the empty list), or an object of
// them (the plugin slots; null is the empty map). They are kept while the body has no
// problem; an expected tool is also kept when it has a name, which is all the overlap check
// needs. An expected tool may be written as its name alone; the rag-compat slot's references
// are checked.
func (d *Decoder) structs(f *field, v Value, p Path, fp unsafe.Pointer) {
	out, want := reflect.NewAt(f.typ, fp).Elem(), Array
	if f.kind == kStructMap {
		want = Object
	}
	if f.kind == kStructs {
		out.Set(reflect.MakeSlice(f.typ, 0, 0))
	} else if d.OK() {
		out.Set(reflect.MakeMap(f.typ))
	}
	var el reflect.Value
	for it := d.Items(v, p, want, true); it.Next(); {
		if !el.IsValid() {
			el = reflect.New(f.typ.Elem()).Elem()
		}
		ep, ip := el.Addr().UnsafePointer(), p.Index(it.I)
		if el.SetZero(); want == Object {
			ip = p.KeyAt(it.Key)
		}
		setDefaults(f.elem, ep)
		if f.elem == expectationTable && it.Val.kind == String {
			name := strings.TrimSpace(it.Val.Text())
			if (*gtc.ToolExpectation)(ep).Name = name; name == "" {
				d.Add(ip, gtc.MsgExpectationName)
			}
		} else {
			d.strictStruct(f.elem, nil, it.Val, ip, ep, false)
		}
		if want == Object && it.Key.Is(gtc.RAGCompatSlot) && it.Val.kind == Object {
			if data, ok := it.Val.Get("data"); ok && data.kind == Object {
				d.references(data, ip.Key("data"))
			}
		}
		if want == Object && d.OK() {
			out.SetMapIndex(reflect.ValueOf(it.Key.String()), el)
		} else if want == Array && (d.OK() || f.elem == expectationTable && (*gtc.ToolExpectation)(ep).Name != "") {
			out.Set(reflect.Append(out, el))
		}
	}
}

// importItem decodes one item object. Once the body has a problem, the item is decoded into
// scratch space, only to find the other problems, and nil is returned.
func (d *Decoder) importItem(v Value, p Path) *gtc.ImportEntry {
	e := &d.scratch
	if v.kind != Object {
		d.Add(p, MsgExpObject)
		return nil
	} else if d.OK() {
		e = &gtc.ImportEntry{Item: gtc.NewItem("", "")}
	} else {
		d.scratch, d.scratchItem = gtc.ImportEntry{Item: &d.scratchItem}, gtc.Item{}
	}
	if d.strictStruct(itemTable, e, v, p, unsafe.Pointer(e.Item), true); !d.OK() {
		return nil
	}
	e.SentCreatedBy, e.SentCreatedAt = e.Item.CreatedBy != nil, e.Item.CreatedAt != nil
	slices.Sort(e.IgnoredFields)
	return e
}

// ItemField reads v as the item's field key into dst, a value of the field's type (an
// addressable reflect.Value): null reads as the default, an empty list or map, {} for an
// object.
func (d *Decoder) ItemField(key string, v Value, p Path, dst reflect.Value) {
	f := itemTable.byKey[key]
	if f == nil || dst.Type() != f.typ {
		panic(fmt.Sprintf("codec: no item field %s of type %s", key, dst.Type()))
	}
	d.field(f, v, p, dst.Addr().UnsafePointer())
}
