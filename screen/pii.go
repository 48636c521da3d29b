package screen

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"github.com/gtc-dev/gtc"

	"github.com/go-json-experiment/json/jsontext"
)

// PII pattern types reported in PIIWarning.PatternType.
const (
	PIIPatternEmail = "email"
	PIIPatternPhone = "phone"
)

// piiSnippetWindow is how many code points of context a snippet shows on each side.
const piiSnippetWindow = 20

// PIIWarnings scans the texts of an item for e-mail addresses and US phone numbers and
// returns one warning per match: fields in the order scanned below, and within one field
// every e-mail hit before every phone hit. It returns nil when nothing is found.
//
// The patterns need look-around for their word boundaries, which RE2 lacks; the scanners
// below reproduce an RE2 construction of them exactly (pii_test.go spells it out and checks
// them against it on random input) without a regexp run, and every text is first tested for
// an `@` or ten ASCII digits so the common text costs one pass and no allocation.
func PIIWarnings(it *gtc.Item) []gtc.PIIWarning {
	s := piiScanners.Get().(*piiScanner)
	defer s.release()
	s.id = it.ID
	if q := gtc.QuestionText(it); q != "" {
		s.scan(q, "history.question")
	}
	if a := gtc.AnswerText(it); a != "" {
		s.scan(a, "history.answer")
	}
	if it.Comment != "" {
		s.scan(it.Comment, "comment")
	}
	for i := range it.History {
		if m := it.History[i].Msg; piiMaybeText(m) {
			s.at("history", i, ".msg")
			s.scan(m, "")
		}
	}
	if it.ScenarioID != "" {
		s.scan(it.ScenarioID, "scenarioId")
	}
	// Typed objects in the field order of their item.go types, null members skipped.
	for i := range it.ContextEntries {
		ce := &it.ContextEntries[i]
		s.str(ce.Key, "contextEntries", i, ".key")
		s.raw(ce.Value, "contextEntries", i, ".value")
	}
	for i := range it.ToolCalls {
		tc := &it.ToolCalls[i]
		s.str(tc.ID, "toolCalls", i, ".id")
		s.str(tc.Name, "toolCalls", i, ".name")
		s.str(tc.CallType, "toolCalls", i, ".callType")
		s.raw(tc.Arguments, "toolCalls", i, ".arguments")
		s.strPtr(tc.Agent, "toolCalls", i, ".agent")
		s.strPtr(tc.ParallelGroup, "toolCalls", i, ".parallelGroup")
		s.strPtr(tc.ParentCallID, "toolCalls", i, ".parentCallId")
		s.raw(tc.Response, "toolCalls", i, ".response")
	}
	for _, l := range [3]struct {
		path string
		list []gtc.ToolExpectation
	}{
		{"expectedTools.required", it.ExpectedTools.Required},
		{"expectedTools.optional", it.ExpectedTools.Optional},
		{"expectedTools.notNeeded", it.ExpectedTools.NotNeeded},
	} {
		for i := range l.list {
			s.str(l.list[i].Name, l.path, i, ".name")
			s.raw(l.list[i].Arguments, l.path, i, ".arguments")
		}
	}
	for i := range it.Feedback {
		s.str(it.Feedback[i].Source, "feedback", i, ".source")
		s.raw(it.Feedback[i].Values, "feedback", i, ".values")
	}
	s.raw(it.Metadata, "metadata", -1, "")
	var kb [8]string
	for _, slot := range appendSortedKeys(kb[:0], it.Plugins) {
		p := it.Plugins[slot]
		s.member("plugins", slot, ".kind", p.Kind, nil)
		s.member("plugins", slot, ".version", p.Version, nil)
		s.member("plugins", slot, ".data", "", p.Data)
	}
	for _, k := range appendSortedKeys(kb[:0], it.TraceIDs) {
		s.member("traceIds", k, "", it.TraceIDs[k], nil)
	}
	s.raw(it.TracePayload, "tracePayload", -1, "")
	return s.out
}

// piiScanners keeps scanners, so their path and member buffers are reused across items.
var piiScanners = sync.Pool{New: func() any { return new(piiScanner) }}

