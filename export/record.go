package export

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"

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
	c := decoders.Get().(*canon)
	defer decoders.Put(c)
	c.start(data)
	v, err := c.decode()
	if err == nil {
		if _, err = c.dec.ReadToken(); err == io.EOF {
			return v, nil
		} else if err == nil {
			err = fmt.Errorf("data after the value at offset %d", c.dec.InputOffset())
		}
	}
	return nil, fmt.Errorf("invalid JSON: %w", err)
}

// decode reads the decoder's next value into the record value types.
func (c *canon) decode() (any, error) {
	switch c.dec.PeekKind() {
	case '{':
		if _, err := c.dec.ReadToken(); err != nil {
			return nil, err
		}
		m := make(map[string]any, 8)
		for c.dec.PeekKind() != '}' {
			k, err := c.dec.ReadToken()
			if err != nil {
				return nil, err
			}
			if m[k.String()], err = c.decode(); err != nil {
				return nil, err
			}
		}
		_, err := c.dec.ReadToken()
		return m, err
	case '[':
		if _, err := c.dec.ReadToken(); err != nil {
			return nil, err
		}
		a := []any{}
		for c.dec.PeekKind() != ']' {
			v, err := c.decode()
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err := c.dec.ReadToken()
		return a, err
	}
	t, err := c.dec.ReadToken()
	if err != nil {
		return nil, err
	}
	switch t.Kind() {
	case 't', 'f':
		return t.Bool(), nil
	case '"':
		return t.String(), nil
	case '0':
		return json.Number(t.String()), nil // the number as written
	}
	return nil, nil
}

// writeOptions encode record values: encoding/json's semantics (sorted map keys, nil
// slices and maps as null), jsontext's escaping (no HTML escaping, U+2028 and U+2029 as
// they are, invalid UTF-8 as U+FFFD), json.Number as its text.
var writeOptions = jsonv2.JoinOptions(
	jsonv1.DefaultOptionsV1(),
	jsontext.EscapeForHTML(false),
	jsontext.EscapeForJS(false),
	jsonv2.WithMarshalers(jsonv2.MarshalToFunc(func(enc *jsontext.Encoder, n json.Number) error {
		if n == "" {
			return enc.WriteValue(jsontext.Value("0"))
		}
		if c := n[0]; c != '-' && (c < '0' || c > '9') {
			return fmt.Errorf("invalid number %q", string(n))
		}
		return enc.WriteValue(jsontext.Value(n))
	})),
)

// AppendJSON appends the compact JSON of a record value: object keys sorted by bytes, no
// HTML escaping, numbers from their json.Number text, invalid UTF-8 replaced by U+FFFD.
func AppendJSON(dst []byte, v any) ([]byte, error) {
	b, err := jsonv2.Marshal(v, writeOptions)
	if err != nil {
		return dst, fmt.Errorf("export: %w", err)
	}
	return append(dst, b...), nil
}

// AppendIndented appends v pretty-printed as the item files and the manifest are: two-space
// indent, sorted keys, no HTML escaping, a trailing newline.
func AppendIndented(dst []byte, v any) ([]byte, error) {
	b, err := jsonv2.Marshal(v, writeOptions, jsontext.WithIndent("  "))
	if err != nil {
		return dst, fmt.Errorf("export: %w", err)
	}
	dst = append(dst, b...)
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
