package export

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/codec"
)

// Record is one exported JSON object. Numbers are
// json.Number; nested values are map[string]any, []any, string, bool, json.Number or nil.
type Record map[string]any

// ID is the record's id, or "" when it has none.
func (r Record) ID() string {
	s, _ := r["id"].(string)
	return s
}

// DatasetName is the record's datasetName, or "" when it has none.
func (r Record) DatasetName() string {
	s, _ := r["datasetName"].(string)
	return s
}

// BuildRecord turns a stored item into its export record: the item's API JSON (every key,
// tags built, _etag included), decoded with numbers kept as text, without the top-level keys
// whose value is null. Nested nulls are user data and stay. The record shares nothing with
// the item.
func BuildRecord(it *gtc.Item, scratch *bytes.Buffer) (Record, error) {
	scratch.Reset()
	scratch.Write(codec.AppendItemAPI(scratch.AvailableBuffer(), it))
	v, err := DecodeJSON(scratch.Bytes())
	if err != nil {
		return nil, fmt.Errorf("export: item %s: %w", it.ID, err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("export: item %s: not an object", it.ID)
	}
	for k, val := range m {
		if val == nil {
			delete(m, k)
		}
	}
	return Record(m), nil
}

// DecodeJSON decodes one JSON value into the record value types: map[string]any, []any,
// string, bool, json.Number and nil. Invalid UTF-8 in strings becomes U+FFFD and a repeated
// object key keeps its last value, as encoding/json does.
func DecodeJSON(data []byte) (any, error) {
	d := decoder{b: data}
	d.ws()
	v := d.value(0)
	if d.err == nil {
		d.ws()
		if d.i != len(d.b) {
			d.fail("data after the value")
		}
	}
	if d.err != nil {
		return nil, d.err
	}
	return v, nil
}

const maxDepth = 10000

type decoder struct {
	b   []byte
	i   int
	err error
}

func (d *decoder) fail(msg string) {
	if d.err == nil {
		d.err = fmt.Errorf("invalid JSON at offset %d: %s", d.i, msg)
	}
}

func (d *decoder) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *decoder) value(depth int) any {
	if depth > maxDepth {
		d.fail("nesting too deep")
		return nil
	}
	if d.i >= len(d.b) {
		d.fail("unexpected end")
		return nil
	}
	switch c := d.b[d.i]; {
	case c == '{':
		d.i++
		m := make(map[string]any, 8)
		d.ws()
		if d.i < len(d.b) && d.b[d.i] == '}' {
			d.i++
			return m
		}
		for d.err == nil {
			d.ws()
			if d.i >= len(d.b) || d.b[d.i] != '"' {
				d.fail("expected a key")
				return nil
			}
			k := d.str()
			d.ws()
			if d.i >= len(d.b) || d.b[d.i] != ':' {
				d.fail("expected ':'")
				return nil
			}
			d.i++
			d.ws()
			m[k] = d.value(depth + 1)
			d.ws()
			if d.i >= len(d.b) {
				d.fail("unexpected end")
				return nil
			}
			if d.b[d.i] == ',' {
				d.i++
				continue
			}
			if d.b[d.i] == '}' {
				d.i++
				return m
			}
			d.fail("expected ',' or '}'")
		}
		return nil
	case c == '[':
		d.i++
		a := []any{}
		d.ws()
		if d.i < len(d.b) && d.b[d.i] == ']' {
			d.i++
			return a
		}
		for d.err == nil {
			d.ws()
			a = append(a, d.value(depth+1))
			d.ws()
			if d.i >= len(d.b) {
				d.fail("unexpected end")
				return nil
			}
			if d.b[d.i] == ',' {
				d.i++
				continue
			}
			if d.b[d.i] == ']' {
				d.i++
				return a
			}
			d.fail("expected ',' or ']'")
		}
		return nil
	case c == '"':
		return d.str()
	case c == 't':
		return d.literal("true", true)
	case c == 'f':
		return d.literal("false", false)
	case c == 'n':
		return d.literal("null", nil)
	case c == '-' || c >= '0' && c <= '9':
		return d.number()
	}
	d.fail("unexpected character")
	return nil
}

