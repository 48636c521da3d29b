package codec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

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

const msgToolOverlap = "tools cannot appear in more than one category: "

// ParseBody parses a request body as JSON. A syntax error is a 422 INVALID_JSON naming the
// body.
func ParseBody(body []byte) (Value, error) {
	v, err := parseJSON(body)
	if err != nil {
		msg := syntaxMessage(err)
		return Value{}, &gtc.Error{
			Code:    gtc.CodeInvalidJSON,
			Message: "Request validation failed: body: " + msg,
			Fields:  []gtc.FieldError{{Field: "body", Message: msg}},
		}
	}
	return v, nil
}

// Decoder collects the problems of a body in document order. It lists the first
// gtc.MaxFieldErrors and only counts the others, so a body with millions of problems costs no
// more than one with a hundred.
type Decoder struct {
	errs []gtc.FieldError
	more int
	// scratch receives the items of an import once the body has a problem.
	scratch     gtc.ImportEntry
	scratchItem gtc.Item
}

func (d *Decoder) Add(p Path, msg string) {
	if len(d.errs) >= gtc.MaxFieldErrors {
		d.more++
		return
	}
	d.errs = append(d.errs, gtc.FieldError{Field: p.String(), Message: msg})
}

// unknown reports an unknown key of the object at p.
func (d *Decoder) Unknown(p Path, k Key) {
	d.Add(p.KeyAt(k), MsgUnknownField)
}

// at is the path of a top-level key.
func At(name string) Path { return Path{name: name, kind: pathKey} }

// problems counts every problem found so far, listed or not.
func (d *Decoder) Problems() int { return len(d.errs) + d.more }

// ok reports whether no problem was found yet. Once one was, the body is refused whatever
// follows, so the decoders stop building what they would return and only look for the
// other problems.
func (d *Decoder) OK() bool { return len(d.errs) == 0 && d.more == 0 }

func (d *Decoder) Err() error {
	if d.Problems() == 0 {
		return nil
	}
	return gtc.ValidationErrorMore(d.errs, d.more)
}

func (d *Decoder) typeErr(p Path, want Kind) {
	switch want {
	case String:
		d.Add(p, MsgExpString)
	case Number:
		d.Add(p, MsgExpInteger)
	case Bool:
		d.Add(p, MsgExpBoolean)
	case Array:
		d.Add(p, MsgExpArray)
	case Object:
		d.Add(p, MsgExpObject)
	}
}

// str reads a string; null gives ok=false without an error when nullable.
func (d *Decoder) Str(v Value, p Path, nullable bool) (s string, ok bool) {
	switch v.kind {
	case String:
		return v.Text(), true
	case Null:
		if !nullable {
			d.Add(p, MsgNotNull)
		}
		return "", false
	default:
		d.typeErr(p, String)
		return "", false
	}
}

func (d *Decoder) StrPtr(v Value, p Path) (*string, bool) {
	s, ok := d.Str(v, p, true)
	if !ok {
		return nil, v.kind == Null
	}
	return &s, true
}

func (d *Decoder) timePtr(v Value, p Path) (*time.Time, bool) {
	switch v.kind {
	case Null:
		return nil, true
	case String:
		t, err := gtc.ParseTime(v.Text())
		if err != nil {
			d.Add(p, MsgDateTime)
			return nil, false
		}
		return &t, true
	default:
		d.typeErr(p, String)
		return nil, false
	}
}

// object checks v is an object (or null when nullable) and reports unknown keys.
func (d *Decoder) Object(v Value, p Path, known KeySet) bool {
	if v.kind != Object {
		d.typeErr(p, Object)
		return false
	}
	for it := v.Members(); it.Next(); {
		if _, ok := known.Name(it.Key); !ok {
			d.Unknown(p, it.Key)
		}
	}
	return true
}

// rawObject reads a free-form object (null is {}). Its bytes are only copied while the body
// has no problem.
func (d *Decoder) RawObject(v Value, p Path) (json.RawMessage, bool) {
	switch v.kind {
	case Null:
		return emptyObject, true
	case Object:
		if !d.OK() {
			return emptyObject, true
		}
		return v.Raw(), true
	default:
		d.typeErr(p, Object)
		return nil, false
	}
}

