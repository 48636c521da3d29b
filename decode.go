package gtc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Standard schema messages.
const (
	msgUnknownField = "unknown field"
	msgRequired     = "required"
	msgNotNull      = "must not be null"
	msgExpString    = "expected string"
	msgExpInteger   = "expected integer"
	msgExpBoolean   = "expected boolean"
	msgExpArray     = "expected array"
	msgExpObject    = "expected object"
	msgUUID         = "must be a UUID"
	msgDateTime     = "must be an RFC 3339 date-time"
)

// Item structure messages.
const (
	MsgHistoryEmpty       = "history fields cannot be empty"
	MsgContextKeyEmpty    = "contextEntries[].key cannot be empty"
	MsgToolNameEmpty      = "toolCalls[].name cannot be empty"
	MsgStepNumberNegative = "toolCalls[].stepNumber cannot be negative"
	MsgExpectationName    = "expectedTools entries must include a non-empty name"
	msgToolOverlap        = "tools cannot appear in more than one category: "
	MsgPluginKindEmpty    = "plugins[].kind cannot be empty"
	MsgReferenceURLEmpty  = "Reference URL cannot be empty"
)

// ParseBody parses a request body as JSON. A syntax error is a 422 INVALID_JSON naming the
// body.
func ParseBody(body []byte) (jvalue, error) {
	v, err := parseJSON(body)
	if err != nil {
		msg := syntaxMessage(err)
		return jvalue{}, &Error{
			Code:    CodeInvalidJSON,
			Message: "Request validation failed: body: " + msg,
			Fields:  []FieldError{{Field: "body", Message: msg}},
		}
	}
	return v, nil
}

// decoder collects the problems of a body in document order. It lists the first
// MaxFieldErrors and only counts the others, so a body with millions of problems costs no
// more than one with a hundred.
type decoder struct {
	errs []FieldError
	more int
	// scratch receives the items of an import once the body has a problem.
	scratch     ImportEntry
	scratchItem Item
}

func (d *decoder) add(p fieldPath, msg string) {
	if len(d.errs) >= MaxFieldErrors {
		d.more++
		return
	}
	d.errs = append(d.errs, FieldError{Field: p.String(), Message: msg})
}

// unknown reports an unknown key of the object at p.
func (d *decoder) unknown(p fieldPath, k jkey) {
	d.add(p.keyAt(k), msgUnknownField)
}

// at is the path of a top-level key.
func at(name string) fieldPath { return fieldPath{name: name, kind: pathKey} }

// problems counts every problem found so far, listed or not.
func (d *decoder) problems() int { return len(d.errs) + d.more }

// ok reports whether no problem was found yet. Once one was, the body is refused whatever
// follows, so the decoders stop building what they would return and only look for the
// other problems.
func (d *decoder) ok() bool { return len(d.errs) == 0 && d.more == 0 }

func (d *decoder) err() error {
	if d.problems() == 0 {
		return nil
	}
	return ValidationErrorMore(d.errs, d.more)
}

func (d *decoder) typeErr(p fieldPath, want jkind) {
	switch want {
	case jString:
		d.add(p, msgExpString)
	case jNumber:
		d.add(p, msgExpInteger)
	case jBool:
		d.add(p, msgExpBoolean)
	case jArray:
		d.add(p, msgExpArray)
	case jObject:
		d.add(p, msgExpObject)
	}
}

// str reads a string; null gives ok=false without an error when nullable.
func (d *decoder) str(v jvalue, p fieldPath, nullable bool) (s string, ok bool) {
	switch v.kind {
	case jString:
		return v.text(), true
	case jNull:
		if !nullable {
			d.add(p, msgNotNull)
		}
		return "", false
	default:
		d.typeErr(p, jString)
		return "", false
	}
}

func (d *decoder) strPtr(v jvalue, p fieldPath) (*string, bool) {
	s, ok := d.str(v, p, true)
	if !ok {
		return nil, v.kind == jNull
	}
	return &s, true
}

func (d *decoder) timePtr(v jvalue, p fieldPath) (*time.Time, bool) {
	switch v.kind {
	case jNull:
		return nil, true
	case jString:
		t, err := ParseTime(v.text())
		if err != nil {
			d.add(p, msgDateTime)
			return nil, false
		}
		return &t, true
	default:
		d.typeErr(p, jString)
		return nil, false
	}
}

// object checks v is an object (or null when nullable) and reports unknown keys.
func (d *decoder) object(v jvalue, p fieldPath, known keyset) bool {
	if v.kind != jObject {
		d.typeErr(p, jObject)
		return false
	}
	for it := v.members(); it.next(); {
		if _, ok := known.name(it.key); !ok {
			d.unknown(p, it.key)
		}
	}
	return true
}

