package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // reads the store's revision table for the storage figures

	"github.com/gtc-dev/gtc/cmd/internal/loadkit"
)

// historyRound is what one round measured with history on or off.
type historyRound struct {
	putRate    float64
	putErrs    int64
	putCPU     time.Duration // the server's processor time per acknowledged write
	list, get  time.Duration // medians
	importTook time.Duration // 10,000 items in one request
}

// historySuite measures what recording every change costs, in one build: rounds alternating
// GTC_HISTORY_ENABLED=true and false on one seeded store (PUT with o.writers writers, list and
// single-item GET medians, an import of 10,000 items), then the read of an item with
// o.historyRevisions revisions, then the storage a revision costs: o.historyItems items edited
// o.historyEdits times each, and the bytes of their revisions in the SQLite file.
func historySuite(ctx context.Context, o options, dir string, out io.Writer) error {
	start := time.Now()
	if err := seedStore(ctx, o.gtc, dir, o.items, o.datasets); err != nil {
		return err
	}
	fmt.Fprintf(out, "%-44s %s\n", fmt.Sprintf("seed %d items (or reuse)", o.items), time.Since(start).Round(time.Millisecond))
	fmt.Fprintf(out, "%d rounds, order alternating; each: start the server, PUT with %d writers for %s, %d lists, %d GETs, import 10,000 items, stop\n\n",
		o.rounds, o.writers, o.instrWriteTime, o.instrListN, o.instrListN)

	results := map[string][]historyRound{}
	modes := []string{"on", "off"}
	for r := 0; r < o.rounds; r++ {
		for i := range modes {
			mode := modes[(i+r)%2]
			res, err := historyRun(ctx, o, dir, mode == "on", r)
			if err != nil {
				return fmt.Errorf("round %d, history %s: %w", r+1, mode, err)
			}
			results[mode] = append(results[mode], res)
			fmt.Fprintf(out, "round %d history %-3s PUT %6.0f writes/s (%d errors, server CPU %s per write) | list %6s | GET %6s | import 10,000 %s\n",
				r+1, mode, res.putRate, res.putErrs, res.putCPU.Round(time.Microsecond), res.list.Round(time.Microsecond), res.get.Round(time.Microsecond), res.importTook.Round(time.Millisecond))
		}
	}
	fmt.Fprintln(out)
	for _, m := range []struct {
		label, unit string
		pick        func(historyRound) float64
	}{
		{fmt.Sprintf("PUT, %d writers", o.writers), "writes/s", func(r historyRound) float64 { return r.putRate }},
		{"server CPU per PUT", "µs", func(r historyRound) float64 { return float64(r.putCPU) / 1e3 }},
		{"list, median", "ms", func(r historyRound) float64 { return float64(r.list) / 1e6 }},
		{"GET one item, median", "ms", func(r historyRound) float64 { return float64(r.get) / 1e6 }},
		{"import 10,000 items", "s", func(r historyRound) float64 { return r.importTook.Seconds() }},
	} {
		var on, off []float64
		for _, r := range results["on"] {
			on = append(on, m.pick(r))
		}
		for _, r := range results["off"] {
			off = append(off, m.pick(r))
		}
		fmt.Fprintf(out, "%-24s on %9.3f %s (spread %s)  off %9.3f %s (spread %s)  on/off %.2f\n",
			m.label, medianFloat(on), m.unit, fmtSpread(spreadFloat(on), len(on)), medianFloat(off), m.unit, fmtSpread(spreadFloat(off), len(off)), medianFloat(on)/medianFloat(off))
	}

	if err := historyRead(ctx, o, dir, out); err != nil {
		return fmt.Errorf("history read: %w", err)
	}
	return historyStorage(ctx, o, filepath.Join(dir, "storage-cost"), out)
}