func (d *Decoder) Integer(v Value, p Path) (int64, bool) {
	if v.kind != Number || bytes.ContainsAny(v.literal(), ".eE") {
		d.Add(p, MsgExpInteger)
		return 0, false
	}
	n, err := strconv.ParseInt(string(v.literal()), 10, 64)
	if err != nil {
		d.Add(p, MsgExpInteger)
		return 0, false
	}
	return n, true
}

// --- nested types, shared by import and PUT ------------------------------------------------

var historyKeys = Keys("role", "msg", "turnId", "stepId", "expectedBehavior")

// historyEntry decodes an import history entry: role and msg are required and non-blank.
func (d *Decoder) historyEntry(v Value, p Path) (gtc.HistoryEntry, bool) {
	var h gtc.HistoryEntry
	if !d.Object(v, p, historyKeys) {
		return h, false
	}
	n := d.Problems()
	var hasRole, hasMsg bool
	for it := v.Members(); it.Next(); {
		name, _ := historyKeys.Name(it.Key)
		fp := p.Key(name)
		switch name {
		case "role":
			hasRole = true
			if s, ok := d.Str(it.Val, fp, false); ok {
				if strings.TrimSpace(s) == "" {
					d.Add(fp, gtc.MsgHistoryEmpty)
				}
				h.Role = strings.TrimSpace(s)
			}
		case "msg":
			hasMsg = true
			if s, ok := d.Str(it.Val, fp, false); ok {
				if strings.TrimSpace(s) == "" {
					d.Add(fp, gtc.MsgHistoryEmpty)
				}
				h.Msg = strings.TrimSpace(s)
			}
		case "turnId":
			h.TurnID, _ = d.StrPtr(it.Val, fp)
		case "stepId":
			h.StepID, _ = d.StrPtr(it.Val, fp)
		case "expectedBehavior":
			h.ExpectedBehavior, _ = d.StringList(it.Val, fp)
		}
	}
	if !hasRole {
		d.Add(p.Key("role"), MsgRequired)
	}
	if !hasMsg {
		d.Add(p.Key("msg"), MsgRequired)
	}
	return h, d.Problems() == n
}

// stringList reads an array of strings or null (nil). The list is complete only when ok.
func (d *Decoder) StringList(v Value, p Path) ([]string, bool) {
	switch v.kind {
	case Null:
		return nil, true
	case Array:
		out := []string{}
		ok := true
		for it := v.Elems(); it.Next(); {
			if it.Val.kind != String {
				d.Add(p.Index(it.I), MsgExpString)
				ok = false
				continue
			}
			if ok {
				out = append(out, it.Val.Text())
			}
		}
		return out, ok
	default:
		d.Add(p, MsgExpArray)
		return nil, false
	}
}

var contextKeys = Keys("key", "value")

func (d *Decoder) ContextEntries(v Value, p Path) []gtc.ContextEntry {
	out := []gtc.ContextEntry{}
	if v.kind == Null {
		return out
	}
	if v.kind != Array {
		d.Add(p, MsgExpArray)
		return out
	}
	for it := v.Elems(); it.Next(); {
		el := it.Val
		ep := p.Index(it.I)
		if !d.Object(el, ep, contextKeys) {
			continue
		}
		var ce gtc.ContextEntry
		kv, hasKey := el.Get("key")
		if !hasKey {
			d.Add(ep.Key("key"), MsgRequired)
		} else if s, ok := d.Str(kv, ep.Key("key"), false); ok {
			if strings.TrimSpace(s) == "" {
				d.Add(ep.Key("key"), gtc.MsgContextKeyEmpty)
			}
			ce.Key = strings.TrimSpace(s)
		}
		vv, hasValue := el.Get("value")
		if !hasValue {
			d.Add(ep.Key("value"), MsgRequired)
		}
		if d.OK() {
			ce.Value = vv.Raw()
			out = append(out, ce)
		}
	}
	return out
}

