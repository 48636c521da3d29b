package codec

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/gtc-dev/gtc"
)

// The strict item decoder walks the field table: the keys an object may have, which are
// required, how each value is read (by the field's Go type and its wire attributes) all come
// from the description. What the description cannot say (the rules of a field's text: an
// item id, a dataset name, a UUID, the status enum, a length) is a check keyed by field,
// run after the field is read.

// A check runs after field f was read without a problem from v into the struct at sp; e is
// the import entry being read (its Item is the item).
type check func(d *Decoder, e *gtc.ImportEntry, v Value, fp Path, sp unsafe.Pointer)

var (
	historyTable      = tableOf(reflect.TypeFor[gtc.HistoryEntry]())
	contextTable      = tableOf(reflect.TypeFor[gtc.ContextEntry]())
	toolCallTable     = tableOf(reflect.TypeFor[gtc.ToolCall]())
	expectationTable  = tableOf(reflect.TypeFor[gtc.ToolExpectation]())
	pluginTable       = tableOf(reflect.TypeFor[gtc.PluginPayload]())
	expectedToolsType = reflect.TypeFor[gtc.ExpectedTools]()
)

// blankMessages say what a blank nonblank string is, by struct and key.
var blankMessages = map[*table]map[string]string{
	historyTable:     {"role": gtc.MsgHistoryEmpty, "msg": gtc.MsgHistoryEmpty},
	contextTable:     {"key": gtc.MsgContextKeyEmpty},
	toolCallTable:    {"name": gtc.MsgToolNameEmpty},
	expectationTable: {"name": gtc.MsgExpectationName},
	pluginTable:      {"kind": gtc.MsgPluginKindEmpty},
}

// legacyOutputKeys are keys earlier versions wrote in the API form; an import may carry
// them, and they are ignored like the server-managed keys.
var legacyOutputKeys = []string{"references", "totalReferences"}

// checks are the domain rules of single fields, by struct and key.
var checks = map[*table]map[string]check{
	itemTable: {
		"id": func(d *Decoder, _ *gtc.ImportEntry, _ Value, fp Path, sp unsafe.Pointer) {
			if id := (*gtc.Item)(sp).ID; id != "" {
				if msg := gtc.CheckItemID(id); msg != "" {
					d.Add(fp, msg)
				}
			}
		},
		"datasetName": func(d *Decoder, _ *gtc.ImportEntry, _ Value, fp Path, sp unsafe.Pointer) {
			if msg := gtc.CheckDatasetName((*gtc.Item)(sp).DatasetName); msg != "" {
				d.Add(fp, msg)
			}
		},
		"bucket": func(d *Decoder, _ *gtc.ImportEntry, v Value, fp Path, sp unsafe.Pointer) {
			if it := (*gtc.Item)(sp); v.kind == String {
				if b, ok := gtc.ParseUUID(it.Bucket); ok {
					it.Bucket = b
				} else {
					d.Add(fp, MsgUUID)
				}
			}
		},
		"status": func(d *Decoder, _ *gtc.ImportEntry, v Value, fp Path, sp unsafe.Pointer) {
			if v.kind == String && !(*gtc.Item)(sp).Status.Valid() {
				d.Add(fp, "must be one of: "+gtc.StatusList)
			}
		},
		"docType": func(d *Decoder, _ *gtc.ImportEntry, v Value, fp Path, sp unsafe.Pointer) {
			if v.kind == String && (*gtc.Item)(sp).DocType != gtc.DocTypeItem {
				d.Add(fp, "must be one of: "+gtc.DocTypeItem)
			}
		},
		"schemaVersion": func(d *Decoder, _ *gtc.ImportEntry, v Value, fp Path, sp unsafe.Pointer) {
			if v.kind != String {
				return
			}
			switch n := charCount((*gtc.Item)(sp).SchemaVersion); {
			case n < 1:
				d.Add(fp, "must be at least 1 character")
			case n > 32:
				d.Add(fp, atMost(32))
			}
		},
		"assignedTo": func(_ *Decoder, _ *gtc.ImportEntry, _ Value, _ Path, sp unsafe.Pointer) {
			if it := (*gtc.Item)(sp); it.AssignedTo != nil && *it.AssignedTo == "" {
				it.AssignedTo = nil
			}
		},
		"createdBy": func(_ *Decoder, e *gtc.ImportEntry, _ Value, _ Path, sp unsafe.Pointer) {
			e.SentCreatedBy = (*gtc.Item)(sp).CreatedBy != nil
		},
		"createdAt": func(_ *Decoder, e *gtc.ImportEntry, _ Value, _ Path, sp unsafe.Pointer) {
			e.SentCreatedAt = (*gtc.Item)(sp).CreatedAt != nil
		},
		"updatedAt": func(_ *Decoder, e *gtc.ImportEntry, v Value, _ Path, _ unsafe.Pointer) {
			e.SentUpdatedAt = v.kind == String
		},
	},
	toolCallTable: {
		"callType": func(d *Decoder, _ *gtc.ImportEntry, v Value, fp Path, sp unsafe.Pointer) {
			if tc := (*gtc.ToolCall)(sp); v.kind == String && tc.CallType != "tool" && tc.CallType != "subagent" {
				d.Add(fp, "must be one of: tool, subagent")
				tc.CallType = "tool"
			}
		},
		"stepNumber": func(d *Decoder, _ *gtc.ImportEntry, _ Value, fp Path, sp unsafe.Pointer) {
			if tc := (*gtc.ToolCall)(sp); tc.StepNumber != nil && *tc.StepNumber < 0 {
				d.Add(fp, gtc.MsgStepNumberNegative)
				tc.StepNumber = nil
			}
		},
	},
}