// rawObject reads a free-form object (null is {}). Its bytes are only copied while the body
// has no problem.
func (d *decoder) rawObject(v jvalue, p fieldPath) (json.RawMessage, bool) {
	switch v.kind {
	case jNull:
		return emptyObject, true
	case jObject:
		if !d.ok() {
			return emptyObject, true
		}
		return v.raw(), true
	default:
		d.typeErr(p, jObject)
		return nil, false
	}
}

func (d *decoder) integer(v jvalue, p fieldPath) (int64, bool) {
	if v.kind != jNumber || bytes.ContainsAny(v.literal(), ".eE") {
		d.add(p, msgExpInteger)
		return 0, false
	}
	n, err := strconv.ParseInt(string(v.literal()), 10, 64)
	if err != nil {
		d.add(p, msgExpInteger)
		return 0, false
	}
	return n, true
}

func charCount(s string) int { return utf8.RuneCountInString(s) }

func atMost(n int) string { return fmt.Sprintf("must be at most %d characters", n) }

// --- nested types, shared by import and PUT ------------------------------------------------

var historyKeys = keys("role", "msg", "turnId", "stepId", "expectedBehavior")

// historyEntry decodes an import history entry: role and msg are required and non-blank.
func (d *decoder) historyEntry(v jvalue, p fieldPath) (HistoryEntry, bool) {
	var h HistoryEntry
	if !d.object(v, p, historyKeys) {
		return h, false
	}
	n := d.problems()
	var hasRole, hasMsg bool
	for it := v.members(); it.next(); {
		name, _ := historyKeys.name(it.key)
		fp := p.key(name)
		switch name {
		case "role":
			hasRole = true
			if s, ok := d.str(it.val, fp, false); ok {
				if strings.TrimSpace(s) == "" {
					d.add(fp, MsgHistoryEmpty)
				}
				h.Role = strings.TrimSpace(s)
			}
		case "msg":
			hasMsg = true
			if s, ok := d.str(it.val, fp, false); ok {
				if strings.TrimSpace(s) == "" {
					d.add(fp, MsgHistoryEmpty)
				}
				h.Msg = strings.TrimSpace(s)
			}
		case "turnId":
			h.TurnID, _ = d.strPtr(it.val, fp)
		case "stepId":
			h.StepID, _ = d.strPtr(it.val, fp)
		case "expectedBehavior":
			h.ExpectedBehavior, _ = d.stringList(it.val, fp)
		}
	}
	if !hasRole {
		d.add(p.key("role"), msgRequired)
	}
	if !hasMsg {
		d.add(p.key("msg"), msgRequired)
	}
	return h, d.problems() == n
}

// stringList reads an array of strings or null (nil). The list is complete only when ok.
func (d *decoder) stringList(v jvalue, p fieldPath) ([]string, bool) {
	switch v.kind {
	case jNull:
		return nil, true
	case jArray:
		out := []string{}
		ok := true
		for it := v.elems(); it.next(); {
			if it.val.kind != jString {
				d.add(p.index(it.i), msgExpString)
				ok = false
				continue
			}
			if ok {
				out = append(out, it.val.text())
			}
		}
		return out, ok
	default:
		d.add(p, msgExpArray)
		return nil, false
	}
}

var contextKeys = keys("key", "value")

func (d *decoder) contextEntries(v jvalue, p fieldPath) []ContextEntry {
	out := []ContextEntry{}
	if v.kind == jNull {
		return out
	}
	if v.kind != jArray {
		d.add(p, msgExpArray)
		return out
	}
	for it := v.elems(); it.next(); {
		el := it.val
		ep := p.index(it.i)
		if !d.object(el, ep, contextKeys) {
			continue
		}
		var ce ContextEntry
		kv, hasKey := el.get("key")
		if !hasKey {
			d.add(ep.key("key"), msgRequired)
		} else if s, ok := d.str(kv, ep.key("key"), false); ok {
			if strings.TrimSpace(s) == "" {
				d.add(ep.key("key"), MsgContextKeyEmpty)
			}
			ce.Key = strings.TrimSpace(s)
		}
		vv, hasValue := el.get("value")
		if !hasValue {
			d.add(ep.key("value"), msgRequired)
		}
		if d.ok() {
			ce.Value = vv.raw()
			out = append(out, ce)
		}
	}
	return out
}

func (d *decoder) traceIDs(v jvalue, p fieldPath) map[string]string {
	switch v.kind {
	case jNull:
		return nil
	case jObject:
		var out map[string]string // made only while the body has no problem
		for it := v.members(); it.next(); {
			if s, ok := d.str(it.val, p.keyAt(it.key), false); ok && d.ok() {
				if out == nil {
					out = map[string]string{}
				}
				out[it.key.String()] = s
			}
		}
		if out == nil && d.ok() {
			out = map[string]string{}
		}
		return out
	default:
		d.add(p, msgExpObject)
		return nil
	}
}

