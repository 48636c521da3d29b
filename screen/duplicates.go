package screen

import (
	"bytes"
	"cmp"
	"slices"
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/gtc-dev/gtc"

	"github.com/go-json-experiment/json/jsontext"
)

// Match reasons of duplicate warnings.
const (
	MatchQuestionAndAnswer = "exact question and answer match"
	MatchQuestion          = "exact question match"
	MatchHistoryAndGeneric = "exact history and generic fields match"
	MatchHistory           = "exact history match"
	MatchGeneric           = "exact generic fields match"
)

// Limits of duplicate detection.
const (
	// DuplicateCandidateLimit is how many approved items of a dataset a draft is compared
	// with: the most recently updated ones.
	DuplicateCandidateLimit = 1000
	// DuplicateWarningLimit is the most warnings one draft gets.
	DuplicateWarningLimit = 3
)

// DuplicateWarnings compares every draft among items with the approved items of its dataset
// and returns the warnings in item order, and for one item in candidate order, at most
// DuplicateWarningLimit per item. Items whose status is not draft are skipped. The result is
// never nil, so it can be assigned to an ImportResult.
//
// candidates is called once per dataset that has a draft, and returns the approved items of
// that dataset, most recently updated first; only the first DuplicateCandidateLimit approved
// items of that dataset are used (others in the list are ignored). A candidate with the
// draft's id is never reported. Each candidate's signatures are computed once and indexed
// by value, so the work grows with drafts + candidates, not with their product. The generic
// signature, which reads every raw JSON value, is only computed for the items whose typed
// signature (below) another side shares.
func DuplicateWarnings(items []*gtc.Item, candidates func(dataset string) []*gtc.Item) []gtc.DuplicateWarning {
	var sg dupSigner
	return duplicateWarnings(items, func(dataset string) *dupIndex {
		return newDupIndex(signCandidates(dataset, candidates(dataset), &sg))
	}, &sg)
}

// duplicateWarnings is DuplicateWarnings with the index of a dataset's candidates coming
// from index, called once per dataset that has a draft.
func duplicateWarnings(items []*gtc.Item, index func(dataset string) *dupIndex, sg *dupSigner) []gtc.DuplicateWarning {
	out := []gtc.DuplicateWarning{}
	indexes := map[string]*dupIndex{}
	for _, d := range items {
		if d == nil || (d.Status != gtc.StatusDraft && d.Status != "") {
			continue
		}
		x, ok := indexes[d.DatasetName]
		if !ok {
			x = index(d.DatasetName)
			indexes[d.DatasetName] = x
		}
		out = x.check(out, d, sg)
	}
	return out
}

// dupCandidate is an approved item with its normalized signatures. They depend on the item
// alone, so a candidate can serve in the indexes of several batches (Run).
type dupCandidate struct {
	id, question string // question as shown: QuestionText, not normalized
	q, a, h      string // N(question), N(answer) (only with a question), history
	t            string // typed
	g            string // generic; computed when a draft first shares the typed signature
	gDone        bool   // g is computed
	key          string // gtc.UpdatedAtSortKey; set by Run only
	item         *gtc.Item
}

// isCandidate reports whether c can be a candidate of the drafts of dataset.
func isCandidate(c *gtc.Item, dataset string) bool {
	return c != nil && c.Status == gtc.StatusApproved && c.DatasetName == dataset
}

// signCandidate computes the signatures of c, all but the generic one.
func signCandidate(c *gtc.Item, sg *dupSigner) dupCandidate {
	dc := dupCandidate{id: c.ID, question: gtc.QuestionText(c), item: c}
	if q := sg.question(c); len(q) > 0 {
		dc.q = string(q)
		dc.a = string(sg.answer(c))
	}
	if h := sg.history(c); len(h) > 0 {
		dc.h = string(h)
	}
	dc.t = string(sg.typed(c))
	return dc
}

// signCandidates signs the first DuplicateCandidateLimit approved items of dataset among
// items, in order; the others are ignored.
func signCandidates(dataset string, items []*gtc.Item, sg *dupSigner) []*dupCandidate {
	signed := make([]dupCandidate, 0, min(len(items), DuplicateCandidateLimit))
	for _, c := range items {
		if len(signed) == DuplicateCandidateLimit {
			break
		}
		if isCandidate(c, dataset) {
			signed = append(signed, signCandidate(c, sg))
		}
	}
	out := make([]*dupCandidate, len(signed))
	for i := range signed {
		out[i] = &signed[i]
	}
	return out
}