var keySets sync.Map // *table → KeySet

// keySet is the keys an object of table t may have: its fields and the keys they derive;
// the item may carry the legacy output keys too.
func keySet(t *table) KeySet {
	if ks, ok := keySets.Load(t); ok {
		return ks.(KeySet)
	}
	var names []string
	for i := range t.fields {
		names = append(names, t.fields[i].key)
		if t.fields[i].derived != "" {
			names = append(names, t.fields[i].derived)
		}
	}
	if t == itemTable {
		names = append(names, legacyOutputKeys...)
	}
	ks := Keys(names...)
	keySets.Store(t, ks)
	return ks
}

// ignored reports whether key of table t is read and ignored: a server-managed key, a
// derived key or a legacy output key.
func ignored(t *table, key string) bool {
	if f := t.byKey[key]; f != nil {
		return f.readonly
	}
	return true // a derived or legacy key: keySet has it, the table does not
}

// setDefaults gives the fields of the struct at sp of table t the value a missing key reads
// as: the default, {} for an object, an empty list or map.
func setDefaults(t *table, sp unsafe.Pointer) {
	for i := range t.fields {
		f := &t.fields[i]
		fp := f.at(sp)
		switch {
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

// strictStruct reads object v into the struct at sp, of table t, in document order; it
// reports whether the object had no problem. An unknown key is reported at its place when
// inline, else all of them first. A required key that is missing is reported after the
// members.
func (d *Decoder) strictStruct(t *table, e *gtc.ImportEntry, v Value, p Path, sp unsafe.Pointer, inline bool) bool {
	known := keySet(t)
	if v.kind != Object {
		d.typeErr(p, Object)
		return false
	}
	if !inline {
		d.Object(v, p, known)
	}
	n := d.Problems()
	var seen uint64
	for m := v.Members(); m.Next(); {
		name, ok := known.Name(m.Key)
		if !ok {
			if inline {
				d.Unknown(p, m.Key)
			}
			continue
		}
		if ignored(t, name) {
			if inline && e != nil && d.OK() {
				e.IgnoredFields = append(e.IgnoredFields, name)
			}
			continue
		}
		f := t.byKey[name]
		seen |= 1 << (f.index(t))
		fp := p.Key(name)
		if t == itemTable && name == "manualTags" {
			// An import's manual tags are read as sent; the importer applies the tag rules.
			d.manualTags(e, m.Val, fp)
			continue
		}
		before := d.Problems()
		d.field(f, e, m.Val, fp, f.at(sp))
		if c := checks[t][name]; c != nil && d.Problems() == before {
			c(d, e, m.Val, fp, sp)
		}
	}
	for i := range t.fields {
		if f := &t.fields[i]; f.required && seen&(1<<i) == 0 {
			d.Add(p.Key(f.key), MsgRequired)
		}
	}
	return d.Problems() == n
}

// index is the position of f in t.fields.
func (f *field) index(t *table) int {
	return int((uintptr(unsafe.Pointer(f)) - uintptr(unsafe.Pointer(&t.fields[0]))) / unsafe.Sizeof(*f))
}

// field reads v into the value of f at fp by the field's type and attributes.
func (d *Decoder) field(f *field, e *gtc.ImportEntry, v Value, p Path, fp unsafe.Pointer) {
	switch f.kind {
	case kString:
		s, ok := d.Str(v, p, f.nullable || f.def != "")
		if !ok {
			return
		}
		if f.nonblank && strings.TrimSpace(s) == "" {
			d.Add(p, blankMessage(f))
		}
		if f.trim {
			s = strings.TrimSpace(s)
		}
		*(*string)(fp) = s
	case kStringPtr:
		*(**string)(fp), _ = d.StrPtr(v, p)
	case kInt64Ptr:
		if v.kind == Null {
			return
		}
		if n, ok := d.Integer(v, p); ok {
			*(**int64)(fp) = &n
		}
	case kTime:
		if t, _ := d.timePtr(v, p); t != nil {
			*(*time.Time)(fp) = *t
		}
	case kTimePtr:
		*(**time.Time)(fp), _ = d.timePtr(v, p)
	case kRaw:
		*(*json.RawMessage)(fp) = d.raw(f, v, p, *(*json.RawMessage)(fp))
	case kStrings:
		*(*[]string)(fp), _ = d.StringList(v, p)
	case kStringMap:
		*(*map[string]string)(fp) = d.TraceIDs(v, p)
	case kStruct:
		if v.kind == Null {
			return
		}
		d.strictStruct(f.elem, nil, v, p, fp, false)
		if f.typ == expectedToolsType && v.kind == Object {
			d.toolOverlap(*(*gtc.ExpectedTools)(fp), p)
		}
	case kStructs:
		d.structs(f, v, p, fp)
	case kStructMap:
		d.structMap(f, v, p, fp)
	}
}

func blankMessage(f *field) string {
	for t, msgs := range blankMessages {
		if msg, ok := msgs[f.key]; ok && t.byKey[f.key] == f {
			return msg
		}
	}
	return f.key + " cannot be empty"
}

// raw reads a raw JSON value: an object (or a string too, with orstring) when the field says
// object, else any value. Null reads as the default: {} for a non-nullable object, "null"
// for a required value, nil otherwise. The bytes are only copied while the body has no
// problem.
func (d *Decoder) raw(f *field, v Value, p Path, cur json.RawMessage) json.RawMessage {
	switch {
	case v.kind == Null && f.object && !f.nullable:
		return emptyObject
	case v.kind == Null && f.required:
		return json.RawMessage("null")
	case v.kind == Null:
		return nil
	case f.object && v.kind != Object && !(f.orstring && v.kind == String):
		if f.orstring {
			d.Add(p, "expected object or string")
		} else {
			d.typeErr(p, Object)
		}
		return cur
	case !d.OK():
		if f.object {
			return emptyObject
		}
		return cur
	}
	return v.Raw()
}

// manualTags reads an import's manual tags as sent: a list of strings (nulls skipped) or one
// comma-separated string. The tag rules are applied by the importer.
func (d *Decoder) manualTags(e *gtc.ImportEntry, v Value, p Path) {
	switch v.kind {
	case Null:
	case String:
		if !d.OK() {
			break
		}
		for _, part := range strings.Split(v.Text(), ",") {
			if t := strings.TrimSpace(part); t != "" {
				e.RawManualTags = append(e.RawManualTags, t)
			}
		}
	case Array:
		for el := v.Elems(); el.Next(); {
			switch el.Val.kind {
			case Null:
			case String:
				if d.OK() {
					e.RawManualTags = append(e.RawManualTags, el.Val.Text())
				}
			default:
				d.Add(p.Index(el.I), MsgExpString)
			}
		}
	default:
		d.Add(p, MsgExpArray)
	}
}

// structs reads an array of described structs; null is the empty list. Elements are kept
// while the body has no problem; an expected tool is also kept when it has a name, which is
// all the overlap check needs. An expected tool may be written as its name alone.
func (d *Decoder) structs(f *field, v Value, p Path, fp unsafe.Pointer) {
	slice := reflect.NewAt(f.typ, fp).Elem()
	if v.kind == Null {
		slice.Set(reflect.MakeSlice(f.typ, 0, 0))
		return
	}
	if v.kind != Array {
		d.Add(p, MsgExpArray)
		return
	}
	out := reflect.MakeSlice(f.typ, 0, 0)
	el := reflect.New(f.typ.Elem()).Elem()
	ep := unsafe.Pointer(el.Addr().Pointer())
	for it := v.Elems(); it.Next(); {
		el.SetZero()
		setDefaults(f.elem, ep)
		ip := p.Index(it.I)
		if f.elem == expectationTable && it.Val.kind == String {
			name := strings.TrimSpace(it.Val.Text())
			if name == "" {
				d.Add(ip, gtc.MsgExpectationName)
				continue
			}
			(*gtc.ToolExpectation)(ep).Name = name
		} else if !d.strictStruct(f.elem, nil, it.Val, ip, ep, false) && !(f.elem == expectationTable && it.Val.kind == Object) {
			continue
		}
		if d.OK() || f.elem == expectationTable && (*gtc.ToolExpectation)(ep).Name != "" {
			out = reflect.Append(out, el)
		}
	}
	slice.Set(out)
}

// structMap reads an object of described structs (the plugin slots); null is the empty map.
// The rag-compat slot's references are checked too.
func (d *Decoder) structMap(f *field, v Value, p Path, fp unsafe.Pointer) {
	m := reflect.NewAt(f.typ, fp).Elem()
	if d.OK() {
		m.Set(reflect.MakeMap(f.typ))
	} else {
		m.SetZero()
	}
	if v.kind == Null {
		return
	}
	if v.kind != Object {
		d.Add(p, MsgExpObject)
		return
	}
	el := reflect.New(f.typ.Elem()).Elem()
	ep := unsafe.Pointer(el.Addr().Pointer())
	for it := v.Members(); it.Next(); {
		sp := p.KeyAt(it.Key)
		el.SetZero()
		setDefaults(f.elem, ep)
		d.strictStruct(f.elem, nil, it.Val, sp, ep, false)
		if f.elem == pluginTable && it.Key.Is(gtc.RAGCompatSlot) && it.Val.kind == Object {
			if data, ok := it.Val.Get("data"); ok && data.kind == Object {
				d.references(data, sp.Key("data"))
			}
		}
		if d.OK() && !m.IsNil() {
			m.SetMapIndex(reflect.ValueOf(it.Key.String()), el)
		}
	}
}

// toolOverlap reports the tools named in more than one list of expected tools.
func (d *Decoder) toolOverlap(et gtc.ExpectedTools, p Path) {
	seen := map[string]int{}
	for li, list := range [][]gtc.ToolExpectation{et.Required, et.Optional, et.NotNeeded} {
		inList := map[string]bool{}
		for _, e := range list {
			if e.Name == "" || inList[e.Name] {
				continue
			}
			inList[e.Name] = true
			seen[e.Name] |= 1 << li
		}
	}
	var overlap []string
	for n, mask := range seen {
		if mask&(mask-1) != 0 {
			overlap = append(overlap, n)
		}
	}
	if len(overlap) > 0 {
		sort.Strings(overlap)
		d.Add(p, msgToolOverlap+strings.Join(overlap, ", "))
	}
}

// importItem decodes one item object. Once the body has a problem, the item is decoded into
// scratch space, only to find the other problems, and nil is returned.
func (d *Decoder) importItem(v Value, p Path) *gtc.ImportEntry {
	if v.kind != Object {
		d.Add(p, MsgExpObject)
		return nil
	}
	e := &gtc.ImportEntry{}
	if d.OK() {
		e.Item = gtc.NewItem("", "")
	} else {
		e = &d.scratch
		*e = gtc.ImportEntry{Item: &d.scratchItem}
		d.scratchItem = gtc.Item{}
	}
	d.strictStruct(itemTable, e, v, p, unsafe.Pointer(e.Item), true)
	if !d.OK() {
		return nil
	}
	sort.Strings(e.IgnoredFields)
	return e
}

// itemField reads v as the item's field key into dst, a pointer to a value of its type.
func (d *Decoder) itemField(key string, v Value, p Path, dst unsafe.Pointer) {
	f := itemTable.byKey[key]
	if f.kind == kStruct {
		setDefaults(f.elem, dst)
	}
	d.field(f, nil, v, p, dst)
}

// ContextEntries reads an item's contextEntries value; null is the empty list.
func (d *Decoder) ContextEntries(v Value, p Path) []gtc.ContextEntry {
	var out []gtc.ContextEntry
	d.itemField("contextEntries", v, p, unsafe.Pointer(&out))
	return orEmpty(out)
}

// ToolCalls reads an item's toolCalls value; null is the empty list.
func (d *Decoder) ToolCalls(v Value, p Path) []gtc.ToolCall {
	var out []gtc.ToolCall
	d.itemField("toolCalls", v, p, unsafe.Pointer(&out))
	return orEmpty(out)
}

// Feedback reads an item's feedback value; null is the empty list.
func (d *Decoder) Feedback(v Value, p Path) []gtc.FeedbackEntry {
	var out []gtc.FeedbackEntry
	d.itemField("feedback", v, p, unsafe.Pointer(&out))
	return orEmpty(out)
}

// ExpectedTools reads an item's expectedTools value; null is three empty lists.
func (d *Decoder) ExpectedTools(v Value, p Path) gtc.ExpectedTools {
	var out gtc.ExpectedTools
	d.itemField("expectedTools", v, p, unsafe.Pointer(&out))
	return out
}

// Plugins reads an item's plugins value; null is the empty map. The map is made only while
// the body has no problem.
func (d *Decoder) Plugins(v Value, p Path) map[string]gtc.PluginPayload {
	var out map[string]gtc.PluginPayload
	d.itemField("plugins", v, p, unsafe.Pointer(&out))
	return out
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
