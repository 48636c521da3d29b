package screen

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
)

type piiHit struct {
	kind, snippet string
	pos           int
}

func piiHits(ws []gtc.PIIWarning) []piiHit {
	out := []piiHit{}
	for _, w := range ws {
		out = append(out, piiHit{w.PatternType, w.Snippet, w.Position})
	}
	return out
}

func piiFields(ws []gtc.PIIWarning) []string {
	out := []string{}
	for _, w := range ws {
		out = append(out, w.Field+" "+w.PatternType)
	}
	return out
}

func commentItem(text string) *gtc.Item {
	it := gtc.NewItem("ds", "item-1")
	it.Comment = text
	return it
}

// Worked examples of the PII patterns, each scanned as the item's comment.
func TestPIIExamples(t *testing.T) {
	email := func(snippet string, pos int) piiHit { return piiHit{PIIPatternEmail, snippet, pos} }
	phone := func(snippet string, pos int) piiHit { return piiHit{PIIPatternPhone, snippet, pos} }
	cases := []struct {
		text string
		want []piiHit
	}{
		{"Contact me at bob@example.com", []piiHit{email("Contact me at [b***@e***e.com]", 14)}},
		{"Please reach out to our support lead at jane.doe@contoso.com for any questions you have.",
			[]piiHit{email("...our support lead at [j***@c***o.com] for any questions y...", 40)}},
		{"Café: bob@example.com", []piiHit{email("Café: [b***@e***e.com]", 6)}},
		{"mail a@b.co.uk today", []piiHit{email("mail [a***@b***o.uk] today", 5)}},
		{"x@y.io", []piiHit{email("[x***@***.io]", 0)}},
		{"a@b.cd,c@d.ef", []piiHit{email("[a***@***.cd],c@d.ef", 0), email("a@b.cd,[c***@***.ef]", 7)}},
		{"bob@example.com.", []piiHit{email("[b***@e***e.com].", 0)}},
		{"bob@example.com1", nil},
		{"bob@example.com_x", nil},
		{"user@domain", nil},
		{"Call (555) 123-4567 now", []piiHit{phone("Call [(5**) ***-****] now", 5)}},
		{"(555) 123-4567", []piiHit{phone("[(5**) ***-****]", 0)}},
		{"555-123-4567", []piiHit{phone("[5**-***-****]", 0)}},
		{"555.123.4567", []piiHit{phone("[5**.***.****]", 0)}},
		{"555 123 4567", []piiHit{phone("[5** *** ****]", 0)}},
		{"+1 555 123 4567", []piiHit{phone("[+1 *** *** ****]", 0)}},
		{"+1-555-123-4567", []piiHit{phone("[+1-***-***-****]", 0)}},
		{"1-555-123-4567", []piiHit{phone("[1-***-***-****]", 0)}},
		{"5551234567", []piiHit{phone("[5*********]", 0)}},
		{"tel:+1 555 123 4567", []piiHit{phone("tel:[+1 *** *** ****]", 4)}},
		{"555-123-4567 555-123-4568", []piiHit{phone("[5**-***-****] 555-123-4568", 0), phone("555-123-4567 [5**-***-****]", 13)}},
		{"call 555-123-4567 or mail bob@example.com", []piiHit{
			email("...55-123-4567 or mail [b***@e***e.com]", 26),
			phone("call [5**-***-****] or mail bob@example...", 5),
		}},
		{"ts=1771405020", []piiHit{phone("ts=[1*********]", 3)}}, // known limit
		{"order 17714050201234 shipped", nil},
		{"call5551234567", nil},
		{"id_5551234567", nil},
		{"ab5551234567", nil},
		{"5551234567x", nil},
		{"555-123-45678", nil},
		{"x(555) 123-4567", nil},
		{"123-456", nil},
		{"12-345-6789", nil},
		{"911", nil},
	}
	for _, c := range cases {
		t.Run(c.text, func(t *testing.T) {
			ws := PIIWarnings(commentItem(c.text))
			want := c.want
			if want == nil {
				want = []piiHit{}
			}
			assert.Equal(t, want, piiHits(ws))
			for _, w := range ws {
				assert.Equal(t, "item-1", w.ItemID)
				assert.Equal(t, "comment", w.Field)
			}
		})
	}
}

