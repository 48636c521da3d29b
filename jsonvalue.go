package gtc

import (
	"bytes"
	"fmt"
	"unicode/utf8"
)

// The request decoders need three things encoding/json does not give them together:
// every problem of a body reported with its path in document order, exact key matching,
// and free-form values kept byte-for-byte (64-bit integers, long decimals). So request
// bodies are parsed once into this small ordered tree and validated by walking it.

type jkind uint8

const (
	jNull jkind = iota
	jBool
	jNumber
	jString
	jArray
	jObject
)

func (k jkind) String() string {
	switch k {
	case jNull:
		return "null"
	case jBool:
		return "boolean"
	case jNumber:
		return "number"
	case jString:
		return "string"
	case jArray:
		return "array"
	default:
		return "object"
	}
}

// jvalue is one parsed JSON value. Objects keep their keys in order of first appearance;
// a repeated key keeps that position and takes the last value (api.md §1.2).
type jvalue struct {
	kind jkind
	b    bool
	s    string // string value, or the number literal exactly as written
	arr  []*jvalue
	obj  []jmember
}

type jmember struct {
	key string
	val *jvalue
}

func (v *jvalue) get(key string) (*jvalue, bool) {
	for i := range v.obj {
		if v.obj[i].key == key {
			return v.obj[i].val, true
		}
	}
	return nil, false
}

// MaxJSONDepth bounds the nesting of request bodies so hostile input cannot exhaust the stack.
const MaxJSONDepth = 512

// JSONSyntaxError describes why a body is not JSON.
type JSONSyntaxError struct {
	Offset int
	Msg    string
}

func (e *JSONSyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at byte %d: %s", e.Offset, e.Msg)
}

type jparser struct {
	data []byte
	pos  int
}

// parseJSON parses one complete JSON document (RFC 8259) with nothing but whitespace after it.
func parseJSON(data []byte) (*jvalue, error) {
	if !utf8.Valid(data) {
		return nil, &JSONSyntaxError{Offset: firstInvalidUTF8(data), Msg: "invalid UTF-8"}
	}
	p := &jparser{data: data}
	p.skipSpace()
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos != len(p.data) {
		return nil, p.fail("unexpected data after the top-level value")
	}
	return v, nil
}

func firstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b)
}

func (p *jparser) fail(msg string) error { return &JSONSyntaxError{Offset: p.pos, Msg: msg} }

func (p *jparser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *jparser) value(depth int) (*jvalue, error) {
	if depth > MaxJSONDepth {
		return nil, p.fail(fmt.Sprintf("nesting deeper than %d levels", MaxJSONDepth))
	}
	if p.pos >= len(p.data) {
		return nil, p.fail("unexpected end of input")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		return &jvalue{kind: jString, s: s}, nil
	case c == 't':
		return p.literal("true", &jvalue{kind: jBool, b: true})
	case c == 'f':
		return p.literal("false", &jvalue{kind: jBool})
	case c == 'n':
		return p.literal("null", &jvalue{kind: jNull})
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	default:
		return nil, p.fail(fmt.Sprintf("unexpected character %q", c))
	}
}

func (p *jparser) literal(word string, v *jvalue) (*jvalue, error) {
	if !bytes.HasPrefix(p.data[p.pos:], []byte(word)) {
		return nil, p.fail("invalid literal")
	}
	p.pos += len(word)
	return v, nil
}

func (p *jparser) object(depth int) (*jvalue, error) {
	p.pos++ // {
	v := &jvalue{kind: jObject}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return v, nil
	}
	var index map[string]int // built lazily for objects with many keys
	for {
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return nil, p.fail("expected a string key")
		}
		key, err := p.str()
		if err != nil {
			return nil, err
		}
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return nil, p.fail("expected ':' after an object key")
		}
		p.pos++
		p.skipSpace()
		val, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		if index == nil && len(v.obj) >= 16 {
			index = make(map[string]int, 32)
			for i, m := range v.obj {
				index[m.key] = i
			}
		}
		dup := -1
		if index != nil {
			if i, ok := index[key]; ok {
				dup = i
			}
		} else {
			for i := range v.obj {
				if v.obj[i].key == key {
					dup = i
					break
				}
			}
		}
		if dup >= 0 {
			v.obj[dup].val = val
		} else {
			if index != nil {
				index[key] = len(v.obj)
			}
			v.obj = append(v.obj, jmember{key: key, val: val})
		}
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, p.fail("unexpected end of input in an object")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			return v, nil
		default:
			return nil, p.fail("expected ',' or '}' in an object")
		}
	}
}