// dupIndex holds the candidates of one dataset, and their positions by signature value
// (ascending, so the head of a list is the earliest candidate). Candidates are grouped by
// typed signature; a group's generic signatures are indexed when a draft first has its
// typed signature, since equal generic signatures imply equal typed ones.
type dupIndex struct {
	cands    []*dupCandidate
	byQ, byH map[string][]int32
	byT      map[string]int32 // position in groups
	groups   []dupGroup
}

// dupGroup is the candidates that share one typed signature.
type dupGroup struct {
	cands []int32
	byG   map[string][]int32 // nil until a draft's typed signature hits the group
}

// newDupIndex indexes signed candidates, in candidate order.
func newDupIndex(cands []*dupCandidate) *dupIndex {
	x := &dupIndex{cands: cands, byQ: map[string][]int32{}, byH: map[string][]int32{}, byT: map[string]int32{}}
	for i, dc := range cands {
		k := int32(i)
		if dc.q != "" {
			x.byQ[dc.q] = append(x.byQ[dc.q], k)
		}
		if dc.h != "" {
			x.byH[dc.h] = append(x.byH[dc.h], k)
		}
		gi, ok := x.byT[dc.t]
		if !ok {
			gi = int32(len(x.groups))
			x.groups = append(x.groups, dupGroup{})
			x.byT[dc.t] = gi
		}
		x.groups[gi].cands = append(x.groups[gi].cands, k)
	}
	return x
}

// generics returns the candidates of grp by generic signature, computing them the first
// time.
func (x *dupIndex) generics(grp *dupGroup, sg *dupSigner) map[string][]int32 {
	if grp.byG == nil {
		grp.byG = map[string][]int32{}
		for _, k := range grp.cands {
			c := x.cands[k]
			if !c.gDone {
				c.g, c.gDone = string(sg.generic(c.item)), true
			}
			if c.g != "" {
				grp.byG[c.g] = append(grp.byG[c.g], k)
			}
		}
	}
	return grp.byG
}

// check appends the warnings of draft d to out.
func (x *dupIndex) check(out []gtc.DuplicateWarning, d *gtc.Item, sg *dupSigner) []gtc.DuplicateWarning {
	// A signature no candidate has cannot match, so it is not computed; nor is the generic
	// one when no candidate has the draft's typed signature.
	var q, h, g []byte
	var lists [3][]int32
	if len(x.byQ) > 0 {
		if q = sg.question(d); len(q) > 0 {
			lists[0] = x.byQ[string(q)]
		}
	}
	if len(x.byH) > 0 {
		if h = sg.history(d); len(h) > 0 {
			lists[1] = x.byH[string(h)]
		}
	}
	// With one group, the draft's typed signature would not narrow anything down: a generic
	// signature in that group's index carries the group's typed one.
	gi, hit := int32(0), len(x.groups) == 1
	if len(x.groups) > 1 {
		gi, hit = x.byT[string(sg.typed(d))]
	}
	if hit {
		if byG := x.generics(&x.groups[gi], sg); len(byG) > 0 {
			if g = sg.generic(d); len(g) > 0 {
				lists[2] = byG[string(g)]
			}
		}
	}
	var a []byte
	answered := false
	last := int32(-1)
	for n := 0; n < DuplicateWarningLimit; {
		// The next candidate, in candidate order, that matches by any rule.
		next := int32(-1)
		for i := range lists {
			for len(lists[i]) > 0 && lists[i][0] <= last {
				lists[i] = lists[i][1:]
			}
			if len(lists[i]) > 0 && (next < 0 || lists[i][0] < next) {
				next = lists[i][0]
			}
		}
		if next < 0 {
			break
		}
		last = next
		c := x.cands[next]
		if c.id == d.ID {
			continue
		}
		var reason string
		switch {
		case len(q) > 0 && string(q) == c.q:
			if !answered {
				a, answered = sg.answer(d), true
			}
			reason = MatchQuestion
			if len(a) > 0 && string(a) == c.a {
				reason = MatchQuestionAndAnswer
			}
		case len(h) > 0 && string(h) == c.h:
			reason = MatchHistory
			// c.g is known: a candidate with the draft's generic signature has its typed
			// one, and that group's generic signatures were computed above.
			if len(g) > 0 && string(g) == c.g {
				reason = MatchHistoryAndGeneric
			}
		default:
			reason = MatchGeneric
		}
		out = append(out, gtc.DuplicateWarning{
			ItemID:            d.ID,
			DuplicateID:       c.id,
			DuplicateQuestion: c.question,
			DuplicateStatus:   string(gtc.StatusApproved),
			MatchReason:       reason,
		})
		n++
	}
	return out
}

