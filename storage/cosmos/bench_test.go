package cosmos

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	gtc "github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/storage/internal/parallel"
	"github.com/gtc-dev/gtc/storage/storetest/testenv"
)

// Benchmarks against the Cosmos DB test server on loopback (make bench): a lower bound,
// since a real account adds network latency and request-unit throttling. Each reports the
// median latency and the number of HTTP requests per operation, which is what grows with
// the data on a real account too.
//
//	GTC_BENCH_COSMOS_SIZES  item counts of the list benchmark (default 10000; make bench: 10000,100000)

// countingTransport counts requests and sums their request charges (x-ms-request-charge,
// in thousandths of a request unit).
type countingTransport struct {
	next http.RoundTripper
	n    atomic.Int64
	mru  atomic.Int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	resp, err := c.next.RoundTrip(r)
	if err == nil {
		if ru, perr := strconv.ParseFloat(resp.Header.Get("x-ms-request-charge"), 64); perr == nil {
			c.mru.Add(int64(math.Round(ru * 1000)))
		}
	}
	return resp, err
}

// benchStore opens a store on a fresh database that is dropped afterwards.
func benchStore(b *testing.B) (*Store, *countingTransport) {
	b.Helper()
	env := testenv.Cosmos(b)
	var id [8]byte
	_, _ = rand.Read(id[:])
	ct := &countingTransport{next: env.HTTP.Transport}
	ctx := context.Background()
	s, err := Open(ctx, Options{Endpoint: env.Endpoint, Key: env.Key, Database: "bench_" + hex.EncodeToString(id[:]),
		CreateContainers: true, HTTPClient: &http.Client{Transport: ct},
		// The test server evaluates every query over every document of the container, so a
		// query over 100,000 items takes seconds there.
		RequestTimeout: 5 * time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.DropDatabase(ctx); err != nil {
			b.Errorf("drop: %v", err)
		}
		_ = s.Close()
	})
	return s, ct
}

// seed writes n small items over datasets datasets, 32 at a time, without the uniqueness
// query of Create (the ids are unique by construction), so large fixtures load quickly.
func seed(b *testing.B, s *Store, n, datasets int) []*gtc.Item {
	b.Helper()
	ctx := context.Background()
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	items := make([]*gtc.Item, n)
	for i := range items {
		ds := fmt.Sprintf("bench-%02d", i%datasets)
		it := gtc.NewItem(ds, fmt.Sprintf("item-%07d", i))
		it.Bucket = gtc.DeriveBucket(ds, it.ID)
		it.UpdatedAt = base.Add(time.Duration(i*7919%n) * time.Second)
		it.Status = gtc.Statuses[i%3]
		it.ManualTags = []string{"topic:" + strconv.Itoa(i%7)}
		it.History = []gtc.HistoryEntry{{Role: "user", Msg: "question " + strconv.Itoa(i)}, {Role: "assistant", Msg: "answer"}}
		items[i] = it
	}
	start := time.Now()
	err := parallel.ForEach(ctx, n, 32, func(ctx context.Context, i int) error {
		p, err := s.prepareItem("seed", items[i])
		if err != nil {
			return err
		}
		if err := s.registry.ensure(ctx, partition{Dataset: items[i].DatasetName, Bucket: items[i].Bucket}); err != nil {
			return err
		}
		resp, err := s.gt.CreateItem(ctx, itemKey(items[i].DatasetName, items[i].Bucket), p.doc, nil)
		if err != nil {
			return err
		}
		p.stored.ETag = string(resp.ETag)
		items[i] = p.stored
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("seeded %d items in %d datasets in %s", n, datasets, time.Since(start).Round(time.Millisecond))
	return items
}

// measure runs op b.N times and reports the median latency and requests per operation.
func measure(b *testing.B, ct *countingTransport, op func() error) {
	b.Helper()
	var lat []time.Duration
	before, beforeRU := ct.n.Load(), ct.mru.Load()
	b.ResetTimer()
	for b.Loop() {
		t := time.Now()
		if err := op(); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "ms-median")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "ms-p99")
	b.ReportMetric(float64(ct.n.Load()-before)/float64(len(lat)), "requests/op")
	b.ReportMetric(float64(ct.mru.Load()-beforeRU)/1000/float64(len(lat)), "RU/op")
}

func BenchmarkPointRead(b *testing.B) {
	s, ct := benchStore(b)
	items := seed(b, s, 200, 2)
	ctx := context.Background()
	i := 0
	measure(b, ct, func() error {
		i++
		_, err := s.items.Get(ctx, items[i%len(items)].Key())
		return err
	})
}

func BenchmarkConditionalReplace(b *testing.B) {
	s, ct := benchStore(b)
	items := seed(b, s, 200, 2)
	ctx := context.Background()
	i := 0
	measure(b, ct, func() error {
		i++
		k := i % len(items)
		next := items[k].Clone()
		next.Comment = "edit " + strconv.Itoa(i)
		out, err := s.items.Replace(ctx, items[k], next)
		if err == nil {
			items[k] = out
		}
		return err
	})
}

// BenchmarkListPage is the explorer's list: one page of 25 with the exact total, first page
// and a deep page, unfiltered and filtered, at each size of GTC_BENCH_COSMOS_SIZES.
func BenchmarkListPage(b *testing.B) {
	sizes := []int{10000}
	if v := os.Getenv("GTC_BENCH_COSMOS_SIZES"); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(f)
			if err != nil || n < 1 {
				b.Fatalf("GTC_BENCH_COSMOS_SIZES: %q is not a count", f)
			}
			sizes = append(sizes, n)
		}
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("items=%d", n), func(b *testing.B) {
			s, ct := benchStore(b)
			seed(b, s, n, 4)
			ctx := context.Background()
			for _, c := range []struct {
				name string
				q    gtc.Query
			}{
				{"first-page", gtc.Query{Sort: gtc.SortReviewedAt, Desc: true, Limit: 25}},
				{"page-40", gtc.Query{Sort: gtc.SortReviewedAt, Desc: true, Offset: 975, Limit: 25}},
				{"one-dataset-approved", gtc.Query{Filter: gtc.Filter{DatasetNames: []string{"bench-01"}, Statuses: []gtc.Status{gtc.StatusApproved}}, Sort: gtc.SortUpdatedAt, Limit: 25}},
				{"keyword", gtc.Query{Filter: gtc.Filter{Keyword: "question 12"}, Sort: gtc.SortID, Limit: 25}},
			} {
				b.Run(c.name, func(b *testing.B) {
					measure(b, ct, func() error {
						p, err := s.items.Query(ctx, c.q)
						if err == nil && p.Total == 0 {
							err = fmt.Errorf("no matches for %s", c.name)
						}
						return err
					})
				})
			}
		})
	}
}
