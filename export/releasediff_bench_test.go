// The fuzz builds (scripts/fuzz.sh, -tags fuzzing) leave these benchmarks out: they run on
// the SQLite store (sqlite_test.go), which a fuzz build would instrument.

//go:build !fuzzing

package export

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/history"
	"github.com/gtc-dev/gtc/storage/localfs"
	"github.com/gtc-dev/gtc/storage/sqlite"
	"github.com/gtc-dev/gtc/storage/storetest/testenv"
)

// diffFixture is a store of n small items in three datasets and two releases of them: "a",
// then "b" after 5 % of the items changed: 4 % edited, 0.5 % made drafts (removed), and
// 0.5 % as many new items (added).
type diffFixture struct {
	x *Exporter
	n int
}

// diffBenchItem is a small approved item: a short conversation and two tags.
func diffBenchItem(i int) *gtc.Item {
	it := gtc.NewItem([]string{"support", "billing", "setup"}[i%3], fmt.Sprintf("gt-%07d", i))
	it.Bucket = fixtureBucket
	it.Status = gtc.StatusApproved
	it.History = []gtc.HistoryEntry{{Role: "user", Msg: fmt.Sprintf("How do I rotate the keys of tenant %d?", i)},
		{Role: "assistant", Msg: "Rotate the secondary key first, then promote it."}}
	it.ManualTags = []string{"source:synthetic", "topic:" + topics[i%3]}
	it.UpdatedAt = fixtureNow
	return it
}

// eachParallel runs fn for 0 … n-1 on 32 goroutines, which the store groups into shared
// commits.
func eachParallel(b *testing.B, n int, fn func(i int) error) {
	var wg sync.WaitGroup
	next := atomic.Int64{}
	var failed atomic.Value
	for range 32 {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					failed.CompareAndSwap(nil, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
}

// buildDiffFixture builds the fixture of n items in a directory of owner, the benchmark that
// outlives the runs that use it.
func buildDiffFixture(b, owner *testing.B, n int) *diffFixture {
	t0 := time.Now()
	ctx := context.Background()
	dir := owner.TempDir()
	st, err := sqlite.Open(ctx, sqlite.Options{Path: filepath.Join(dir, "gtc.db"), Synchronous: "NORMAL"})
	if err != nil {
		b.Fatal(err)
	}
	owner.Cleanup(func() { st.Close() })
	eachParallel(b, n, func(i int) error {
		_, err := st.Items().Create(ctx, diffBenchItem(i))
		return err
	})
	local, err := localfs.Open(filepath.Join(dir, "exports"))
	if err != nil {
		b.Fatal(err)
	}
	owner.Cleanup(func() { local.Close() })
	cur := gtc.NewCurator(gtc.CuratorDeps{Store: st})
	pr, fr := Builtins(nil)
	x, err := New(Config{Items: st.Items(), Artifacts: local, Processors: pr, Formatters: fr, TempDir: filepath.Join(dir, "tmp"),
		RevisionDiff: func(ctx context.Context, k gtc.Key, from, to int64) ([]gtc.PatchOp, error) {
			_, _, ops, err := history.Diff(ctx, cur, k, from, to)
			return ops, err
		}})
	if err != nil {
		b.Fatal(err)
	}
	release := func(name string) {
		rp, err := x.ResolveRelease(ctx, &gtc.ReleaseRequest{Name: name, Formats: []string{"jsonl"}}, "bench")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := x.CreateRelease(ctx, rp); err != nil {
			b.Fatal(err)
		}
	}
	release("a")
	// Every 20th item changes: of each 200 items, 8 are edited, one made a draft, and one
	// new item is created.
	eachParallel(b, n/20, func(j int) error {
		i := j * 20
		k := gtc.Key{DatasetName: []string{"support", "billing", "setup"}[i%3], Bucket: fixtureBucket, ID: fmt.Sprintf("gt-%07d", i)}
		if j%10 == 9 {
			_, err := st.Items().Create(ctx, diffBenchItem(n+j))
			return err
		}
		it, err := st.Items().Get(ctx, k)
		if err != nil {
			return err
		}
		next := it.Clone()
		if j%10 == 8 {
			next.Status = gtc.StatusDraft
		} else {
			next.Comment = "rechecked"
			next.ManualTags = []string{"source:synthetic", "topic:billing"}
		}
		_, err = st.Items().Replace(ctx, it, next)
		return err
	})
	release("b")
	b.Logf("%d items and two releases built in %v", n, time.Since(t0).Round(time.Millisecond))
	return &diffFixture{x: x, n: n}
}

// heapObjects is the live heap after a collection.
func heapObjects() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// BenchmarkDiffReleases measures the first page (50 items, with their field-level changes
// and the counts of the whole comparison) of the comparison of two releases of n items that
// differ in 5 % of them, and of the first release with the current items. It reports the
// heap before (base-MiB) and the peak during one comparison (peak-MiB): memory does not grow
// with the releases, so the peaks at 10,000 and 100,000 items are alike. The fixture, built
// once per size, takes a while (its time is logged).
func BenchmarkDiffReleases(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		var fx *diffFixture
		owner := b
		fixture := func(b *testing.B) *diffFixture {
			if fx == nil {
				fx = buildDiffFixture(b, owner, n)
			}
			return fx
		}
		for _, to := range []string{"b", CurrentRelease} {
			b.Run(fmt.Sprintf("items=%d/to=%s", n, to), func(b *testing.B) {
				fx := fixture(b)
				ctx := context.Background()
				diff := func() *ReleaseDiff {
					d, err := fx.x.DiffReleases(ctx, "a", to, DiffOptions{Changes: true})
					if err != nil {
						b.Fatal(err)
					}
					return d
				}
				base := heapObjects()
				peak := testenv.HeapPeak(func() { diff() })
				d := diff()
				want := DiffCounts{Added: n / 200, Removed: n / 200, Changed: n / 200 * 8, Unchanged: n - n/200*9}
				if d.Counts != want || len(d.Items) != DefaultDiffLimit || d.NextCursor == nil {
					b.Fatalf("counts %+v (want %+v), %d items", d.Counts, want, len(d.Items))
				}
				b.ReportAllocs()
				for b.Loop() {
					diff()
				}
				b.ReportMetric(float64(base)/(1<<20), "base-MiB")
				b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
			})
		}
	}
}
