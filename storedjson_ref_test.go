package gtc

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// decodeStoredReflect is the encoding/json reading of a stored document, kept as the
// reference the hand-written reader is compared with.
type storedItem struct {
	ID             string                  `json:"id"`
	DatasetName    string                  `json:"datasetName"`
	Bucket         string                  `json:"bucket"`
	Status         Status                  `json:"status"`
	DocType        string                  `json:"docType"`
	SchemaVersion  string                  `json:"schemaVersion"`
	ManualTags     []string                `json:"manualTags"`
	ComputedTags   []string                `json:"computedTags"`
	Comment        string                  `json:"comment"`
	AssignedTo     *string                 `json:"assignedTo"`
	AssignedAt     *time.Time              `json:"assignedAt"`
	UpdatedAt      time.Time               `json:"updatedAt"`
	UpdatedBy      *string                 `json:"updatedBy"`
	ReviewedAt     *time.Time              `json:"reviewedAt"`
	ScenarioID     string                  `json:"scenarioId"`
	History        []storedHistory         `json:"history"`
	ContextEntries []storedContext         `json:"contextEntries"`
	TraceIDs       map[string]string       `json:"traceIds"`
	ToolCalls      []storedToolCall        `json:"toolCalls"`
	ExpectedTools  storedExpectedTools     `json:"expectedTools"`
	Feedback       []storedFeedback        `json:"feedback"`
	Metadata       json.RawMessage         `json:"metadata"`
	Plugins        map[string]storedPlugin `json:"plugins"`
	CreatedBy      *string                 `json:"createdBy"`
	CreatedAt      *time.Time              `json:"createdAt"`
	TracePayload   json.RawMessage         `json:"tracePayload"`
}

type storedHistory struct {
	Role             string    `json:"role"`
	Msg              string    `json:"msg"`
	TurnID           *string   `json:"turnId"`
	StepID           *string   `json:"stepId"`
	ExpectedBehavior *[]string `json:"expectedBehavior"`
}

type storedContext struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
}

type storedToolCall struct {
	ID            string          `json:"id"`
	Name          string          `json:"name"`
	CallType      string          `json:"callType"`
	Arguments     json.RawMessage `json:"arguments"`
	Agent         *string         `json:"agent"`
	StepNumber    *int64          `json:"stepNumber"`
	ParallelGroup *string         `json:"parallelGroup"`
	ParentCallID  *string         `json:"parentCallId"`
	Response      json.RawMessage `json:"response"`
}

type storedExpectation struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

type storedExpectedTools struct {
	Required  []storedExpectation `json:"required"`
	Optional  []storedExpectation `json:"optional"`
	NotNeeded []storedExpectation `json:"notNeeded"`
}

type storedFeedback struct {
	Source string          `json:"source"`
	Values json.RawMessage `json:"values"`
}

type storedPlugin struct {
	Kind    string          `json:"kind"`
	Version string          `json:"version"`
	Data    json.RawMessage `json:"data"`
}

