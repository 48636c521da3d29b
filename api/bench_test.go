// Left out of the fuzz builds with the rest of package api_test (see harness_test.go).

//go:build !fuzzing

package api_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/api"
	"github.com/gtc-dev/gtc/export"
	"github.com/gtc-dev/gtc/screen"
	"github.com/gtc-dev/gtc/storage/localfs"
	"github.com/gtc-dev/gtc/storage/sqlite"
	"github.com/gtc-dev/gtc/storage/storetest/testenv"
	"github.com/gtc-dev/gtc/tagging"
)

// keepTagger is the save path without tag work: manual tags are kept as sent, computed tags
// as stored. It exists only to measure what the real pipeline costs.
type keepTagger struct{}

func (keepTagger) NormalizeManual(raw []string) ([]string, error) { return raw, nil }
func (keepTagger) Prepare(it *gtc.Item, raw []string, _ bool) (gtc.Prepared, error) {
	it.ManualTags = raw
	return gtc.Prepared{ManualTags: raw, ComputedTags: it.ComputedTags, Stripped: []string{}}, nil
}

func pipeline() gtc.Tagger {
	reg, _ := tagging.NewDefaultRegistry()
	groups, _ := tagging.LoadGroups("")
	validators, _ := tagging.NewValidators(nil, groups.Schema())
	return tagging.NewPipeline(reg, validators, nil)
}

// BenchmarkPutTagWork measures item PUTs through HTTP with 16 concurrent clients on distinct
// items, once with the real tag pipeline and once without tag work; the difference is what
// the save path's tag work costs (target: at most 5% of the throughput).
func BenchmarkPutTagWork(b *testing.B) {
	for _, tc := range []struct {
		name   string
		tagger func() gtc.Tagger
	}{
		{"pipeline", pipeline},
		{"no-tag-work", func() gtc.Tagger { return keepTagger{} }},
	} {
		b.Run(tc.name, func(b *testing.B) { benchPuts(b, tc.tagger, gtc.HistoryOptions{}) })
	}
}

// BenchmarkPutHistory is the same PUTs with the item history recorded (on) and not (off), in
// one run: what recording every change costs the save path.
func BenchmarkPutHistory(b *testing.B) {
	historyOnOff(b, func(b *testing.B, hist gtc.HistoryOptions) { benchPuts(b, pipeline, hist) })
}

// historyOnOff runs bench as two sub-benchmarks, with the item history recorded
// (history=on) and not (history=off).
func historyOnOff(b *testing.B, bench func(*testing.B, gtc.HistoryOptions)) {
	for _, h := range []struct {
		name string
		opts gtc.HistoryOptions
	}{{"history=on", gtc.HistoryOptions{}}, {"history=off", gtc.HistoryOptions{Disabled: true}}} {
		b.Run(h.name, func(b *testing.B) { bench(b, h.opts) })
	}
}

