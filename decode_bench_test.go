package gtc

import (
	"bytes"
	"fmt"
	"runtime"
	"strconv"
	"testing"
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
					_, err := DecodeItemPatch(tc.body, false)
					return err
				}
				_, err := DecodeImport(tc.body)
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