// historyRun is one round on the shared store.
func historyRun(ctx context.Context, o options, dir string, on bool, round int) (historyRound, error) {
	var res historyRound
	srv, err := loadkit.StartServer(ctx, o.gtc, dir, "GTC_HISTORY_ENABLED="+strconv.FormatBool(on))
	if err != nil {
		return res, err
	}
	defer func() { _ = srv.Stop() }()
	c := &client{loadkit.NewClient(srv.Base, 128, 30*time.Minute)}
	datasets, keys, err := c.writeKeys(o)
	if err != nil {
		return res, err
	}
	cpu0, t0 := srv.CPU(), time.Now()
	if res.putRate, _, res.putErrs, err = c.writePhase(keys, o.writers, o.instrWriteTime); err != nil {
		return res, err
	}
	if acked := res.putRate * time.Since(t0).Seconds(); acked > 0 {
		res.putCPU = time.Duration(float64(srv.CPU()-cpu0) / acked)
	}
	lists, err := c.listPhase(datasets, o.instrListN)
	if err != nil {
		return res, err
	}
	gets, err := c.getPhase(keys, o.instrListN)
	if err != nil {
		return res, err
	}
	res.list, res.get = medianDuration(lists), medianDuration(gets)
	imp, err := c.importPhase(fmt.Sprintf("history-import-%d", round), 10000)
	if err != nil {
		return res, err
	}
	res.importTook = imp.took
	return res, srv.Stop()
}

func medianDuration(v []time.Duration) time.Duration {
	slices.Sort(v)
	return loadkit.Percentile(v, 0.5)
}

// historyRead writes one item o.historyRevisions times, then times the first page of its
// history (the default page of 50, newest first) and the item at its first revision.
func historyRead(ctx context.Context, o options, dir string, out io.Writer) error {
	srv, err := loadkit.StartServer(ctx, o.gtc, dir)
	if err != nil {
		return err
	}
	defer func() { _ = srv.Stop() }()
	c := &client{loadkit.NewClient(srv.Base, 8, 10*time.Minute)}
	id := fmt.Sprintf("history-read-%d", time.Now().UnixNano())
	body := fmt.Sprintf(`[{"id":%q,"datasetName":"history-read","history":[{"role":"user","msg":"How do I rotate keys?"}]}]`, id)
	if res, data, err := c.Do(http.MethodPost, "/v1/ground-truths", []byte(body), nil); err != nil || res.StatusCode != http.StatusOK {
		return fmt.Errorf("import: %v %.300s", err, data)
	}
	var list []struct {
		ID     string `json:"id"`
		Bucket string `json:"bucket"`
		ETag   string `json:"_etag"`
	}
	if err := c.GetJSON("/v1/ground-truths/history-read", &list); err != nil {
		return fmt.Errorf("list: %w", err)
	}
	var k itemKey
	for _, it := range list {
		if it.ID == id {
			k = itemKey{path: "/v1/ground-truths/history-read/" + it.Bucket + "/" + id, etag: it.ETag}
		}
	}
	if k.path == "" {
		return fmt.Errorf("the imported item %s is not listed", id)
	}
	start := time.Now()
	for n := 1; n < o.historyRevisions; n++ {
		b := fmt.Sprintf(`{"comment":"edit %d","history":[{"role":"user","msg":"How do I rotate keys? (%d)"}]}`, n, n)
		if !c.put(&k, []byte(b)) {
			return fmt.Errorf("PUT %d of %s was refused", n, k.path)
		}
	}
	fmt.Fprintf(out, "\none item written %d times in %s\n", o.historyRevisions, time.Since(start).Round(time.Millisecond))
	for _, q := range []struct{ label, path string }{
		{"GET …/history (first page of 50)", k.path + "/history"},
		{"GET …/history?limit=200", k.path + "/history?limit=200"},
		{"GET …/history/1 (undo all but one)", k.path + "/history/1"},
		{"GET …/diff?from=1", k.path + "/diff?from=1"},
	} {
		var lat []time.Duration
		for range 200 {
			t := time.Now()
			res, data, err := c.Do(http.MethodGet, q.path, nil, nil)
			if err != nil || res.StatusCode != http.StatusOK {
				return fmt.Errorf("%s: %v %.300s", q.label, err, data)
			}
			lat = append(lat, time.Since(t))
		}
		slices.Sort(lat)
		fmt.Fprintf(out, "%-40s p50 %8s  p95 %8s  (200 requests, %d revisions)\n", q.label,
			loadkit.Percentile(lat, 0.5).Round(time.Microsecond), loadkit.Percentile(lat, 0.95).Round(time.Microsecond), o.historyRevisions)
	}
	return srv.Stop()
}