var toolCallKeys = keys("id", "name", "callType", "arguments", "agent", "stepNumber", "parallelGroup", "parentCallId", "response")

func (d *decoder) toolCalls(v jvalue, p fieldPath) []ToolCall {
	out := []ToolCall{}
	if v.kind == jNull {
		return out
	}
	if v.kind != jArray {
		d.add(p, msgExpArray)
		return out
	}
	for el := v.elems(); el.next(); {
		ep := p.index(el.i)
		if !d.object(el.val, ep, toolCallKeys) {
			continue
		}
		tc := ToolCall{CallType: "tool"}
		hasName := false
		for it := el.val.members(); it.next(); {
			name, _ := toolCallKeys.name(it.key)
			fp := ep.key(name)
			val := it.val
			switch name {
			case "id":
				if s, ok := d.str(val, fp, true); ok {
					tc.ID = s
				}
			case "name":
				hasName = true
				if s, ok := d.str(val, fp, false); ok {
					if strings.TrimSpace(s) == "" {
						d.add(fp, MsgToolNameEmpty)
					}
					tc.Name = strings.TrimSpace(s)
				}
			case "callType":
				if s, ok := d.str(val, fp, true); ok {
					if s != "tool" && s != "subagent" {
						d.add(fp, "must be one of: tool, subagent")
					} else {
						tc.CallType = s
					}
				}
			case "arguments":
				switch val.kind {
				case jNull:
				case jObject:
					if d.ok() {
						tc.Arguments = val.raw()
					}
				default:
					d.add(fp, msgExpObject)
				}
			case "agent":
				tc.Agent, _ = d.strPtr(val, fp)
			case "parallelGroup":
				tc.ParallelGroup, _ = d.strPtr(val, fp)
			case "parentCallId":
				tc.ParentCallID, _ = d.strPtr(val, fp)
			case "stepNumber":
				if val.kind == jNull {
					continue
				}
				if n, ok := d.integer(val, fp); ok {
					if n < 0 {
						d.add(fp, MsgStepNumberNegative)
					} else {
						tc.StepNumber = &n
					}
				}
			case "response":
				if val.kind != jNull && d.ok() {
					tc.Response = val.raw()
				}
			}
		}
		if !hasName {
			d.add(ep.key("name"), msgRequired)
		}
		if d.ok() {
			out = append(out, tc)
		}
	}
	return out
}

var expectedToolsKeys = keys("required", "optional", "notNeeded")
var expectationKeys = keys("name", "arguments")

func (d *decoder) expectedTools(v jvalue, p fieldPath) ExpectedTools {
	et := ExpectedTools{Required: []ToolExpectation{}, Optional: []ToolExpectation{}, NotNeeded: []ToolExpectation{}}
	if v.kind == jNull {
		return et
	}
	if !d.object(v, p, expectedToolsKeys) {
		return et
	}
	for it := v.members(); it.next(); {
		name, known := expectedToolsKeys.name(it.key)
		if !known {
			continue
		}
		list := d.expectations(it.val, p.key(name))
		switch name {
		case "required":
			et.Required = list
		case "optional":
			et.Optional = list
		case "notNeeded":
			et.NotNeeded = list
		}
	}
	seen := map[string]int{}
	for li, list := range [][]ToolExpectation{et.Required, et.Optional, et.NotNeeded} {
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
		d.add(p, msgToolOverlap+strings.Join(overlap, ", "))
	}
	return et
}

// expectations reads one list of expected tools. Once the body has a problem only the names
// are kept: they are all the overlap check needs.
func (d *decoder) expectations(v jvalue, p fieldPath) []ToolExpectation {
	out := []ToolExpectation{}
	if v.kind == jNull {
		return out
	}
	if v.kind != jArray {
		d.add(p, msgExpArray)
		return out
	}
	for it := v.elems(); it.next(); {
		el := it.val
		ep := p.index(it.i)
		switch el.kind {
		case jString:
			name := strings.TrimSpace(el.text())
			if name == "" {
				d.add(ep, MsgExpectationName)
				continue
			}
			out = append(out, ToolExpectation{Name: name})
		case jObject:
			d.object(el, ep, expectationKeys)
			var e ToolExpectation
			nv, ok := el.get("name")
			if !ok {
				d.add(ep.key("name"), msgRequired)
			} else if s, ok := d.str(nv, ep.key("name"), false); ok {
				if strings.TrimSpace(s) == "" {
					d.add(ep.key("name"), MsgExpectationName)
				}
				e.Name = strings.TrimSpace(s)
			}
			if av, ok := el.get("arguments"); ok {
				switch av.kind {
				case jNull:
				case jObject, jString:
					if d.ok() {
						e.Arguments = av.raw()
					}
				default:
					d.add(ep.key("arguments"), "expected object or string")
				}
			}
			if d.ok() || e.Name != "" {
				out = append(out, e)
			}
		default:
			d.add(ep, msgExpObject)
		}
	}
	return out
}