func TestPIIMasking(t *testing.T) {
	for in, want := range map[string]string{
		"bob@example.com": "b***@e***e.com",
		"x@y.io":          "x***@***.io",
		"a@b.co.uk":       "a***@b***o.uk",
	} {
		assert.Equal(t, want, maskEmail(in), in)
	}
	for in, want := range map[string]string{
		"(555) 123-4567":  "(5**) ***-****",
		"+1 555 123 4567": "+1 *** *** ****",
	} {
		assert.Equal(t, want, maskPhone(in), in)
	}
}

// Positions and snippet windows count code points, not bytes.
func TestPIICodePoints(t *testing.T) {
	ws := PIIWarnings(commentItem("日本語のサポート窓口は、メールでどうぞ：bob@example.com。電話は 555-123-4567 です、よろしくお願いします"))
	require.Len(t, ws, 2)
	assert.Equal(t, piiHit{PIIPatternEmail, "日本語のサポート窓口は、メールでどうぞ：[b***@e***e.com]。電話は 555-123-4567 です...", 20}, piiHits(ws)[0])
	assert.Equal(t, piiHit{PIIPatternPhone, "...bob@example.com。電話は [5**-***-****] です、よろしくお願いします", 40}, piiHits(ws)[1])

	// 20 code points on each side, then an ellipsis when the text goes on.
	e25, x25 := strings.Repeat("é", 25), strings.Repeat("ê", 25)
	ws = PIIWarnings(commentItem(e25 + "  bob@example.com  " + x25))
	require.Len(t, ws, 1)
	assert.Equal(t, "..."+e25[:2*18]+"  [b***@e***e.com]  "+x25[:2*18]+"...", ws[0].Snippet)
	assert.Equal(t, 27, ws[0].Position)
	// Exactly 20 code points on each side: no ellipsis.
	ws = PIIWarnings(commentItem(e25[:40] + "bob@example.com" + x25[:40]))
	require.Len(t, ws, 1)
	assert.Equal(t, e25[:40]+"[b***@e***e.com]"+x25[:40], ws[0].Snippet)
	assert.Equal(t, 20, ws[0].Position)
	// Whitespace (unicode.IsSpace, U+3000 included) after a leading ellipsis and before a
	// trailing one is removed.
	ws = PIIWarnings(commentItem("xx\u3000 \u3000" + e25[:34] + "bob@example.com" + x25[:34] + " \u3000 yy"))
	require.Len(t, ws, 1)
	assert.Equal(t, "..."+e25[:34]+"[b***@e***e.com]"+x25[:34]+"...", ws[0].Snippet)
	assert.Equal(t, 22, ws[0].Position)
	// A non-ASCII letter is not a word character for the boundaries.
	ws = PIIWarnings(commentItem("é5551234567é"))
	require.Len(t, ws, 1)
	assert.Equal(t, "é[5*********]é", ws[0].Snippet)
	assert.Equal(t, 1, ws[0].Position)
}

// A single e-mail in the only user turn is reported twice, by design:
// as history.question and as history[0].msg.
func TestPIIQuestionReportedTwice(t *testing.T) {
	it := gtc.NewItem("ds", "gen-id")
	it.History = []gtc.HistoryEntry{U("Contact me at bob@example.com")}
	ws := PIIWarnings(it)
	require.Len(t, ws, 2)
	assert.Equal(t, "history.question", ws[0].Field)
	assert.Equal(t, "history[0].msg", ws[1].Field)
	for _, w := range ws {
		assert.Equal(t, gtc.PIIWarning{ItemID: "gen-id", Field: w.Field, PatternType: "email", Snippet: "Contact me at [b***@e***e.com]", Position: 14}, w)
	}
	js, err := json.Marshal(ws[0])
	require.NoError(t, err)
	assert.JSONEq(t, `{"item_id":"gen-id","field":"history.question","pattern_type":"email","snippet":"Contact me at [b***@e***e.com]","position":14}`, string(js))
}

