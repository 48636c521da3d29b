package agenttools

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/storage/sqlite"
	"github.com/gtc-dev/gtc/tagging"
)

// benchItems is the store size of the agent benchmarks: GTC_BENCH_AGENT_ITEMS, default
// 100,000. Every tenth item carries topic:instal, so a rename touches a tenth of the store
// (10,000 items at the default size).
func benchItems(b *testing.B) int {
	n := 100000
	if v := os.Getenv("GTC_BENCH_AGENT_ITEMS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatalf("GTC_BENCH_AGENT_ITEMS=%q: %v", v, err)
		}
	}
	return n
}

var (
	benchTemplateMu sync.Mutex
	benchTemplates  = map[int]string{}
)

// benchTemplate builds (once per process and size) an SQLite file of n items in 10
// datasets and returns its path; benchmarks work on copies.
func benchTemplate(b *testing.B, n int) string {
	benchTemplateMu.Lock()
	defer benchTemplateMu.Unlock()
	if p := benchTemplates[n]; p != "" {
		return p
	}
	dir, err := os.MkdirTemp("", "gtc-agent-bench-")
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(dir, "gtc.db")
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Options{Path: path, Synchronous: "NORMAL"})
	if err != nil {
		b.Fatal(err)
	}
	reg, _ := tagging.NewDefaultRegistry()
	groups, _ := tagging.LoadGroups("")
	vals, _ := tagging.NewValidators([]string{"exclusive_group"}, groups.Schema())
	cur := gtc.NewCurator(gtc.CuratorDeps{Store: st, Tagger: tagging.NewPipeline(reg, vals, nil)})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				it := gtc.NewItem(fmt.Sprintf("dataset-%02d", i%10), fmt.Sprintf("item-%06d", i))
				it.History = []gtc.HistoryEntry{{Role: "user", Msg: fmt.Sprintf("How do I install version %d on my router?", i)},
					{Role: "assistant", Msg: "Open the admin page and upload the firmware file."}}
				manual := []string{"difficulty:easy", fmt.Sprintf("topic:t%d", i%50)}
				if i%10 == 3 {
					manual = append(manual, "topic:instal")
				}
				if _, err := cur.CreateItem(ctx, it, manual); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	benchTemplates[n] = path
	return path
}

// benchBulk opens a copy of the template with a bulk service whose write rate is
// unlimited, so the store's write path is what is measured.
func benchBulk(b *testing.B, n int) (*Bulk, func()) {
	src := benchTemplate(b, n)
	dst := filepath.Join(b.TempDir(), "gtc.db")
	copyFile(b, src, dst)
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Options{Path: dst})
	if err != nil {
		b.Fatal(err)
	}
	reg, _ := tagging.NewDefaultRegistry()
	groups, _ := tagging.LoadGroups("")
	vals, _ := tagging.NewValidators([]string{"exclusive_group"}, groups.Schema())
	pipe := tagging.NewPipeline(reg, vals, nil)
	cur := gtc.NewCurator(gtc.CuratorDeps{Store: st, Tagger: pipe})
	bulk := NewBulk(BulkDeps{Items: st.Items(), Saver: cur, Audit: newMemAudit(), Leases: st.Leases(), Previews: st.AgentPreviews(), Pipeline: pipe,
		Known: func(context.Context) ([]string, error) { return []string{"topic:install"}, nil }},
		BulkOptions{WritesPerSecond: 1_000_000_000, ExecWait: time.Hour})
	return bulk, func() { bulk.Close(ctx); _ = st.Close() }
}

func copyFile(b *testing.B, src, dst string) {
	in, err := os.Open(src)
	if err != nil {
		b.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		b.Fatal(err)
	}
	if err := out.Close(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkAgentPreviewRename previews merge_tags topic:instal -> topic:install, which
// touches a tenth of the store (10,000 of 100,000 items). Target: ≤ 500 ms.
//
//	go test -run '^$' -bench AgentPreviewRename -benchtime 5x ./agenttools/
func BenchmarkAgentPreviewRename(b *testing.B) {
	n := benchItems(b)
	bulk, done := benchBulk(b, n)
	defer done()
	call := ToolCall{Caller: gtc.Caller{UserID: "bench"}, Via: "http"}
	for b.Loop() {
		r := bulk.ManageTags(context.Background(), call, map[string]any{"operation": "merge_tags", "tag_from": "topic:instal", "tag_to": "topic:install"})
		if r.IsError || r.Data.(map[string]any)["wouldChange"] != n/10 {
			b.Fatalf("preview: %s", r.Content)
		}
	}
}

// BenchmarkAgentExecuteRename executes that rename (the preview is not timed) and reports
// items written per second. Target: ≥ 2,000 items/s.
//
//	go test -run '^$' -bench AgentExecuteRename -benchtime 1x ./agenttools/
func BenchmarkAgentExecuteRename(b *testing.B) {
	n := benchItems(b)
	call := ToolCall{Caller: gtc.Caller{UserID: "bench"}, Via: "http"}
	args := map[string]any{"operation": "merge_tags", "tag_from": "topic:instal", "tag_to": "topic:install"}
	for b.Loop() {
		b.StopTimer()
		bulk, done := benchBulk(b, n)
		if r := bulk.ManageTags(context.Background(), call, args); r.IsError {
			b.Fatal(r.Content)
		}
		exec := map[string]any{"dry_run": false}
		for k, v := range args {
			exec[k] = v
		}
		b.StartTimer()
		start := time.Now()
		r := bulk.ManageTags(context.Background(), call, exec)
		elapsed := time.Since(start)
		b.StopTimer()
		counts, _ := r.Data.(map[string]any)["counts"].(gtc.AgentOpCounts)
		if r.IsError || counts.Applied != n/10 {
			b.Fatalf("execute: %s", r.Content)
		}
		b.ReportMetric(float64(counts.Applied)/elapsed.Seconds(), "items/s")
		done()
		b.StartTimer()
	}
}
