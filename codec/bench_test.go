package codec

import (
	"os"
	"testing"
)

// benchItem is a realistic stored item: eight turns, four tool calls, five references.
func benchItem(b *testing.B) []byte {
	doc, err := os.ReadFile("testdata/item.json")
	if err != nil {
		b.Fatal(err)
	}
	return doc
}

func BenchmarkItemEncodeAPI(b *testing.B) {
	it, err := DecodeStoredItem(benchItem(b))
	if err != nil {
		b.Fatal(err)
	}
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendItemAPI(buf[:0], it)
	}
	b.SetBytes(int64(len(buf)))
}

func BenchmarkItemEncodeStored(b *testing.B) {
	it, err := DecodeStoredItem(benchItem(b))
	if err != nil {
		b.Fatal(err)
	}
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendItemStored(buf[:0], it)
	}
	b.SetBytes(int64(len(buf)))
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
