package gtc

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
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
	// Revision is the number of the item's latest revision (see Revision); 0 for an item
	// written before revisions were recorded and not written since.
	Revision int64 `json:"revision" gtc:"readonly,sparse"`
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
	c.FillDefaults()
	return &c
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// FillDefaults replaces nil lists and objects so the item always encodes with [] and {}.
func (it *Item) FillDefaults() {
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
// is not valid JSON, or a references value that is not an array, has no references.
func References(it *Item) []Reference {
	p, ok := it.Plugins[RAGCompatSlot]
	if !ok {
		return nil
	}
	var refs []Reference
	walkReferences(p.Data, func(_ int, _ json.RawMessage, ref Reference) { refs = append(refs, ref) })
	return refs
}

// referenceReader is a jsontext.Decoder over a rag-compat payload, kept in a pool: the tag
// engine reads the references of every item it tags.
type referenceReader struct {
	dec jsontext.Decoder
	src bytes.Reader
}

var referenceReaders = sync.Pool{New: func() any { return new(referenceReader) }}

// referenceOptions read rag-compat payloads as they were stored: a repeated key counts with
// its last value, and invalid UTF-8 is kept.
var referenceOptions = jsonv2.JoinOptions(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))

// readName reads an object member's name and returns it unquoted; a name without escapes is
// returned as the bytes read, without a copy (valid until the next read).
func readName(dec *jsontext.Decoder) ([]byte, error) {
	v, err := dec.ReadValue()
	if err != nil {
		return nil, err
	}
	if bytes.IndexByte(v, '\\') < 0 {
		return v[1 : len(v)-1], nil
	}
	return jsontext.AppendUnquote(nil, v)
}

func (r *referenceReader) reset(b []byte) *jsontext.Decoder {
	r.src.Reset(b)
	r.dec.Reset(&r.src, referenceOptions)
	return &r.dec
}

// walkReferences calls fn for every reference of a rag-compat payload that References keeps,
// in order, with its index in data.references (skipped entries counted) and its stored
// bytes. A repeated key counts with its last value; data that is not a valid JSON object, or
// a references value that is not an array, has none: fn is then not called. The payload is
// read once, token by token, and fn is called only once all of it has been read.
func walkReferences(data json.RawMessage, fn func(index int, raw json.RawMessage, ref Reference)) {
	walkReferencesOf(data, false, func(index int, raw json.RawMessage, ref Reference, _ bool) { fn(index, raw, ref) })
}

// walkReferencesOf is walkReferences that also tells fn whether the stored url had space
// around it; with urlOnly, only each reference's URL is read (the other members are skipped,
// still checked), for callers that need no more.
func walkReferencesOf(data json.RawMessage, urlOnly bool, fn func(index int, raw json.RawMessage, ref Reference, padded bool)) {
	if len(data) == 0 {
		return
	}
	type found struct {
		index  int
		raw    json.RawMessage
		ref    Reference
		padded bool
	}
	r := referenceReaders.Get().(*referenceReader)
	defer func() {
		r.reset(nil)
		referenceReaders.Put(r)
	}()
	dec := r.reset(data)
	if dec.PeekKind() != '{' {
		return
	}
	var refs []found
	if _, err := dec.ReadToken(); err != nil {
		return
	}
	for dec.PeekKind() != '}' {
		name, err := readName(dec)
		if err != nil {
			return
		}
		if string(name) != "references" {
			if dec.SkipValue() != nil {
				return
			}
			continue
		}
		refs = refs[:0] // a repeated key counts with its last value
		if dec.PeekKind() != '[' {
			if dec.SkipValue() != nil {
				return
			}
			refs = nil
			continue
		}
		if _, err := dec.ReadToken(); err != nil {
			return
		}
		for i := 0; dec.PeekKind() != ']'; i++ {
			if dec.PeekKind() != '{' {
				if dec.SkipValue() != nil {
					return
				}
				continue
			}
			if _, err := dec.ReadToken(); err != nil {
				return
			}
			start := int(dec.InputOffset()) - 1
			ref, padded, err := readReference(dec, urlOnly)
			if err != nil {
				return
			}
			if ref.URL != "" {
				refs = append(refs, found{index: i, raw: data[start:dec.InputOffset()], ref: ref, padded: padded})
			}
		}
		if _, err := dec.ReadToken(); err != nil {
			return
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return
	}
	for _, f := range refs {
		fn(f.index, f.raw, f.ref, f.padded)
	}
}

// readReference reads the members of one reference object, after its '{', through its '}'.
// A member of another type than the one read reads as absent. With urlOnly, the members other
// than url are skipped. padded says whether the url had space around it.
func readReference(dec *jsontext.Decoder, urlOnly bool) (ref Reference, padded bool, err error) {
	text := func() string {
		if dec.PeekKind() != '"' {
			err = errors.Join(err, dec.SkipValue())
			return ""
		}
		v, e := dec.ReadValue()
		if e != nil {
			err = errors.Join(err, e)
			return ""
		}
		if bytes.IndexByte(v, '\\') < 0 && utf8.Valid(v) {
			return string(v[1 : len(v)-1])
		}
		b, _ := jsontext.AppendUnquote(nil, v) // invalid UTF-8 becomes U+FFFD
		return string(b)
	}
	for err == nil && dec.PeekKind() != '}' {
		name, e := readName(dec)
		if e != nil {
			return ref, false, e
		}
		if urlOnly && string(name) != "url" {
			err = dec.SkipValue()
			continue
		}
		switch string(name) {
		case "url":
			u := text()
			ref.URL = strings.TrimSpace(u)
			padded = len(ref.URL) != len(u)
		case "title":
			ref.Title = text()
		case "content":
			ref.Content = text()
		case "keyExcerpt":
			ref.KeyExcerpt = text()
		case "type":
			ref.Type = text()
		case "bonus":
			ref.Bonus = dec.PeekKind() == 't'
			err = dec.SkipValue()
		case "messageIndex":
			ref.MessageIndex = nil
			if dec.PeekKind() != '0' {
				err = dec.SkipValue()
				break
			}
			var v jsontext.Value
			if v, err = dec.ReadValue(); err == nil {
				if n, e := strconv.ParseInt(string(v), 10, 64); e == nil {
					ref.MessageIndex = &n
				}
			}
		default:
			err = dec.SkipValue()
		}
	}
	if err != nil {
		return ref, false, err
	}
	_, err = dec.ReadToken()
	return ref, padded, err
}

// ReferenceURLs are the URLs of References(it), in order, read without the other members.
func ReferenceURLs(it *Item) []string {
	p, ok := it.Plugins[RAGCompatSlot]
	if !ok {
		return nil
	}
	var urls []string
	walkReferencesOf(p.Data, true, func(_ int, _ json.RawMessage, ref Reference, _ bool) { urls = append(urls, ref.URL) })
	return urls
}

// ReferenceEntries calls fn, in order, for each entry of a rag-compat data object that
// References keeps: its bytes as written in data, its url trimmed, and whether the url had
// space around it. Only the urls are read.
func ReferenceEntries(data json.RawMessage, fn func(raw json.RawMessage, url string, padded bool)) {
	walkReferencesOf(data, true, func(_ int, raw json.RawMessage, ref Reference, padded bool) { fn(raw, ref.URL, padded) })
}

// ReferenceCount is the number of references of the item.
func ReferenceCount(it *Item) int { return len(References(it)) }