// dupSigner computes normalized signatures into buffers it reuses; a returned slice is
// valid until the next call of the same method.
type dupSigner struct {
	qb, ab, hb, gb, tb []byte
	canon              canonWriter
}

func (sg *dupSigner) question(it *gtc.Item) []byte {
	w := normWriter{dst: sg.qb[:0]}
	w.str(gtc.QuestionText(it))
	sg.qb = w.dst
	return sg.qb
}

func (sg *dupSigner) answer(it *gtc.Item) []byte {
	w := normWriter{dst: sg.ab[:0]}
	w.str(gtc.AnswerText(it))
	sg.ab = w.dst
	return sg.ab
}

// history is N of the turns written as role:msg, joined with newlines.
func (sg *dupSigner) history(it *gtc.Item) []byte {
	w := normWriter{dst: sg.hb[:0]}
	for i := range it.History {
		if i > 0 {
			w.str("\n")
		}
		w.str(it.History[i].Role)
		w.str(":")
		w.str(it.History[i].Msg)
	}
	sg.hb = w.dst
	return sg.hb
}

// generic is N of the canonical JSON of the pruned generic fields, or empty.
func (sg *dupSigner) generic(it *gtc.Item) []byte {
	cw := &sg.canon
	cw.b.Reset()
	cw.generic(it)
	w := normWriter{dst: sg.gb[:0]}
	w.bytes(cw.b.Bytes())
	sg.gb = w.dst
	return sg.gb
}

// typed is the generic signature without the raw JSON values (metadata, tracePayload,
// contextEntries[].value, toolCalls[].arguments and .response, expectedTools lists'
// .arguments, feedback[].values, plugins.*.data), pruned the same way: N of the canonical
// JSON of the typed fields, or empty. It needs no tokenizing. Items with equal generic
// signatures have equal typed ones: the generic signature is canonical JSON, normalized
// string by string, so dropping those members from it and pruning what that empties gives
// the typed signature.
func (sg *dupSigner) typed(it *gtc.Item) []byte {
	cw := &sg.canon
	cw.b.Reset()
	cw.typedOnly = true
	cw.generic(it)
	cw.typedOnly = false
	w := normWriter{dst: sg.tb[:0]}
	w.bytes(cw.b.Bytes())
	sg.tb = w.dst
	return sg.tb
}

// normWriter appends the normalized text N(s): lower-cased, every whitespace run
// (unicode.IsSpace) collapsed to one space, nothing leading or trailing. Several writes
// normalize as one concatenated text.
type normWriter struct {
	dst   []byte
	space bool // whitespace is pending: written before the next non-space if not leading
}

func (w *normWriter) str(s string) { normAppend(w, s) }

func (w *normWriter) bytes(b []byte) { normAppend(w, b) }

func normAppend[S ~string | ~[]byte](w *normWriter, s S) {
	// ASCII output is at most one byte per input byte, plus a space pending from an earlier
	// write, so it is written by index into grown capacity.
	dst := slices.Grow(w.dst, len(s)+1)
	n := len(dst)
	dst = dst[:cap(dst)]
	space := w.space
	for i := 0; i < len(s); {
		if c := normASCII[s[i]]; c != 0 {
			i++
			if c == ' ' {
				space = true
				continue
			}
			if space {
				if n > 0 {
					dst[n] = ' '
					n++
				}
				space = false
			}
			dst[n] = c
			n++
			continue
		}
		r, size := utf8.DecodeRuneInString(string(s[i:min(i+utf8.UTFMax, len(s))]))
		i += size
		if unicode.IsSpace(r) {
			space = true
			continue
		}
		dst = dst[:n]
		if space && n > 0 {
			dst = append(dst, ' ')
		}
		space = false
		dst = utf8.AppendRune(dst, unicode.ToLower(r))
		dst = slices.Grow(dst, len(s)-i+1)
		n = len(dst)
		dst = dst[:cap(dst)]
	}
	w.dst, w.space = dst[:n], space
}

// normASCII maps an ASCII byte to its lower case, whitespace to ' ', and NUL and every
// non-ASCII byte to 0 (handled rune by rune).
var normASCII = func() (t [256]byte) {
	for c := 1; c < utf8.RuneSelf; c++ {
		switch {
		case c == ' ' || c >= '\t' && c <= '\r':
			t[c] = ' '
		case c >= 'A' && c <= 'Z':
			t[c] = byte(c + 'a' - 'A')
		default:
			t[c] = byte(c)
		}
	}
	return t
}()

