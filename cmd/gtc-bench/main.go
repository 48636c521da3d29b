// Command gtc-bench measures a real gtc server through HTTP on loopback: it seeds a store,
// starts `gtc serve`, and drives list, read and write workloads against it, printing latency
// percentiles, throughput, readiness time and the server's memory. `make bench` runs it.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gtc-dev/gtc/cmd/internal/loadkit"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "gtc-bench:", err)
		os.Exit(1)
	}
}

type options struct {
	gtc       string
	gtcOld    string
	items     int
	datasets  int
	listN     int
	getN      int
	writers   int
	writeTime time.Duration
	keep      bool
	dataDir   string
	suite     string
	exportN   int
	exportDir string
	blobCS    string

	rounds         int
	instrListN     int
	instrWarmup    int
	instrWriteTime time.Duration

	historyItems, historyEdits, historyRevisions int

	engineImport int
	enginePaths  string
}

func run(ctx context.Context, args []string, out io.Writer) error {
	var o options
	fs := flag.NewFlagSet("gtc-bench", flag.ContinueOnError)
	fs.StringVar(&o.gtc, "gtc", "bin/gtc", "path of the gtc binary")
	fs.StringVar(&o.gtcOld, "gtc-old", "", "hostile and compare suites: a second gtc binary measured side by side with --gtc")
	fs.IntVar(&o.items, "items", 100000, "items to seed")
	fs.IntVar(&o.datasets, "datasets", 10, "datasets to spread them over")
	fs.IntVar(&o.listN, "list-requests", 2000, "list requests to time")
	fs.IntVar(&o.getN, "get-requests", 5000, "single-item reads to time")
	fs.IntVar(&o.writers, "writers", 16, "concurrent writers, each on its own items")
	fs.DurationVar(&o.writeTime, "write-duration", 15*time.Second, "how long the write phase runs")
	fs.BoolVar(&o.keep, "keep", false, "keep the data directory")
	fs.StringVar(&o.dataDir, "data-dir", "", "reuse this data directory (seeded when empty)")
	fs.StringVar(&o.suite, "suite", "all", "what to measure: api, export, release, instrumentation, hostile, compare, history, engine or all (api and export)")
	fs.IntVar(&o.exportN, "export-items", 100000, "approved items in the export, release and compare suites' store")
	fs.StringVar(&o.exportDir, "export-data-dir", "", "reuse this data directory for the export and release suites (seeded when empty)")
	fs.StringVar(&o.blobCS, "blob-connection-string", os.Getenv("GTC_BENCH_BLOB_CONNECTION_STRING"),
		"Blob (Azurite) connection string for the Blob export figures; empty skips them")
	fs.IntVar(&o.rounds, "rounds", 6, "instrumentation and compare suites: interleaved rounds of each variant")
	fs.IntVar(&o.instrListN, "instr-list-requests", 1000, "instrumentation suite: list requests timed per round")
	fs.IntVar(&o.instrWarmup, "instr-warmup", 100, "instrumentation suite: untimed list requests before them")
	fs.DurationVar(&o.instrWriteTime, "instr-write-duration", 10*time.Second, "instrumentation and compare suites: PUT phase per round")
	fs.IntVar(&o.historyItems, "history-items", 100000, "history suite: items of the storage-cost store (0 skips it)")
	fs.IntVar(&o.historyEdits, "history-edits", 5, "history suite: edits of each of them")
	fs.IntVar(&o.historyRevisions, "history-revisions", 1000, "history suite: revisions of the item whose history is read")
	fs.IntVar(&o.engineImport, "engine-import", 10000, "engine suite: items in the import file")
	fs.StringVar(&o.enginePaths, "engine-paths", "", "engine suite: comma-separated paths to run (default all: import, import-checks-off, put-16-clients, jsonl-export-stream, recompute-all-new, migrate, agent-execution)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch o.suite {
	case "api", "export", "release", "instrumentation", "hostile", "compare", "history", "engine", "all":
	default:
		return fmt.Errorf("--suite %q: must be api, export, release, instrumentation, hostile, compare, history, engine or all", o.suite)
	}
	dir := o.dataDir
	if dir == "" && (o.suite != "export" && o.suite != "release" || o.exportDir == "") {
		var err error
		dir, err = os.MkdirTemp("", "gtc-bench-")
		if err != nil {
			return err
		}
		if !o.keep {
			defer os.RemoveAll(dir)
		}
	}
	fmt.Fprintf(out, "gtc-bench  %s  %d CPU  %s  %s\n", time.Now().UTC().Format("2006-01-02"), runtime.NumCPU(), loadkit.CPUModel(), runtime.Version())
	if o.suite == "instrumentation" {
		fmt.Fprintf(out, "data dir   %s\n\n", dir)
		return instrumentationSuite(ctx, o, dir, out)
	}
	if o.suite == "compare" {
		fmt.Fprintf(out, "data dir   %s\n", dir)
		return compareSuite(ctx, o, dir, out)
	}
	if o.suite == "history" {
		fmt.Fprintf(out, "data dir   %s\n", dir)
		return historySuite(ctx, o, dir, out)
	}
	if o.suite == "engine" {
		fmt.Fprintf(out, "data dir   %s\n", dir)
		return engineSuite(ctx, o, dir, out)
	}
	if o.suite == "release" {
		edir := o.exportDir
		if edir == "" {
			edir = filepath.Join(dir, "export-suite")
		}
		return releaseSuite(ctx, o, edir, out)
	}
	if o.suite == "hostile" {
		fmt.Fprintf(out, "data dir   %s\n", dir)
		return hostileSuite(ctx, o, dir, out)
	}
	if o.suite != "export" {
		fmt.Fprintf(out, "data dir   %s\n\n", dir)
		if err := apiSuite(ctx, o, dir, out); err != nil {
			return err
		}
	}
	if o.suite != "api" {
		edir := o.exportDir
		if edir == "" {
			edir = filepath.Join(dir, "export-suite")
		}
		if err := exportSuite(ctx, o, edir, out); err != nil {
			return fmt.Errorf("export suite: %w", err)
		}
	}
	return nil
}