func (d *Decoder) TraceIDs(v Value, p Path) map[string]string {
	switch v.kind {
	case Null:
		return nil
	case Object:
		var out map[string]string // made only while the body has no problem
		for it := v.Members(); it.Next(); {
			if s, ok := d.Str(it.Val, p.KeyAt(it.Key), false); ok && d.OK() {
				if out == nil {
					out = map[string]string{}
				}
				out[it.Key.String()] = s
			}
		}
		if out == nil && d.OK() {
			out = map[string]string{}
		}
		return out
	default:
		d.Add(p, MsgExpObject)
		return nil
	}
}

var toolCallKeys = Keys("id", "name", "callType", "arguments", "agent", "stepNumber", "parallelGroup", "parentCallId", "response")

func (d *Decoder) ToolCalls(v Value, p Path) []gtc.ToolCall {
	out := []gtc.ToolCall{}
	if v.kind == Null {
		return out
	}
	if v.kind != Array {
		d.Add(p, MsgExpArray)
		return out
	}
	for el := v.Elems(); el.Next(); {
		ep := p.Index(el.I)
		if !d.Object(el.Val, ep, toolCallKeys) {
			continue
		}
		tc := gtc.ToolCall{CallType: "tool"}
		hasName := false
		for it := el.Val.Members(); it.Next(); {
			name, _ := toolCallKeys.Name(it.Key)
			fp := ep.Key(name)
			val := it.Val
			switch name {
			case "id":
				if s, ok := d.Str(val, fp, true); ok {
					tc.ID = s
				}
			case "name":
				hasName = true
				if s, ok := d.Str(val, fp, false); ok {
					if strings.TrimSpace(s) == "" {
						d.Add(fp, gtc.MsgToolNameEmpty)
					}
					tc.Name = strings.TrimSpace(s)
				}
			case "callType":
				if s, ok := d.Str(val, fp, true); ok {
					if s != "tool" && s != "subagent" {
						d.Add(fp, "must be one of: tool, subagent")
					} else {
						tc.CallType = s
					}
				}
			case "arguments":
				switch val.kind {
				case Null:
				case Object:
					if d.OK() {
						tc.Arguments = val.Raw()
					}
				default:
					d.Add(fp, MsgExpObject)
				}
			case "agent":
				tc.Agent, _ = d.StrPtr(val, fp)
			case "parallelGroup":
				tc.ParallelGroup, _ = d.StrPtr(val, fp)
			case "parentCallId":
				tc.ParentCallID, _ = d.StrPtr(val, fp)
			case "stepNumber":
				if val.kind == Null {
					continue
				}
				if n, ok := d.Integer(val, fp); ok {
					if n < 0 {
						d.Add(fp, gtc.MsgStepNumberNegative)
					} else {
						tc.StepNumber = &n
					}
				}
			case "response":
				if val.kind != Null && d.OK() {
					tc.Response = val.Raw()
				}
			}
		}
		if !hasName {
			d.Add(ep.Key("name"), MsgRequired)
		}
		if d.OK() {
			out = append(out, tc)
		}
	}
	return out
}

var expectedToolsKeys = Keys("required", "optional", "notNeeded")
var expectationKeys = Keys("name", "arguments")

