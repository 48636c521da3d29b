package gtc

import (
	"bytes"
	"encoding/json"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// DocTypeItem is the docType of every ground-truth item.
const DocTypeItem = "ground-truth-item"

// SchemaVersionCurrent is the schemaVersion new items get.
const SchemaVersionCurrent = "v2"

// RAGCompatSlot is the plugins key that holds RAG references.
const RAGCompatSlot = "rag-compat"

// Item is one ground-truth item: a curated conversation plus what a curator needs to judge
// it. Free-form values are kept as raw JSON so numbers round-trip exactly; a RawMessage is
// never modified in place, so copies may share it.
type Item struct {
	ID             string                   `json:"id" gtc:"required,trim"`
	DatasetName    string                   `json:"datasetName" gtc:"required"`
	Bucket         string                   `json:"bucket" gtc:"nullable"`
	Status         Status                   `json:"status" gtc:"nullable,default=draft"`
	DocType        string                   `json:"docType" gtc:"nullable,default=ground-truth-item"`
	SchemaVersion  string                   `json:"schemaVersion" gtc:"nullable,default=v2"`
	ManualTags     []string                 `json:"manualTags"`
	ComputedTags   []string                 `json:"computedTags" gtc:"readonly,derived=tags"`
	Comment        string                   `json:"comment" gtc:"nullable"`
	AssignedTo     *string                  `json:"assignedTo" gtc:"sparse"`
	AssignedAt     *time.Time               `json:"assignedAt" gtc:"sparse"`
	UpdatedAt      time.Time                `json:"updatedAt"`
	UpdatedBy      *string                  `json:"updatedBy" gtc:"sparse"`
	ReviewedAt     *time.Time               `json:"reviewedAt" gtc:"sparse"`
	ETag           string                   `json:"_etag" gtc:"api,readonly"`
	ScenarioID     string                   `json:"scenarioId" gtc:"nullable"`
	History        []HistoryEntry           `json:"history"`
	ContextEntries []ContextEntry           `json:"contextEntries"`
	TraceIDs       map[string]string        `json:"traceIds" gtc:"sparse"` // nil is JSON null
	ToolCalls      []ToolCall               `json:"toolCalls"`
	ExpectedTools  ExpectedTools            `json:"expectedTools"`
	Feedback       []FeedbackEntry          `json:"feedback"`
	Metadata       json.RawMessage          `json:"metadata" gtc:"object"` // a JSON object
	Plugins        map[string]PluginPayload `json:"plugins"`
	CreatedBy      *string                  `json:"createdBy" gtc:"sparse"`
	CreatedAt      *time.Time               `json:"createdAt" gtc:"sparse"`
	TracePayload   json.RawMessage          `json:"tracePayload" gtc:"object"` // a JSON object
}

// HistoryEntry is one conversation turn.
type HistoryEntry struct {
	Role             string   `json:"role" gtc:"required,trim,nonblank"`
	Msg              string   `json:"msg" gtc:"required,trim,nonblank"`
	TurnID           *string  `json:"turnId" gtc:"omitnil"`
	StepID           *string  `json:"stepId" gtc:"omitnil"`
	ExpectedBehavior []string `json:"expectedBehavior" gtc:"omitnil"` // nil is absent; an empty non-nil slice is kept as []
}

// ContextEntry is one key/value of context given to the agent.
type ContextEntry struct {
	Key   string          `json:"key" gtc:"required,trim,nonblank"`
	Value json.RawMessage `json:"value" gtc:"required"` // any JSON value, "null" included
}

// ToolCall is one tool call the agent made (ToolCallRecord on the wire).
type ToolCall struct {
	ID            string          `json:"id" gtc:"nullable"`
	Name          string          `json:"name" gtc:"required,trim,nonblank"`
	CallType      string          `json:"callType" gtc:"nullable,default=tool"` // "tool" or "subagent"
	Arguments     json.RawMessage `json:"arguments" gtc:"object,nullable"`      // object, or nil for null
	Agent         *string         `json:"agent"`
	StepNumber    *int64          `json:"stepNumber"`
	ParallelGroup *string         `json:"parallelGroup"`
	ParentCallID  *string         `json:"parentCallId"`
	Response      json.RawMessage `json:"response"` // any JSON, nil for null
}

// ToolExpectation names a tool the agent should (or need not) call.
type ToolExpectation struct {
	Name      string          `json:"name" gtc:"required,trim,nonblank"`
	Arguments json.RawMessage `json:"arguments" gtc:"object,orstring,nullable"` // object, string, or nil for null
}

// ExpectedTools groups tool expectations; a name may appear in one list only.
type ExpectedTools struct {
	Required  []ToolExpectation `json:"required"`
	Optional  []ToolExpectation `json:"optional"`
	NotNeeded []ToolExpectation `json:"notNeeded"`
}

// FeedbackEntry is feedback from one source.
type FeedbackEntry struct {
	Source string          `json:"source" gtc:"nullable"`
	Values json.RawMessage `json:"values" gtc:"object"` // a JSON object
}

// PluginPayload is the data of one plugin slot.
type PluginPayload struct {
	Kind    string          `json:"kind" gtc:"required,nonblank"`
	Version string          `json:"version" gtc:"nullable,default=1.0"`
	Data    json.RawMessage `json:"data" gtc:"object"` // a JSON object
}

var emptyObject = json.RawMessage(`{}`)

// NewItem returns an item with every field default set.
func NewItem(datasetName, id string) *Item {
	return &Item{
		ID:             id,
		DatasetName:    datasetName,
		Status:         StatusDraft,
		DocType:        DocTypeItem,
		SchemaVersion:  SchemaVersionCurrent,
		ManualTags:     []string{},
		ComputedTags:   []string{},
		History:        []HistoryEntry{},
		ContextEntries: []ContextEntry{},
		ToolCalls:      []ToolCall{},
		ExpectedTools:  ExpectedTools{Required: []ToolExpectation{}, Optional: []ToolExpectation{}, NotNeeded: []ToolExpectation{}},
		Feedback:       []FeedbackEntry{},
		Metadata:       emptyObject,
		Plugins:        map[string]PluginPayload{},
		TracePayload:   emptyObject,
	}
}

// Key returns the item's storage key.
func (it *Item) Key() Key { return Key{DatasetName: it.DatasetName, Bucket: it.Bucket, ID: it.ID} }

// Tags is the output-only view: the sorted, de-duplicated union of manual and computed tags.
func (it *Item) Tags() []string {
	out := make([]string, 0, len(it.ManualTags)+len(it.ComputedTags))
	out = append(out, it.ManualTags...)
	out = append(out, it.ComputedTags...)
	sort.Strings(out)
	return slices.Compact(out)
}

// Clone returns a deep copy of the item (raw JSON values are shared; they are immutable).
func (it *Item) Clone() *Item {
	c := *it
	c.ManualTags = slices.Clone(it.ManualTags)
	c.ComputedTags = slices.Clone(it.ComputedTags)
	c.AssignedTo = clonePtr(it.AssignedTo)
	c.AssignedAt = clonePtr(it.AssignedAt)
	c.UpdatedBy = clonePtr(it.UpdatedBy)
	c.ReviewedAt = clonePtr(it.ReviewedAt)
	c.CreatedBy = clonePtr(it.CreatedBy)
	c.CreatedAt = clonePtr(it.CreatedAt)
	c.History = make([]HistoryEntry, len(it.History))
	for i, h := range it.History {
		h.TurnID = clonePtr(h.TurnID)
		h.StepID = clonePtr(h.StepID)
		if h.ExpectedBehavior != nil {
			h.ExpectedBehavior = slices.Clone(h.ExpectedBehavior)
		}
		c.History[i] = h
	}
	c.ContextEntries = slices.Clone(it.ContextEntries)
	if it.TraceIDs != nil {
		c.TraceIDs = make(map[string]string, len(it.TraceIDs))
		for k, v := range it.TraceIDs {
			c.TraceIDs[k] = v
		}
	}
	c.ToolCalls = make([]ToolCall, len(it.ToolCalls))
	for i, tc := range it.ToolCalls {
		tc.Agent = clonePtr(tc.Agent)
		tc.StepNumber = clonePtr(tc.StepNumber)
		tc.ParallelGroup = clonePtr(tc.ParallelGroup)
		tc.ParentCallID = clonePtr(tc.ParentCallID)
		c.ToolCalls[i] = tc
	}
	c.ExpectedTools = ExpectedTools{
		Required:  slices.Clone(it.ExpectedTools.Required),
		Optional:  slices.Clone(it.ExpectedTools.Optional),
		NotNeeded: slices.Clone(it.ExpectedTools.NotNeeded),
	}
	c.Feedback = slices.Clone(it.Feedback)
	c.Plugins = make(map[string]PluginPayload, len(it.Plugins))
	for k, v := range it.Plugins {
		c.Plugins[k] = v
	}
	c.fillDefaults()
	return &c
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// fillDefaults replaces nil lists and objects so the item always encodes with [] and {}.
func (it *Item) fillDefaults() {
	if it.ManualTags == nil {
		it.ManualTags = []string{}
	}
	if it.ComputedTags == nil {
		it.ComputedTags = []string{}
	}
	if it.History == nil {
		it.History = []HistoryEntry{}
	}
	if it.ContextEntries == nil {
		it.ContextEntries = []ContextEntry{}
	}
	if it.ToolCalls == nil {
		it.ToolCalls = []ToolCall{}
	}
	if it.ExpectedTools.Required == nil {
		it.ExpectedTools.Required = []ToolExpectation{}
	}
	if it.ExpectedTools.Optional == nil {
		it.ExpectedTools.Optional = []ToolExpectation{}
	}
	if it.ExpectedTools.NotNeeded == nil {
		it.ExpectedTools.NotNeeded = []ToolExpectation{}
	}
	if it.Feedback == nil {
		it.Feedback = []FeedbackEntry{}
	}
	if len(it.Metadata) == 0 {
		it.Metadata = emptyObject
	}
	if it.Plugins == nil {
		it.Plugins = map[string]PluginPayload{}
	}
	if len(it.TracePayload) == 0 {
		it.TracePayload = emptyObject
	}
	if it.DocType == "" {
		it.DocType = DocTypeItem
	}
	if it.SchemaVersion == "" {
		it.SchemaVersion = SchemaVersionCurrent
	}
	if it.Status == "" {
		it.Status = StatusDraft
	}
}

// IsUserRole reports whether a history role is the user's.
func IsUserRole(role string) bool { return strings.EqualFold(strings.TrimSpace(role), "user") }

// QuestionText is the trimmed msg of the last user turn with text, or "".
func QuestionText(it *Item) string {
	for i := len(it.History) - 1; i >= 0; i-- {
		h := it.History[i]
		if IsUserRole(h.Role) {
			if m := strings.TrimSpace(h.Msg); m != "" {
				return m
			}
		}
	}
	return ""
}

// AnswerText is the trimmed msg of the last agent (non-user) turn with text, or "".
func AnswerText(it *Item) string {
	for i := len(it.History) - 1; i >= 0; i-- {
		h := it.History[i]
		if !IsUserRole(h.Role) {
			if m := strings.TrimSpace(h.Msg); m != "" {
				return m
			}
		}
	}
	return ""
}

// Reference is one RAG reference as the server reads it.
type Reference struct {
	URL          string // trimmed
	Title        string
	Content      string
	KeyExcerpt   string
	Type         string
	Bonus        bool
	MessageIndex *int64
}

// References reads plugins["rag-compat"].data.references, the only place references live.
// Entries that are not objects with a non-blank string url are skipped; a data object that
// is not valid JSON, or a references value that is not an array, has no references. Every
// write and every plugin run reads them, so this walks the bytes once instead of decoding maps.
func References(it *Item) []Reference {
	p, ok := it.Plugins[RAGCompatSlot]
	if !ok {
		return nil
	}
	var refs []Reference
	walkReferences(p.Data, func(_ int, _ json.RawMessage, ref Reference) { refs = append(refs, ref) })
	return refs
}

// walkReferences calls fn for every reference of a rag-compat payload that References keeps,
// in order, with its index in data.references (skipped entries counted) and its stored
// bytes (a slice of data). A repeated "references" key counts with its last value; data that
// is not valid JSON, or a references value that is not an array, has none: fn is then not
// called at all.
func walkReferences(data json.RawMessage, fn func(index int, raw json.RawMessage, ref Reference)) {
	type found struct {
		index int
		raw   json.RawMessage
		ref   Reference
	}
	if len(data) == 0 {
		return
	}
	r := &storedReader{b: data}
	if r.peek() != '{' {
		return
	}
	var refs []found
	r.object(func(k string) {
		if k != "references" {
			r.skip(0)
			return
		}
		refs = refs[:0] // a repeated key counts with its last value
		if r.peek() != '[' {
			r.skip(0)
			refs = nil
			return
		}
		i := -1
		r.array(func() {
			i++
			if r.peek() != '{' {
				r.skip(0)
				return
			}
			start := r.i
			var ref Reference
			r.object(func(k string) {
				switch k {
				case "url":
					ref.URL = strings.TrimSpace(r.optString())
				case "title":
					ref.Title = r.optString()
				case "content":
					ref.Content = r.optString()
				case "keyExcerpt":
					ref.KeyExcerpt = r.optString()
				case "type":
					ref.Type = r.optString()
				case "bonus":
					ref.Bonus = r.peek() == 't'
					r.skip(0)
				case "messageIndex":
					ref.MessageIndex = nil
					if c := r.peek(); c == '-' || c >= '0' && c <= '9' {
						if n, err := strconv.ParseInt(r.number(), 10, 64); err == nil {
							ref.MessageIndex = &n
						}
					} else {
						r.skip(0)
					}
				default:
					r.skip(0)
				}
			})
			if r.err == nil && ref.URL != "" {
				refs = append(refs, found{index: i, raw: data[start:r.i], ref: ref})
			}
		})
	})
	if r.err != nil {
		return
	}
	if r.ws(); r.i != len(r.b) {
		return
	}
	for _, f := range refs {
		fn(f.index, f.raw, f.ref)
	}
}

// ReferenceCount is the number of references of the item.
func ReferenceCount(it *Item) int { return len(References(it)) }

// --- JSON encoding -------------------------------------------------------------------------

// encodeMode selects between the API view and the canonical stored document.
type encodeMode int

const (
	wireMode   encodeMode = iota // API form: every key, nulls written, tags and _etag, milliseconds
	storedMode                   // stored form: no tags/_etag, null top-level keys omitted, microseconds
)

// MarshalJSON encodes the item as the API returns it.
func (it *Item) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	it.appendJSON(&buf, wireMode)
	return buf.Bytes(), nil
}

// AppendAPIJSON appends the API form of the item to buf.
func (it *Item) AppendAPIJSON(buf *bytes.Buffer) { it.appendJSON(buf, wireMode) }

// CanonicalJSON returns the stored form of the item.
func (it *Item) CanonicalJSON() []byte {
	var buf bytes.Buffer
	it.appendJSON(&buf, storedMode)
	return buf.Bytes()
}

type objWriter struct {
	buf   *bytes.Buffer
	first bool
}

func newObj(buf *bytes.Buffer) *objWriter {
	buf.WriteByte('{')
	return &objWriter{buf: buf, first: true}
}

func (o *objWriter) key(k string) {
	if !o.first {
		o.buf.WriteByte(',')
	}
	o.first = false
	writeJSONString(o.buf, k)
	o.buf.WriteByte(':')
}

func (o *objWriter) str(k, v string) { o.key(k); writeJSONString(o.buf, v) }

func (o *objWriter) strPtr(k string, v *string, omitNull bool) {
	if v == nil {
		if !omitNull {
			o.key(k)
			o.buf.WriteString("null")
		}
		return
	}
	o.str(k, *v)
}

func (o *objWriter) raw(k string, v json.RawMessage, omitNull bool) {
	if len(v) == 0 || string(v) == "null" {
		if !omitNull {
			o.key(k)
			o.buf.WriteString("null")
		}
		return
	}
	o.key(k)
	o.buf.Write(v)
}

func (o *objWriter) end() { o.buf.WriteByte('}') }

func writeTime(buf *bytes.Buffer, t time.Time, mode encodeMode) {
	buf.WriteByte('"')
	if mode == storedMode {
		buf.WriteString(FormatStoredTime(t))
	} else {
		buf.WriteString(FormatAPITime(t))
	}
	buf.WriteByte('"')
}

func (o *objWriter) timePtr(k string, t *time.Time, mode encodeMode) {
	if t == nil {
		if mode == wireMode {
			o.key(k)
			o.buf.WriteString("null")
		}
		return
	}
	o.key(k)
	writeTime(o.buf, *t, mode)
}

func writeStrings(buf *bytes.Buffer, ss []string) {
	buf.WriteByte('[')
	for i, s := range ss {
		if i > 0 {
			buf.WriteByte(',')
		}
		writeJSONString(buf, s)
	}
	buf.WriteByte(']')
}

func (it *Item) appendJSON(buf *bytes.Buffer, mode encodeMode) {
	omit := mode == storedMode
	o := newObj(buf)
	o.str("id", it.ID)
	o.str("datasetName", it.DatasetName)
	o.str("bucket", it.Bucket)
	o.str("status", string(orDefault(it.Status, StatusDraft)))
	o.str("docType", orDefault(it.DocType, DocTypeItem))
	o.str("schemaVersion", orDefault(it.SchemaVersion, SchemaVersionCurrent))
	o.key("manualTags")
	writeStrings(buf, it.ManualTags)
	o.key("computedTags")
	writeStrings(buf, it.ComputedTags)
	if mode == wireMode {
		o.key("tags")
		writeStrings(buf, it.Tags())
	}
	o.str("comment", it.Comment)
	o.strPtr("assignedTo", it.AssignedTo, omit)
	o.timePtr("assignedAt", it.AssignedAt, mode)
	o.key("updatedAt")
	writeTime(buf, it.UpdatedAt, mode)
	o.strPtr("updatedBy", it.UpdatedBy, omit)
	o.timePtr("reviewedAt", it.ReviewedAt, mode)
	if mode == wireMode {
		o.str("_etag", it.ETag)
	}
	o.str("scenarioId", it.ScenarioID)
	o.key("history")
	buf.WriteByte('[')
	for i := range it.History {
		if i > 0 {
			buf.WriteByte(',')
		}
		it.History[i].appendJSON(buf)
	}
	buf.WriteByte(']')
	o.key("contextEntries")
	buf.WriteByte('[')
	for i, ce := range it.ContextEntries {
		if i > 0 {
			buf.WriteByte(',')
		}
		c := newObj(buf)
		c.str("key", ce.Key)
		c.raw("value", ce.Value, false)
		c.end()
	}
	buf.WriteByte(']')
	if it.TraceIDs == nil {
		if !omit {
			o.key("traceIds")
			buf.WriteString("null")
		}
	} else {
		o.key("traceIds")
		keys := make([]string, 0, len(it.TraceIDs))
		for k := range it.TraceIDs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		t := newObj(buf)
		for _, k := range keys {
			t.str(k, it.TraceIDs[k])
		}
		t.end()
	}
	o.key("toolCalls")
	buf.WriteByte('[')
	for i := range it.ToolCalls {
		if i > 0 {
			buf.WriteByte(',')
		}
		it.ToolCalls[i].appendJSON(buf)
	}
	buf.WriteByte(']')
	o.key("expectedTools")
	et := newObj(buf)
	et.key("required")
	writeExpectations(buf, it.ExpectedTools.Required)
	et.key("optional")
	writeExpectations(buf, it.ExpectedTools.Optional)
	et.key("notNeeded")
	writeExpectations(buf, it.ExpectedTools.NotNeeded)
	et.end()
	o.key("feedback")
	buf.WriteByte('[')
	for i, f := range it.Feedback {
		if i > 0 {
			buf.WriteByte(',')
		}
		fo := newObj(buf)
		fo.str("source", f.Source)
		fo.key("values")
		writeRawObject(buf, f.Values)
		fo.end()
	}
	buf.WriteByte(']')
	o.key("metadata")
	writeRawObject(buf, it.Metadata)
	o.key("plugins")
	slots := make([]string, 0, len(it.Plugins))
	for k := range it.Plugins {
		slots = append(slots, k)
	}
	sort.Strings(slots)
	po := newObj(buf)
	for _, k := range slots {
		p := it.Plugins[k]
		po.key(k)
		pp := newObj(buf)
		pp.str("kind", p.Kind)
		pp.str("version", orDefault(p.Version, "1.0"))
		pp.key("data")
		writeRawObject(buf, p.Data)
		pp.end()
	}
	po.end()
	o.strPtr("createdBy", it.CreatedBy, omit)
	o.timePtr("createdAt", it.CreatedAt, mode)
	o.key("tracePayload")
	writeRawObject(buf, it.TracePayload)
	o.end()
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

func writeRawObject(buf *bytes.Buffer, r json.RawMessage) {
	if len(r) == 0 || string(r) == "null" {
		buf.WriteString("{}")
		return
	}
	buf.Write(r)
}

func writeExpectations(buf *bytes.Buffer, list []ToolExpectation) {
	buf.WriteByte('[')
	for i, e := range list {
		if i > 0 {
			buf.WriteByte(',')
		}
		o := newObj(buf)
		o.str("name", e.Name)
		o.raw("arguments", e.Arguments, false)
		o.end()
	}
	buf.WriteByte(']')
}

func (h *HistoryEntry) appendJSON(buf *bytes.Buffer) {
	o := newObj(buf)
	o.str("role", h.Role)
	o.str("msg", h.Msg)
	o.strPtr("turnId", h.TurnID, true)
	o.strPtr("stepId", h.StepID, true)
	if h.ExpectedBehavior != nil {
		o.key("expectedBehavior")
		writeStrings(buf, h.ExpectedBehavior)
	}
	o.end()
}

// MarshalJSON encodes the history entry; null optional keys are left out.
func (h HistoryEntry) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	h.appendJSON(&buf)
	return buf.Bytes(), nil
}

func (tc *ToolCall) appendJSON(buf *bytes.Buffer) {
	o := newObj(buf)
	o.str("id", tc.ID)
	o.str("name", tc.Name)
	o.str("callType", orDefault(tc.CallType, "tool"))
	o.raw("arguments", tc.Arguments, false)
	o.strPtr("agent", tc.Agent, false)
	o.key("stepNumber")
	if tc.StepNumber == nil {
		buf.WriteString("null")
	} else {
		buf.WriteString(strconv.FormatInt(*tc.StepNumber, 10))
	}
	o.strPtr("parallelGroup", tc.ParallelGroup, false)
	o.strPtr("parentCallId", tc.ParentCallID, false)
	o.raw("response", tc.Response, false)
	o.end()
}

// --- stored form decoding ------------------------------------------------------------------

// DecodeStoredItem reads a canonical document written by CanonicalJSON. Missing nullable keys
// read as null and unknown keys are ignored. The ETag is not part of the document; the store
// sets it.
func DecodeStoredItem(doc []byte) (*Item, error) { return decodeStored(doc) }
