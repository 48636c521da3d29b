package sqlite

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	gtc "github.com/gtc-dev/gtc"
	"github.com/stretchr/testify/require"
)

// BenchmarkTagCountWrites measures the writes that change item_tags rows, which the
// triggers of schema version 4 follow in tag_counts. 16 clients write their own items of a
// 4,096-item store of tag-count fixture items (about six tag rows each) with
// synchronous=FULL, as the item PUT does:
//
//	go test ./storage/sqlite -run '^$' -bench TagCountWrites -benchtime 20000x
//
// manual-tags replaces two manual tags by two others (two rows out, two in), status changes
// the status (every tag row of the item deleted and inserted again), create adds new items.
func BenchmarkTagCountWrites(b *testing.B) {
	for _, mode := range []string{"manual-tags", "status", "create"} {
		b.Run(mode, func(b *testing.B) {
			const items = 4096
			s, reg := openTagBenchStore(b, items, "FULL")
			ctx := context.Background()
			base := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
			var next, ops atomic.Int64
			b.SetParallelism(16 / max(1, runtimeProcs()))
			start := time.Now()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				// Each goroutine owns its own 256 items, so writes never collide.
				g := int(next.Add(1) - 1)
				r := rand.New(rand.NewPCG(11, uint64(g)))
				j := 0
				for pb.Next() {
					j++
					if mode == "create" {
						it := tagFixtureItem(r, reg, 1_000_000+g*100_000+j, base)
						if _, err := s.Items().Create(ctx, it); err != nil {
							b.Error(err)
							return
						}
						ops.Add(1)
						continue
					}
					n := (g*256 + j%256) % items
					ds, id := tagFixtureDatasets[n%len(tagFixtureDatasets)], fmt.Sprintf("gt-%06d", n)
					cur, err := s.Items().Get(ctx, gtc.Key{DatasetName: ds, Bucket: gtc.DeriveBucket(ds, id), ID: id})
					if err != nil {
						b.Error(err)
						return
					}
					upd := cur.Clone()
					upd.UpdatedAt = upd.UpdatedAt.Add(time.Second)
					switch mode {
					case "manual-tags":
						if len(cur.ManualTags) == 2 && cur.ManualTags[0] == "difficulty:hard" {
							upd.ManualTags = []string{"source:sme", "topic:security"}
						} else {
							upd.ManualTags = []string{"difficulty:hard", "topic:install"}
						}
					default:
						upd.Status = gtc.StatusApproved
						if cur.Status == gtc.StatusApproved {
							upd.Status = gtc.StatusDraft
						}
					}
					if _, err := s.Items().Replace(ctx, cur, upd); err != nil {
						b.Error(err)
						return
					}
					ops.Add(1)
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(ops.Load())/time.Since(start).Seconds(), "writes/s")
		})
	}
}

// BenchmarkTagCountDeleteDataset deletes a dataset of 10,000 tag-count fixture items (about
// 60,000 tag rows, gone by ON DELETE CASCADE, each followed in tag_counts by the delete
// trigger); only the deletion is timed:
//
//	go test ./storage/sqlite -run '^$' -bench TagCountDeleteDataset -benchtime 5x
func BenchmarkTagCountDeleteDataset(b *testing.B) {
	s, reg := openTagBenchStore(b, 0, "FULL")
	ctx := context.Background()
	base := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	r := rand.New(rand.NewPCG(12, 12))
	round := 0
	for b.Loop() {
		b.StopTimer()
		round++
		ds := fmt.Sprintf("doomed-%d", round)
		items := make([]*gtc.Item, 0, 10_000)
		for n := range 10_000 {
			it := tagFixtureItem(r, reg, n, base)
			it.DatasetName, it.Bucket = ds, gtc.DeriveBucket(ds, it.ID)
			items = append(items, it)
		}
		require.NoError(b, s.items.createMany(ctx, items))
		b.StartTimer()
		del, err := s.items.DeleteDataset(ctx, ds)
		require.NoError(b, err)
		require.Equal(b, 10_000, del.Items)
	}
}