// apiSuite measures the item API, the curation workflow and recompute on a mixed store.
func apiSuite(ctx context.Context, o options, dir string, out io.Writer) error {

	start := time.Now()
	if err := seedStore(ctx, o.gtc, dir, o.items, o.datasets); err != nil {
		return err
	}
	fmt.Fprintf(out, "%-44s %s\n", fmt.Sprintf("seed %d items", o.items), time.Since(start).Round(time.Millisecond))

	srv, err := loadkit.StartServer(ctx, o.gtc, dir)
	if err != nil {
		return err
	}
	defer func() { _ = srv.Stop() }()
	fmt.Fprintf(out, "%-44s %s\n", "serve: start to first /readyz 200", srv.ReadyAfter.Round(100*time.Microsecond))

	c := &client{loadkit.NewClient(srv.Base, 128, 30*time.Second)}
	var datasets []string
	if err := c.GetJSON("/v1/datasets", &datasets); err != nil {
		return err
	}
	if err := c.checkTotal(datasets[0]); err != nil {
		return err
	}
	fmt.Fprintf(out, "%-44s %s\n", "list total checked by paging", "exact")

	lat, err := c.listPhase(datasets, o.listN)
	if err != nil {
		return err
	}
	loadkit.Report(out, "GET /v1/ground-truths ds+status+tag, 25/page", lat)

	keys, err := c.collectKeys(datasets, max(o.writers*8, 800))
	if err != nil {
		return err
	}
	lat, err = c.getPhase(keys, o.getN)
	if err != nil {
		return err
	}
	loadkit.Report(out, "GET one item", lat)

	rate, wlat, errs, err := c.writePhase(keys, o.writers, o.writeTime)
	if err != nil {
		return err
	}
	loadkit.Report(out, fmt.Sprintf("PUT one item, %d writers", o.writers), wlat)
	fmt.Fprintf(out, "%-44s %.0f writes/s (%d errors)\n", "PUT throughput", rate, errs)
	fmt.Fprintf(out, "%-44s %.1f MiB (peak while measuring)\n", "server RSS", loadkit.MiB(srv.PeakRSS()))

	// 200 curators claim 2,000 items; a small store (about 40% of seeded items are in the
	// pool) gets fewer, so the phase and the 50 of myPhase do not run the pool dry.
	lat, err = c.selfServePhase(max(1, min(200, o.items/40)))
	if err != nil {
		return err
	}
	loadkit.Report(out, "POST /v1/assignments/self-serve limit 10", lat)
	lat, err = c.myPhase(500)
	if err != nil {
		return err
	}
	loadkit.Report(out, "GET /v1/assignments/my, 50 items held", lat)
	imp, err := c.importPhase(datasets[0], 10000)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%-44s %s (%d imported, %d PII warnings, %d duplicate warnings)\n", "POST /v1/ground-truths, 10,000 items",
		imp.took.Round(time.Millisecond), imp.imported, imp.pii, imp.dups)

	srv.ResetPeakRSS(0)
	n, dur, err := c.recomputeJob()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%-44s %d items in %s, %.0f items/s; server RSS peak %.1f MiB\n", "recompute-tags async job (no changes)",
		n, dur.Round(time.Millisecond), float64(n)/dur.Seconds(), loadkit.MiB(srv.PeakRSS()))
	return nil
}