var feedbackKeys = keys("source", "values")

func (d *decoder) feedback(v jvalue, p fieldPath) []FeedbackEntry {
	out := []FeedbackEntry{}
	if v.kind == jNull {
		return out
	}
	if v.kind != jArray {
		d.add(p, msgExpArray)
		return out
	}
	for it := v.elems(); it.next(); {
		el := it.val
		ep := p.index(it.i)
		if !d.object(el, ep, feedbackKeys) {
			continue
		}
		f := FeedbackEntry{Values: emptyObject}
		if sv, ok := el.get("source"); ok {
			if s, ok := d.str(sv, ep.key("source"), true); ok {
				f.Source = s
			}
		}
		if vv, ok := el.get("values"); ok {
			if r, ok := d.rawObject(vv, ep.key("values")); ok {
				f.Values = r
			}
		}
		if d.ok() {
			out = append(out, f)
		}
	}
	return out
}

var pluginKeys = keys("kind", "version", "data")

func (d *decoder) plugins(v jvalue, p fieldPath) map[string]PluginPayload {
	var out map[string]PluginPayload // made only while the body has no problem
	if d.ok() {
		out = map[string]PluginPayload{}
	}
	if v.kind == jNull {
		return out
	}
	if v.kind != jObject {
		d.add(p, msgExpObject)
		return out
	}
	for it := v.members(); it.next(); {
		sp := p.keyAt(it.key)
		slot := it.val
		if !d.object(slot, sp, pluginKeys) {
			continue
		}
		pp := PluginPayload{Version: "1.0", Data: emptyObject}
		kv, ok := slot.get("kind")
		if !ok {
			d.add(sp.key("kind"), msgRequired)
		} else if s, ok := d.str(kv, sp.key("kind"), false); ok {
			if strings.TrimSpace(s) == "" {
				d.add(sp.key("kind"), MsgPluginKindEmpty)
			}
			pp.Kind = s
		}
		if vv, ok := slot.get("version"); ok {
			if s, ok := d.str(vv, sp.key("version"), true); ok {
				pp.Version = s
			}
		}
		if dv, ok := slot.get("data"); ok {
			if r, ok := d.rawObject(dv, sp.key("data")); ok {
				pp.Data = r
				if dv.kind == jObject && it.key.is(RAGCompatSlot) {
					d.references(dv, sp.key("data"))
				}
			}
		}
		if d.ok() && out != nil {
			out[it.key.String()] = pp
		}
	}
	return out
}

// references checks data.references of the rag-compat slot: an array of objects, each with a
// non-blank string url. Every other key is kept verbatim.
func (d *decoder) references(data jvalue, p fieldPath) {
	refs, ok := data.get("references")
	if !ok {
		return
	}
	rp := p.key("references")
	if refs.kind != jArray {
		d.add(rp, msgExpArray)
		return
	}
	for it := refs.elems(); it.next(); {
		el := it.val
		ep := rp.index(it.i)
		if el.kind != jObject {
			d.add(ep, msgExpObject)
			continue
		}
		u, ok := el.get("url")
		if !ok || u.kind != jString || strings.TrimSpace(u.text()) == "" {
			d.add(ep.key("url"), MsgReferenceURLEmpty)
		}
	}
}

// --- bulk import ---------------------------------------------------------------------------

// ImportEntry is one element of a bulk-import body that passed the schema checks.
type ImportEntry struct {
	Item          *Item
	RawManualTags []string
	// IgnoredFields are the output-only keys the element carried, sorted.
	IgnoredFields []string
	// Sent records which optional server-managed keys the element set (non-null).
	SentUpdatedAt, SentCreatedAt, SentCreatedBy bool
}

var importOutputOnly = map[string]bool{"tags": true, "computedTags": true, "_etag": true, "references": true, "totalReferences": true}

var importKeys = keys("tags", "computedTags", "_etag", "references", "totalReferences",
	"id", "datasetName", "bucket", "status", "docType", "schemaVersion", "manualTags", "comment", "scenarioId",
	"assignedTo", "updatedBy", "createdBy", "assignedAt", "reviewedAt", "createdAt", "updatedAt", "history",
	"contextEntries", "traceIds", "toolCalls", "expectedTools", "feedback", "metadata", "plugins", "tracePayload")

// DecodeImport checks a bulk-import body against the item schema (whole-request checks) and
// returns one entry per element. Any problem fails the whole request with a 422 listing every
// problem. Tag format and tag rules are checked by the caller.
func DecodeImport(body []byte) ([]*ImportEntry, error) {
	v, err := ParseBody(body)
	if err != nil {
		return nil, err
	}
	d := &decoder{}
	var root fieldPath
	if v.kind != jArray {
		d.add(root, msgExpArray)
		return nil, d.err()
	}
	out := []*ImportEntry{}
	for it := v.elems(); it.next(); {
		e := d.importItem(it.val, root.index(it.i))
		if d.ok() {
			out = append(out, e)
		}
	}
	if err := d.err(); err != nil {
		return nil, err
	}
	return out, nil
}