// Every scanned field in scan order, with its label: typed objects in the field order of
// their item.go types, free-form objects in sorted key order, arrays by index.
func TestPIIFieldOrderAndLabels(t *testing.T) {
	const e, p = "a@b.io", "555-123-4567"
	str := func(s string) *string { return &s }
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	it := gtc.NewItem("ds", "i")
	it.History = []gtc.HistoryEntry{
		U("q " + e),
		{Role: "planner", Msg: "plan " + p, TurnID: str("turn " + e), StepID: str(p)},
		U("second question " + p + " and " + e),
		A("answer " + e),
	}
	it.Comment = "comment " + p
	it.ScenarioID = "scenario " + e
	it.ContextEntries = []gtc.ContextEntry{
		{Key: "k " + e, Value: raw(`"value ` + p + `"`)},
		{Key: "plain", Value: raw(`{"z":"` + e + `","a":["` + p + `",{"y":"` + e + `"}]}`)},
	}
	it.ToolCalls = []gtc.ToolCall{{
		ID: "id " + e, Name: "name " + e, CallType: "tool", Arguments: raw(`{"to":"` + e + `"}`),
		Agent: str("agent " + e), StepNumber: new(int64(5551234567)), ParallelGroup: str("pg " + e),
		ParentCallID: str("parent " + e), Response: raw(`{"phone":"` + p + `","email":"` + e + `"}`),
	}}
	it.ExpectedTools = gtc.ExpectedTools{
		Required:  []gtc.ToolExpectation{{Name: "search", Arguments: raw(`{"q":"` + e + `"}`)}},
		Optional:  []gtc.ToolExpectation{{Name: "opt " + e, Arguments: raw(`"` + p + `"`)}},
		NotNeeded: []gtc.ToolExpectation{{Name: "nn " + e}},
	}
	it.Feedback = []gtc.FeedbackEntry{{Source: "src " + e, Values: raw(`{"note":"` + p + `"}`)}}
	it.Metadata = raw(`{"z":"` + e + `","a":{"b":"` + p + `"},"n":5551234567,"` + e + `":"key is not scanned"}`)
	it.Plugins = map[string]gtc.PluginPayload{
		"zeta":       {Kind: "k " + e, Version: "1.0", Data: raw(`{}`)},
		"rag-compat": {Kind: "rag-compat", Version: "1.0", Data: raw(`{"references":[{"url":"https://x.example/?mail=` + e + `","title":"` + p + `"}]}`)},
	}
	it.TraceIDs = map[string]string{"userId": e, "conversationId": p}
	it.TracePayload = raw(`{"notes":"` + e + `"}`)

	want := []string{
		"history.question email", "history.question phone", // email hits first, then phone
		"history.answer email",
		"comment phone",
		"history[0].msg email",
		"history[1].msg phone",
		"history[2].msg email", "history[2].msg phone",
		"history[3].msg email",
		"scenarioId email",
		"contextEntries[0].key email",
		"contextEntries[0].value phone",
		"contextEntries[1].value.a[0] phone",
		"contextEntries[1].value.a[1].y email",
		"contextEntries[1].value.z email",
		"toolCalls[0].id email",
		"toolCalls[0].name email",
		"toolCalls[0].arguments.to email",
		"toolCalls[0].agent email",
		"toolCalls[0].parallelGroup email",
		"toolCalls[0].parentCallId email",
		"toolCalls[0].response.email email",
		"toolCalls[0].response.phone phone",
		"expectedTools.required[0].arguments.q email",
		"expectedTools.optional[0].name email",
		"expectedTools.optional[0].arguments phone",
		"expectedTools.notNeeded[0].name email",
		"feedback[0].source email",
		"feedback[0].values.note phone",
		"metadata.a.b phone",
		"metadata.z email",
		"plugins.rag-compat.data.references[0].title phone",
		"plugins.rag-compat.data.references[0].url email",
		"plugins.zeta.kind email",
		"traceIds.conversationId phone",
		"traceIds.userId email",
		"tracePayload.notes email",
	}
	assert.Equal(t, want, piiFields(PIIWarnings(it)))
}