// selfServePhase has n curators each fill a queue of 10.
func (c *client) selfServePhase(n int) ([]time.Duration, error) {
	run := time.Now().UnixNano() // new curators on every run, so each call claims 10 items
	lat := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		t := time.Now()
		res, data, err := c.Do(http.MethodPost, "/v1/assignments/self-serve", []byte(`{"limit":10}`),
			map[string]string{"X-User-Id": fmt.Sprintf("bench-curator-%x-%03d@example.com", run, i)})
		lat = append(lat, time.Since(t))
		if err != nil {
			return nil, err
		}
		if res.StatusCode != http.StatusOK || !bytes.Contains(data, []byte(`"newlyAssigned":10`)) {
			return nil, fmt.Errorf("self-serve did not claim 10 items: %d %.200s", res.StatusCode, data)
		}
	}
	return lat, nil
}

// myPhase reads the queue of a curator holding 50 items.
func (c *client) myPhase(n int) ([]time.Duration, error) {
	who := map[string]string{"X-User-Id": fmt.Sprintf("bench-holder-%x@example.com", time.Now().UnixNano())}
	res, data, err := c.Do(http.MethodPost, "/v1/assignments/self-serve", []byte(`{"limit":50}`), who)
	if err != nil {
		return nil, err
	}
	var ss struct {
		AssignedCount int `json:"assignedCount"`
	}
	if err := json.Unmarshal(data, &ss); err != nil || res.StatusCode != http.StatusOK || ss.AssignedCount != 50 {
		return nil, fmt.Errorf("self-serve 50: %d %s", res.StatusCode, data)
	}
	lat := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		t := time.Now()
		res, data, err := c.Do(http.MethodGet, "/v1/assignments/my", nil, who)
		lat = append(lat, time.Since(t))
		if err != nil {
			return nil, err
		}
		if res.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("my: %d %s", res.StatusCode, data)
		}
	}
	return lat, nil
}

type importFigures struct {
	took                time.Duration
	imported, pii, dups int
}

// importPhase posts n new items into one existing dataset in a single request: some carry
// e-mail addresses or phone numbers, and some repeat a question, so both checks do work.
func (c *client) importPhase(dataset string, n int) (importFigures, error) {
	r := rand.New(rand.NewPCG(7, 8))
	questions := []string{"How do I rotate the API keys without downtime?", "Which browsers are supported?",
		"Where do I download the installer for the desktop client?", "Is customer data encrypted at rest?"}
	run := time.Now().UnixNano() // new ids on every run, so a reused store imports them too
	items := make([]map[string]any, n)
	for i := range items {
		q := fmt.Sprintf("%s (case %d)", questions[r.IntN(len(questions))], i)
		if i%50 == 0 {
			q = questions[r.IntN(len(questions))] // repeats a question approved items may share
		}
		comment := ""
		switch i % 20 {
		case 0:
			comment = fmt.Sprintf("Customer wrote from user%d@example.com", i)
		case 1:
			comment = fmt.Sprintf("Call back at 555-%03d-%04d", r.IntN(1000), r.IntN(10000))
		}
		items[i] = map[string]any{
			"id": fmt.Sprintf("bench-import-%x-%05d", run, i), "datasetName": dataset, "comment": comment,
			"manualTags": []string{"source:synthetic", "topic:security"},
			"history":    []map[string]string{{"role": "user", "msg": q}, {"role": "assistant", "msg": "Create a second key, roll it out, then revoke the first."}},
			"plugins": map[string]any{"rag-compat": map[string]any{"kind": "rag-compat", "data": map[string]any{"references": []map[string]any{
				{"url": fmt.Sprintf("https://docs.example.com/security/keys?i=%d", i), "title": "Keys"}}}}},
			"metadata": map[string]any{"origin": "bench", "seq": i},
		}
	}
	body, err := json.Marshal(items)
	if err != nil {
		return importFigures{}, err
	}
	start := time.Now()
	res, data, err := c.Do(http.MethodPost, "/v1/ground-truths", body, nil)
	took := time.Since(start)
	if err != nil {
		return importFigures{}, err
	}
	var out struct {
		Imported          int   `json:"imported"`
		PIIWarnings       []any `json:"piiWarnings"`
		DuplicateWarnings []any `json:"duplicateWarnings"`
	}
	if res.StatusCode != http.StatusOK || json.Unmarshal(data, &out) != nil {
		return importFigures{}, fmt.Errorf("import: %d %.300s", res.StatusCode, data)
	}
	return importFigures{took: took, imported: out.Imported, pii: len(out.PIIWarnings), dups: len(out.DuplicateWarnings)}, nil
}

