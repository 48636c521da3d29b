package gtc

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Standard schema messages (api.md §1.6).
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

// Item structure messages (domain-and-tags.md §1.1–§1.2).
const (
	MsgIDChars            = "id contains characters that are not allowed"
	MsgDatasetEmpty       = "datasetName cannot be empty"
	MsgDatasetChars       = "datasetName contains characters that are not allowed"
	MsgHistoryEmpty       = "history fields cannot be empty"
	MsgContextKeyEmpty    = "contextEntries[].key cannot be empty"
	MsgToolNameEmpty      = "toolCalls[].name cannot be empty"
	MsgStepNumberNegative = "toolCalls[].stepNumber cannot be negative"
	MsgExpectationName    = "expectedTools entries must include a non-empty name"
	msgToolOverlap        = "tools cannot appear in more than one category: "
	MsgPluginKindEmpty    = "plugins[].kind cannot be empty"
	MsgReferenceURLEmpty  = "Reference URL cannot be empty"
)

// MaxNameChars bounds id and datasetName.
const MaxNameChars = 255

// ParseBody parses a request body as JSON. A syntax error is a 422 INVALID_JSON naming the
// body (api.md §1.2).
func ParseBody(body []byte) (*jvalue, error) {
	v, err := parseJSON(body)
	if err != nil {
		var se *JSONSyntaxError
		msg := err.Error()
		if errors.As(err, &se) {
			msg = se.Error()
		}
		return nil, &Error{
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
}

func (d *decoder) add(p fieldPath, msg string) {
	if len(d.errs) >= MaxFieldErrors {
		d.more++
		return
	}
	d.errs = append(d.errs, FieldError{Field: p.String(), Message: msg})
}

// problems counts every problem found so far, listed or not.
func (d *decoder) problems() int { return len(d.errs) + d.more }

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
func (d *decoder) str(v *jvalue, p fieldPath, nullable bool) (s string, ok bool) {
	switch v.kind {
	case jString:
		return v.s, true
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

func (d *decoder) strPtr(v *jvalue, p fieldPath) (*string, bool) {
	s, ok := d.str(v, p, true)
	if !ok {
		return nil, v.kind == jNull
	}
	return &s, true
}

func (d *decoder) timePtr(v *jvalue, p fieldPath) (*time.Time, bool) {
	switch v.kind {
	case jNull:
		return nil, true
	case jString:
		t, err := ParseTime(v.s)
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
func (d *decoder) object(v *jvalue, p fieldPath, known map[string]bool) bool {
	if v.kind != jObject {
		d.typeErr(p, jObject)
		return false
	}
	for _, m := range v.obj {
		if !known[m.key] {
			d.add(p.key(m.key), msgUnknownField)
		}
	}
	return true
}

func (d *decoder) rawObject(v *jvalue, p fieldPath) (json.RawMessage, bool) {
	switch v.kind {
	case jNull:
		return emptyObject, true
	case jObject:
		return v.raw(), true
	default:
		d.typeErr(p, jObject)
		return nil, false
	}
}

func (d *decoder) integer(v *jvalue, p fieldPath) (int64, bool) {
	if v.kind != jNumber || strings.ContainsAny(v.s, ".eE") {
		d.add(p, msgExpInteger)
		return 0, false
	}
	n, err := strconv.ParseInt(v.s, 10, 64)
	if err != nil {
		d.add(p, msgExpInteger)
		return 0, false
	}
	return n, true
}

func charCount(s string) int { return utf8.RuneCountInString(s) }

func atMost(n int) string { return fmt.Sprintf("must be at most %d characters", n) }

// badNameChars reports whether s contains '/', '\', '?', '#' or a control character.
func badNameChars(s string) bool {
	for _, r := range s {
		if r == '/' || r == '\\' || r == '?' || r == '#' || unicode.IsControl(r) {
			return true
		}
	}
	return false
}

// CheckItemID validates a non-blank, trimmed item id.
func CheckItemID(id string) string {
	if charCount(id) > MaxNameChars {
		return atMost(MaxNameChars)
	}
	if badNameChars(id) {
		return MsgIDChars
	}
	return ""
}

// CheckDatasetName validates a dataset name as sent.
func CheckDatasetName(name string) string {
	if strings.TrimSpace(name) == "" {
		return MsgDatasetEmpty
	}
	if charCount(name) > MaxNameChars {
		return atMost(MaxNameChars)
	}
	if badNameChars(name) {
		return MsgDatasetChars
	}
	return ""
}

// --- nested types, shared by import and PUT ------------------------------------------------

var historyKeys = map[string]bool{"role": true, "msg": true, "turnId": true, "stepId": true, "expectedBehavior": true}

// historyEntry decodes an import history entry: role and msg are required and non-blank.
func (d *decoder) historyEntry(v *jvalue, p fieldPath) (HistoryEntry, bool) {
	var h HistoryEntry
	if !d.object(v, p, historyKeys) {
		return h, false
	}
	n := d.problems()
	var hasRole, hasMsg bool
	for _, m := range v.obj {
		fp := p.key(m.key)
		switch m.key {
		case "role":
			hasRole = true
			if s, ok := d.str(m.val, fp, false); ok {
				if strings.TrimSpace(s) == "" {
					d.add(fp, MsgHistoryEmpty)
				}
				h.Role = strings.TrimSpace(s)
			}
		case "msg":
			hasMsg = true
			if s, ok := d.str(m.val, fp, false); ok {
				if strings.TrimSpace(s) == "" {
					d.add(fp, MsgHistoryEmpty)
				}
				h.Msg = strings.TrimSpace(s)
			}
		case "turnId":
			h.TurnID, _ = d.strPtr(m.val, fp)
		case "stepId":
			h.StepID, _ = d.strPtr(m.val, fp)
		case "expectedBehavior":
			h.ExpectedBehavior, _ = d.stringList(m.val, fp)
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

// stringList reads an array of strings or null (nil).
func (d *decoder) stringList(v *jvalue, p fieldPath) ([]string, bool) {
	switch v.kind {
	case jNull:
		return nil, true
	case jArray:
		out := make([]string, 0, len(v.arr))
		ok := true
		for i, el := range v.arr {
			if el.kind != jString {
				d.add(p.index(i), msgExpString)
				ok = false
				continue
			}
			out = append(out, el.s)
		}
		return out, ok
	default:
		d.add(p, msgExpArray)
		return nil, false
	}
}

var contextKeys = map[string]bool{"key": true, "value": true}

func (d *decoder) contextEntries(v *jvalue, p fieldPath) []ContextEntry {
	out := []ContextEntry{}
	if v.kind == jNull {
		return out
	}
	if v.kind != jArray {
		d.add(p, msgExpArray)
		return out
	}
	for i, el := range v.arr {
		ep := p.index(i)
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
		if vv, ok := el.get("value"); ok {
			ce.Value = vv.raw()
		} else {
			d.add(ep.key("value"), msgRequired)
		}
		out = append(out, ce)
	}
	return out
}

func (d *decoder) traceIDs(v *jvalue, p fieldPath) map[string]string {
	switch v.kind {
	case jNull:
		return nil
	case jObject:
		out := make(map[string]string, len(v.obj))
		for _, m := range v.obj {
			if s, ok := d.str(m.val, p.key(m.key), false); ok {
				out[m.key] = s
			}
		}
		return out
	default:
		d.add(p, msgExpObject)
		return nil
	}
}

var toolCallKeys = map[string]bool{"id": true, "name": true, "callType": true, "arguments": true, "agent": true,
	"stepNumber": true, "parallelGroup": true, "parentCallId": true, "response": true}

func (d *decoder) toolCalls(v *jvalue, p fieldPath) []ToolCall {
	out := []ToolCall{}
	if v.kind == jNull {
		return out
	}
	if v.kind != jArray {
		d.add(p, msgExpArray)
		return out
	}
	for i, el := range v.arr {
		ep := p.index(i)
		if !d.object(el, ep, toolCallKeys) {
			continue
		}
		tc := ToolCall{CallType: "tool"}
		hasName := false
		for _, m := range el.obj {
			fp := ep.key(m.key)
			switch m.key {
			case "id":
				if s, ok := d.str(m.val, fp, true); ok {
					tc.ID = s
				}
			case "name":
				hasName = true
				if s, ok := d.str(m.val, fp, false); ok {
					if strings.TrimSpace(s) == "" {
						d.add(fp, MsgToolNameEmpty)
					}
					tc.Name = strings.TrimSpace(s)
				}
			case "callType":
				if s, ok := d.str(m.val, fp, true); ok {
					if s != "tool" && s != "subagent" {
						d.add(fp, "must be one of: tool, subagent")
					} else {
						tc.CallType = s
					}
				}
			case "arguments":
				switch m.val.kind {
				case jNull:
				case jObject:
					tc.Arguments = m.val.raw()
				default:
					d.add(fp, msgExpObject)
				}
			case "agent":
				tc.Agent, _ = d.strPtr(m.val, fp)
			case "parallelGroup":
				tc.ParallelGroup, _ = d.strPtr(m.val, fp)
			case "parentCallId":
				tc.ParentCallID, _ = d.strPtr(m.val, fp)
			case "stepNumber":
				if m.val.kind == jNull {
					continue
				}
				if n, ok := d.integer(m.val, fp); ok {
					if n < 0 {
						d.add(fp, MsgStepNumberNegative)
					} else {
						tc.StepNumber = &n
					}
				}
			case "response":
				if m.val.kind != jNull {
					tc.Response = m.val.raw()
				}
			}
		}
		if !hasName {
			d.add(ep.key("name"), msgRequired)
		}
		out = append(out, tc)
	}
	return out
}

var expectedToolsKeys = map[string]bool{"required": true, "optional": true, "notNeeded": true}
var expectationKeys = map[string]bool{"name": true, "arguments": true}

func (d *decoder) expectedTools(v *jvalue, p fieldPath) ExpectedTools {
	et := ExpectedTools{Required: []ToolExpectation{}, Optional: []ToolExpectation{}, NotNeeded: []ToolExpectation{}}
	if v.kind == jNull {
		return et
	}
	if !d.object(v, p, expectedToolsKeys) {
		return et
	}
	for _, m := range v.obj {
		if !expectedToolsKeys[m.key] {
			continue
		}
		list := d.expectations(m.val, p.key(m.key))
		switch m.key {
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

func (d *decoder) expectations(v *jvalue, p fieldPath) []ToolExpectation {
	out := []ToolExpectation{}
	if v.kind == jNull {
		return out
	}
	if v.kind != jArray {
		d.add(p, msgExpArray)
		return out
	}
	for i, el := range v.arr {
		ep := p.index(i)
		switch el.kind {
		case jString:
			if strings.TrimSpace(el.s) == "" {
				d.add(ep, MsgExpectationName)
				continue
			}
			out = append(out, ToolExpectation{Name: strings.TrimSpace(el.s)})
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
					e.Arguments = av.raw()
				default:
					d.add(ep.key("arguments"), "expected object or string")
				}
			}
			out = append(out, e)
		default:
			d.add(ep, msgExpObject)
		}
	}
	return out
}

var feedbackKeys = map[string]bool{"source": true, "values": true}

func (d *decoder) feedback(v *jvalue, p fieldPath) []FeedbackEntry {
	out := []FeedbackEntry{}
	if v.kind == jNull {
		return out
	}
	if v.kind != jArray {
		d.add(p, msgExpArray)
		return out
	}
	for i, el := range v.arr {
		ep := p.index(i)
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
		out = append(out, f)
	}
	return out
}

var pluginKeys = map[string]bool{"kind": true, "version": true, "data": true}

func (d *decoder) plugins(v *jvalue, p fieldPath) map[string]PluginPayload {
	out := map[string]PluginPayload{}
	if v.kind == jNull {
		return out
	}
	if v.kind != jObject {
		d.add(p, msgExpObject)
		return out
	}
	for _, m := range v.obj {
		sp := p.key(m.key)
		if !d.object(m.val, sp, pluginKeys) {
			continue
		}
		pp := PluginPayload{Version: "1.0", Data: emptyObject}
		kv, ok := m.val.get("kind")
		if !ok {
			d.add(sp.key("kind"), msgRequired)
		} else if s, ok := d.str(kv, sp.key("kind"), false); ok {
			if strings.TrimSpace(s) == "" {
				d.add(sp.key("kind"), MsgPluginKindEmpty)
			}
			pp.Kind = s
		}
		if vv, ok := m.val.get("version"); ok {
			if s, ok := d.str(vv, sp.key("version"), true); ok {
				pp.Version = s
			}
		}
		if dv, ok := m.val.get("data"); ok {
			if r, ok := d.rawObject(dv, sp.key("data")); ok {
				pp.Data = r
				if m.key == RAGCompatSlot && dv.kind == jObject {
					d.references(dv, sp.key("data"))
				}
			}
		}
		out[m.key] = pp
	}
	return out
}

// references checks data.references of the rag-compat slot: an array of objects, each with a
// non-blank string url. Every other key is kept verbatim.
func (d *decoder) references(data *jvalue, p fieldPath) {
	refs, ok := data.get("references")
	if !ok {
		return
	}
	rp := p.key("references")
	if refs.kind != jArray {
		d.add(rp, msgExpArray)
		return
	}
	for i, el := range refs.arr {
		ep := rp.index(i)
		if el.kind != jObject {
			d.add(ep, msgExpObject)
			continue
		}
		u, ok := el.get("url")
		if !ok || u.kind != jString || strings.TrimSpace(u.s) == "" {
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

// DecodeImport checks a bulk-import body against the item schema (api.md §3.4.2, whole
// request checks) and returns one entry per element. Any problem fails the whole request
// with a 422 listing every problem. Tag format and tag rules are checked by the caller.
func DecodeImport(body []byte) ([]*ImportEntry, error) {
	v, err := ParseBody(body)
	if err != nil {
		return nil, err
	}
	d := &decoder{}
	if v.kind != jArray {
		d.add("", msgExpArray)
		return nil, d.err()
	}
	out := make([]*ImportEntry, 0, len(v.arr))
	for i, el := range v.arr {
		out = append(out, d.importItem(el, fieldPath("").index(i)))
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
	e := d.importItem(v, "")
	if err := d.err(); err != nil {
		return nil, err
	}
	return e, nil
}

func (d *decoder) importItem(v *jvalue, p fieldPath) *ImportEntry {
	e := &ImportEntry{Item: NewItem("", "")}
	it := e.Item
	if v.kind != jObject {
		d.add(p, msgExpObject)
		return e
	}
	var hasID, hasDataset bool
	for _, m := range v.obj {
		fp := p.key(m.key)
		val := m.val
		if importOutputOnly[m.key] {
			e.IgnoredFields = append(e.IgnoredFields, m.key)
			continue
		}
		switch m.key {
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
				for _, part := range strings.Split(val.s, ",") {
					if t := strings.TrimSpace(part); t != "" {
						e.RawManualTags = append(e.RawManualTags, t)
					}
				}
			case jArray:
				for j, el := range val.arr {
					switch el.kind {
					case jNull:
					case jString:
						e.RawManualTags = append(e.RawManualTags, el.s)
					default:
						d.add(fp.index(j), msgExpString)
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
				for j, el := range val.arr {
					if h, ok := d.historyEntry(el, fp.index(j)); ok {
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
		default:
			d.add(fp, msgUnknownField)
		}
	}
	if !hasID {
		d.add(p.key("id"), msgRequired)
	}
	if !hasDataset {
		d.add(p.key("datasetName"), msgRequired)
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

// ItemPatch is a schema-checked item PUT body (domain-and-tags.md §6.2 step 1).
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

var historyPatchKeys = map[string]bool{"role": true, "msg": true, "content": true, "turnId": true, "stepId": true,
	"expectedBehavior": true, "expected_behavior": true}

// DecodeItemPatch checks a PUT body against the update schema. allowApprove accepts the
// assignment route's approve key. Only schema problems are reported here (422); the field
// semantics are checked after the item is loaded.
func DecodeItemPatch(body []byte, allowApprove bool) (*ItemPatch, error) {
	v, err := ParseBody(body)
	if err != nil {
		return nil, err
	}
	d := &decoder{}
	if v.kind != jObject {
		d.add("", msgExpObject)
		return nil, d.err()
	}
	pt := &ItemPatch{}
	for _, m := range v.obj {
		pt.Keys = append(pt.Keys, m.key)
		fp := fieldPath("").key(m.key)
		val := m.val
		null := val.kind == jNull
		switch m.key {
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
				pt.Approve.V = val.b
			default:
				d.add(fp, msgExpBoolean)
			}
		case "history":
			pt.History = Opt[[]HistoryPatch]{Set: true, Null: null, V: []HistoryPatch{}}
			switch val.kind {
			case jNull:
			case jArray:
				for j, el := range val.arr {
					pt.History.V = append(pt.History.V, d.historyPatch(el, fp.index(j)))
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
				for j, el := range val.arr {
					switch el.kind {
					case jNull:
					case jString:
						pt.ManualTags.V = append(pt.ManualTags.V, el.s)
					default:
						d.add(fp.index(j), msgExpString)
					}
				}
			default:
				d.add(fp, msgExpArray)
			}
		default:
			d.add(fp, msgUnknownField)
		}
	}
	if err := d.err(); err != nil {
		return nil, err
	}
	return pt, nil
}

func (d *decoder) historyPatch(v *jvalue, p fieldPath) HistoryPatch {
	var h HistoryPatch
	if !d.object(v, p, historyPatchKeys) {
		return h
	}
	var msg, content *string
	var eb, ebAlias *jvalue
	for _, m := range v.obj {
		fp := p.key(m.key)
		switch m.key {
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
			eb = m.val
		case "expected_behavior":
			ebAlias = m.val
		}
	}
	h.Msg = msg
	if h.Msg == nil {
		h.Msg = content
	}
	if eb == nil {
		eb = ebAlias
	}
	if eb != nil && eb.kind != jNull {
		h.ExpectedBehaviorSet = true
		if eb.kind == jArray {
			h.ExpectedBehaviorOK = true
			h.ExpectedBehavior = make([]string, 0, len(eb.arr))
			for _, el := range eb.arr {
				if el.kind != jString {
					h.ExpectedBehaviorOK = false
					break
				}
				h.ExpectedBehavior = append(h.ExpectedBehavior, el.s)
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
	if !d.object(v, "", map[string]bool{"instructions": true, "_etag": true, "etag": true}) {
		return nil, d.err()
	}
	u := &CurationUpdate{}
	iv, ok := v.get("instructions")
	if !ok {
		d.add("instructions", msgRequired)
	} else if s, ok := d.str(iv, "instructions", false); ok {
		u.Instructions = s
	}
	var tok1, tok2 string
	if t, ok := v.get("_etag"); ok {
		tok1, _ = d.str(t, "_etag", true)
	}
	if t, ok := v.get("etag"); ok {
		tok2, _ = d.str(t, "etag", true)
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
	if !d.object(v, "", map[string]bool{"tags": true}) {
		return nil, d.err()
	}
	tv, ok := v.get("tags")
	if !ok {
		d.add("tags", msgRequired)
		return nil, d.err()
	}
	if tv.kind == jNull {
		d.add("tags", msgNotNull)
		return nil, d.err()
	}
	tags, _ := d.stringList(tv, "tags")
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
	if !d.object(v, "", map[string]bool{"tag_key": true, "description": true}) {
		return nil, d.err()
	}
	r := &TagDefinitionRequest{}
	for _, k := range []string{"tag_key", "description"} {
		fv, ok := v.get(k)
		if !ok {
			d.add(fieldPath(k), msgRequired)
			continue
		}
		s, _ := d.str(fv, fieldPath(k), false)
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
	if !d.object(v, "", map[string]bool{"limit": true}) {
		return nil, d.err()
	}
	lv, ok := v.get("limit")
	if !ok || lv.kind == jNull {
		return nil, d.err()
	}
	n, ok := d.integer(lv, "limit")
	switch {
	case ok && n < 1:
		d.add("limit", "must be at least 1")
	case ok && n > math.MaxInt32:
		d.add("limit", fmt.Sprintf("must be at most %d", math.MaxInt32))
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
	if !d.object(v, "", map[string]bool{"force": true}) {
		return false, d.err()
	}
	force := false
	if fv, ok := v.get("force"); ok && fv.kind != jNull {
		if fv.kind != jBool {
			d.add("force", msgExpBoolean)
		} else {
			force = fv.b
		}
	}
	return force, d.err()
}