func decodeStoredReflect(doc []byte) (*Item, error) {
	var s storedItem
	if err := json.Unmarshal(doc, &s); err != nil {
		return nil, err
	}
	it := &Item{
		ID: s.ID, DatasetName: s.DatasetName, Bucket: s.Bucket, Status: s.Status,
		DocType: s.DocType, SchemaVersion: s.SchemaVersion,
		ManualTags: s.ManualTags, ComputedTags: s.ComputedTags, Comment: s.Comment,
		AssignedTo: s.AssignedTo, AssignedAt: utcPtr(s.AssignedAt), UpdatedAt: s.UpdatedAt.UTC(),
		UpdatedBy: s.UpdatedBy, ReviewedAt: utcPtr(s.ReviewedAt), ScenarioID: s.ScenarioID,
		TraceIDs: s.TraceIDs, Metadata: s.Metadata, CreatedBy: s.CreatedBy,
		CreatedAt: utcPtr(s.CreatedAt), TracePayload: s.TracePayload,
	}
	it.History = make([]HistoryEntry, len(s.History))
	for i, h := range s.History {
		e := HistoryEntry{Role: h.Role, Msg: h.Msg, TurnID: h.TurnID, StepID: h.StepID}
		if h.ExpectedBehavior != nil {
			e.ExpectedBehavior = *h.ExpectedBehavior
			if e.ExpectedBehavior == nil {
				e.ExpectedBehavior = []string{}
			}
		}
		it.History[i] = e
	}
	it.ContextEntries = make([]ContextEntry, len(s.ContextEntries))
	for i, c := range s.ContextEntries {
		v := c.Value
		if len(v) == 0 {
			v = json.RawMessage("null")
		}
		it.ContextEntries[i] = ContextEntry{Key: c.Key, Value: v}
	}
	it.ToolCalls = make([]ToolCall, len(s.ToolCalls))
	for i, t := range s.ToolCalls {
		it.ToolCalls[i] = ToolCall{
			ID: t.ID, Name: t.Name, CallType: t.CallType, Arguments: nullRaw(t.Arguments),
			Agent: t.Agent, StepNumber: t.StepNumber, ParallelGroup: t.ParallelGroup,
			ParentCallID: t.ParentCallID, Response: nullRaw(t.Response),
		}
	}
	conv := func(in []storedExpectation) []ToolExpectation {
		out := make([]ToolExpectation, len(in))
		for i, e := range in {
			out[i] = ToolExpectation{Name: e.Name, Arguments: nullRaw(e.Arguments)}
		}
		return out
	}
	it.ExpectedTools = ExpectedTools{
		Required:  conv(s.ExpectedTools.Required),
		Optional:  conv(s.ExpectedTools.Optional),
		NotNeeded: conv(s.ExpectedTools.NotNeeded),
	}
	it.Feedback = make([]FeedbackEntry, len(s.Feedback))
	for i, f := range s.Feedback {
		it.Feedback[i] = FeedbackEntry(f)
	}
	it.Plugins = make(map[string]PluginPayload, len(s.Plugins))
	for k, p := range s.Plugins {
		it.Plugins[k] = PluginPayload(p)
	}
	it.fillDefaults()
	return it, nil
}