// Free-form strings are decoded before scanning (escapes), and a repeated key counts with
// its last value, as the request parser keeps it.
func TestPIIRawValues(t *testing.T) {
	it := gtc.NewItem("ds", "i")
	it.Metadata = json.RawMessage(` {"b":"x\u0040y.io", "a":"line\nbob@example.com", "c":"old@example.com", "c":"no pii"} `)
	ws := PIIWarnings(it)
	assert.Equal(t, []string{"metadata.a email", "metadata.b email"}, piiFields(ws))
	assert.Equal(t, "line\n[b***@e***e.com]", ws[0].Snippet)
	assert.Equal(t, 5, ws[0].Position)
	assert.Equal(t, "[x***@***.io]", ws[1].Snippet)

	// Values that are not JSON are skipped, not fatal.
	it.Metadata = json.RawMessage(`{"a":"bob@example.com",`)
	it.Comment = "x@y.io"
	assert.Equal(t, []string{"comment email"}, piiFields(PIIWarnings(it)))

	// Nothing to find: nil.
	assert.Nil(t, PIIWarnings(gtc.NewItem("ds", "i")))
}

// --- the scanners against the RE2 construction of the patterns -----------------------------

const (
	refEmailCore = `[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}`
	refPhoneCore = `(?:\+?1[-. \t\n\r\f\v]?)?\(?[0-9]{3}\)?[-. \t\n\r\f\v]?[0-9]{3}[-. \t\n\r\f\v]?[0-9]{4}`
	refAfter     = `(?:[^A-Za-z0-9_]|$)`
)

var (
	refEmailFirst = regexp.MustCompile(`(?:^|[^A-Za-z0-9_.%+-])(` + refEmailCore + `)` + refAfter)
	refEmailNext  = regexp.MustCompile(`[^A-Za-z0-9_.%+-](` + refEmailCore + `)` + refAfter)
	refPhoneFirst = regexp.MustCompile(`(?:^|[^A-Za-z0-9_+(])(` + refPhoneCore + `)` + refAfter)
	refPhoneNext  = regexp.MustCompile(`[^A-Za-z0-9_+(](` + refPhoneCore + `)` + refAfter)
)

// refMatches applies the RE2 construction literally: each match of first (at the start) or
// next (resuming one byte before the previous match's end) reports capture group 1.
func refMatches(first, next *regexp.Regexp, t string) [][2]int {
	var out [][2]int
	for p := 0; p <= len(t); {
		var loc []int
		if p == 0 {
			loc = first.FindStringSubmatchIndex(t)
		} else {
			if loc = next.FindStringSubmatchIndex(t[p-1:]); loc != nil {
				loc[2], loc[3] = loc[2]+p-1, loc[3]+p-1
			}
		}
		if loc == nil {
			break
		}
		out = append(out, [2]int{loc[2], loc[3]})
		p = loc[3]
	}
	return out
}

func scanMatches(next func(string, int) (int, int), t string) [][2]int {
	var out [][2]int
	for p := 0; ; {
		s, e := next(t, p)
		if s < 0 {
			return out
		}
		out = append(out, [2]int{s, e})
		p = e
	}
}

func checkAgainstRE2(t *testing.T, text string) {
	t.Helper()
	if got, want := scanMatches(nextEmail, text), refMatches(refEmailFirst, refEmailNext, text); !assert.Equal(t, want, got, "email %q", text) {
		return
	}
	assert.Equal(t, refMatches(refPhoneFirst, refPhoneNext, text), scanMatches(nextPhone, text), "phone %q", text)
}