// historyStorage seeds o.historyItems items in a store of its own, edits each o.historyEdits
// times (a comment and the first turn's text, with o.writers writers), and reports the bytes
// the revisions of the edits take in the SQLite file.
func historyStorage(ctx context.Context, o options, dir string, out io.Writer) error {
	if o.historyItems <= 0 {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := seedStore(ctx, o.gtc, dir, o.historyItems, o.datasets); err != nil {
		return err
	}
	srv, err := loadkit.StartServer(ctx, o.gtc, dir, "GTC_SQLITE_SYNCHRONOUS=NORMAL")
	if err != nil {
		return err
	}
	defer func() { _ = srv.Stop() }()
	c := &client{loadkit.NewClient(srv.Base, 64, 30*time.Minute)}
	var datasets []string
	if err := c.GetJSON("/v1/datasets", &datasets); err != nil {
		return err
	}
	var keys []itemKey
	for _, ds := range datasets {
		var list []struct {
			ID     string `json:"id"`
			Bucket string `json:"bucket"`
			ETag   string `json:"_etag"`
		}
		if err := c.GetJSON("/v1/ground-truths/"+ds, &list); err != nil {
			return err
		}
		for _, it := range list {
			keys = append(keys, itemKey{path: "/v1/ground-truths/" + ds + "/" + it.Bucket + "/" + it.ID, etag: it.ETag})
		}
	}
	start := time.Now()
	var bad atomic.Int64
	var wg sync.WaitGroup
	for w := range o.writers {
		wg.Go(func() {
			for i := w; i < len(keys); i += o.writers {
				k := &keys[i]
				for e := range o.historyEdits {
					b := fmt.Sprintf(`{"comment":"reviewed, pass %d","history":[{"role":"user","msg":"How do I rotate the signing keys, pass %d?"},{"role":"assistant","msg":"Rotate the secondary key first."}]}`, e, e)
					if !c.put(k, []byte(b)) {
						bad.Add(1)
					}
				}
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	if err := srv.Stop(); err != nil {
		return err
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "gtc.db")+"?mode=ro")
	if err != nil {
		return err
	}
	defer db.Close()
	var first, edits, firstBytes, editBytes int64
	if err := db.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(length(doc)), 0) FROM item_revisions WHERE n = 1`).Scan(&first, &firstBytes); err != nil {
		return err
	}
	if err := db.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(length(doc)), 0) FROM item_revisions WHERE n > 1`).Scan(&edits, &editBytes); err != nil {
		return err
	}
	var pages, pageSize int64
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM dbstat WHERE name = 'item_revisions'`).Scan(&pages); err != nil {
		pages = -1 // dbstat is not compiled in
	}
	_ = db.QueryRowContext(ctx, `PRAGMA page_size`).Scan(&pageSize)
	fmt.Fprintf(out, "\n%d items edited %d times each with %d writers in %s (%d errors)\n", len(keys), o.historyEdits, o.writers, took.Round(time.Second), bad.Load())
	fmt.Fprintf(out, "first revisions (the whole item): %d, %.0f bytes each on average\n", first, float64(firstBytes)/float64(max(first, 1)))
	fmt.Fprintf(out, "edit revisions: %d, %.0f bytes each on average (%.1f MiB in all)\n", edits, float64(editBytes)/float64(max(edits, 1)), float64(editBytes)/(1<<20))
	if pages > 0 {
		fmt.Fprintf(out, "item_revisions table: %d pages of %d bytes = %.1f MiB on disk\n", pages, pageSize, float64(pages*pageSize)/(1<<20))
	}
	return nil
}