// canonWriter writes canonical JSON (keys sorted, no whitespace, numbers as stored) of the
// generic fields while pruning: a value that is null, "", {} or [] once its own children are
// pruned is rolled back together with its key or its comma. false and 0 stay.
type canonWriter struct {
	b         bytes.Buffer
	typedOnly bool // raw JSON values are left out
	tape      jsonTape
	members   []tapeMember
	keys      []string
}

// canonOpen is an object or array being written; n counts the members kept.
type canonOpen struct{ start, n int }

func (w *canonWriter) open(c byte) canonOpen {
	o := canonOpen{start: w.b.Len()}
	w.b.WriteByte(c)
	return o
}

// key starts member k and returns the mark to roll back to.
func (w *canonWriter) key(o *canonOpen, k string) int {
	mark := w.b.Len()
	if o.n > 0 {
		w.b.WriteByte(',')
	}
	writeQuoted(&w.b, k)
	w.b.WriteByte(':')
	return mark
}

// keyBytes is key for a decoded key held as bytes.
func (w *canonWriter) keyBytes(o *canonOpen, k []byte) int {
	mark := w.b.Len()
	if o.n > 0 {
		w.b.WriteByte(',')
	}
	writeQuoted(&w.b, k)
	w.b.WriteByte(':')
	return mark
}

// writeQuoted writes s as a JSON string to buf: jsontext's minimal escaping, invalid UTF-8
// replaced by U+FFFD.
func writeQuoted[S ~string | ~[]byte](buf *bytes.Buffer, s S) {
	b, _ := jsontext.AppendQuote(buf.AvailableBuffer(), s)
	buf.Write(b)
}

// elem starts an array element and returns the mark to roll back to.
func (w *canonWriter) elem(o *canonOpen) int {
	mark := w.b.Len()
	if o.n > 0 {
		w.b.WriteByte(',')
	}
	return mark
}

func (w *canonWriter) done(o *canonOpen, mark int, kept bool) {
	if kept {
		o.n++
	} else {
		w.b.Truncate(mark)
	}
}

func (w *canonWriter) close(o *canonOpen, c byte) bool {
	if o.n == 0 {
		w.b.Truncate(o.start)
		return false
	}
	w.b.WriteByte(c)
	return true
}

func (w *canonWriter) str(s string) bool {
	if s == "" {
		return false
	}
	writeQuoted(&w.b, s)
	return true
}

func (w *canonWriter) strPtr(s *string) bool { return s != nil && w.str(*s) }

func (w *canonWriter) strMember(o *canonOpen, k, s string) {
	if s != "" {
		w.done(o, w.key(o, k), w.str(s))
	}
}

func (w *canonWriter) rawMember(o *canonOpen, k string, v []byte) {
	if w.typedOnly || len(v) == 0 || !w.tape.parse(v) {
		return // null, or not JSON: nothing to keep
	}
	w.done(o, w.key(o, k), w.raw(0))
}

// raw writes the value of token k of the tape; it reports false, having written nothing,
// when the value prunes away.
func (w *canonWriter) raw(k int32) bool {
	t := &w.tape
	switch tk := t.toks[k]; tk.kind {
	case 'n':
		return false
	case '"':
		if tk.end-tk.start == 2 {
			return false
		}
		if v := t.raw(k); !tk.esc && utf8.Valid(v) {
			w.b.Write(v) // already what AppendQuote would produce
			return true
		}
		return w.str(t.str(k))
	case '{':
		base := len(w.members)
		w.members = t.appendMembers(w.members, k)
		end := len(w.members)
		o := w.open('{')
		for i := base; i < end; i++ {
			m := w.members[i] // a copy: deeper objects may grow w.members
			w.done(&o, w.keyBytes(&o, m.key), w.raw(m.val))
		}
		clear(w.members[base:end])
		w.members = w.members[:base]
		return w.close(&o, '}')
	case '[':
		o := w.open('[')
		for j := k + 1; j < tk.next; j = t.toks[j].next {
			w.done(&o, w.elem(&o), w.raw(j))
		}
		return w.close(&o, ']')
	default: // true, false, a number: copied as stored
		w.b.Write(t.raw(k))
		return true
	}
}

