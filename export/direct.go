package export

import (
	"encoding/json"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/gtc-dev/gtc"
)

// buildDirect writes the fast-path record of an item straight from its fields: the item's
// API JSON with its top-level nulls dropped, in the record encoding (keys sorted at every
// level), without writing the API JSON first and parsing it again. Only the free-form parts
// (metadata, plugin data, tool arguments and responses, context values, feedback values, the
// trace payload) go through the canonicalizer. A test holds it to canonicalizing the item's
// API JSON (what BuildRecord decodes), byte for byte.
func buildDirect(it *gtc.Item, c *canon) (*rawRecord, error) {
	w := &directWriter{c: c, b: make([]byte, 0, 4096)}
	rec := &rawRecord{members: make([]rawMember, 0, 32)}
	var spans [32]struct {
		key        string
		start, end int
	}
	list := spans[:0]
	member := func(key string, write func()) {
		start := len(w.b)
		write()
		list = append(list, struct {
			key        string
			start, end int
		}{key, start, len(w.b)})
	}
	str := func(s string) func() { return func() { w.b = appendText(w.b, s) } }
	strPtr := func(key string, s *string) {
		if s != nil {
			member(key, str(*s))
		}
	}
	timePtr := func(key string, t *time.Time) {
		if t != nil {
			member(key, str(gtc.FormatAPITime(*t)))
		}
	}

	// Keys in sorted order.
	member("_etag", str(it.ETag))
	timePtr("assignedAt", it.AssignedAt)
	strPtr("assignedTo", it.AssignedTo)
	member("bucket", str(it.Bucket))
	member("comment", str(it.Comment))
	member("computedTags", func() { w.strings(it.ComputedTags) })
	member("contextEntries", func() {
		w.array(len(it.ContextEntries), func(i int) {
			ce := &it.ContextEntries[i]
			w.b = append(w.b, `{"key":`...)
			w.b = appendText(w.b, ce.Key)
			w.b = append(w.b, `,"value":`...)
			w.raw(ce.Value, "null")
			w.b = append(w.b, '}')
		})
	})
	timePtr("createdAt", it.CreatedAt)
	strPtr("createdBy", it.CreatedBy)
	member("datasetName", str(it.DatasetName))
	member("docType", str(orDefault(it.DocType, gtc.DocTypeItem)))
	member("expectedTools", func() {
		w.b = append(w.b, `{"notNeeded":`...)
		w.expectations(it.ExpectedTools.NotNeeded)
		w.b = append(w.b, `,"optional":`...)
		w.expectations(it.ExpectedTools.Optional)
		w.b = append(w.b, `,"required":`...)
		w.expectations(it.ExpectedTools.Required)
		w.b = append(w.b, '}')
	})
	member("feedback", func() {
		w.array(len(it.Feedback), func(i int) {
			f := &it.Feedback[i]
			w.b = append(w.b, `{"source":`...)
			w.b = appendText(w.b, f.Source)
			w.b = append(w.b, `,"values":`...)
			w.raw(f.Values, "{}")
			w.b = append(w.b, '}')
		})
	})
	member("history", func() {
		w.array(len(it.History), func(i int) {
			h := &it.History[i]
			w.b = append(w.b, '{')
			if h.ExpectedBehavior != nil {
				w.b = append(w.b, `"expectedBehavior":`...)
				w.strings(h.ExpectedBehavior)
				w.b = append(w.b, ',')
			}
			w.b = append(w.b, `"msg":`...)
			w.b = appendText(w.b, h.Msg)
			w.b = append(w.b, `,"role":`...)
			w.b = appendText(w.b, h.Role)
			if h.StepID != nil {
				w.b = append(w.b, `,"stepId":`...)
				w.b = appendText(w.b, *h.StepID)
			}
			if h.TurnID != nil {
				w.b = append(w.b, `,"turnId":`...)
				w.b = appendText(w.b, *h.TurnID)
			}
			w.b = append(w.b, '}')
		})
	})
	member("id", str(it.ID))
	member("manualTags", func() { w.strings(it.ManualTags) })
	member("metadata", func() { w.raw(it.Metadata, "{}") })
	member("plugins", func() {
		slots := make([]string, 0, len(it.Plugins))
		for k := range it.Plugins {
			slots = append(slots, k)
		}
		slices.Sort(slots)
		w.b = append(w.b, '{')
		for i, k := range slots {
			p := it.Plugins[k]
			if i > 0 {
				w.b = append(w.b, ',')
			}
			w.b = appendText(w.b, k)
			w.b = append(w.b, `:{"data":`...)
			w.raw(p.Data, "{}")
			w.b = append(w.b, `,"kind":`...)
			w.b = appendText(w.b, p.Kind)
			w.b = append(w.b, `,"version":`...)
			w.b = appendText(w.b, orDefault(p.Version, "1.0"))
			w.b = append(w.b, '}')
		}
		w.b = append(w.b, '}')
	})
	timePtr("reviewedAt", it.ReviewedAt)
	member("scenarioId", str(it.ScenarioID))
	member("schemaVersion", str(orDefault(it.SchemaVersion, gtc.SchemaVersionCurrent)))
	member("status", str(string(orDefault(it.Status, gtc.StatusDraft))))
	member("tags", func() { w.strings(it.Tags()) })
	member("toolCalls", func() {
		w.array(len(it.ToolCalls), func(i int) {
			tc := &it.ToolCalls[i]
			w.b = append(w.b, `{"agent":`...)
			w.strPtr(tc.Agent)
			w.b = append(w.b, `,"arguments":`...)
			w.raw(tc.Arguments, "null")
			w.b = append(w.b, `,"callType":`...)
			w.b = appendText(w.b, orDefault(tc.CallType, "tool"))
			w.b = append(w.b, `,"id":`...)
			w.b = appendText(w.b, tc.ID)
			w.b = append(w.b, `,"name":`...)
			w.b = appendText(w.b, tc.Name)
			w.b = append(w.b, `,"parallelGroup":`...)
			w.strPtr(tc.ParallelGroup)
			w.b = append(w.b, `,"parentCallId":`...)
			w.strPtr(tc.ParentCallID)
			w.b = append(w.b, `,"response":`...)
			w.raw(tc.Response, "null")
			w.b = append(w.b, `,"stepNumber":`...)
			if tc.StepNumber == nil {
				w.b = append(w.b, "null"...)
			} else {
				w.b = strconv.AppendInt(w.b, *tc.StepNumber, 10)
			}
			w.b = append(w.b, '}')
		})
	})
	if it.TraceIDs != nil {
		member("traceIds", func() {
			keys := make([]string, 0, len(it.TraceIDs))
			for k := range it.TraceIDs {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			w.b = append(w.b, '{')
			for i, k := range keys {
				if i > 0 {
					w.b = append(w.b, ',')
				}
				w.b = appendText(w.b, k)
				w.b = append(w.b, ':')
				w.b = appendText(w.b, it.TraceIDs[k])
			}
			w.b = append(w.b, '}')
		})
	}
	member("tracePayload", func() { w.raw(it.TracePayload, "{}") })
	member("updatedAt", str(gtc.FormatAPITime(it.UpdatedAt)))
	strPtr("updatedBy", it.UpdatedBy)
	if w.err != nil {
		return nil, w.err
	}
	rec.arena = w.b
	for _, s := range list {
		rec.members = append(rec.members, rawMember{s.key, w.b[s.start:s.end:s.end]})
	}
	return rec, nil
}

// directWriter appends record JSON; the first error sticks.
type directWriter struct {
	c   *canon
	b   []byte
	err error
}

func (w *directWriter) strings(ss []string) {
	w.b = append(w.b, '[')
	for i, s := range ss {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.b = appendText(w.b, s)
	}
	w.b = append(w.b, ']')
}

func (w *directWriter) strPtr(s *string) {
	if s == nil {
		w.b = append(w.b, "null"...)
		return
	}
	w.b = appendText(w.b, *s)
}

func (w *directWriter) array(n int, each func(i int)) {
	w.b = append(w.b, '[')
	for i := range n {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		each(i)
	}
	w.b = append(w.b, ']')
}

// raw writes free-form JSON canonicalized, or empty when it is absent or null (the API
// writes null for some fields and {} for the objects).
func (w *directWriter) raw(r json.RawMessage, empty string) {
	if len(r) == 0 || string(r) == "null" {
		w.b = append(w.b, empty...)
		return
	}
	w.c.reset(r)
	w.c.ws()
	var err error
	if w.b, err = w.c.value(w.b, 1); err != nil && w.err == nil {
		w.err = err
	}
}

func (w *directWriter) expectations(list []gtc.ToolExpectation) {
	w.array(len(list), func(i int) {
		w.b = append(w.b, `{"arguments":`...)
		w.raw(list[i].Arguments, "null")
		w.b = append(w.b, `,"name":`...)
		w.b = appendText(w.b, list[i].Name)
		w.b = append(w.b, '}')
	})
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// appendText writes a string of the item as the record holds it: invalid UTF-8 has become
// U+FFFD when the API JSON was decoded, so it is written as that character, not escaped.
func appendText(dst []byte, s string) []byte {
	if utf8.ValidString(s) {
		return appendString(dst, s)
	}
	valid := make([]rune, 0, len(s))
	for _, r := range s {
		valid = append(valid, r)
	}
	return appendString(dst, string(valid))
}
