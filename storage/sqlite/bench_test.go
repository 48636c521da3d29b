package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gtc "github.com/gtc-dev/gtc"
	"github.com/stretchr/testify/require"
)

// The benchmarks measure the hot paths behind the product targets (list query on 100,000
// items, point read, concurrent conditional writes). Run them with
//
//	go test ./storage/sqlite -run '^$' -bench ListQuery -benchtime 3000x
//	go test ./storage/sqlite -run '^$' -bench 'Get|ReplaceParallel' -benchtime 20000x
//
// Their fixtures are built once per benchmark (b.Loop runs the setup once).

const (
	benchItems    = 100_000
	benchDatasets = 5
)

var benchStatuses = []gtc.Status{gtc.StatusDraft, gtc.StatusDraft, gtc.StatusDraft, gtc.StatusApproved, gtc.StatusApproved, gtc.StatusSkipped, gtc.StatusDeleted}

var benchTags = []string{
	"topic:billing", "topic:login", "topic:search", "topic:export", "topic:upload",
	"lang:en", "lang:de", "lang:fr", "source:synthetic", "source:prod",
	"quality:good", "quality:needs-work", "priority:high", "priority:low", "team:a", "team:b",
}

var benchWords = strings.Fields(`alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima
mike november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu account
invoice password reset search export report upload file limit error timeout network answer question`)

func benchText(r *rand.Rand, words int) string {
	var b strings.Builder
	for i := range words {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(benchWords[r.IntN(len(benchWords))])
	}
	return b.String()
}

// benchItem returns a plausible item: a four-turn conversation, up to three references,
// a few manual and computed tags, and times spread over a year.
func benchItem(r *rand.Rand, n int, base time.Time) *gtc.Item {
	ds := fmt.Sprintf("dataset-%d", n%benchDatasets)
	id := fmt.Sprintf("item-%06d", n)
	it := gtc.NewItem(ds, id)
	it.Bucket = gtc.DeriveBucket(ds, id)
	it.Status = benchStatuses[r.IntN(len(benchStatuses))]
	it.Comment = benchText(r, 8)
	it.UpdatedAt = base.Add(-time.Duration(r.IntN(365*24*3600)) * time.Second)
	if it.Status != gtc.StatusDraft || r.IntN(4) == 0 {
		t := it.UpdatedAt.Add(-time.Hour)
		it.ReviewedAt = &t
	}
	if r.IntN(3) == 0 {
		u := fmt.Sprintf("user%d@example.com", r.IntN(20))
		t := it.UpdatedAt.Add(-2 * time.Hour)
		it.AssignedTo, it.AssignedAt = &u, &t
	}
	for range 2 {
		it.History = append(it.History,
			gtc.HistoryEntry{Role: "user", Msg: benchText(r, 25)},
			gtc.HistoryEntry{Role: "assistant", Msg: benchText(r, 60)})
	}
	var refs []map[string]any
	for i := range r.IntN(4) {
		refs = append(refs, map[string]any{
			"url":     fmt.Sprintf("https://docs.example.com/%s/%d", benchWords[r.IntN(len(benchWords))], i),
			"title":   benchText(r, 5),
			"content": benchText(r, 40),
		})
	}
	if refs != nil {
		data, _ := json.Marshal(map[string]any{"references": refs})
		it.Plugins[gtc.RAGCompatSlot] = gtc.PluginPayload{Kind: gtc.RAGCompatSlot, Version: "1.0", Data: data}
	}
	for range r.IntN(3) {
		it.ManualTags = append(it.ManualTags, benchTags[r.IntN(len(benchTags))])
	}
	for range 1 + r.IntN(2) {
		it.ComputedTags = append(it.ComputedTags, benchTags[r.IntN(len(benchTags))])
	}
	it.Metadata = json.RawMessage(`{"source":"bench","score":0.75}`)
	return it
}

// openBenchStore opens a file store with n generated items.
func openBenchStore(b *testing.B, n int, synchronous string) *Store {
	return openBenchStoreWith(b, n, Options{Synchronous: synchronous})
}

// openBenchStoreWith is openBenchStore with other options (the path is the benchmark's).
func openBenchStoreWith(b *testing.B, n int, opts Options) *Store {
	b.Helper()
	ctx := context.Background()
	opts.Path = filepath.Join(b.TempDir(), "gtc.db")
	s, err := Open(ctx, opts)
	require.NoError(b, err)
	b.Cleanup(func() { _ = s.Close() })
	base := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	start := time.Now()
	loadInChunks(b, n, func(lo, hi int) error {
		r := rand.New(rand.NewPCG(1, uint64(lo)))
		items := make([]*gtc.Item, 0, hi-lo)
		for j := lo; j < hi; j++ {
			items = append(items, benchItem(r, j, base))
		}
		return s.items.createMany(ctx, items)
	})
	b.Logf("built %d items in %s", n, time.Since(start).Round(time.Millisecond))
	return s
}

