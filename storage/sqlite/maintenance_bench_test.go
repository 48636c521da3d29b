package sqlite

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	gtc "github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/codec"
	"github.com/stretchr/testify/require"
)

// The migration benchmarks run gtc migrate's read and write pattern over 100,000
// legacy documents: ScanRaw pages of 100, each page's documents converted and written by 4
// workers (the default --concurrency), the next page read once the page has settled. One
// iteration migrates the whole fixture, which is rebuilt, untimed, before each; docs/s is
// the figure to compare with the target of 10,000 documents/s. Run them with
//
//	go test ./storage/sqlite -run '^$' -bench Maintenance

const (
	benchMigratePage    = 100
	benchMigrateWorkers = 4
)

// BenchmarkMaintenanceReplaceRaw migrates legacy documents whose bucket is already a
// canonical UUID: each becomes an item in place.
func BenchmarkMaintenanceReplaceRaw(b *testing.B) { benchMigrate(b, false) }

// BenchmarkMaintenanceMoveRaw migrates legacy documents with a numeric bucket: each moves to
// the bucket the bucket rule derives.
func BenchmarkMaintenanceMoveRaw(b *testing.B) { benchMigrate(b, true) }

func benchMigrate(b *testing.B, move bool) {
	for _, synchronous := range []string{"FULL", "NORMAL"} {
		b.Run("sync="+synchronous, func(b *testing.B) {
			var docs int
			var spent time.Duration
			for b.Loop() {
				b.StopTimer()
				s := openLegacyStore(b, benchItems, synchronous, move)
				b.StartTimer()
				start := time.Now()
				docs += migrateAll(b, s, move)
				spent += time.Since(start)
				b.StopTimer()
				checkMigrated(b, s, benchItems)
				require.NoError(b, s.Close())
				b.StartTimer()
			}
			b.ReportMetric(float64(docs)/spent.Seconds(), "docs/s")
		})
	}
}

// legacyBenchDoc is a legacy v1 document: one mixed tags list, the
// question and answer as fields, item-level references; its bucket is numeric when the
// migration has to move it.
func legacyBenchDoc(r *rand.Rand, n int, move bool, base time.Time) map[string]any {
	ds := fmt.Sprintf("dataset-%d", n%benchDatasets)
	id := fmt.Sprintf("item-%06d", n)
	var bucket any = gtc.DeriveBucket(ds, id)
	if move {
		bucket = n % 16
	}
	refs := []any{}
	for i := range r.IntN(4) {
		refs = append(refs, map[string]any{
			"url":     fmt.Sprintf("https://docs.example.com/%s/%d", benchWords[r.IntN(len(benchWords))], i),
			"title":   benchText(r, 5),
			"content": benchText(r, 40),
			"bonus":   false,
		})
	}
	tags := []any{}
	for range 1 + r.IntN(3) {
		tags = append(tags, benchTags[r.IntN(len(benchTags))])
	}
	return map[string]any{
		"id": id, "datasetName": ds, "bucket": bucket,
		"status":        string(benchStatuses[r.IntN(len(benchStatuses))]),
		"synthQuestion": benchText(r, 25), "editedQuestion": nil, "answer": benchText(r, 60),
		"refs": refs, "totalReferences": len(refs), "tags": tags, "comment": benchText(r, 8),
		"updatedAt": gtc.FormatStoredTime(base.Add(-time.Duration(r.IntN(365*24*3600)) * time.Second)),
	}
}

// openLegacyStore opens a file store holding n legacy documents and no items.
func openLegacyStore(b *testing.B, n int, synchronous string, move bool) *Store {
	b.Helper()
	ctx := context.Background()
	s, err := Open(ctx, Options{Path: filepath.Join(b.TempDir(), "gtc.db"), Synchronous: synchronous})
	require.NoError(b, err)
	base := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	start := time.Now()
	loadInChunks(b, n, func(lo, hi int) error {
		docs := make([]map[string]any, 0, hi-lo)
		for j := lo; j < hi; j++ {
			docs = append(docs, legacyBenchDoc(rand.New(rand.NewPCG(3, uint64(j))), j, move, base))
		}
		return s.InsertRawBatch(ctx, docs)
	})
	b.Logf("loaded %d legacy documents in %s", n, time.Since(start).Round(time.Millisecond))
	return s
}

// migrateAll is the items pass of gtc migrate without its checkpoints and reports; it
// returns the number of documents written.
func migrateAll(b *testing.B, s *Store, move bool) int {
	ctx := context.Background()
	m := s.Maintenance()
	written := 0
	cursor := ""
	for {
		page, err := m.ScanRaw(ctx, nil, cursor, benchMigratePage)
		if err != nil {
			b.Fatal(err)
		}
		work := make(chan gtc.RawDoc)
		errs := make(chan error, benchMigrateWorkers)
		var wg sync.WaitGroup
		for range benchMigrateWorkers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for d := range work {
					var err error
					if body := benchConvert(d); move {
						_, err = m.MoveRaw(ctx, d, body)
					} else {
						_, err = m.ReplaceRaw(ctx, d, body)
					}
					if err != nil {
						errs <- fmt.Errorf("%s: %w", d.KeyString(), err)
						return
					}
				}
			}()
		}
		for _, d := range page.Docs {
			work <- d
		}
		close(work)
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
		written += len(page.Docs)
		if page.Next == "" {
			return written
		}
		cursor = page.Next
	}
}

// benchConvert stands in for migrate.Convert: the legacy document as a current item in its
// derived bucket, as the canonical document ReplaceRaw and MoveRaw take.
func benchConvert(d gtc.RawDoc) map[string]any {
	str := func(k string) string { s, _ := d.Body[k].(string); return s }
	it := gtc.NewItem(d.DatasetName(), d.ID)
	it.Bucket = gtc.DeriveBucket(it.DatasetName, it.ID)
	it.Status = gtc.Status(str("status"))
	it.Comment = str("comment")
	it.UpdatedAt, _ = gtc.ParseTime(str("updatedAt"))
	it.History = []gtc.HistoryEntry{{Role: "user", Msg: str("synthQuestion")}, {Role: "assistant", Msg: str("answer")}}
	for _, t := range d.Body["tags"].([]any) {
		it.ManualTags = append(it.ManualTags, t.(string))
	}
	it.ManualTags = slices.Compact(slices.Sorted(slices.Values(it.ManualTags)))
	if refs, _ := d.Body["refs"].([]any); len(refs) > 0 {
		data, _ := json.Marshal(map[string]any{"references": refs})
		it.Plugins[gtc.RAGCompatSlot] = gtc.PluginPayload{Kind: gtc.RAGCompatSlot, Version: "1.0", Data: data}
	}
	dec := json.NewDecoder(bytes.NewReader(codec.ItemStoredJSON(it)))
	dec.UseNumber()
	var body map[string]any
	if err := dec.Decode(&body); err != nil {
		panic(err)
	}
	return body
}

// checkMigrated fails unless every one of the n documents is now a current item.
func checkMigrated(b *testing.B, s *Store, n int) {
	ctx := context.Background()
	st, err := s.Status(ctx)
	require.NoError(b, err)
	require.Equal(b, 0, st.Pending, "nothing is left to migrate")
	count, err := s.Items().Count(ctx, gtc.Filter{})
	require.NoError(b, err)
	require.Equal(b, n, count, "every document is an item")
}
