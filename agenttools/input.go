package agenttools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/codec"
)

// InputError says why a body is not a tool input: it is not JSON at all, or JSON but not an
// object. Over HTTP these are transport errors (400 MALFORMED_JSON, TOOL_INPUT_NOT_OBJECT);
// over MCP they are INVALID_INPUT results.
type InputError struct {
	// NotObject is true for valid JSON that is not an object.
	NotObject bool
	// Detail is the syntax problem, or what the JSON is instead of an object ("an array").
	Detail string
}

func (e *InputError) Error() string {
	if e.NotObject {
		return "the input must be a JSON object (got " + e.Detail + ")"
	}
	return "the input is not valid JSON (" + e.Detail + ")"
}

// DecodeInput parses a tool input: nil, empty or whitespace is {}; anything else must be one
// JSON object (valid UTF-8, nothing after it; a repeated key keeps its last value). Numbers
// come back as float64, the form the schema validator reads; one too large for float64 is
// ±Inf and fails every numeric check.
func DecodeInput(b []byte) (map[string]any, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return map[string]any{}, nil
	}
	if _, err := codec.ParseBody(b); err != nil {
		detail := err.Error()
		if ge, ok := gtc.AsError(err); ok && len(ge.Fields) > 0 {
			detail = ge.Fields[0].Message
		}
		return nil, &InputError{Detail: detail}
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, &InputError{Detail: err.Error()}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, &InputError{NotObject: true, Detail: jsonKind(v)}
	}
	return floats(obj).(map[string]any), nil
}

// floats turns every json.Number into a float64.
func floats(v any) any {
	switch v := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil && !math.IsInf(f, 0) {
			return math.NaN()
		}
		return f
	case map[string]any:
		for k, e := range v {
			v[k] = floats(e)
		}
		return v
	case []any:
		for i, e := range v {
			v[i] = floats(e)
		}
		return v
	default:
		return v
	}
}

// jsonKind names the kind of a decoded JSON value with its article, for messages.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case json.Number, float64:
		return "a number"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	default:
		return fmt.Sprintf("%T", v)
	}
}