// loadInChunks calls store for the ranges [lo, hi) of 2000 that cover [0, n), from two
// loaders: one builds its next chunk while the writer stores the other's.
func loadInChunks(b *testing.B, n int, store func(lo, hi int) error) {
	b.Helper()
	const chunk = 2000
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w * chunk; i < n; i += 2 * chunk {
				if err := store(i, min(i+chunk, n)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	require.NoError(b, <-errs)
}

// BenchmarkListQuery is the explorer's list request: dataset + status + one tag, sorted by
// reviewedAt descending, a page of 25 with the exact total.
func BenchmarkListQuery(b *testing.B) {
	s := openBenchStore(b, benchItems, "NORMAL")
	ctx := context.Background()
	q := gtc.Query{
		Filter: gtc.Filter{
			DatasetNames: []string{"dataset-2"},
			Statuses:     []gtc.Status{gtc.StatusDraft},
			AllTags:      []string{"topic:billing"},
		},
		Sort: gtc.SortReviewedAt, Desc: true, Limit: 25,
	}
	first, err := s.Items().Query(ctx, q)
	require.NoError(b, err)
	require.Len(b, first.Items, 25)
	b.Logf("total %d", first.Total)
	var lat latencies
	i := 0
	for b.Loop() {
		q.Offset = (i % 20) * 25
		i++
		t0 := time.Now()
		page, err := s.Items().Query(ctx, q)
		lat.add(time.Since(t0))
		if err != nil || page.Total != first.Total {
			b.Fatalf("query: %v (total %d)", err, page.Total)
		}
	}
	lat.report(b)
}

// BenchmarkGet is a point read by key.
func BenchmarkGet(b *testing.B) {
	s := openBenchStore(b, 10_000, "NORMAL")
	ctx := context.Background()
	i := 0
	for b.Loop() {
		n := i % 10_000
		i++
		ds, id := fmt.Sprintf("dataset-%d", n%benchDatasets), fmt.Sprintf("item-%06d", n)
		if _, err := s.Items().Get(ctx, gtc.Key{DatasetName: ds, Bucket: gtc.DeriveBucket(ds, id), ID: id}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReplaceParallel is 16 clients each doing read-modify-write on its own items with
// synchronous=FULL, as the item PUT does, with the item history recorded (on) and not (off),
// in one run. It reports the writes per second and how many writes shared each commit.
func BenchmarkReplaceParallel(b *testing.B) {
	for _, h := range []struct {
		name string
		opts gtc.HistoryOptions
	}{{"history=on", gtc.HistoryOptions{}}, {"history=off", gtc.HistoryOptions{Disabled: true}}} {
		b.Run(h.name, func(b *testing.B) { benchReplaceParallel(b, h.opts) })
	}
}

func benchReplaceParallel(b *testing.B, hist gtc.HistoryOptions) {
	const items = 4096
	s := openBenchStoreWith(b, items, Options{Synchronous: "FULL", History: hist})
	ctx := context.Background()
	var next atomic.Int64
	b.SetParallelism(16 / max(1, runtimeProcs()))
	start := time.Now()
	commits0, writes0 := s.Commits()
	var ops atomic.Int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		// Each goroutine owns its own 256 items, so writes never collide.
		g := int(next.Add(1) - 1)
		j := 0
		for pb.Next() {
			n := (g*256 + j%256) % items
			j++
			ds, id := fmt.Sprintf("dataset-%d", n%benchDatasets), fmt.Sprintf("item-%06d", n)
			k := gtc.Key{DatasetName: ds, Bucket: gtc.DeriveBucket(ds, id), ID: id}
			cur, err := s.Items().Get(ctx, k)
			if err != nil {
				b.Error(err)
				return
			}
			upd := cur.Clone()
			upd.Comment = fmt.Sprintf("edit %d", j)
			upd.UpdatedAt = upd.UpdatedAt.Add(time.Second)
			if _, err := s.Items().Replace(ctx, cur, upd); err != nil {
				b.Error(err)
				return
			}
			ops.Add(1)
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(ops.Load())/time.Since(start).Seconds(), "writes/s")
	if commits, writes := s.Commits(); commits > commits0 {
		b.ReportMetric(float64(writes-writes0)/float64(commits-commits0), "writes/commit")
	}
}

func runtimeProcs() int { return runtime.GOMAXPROCS(0) }

// latencies collects per-call durations for the median and p99 the targets are stated in.
type latencies []time.Duration

func (l *latencies) add(d time.Duration) { *l = append(*l, d) }

func (l latencies) report(b *testing.B) {
	if len(l) == 0 {
		return
	}
	s := slices.Clone(l)
	slices.Sort(s)
	b.ReportMetric(float64(s[len(s)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(s[min(len(s)-1, len(s)*99/100)].Microseconds())/1000, "p99-ms")
}
