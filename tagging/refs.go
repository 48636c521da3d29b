package tagging

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"

	gtc "github.com/gtc-dev/gtc"
)

// referenceURLs returns the trimmed URLs of plugins["rag-compat"].data.references, in
// order: exactly the URL fields of gtc.References, and therefore as many entries as
// gtc.ReferenceCount, never nil.
//
// gtc.References decodes the whole data object into maps of json.RawMessage, well over a
// hundred allocations for an ordinary item, and every write runs it. This reader makes one
// validating pass over the bytes instead and allocates two blocks: the slice and one string
// that holds every URL. It keeps the decoder's rules: a document that is not valid JSON (or
// nests deeper than encoding/json allows) has no references, a repeated key counts with its
// last value, keys are compared after unescaping, and a URL with escapes or invalid UTF-8 is
// decoded by encoding/json itself.
func referenceURLs(it *gtc.Item) []string {
	p, ok := it.Plugins[gtc.RAGCompatSlot]
	if !ok || len(p.Data) == 0 {
		return []string{}
	}
	sc := refScanner{data: p.Data}
	if !sc.document() {
		return []string{}
	}
	return sc.strings()
}

// maxJSONDepth is encoding/json's nesting limit; deeper documents do not decode.
const maxJSONDepth = 10000

// urlSpan is one reference URL: data[start:end] already trimmed, or dec when the raw string
// needed decoding.
type urlSpan struct {
	start, end int
	dec        string
	decoded    bool
}

// refScanner is a validating JSON scanner that records the URLs of the last "references"
// member of the top-level object. Its methods return false on a syntax error.
type refScanner struct {
	data  []byte
	pos   int
	depth int
	// The URLs found: the first len(first) in first (kept on the stack), the rest in more.
	n     int
	first [8]urlSpan
	more  []urlSpan
}

func (s *refScanner) add(u urlSpan) {
	if s.n < len(s.first) {
		s.first[s.n] = u
	} else {
		s.more = append(s.more, u)
	}
	s.n++
}

func (s *refScanner) url(i int) urlSpan {
	if i < len(s.first) {
		return s.first[i]
	}
	return s.more[i-len(s.first)]
}

func (u urlSpan) len() int {
	if u.decoded {
		return len(u.dec)
	}
	return u.end - u.start
}

// document scans the whole input: one value, surrounded only by whitespace.
func (s *refScanner) document() bool {
	s.ws()
	if s.pos < len(s.data) && s.data[s.pos] == '{' {
		if !s.topObject() {
			return false
		}
	} else if !s.value() {
		return false
	}
	s.ws()
	return s.pos == len(s.data)
}

// topObject scans the data object, reading the value of every "references" member; a later
// member replaces what an earlier one found.
func (s *refScanner) topObject() bool {
	return s.object(func(key []byte, keyEscaped bool) bool {
		if !keyIs(key, keyEscaped, "references") {
			return s.value()
		}
		s.n, s.more = 0, s.more[:0]
		if s.pos < len(s.data) && s.data[s.pos] == '[' {
			return s.referenceArray()
		}
		return s.value() // null or not an array: no references
	})
}

// referenceArray scans the references array, keeping the URL of every entry that is an
// object whose url is a non-blank string.
func (s *refScanner) referenceArray() bool {
	return s.array(func() bool {
		if s.pos >= len(s.data) || s.data[s.pos] != '{' {
			return s.value()
		}
		var url urlSpan
		found := false
		ok := s.object(func(key []byte, keyEscaped bool) bool {
			if !keyIs(key, keyEscaped, "url") {
				return s.value()
			}
			found = false
			if s.data[s.pos] != '"' {
				return s.value() // null, number, … : not a string URL
			}
			start := s.pos
			content, escaped, ok := s.str()
			if !ok {
				return false
			}
			url, found = s.urlOf(start, content, escaped), true
			return true
		})
		if ok && found && (url.decoded && url.dec != "" || !url.decoded && url.end > url.start) {
			s.add(url)
		}
		return ok
	})
}

// urlOf trims a url string whose quoted form starts at start. Plain strings stay spans of the
// input; strings with escapes or invalid UTF-8 go through encoding/json so they decode
// exactly as gtc.References decodes them.
func (s *refScanner) urlOf(start int, content []byte, escaped bool) urlSpan {
	if !escaped && utf8.Valid(content) {
		lead := len(content) - len(bytes.TrimLeftFunc(content, isSpace))
		t := bytes.TrimRightFunc(content[lead:], isSpace)
		off := start + 1 + lead // content starts after the opening quote
		return urlSpan{start: off, end: off + len(t)}
	}
	var v string
	_ = json.Unmarshal(s.data[start:s.pos], &v) // already validated
	return urlSpan{dec: strings.TrimSpace(v), decoded: true}
}

// strings builds the result: one string holding every URL, sliced.
func (s *refScanner) strings() []string {
	if s.n == 0 {
		return []string{}
	}
	total := 0
	for i := range s.n {
		total += s.url(i).len()
	}
	var b strings.Builder
	b.Grow(total)
	for i := range s.n {
		if u := s.url(i); u.decoded {
			b.WriteString(u.dec)
		} else {
			b.Write(s.data[u.start:u.end])
		}
	}
	all := b.String()
	out := make([]string, s.n)
	at := 0
	for i := range out {
		l := s.url(i).len()
		out[i] = all[at : at+l]
		at += l
	}
	return out
}