// DecodeItemObject checks one item object exactly as DecodeImport checks each element of an
// import body, with field paths relative to the item ("toolCalls[0].name"). gtc migrate
// validates stored documents with it, so a document is held to the same rules as the API
// holds its input. Any problem is a 422 *Error listing every problem in Fields.
func DecodeItemObject(doc []byte) (*ImportEntry, error) {
	v, err := ParseBody(doc)
	if err != nil {
		return nil, err
	}
	d := &decoder{}
	e := d.importItem(v, fieldPath{})
	if err := d.err(); err != nil {
		return nil, err
	}
	return e, nil
}

// importItem decodes one item object. Once the body has a problem, the item is decoded into
// scratch space, only to find the other problems, and nil is returned.
func (d *decoder) importItem(v jvalue, p fieldPath) *ImportEntry {
	if v.kind != jObject {
		d.add(p, msgExpObject)
		return nil
	}
	keep := d.ok()
	e := &ImportEntry{}
	if keep {
		e.Item = NewItem("", "")
	} else {
		e = &d.scratch
		*e = ImportEntry{Item: &d.scratchItem}
		d.scratchItem = Item{}
	}
	it := e.Item
	var hasID, hasDataset bool
	for m := v.members(); m.next(); {
		name, known := importKeys.name(m.key)
		if !known {
			d.unknown(p, m.key)
			continue
		}
		fp := p.key(name)
		val := m.val
		if importOutputOnly[name] {
			if keep {
				e.IgnoredFields = append(e.IgnoredFields, name)
			}
			continue
		}
		switch name {
		case "id":
			hasID = true
			if s, ok := d.str(val, fp, false); ok {
				s = strings.TrimSpace(s)
				if s != "" {
					if msg := CheckItemID(s); msg != "" {
						d.add(fp, msg)
					}
				}
				it.ID = s
			}
		case "datasetName":
			hasDataset = true
			if s, ok := d.str(val, fp, false); ok {
				if msg := CheckDatasetName(s); msg != "" {
					d.add(fp, msg)
				}
				it.DatasetName = s
			}
		case "bucket":
			if s, ok := d.str(val, fp, true); ok {
				if b, ok := ParseUUID(s); ok {
					it.Bucket = b
				} else {
					d.add(fp, msgUUID)
				}
			}
		case "status":
			if s, ok := d.str(val, fp, true); ok {
				if st := Status(s); st.Valid() {
					it.Status = st
				} else {
					d.add(fp, "must be one of: "+StatusList)
				}
			}
		case "docType":
			if s, ok := d.str(val, fp, true); ok && s != DocTypeItem {
				d.add(fp, "must be one of: "+DocTypeItem)
			}
		case "schemaVersion":
			if s, ok := d.str(val, fp, true); ok {
				switch n := charCount(s); {
				case n < 1:
					d.add(fp, "must be at least 1 character")
				case n > 32:
					d.add(fp, atMost(32))
				default:
					it.SchemaVersion = s
				}
			}
		case "manualTags":
			switch val.kind {
			case jNull:
			case jString:
				if !d.ok() {
					break
				}
				for _, part := range strings.Split(val.text(), ",") {
					if t := strings.TrimSpace(part); t != "" {
						e.RawManualTags = append(e.RawManualTags, t)
					}
				}
			case jArray:
				for el := val.elems(); el.next(); {
					switch el.val.kind {
					case jNull:
					case jString:
						if d.ok() {
							e.RawManualTags = append(e.RawManualTags, el.val.text())
						}
					default:
						d.add(fp.index(el.i), msgExpString)
					}
				}
			default:
				d.add(fp, msgExpArray)
			}
		case "comment":
			if s, ok := d.str(val, fp, true); ok {
				it.Comment = s
			}
		case "scenarioId":
			if s, ok := d.str(val, fp, true); ok {
				it.ScenarioID = s
			}
		case "assignedTo":
			if s, ok := d.strPtr(val, fp); ok && s != nil && *s != "" {
				it.AssignedTo = s
			}
		case "updatedBy":
			it.UpdatedBy, _ = d.strPtr(val, fp)
		case "createdBy":
			it.CreatedBy, _ = d.strPtr(val, fp)
			e.SentCreatedBy = it.CreatedBy != nil
		case "assignedAt":
			it.AssignedAt, _ = d.timePtr(val, fp)
		case "reviewedAt":
			it.ReviewedAt, _ = d.timePtr(val, fp)
		case "createdAt":
			it.CreatedAt, _ = d.timePtr(val, fp)
			e.SentCreatedAt = it.CreatedAt != nil
		case "updatedAt":
			if t, _ := d.timePtr(val, fp); t != nil {
				it.UpdatedAt = *t
				e.SentUpdatedAt = true
			}
		case "history":
			switch val.kind {
			case jNull:
			case jArray:
				for el := val.elems(); el.next(); {
					if h, ok := d.historyEntry(el.val, fp.index(el.i)); ok && d.ok() {
						it.History = append(it.History, h)
					}
				}
			default:
				d.add(fp, msgExpArray)
			}
		case "contextEntries":
			it.ContextEntries = d.contextEntries(val, fp)
		case "traceIds":
			it.TraceIDs = d.traceIDs(val, fp)
		case "toolCalls":
			it.ToolCalls = d.toolCalls(val, fp)
		case "expectedTools":
			it.ExpectedTools = d.expectedTools(val, fp)
		case "feedback":
			it.Feedback = d.feedback(val, fp)
		case "metadata":
			if r, ok := d.rawObject(val, fp); ok {
				it.Metadata = r
			}
		case "plugins":
			it.Plugins = d.plugins(val, fp)
		case "tracePayload":
			if r, ok := d.rawObject(val, fp); ok {
				it.TracePayload = r
			}
		}
	}
	if !hasID {
		d.add(p.key("id"), msgRequired)
	}
	if !hasDataset {
		d.add(p.key("datasetName"), msgRequired)
	}
	if !d.ok() {
		return nil
	}
	sort.Strings(e.IgnoredFields)
	return e
}

