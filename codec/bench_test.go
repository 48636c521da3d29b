package codec

import (
	"os"
	"testing"

	"github.com/gtc-dev/gtc"
)

// benchItem is a realistic stored item: eight turns, four tool calls, five references.
func benchItem(b *testing.B) []byte {
	doc, err := os.ReadFile("testdata/item.json")
	if err != nil {
		b.Fatal(err)
	}
	return doc
}

// BenchmarkItemEncode writes the API form and the stored form of the item.
func BenchmarkItemEncode(b *testing.B) {
	it, err := DecodeStoredItem(benchItem(b))
	if err != nil {
		b.Fatal(err)
	}
	for _, form := range []struct {
		name   string
		encode func([]byte, *gtc.Item) []byte
	}{{"API", AppendItemAPI}, {"Stored", AppendItemStored}} {
		b.Run(form.name, func(b *testing.B) {
			var buf []byte
			b.ReportAllocs()
			for b.Loop() {
				buf = form.encode(buf[:0], it)
			}
			b.SetBytes(int64(len(buf)))
		})
	}
}

func BenchmarkItemDecodeStored(b *testing.B) {
	doc := benchItem(b)
	b.ReportAllocs()
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		if _, err := DecodeStoredItem(doc); err != nil {
			b.Fatal(err)
		}
	}
}