// recomputeJob starts an asynchronous recompute of every item and waits for it.
func (c *client) recomputeJob() (int, time.Duration, error) {
	res, data, err := c.Do(http.MethodPost, "/v1/ground-truths/recompute-tags?async=true", nil, nil)
	if err != nil {
		return 0, 0, err
	}
	if res.StatusCode != http.StatusAccepted {
		return 0, 0, fmt.Errorf("recompute: %d %s", res.StatusCode, data)
	}
	start := time.Now()
	var job struct {
		ID     string `json:"id"`
		Status string `json:"status"`
		Result struct {
			Total int `json:"total"`
		} `json:"result"`
		Error any `json:"error"`
	}
	if err := json.Unmarshal(data, &job); err != nil {
		return 0, 0, err
	}
	for job.Status != "succeeded" {
		if job.Status == "failed" {
			return 0, 0, fmt.Errorf("recompute job failed: %v", job.Error)
		}
		time.Sleep(20 * time.Millisecond)
		if err := c.GetJSON("/v1/jobs/"+job.ID, &job); err != nil {
			return 0, 0, err
		}
	}
	return job.Result.Total, time.Since(start), nil
}

type listPage struct {
	Items []struct {
		ID          string `json:"id"`
		DatasetName string `json:"datasetName"`
		Bucket      string `json:"bucket"`
		ETag        string `json:"_etag"`
	} `json:"items"`
	Pagination struct {
		Total int `json:"total"`
	} `json:"pagination"`
}

var benchTags = []string{"source:sme", "source:synthetic", "topic:install", "topic:security", "turns:multiturn", "retrieval_behavior:single", "difficulty:hard"}

func listQuery(ds, status, tag string, page int) string {
	q := url.Values{"dataset": {ds}, "status": {status}, "tags": {tag}, "sortBy": {"reviewedAt"}, "sortOrder": {"desc"},
		"limit": {"25"}, "page": {strconv.Itoa(page)}}
	return "/v1/ground-truths?" + q.Encode()
}

// checkTotal pages through one filtered list and compares the count with its total.
func (c *client) checkTotal(ds string) error {
	var first listPage
	base := url.Values{"dataset": {ds}, "status": {"approved"}, "tags": {"source:sme"}, "limit": {"100"}}
	if err := c.GetJSON("/v1/ground-truths?"+base.Encode(), &first); err != nil {
		return err
	}
	seen := map[string]bool{}
	for page := 1; ; page++ {
		base.Set("page", strconv.Itoa(page))
		var p listPage
		if err := c.GetJSON("/v1/ground-truths?"+base.Encode(), &p); err != nil {
			return err
		}
		if len(p.Items) == 0 {
			break
		}
		for _, it := range p.Items {
			seen[it.ID] = true
		}
	}
	if len(seen) != first.Pagination.Total {
		return fmt.Errorf("list total %d but paging found %d items", first.Pagination.Total, len(seen))
	}
	return nil
}

func (c *client) listPhase(datasets []string, n int) ([]time.Duration, error) {
	r := rand.New(rand.NewPCG(1, 2))
	lat := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		status := []string{"approved", "draft"}[r.IntN(2)]
		path := listQuery(datasets[r.IntN(len(datasets))], status, benchTags[r.IntN(len(benchTags))], 1+r.IntN(3))
		t := time.Now()
		res, data, err := c.Do(http.MethodGet, path, nil, nil)
		d := time.Since(t)
		if err != nil {
			return nil, err
		}
		if res.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("GET %s: %d %s", path, res.StatusCode, data)
		}
		lat = append(lat, d)
	}
	return lat, nil
}