func (d *Decoder) ExpectedTools(v Value, p Path) gtc.ExpectedTools {
	et := gtc.ExpectedTools{Required: []gtc.ToolExpectation{}, Optional: []gtc.ToolExpectation{}, NotNeeded: []gtc.ToolExpectation{}}
	if v.kind == Null {
		return et
	}
	if !d.Object(v, p, expectedToolsKeys) {
		return et
	}
	for it := v.Members(); it.Next(); {
		name, known := expectedToolsKeys.Name(it.Key)
		if !known {
			continue
		}
		list := d.expectations(it.Val, p.Key(name))
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
	return et
}

// expectations reads one list of expected tools. Once the body has a problem only the names
// are kept: they are all the overlap check needs.
func (d *Decoder) expectations(v Value, p Path) []gtc.ToolExpectation {
	out := []gtc.ToolExpectation{}
	if v.kind == Null {
		return out
	}
	if v.kind != Array {
		d.Add(p, MsgExpArray)
		return out
	}
	for it := v.Elems(); it.Next(); {
		el := it.Val
		ep := p.Index(it.I)
		switch el.kind {
		case String:
			name := strings.TrimSpace(el.Text())
			if name == "" {
				d.Add(ep, gtc.MsgExpectationName)
				continue
			}
			out = append(out, gtc.ToolExpectation{Name: name})
		case Object:
			d.Object(el, ep, expectationKeys)
			var e gtc.ToolExpectation
			nv, ok := el.Get("name")
			if !ok {
				d.Add(ep.Key("name"), MsgRequired)
			} else if s, ok := d.Str(nv, ep.Key("name"), false); ok {
				if strings.TrimSpace(s) == "" {
					d.Add(ep.Key("name"), gtc.MsgExpectationName)
				}
				e.Name = strings.TrimSpace(s)
			}
			if av, ok := el.Get("arguments"); ok {
				switch av.kind {
				case Null:
				case Object, String:
					if d.OK() {
						e.Arguments = av.Raw()
					}
				default:
					d.Add(ep.Key("arguments"), "expected object or string")
				}
			}
			if d.OK() || e.Name != "" {
				out = append(out, e)
			}
		default:
			d.Add(ep, MsgExpObject)
		}
	}
	return out
}

var feedbackKeys = Keys("source", "values")

func (d *Decoder) Feedback(v Value, p Path) []gtc.FeedbackEntry {
	out := []gtc.FeedbackEntry{}
	if v.kind == Null {
		return out
	}
	if v.kind != Array {
		d.Add(p, MsgExpArray)
		return out
	}
	for it := v.Elems(); it.Next(); {
		el := it.Val
		ep := p.Index(it.I)
		if !d.Object(el, ep, feedbackKeys) {
			continue
		}
		f := gtc.FeedbackEntry{Values: emptyObject}
		if sv, ok := el.Get("source"); ok {
			if s, ok := d.Str(sv, ep.Key("source"), true); ok {
				f.Source = s
			}
		}
		if vv, ok := el.Get("values"); ok {
			if r, ok := d.RawObject(vv, ep.Key("values")); ok {
				f.Values = r
			}
		}
		if d.OK() {
			out = append(out, f)
		}
	}
	return out
}

var pluginKeys = Keys("kind", "version", "data")

func (d *Decoder) Plugins(v Value, p Path) map[string]gtc.PluginPayload {
	var out map[string]gtc.PluginPayload // made only while the body has no problem
	if d.OK() {
		out = map[string]gtc.PluginPayload{}
	}
	if v.kind == Null {
		return out
	}
	if v.kind != Object {
		d.Add(p, MsgExpObject)
		return out
	}
	for it := v.Members(); it.Next(); {
		sp := p.KeyAt(it.Key)
		slot := it.Val
		if !d.Object(slot, sp, pluginKeys) {
			continue
		}
		pp := gtc.PluginPayload{Version: "1.0", Data: emptyObject}
		kv, ok := slot.Get("kind")
		if !ok {
			d.Add(sp.Key("kind"), MsgRequired)
		} else if s, ok := d.Str(kv, sp.Key("kind"), false); ok {
			if strings.TrimSpace(s) == "" {
				d.Add(sp.Key("kind"), gtc.MsgPluginKindEmpty)
			}
			pp.Kind = s
		}
		if vv, ok := slot.Get("version"); ok {
			if s, ok := d.Str(vv, sp.Key("version"), true); ok {
				pp.Version = s
			}
		}
		if dv, ok := slot.Get("data"); ok {
			if r, ok := d.RawObject(dv, sp.Key("data")); ok {
				pp.Data = r
				if dv.kind == Object && it.Key.Is(gtc.RAGCompatSlot) {
					d.references(dv, sp.Key("data"))
				}
			}
		}
		if d.OK() && out != nil {
			out[it.Key.String()] = pp
		}
	}
	return out
}

// references checks data.references of the rag-compat slot: an array of objects, each with a
// non-blank string url. Every other key is kept verbatim.
func (d *Decoder) references(data Value, p Path) {
	refs, ok := data.Get("references")
	if !ok {
		return
	}
	rp := p.Key("references")
	if refs.kind != Array {
		d.Add(rp, MsgExpArray)
		return
	}
	for it := refs.Elems(); it.Next(); {
		el := it.Val
		ep := rp.Index(it.I)
		if el.kind != Object {
			d.Add(ep, MsgExpObject)
			continue
		}
		u, ok := el.Get("url")
		if !ok || u.kind != String || strings.TrimSpace(u.Text()) == "" {
			d.Add(ep.Key("url"), gtc.MsgReferenceURLEmpty)
		}
	}
}

// --- bulk import ---------------------------------------------------------------------------

var importOutputOnly = map[string]bool{"tags": true, "computedTags": true, "_etag": true, "references": true, "totalReferences": true}

var importKeys = Keys("tags", "computedTags", "_etag", "references", "totalReferences",
	"id", "datasetName", "bucket", "status", "docType", "schemaVersion", "manualTags", "comment", "scenarioId",
	"assignedTo", "updatedBy", "createdBy", "assignedAt", "reviewedAt", "createdAt", "updatedAt", "history",
	"contextEntries", "traceIds", "toolCalls", "expectedTools", "feedback", "metadata", "plugins", "tracePayload")

// DecodeImport checks a bulk-import body against the item schema (whole-request checks) and
// returns one entry per element. Any problem fails the whole request with a 422 listing every
// problem. Tag format and tag rules are checked by the caller.
func DecodeImport(body []byte) ([]*gtc.ImportEntry, error) {
	v, err := ParseBody(body)
	if err != nil {
		return nil, err
	}
	d := &Decoder{}
	var root Path
	if v.kind != Array {
		d.Add(root, MsgExpArray)
		return nil, d.Err()
	}
	out := []*gtc.ImportEntry{}
	for it := v.Elems(); it.Next(); {
		e := d.importItem(it.Val, root.Index(it.I))
		if d.OK() {
			out = append(out, e)
		}
	}
	if err := d.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// DecodeItemObject checks one item object exactly as DecodeImport checks each element of an
// import body, with field paths relative to the item ("toolCalls[0].name"). gtc migrate
// validates stored documents with it, so a document is held to the same rules as the API
// holds its input. Any problem is a 422 *gtc.Error listing every problem in Fields.
func DecodeItemObject(doc []byte) (*gtc.ImportEntry, error) {
	v, err := ParseBody(doc)
	if err != nil {
		return nil, err
	}
	d := &Decoder{}
	e := d.importItem(v, Path{})
	if err := d.Err(); err != nil {
		return nil, err
	}
	return e, nil
}

// importItem decodes one item object. Once the body has a problem, the item is decoded into
// scratch space, only to find the other problems, and nil is returned.
func (d *Decoder) importItem(v Value, p Path) *gtc.ImportEntry {
	if v.kind != Object {
		d.Add(p, MsgExpObject)
		return nil
	}
	keep := d.OK()
	e := &gtc.ImportEntry{}
	if keep {
		e.Item = gtc.NewItem("", "")
	} else {
		e = &d.scratch
		*e = gtc.ImportEntry{Item: &d.scratchItem}
		d.scratchItem = gtc.Item{}
	}
	it := e.Item
	var hasID, hasDataset bool
	for m := v.Members(); m.Next(); {
		name, known := importKeys.Name(m.Key)
		if !known {
			d.Unknown(p, m.Key)
			continue
		}
		fp := p.Key(name)
		val := m.Val
		if importOutputOnly[name] {
			if keep {
				e.IgnoredFields = append(e.IgnoredFields, name)
			}
			continue
		}
		switch name {
		case "id":
			hasID = true
			if s, ok := d.Str(val, fp, false); ok {
				s = strings.TrimSpace(s)
				if s != "" {
					if msg := gtc.CheckItemID(s); msg != "" {
						d.Add(fp, msg)
					}
				}
				it.ID = s
			}
		case "datasetName":
			hasDataset = true
			if s, ok := d.Str(val, fp, false); ok {
				if msg := gtc.CheckDatasetName(s); msg != "" {
					d.Add(fp, msg)
				}
				it.DatasetName = s
			}
		case "bucket":
			if s, ok := d.Str(val, fp, true); ok {
				if b, ok := gtc.ParseUUID(s); ok {
					it.Bucket = b
				} else {
					d.Add(fp, MsgUUID)
				}
			}
		case "status":
			if s, ok := d.Str(val, fp, true); ok {
				if st := gtc.Status(s); st.Valid() {
					it.Status = st
				} else {
					d.Add(fp, "must be one of: "+gtc.StatusList)
				}
			}
		case "docType":
			if s, ok := d.Str(val, fp, true); ok && s != gtc.DocTypeItem {
				d.Add(fp, "must be one of: "+gtc.DocTypeItem)
			}
		case "schemaVersion":
			if s, ok := d.Str(val, fp, true); ok {
				switch n := charCount(s); {
				case n < 1:
					d.Add(fp, "must be at least 1 character")
				case n > 32:
					d.Add(fp, atMost(32))
				default:
					it.SchemaVersion = s
				}
			}
		case "manualTags":
			switch val.kind {
			case Null:
			case String:
				if !d.OK() {
					break
				}
				for _, part := range strings.Split(val.Text(), ",") {
					if t := strings.TrimSpace(part); t != "" {
						e.RawManualTags = append(e.RawManualTags, t)
					}
				}
			case Array:
				for el := val.Elems(); el.Next(); {
					switch el.Val.kind {
					case Null:
					case String:
						if d.OK() {
							e.RawManualTags = append(e.RawManualTags, el.Val.Text())
						}
					default:
						d.Add(fp.Index(el.I), MsgExpString)
					}
				}
			default:
				d.Add(fp, MsgExpArray)
			}
		case "comment":
			if s, ok := d.Str(val, fp, true); ok {
				it.Comment = s
			}
		case "scenarioId":
			if s, ok := d.Str(val, fp, true); ok {
				it.ScenarioID = s
			}
		case "assignedTo":
			if s, ok := d.StrPtr(val, fp); ok && s != nil && *s != "" {
				it.AssignedTo = s
			}
		case "updatedBy":
			it.UpdatedBy, _ = d.StrPtr(val, fp)
		case "createdBy":
			it.CreatedBy, _ = d.StrPtr(val, fp)
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
			case Null:
			case Array:
				for el := val.Elems(); el.Next(); {
					if h, ok := d.historyEntry(el.Val, fp.Index(el.I)); ok && d.OK() {
						it.History = append(it.History, h)
					}
				}
			default:
				d.Add(fp, MsgExpArray)
			}
		case "contextEntries":
			it.ContextEntries = d.ContextEntries(val, fp)
		case "traceIds":
			it.TraceIDs = d.TraceIDs(val, fp)
		case "toolCalls":
			it.ToolCalls = d.ToolCalls(val, fp)
		case "expectedTools":
			it.ExpectedTools = d.ExpectedTools(val, fp)
		case "feedback":
			it.Feedback = d.Feedback(val, fp)
		case "metadata":
			if r, ok := d.RawObject(val, fp); ok {
				it.Metadata = r
			}
		case "plugins":
			it.Plugins = d.Plugins(val, fp)
		case "tracePayload":
			if r, ok := d.RawObject(val, fp); ok {
				it.TracePayload = r
			}
		}
	}
	if !hasID {
		d.Add(p.Key("id"), MsgRequired)
	}
	if !hasDataset {
		d.Add(p.Key("datasetName"), MsgRequired)
	}
	if !d.OK() {
		return nil
	}
	sort.Strings(e.IgnoredFields)
	return e
}

func charCount(s string) int { return utf8.RuneCountInString(s) }

func atMost(n int) string { return fmt.Sprintf("must be at most %d characters", n) }

var emptyObject = json.RawMessage(`{}`)