// release returns the scanner to the pool without references to the item (the member
// buffer is cleared after every object).
func (s *piiScanner) release() {
	s.id, s.out, s.path, s.tape.doc = "", nil, s.path[:0], nil
	piiScanners.Put(s)
}

// piiScanner collects the warnings of one item. path holds the label of the value being
// scanned; it is only built once a value has passed the cheap prefilter.
type piiScanner struct {
	id      string
	out     []gtc.PIIWarning
	path    []byte
	tape    jsonTape
	members []tapeMember
}

// at sets the path to list[i]member, or to list member when i < 0.
func (s *piiScanner) at(list string, i int, member string) {
	s.path = append(s.path[:0], list...)
	if i >= 0 {
		s.path = append(strconv.AppendInt(append(s.path, '['), int64(i), 10), ']')
	}
	s.path = append(s.path, member...)
}

func (s *piiScanner) str(t, list string, i int, member string) {
	if piiMaybeText(t) {
		s.at(list, i, member)
		s.scan(t, "")
	}
}

func (s *piiScanner) strPtr(t *string, list string, i int, member string) {
	if t != nil {
		s.str(*t, list, i, member)
	}
}

func (s *piiScanner) raw(v json.RawMessage, list string, i int, member string) {
	if len(v) > 0 && piiMaybeRaw(v) && s.tape.parse(v) {
		s.at(list, i, member)
		s.walk(0)
	}
}

// member scans the string t, or the raw value v when it is non-nil, at map.key+suffix.
func (s *piiScanner) member(m, key, suffix, t string, v json.RawMessage) {
	if v != nil {
		if len(v) == 0 || !piiMaybeRaw(v) || !s.tape.parse(v) {
			return
		}
	} else if !piiMaybeText(t) {
		return
	}
	s.path = append(append(append(append(s.path[:0], m...), '.'), key...), suffix...)
	if v != nil {
		s.walk(0)
	} else {
		s.scan(t, "")
	}
}

// walk scans every string of the indexed value under token k: free-form objects in sorted
// key order, arrays by index. Subtrees the tokenizer found nothing in are skipped.
func (s *piiScanner) walk(k int32) {
	t := &s.tape
	tk := t.toks[k]
	if !tk.pii {
		return
	}
	n := len(s.path)
	switch tk.kind {
	case '"':
		s.scan(t.str(k), "")
	case '{':
		base := len(s.members)
		s.members = t.appendMembers(s.members, k)
		end := len(s.members)
		for i := base; i < end; i++ {
			m := s.members[i] // a copy: deeper objects may grow s.members
			if t.toks[m.val].pii {
				s.path = append(append(s.path[:n], '.'), m.key...)
				s.walk(m.val)
			}
		}
		clear(s.members[base:end])
		s.members = s.members[:base]
	case '[':
		i := 0
		for j := k + 1; j < tk.next; j = t.toks[j].next {
			if t.toks[j].pii {
				s.path = append(strconv.AppendInt(append(s.path[:n], '['), int64(i), 10), ']')
				s.walk(j)
			}
			i++
		}
	}
	s.path = s.path[:n]
}

// scan reports the matches in t under label (the current path when label is "").
func (s *piiScanner) scan(t, label string) {
	email, phone := piiMaybe(t)
	if email {
		for p := 0; ; {
			start, end := nextEmail(t, p)
			if start < 0 {
				break
			}
			s.emit(label, PIIPatternEmail, t, start, end, maskEmail(t[start:end]))
			p = end
		}
	}
	if phone {
		for p := 0; ; {
			start, end := nextPhone(t, p)
			if start < 0 {
				break
			}
			s.emit(label, PIIPatternPhone, t, start, end, maskPhone(t[start:end]))
			p = end
		}
	}
}

func (s *piiScanner) emit(label, kind, t string, start, end int, masked string) {
	if label == "" {
		label = string(s.path)
	}
	s.out = append(s.out, gtc.PIIWarning{
		ItemID:      s.id,
		Field:       label,
		PatternType: kind,
		Snippet:     piiSnippet(t, start, end, masked),
		Position:    utf8.RuneCountInString(t[:start]),
	})
}