func TestPIIScannersMatchRE2Construction(t *testing.T) {
	if raceEnabled {
		t.Skip("sequential code, 200,000 comparisons: run without the race detector (make test runs it in a second pass without -race)")
	}
	for _, s := range []string{
		"", "@", "a@", "@b.cd", "a@b.c", "a@.cd", "a@b..cd", "a@b.cd.", "a@b.c1d.ef", "a@b.cd-e@f.gh",
		"a@b@c.de", "x.a@b.cd", ".a@b.cd", "%a@b.cd", "é@b.cd", "aé@b.cd", "a@b.cdé", "a@b.cd.e", "a@b.c.de1",
		"a@b.cd,c@d.ef", "-a@b.cd", "a@b-.cd", "a@b.cd@e.fg", "a@@b.cd", "1@2.34", "a@b.CD", "A.B@C.D.EF_",
		"+15551234567", "+1(555)1234567", "(555)-123-4567", "1 (555) 123 4567", "115551234567", "++15551234567",
		"(5551234567", "555)1234567", "1555123456", "15551234567a", "1-555-123-4567-", "+1\v555\f123\t4567",
		"555\n123\r4567", "5551234567 5551234567", "55512345675551234567", "(555)123-4567(555)123-4567",
		"1-(555)-123-4567", "+1 1 555 123 4567", "+1555", "+(555) 123 4567", "1(555) 123 4567",
	} {
		checkAgainstRE2(t, s)
	}
	// Random texts over the characters the patterns care about: one alphabet for e-mail
	// shapes, one dense in digits and separators for phone shapes.
	rng := rand.New(rand.NewPCG(1, 2))
	for _, a := range []struct {
		alphabet string
		maxLen   int
	}{
		{"ab1155500@@..--__%%++(()) \t\n\vx9é,", 24},
		{"5555555511111 --..()+\tx_é", 40},
	} {
		runes := []rune(a.alphabet)
		for range 100000 {
			var b strings.Builder
			for range rng.IntN(a.maxLen) {
				b.WriteRune(runes[rng.IntN(len(runes))])
			}
			checkAgainstRE2(t, b.String())
			if t.Failed() {
				return
			}
		}
	}
}

func FuzzPIIScanners(f *testing.F) {
	for _, s := range []string{"call 555-123-4567 or mail bob@example.com", "a@b.cd,c@d.ef", "+1 (555) 123-4567x", "ts=1771405020"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkAgainstRE2(t, s) })
}

// --- benchmark -----------------------------------------------------------------------------

// realisticItem builds a draft the size and shape of a curated conversation: a few turns,
// context, a tool call with JSON arguments and response, references, metadata and a trace.
// Every third item carries an e-mail and a phone number somewhere.
func realisticItem(dataset string, i int) *gtc.Item {
	it := gtc.NewItem(dataset, fmt.Sprintf("item-%05d", i))
	topic := []string{"reset my password", "change the billing address", "export a report", "invite a teammate", "cancel a subscription"}[i%5]
	contact := "Thanks!"
	if i%3 == 0 {
		contact = fmt.Sprintf("You can reach me at user%d@contoso.com or (555) %03d-%04d.", i, i%1000, i%10000)
	}
	it.History = []gtc.HistoryEntry{
		U(fmt.Sprintf("Hi, I need help: how do I %s? I tried the settings page twice already. %s", topic, contact)),
		A(fmt.Sprintf("To %s, open Settings, choose Account, then follow the steps on the page. It usually takes about two minutes and you will get a confirmation e-mail.", topic)),
		U("It worked, thank you. One more thing: where can I see the audit log for that change?"),
		A("The audit log is under Settings > Security > Audit log; filter by your user name to see the change."),
	}
	it.Comment = "Checked against the 2025 help center article."
	it.ScenarioID = fmt.Sprintf("scenario-%d", i%40)
	it.ContextEntries = []gtc.ContextEntry{
		{Key: "locale", Value: json.RawMessage(`"en-US"`)},
		{Key: "account", Value: json.RawMessage(fmt.Sprintf(`{"plan":"business","seats":%d,"region":"eu-west"}`, 5+i%20))},
	}
	it.ToolCalls = []gtc.ToolCall{{
		ID: fmt.Sprintf("call_%d", i), Name: "search", CallType: "tool",
		Arguments: json.RawMessage(fmt.Sprintf(`{"query":%q,"top":5}`, topic)),
		Response: json.RawMessage(`{"results":[{"title":"Account settings","url":"https://help.example.com/articles/1234","score":0.91},` +
			`{"title":"Security and audit log","url":"https://help.example.com/articles/5678","score":0.84}],"tookMs":42}`),
	}}
	it.ExpectedTools = gtc.ExpectedTools{Required: []gtc.ToolExpectation{{Name: "search"}}, Optional: []gtc.ToolExpectation{}, NotNeeded: []gtc.ToolExpectation{}}
	it.Feedback = []gtc.FeedbackEntry{{Source: "reviewer", Values: json.RawMessage(`{"rating":4,"helpful":true}`)}}
	it.Metadata = json.RawMessage(fmt.Sprintf(`{"source":"import","batch":%d,"createdTs":1771405020,"labels":["support","account"],"owner":"team-%d"}`, i/100, i%7))
	it.Plugins = map[string]gtc.PluginPayload{gtc.RAGCompatSlot: {Kind: gtc.RAGCompatSlot, Version: "1.0", Data: json.RawMessage(
		`{"references":[{"url":"https://help.example.com/articles/1234","title":"Account settings","messageIndex":1},` +
			`{"url":"https://help.example.com/articles/5678","title":"Security and audit log","messageIndex":3}]}`)}}
	it.TraceIDs = map[string]string{"traceId": fmt.Sprintf("4bf92f3577b34da6a3ce929d0e0e%04d", i%10000), "conversationId": fmt.Sprintf("conv-%d", i)}
	it.TracePayload = json.RawMessage(`{"spans":[{"name":"llm","startedAt":"2025-01-02T10:00:00.000Z","durationMs":1234},{"name":"search","durationMs":87}]}`)
	return it
}