func nullRaw(r json.RawMessage) json.RawMessage {
	if len(r) == 0 || string(r) == "null" {
		return nil
	}
	return r
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// FuzzStoredReader checks the hand-written reader against encoding/json on canonical
// documents built from fuzzed import bodies, and that arbitrary bytes cannot crash it.
func FuzzStoredReader(f *testing.F) {
	f.Add([]byte(`[{"id":"a","datasetName":"d","history":[{"role":"user","msg":"q\u00e9\ud83d\ude00"}],"metadata":{"n":1e400}}]`))
	f.Add([]byte(`[{"id":"a","datasetName":"d","toolCalls":[{"name":"t","stepNumber":7,"response":[1,{"x":null}]}],"traceIds":{"a":"b"}}]`))
	f.Add([]byte(`{"id":"x","updatedAt":"2025-01-02T10:00:00+01:00","unknown":{"a":[1,2]},"plugins":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if entries, err := DecodeImport(data); err == nil {
			for _, e := range entries {
				doc := e.Item.CanonicalJSON()
				a, err1 := decodeStored(doc)
				b, err2 := decodeStoredReflect(doc)
				require.NoError(t, err1)
				require.NoError(t, err2)
				require.Equal(t, string(b.CanonicalJSON()), string(a.CanonicalJSON()))
			}
			return
		}
		// Arbitrary bytes must not make the reader panic. (encoding/json is no reference
		// here: it matches keys case-insensitively, the stored form does not.)
		_, _ = decodeStored(data)
	})
}

func TestStoredReaderMatchesReference(t *testing.T) {
	docs := []string{
		`{"id":"a","datasetName":"d","bucket":"b","status":"draft","manualTags":["x:y"],"computedTags":[],"updatedAt":"2025-01-02T10:00:00.123456Z",
		  "history":[{"role":"user","msg":"q","expectedBehavior":[]},{"role":"agent","msg":"a\"b\\\\c\n","turnId":null}],
		  "contextEntries":[{"key":"k","value":null},{"key":"k2","value":{"a":[1,2.5e3,"x"]}}],
		  "toolCalls":[{"id":"","name":"t","callType":"tool","arguments":null,"agent":null,"stepNumber":null,"parallelGroup":null,"parentCallId":null,"response":"r"}],
		  "expectedTools":{"required":[{"name":"t","arguments":"s"}],"optional":[],"notNeeded":[]},
		  "feedback":[{"source":"s","values":{"k":1}}],"metadata":{},"plugins":{"p":{"kind":"p","version":"1.0","data":{"z":true}}},
		  "tracePayload":{"big":123456789012345678901234567890},"assignedTo":"u","assignedAt":"2025-01-02T11:00:00+01:00","extra":[{"x":1}]}`,
		`{"id":"b","datasetName":"d","updatedAt":"2025-01-02T10:00:00Z"}`,
		` { "id" : "c" , "datasetName" : "\u0064" , "updatedAt" : "2025-01-02T10:00:00.5Z" , "traceIds" : null } `,
	}
	for _, d := range docs {
		a, err := decodeStored([]byte(d))
		require.NoError(t, err, d)
		b, err := decodeStoredReflect([]byte(d))
		require.NoError(t, err, d)
		assert.Equal(t, string(b.CanonicalJSON()), string(a.CanonicalJSON()))
	}
	for _, bad := range []string{`{"id":`, `{"id":"a"} x`, `{"metadata":{"a":}}`, `[1]`, `{"updatedAt":"yesterday"}`, `{"history":[{"role":"u","msg":"\x01"}]}`} {
		_, err := decodeStored([]byte(bad))
		assert.Error(t, err, bad)
	}
}

// referencesReflect is the encoding/json reading of the references, kept as the reference the
// single-pass reader is compared with.
func referencesReflect(it *Item) []Reference {
	p, ok := it.Plugins[RAGCompatSlot]
	if !ok || len(p.Data) == 0 {
		return nil
	}
	var data map[string]json.RawMessage
	if json.Unmarshal(p.Data, &data) != nil {
		return nil
	}
	var entries []json.RawMessage
	if json.Unmarshal(data["references"], &entries) != nil {
		return nil
	}
	str := func(r json.RawMessage) string {
		var s string
		_ = json.Unmarshal(r, &s)
		return s
	}
	var out []Reference
	for _, e := range entries {
		var m map[string]json.RawMessage
		if json.Unmarshal(e, &m) != nil || m == nil {
			continue
		}
		var u string
		if json.Unmarshal(m["url"], &u) != nil || strings.TrimSpace(u) == "" {
			continue
		}
		ref := Reference{URL: strings.TrimSpace(u), Title: str(m["title"]), Content: str(m["content"]),
			KeyExcerpt: str(m["keyExcerpt"]), Type: str(m["type"])}
		_ = json.Unmarshal(m["bonus"], &ref.Bonus)
		var mi int64
		if v, ok := m["messageIndex"]; ok && string(v) != "null" && json.Unmarshal(v, &mi) == nil {
			ref.MessageIndex = &mi
		}
		out = append(out, ref)
	}
	return out
}

func FuzzReferences(f *testing.F) {
	for _, s := range []string{`{"references":[{"url":" https://a/x ","title":"T","bonus":true,"messageIndex":3}]}`,
		`{"references":[null,1,{"url":""},{"url":5},{"url":"u","url":"v"}],"references":[{"url":"w","content":"c\u00e9"}]}`,
		`{"references":{}}`, `[]`, `{"references":[{"url":"a","messageIndex":1.5,"keyExcerpt":null,"type":7}]}`, `{"x":1} y`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !utf8.Valid(data) {
			return // the import decoder refuses invalid UTF-8 before anything is stored
		}
		it := NewItem("d", "i")
		it.Plugins[RAGCompatSlot] = PluginPayload{Kind: RAGCompatSlot, Data: data}
		got, want := References(it), referencesReflect(it)
		if len(got) == 0 && len(want) == 0 {
			return
		}
		require.Equal(t, want, got, "%q", data)
	})
}