// piiSnippet frames the masked match with up to 20 code points of context on each side.
func piiSnippet(t string, start, end int, masked string) string {
	b := start
	for k := 0; k < piiSnippetWindow && b > 0; k++ {
		_, n := utf8.DecodeLastRuneInString(t[:b])
		b -= n
	}
	before := t[b:start]
	if b > 0 {
		before = "..." + strings.TrimLeftFunc(before, unicode.IsSpace)
	}
	a := end
	for k := 0; k < piiSnippetWindow && a < len(t); k++ {
		_, n := utf8.DecodeRuneInString(t[a:])
		a += n
	}
	after := t[end:a]
	if a < len(t) {
		after = strings.TrimRightFunc(after, unicode.IsSpace) + "..."
	}
	return before + "[" + masked + "]" + after
}

// maskEmail keeps the first character of the local part and of the domain name, the last
// character of a domain name of two or more characters, and the TLD (after the last dot).
func maskEmail(m string) string {
	at := strings.IndexByte(m, '@')
	local, domain := m[:at], m[at+1:]
	dot := strings.LastIndexByte(domain, '.')
	name, tld := domain[:dot], domain[dot+1:]
	var b strings.Builder
	b.Grow(len(m) + 6)
	b.WriteString(local[:1])
	b.WriteString("***@")
	if len(name) >= 2 {
		b.WriteString(name[:1])
		b.WriteString("***")
		b.WriteString(name[len(name)-1:])
	} else {
		b.WriteString("***")
	}
	b.WriteByte('.')
	b.WriteString(tld)
	return b.String()
}

// maskPhone keeps the first digit and every non-digit, and stars every later digit.
func maskPhone(m string) string {
	b := []byte(m)
	seen := false
	for i, c := range b {
		if c >= '0' && c <= '9' {
			if seen {
				b[i] = '*'
			}
			seen = true
		}
	}
	return string(b)
}

// Character classes of the patterns, all ASCII (the matches are ASCII; any other byte,
// including those of multi-byte runes, is outside every class, as in the RE2 construction).
const (
	clsWord        uint8 = 1 << iota // [A-Za-z0-9_]: may not touch either end of a match
	clsLetter                        // [A-Za-z]
	clsDigit                         // [0-9]
	clsEmailLocal                    // [A-Za-z0-9._%+-]: local part, and what may not precede an e-mail
	clsEmailDomain                   // [A-Za-z0-9.-]
	clsPhoneSep                      // [-. \t\n\r\f\v]
	clsPhoneBlock                    // [A-Za-z0-9_+(]: what may not precede a phone number
)

var piiClass = func() (t [256]uint8) {
	for c := 0; c < 256; c++ {
		var k uint8
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		digit := c >= '0' && c <= '9'
		if letter {
			k |= clsLetter
		}
		if digit {
			k |= clsDigit
		}
		if letter || digit || c == '_' {
			k |= clsWord | clsPhoneBlock
		}
		if letter || digit || strings.IndexByte("._%+-", byte(c)) >= 0 {
			k |= clsEmailLocal
		}
		if letter || digit || c == '.' || c == '-' {
			k |= clsEmailDomain
		}
		if strings.IndexByte("-. \t\n\r\f\v", byte(c)) >= 0 {
			k |= clsPhoneSep
		}
		if c == '+' || c == '(' {
			k |= clsPhoneBlock
		}
		t[c] = k
	}
	return t
}()

func piiIs(c byte, cls uint8) bool { return piiClass[c]&cls != 0 }

// piiMaybe reports whether t could hold an e-mail (an `@` after the first byte) and a phone
// number (at least ten ASCII digits).
func piiMaybe(t string) (email, phone bool) {
	at := strings.IndexByte(t, '@') // IndexByte is vectorized; LastIndexByte is not
	email = at > 0 || at == 0 && strings.IndexByte(t[1:], '@') >= 0
	digits := 0
	for i := 0; i < len(t); i++ {
		if t[i]-'0' < 10 {
			if digits++; digits == 10 {
				return email, true
			}
		}
	}
	return email, false
}

func piiMaybeText(t string) bool {
	e, p := piiMaybe(t)
	return e || p
}