func (p *jparser) array(depth int) (*jvalue, error) {
	p.pos++ // [
	v := &jvalue{kind: jArray, arr: []*jvalue{}}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return v, nil
	}
	for {
		p.skipSpace()
		el, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		v.arr = append(v.arr, el)
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, p.fail("unexpected end of input in an array")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			return v, nil
		default:
			return nil, p.fail("expected ',' or ']' in an array")
		}
	}
}

func (p *jparser) number() (*jvalue, error) {
	start := p.pos
	d := p.data
	if p.pos < len(d) && d[p.pos] == '-' {
		p.pos++
	}
	if p.pos >= len(d) {
		return nil, p.fail("invalid number")
	}
	if d[p.pos] == '0' {
		p.pos++
	} else if d[p.pos] >= '1' && d[p.pos] <= '9' {
		for p.pos < len(d) && d[p.pos] >= '0' && d[p.pos] <= '9' {
			p.pos++
		}
	} else {
		return nil, p.fail("invalid number")
	}
	if p.pos < len(d) && d[p.pos] == '.' {
		p.pos++
		n := p.pos
		for p.pos < len(d) && d[p.pos] >= '0' && d[p.pos] <= '9' {
			p.pos++
		}
		if p.pos == n {
			return nil, p.fail("invalid number")
		}
	}
	if p.pos < len(d) && (d[p.pos] == 'e' || d[p.pos] == 'E') {
		p.pos++
		if p.pos < len(d) && (d[p.pos] == '+' || d[p.pos] == '-') {
			p.pos++
		}
		n := p.pos
		for p.pos < len(d) && d[p.pos] >= '0' && d[p.pos] <= '9' {
			p.pos++
		}
		if p.pos == n {
			return nil, p.fail("invalid number")
		}
	}
	return &jvalue{kind: jNumber, s: string(d[start:p.pos])}, nil
}

func (p *jparser) str() (string, error) {
	s, end, problem := UnquoteJSONString(p.data, p.pos)
	p.pos = end
	if problem != "" {
		return "", p.fail(problem)
	}
	return s, nil
}

// encode writes v as compact JSON. Strings are escaped minimally (no HTML escaping,
// non-ASCII kept as is); number literals are copied verbatim.
func (v *jvalue) encode(buf *bytes.Buffer) {
	switch v.kind {
	case jNull:
		buf.WriteString("null")
	case jBool:
		if v.b {
			buf.WriteString("true")
		} else {
			buf.WriteString("false")
		}
	case jNumber:
		buf.WriteString(v.s)
	case jString:
		writeJSONString(buf, v.s)
	case jArray:
		buf.WriteByte('[')
		for i, el := range v.arr {
			if i > 0 {
				buf.WriteByte(',')
			}
			el.encode(buf)
		}
		buf.WriteByte(']')
	case jObject:
		buf.WriteByte('{')
		for i, m := range v.obj {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeJSONString(buf, m.key)
			buf.WriteByte(':')
			m.val.encode(buf)
		}
		buf.WriteByte('}')
	}
}

func (v *jvalue) raw() []byte {
	var buf bytes.Buffer
	v.encode(&buf)
	return buf.Bytes()
}

const hexDigits = "0123456789abcdef"

func writeJSONString(buf *bytes.Buffer, s string) {
	buf.WriteByte('"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			buf.WriteString(s[start:i])
			switch c {
			case '"', '\\':
				buf.WriteByte('\\')
				buf.WriteByte(c)
			case '\n':
				buf.WriteString(`\n`)
			case '\r':
				buf.WriteString(`\r`)
			case '\t':
				buf.WriteString(`\t`)
			default:
				buf.WriteString(`\u00`)
				buf.WriteByte(hexDigits[c>>4])
				buf.WriteByte(hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			buf.WriteString(s[start:i])
			buf.WriteString(`\ufffd`)
			i += size
			start = i
			continue
		}
		i += size
	}
	buf.WriteString(s[start:])
	buf.WriteByte('"')
}
