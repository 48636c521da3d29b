package sqlite

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	gtc "github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/agenttools"
	"github.com/gtc-dev/gtc/tagging"
	"github.com/stretchr/testify/require"
)

// BenchmarkTagStats measures the tag_stats agent tool (agenttools.Reads.TagStats, counting
// through CountTags on the item_tags index) on a file store of GTC_BENCH_TAG_ITEMS items
// (default 100,000, built once; about a minute), over 10 datasets with real computed tags
// and zero to three manual tags per item:
//
//	go test ./storage/sqlite -run '^$' -bench TagStats -benchtime 50x
//
// scan-fallback is the same tool on a store without the index count (what Cosmos DB does).
func BenchmarkTagStats(b *testing.B) {
	n := benchEnvInt(b, "GTC_BENCH_TAG_ITEMS", benchItems)
	s, reg := openTagBenchStore(b, n, "NORMAL")
	ctx := context.Background()
	known := func(context.Context) ([]string, error) { return tagFixtureManual[:10], nil }
	reads := agenttools.NewReads(agenttools.ReadsDeps{Store: s, Registry: reg, Known: known})
	cases := []struct {
		name string
		args map[string]any
	}{
		{"all", map[string]any{"kind": "all", "sort_by": "count", "limit": 50}},
		{"manual", map[string]any{"kind": "manual", "sort_by": "count", "limit": 50}},
		{"dataset", map[string]any{"dataset": "billing-agent", "kind": "all", "sort_by": "count", "limit": 50}},
		{"status", map[string]any{"status": "approved", "kind": "all", "sort_by": "count", "limit": 50}},
		{"dataset+status", map[string]any{"dataset": "billing-agent", "status": "draft", "kind": "all", "sort_by": "count", "limit": 50}},
	}
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			var lat latencies
			for b.Loop() {
				t0 := time.Now()
				res := reads.TagStats(ctx, bc.args)
				lat.add(time.Since(t0))
				if res.IsError {
					b.Fatal(res.Content)
				}
			}
			lat.report(b)
		})
	}
	plain := agenttools.NewReads(agenttools.ReadsDeps{Store: tagBenchPlainStore{Store: s, items: tagBenchPlainItems{s.Items()}}, Registry: reg, Known: known})
	b.Run("scan-fallback/all", func(b *testing.B) {
		for b.Loop() {
			if res := plain.TagStats(ctx, cases[0].args); res.IsError {
				b.Fatal(res.Content)
			}
		}
	})
}

// tagBenchPlainStore hides the store's TagCounter.
type tagBenchPlainStore struct {
	gtc.Store
	items gtc.ItemStore
}

func (s tagBenchPlainStore) Items() gtc.ItemStore { return s.items }

type tagBenchPlainItems struct{ gtc.ItemStore }

// benchEnvInt reads a positive item count from the environment, def when unset.
func benchEnvInt(b *testing.B, name string, def int) int {
	b.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive count", name, v)
	}
	return n
}

// openTagBenchStore opens a file store with n tag-count fixture items (none for n = 0) and
// the given synchronous setting.
func openTagBenchStore(b *testing.B, n int, synchronous string) (*Store, *tagging.Registry) {
	b.Helper()
	ctx := context.Background()
	reg, err := tagging.NewDefaultRegistry()
	require.NoError(b, err)
	s, err := Open(ctx, Options{Path: filepath.Join(b.TempDir(), "gtc.db"), Synchronous: synchronous})
	require.NoError(b, err)
	b.Cleanup(func() { _ = s.Close() })
	base := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	if n == 0 {
		return s, reg
	}
	start := time.Now()
	loadInChunks(b, n, func(lo, hi int) error {
		r := rand.New(rand.NewPCG(3, uint64(lo)))
		items := make([]*gtc.Item, 0, hi-lo)
		for j := lo; j < hi; j++ {
			items = append(items, tagFixtureItem(r, reg, j, base))
		}
		return s.items.createMany(ctx, items)
	})
	b.Logf("built %d items in %s", n, time.Since(start).Round(time.Millisecond))
	return s, reg
}