// piiMaybeRaw reports whether a string of the raw JSON value v may hold a match, so that
// only such values are tokenized.
//
// Without a backslash, a valid value's quotes pair up as the bounds of its strings (a quote
// inside a string would be escaped), and each string is the bytes between its two quotes, so
// the scanners run over those bytes decide, keys included; a value that is not JSON gives no
// warnings whatever this says. With a backslash an escape may hide an `@`, a digit or a
// separator, so only the counting test of piiMaybe over all of v applies, and a \u escape
// lets the value through.
func piiMaybeRaw(v []byte) bool {
	t := unsafe.String(unsafe.SliceData(v), len(v)) // read only, during this call
	if strings.IndexByte(t, '\\') >= 0 {
		email, phone := piiMaybe(t)
		return email || phone || strings.Contains(t, `\u`)
	}
	// One pass splits v at its quotes and runs the scanners over the strings that have an
	// `@` or ten digits (counted as in piiMaybe; the scanners check the `@` themselves).
	str, at, digits, start := false, false, 0, 0
	for i := 0; i < len(t); i++ {
		k := piiRawClass[t[i]]
		digits += int(k & rawDigit)
		switch k {
		case rawQuote:
			if str && (at || digits >= 10) && piiFinds(t[start:i]) {
				return true
			}
			str, at, digits, start = !str, false, 0, i+1
		case rawAt:
			at = true
		}
	}
	return false
}

// Bytes piiMaybeRaw looks for.
const (
	rawDigit uint8 = 1 // 1, so that it adds to a count
	rawQuote uint8 = 2
	rawAt    uint8 = 4
)

var piiRawClass = func() (t [256]uint8) {
	for c := '0'; c <= '9'; c++ {
		t[c] = rawDigit
	}
	t['"'], t['@'] = rawQuote, rawAt
	return t
}()

// piiFinds reports whether t holds an e-mail address or a phone number.
func piiFinds(t string) bool {
	email, phone := piiMaybe(t)
	if email {
		if start, _ := nextEmail(t, 0); start >= 0 {
			return true
		}
	}
	if phone {
		if start, _ := nextPhone(t, 0); start >= 0 {
			return true
		}
	}
	return false
}

// nextEmail finds the first e-mail match starting at or after byte from, where from is 0 or
// the end of the previous match. It returns -1, -1 when there is none.
//
// Why this equals the RE2 construction: the local part cannot contain `@`, and the
// character before a match may not be in the local-part class, so for each `@` the only
// possible start is the beginning of the maximal local-part run before it, and it must not
// lie before from (resuming with `[^L]` on text[from-1:] puts the boundary character at
// from-1 or later). After the `@`, the greedy domain part backtracks from the end of the
// maximal domain run to the last `.` whose maximal letter run that follows is at least two
// long and is followed by a non-word character or the end: a shorter TLD would end before
// a letter, which the trailing boundary refuses.
func nextEmail(t string, from int) (start, end int) {
	for i := from; i < len(t); {
		k := strings.IndexByte(t[i:], '@')
		if k < 0 {
			break
		}
		at := i + k
		s := at
		for s > 0 && piiIs(t[s-1], clsEmailLocal) {
			s--
		}
		if s < at && s >= from {
			j := at + 1
			for j < len(t) && piiIs(t[j], clsEmailDomain) {
				j++
			}
			for q := j - 1; q >= at+2; q-- {
				if t[q] != '.' {
					continue
				}
				e := q + 1
				for e < len(t) && piiIs(t[e], clsLetter) {
					e++
				}
				if e-q-1 >= 2 && (e == len(t) || !piiIs(t[e], clsWord)) {
					return s, e
				}
			}
		}
		i = at + 1
	}
	return -1, -1
}

// nextPhone finds the first phone match starting at or after byte from (0, or the end of the
// previous match). It returns -1, -1 when there is none. Starts are tried left to right, and
// at each start the alternatives in the order RE2's leftmost-first semantics prefers them, so
// the first success is the match RE2 reports.
func nextPhone(t string, from int) (start, end int) {
	for s := from; s < len(t); s++ {
		c := t[s]
		if !piiIs(c, clsDigit) && c != '+' && c != '(' {
			continue
		}
		if s > 0 && piiIs(t[s-1], clsPhoneBlock) {
			continue
		}
		if e := phoneAt(t, s); e >= 0 {
			return s, e
		}
	}
	return -1, -1
}