func benchPuts(b *testing.B, tagger func() gtc.Tagger, hist gtc.HistoryOptions) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Options{Path: filepath.Join(b.TempDir(), "gtc.db"), History: hist})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	// Both variants store the same items, made by the real pipeline; only the PUTs differ.
	seeder := gtc.NewCurator(gtc.CuratorDeps{Store: st, Tagger: pipeline(), IDs: gtc.NewIDGenerator(rand.Reader)})
	cur := gtc.NewCurator(gtc.CuratorDeps{Store: st, Tagger: tagger(), IDs: gtc.NewIDGenerator(rand.Reader)})
	srv := httptest.NewServer(api.New(api.Deps{Curator: cur}, api.Options{}).Handler())
	defer srv.Close()
	const items = 256
	var keys []gtc.Key
	for i := 0; i < items; i++ {
		it := gtc.NewItem("bench", fmt.Sprintf("item-%03d", i))
		it.History = []gtc.HistoryEntry{{Role: "user", Msg: "How do I rotate the API keys without downtime for every integration?"},
			{Role: "assistant", Msg: "Create a second key, roll it out, then revoke the first."}}
		it.Plugins[gtc.RAGCompatSlot] = gtc.PluginPayload{Kind: gtc.RAGCompatSlot, Version: "1.0",
			Data: json.RawMessage(`{"references":[{"url":"https://docs.example.com/help/keys","title":"Keys"},{"url":"https://kb.example.com/CS1234","title":"KB"}]}`)}
		created, err := seeder.CreateItem(ctx, it, []string{"source:sme", "topic:security", "difficulty:easy"})
		if err != nil {
			b.Fatal(err)
		}
		keys = append(keys, created.Key())
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	var next atomic.Int64
	b.SetParallelism(8) // 16 clients on 2 CPUs
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		k := keys[int(next.Add(1)-1)%items]
		url := srv.URL + "/v1/ground-truths/" + k.DatasetName + "/" + k.Bucket + "/" + k.ID
		etag := ""
		res, err := client.Get(url)
		if err == nil {
			etag = res.Header.Get("ETag")
			res.Body.Close()
		}
		n := 0
		for pb.Next() {
			n++
			body := fmt.Sprintf(`{"comment":"edit %d","manualTags":["difficulty:easy","source:sme","topic:security"]}`, n)
			req, _ := http.NewRequest(http.MethodPut, url, bytes.NewBufferString(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("If-Match", etag)
			res, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				b.Errorf("PUT: %d", res.StatusCode)
				return
			}
			etag = res.Header.Get("ETag")
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "writes/s")
}

// BenchmarkLargeItems reads answers over 100 items of about 1.4 MB each (140 MB of JSON):
// GET /v1/ground-truths/{datasetName} one request at a time and four at once, and GET
// /v1/ground-truths/snapshot (the curator frontend's "Export JSON"). It reports the peak of
// the live heap while the requests run (peak-MiB) next to the heap before them (base-MiB):
// the list is streamed and the snapshot spooled, and the store reads a few large items at a
// time, so the peak stays far below the size of the answer.
func BenchmarkLargeItems(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	st, err := sqlite.Open(ctx, sqlite.Options{Path: filepath.Join(dir, "gtc.db"), Synchronous: "NORMAL"})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	cur := gtc.NewCurator(gtc.CuratorDeps{Store: st, Tagger: keepTagger{}, IDs: gtc.NewIDGenerator(rand.Reader)})
	big := strings.Repeat("The signing keys rotate every ninety days; follow the runbook. ", 1400_000/64)
	for i := 0; i < 100; i++ {
		it := gtc.NewItem("large", fmt.Sprintf("item-%03d", i))
		it.Bucket = "6f1c3d2e-0000-4000-8000-000000000001"
		it.Status = gtc.StatusApproved
		it.History = []gtc.HistoryEntry{{Role: "user", Msg: "Summarise the key rotation runbook."}, {Role: "assistant", Msg: big}}
		if _, err := st.Items().Create(ctx, it); err != nil {
			b.Fatal(err)
		}
	}
	arts, err := localfs.Open(filepath.Join(dir, "exports"))
	if err != nil {
		b.Fatal(err)
	}
	defer arts.Close()
	pr, fr := export.Builtins(nil)
	exp, err := export.New(export.Config{Items: st.Items(), Artifacts: arts, Processors: pr, Formatters: fr, TempDir: filepath.Join(dir, "tmp")})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(api.New(api.Deps{Curator: cur, Exporter: exp}, api.Options{}).Handler())
	defer srv.Close()
	get := func(path string) int64 {
		res, err := http.Get(srv.URL + path)
		if err != nil {
			b.Error(err)
			return 0
		}
		defer res.Body.Close()
		n, err := io.Copy(io.Discard, res.Body)
		if err != nil || res.StatusCode != http.StatusOK {
			b.Errorf("GET %s: %d %v", path, res.StatusCode, err)
		}
		return n
	}
	for _, tc := range []struct {
		name    string
		path    string
		clients int
	}{
		{"list/clients=1", "/v1/ground-truths/large", 1},
		{"list/clients=4", "/v1/ground-truths/large", 4},
		{"snapshot/clients=1", "/v1/ground-truths/snapshot", 1},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var peak, base uint64
			var body atomic.Int64
			for b.Loop() {
				runtime.GC()
				metrics.Read(baseSample)
				base = max(base, baseSample[0].Value.Uint64())
				peak = max(peak, testenv.HeapPeak(func() {
					var wg sync.WaitGroup
					for range tc.clients {
						wg.Go(func() { body.Store(get(tc.path)) })
					}
					wg.Wait()
				}))
			}
			b.ReportMetric(float64(body.Load())/(1<<20), "body-MiB")
			b.ReportMetric(float64(base)/(1<<20), "base-MiB")
			b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
		})
	}
}

var baseSample = []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}

// BenchmarkImportHistory imports 10,000 new items in one request, with the PII and
// duplicate screens on as the server runs them by default, into a store of 2,000 items, with
// the item history recorded (on) and not (off).
func BenchmarkImportHistory(b *testing.B) { historyOnOff(b, benchImport) }

func benchImport(b *testing.B, hist gtc.HistoryOptions) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Options{Path: filepath.Join(b.TempDir(), "gtc.db"), History: hist})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	cur := gtc.NewCurator(gtc.CuratorDeps{Store: st, Tagger: pipeline(), IDs: gtc.NewIDGenerator(rand.Reader),
		ImportScreen: screen.New(screen.Options{PII: true, Duplicates: true, Items: st.Items()})})
	srv := httptest.NewServer(api.New(api.Deps{Curator: cur}, api.Options{}).Handler())
	defer srv.Close()
	body := func(run, n int) []byte {
		items := make([]map[string]any, n)
		for i := range items {
			items[i] = map[string]any{
				"id": fmt.Sprintf("import-%d-%05d", run, i), "datasetName": "bench", "comment": map[bool]string{true: fmt.Sprintf("Customer wrote from user%d@example.com", i)}[i%20 == 0],
				"manualTags": []string{"source:sme", "topic:security"},
				"history": []map[string]string{{"role": "user", "msg": fmt.Sprintf("How do I rotate the API keys without downtime? (case %d)", i)},
					{"role": "assistant", "msg": "Create a second key, roll it out, then revoke the first."}},
				"plugins": map[string]any{"rag-compat": map[string]any{"kind": "rag-compat", "data": map[string]any{"references": []map[string]any{
					{"url": fmt.Sprintf("https://docs.example.com/security/keys?i=%d", i), "title": "Keys"}}}}},
				"metadata": map[string]any{"origin": "bench", "seq": i},
			}
		}
		out, err := json.Marshal(items)
		if err != nil {
			b.Fatal(err)
		}
		return out
	}
	post := func(data []byte) {
		res, err := http.Post(srv.URL+"/v1/ground-truths", "application/json", bytes.NewReader(data))
		if err != nil {
			b.Fatal(err)
		}
		msg, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			b.Fatalf("import: %d %.300s", res.StatusCode, msg)
		}
	}
	post(body(0, 2000))
	run := 0
	for b.Loop() {
		b.StopTimer()
		run++
		data := body(run, 10000)
		b.StartTimer()
		post(data)
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/import")
}