// --- item PUT bodies -----------------------------------------------------------------------

// Opt is a body key that may be absent, null, or set.
type Opt[T any] struct {
	Set  bool // the key is present (possibly null)
	Null bool // the key is present with the value null
	V    T
}

// HistoryPatch is one history entry of a PUT body, before the semantic checks of step 6.
type HistoryPatch struct {
	Role             string
	Msg              *string // msg, or content when msg is absent or null
	TurnID, StepID   *string
	ExpectedBehavior []string // when ExpectedBehaviorOK
	// ExpectedBehaviorSet is true when expectedBehavior (or its alias) is present and not null.
	ExpectedBehaviorSet bool
	ExpectedBehaviorOK  bool
}

// ItemPatch is a schema-checked item PUT body, the input of Curator.UpdateItem.
type ItemPatch struct {
	Status         Opt[string]
	Comment        Opt[string]
	History        Opt[[]HistoryPatch]
	ContextEntries Opt[[]ContextEntry]
	ToolCalls      Opt[[]ToolCall]
	ExpectedTools  Opt[ExpectedTools]
	Feedback       Opt[[]FeedbackEntry]
	Metadata       Opt[json.RawMessage]
	Plugins        Opt[map[string]PluginPayload]
	ManualTags     Opt[[]string]
	TraceIDs       Opt[map[string]string]
	TracePayload   Opt[json.RawMessage]
	ScenarioID     Opt[string]
	ETag           Opt[string]
	Approve        Opt[bool] // assignments route only
	// HasComputedTags and HasTags record the output-only keys, refused after the lookup.
	HasComputedTags, HasTags bool
	// Keys lists the body's keys in document order, so problems are reported in that order.
	Keys []string
}

var historyPatchKeys = keys("role", "msg", "content", "turnId", "stepId", "expectedBehavior", "expected_behavior")

var patchKeys = keys("computedTags", "tags", "status", "comment", "scenarioId", "etag", "approve", "history",
	"contextEntries", "toolCalls", "expectedTools", "feedback", "metadata", "tracePayload", "plugins", "traceIds",
	"manualTags")

