package api

import (
	"bytes"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/gtc-dev/gtc/codec"
)

// hostileBodies are request bodies shaped to make a decoder allocate: the bytes it
// allocates per body byte should stay a small number whatever the shape.
func hostileBodies() []struct {
	name   string
	put    bool // a PUT body (else an import body)
	body   []byte
	reject bool // the decoder refuses it
} {
	numbers := func(n int) []byte { return bytes.Repeat([]byte("1,"), n)[:2*n-1] }
	var unknown bytes.Buffer
	unknown.WriteByte('{')
	for i := range 1_000_000 {
		if i > 0 {
			unknown.WriteByte(',')
		}
		unknown.WriteString(`"k`)
		unknown.WriteString(strconv.Itoa(i))
		unknown.WriteString(`":0`)
	}
	unknown.WriteByte('}')
	var legit bytes.Buffer
	legit.WriteString(`{"comment":"long conversation","history":[`)
	for i := range 10_000 {
		if i > 0 {
			legit.WriteByte(',')
		}
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		fmt.Fprintf(&legit, `{"role":%q,"msg":"turn %d: a sentence or two of text, as a conversation has it, with some words in it."}`, role, i)
	}
	legit.WriteString(`],"metadata":{"source":"bench","score":0.5}}`)
	return []struct {
		name   string
		put    bool
		body   []byte
		reject bool
	}{
		{"metadata_5M_numbers", true, append(append([]byte(`{"metadata":{"n":[`), numbers(5_000_000)...), "]}}"...), false},
		{"history_1M_numbers", true, append(append([]byte(`{"history":[`), numbers(1_000_000)...), "]}"...), true},
		{"import_1M_numbers", false, append(append([]byte(`[`), numbers(1_000_000)...), ']'), true},
		{"unknown_keys_1M", true, unknown.Bytes(), true},
		// The same, one key repeated: the object takes the slower walk that drops repeats.
		{"unknown_keys_1M_one_repeated", true, append(unknown.Bytes()[:unknown.Len()-1:unknown.Len()-1], `,"k0":1}`...), true},
		{"metadata_1M_keys_one_repeated", true, append(append([]byte(`{"metadata":`), unknown.Bytes()[:unknown.Len()-1]...), `,"k0":1}}`...), false},
		{"legit_history_10k_turns", true, legit.Bytes(), false},
	}
}

// BenchmarkDecodeHostile reports the bytes allocated per body byte (alloc-B/body-B) for each
// hostile shape, and for a legitimate large item for comparison.
func BenchmarkDecodeHostile(b *testing.B) {
	for _, tc := range hostileBodies() {
		b.Run(tc.name, func(b *testing.B) {
			decode := func() error {
				if tc.put {
					_, err := decodeItemPatch(tc.body, false)
					return err
				}
				_, err := codec.DecodeImport(tc.body)
				return err
			}
			if err := decode(); (err != nil) != tc.reject {
				b.Fatalf("decode: %v", err)
			}
			b.SetBytes(int64(len(tc.body)))
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			b.ResetTimer()
			for b.Loop() {
				_ = decode()
			}
			b.StopTimer()
			runtime.ReadMemStats(&after)
			perRun := float64(after.TotalAlloc-before.TotalAlloc) / float64(b.N)
			b.ReportMetric(perRun/float64(len(tc.body)), "alloc-B/body-B")
			b.ReportMetric(float64(len(tc.body)), "body-B")
		})
	}
}

// typicalItem is an item object as clients send it: a short conversation, tool calls with
// arguments and responses, expectations, references, feedback and free-form metadata.
func typicalItem(i int) string {
	return fmt.Sprintf(`{"id":"item-%d","datasetName":"bench","status":"draft","comment":"checked by hand \u00e9",`+
		`"manualTags":["source:sme","topic:billing"],"scenarioId":"s-1",`+
		`"history":[{"role":"user","msg":"How do I change the billing address on my account?"},`+
		`{"role":"assistant","msg":"Open Settings, then Billing, and edit the address.","expectedBehavior":["answers","cites"]},`+
		`{"role":"user","msg":"And the invoice email?","turnId":"t3"},{"role":"assistant","msg":"Same page, under Invoices."}],`+
		`"contextEntries":[{"key":"tenant","value":"contoso"},{"key":"limits","value":{"max":10,"ratio":0.25}}],`+
		`"traceIds":{"run":"r-%d","span":"s-2"},`+
		`"toolCalls":[{"id":"c1","name":"search","callType":"tool","arguments":{"q":"billing address","top":5},"stepNumber":1,`+
		`"response":{"hits":[{"id":"doc-1","score":0.93},{"id":"doc-2","score":0.71}]}},`+
		`{"id":"c2","name":"fetch","arguments":{"id":"doc-1"},"stepNumber":2,"parentCallId":"c1"}],`+
		`"expectedTools":{"required":[{"name":"search","arguments":{"q":"billing"}}],"optional":["fetch"],"notNeeded":[]},`+
		`"feedback":[{"source":"sme","values":{"score":4,"notes":"good"}}],`+
		`"metadata":{"origin":"bench","n":12345678901234567890,"nested":{"a":[1,2,3],"b":"x"}},`+
		`"plugins":{"rag-compat":{"kind":"rag","version":"1.0","data":{"references":[{"url":"https://example.com/a","title":"A"}]}}},`+
		`"tracePayload":{"spans":[{"name":"root","ms":12}]}}`, i, i)
}

// BenchmarkDecodeImport decodes an import body of 100 typical items.
func BenchmarkDecodeImport(b *testing.B) {
	var body bytes.Buffer
	body.WriteByte('[')
	for i := range 100 {
		if i > 0 {
			body.WriteByte(',')
		}
		body.WriteString(typicalItem(i))
	}
	body.WriteByte(']')
	b.SetBytes(int64(body.Len()))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := codec.DecodeImport(body.Bytes()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeItemPatch decodes the PUT body of one typical item.
func BenchmarkDecodeItemPatch(b *testing.B) {
	item := typicalItem(1)
	// A PUT body carries no id or datasetName.
	body := []byte(`{"etag":"e1",` + item[strings.Index(item, `"status"`):])
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeItemPatch(body, false); err != nil {
			b.Fatal(err)
		}
	}
}
