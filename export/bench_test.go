// The fuzz builds (scripts/fuzz.sh, -tags fuzzing) leave these tests out: they run on the
// SQLite store (sqlite_test.go), which a fuzz build would instrument.

//go:build !fuzzing

package export

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"testing"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/storage/localfs"
)

// BenchmarkRecord measures the per-record work of a jsonl export: the item's API JSON,
// the record, the projection and the encoding.
func BenchmarkRecord(b *testing.B) {
	it := fixtureItem("support", 3, gtc.StatusApproved)
	var scratch bytes.Buffer
	var out []byte
	b.ReportAllocs()
	for b.Loop() {
		rec, err := BuildRecord(it, &scratch)
		if err != nil {
			b.Fatal(err)
		}
		if err := project(rec); err != nil {
			b.Fatal(err)
		}
		out, err = AppendJSON(out[:0], rec)
		if err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(out)))
}

// BenchmarkRecordRaw is BenchmarkRecord on the fast path.
func BenchmarkRecordRaw(b *testing.B) {
	it := fixtureItem("support", 3, gtc.StatusApproved)
	var c canon
	var out []byte
	b.ReportAllocs()
	for b.Loop() {
		rec, err := buildDirect(it, &c)
		if err != nil {
			b.Fatal(err)
		}
		if err := rec.projectRaw(); err != nil {
			b.Fatal(err)
		}
		out = rec.appendTo(out[:0])
	}
	b.SetBytes(int64(len(out)))
}

// BenchmarkStreamJSONL measures a whole jsonl stream from an SQLite store.
func BenchmarkStreamJSONL(b *testing.B) { benchmarkStream(b, "jsonl") }

// BenchmarkStreamParquet is BenchmarkStreamJSONL in the parquet format.
func BenchmarkStreamParquet(b *testing.B) { benchmarkStream(b, "parquet") }

// benchFormatter is the built-in formatter name; the race-detector build has no parquet
// formatter (parquet.go), and its parquet benchmarks skip.
func benchFormatter(b *testing.B, name string) Formatter {
	_, fr := Builtins(nil)
	f, ok := fr.Lookup(name)
	if !ok {
		b.Skipf("no %s formatter in this build", name)
	}
	return f
}

func benchmarkStream(b *testing.B, f string) {
	benchFormatter(b, f)
	st := newSQLite(b)
	fill(b, st, []string{"a", "b"}, 3000)
	pr, fr := Builtins(nil)
	x, err := New(Config{Items: st.Items(), Processors: pr, Formatters: fr, TempDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	st0 := ""
	plan, err := x.Resolve(&gtc.ExportRequest{Format: &f, Status: &st0, Mode: gtc.DeliveryStream}, "bench")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var n int
	for b.Loop() {
		res, err := x.Stream(context.Background(), plan, io.Discard, nil)
		if err != nil {
			b.Fatal(err)
		}
		n = res.Count
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "items/s")
}

// BenchmarkFormat measures the formatters alone over the same 5,000 records, built
// beforehand: "raw" feeds the records of the default chain's path, "records" decoded
// records (the path of a chain with split_turns). One op is the whole set; items/s is
// records encoded per second, b/item the body bytes per record.
func BenchmarkFormat(b *testing.B) {
	const n = 5000
	raws := make([]*rawRecord, n)
	recs := make([]Record, n)
	var c canon
	var scratch bytes.Buffer
	for i := range n {
		it := fixtureItem([]string{"a", "b"}[i%2], i, gtc.StatusApproved)
		raw, err := buildDirect(it, &c)
		if err != nil {
			b.Fatal(err)
		}
		if err := raw.projectRaw(); err != nil {
			b.Fatal(err)
		}
		raws[i] = raw
		if recs[i], err = BuildRecord(it, &scratch); err != nil {
			b.Fatal(err)
		}
		if err := project(recs[i]); err != nil {
			b.Fatal(err)
		}
	}
	for _, path := range []string{"raw", "records"} {
		for _, name := range []string{"jsonl", "parquet"} {
			b.Run(path+"/"+name, func(b *testing.B) {
				f := benchFormatter(b, name)
				b.ReportAllocs()
				var size int64
				for b.Loop() {
					cw := &countingWriter{w: io.Discard}
					enc, err := f.NewEncoder(cw, testHeader)
					if err != nil {
						b.Fatal(err)
					}
					for i := range n {
						if path == "raw" {
							err = enc.(rawEncoder).encodeRaw(raws[i])
						} else {
							err = enc.Encode(recs[i])
						}
						if err != nil {
							b.Fatal(err)
						}
					}
					if err := enc.Close(); err != nil {
						b.Fatal(err)
					}
					size = cw.n
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "items/s")
				b.ReportMetric(float64(size)/n, "B/item")
			})
		}
	}
}

// BenchmarkItemFileNamer names one record of a per-record artifact: its plain name, checked
// against (and added to) the names of the records before it. One op is one record of a
// 100,000-record export; B/op includes the name set's growth.
func BenchmarkItemFileNamer(b *testing.B) {
	ids := make([]string, 100_000)
	for i := range ids {
		ids[i] = fmt.Sprintf("gt-%06d", i)
	}
	b.ReportAllocs()
	var n *itemFileNamer
	for i := 0; i < b.N; i++ {
		if i%len(ids) == 0 {
			n = newItemFileNamer()
		}
		_ = n.name("support", ids[i%len(ids)])
	}
}

// BenchmarkRelease writes the same 6,000 items as a jsonl snapshot (an artifact export) and
// as a jsonl release, alternately in one run, to local export storage: what a release adds
// (each item's hash, its manifest entry, the counts, the card) shows as the ratio of the two.
func BenchmarkRelease(b *testing.B) {
	st := newSQLite(b)
	fill(b, st, []string{"a", "b"}, 6000)
	root := b.TempDir()
	local, err := localfs.Open(root)
	if err != nil {
		b.Fatal(err)
	}
	defer local.Close()
	pr, fr := Builtins(nil)
	x, err := New(Config{Items: st.Items(), Artifacts: local, Processors: pr, Formatters: fr, TempDir: filepath.Join(root, "tmp")})
	if err != nil {
		b.Fatal(err)
	}
	f, all := "jsonl", ""
	n := 0
	b.Run("snapshot", func(b *testing.B) {
		plan, err := x.Resolve(&gtc.ExportRequest{Format: &f, Status: &all, Mode: gtc.DeliveryArtifact}, "bench")
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			res, err := x.Artifact(context.Background(), plan)
			if err != nil {
				b.Fatal(err)
			}
			n = res.Count
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "items/s")
	})
	seq := 0
	b.Run("release", func(b *testing.B) {
		for b.Loop() {
			seq++
			rp, err := x.ResolveRelease(context.Background(), &gtc.ReleaseRequest{Name: fmt.Sprintf("r%d", seq), Status: &all, Formats: []string{f}}, "bench")
			if err != nil {
				b.Fatal(err)
			}
			info, err := x.CreateRelease(context.Background(), rp)
			if err != nil {
				b.Fatal(err)
			}
			n = info.Count
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "items/s")
	})
}