type itemKey struct{ path, etag string }

// collectKeys gathers distinct draft items to read and write.
func (c *client) collectKeys(datasets []string, n int) ([]itemKey, error) {
	var keys []itemKey
	for page := 1; len(keys) < n; page++ {
		var p listPage
		q := url.Values{"status": {"draft"}, "sortBy": {"id"}, "limit": {"100"}, "page": {strconv.Itoa(page)}}
		if err := c.GetJSON("/v1/ground-truths?"+q.Encode(), &p); err != nil {
			return nil, err
		}
		if len(p.Items) == 0 {
			break
		}
		for _, it := range p.Items {
			keys = append(keys, itemKey{path: "/v1/ground-truths/" + url.PathEscape(it.DatasetName) + "/" + it.Bucket + "/" + url.PathEscape(it.ID), etag: it.ETag})
		}
	}
	if len(keys) == 0 {
		return nil, errors.New("no draft items to measure")
	}
	_ = datasets
	return keys, nil
}

func (c *client) getPhase(keys []itemKey, n int) ([]time.Duration, error) {
	r := rand.New(rand.NewPCG(3, 4))
	lat := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		k := keys[r.IntN(len(keys))]
		t := time.Now()
		res, data, err := c.Do(http.MethodGet, k.path, nil, nil)
		d := time.Since(t)
		if err != nil {
			return nil, err
		}
		if res.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("GET %s: %d %s", k.path, res.StatusCode, data)
		}
		lat = append(lat, d)
	}
	return lat, nil
}

// writePhase runs writers clients, each updating its own items with If-Match for dur.
func (c *client) writePhase(keys []itemKey, writers int, dur time.Duration) (float64, []time.Duration, int64, error) {
	var ok, bad atomic.Int64
	var mu sync.Mutex
	var all []time.Duration
	deadline := time.Now().Add(dur)
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		mine := []itemKey{}
		for i := w; i < len(keys); i += writers {
			mine = append(mine, keys[i])
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lat []time.Duration
			for n := 0; time.Now().Before(deadline); n++ {
				k := &mine[n%len(mine)]
				body := []byte(fmt.Sprintf(`{"comment":"bench write %d","manualTags":["source:sme","topic:install"]}`, n))
				t := time.Now()
				done := c.put(k, body)
				lat = append(lat, time.Since(t))
				if !done {
					bad.Add(1)
					continue
				}
				ok.Add(1)
			}
			mu.Lock()
			all = append(all, lat...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return float64(ok.Load()) / time.Since(start).Seconds(), all, bad.Load(), nil
}

// client adds the benchmark's phases to the shared HTTP client.
type client struct{ *loadkit.Client }

// seedStore fills dir with items spread over datasets by bin's gtc seed, unless it holds items
// already. synchronous=NORMAL is for the seeding's speed only; the servers run with the default
// FULL.
func seedStore(ctx context.Context, bin, dir string, items, datasets int) error {
	seed := exec.CommandContext(ctx, bin, "seed", "--items", strconv.Itoa(items), "--datasets", strconv.Itoa(datasets), "--if-empty")
	seed.Env = loadkit.Env(dir, "GTC_SQLITE_SYNCHRONOUS=NORMAL", "GTC_LOG_LEVEL=warn")
	seed.Stdout, seed.Stderr = io.Discard, os.Stderr
	if err := seed.Run(); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	return nil
}

// writeKeys returns the datasets and the draft items the PUT phases write: eight per writer,
// at least 800.
func (c *client) writeKeys(o options) ([]string, []itemKey, error) {
	var datasets []string
	if err := c.GetJSON("/v1/datasets", &datasets); err != nil {
		return nil, nil, err
	}
	keys, err := c.collectKeys(datasets, max(o.writers*8, 800))
	return datasets, keys, err
}

// put writes body over the item k with its ETag and keeps the new one; false when the write
// was not answered 200.
func (c *client) put(k *itemKey, body []byte) bool {
	res, data, err := c.Do(http.MethodPut, k.path, body, map[string]string{"If-Match": k.etag})
	if err != nil || res.StatusCode != http.StatusOK {
		return false
	}
	var it struct {
		ETag string `json:"_etag"`
	}
	if json.Unmarshal(data, &it) == nil {
		k.etag = it.ETag
	}
	return true
}