// phoneAt matches `(?:\+?1[sep]?)?` + the rest at s, greedy choices first.
func phoneAt(t string, s int) int {
	j := s
	if t[j] == '+' {
		j++
		if j >= len(t) || t[j] != '1' {
			return -1 // neither the prefix nor the rest can start with '+'
		}
	}
	if t[j] == '1' {
		j++
		if j < len(t) && piiIs(t[j], clsPhoneSep) {
			if e := phoneRest(t, j+1); e >= 0 {
				return e
			}
		}
		if e := phoneRest(t, j); e >= 0 {
			return e
		}
		if t[s] == '+' {
			return -1 // without the prefix the rest would have to start with '+'
		}
	}
	return phoneRest(t, s)
}

// phoneRest matches `\(?[0-9]{3}\)?[sep]?[0-9]{3}[sep]?[0-9]{4}` and the trailing boundary
// at i, trying each optional part present before absent; it returns the end or -1.
func phoneRest(t string, i int) int {
	for _, lp := range [2]bool{true, false} {
		j := i
		if lp {
			if j >= len(t) || t[j] != '(' {
				continue
			}
			j++
		}
		if !piiDigits(t, j, 3) {
			continue
		}
		j += 3
		for _, rp := range [2]bool{true, false} {
			k := j
			if rp {
				if k >= len(t) || t[k] != ')' {
					continue
				}
				k++
			}
			for _, s1 := range [2]bool{true, false} {
				m := k
				if s1 {
					if m >= len(t) || !piiIs(t[m], clsPhoneSep) {
						continue
					}
					m++
				}
				if !piiDigits(t, m, 3) {
					continue
				}
				m += 3
				for _, s2 := range [2]bool{true, false} {
					n := m
					if s2 {
						if n >= len(t) || !piiIs(t[n], clsPhoneSep) {
							continue
						}
						n++
					}
					if !piiDigits(t, n, 4) {
						continue
					}
					n += 4
					if n == len(t) || !piiIs(t[n], clsWord) {
						return n
					}
				}
			}
		}
	}
	return -1
}

func piiDigits(t string, i, n int) bool {
	if i+n > len(t) {
		return false
	}
	for k := i; k < i+n; k++ {
		if !piiIs(t[k], clsDigit) {
			return false
		}
	}
	return true
}

// --- a flat index of a raw JSON value, shared with the duplicate signatures ---------------

// jsonTape indexes one raw JSON value, read by a jsontext.Decoder in a single pass, so
// walking it in sorted key order neither re-reads nested values nor allocates: every value
// is a token with its byte range in the document and the index of the token after its
// subtree. An object's tokens are its members, each a key (a string token) followed by the
// value's tokens. The tape and its decoder are reused between values.
type jsonTape struct {
	doc  []byte
	toks []tapeTok
	src  bytes.Buffer // doc, which the decoder reads without a copy
	dec  jsontext.Decoder
	buf  []byte // scratch for unquoting
}

type tapeTok struct {
	start, end int32 // byte range of the value; strings and keys with their quotes
	next       int32 // index of the first token after this value's subtree
	kind       byte  // '{', '[', '"', 'n', 't', 'f', or '0' for a number
	esc        bool  // a string with a backslash escape
	pii        bool  // a string, or a subtree with a string, that may hold PII (piiMaybe; keys excluded)
}

// tapeMember is one member of an object on the tape: the decoded key and the value's token.
type tapeMember struct {
	key []byte // a slice of the document unless the key has escapes
	val int32
}

// tapeOptions accept what encoding/json accepts: a repeated key (the walks keep its last
// value, as the request parser does) and invalid UTF-8 inside strings.
var tapeOptions = []jsontext.Options{jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)}

// parse indexes doc, which must hold exactly one JSON value (whitespace around it is
// allowed). It reports false for anything else; the tape is then empty.
func (t *jsonTape) parse(doc []byte) bool {
	t.doc, t.toks = doc, t.toks[:0]
	if len(doc) > 1<<31-1 {
		return false
	}
	t.src = *bytes.NewBuffer(doc)
	t.dec.Reset(&t.src, tapeOptions...)
	ok := t.value()
	if ok {
		_, err := t.dec.ReadToken()
		ok = err == io.EOF
	}
	t.src = bytes.Buffer{}
	t.dec.Reset(&t.src) // drop the decoder's reference to doc
	if !ok {
		t.toks = t.toks[:0]
	}
	return ok
}

