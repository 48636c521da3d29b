package gtc

import (
	"unicode/utf16"
	"unicode/utf8"
)

// UnquoteJSONString decodes the JSON string whose opening quote is b[i]. It returns the
// string and the index just past the closing quote; on malformed input it returns the index
// of the problem and a message saying what it is. As encoding/json does, invalid UTF-8 and a
// lone surrogate escape become U+FFFD. The stored-document reader and the export decoder
// read strings through it.
func UnquoteJSONString(b []byte, i int) (s string, end int, problem string) {
	i++ // the opening quote
	start := i
	for i < len(b) {
		c := b[i]
		if c == '"' {
			return string(b[start:i]), i + 1, ""
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			break
		}
		i++
	}
	buf := make([]byte, 0, i-start+16)
	buf = append(buf, b[start:i]...)
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			return string(buf), i + 1, ""
		case c < 0x20:
			return "", i, "control character in a string"
		case c == '\\':
			r, next, problem, at := decodeEscape(b, i)
			if problem != "" {
				return "", at, problem
			}
			buf = utf8.AppendRune(buf, r)
			i = next
		case c < utf8.RuneSelf:
			buf = append(buf, c)
			i++
		default:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				buf = utf8.AppendRune(buf, utf8.RuneError)
			} else {
				buf = append(buf, b[i:i+size]...)
			}
			i += size
		}
	}
	return "", i, "unexpected end of input in a string"
}

// decodeEscape decodes the escape whose backslash is b[i]: the rune it stands for and the
// index after it. A \u escape of a UTF-16 surrogate takes the low half that follows it when
// the two make a pair; a lone surrogate stands for U+FFFD. On malformed input it returns the
// problem and the index it is at.
func decodeEscape(b []byte, i int) (r rune, next int, problem string, at int) {
	if i+1 >= len(b) {
		return 0, 0, "unexpected end of input in a string", i
	}
	e := b[i+1]
	i += 2
	switch e {
	case '"', '\\', '/':
		return rune(e), i, "", 0
	case 'b':
		return '\b', i, "", 0
	case 'f':
		return '\f', i, "", 0
	case 'n':
		return '\n', i, "", 0
	case 'r':
		return '\r', i, "", 0
	case 't':
		return '\t', i, "", 0
	case 'u':
		r, ok := hex4(b, i)
		if !ok {
			return 0, 0, "invalid \\u escape", i
		}
		i += 4
		if utf16.IsSurrogate(r) {
			// A valid pair combines; a lone surrogate becomes U+FFFD.
			if i+1 < len(b) && b[i] == '\\' && b[i+1] == 'u' {
				if lo, ok := hex4(b, i+2); ok {
					if pair := utf16.DecodeRune(r, lo); pair != utf8.RuneError {
						return pair, i + 6, "", 0
					}
				}
			}
			return utf8.RuneError, i, "", 0
		}
		return r, i, "", 0
	default:
		return 0, 0, "invalid escape in a string", i - 1
	}
}

// hex4 reads four hex digits at b[i:].
func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r*16 + rune(c)
	}
	return r, true
}