// DecodeItemPatch checks a PUT body against the update schema. allowApprove accepts the
// assignment route's approve key. Only schema problems are reported here (422); the field
// semantics are checked after the item is loaded.
func DecodeItemPatch(body []byte, allowApprove bool) (*ItemPatch, error) {
	v, err := ParseBody(body)
	if err != nil {
		return nil, err
	}
	d := &decoder{}
	var root fieldPath
	if v.kind != jObject {
		d.add(root, msgExpObject)
		return nil, d.err()
	}
	pt := &ItemPatch{}
	for m := v.members(); m.next(); {
		name, known := patchKeys.name(m.key)
		if !known {
			d.unknown(root, m.key)
			continue
		}
		if d.ok() {
			pt.Keys = append(pt.Keys, name)
		}
		fp := root.key(name)
		val := m.val
		null := val.kind == jNull
		switch name {
		case "computedTags":
			pt.HasComputedTags = true
		case "tags":
			pt.HasTags = true
		case "status":
			pt.Status = Opt[string]{Set: true, Null: null}
			if !null {
				pt.Status.V, _ = d.str(val, fp, true)
			}
		case "comment":
			pt.Comment = Opt[string]{Set: true, Null: null}
			pt.Comment.V, _ = d.str(val, fp, true)
		case "scenarioId":
			pt.ScenarioID = Opt[string]{Set: true, Null: null}
			pt.ScenarioID.V, _ = d.str(val, fp, true)
		case "etag":
			pt.ETag = Opt[string]{Set: true, Null: null}
			pt.ETag.V, _ = d.str(val, fp, true)
		case "approve":
			if !allowApprove {
				d.add(fp, msgUnknownField)
				continue
			}
			pt.Approve = Opt[bool]{Set: true, Null: null}
			switch val.kind {
			case jNull:
			case jBool:
				pt.Approve.V = val.boolean()
			default:
				d.add(fp, msgExpBoolean)
			}
		case "history":
			pt.History = Opt[[]HistoryPatch]{Set: true, Null: null, V: []HistoryPatch{}}
			switch val.kind {
			case jNull:
			case jArray:
				for el := val.elems(); el.next(); {
					if h := d.historyPatch(el.val, fp.index(el.i)); d.ok() {
						pt.History.V = append(pt.History.V, h)
					}
				}
			default:
				d.add(fp, msgExpArray)
			}
		case "contextEntries":
			pt.ContextEntries = Opt[[]ContextEntry]{Set: true, Null: null, V: d.contextEntries(val, fp)}
		case "toolCalls":
			pt.ToolCalls = Opt[[]ToolCall]{Set: true, Null: null, V: d.toolCalls(val, fp)}
		case "expectedTools":
			pt.ExpectedTools = Opt[ExpectedTools]{Set: true, Null: null, V: d.expectedTools(val, fp)}
		case "feedback":
			pt.Feedback = Opt[[]FeedbackEntry]{Set: true, Null: null, V: d.feedback(val, fp)}
		case "metadata":
			r, _ := d.rawObject(val, fp)
			pt.Metadata = Opt[json.RawMessage]{Set: true, Null: null, V: r}
		case "tracePayload":
			r, _ := d.rawObject(val, fp)
			pt.TracePayload = Opt[json.RawMessage]{Set: true, Null: null, V: r}
		case "plugins":
			pt.Plugins = Opt[map[string]PluginPayload]{Set: true, Null: null, V: d.plugins(val, fp)}
		case "traceIds":
			pt.TraceIDs = Opt[map[string]string]{Set: true, Null: null, V: d.traceIDs(val, fp)}
		case "manualTags":
			pt.ManualTags = Opt[[]string]{Set: true, Null: null, V: []string{}}
			switch val.kind {
			case jNull:
			case jArray:
				for el := val.elems(); el.next(); {
					switch el.val.kind {
					case jNull:
					case jString:
						if d.ok() {
							pt.ManualTags.V = append(pt.ManualTags.V, el.val.text())
						}
					default:
						d.add(fp.index(el.i), msgExpString)
					}
				}
			default:
				d.add(fp, msgExpArray)
			}
		}
	}
	if err := d.err(); err != nil {
		return nil, err
	}
	return pt, nil
}

func (d *decoder) historyPatch(v jvalue, p fieldPath) HistoryPatch {
	var h HistoryPatch
	if !d.object(v, p, historyPatchKeys) {
		return h
	}
	var msg, content *string
	var eb, ebAlias jvalue
	var hasEB, hasEBAlias bool
	for m := v.members(); m.next(); {
		name, _ := historyPatchKeys.name(m.key)
		fp := p.key(name)
		switch name {
		case "role":
			if s, ok := d.str(m.val, fp, true); ok {
				h.Role = s
			}
		case "msg":
			msg, _ = d.strPtr(m.val, fp)
		case "content":
			content, _ = d.strPtr(m.val, fp)
		case "turnId":
			h.TurnID, _ = d.strPtr(m.val, fp)
		case "stepId":
			h.StepID, _ = d.strPtr(m.val, fp)
		case "expectedBehavior":
			eb, hasEB = m.val, true
		case "expected_behavior":
			ebAlias, hasEBAlias = m.val, true
		}
	}
	h.Msg = msg
	if h.Msg == nil {
		h.Msg = content
	}
	if !hasEB {
		eb, hasEB = ebAlias, hasEBAlias
	}
	if hasEB && eb.kind != jNull {
		h.ExpectedBehaviorSet = true
		if eb.kind == jArray {
			h.ExpectedBehaviorOK = true
			h.ExpectedBehavior = []string{}
			for el := eb.elems(); el.next(); {
				if el.val.kind != jString {
					h.ExpectedBehaviorOK = false
					break
				}
				h.ExpectedBehavior = append(h.ExpectedBehavior, el.val.text())
			}
		}
	}
	return h
}

// --- curation instructions -----------------------------------------------------------------

// CurationUpdate is a checked curation-instructions PUT body.
type CurationUpdate struct {
	Instructions string
	Token        string // _etag, else etag; "" when neither is usable
}