func (d *decoder) literal(word string, v any) any {
	if !bytes.HasPrefix(d.b[d.i:], []byte(word)) {
		d.fail("invalid literal")
		return nil
	}
	d.i += len(word)
	return v
}

func (d *decoder) number() any {
	end, ok := numberEnd(d.b, d.i)
	if !ok {
		d.i = end
		d.fail("invalid number")
		return nil
	}
	n := json.Number(d.b[d.i:end])
	d.i = end
	return n
}

// numberEnd returns the end of the JSON number starting at b[i], and whether it is one.
func numberEnd(b []byte, i int) (int, bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(b) && b[i] == '0' {
		i++
	} else if digits() == 0 {
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return i, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return i, false
		}
	}
	return i, true
}

// str reads a string at d.i (which is '"').
func (d *decoder) str() string {
	s, end, problem := gtc.UnquoteJSONString(d.b, d.i)
	d.i = end
	if problem != "" {
		d.fail(problem)
		return ""
	}
	return s
}

// AppendJSON appends the compact JSON of a record value: object keys sorted by bytes, no
// HTML escaping, numbers from their json.Number text, invalid UTF-8 replaced by U+FFFD —
// byte for byte what encoding/json with SetEscapeHTML(false) writes for the same value.
func AppendJSON(dst []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case string:
		return appendString(dst, x), nil
	case json.Number:
		if x == "" {
			return append(dst, '0'), nil
		}
		if end, ok := numberEnd([]byte(x), 0); !ok || end != len(x) {
			return dst, fmt.Errorf("export: invalid number %q", string(x))
		}
		return append(dst, x...), nil
	case bool:
		if x {
			return append(dst, "true"...), nil
		}
		return append(dst, "false"...), nil
	case Record:
		return appendObject(dst, x)
	case map[string]any:
		return appendObject(dst, x)
	case []any:
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = AppendJSON(dst, e); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	case []string:
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, e)
		}
		return append(dst, ']'), nil
	case int:
		return strconv.AppendInt(dst, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(dst, x, 10), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return dst, errors.New("export: unsupported number")
		}
	}
	// Anything else a custom processor put in a record: the standard encoder decides.
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return dst, fmt.Errorf("export: %w", err)
	}
	return append(dst, bytes.TrimSuffix(b.Bytes(), []byte("\n"))...), nil
}

func appendObject[M ~map[string]any](dst []byte, m M) ([]byte, error) {
	var small [32]string
	keys := small[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, k)
		dst = append(dst, ':')
		var err error
		if dst, err = AppendJSON(dst, m[k]); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

const hexDigits = "0123456789abcdef"

// appendString writes s as a JSON string with the escaping of encoding/json without HTML
// escaping: quotes, backslashes and control characters escaped, U+2028 and U+2029 escaped,
// invalid UTF-8 replaced by U+FFFD.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// AppendIndented appends v pretty-printed as the item files and the manifest are: two-space
// indent, sorted keys, no HTML escaping, a trailing newline.
func AppendIndented(dst []byte, v any, scratch *bytes.Buffer) ([]byte, error) {
	compact, err := AppendJSON(scratch.AvailableBuffer()[:0], v)
	if err != nil {
		return dst, err
	}
	var out bytes.Buffer
	out.Grow(len(compact) * 3 / 2)
	if err := json.Indent(&out, compact, "", "  "); err != nil {
		return dst, err
	}
	dst = append(dst, out.Bytes()...)
	return append(dst, '\n'), nil
}

// deepCopy copies a record value so that the copy shares no map or slice with v.
func deepCopy(v any) any {
	if r, ok := v.(Record); ok {
		v = map[string]any(r)
	}
	return gtc.CopyJSON(v)
}

// CopyRecord returns a deep copy of r.
func CopyRecord(r Record) Record { return Record(deepCopy(map[string]any(r)).(map[string]any)) }