func BenchmarkPIIWarnings(b *testing.B) {
	items := make([]*gtc.Item, 10000)
	for i := range items {
		items[i] = realisticItem("ds", i)
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		n = 0
		for _, it := range items {
			n += len(PIIWarnings(it))
		}
	}
	b.ReportMetric(float64(n), "warnings/op")
}

// --- the JSON tape -------------------------------------------------------------------------

// The tape accepts exactly what encoding/json accepts.
func TestPIIJSONTapeValidity(t *testing.T) {
	var tp jsonTape
	for _, s := range []string{
		`{}`, ` [ ] `, `{"a":[1,-2.5e+3,true,false,null,"x\"y\\u00e9"]}`, `"\u0040"`, `0`, `-0.0E-0`,
		``, ` `, `{`, `{"a":1,}`, `[1,]`, `{"a" 1}`, `{"a":1 "b":2}`, `[1 2]`, `01`, `1.`, `.5`, `-`, `1e`, `+1`,
		`tru`, `nul`, `"abc`, `"a\x"`, `"\u12"`, `"\u12G4"`, "\"a\tb\"", `{"a":1}x`, `{1:2}`, `[}`, `{]`, `""""`,
	} {
		assert.Equal(t, json.Valid([]byte(s)), tp.parse([]byte(s)), "%q", s)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	const alphabet = `{}[]",: 0-1.eE+truefalsnu\a`
	for range 100000 {
		b := make([]byte, rng.IntN(16))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		if !assert.Equal(t, json.Valid(b), tp.parse(b), "%q", b) {
			return
		}
	}
}

func FuzzPIIJSONTape(f *testing.F) {
	for _, s := range []string{`{"a":[1,{"b":"c"}],"d":null}`, `[1,2,"x\u0040y"]`, `"a"`, `{"a":1,"a":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var tp jsonTape
		if ok := tp.parse(b); ok != json.Valid(b) {
			t.Fatalf("parse %q = %v, json.Valid says %v", b, ok, !ok)
		}
		it := gtc.NewItem("ds", "i")
		it.Metadata = b
		PIIWarnings(it)
		var sg dupSigner
		sg.generic(it)
	})
}

// Escaped keys are decoded before sorting and in paths; malformed values are skipped.
func TestPIIEscapedKeysAndMalformedValues(t *testing.T) {
	it := gtc.NewItem("ds", "i")
	it.Metadata = json.RawMessage(`{"b":"x@y.io","\u0061":"a@b.io"}`)
	assert.Equal(t, []string{"metadata.a email", "metadata.b email"}, piiFields(PIIWarnings(it)))
	for _, bad := range []string{`{"a":"x@y.io"`, `["x@y.io",]`, `"x@y.io`, `{"a" "x@y.io"}`, `"x@y.io" "z"`} {
		it.Metadata = json.RawMessage(bad)
		assert.Empty(t, PIIWarnings(it), bad)
	}
}

func TestPIIPrefilterEdges(t *testing.T) {
	// The first `@` cannot start an e-mail, a later one can.
	ws := PIIWarnings(commentItem("@home: a@b.cd"))
	assert.Equal(t, []piiHit{{PIIPatternEmail, "@home: [a***@***.cd]", 7}}, piiHits(ws))
	// Ten digits spread over a text let the phone scan run; nine never do.
	assert.Len(t, PIIWarnings(commentItem("1 2 3 4 5 6 7 8 9 555-123-4567")), 1)
	assert.Empty(t, PIIWarnings(commentItem("555-123-456")))
}

// Texts with no `@` and fewer than ten digits cost no allocation.
func TestPIINoAllocationWithoutCandidates(t *testing.T) {
	it := realisticItem("ds", 1) // no contact details; ids, timestamps and URLs with digits
	require.Empty(t, PIIWarnings(it))
	it.Metadata = json.RawMessage(`{"source":"import","labels":["support","account"]}`)
	it.TracePayload = json.RawMessage(`{"spans":[{"name":"llm","durationMs":1234}]}`)
	it.TraceIDs = map[string]string{"traceId": "abc", "conversationId": "conv-1"}
	it.ToolCalls[0].Response = json.RawMessage(`{"results":[{"title":"Account settings","score":0.91}]}`)
	it.Plugins[gtc.RAGCompatSlot] = gtc.PluginPayload{Kind: gtc.RAGCompatSlot, Version: "1.0", Data: json.RawMessage(`{"references":[{"url":"https://help.example.com/a"}]}`)}
	assert.Zero(t, testing.AllocsPerRun(100, func() { PIIWarnings(it) }))
}

// A raw value the prefilter turns away holds no string with a match: random documents whose
// strings (and keys and numbers) are dense in the characters of both patterns, some with
// escapes and some without.
func TestPIIRawPrefilterKeepsEveryMatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	// Pieces of e-mail addresses and phone numbers, and the characters around them that
	// decide a match: separators that JSON escapes, quotes, letters, digits.
	pieces := []string{"bob@ex.io", "555123", "(555)", "555\n123", "bob", "@", "ex.io", ".", "a", "555", "123", "4567", "1", "+", "(", ")",
		" ", "-", "\n", "\t", "\v", "\"", "\\", "x", "é", "9"}
	text := func() string {
		var b strings.Builder
		for range rng.IntN(12) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		return b.String()
	}
	var value func(depth int) any
	value = func(depth int) any {
		switch n := rng.IntN(6); {
		case n < 2 || depth > 2:
			return text()
		case n == 2:
			return json.Number(fmt.Sprint(rng.Int64N(1e11)))
		case n == 3:
			a := make([]any, rng.IntN(4))
			for i := range a {
				a[i] = value(depth + 1)
			}
			return a
		default:
			m := map[string]any{}
			for range rng.IntN(4) {
				m[text()] = value(depth + 1)
			}
			return m
		}
	}
	var strs func(v any, out []string) []string
	strs = func(v any, out []string) []string {
		switch v := v.(type) {
		case string:
			return append(out, v)
		case []any:
			for _, e := range v {
				out = strs(e, out)
			}
		case map[string]any:
			for _, e := range v {
				out = strs(e, out)
			}
		}
		return out
	}
	kept, escaped, hits := 0, 0, 0
	for range 20000 {
		doc, err := json.Marshal(value(0))
		require.NoError(t, err)
		var v any
		require.NoError(t, json.Unmarshal(doc, &v))
		hit := false
		for _, s := range strs(v, nil) {
			if a, _ := nextEmail(s, 0); a >= 0 {
				hit = true
			}
			if a, _ := nextPhone(s, 0); a >= 0 {
				hit = true
			}
		}
		maybe := piiMaybeRaw(doc)
		if maybe {
			kept++
		}
		if strings.Contains(string(doc), `\`) {
			escaped++
		}
		if hit {
			hits++
		}
		if hit && !assert.True(t, maybe, "%s", doc) {
			return
		}
	}
	// The property is only worth something if both outcomes and both kinds of value occur.
	assert.Greater(t, hits, 1000)
	assert.Greater(t, kept-hits, 1000)
	assert.Less(t, kept, 19000)
	assert.Greater(t, escaped, 1000)
	assert.Less(t, escaped, 19000)
}