// DecodeCurationUpdate checks {"instructions": string, "_etag"?: string, "etag"?: string}.
func DecodeCurationUpdate(body []byte) (*CurationUpdate, error) {
	v, err := ParseBody(body)
	if err != nil {
		return nil, err
	}
	d := &decoder{}
	if !d.object(v, fieldPath{}, keys("instructions", "_etag", "etag")) {
		return nil, d.err()
	}
	u := &CurationUpdate{}
	iv, ok := v.get("instructions")
	if !ok {
		d.add(at("instructions"), msgRequired)
	} else if s, ok := d.str(iv, at("instructions"), false); ok {
		u.Instructions = s
	}
	var tok1, tok2 string
	if t, ok := v.get("_etag"); ok {
		tok1, _ = d.str(t, at("_etag"), true)
	}
	if t, ok := v.get("etag"); ok {
		tok2, _ = d.str(t, at("etag"), true)
	}
	if err := d.err(); err != nil {
		return nil, err
	}
	if strings.TrimSpace(tok1) != "" {
		u.Token = tok1
	} else if strings.TrimSpace(tok2) != "" {
		u.Token = tok2
	}
	return u, nil
}

// --- tag vocabulary bodies -----------------------------------------------------------------

// DecodeTagList checks {"tags": [string, …]} (POST and DELETE /v1/tags).
func DecodeTagList(body []byte) ([]string, error) {
	v, err := ParseBody(body)
	if err != nil {
		return nil, err
	}
	d := &decoder{}
	if !d.object(v, fieldPath{}, keys("tags")) {
		return nil, d.err()
	}
	tv, ok := v.get("tags")
	if !ok {
		d.add(at("tags"), msgRequired)
		return nil, d.err()
	}
	if tv.kind == jNull {
		d.add(at("tags"), msgNotNull)
		return nil, d.err()
	}
	tags, _ := d.stringList(tv, at("tags"))
	if err := d.err(); err != nil {
		return nil, err
	}
	return tags, nil
}

// TagDefinitionRequest is a checked POST /v1/tags/definitions body.
type TagDefinitionRequest struct {
	TagKey      string
	Description string
}

// DecodeTagDefinition checks {"tag_key": string, "description": string}; lengths are checked
// by the vocabulary.
func DecodeTagDefinition(body []byte) (*TagDefinitionRequest, error) {
	v, err := ParseBody(body)
	if err != nil {
		return nil, err
	}
	d := &decoder{}
	if !d.object(v, fieldPath{}, keys("tag_key", "description")) {
		return nil, d.err()
	}
	r := &TagDefinitionRequest{}
	for _, k := range []string{"tag_key", "description"} {
		fv, ok := v.get(k)
		if !ok {
			d.add(at(k), msgRequired)
			continue
		}
		s, _ := d.str(fv, at(k), false)
		if k == "tag_key" {
			r.TagKey = s
		} else {
			r.Description = s
		}
	}
	if err := d.err(); err != nil {
		return nil, err
	}
	return r, nil
}

// --- assignment bodies ---------------------------------------------------------------------

// DecodeSelfServe checks the optional {"limit": integer} of self-serve; nil body or a
// missing or null limit gives nil (the default applies). A limit below 1 asks for nothing
// and a limit beyond 32 bits is a mistake: both are refused rather than served (values above
// GTC_SELF_SERVE_MAX but within range are clamped by the service).
func DecodeSelfServe(body []byte) (*int, error) {
	if body == nil {
		return nil, nil
	}
	v, err := ParseBody(body)
	if err != nil {
		return nil, err
	}
	d := &decoder{}
	if !d.object(v, fieldPath{}, keys("limit")) {
		return nil, d.err()
	}
	lv, ok := v.get("limit")
	if !ok || lv.kind == jNull {
		return nil, d.err()
	}
	n, ok := d.integer(lv, at("limit"))
	switch {
	case ok && n < 1:
		d.add(at("limit"), "must be at least 1")
	case ok && n > math.MaxInt32:
		d.add(at("limit"), fmt.Sprintf("must be at most %d", math.MaxInt32))
	}
	if err := d.err(); err != nil {
		return nil, err
	}
	limit := int(n)
	return &limit, nil
}

// DecodeAssign checks the optional {"force": boolean} of assign.
func DecodeAssign(body []byte) (bool, error) {
	if body == nil {
		return false, nil
	}
	v, err := ParseBody(body)
	if err != nil {
		return false, err
	}
	d := &decoder{}
	if !d.object(v, fieldPath{}, keys("force")) {
		return false, d.err()
	}
	force := false
	if fv, ok := v.get("force"); ok && fv.kind != jNull {
		if fv.kind != jBool {
			d.add(at("force"), msgExpBoolean)
		} else {
			force = fv.boolean()
		}
	}
	return force, d.err()
}