// generic writes {contextEntries, expectedTools, feedback, metadata, plugins, scenarioId,
// toolCalls, traceIds, tracePayload} (keys in sorted order, as every object below) pruned.
func (w *canonWriter) generic(it *gtc.Item) bool {
	top := w.open('{')

	mark := w.key(&top, "contextEntries")
	arr := w.open('[')
	for i := range it.ContextEntries {
		ce := &it.ContextEntries[i]
		em := w.elem(&arr)
		o := w.open('{')
		w.strMember(&o, "key", ce.Key)
		w.rawMember(&o, "value", ce.Value)
		w.done(&arr, em, w.close(&o, '}'))
	}
	w.done(&top, mark, w.close(&arr, ']'))

	mark = w.key(&top, "expectedTools")
	et := w.open('{')
	w.done(&et, w.key(&et, "notNeeded"), w.expectations(it.ExpectedTools.NotNeeded))
	w.done(&et, w.key(&et, "optional"), w.expectations(it.ExpectedTools.Optional))
	w.done(&et, w.key(&et, "required"), w.expectations(it.ExpectedTools.Required))
	w.done(&top, mark, w.close(&et, '}'))

	mark = w.key(&top, "feedback")
	arr = w.open('[')
	for i := range it.Feedback {
		f := &it.Feedback[i]
		em := w.elem(&arr)
		o := w.open('{')
		w.strMember(&o, "source", f.Source)
		w.rawMember(&o, "values", f.Values)
		w.done(&arr, em, w.close(&o, '}'))
	}
	w.done(&top, mark, w.close(&arr, ']'))

	w.rawMember(&top, "metadata", it.Metadata)

	mark = w.key(&top, "plugins")
	po := w.open('{')
	w.keys = appendSortedKeys(w.keys[:0], it.Plugins)
	for _, slot := range w.keys {
		p := it.Plugins[slot]
		sm := w.key(&po, slot)
		o := w.open('{')
		w.rawMember(&o, "data", p.Data)
		w.strMember(&o, "kind", p.Kind)
		w.strMember(&o, "version", cmp.Or(p.Version, "1.0"))
		w.done(&po, sm, w.close(&o, '}'))
	}
	w.done(&top, mark, w.close(&po, '}'))

	w.strMember(&top, "scenarioId", it.ScenarioID)

	mark = w.key(&top, "toolCalls")
	arr = w.open('[')
	for i := range it.ToolCalls {
		tc := &it.ToolCalls[i]
		em := w.elem(&arr)
		o := w.open('{')
		w.done(&o, w.key(&o, "agent"), w.strPtr(tc.Agent))
		w.rawMember(&o, "arguments", tc.Arguments)
		w.strMember(&o, "callType", cmp.Or(tc.CallType, "tool"))
		w.strMember(&o, "id", tc.ID)
		w.strMember(&o, "name", tc.Name)
		w.done(&o, w.key(&o, "parallelGroup"), w.strPtr(tc.ParallelGroup))
		w.done(&o, w.key(&o, "parentCallId"), w.strPtr(tc.ParentCallID))
		w.rawMember(&o, "response", tc.Response)
		if tc.StepNumber != nil {
			w.key(&o, "stepNumber")
			w.b.WriteString(strconv.FormatInt(*tc.StepNumber, 10))
			o.n++
		}
		w.done(&arr, em, w.close(&o, '}'))
	}
	w.done(&top, mark, w.close(&arr, ']'))

	mark = w.key(&top, "traceIds")
	to := w.open('{')
	w.keys = appendSortedKeys(w.keys[:0], it.TraceIDs)
	for _, k := range w.keys {
		w.strMember(&to, k, it.TraceIDs[k])
	}
	w.done(&top, mark, w.close(&to, '}'))

	w.rawMember(&top, "tracePayload", it.TracePayload)
	return w.close(&top, '}')
}

func (w *canonWriter) expectations(list []gtc.ToolExpectation) bool {
	arr := w.open('[')
	for i := range list {
		em := w.elem(&arr)
		o := w.open('{')
		w.rawMember(&o, "arguments", list[i].Arguments)
		w.strMember(&o, "name", list[i].Name)
		w.done(&arr, em, w.close(&o, '}'))
	}
	return w.close(&arr, ']')
}

// appendSortedKeys appends the keys of m to dst, sorted.
func appendSortedKeys[V any](dst []string, m map[string]V) []string {
	for k := range m {
		dst = append(dst, k)
	}
	slices.Sort(dst)
	return dst
}
