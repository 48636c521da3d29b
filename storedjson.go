package gtc

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"
)

// The stored form is read on every list page, every scan page of an export or a recompute,
// and every GET; encoding/json spent most of a recompute's time there (validation, reflection
// and a copy of every raw value). This reader walks the canonical document once: free-form
// values are validated and sliced out of the document without copying, unknown keys are
// skipped, and a missing or null key reads as its default.

type storedReader struct {
	b   []byte
	i   int
	err error
}

func (r *storedReader) fail(msg string) {
	if r.err == nil {
		r.err = fmt.Errorf("stored document: %s at byte %d", msg, r.i)
	}
}

func (r *storedReader) ws() {
	for r.i < len(r.b) {
		switch r.b[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

func (r *storedReader) peek() byte {
	r.ws()
	if r.i >= len(r.b) {
		return 0
	}
	return r.b[r.i]
}

func (r *storedReader) expect(c byte) bool {
	if r.peek() != c {
		r.fail(fmt.Sprintf("expected %q", c))
		return false
	}
	r.i++
	return true
}

// null consumes a null literal if one is next.
func (r *storedReader) null() bool {
	if r.peek() == 'n' && len(r.b)-r.i >= 4 && string(r.b[r.i:r.i+4]) == "null" {
		r.i += 4
		return true
	}
	return false
}

// object calls fn for each key; fn must consume the value.
func (r *storedReader) object(fn func(key string)) {
	if r.err != nil {
		return
	}
	if r.null() {
		return
	}
	if !r.expect('{') {
		return
	}
	if r.peek() == '}' {
		r.i++
		return
	}
	for r.err == nil {
		k := r.key()
		if !r.expect(':') {
			return
		}
		fn(k)
		switch r.peek() {
		case ',':
			r.i++
		case '}':
			r.i++
			return
		default:
			r.fail("expected ',' or '}'")
		}
	}
}

// array calls fn for each element; fn must consume it.
func (r *storedReader) array(fn func()) {
	if r.err != nil {
		return
	}
	if r.null() {
		return
	}
	if !r.expect('[') {
		return
	}
	if r.peek() == ']' {
		r.i++
		return
	}
	for r.err == nil {
		fn()
		switch r.peek() {
		case ',':
			r.i++
		case ']':
			r.i++
			return
		default:
			r.fail("expected ',' or ']'")
		}
	}
}

// knownKeys interns the keys of stored documents and references, so reading a key does not
// allocate (a map lookup with string(bytes) does not copy).
var knownKeys = func() map[string]string {
	m := map[string]string{}
	for _, k := range []string{"id", "datasetName", "bucket", "status", "docType", "schemaVersion", "manualTags",
		"computedTags", "comment", "assignedTo", "assignedAt", "updatedAt", "updatedBy", "reviewedAt", "scenarioId",
		"history", "contextEntries", "traceIds", "toolCalls", "expectedTools", "feedback", "metadata", "plugins",
		"createdBy", "createdAt", "tracePayload", "role", "msg", "turnId", "stepId", "expectedBehavior", "key", "value",
		"name", "callType", "arguments", "agent", "stepNumber", "parallelGroup", "parentCallId", "response", "required",
		"optional", "notNeeded", "source", "values", "kind", "version", "data", "references", "url", "title", "content",
		"keyExcerpt", "type", "bonus", "messageIndex", "visitedAt", "keyParagraph", "toolCallId", "snippet", RAGCompatSlot} {
		m[k] = k
	}
	return m
}()

// key reads an object key.
func (r *storedReader) key() string {
	if r.peek() == '"' {
		end := r.i + 1
		for end < len(r.b) && r.b[end] != '"' && r.b[end] != '\\' && r.b[end] >= 0x20 && r.b[end] < utf8.RuneSelf {
			end++
		}
		if end < len(r.b) && r.b[end] == '"' {
			if k, ok := knownKeys[string(r.b[r.i+1:end])]; ok {
				r.i = end + 1
				return k
			}
		}
	}
	return r.str()
}

// skipStr passes over a string without building it.
func (r *storedReader) skipStr() {
	if !r.expect('"') {
		return
	}
	for r.i < len(r.b) {
		c := r.b[r.i]
		switch {
		case c == '"':
			r.i++
			return
		case c < 0x20:
			r.fail("control character in a string")
			return
		case c == '\\':
			if r.i+1 >= len(r.b) {
				r.fail("unterminated escape")
				return
			}
			if r.b[r.i+1] == 'u' {
				r.i += 2
				if _, ok := hex4(r.b, r.i); !ok {
					r.fail("invalid \\u escape")
					return
				}
				r.i += 4
				continue
			}
			switch r.b[r.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				r.i += 2
			default:
				r.fail("invalid escape")
				return
			}
		case c < utf8.RuneSelf:
			r.i++
		default:
			_, size := utf8.DecodeRune(r.b[r.i:])
			r.i += size
		}
	}
	r.fail("unterminated string")
}

// str reads a string (null reads as "").
func (r *storedReader) str() string {
	if r.err != nil {
		return ""
	}
	if r.null() {
		return ""
	}
	if r.peek() != '"' {
		r.expect('"')
		return ""
	}
	s, end, problem := UnquoteJSONString(r.b, r.i)
	r.i = end
	if problem != "" {
		r.fail(problem)
		return ""
	}
	return s
}

// optString reads a string, or skips any other value and reads "".
func (r *storedReader) optString() string {
	if r.peek() != '"' {
		r.skip(0)
		return ""
	}
	return r.str()
}

func (r *storedReader) strPtr() *string {
	if r.err != nil || r.null() {
		return nil
	}
	s := r.str()
	return &s
}

func (r *storedReader) strings() []string {
	out := []string{}
	r.array(func() { out = append(out, r.str()) })
	return out
}

// raw validates the next value and returns it as a slice of the document.
func (r *storedReader) raw() json.RawMessage {
	r.ws()
	start := r.i
	r.skip(0)
	if r.err != nil {
		return nil
	}
	return json.RawMessage(r.b[start:r.i])
}

// rawOrNil is raw, with a null value read as nil.
func (r *storedReader) rawOrNil() json.RawMessage {
	if r.null() {
		return nil
	}
	return r.raw()
}

func (r *storedReader) skip(depth int) {
	if r.err != nil {
		return
	}
	if depth > 10000 {
		r.fail("nesting too deep")
		return
	}
	switch c := r.peek(); {
	case c == '{':
		r.object(func(string) { r.skip(depth + 1) })
	case c == '[':
		r.array(func() { r.skip(depth + 1) })
	case c == '"':
		r.skipStr()
	case c == 't':
		r.literal("true")
	case c == 'f':
		r.literal("false")
	case c == 'n':
		r.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		r.number()
	default:
		r.fail("unexpected character")
	}
}

func (r *storedReader) literal(w string) {
	if len(r.b)-r.i < len(w) || string(r.b[r.i:r.i+len(w)]) != w {
		r.fail("invalid literal")
		return
	}
	r.i += len(w)
}

func (r *storedReader) number() string {
	start := r.i
	if r.i < len(r.b) && r.b[r.i] == '-' {
		r.i++
	}
	digits := func() int {
		n := 0
		for r.i < len(r.b) && r.b[r.i] >= '0' && r.b[r.i] <= '9' {
			r.i++
			n++
		}
		return n
	}
	if digits() == 0 {
		r.fail("invalid number")
		return ""
	}
	if r.i < len(r.b) && r.b[r.i] == '.' {
		r.i++
		if digits() == 0 {
			r.fail("invalid number")
			return ""
		}
	}
	if r.i < len(r.b) && (r.b[r.i] == 'e' || r.b[r.i] == 'E') {
		r.i++
		if r.i < len(r.b) && (r.b[r.i] == '+' || r.b[r.i] == '-') {
			r.i++
		}
		if digits() == 0 {
			r.fail("invalid number")
			return ""
		}
	}
	return string(r.b[start:r.i])
}

func (r *storedReader) int64Ptr() *int64 {
	if r.err != nil || r.null() {
		return nil
	}
	r.ws()
	n, err := strconv.ParseInt(r.number(), 10, 64)
	if err != nil {
		r.fail("expected an integer")
		return nil
	}
	return &n
}

// timeVal reads a date-time: the stored layout fast, any RFC 3339 value otherwise.
func (r *storedReader) timeVal() (time.Time, bool) {
	if r.err != nil || r.null() {
		return time.Time{}, false
	}
	s := r.str()
	if t, ok := parseStoredTime(s); ok {
		return t, true
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		r.fail("invalid date-time")
		return time.Time{}, false
	}
	return t.UTC(), true
}

func (r *storedReader) timePtr() *time.Time {
	if t, ok := r.timeVal(); ok {
		return &t
	}
	return nil
}

// parseStoredTime reads exactly 2006-01-02T15:04:05.000000Z.
func parseStoredTime(s string) (time.Time, bool) {
	if len(s) != 27 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[19] != '.' || s[26] != 'Z' {
		return time.Time{}, false
	}
	num := func(a, b int) (int, bool) {
		n := 0
		for i := a; i < b; i++ {
			c := s[i]
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int(c-'0')
		}
		return n, true
	}
	y, ok1 := num(0, 4)
	mo, ok2 := num(5, 7)
	d, ok3 := num(8, 10)
	h, ok4 := num(11, 13)
	mi, ok5 := num(14, 16)
	se, ok6 := num(17, 19)
	us, ok7 := num(20, 26)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7) || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 59 {
		return time.Time{}, false
	}
	t := time.Date(y, time.Month(mo), d, h, mi, se, us*1000, time.UTC)
	if t.Day() != d {
		return time.Time{}, false
	}
	return t, true
}

var errTrailingData = errors.New("stored document: data after the top-level value")

// decodeStored reads a canonical item document.
func decodeStored(doc []byte) (*Item, error) {
	r := &storedReader{b: doc}
	it := &Item{}
	r.object(func(k string) {
		switch k {
		case "id":
			it.ID = r.str()
		case "datasetName":
			it.DatasetName = r.str()
		case "bucket":
			it.Bucket = r.str()
		case "status":
			it.Status = Status(r.str())
		case "docType":
			it.DocType = r.str()
		case "schemaVersion":
			it.SchemaVersion = r.str()
		case "manualTags":
			it.ManualTags = r.strings()
		case "computedTags":
			it.ComputedTags = r.strings()
		case "comment":
			it.Comment = r.str()
		case "assignedTo":
			it.AssignedTo = r.strPtr()
		case "assignedAt":
			it.AssignedAt = r.timePtr()
		case "updatedAt":
			it.UpdatedAt, _ = r.timeVal()
		case "updatedBy":
			it.UpdatedBy = r.strPtr()
		case "reviewedAt":
			it.ReviewedAt = r.timePtr()
		case "scenarioId":
			it.ScenarioID = r.str()
		case "history":
			it.History = []HistoryEntry{}
			r.array(func() {
				var h HistoryEntry
				r.object(func(k string) {
					switch k {
					case "role":
						h.Role = r.str()
					case "msg":
						h.Msg = r.str()
					case "turnId":
						h.TurnID = r.strPtr()
					case "stepId":
						h.StepID = r.strPtr()
					case "expectedBehavior":
						if !r.null() {
							h.ExpectedBehavior = r.strings()
						}
					default:
						r.skip(0)
					}
				})
				it.History = append(it.History, h)
			})
		case "contextEntries":
			it.ContextEntries = []ContextEntry{}
			r.array(func() {
				ce := ContextEntry{Value: json.RawMessage("null")}
				r.object(func(k string) {
					switch k {
					case "key":
						ce.Key = r.str()
					case "value":
						ce.Value = r.raw()
					default:
						r.skip(0)
					}
				})
				it.ContextEntries = append(it.ContextEntries, ce)
			})
		case "traceIds":
			if r.null() {
				break
			}
			it.TraceIDs = map[string]string{}
			r.object(func(k string) { it.TraceIDs[k] = r.str() })
		case "toolCalls":
			it.ToolCalls = []ToolCall{}
			r.array(func() {
				var tc ToolCall
				r.object(func(k string) {
					switch k {
					case "id":
						tc.ID = r.str()
					case "name":
						tc.Name = r.str()
					case "callType":
						tc.CallType = r.str()
					case "arguments":
						tc.Arguments = r.rawOrNil()
					case "agent":
						tc.Agent = r.strPtr()
					case "stepNumber":
						tc.StepNumber = r.int64Ptr()
					case "parallelGroup":
						tc.ParallelGroup = r.strPtr()
					case "parentCallId":
						tc.ParentCallID = r.strPtr()
					case "response":
						tc.Response = r.rawOrNil()
					default:
						r.skip(0)
					}
				})
				it.ToolCalls = append(it.ToolCalls, tc)
			})
		case "expectedTools":
			r.object(func(k string) {
				list := []ToolExpectation{}
				r.array(func() {
					var e ToolExpectation
					r.object(func(k string) {
						switch k {
						case "name":
							e.Name = r.str()
						case "arguments":
							e.Arguments = r.rawOrNil()
						default:
							r.skip(0)
						}
					})
					list = append(list, e)
				})
				switch k {
				case "required":
					it.ExpectedTools.Required = list
				case "optional":
					it.ExpectedTools.Optional = list
				case "notNeeded":
					it.ExpectedTools.NotNeeded = list
				}
			})
		case "feedback":
			it.Feedback = []FeedbackEntry{}
			r.array(func() {
				var f FeedbackEntry
				r.object(func(k string) {
					switch k {
					case "source":
						f.Source = r.str()
					case "values":
						f.Values = r.rawOrNil()
					default:
						r.skip(0)
					}
				})
				it.Feedback = append(it.Feedback, f)
			})
		case "metadata":
			it.Metadata = r.rawOrNil()
		case "plugins":
			it.Plugins = map[string]PluginPayload{}
			r.object(func(slot string) {
				var p PluginPayload
				r.object(func(k string) {
					switch k {
					case "kind":
						p.Kind = r.str()
					case "version":
						p.Version = r.str()
					case "data":
						p.Data = r.rawOrNil()
					default:
						r.skip(0)
					}
				})
				it.Plugins[slot] = p
			})
		case "createdBy":
			it.CreatedBy = r.strPtr()
		case "createdAt":
			it.CreatedAt = r.timePtr()
		case "tracePayload":
			it.TracePayload = r.rawOrNil()
		default:
			r.skip(0)
		}
	})
	if r.err == nil {
		r.ws()
		if r.i != len(r.b) {
			r.err = errTrailingData
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	it.fillDefaults()
	return it, nil
}