// value appends the tokens of the next value of the decoder.
func (t *jsonTape) value() bool {
	k := len(t.toks)
	t.toks = append(t.toks, tapeTok{})
	switch kind := t.dec.PeekKind(); kind {
	case '{', '[':
		if _, err := t.dec.ReadToken(); err != nil {
			return false
		}
		t.toks[k].kind, t.toks[k].start = byte(kind), int32(t.dec.InputOffset()-1)
		for t.dec.PeekKind() != kind+2 { // '}' is '{'+2, ']' is '['+2
			if kind == '{' && !t.value() { // the key
				return false
			}
			v := len(t.toks)
			if !t.value() {
				return false
			}
			t.toks[k].pii = t.toks[k].pii || t.toks[v].pii
		}
		if _, err := t.dec.ReadToken(); err != nil {
			return false
		}
	case 0:
		return false
	default:
		v, err := t.dec.ReadValue()
		if err != nil {
			return false
		}
		t.toks[k].start = int32(t.dec.InputOffset()) - int32(len(v))
		switch kind {
		case '"':
			t.toks[k].kind = '"'
			if t.toks[k].esc = bytes.IndexByte(v, '\\') >= 0; t.toks[k].esc {
				t.buf, _ = jsontext.AppendUnquote(t.buf[:0], v)
				t.toks[k].pii = piiMaybeBytes(t.buf)
			} else {
				t.toks[k].pii = piiMaybeBytes(v[1 : len(v)-1])
			}
		case '0':
			t.toks[k].kind = '0'
		default: // 'n', 't', 'f'
			t.toks[k].kind = byte(kind)
		}
	}
	t.toks[k].end, t.toks[k].next = int32(t.dec.InputOffset()), int32(len(t.toks))
	return true
}

// piiMaybeBytes is piiMaybe for a decoded string held as bytes.
func piiMaybeBytes(b []byte) bool {
	if bytes.IndexByte(b, '@') >= 0 {
		return true
	}
	digits := 0
	for _, c := range b {
		if c-'0' < 10 {
			if digits++; digits == 10 {
				return true
			}
		}
	}
	return false
}

// raw is the bytes of token k.
func (t *jsonTape) raw(k int32) []byte { return t.doc[t.toks[k].start:t.toks[k].end] }

// str decodes the string token k.
func (t *jsonTape) str(k int32) string {
	if !t.toks[k].esc {
		return string(t.doc[t.toks[k].start+1 : t.toks[k].end-1])
	}
	b, _ := jsontext.AppendUnquote(nil, t.raw(k))
	return string(b)
}

// strBytes is str without a copy when the string has no escapes.
func (t *jsonTape) strBytes(k int32) []byte {
	if !t.toks[k].esc {
		return t.doc[t.toks[k].start+1 : t.toks[k].end-1]
	}
	b, _ := jsontext.AppendUnquote(nil, t.raw(k))
	return b
}

// appendMembers appends the members of object token k to dst in sorted key order (byte
// order, as sort.Strings). Of a repeated key only the last value is kept, as the request
// parser does.
func (t *jsonTape) appendMembers(dst []tapeMember, k int32) []tapeMember {
	base := len(dst)
	for j := k + 1; j < t.toks[k].next; j = t.toks[j+1].next {
		dst = append(dst, tapeMember{key: t.strBytes(j), val: j + 1})
	}
	ms := dst[base:]
	if !slices.IsSortedFunc(ms, compareTapeMembers) {
		slices.SortStableFunc(ms, compareTapeMembers)
	}
	out := dst[:base]
	for i := range ms {
		if i+1 < len(ms) && bytes.Equal(ms[i+1].key, ms[i].key) {
			continue
		}
		out = append(out, ms[i])
	}
	clear(dst[len(out):])
	return out
}

func compareTapeMembers(a, b tapeMember) int { return bytes.Compare(a.key, b.key) }
