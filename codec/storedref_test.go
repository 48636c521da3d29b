package codec

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
)

// decodeStoredReflect is the encoding/json reading of a stored document, kept as the
// reference the hand-written reader is compared with.
type storedItem struct {
	ID             string                  `json:"id"`
	DatasetName    string                  `json:"datasetName"`
	Bucket         string                  `json:"bucket"`
	Status         gtc.Status              `json:"status"`
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

func decodeStoredReflect(doc []byte) (*gtc.Item, error) {
	var s storedItem
	if err := json.Unmarshal(doc, &s); err != nil {
		return nil, err
	}
	it := &gtc.Item{
		ID: s.ID, DatasetName: s.DatasetName, Bucket: s.Bucket, Status: s.Status,
		DocType: s.DocType, SchemaVersion: s.SchemaVersion,
		ManualTags: s.ManualTags, ComputedTags: s.ComputedTags, Comment: s.Comment,
		AssignedTo: s.AssignedTo, AssignedAt: utcPtr(s.AssignedAt), UpdatedAt: s.UpdatedAt.UTC(),
		UpdatedBy: s.UpdatedBy, ReviewedAt: utcPtr(s.ReviewedAt), ScenarioID: s.ScenarioID,
		TraceIDs: s.TraceIDs, Metadata: s.Metadata, CreatedBy: s.CreatedBy,
		CreatedAt: utcPtr(s.CreatedAt), TracePayload: s.TracePayload,
	}
	it.History = make([]gtc.HistoryEntry, len(s.History))
	for i, h := range s.History {
		e := gtc.HistoryEntry{Role: h.Role, Msg: h.Msg, TurnID: h.TurnID, StepID: h.StepID}
		if h.ExpectedBehavior != nil {
			e.ExpectedBehavior = *h.ExpectedBehavior
			if e.ExpectedBehavior == nil {
				e.ExpectedBehavior = []string{}
			}
		}
		it.History[i] = e
	}
	it.ContextEntries = make([]gtc.ContextEntry, len(s.ContextEntries))
	for i, c := range s.ContextEntries {
		v := c.Value
		if len(v) == 0 {
			v = json.RawMessage("null")
		}
		it.ContextEntries[i] = gtc.ContextEntry{Key: c.Key, Value: v}
	}
	it.ToolCalls = make([]gtc.ToolCall, len(s.ToolCalls))
	for i, t := range s.ToolCalls {
		it.ToolCalls[i] = gtc.ToolCall{
			ID: t.ID, Name: t.Name, CallType: t.CallType, Arguments: nullRaw(t.Arguments),
			Agent: t.Agent, StepNumber: t.StepNumber, ParallelGroup: t.ParallelGroup,
			ParentCallID: t.ParentCallID, Response: nullRaw(t.Response),
		}
	}
	conv := func(in []storedExpectation) []gtc.ToolExpectation {
		out := make([]gtc.ToolExpectation, len(in))
		for i, e := range in {
			out[i] = gtc.ToolExpectation{Name: e.Name, Arguments: nullRaw(e.Arguments)}
		}
		return out
	}
	it.ExpectedTools = gtc.ExpectedTools{
		Required:  conv(s.ExpectedTools.Required),
		Optional:  conv(s.ExpectedTools.Optional),
		NotNeeded: conv(s.ExpectedTools.NotNeeded),
	}
	it.Feedback = make([]gtc.FeedbackEntry, len(s.Feedback))
	for i, f := range s.Feedback {
		it.Feedback[i] = gtc.FeedbackEntry(f)
	}
	it.Plugins = make(map[string]gtc.PluginPayload, len(s.Plugins))
	for k, p := range s.Plugins {
		it.Plugins[k] = gtc.PluginPayload(p)
	}
	it.FillDefaults()
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
				doc := ItemStoredJSON(e.Item)
				a, err1 := DecodeStoredItem(doc)
				b, err2 := decodeStoredReflect(doc)
				require.NoError(t, err1)
				require.NoError(t, err2)
				require.Equal(t, string(ItemStoredJSON(b)), string(ItemStoredJSON(a)))
			}
			return
		}
		// Arbitrary bytes must not make the reader panic. (encoding/json is no reference
		// here: it matches keys case-insensitively, the stored form does not.)
		_, _ = DecodeStoredItem(data)
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
		a, err := DecodeStoredItem([]byte(d))
		require.NoError(t, err, d)
		b, err := decodeStoredReflect([]byte(d))
		require.NoError(t, err, d)
		assert.Equal(t, string(ItemStoredJSON(b)), string(ItemStoredJSON(a)))
	}
	for _, bad := range []string{`{"id":`, `{"id":"a"} x`, `{"metadata":{"a":}}`, `[1]`, `{"updatedAt":"yesterday"}`, `{"history":[{"role":"u","msg":"\x01"}]}`} {
		_, err := DecodeStoredItem([]byte(bad))
		assert.Error(t, err, bad)
	}
}