// keyIs compares a member name with want after unescaping, as a map key decodes.
func keyIs(key []byte, escaped bool, want string) bool {
	if !escaped {
		return string(key) == want
	}
	var k string
	quoted := make([]byte, 0, len(key)+2)
	quoted = append(append(append(quoted, '"'), key...), '"')
	return json.Unmarshal(quoted, &k) == nil && k == want
}

func (s *refScanner) ws() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// value scans any JSON value at s.pos (no leading whitespace).
func (s *refScanner) value() bool {
	if s.pos >= len(s.data) {
		return false
	}
	switch c := s.data[s.pos]; {
	case c == '{':
		return s.object(func([]byte, bool) bool { return s.value() })
	case c == '[':
		return s.array(s.value)
	case c == '"':
		_, _, ok := s.str()
		return ok
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		return s.number()
	}
	return false
}

// object scans an object; member is called with s.pos at each member's value and must scan
// it.
func (s *refScanner) object(member func(key []byte, keyEscaped bool) bool) bool {
	if s.depth++; s.depth > maxJSONDepth {
		return false
	}
	s.pos++ // '{'
	s.ws()
	if s.pos < len(s.data) && s.data[s.pos] == '}' {
		s.pos++
		s.depth--
		return true
	}
	for {
		if s.pos >= len(s.data) || s.data[s.pos] != '"' {
			return false
		}
		key, escaped, ok := s.str()
		if !ok {
			return false
		}
		s.ws()
		if s.pos >= len(s.data) || s.data[s.pos] != ':' {
			return false
		}
		s.pos++
		s.ws()
		if s.pos >= len(s.data) || !member(key, escaped) {
			return false
		}
		s.ws()
		if s.pos >= len(s.data) {
			return false
		}
		switch s.data[s.pos] {
		case ',':
			s.pos++
			s.ws()
		case '}':
			s.pos++
			s.depth--
			return true
		default:
			return false
		}
	}
}

// array scans an array; elem is called with s.pos at each element and must scan it.
func (s *refScanner) array(elem func() bool) bool {
	if s.depth++; s.depth > maxJSONDepth {
		return false
	}
	s.pos++ // '['
	s.ws()
	if s.pos < len(s.data) && s.data[s.pos] == ']' {
		s.pos++
		s.depth--
		return true
	}
	for {
		if s.pos >= len(s.data) || !elem() {
			return false
		}
		s.ws()
		if s.pos >= len(s.data) {
			return false
		}
		switch s.data[s.pos] {
		case ',':
			s.pos++
			s.ws()
		case ']':
			s.pos++
			s.depth--
			return true
		default:
			return false
		}
	}
}

// str scans a string and returns its raw content (between the quotes) and whether it holds
// an escape. Invalid UTF-8 is valid JSON (the decoder replaces it), so it is not checked here.
func (s *refScanner) str() (content []byte, escaped, ok bool) {
	s.pos++ // '"'
	start := s.pos
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		switch {
		case c == '"':
			content = s.data[start:s.pos]
			s.pos++
			return content, escaped, true
		case c < ' ':
			return nil, false, false
		case c == '\\':
			escaped = true
			s.pos++
			if s.pos >= len(s.data) {
				return nil, false, false
			}
			switch s.data[s.pos] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.pos++
			case 'u':
				if s.pos+4 >= len(s.data) {
					return nil, false, false
				}
				for _, h := range s.data[s.pos+1 : s.pos+5] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return nil, false, false
					}
				}
				s.pos += 5
			default:
				return nil, false, false
			}
		default:
			s.pos++
		}
	}
	return nil, false, false
}

func (s *refScanner) literal(lit string) bool {
	if len(s.data)-s.pos < len(lit) || string(s.data[s.pos:s.pos+len(lit)]) != lit {
		return false
	}
	s.pos += len(lit)
	return true
}

// number scans -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *refScanner) number() bool {
	if s.data[s.pos] == '-' {
		s.pos++
	}
	switch {
	case s.pos < len(s.data) && s.data[s.pos] == '0':
		s.pos++
	case s.digits() == 0:
		return false
	}
	if s.pos < len(s.data) && s.data[s.pos] == '.' {
		s.pos++
		if s.digits() == 0 {
			return false
		}
	}
	if s.pos < len(s.data) && (s.data[s.pos] == 'e' || s.data[s.pos] == 'E') {
		s.pos++
		if s.pos < len(s.data) && (s.data[s.pos] == '+' || s.data[s.pos] == '-') {
			s.pos++
		}
		if s.digits() == 0 {
			return false
		}
	}
	return true
}

func (s *refScanner) digits() int {
	n := 0
	for s.pos < len(s.data) && '0' <= s.data[s.pos] && s.data[s.pos] <= '9' {
		s.pos++
		n++
	}
	return n
}
