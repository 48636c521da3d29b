package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gtc-dev/gtc/cmd/internal/loadkit"
)

// exportSuite measures the export pipeline on a store of approved items: jsonl as a stream
// and as an artifact (throughput and server RSS at 10,000 and at all items), the default
// snapshot of 10,000 items as an attachment, and, when a Blob connection string is given,
// artifact exports of 10,000 items to Blob Storage (Azurite).
func exportSuite(ctx context.Context, o options, dir string, out io.Writer) error {
	srv, c, err := startSeeded(ctx, o, dir, "export", out)
	if err != nil {
		return err
	}
	var datasets []string
	if err := c.GetJSON("/v1/datasets", &datasets); err != nil {
		_ = srv.Stop()
		return err
	}
	one := `"filters":{"datasetNames":["` + datasets[0] + `"]}`

	for _, tc := range []struct{ name, body string }{
		{"jsonl stream, one dataset", `{"format":"jsonl","delivery":{"mode":"stream"},` + one + `}`},
		{"jsonl stream, every approved item", `{"format":"jsonl","delivery":{"mode":"stream"}}`},
	} {
		r, err := c.streamExport(srv, tc.body)
		if err != nil {
			_ = srv.Stop()
			return fmt.Errorf("%s: %w", tc.name, err)
		}
		fmt.Fprintf(out, "%-44s %d items in %s = %.0f items/s; RSS %.1f MiB before, %.1f at 10,000 items, %.1f at the end, peak %.1f (+%.1f)\n",
			tc.name, r.items, r.took.Round(time.Millisecond), float64(r.items)/r.took.Seconds(),
			loadkit.MiB(r.rssBefore), loadkit.MiB(r.rssAt10k), loadkit.MiB(r.rssEnd), loadkit.MiB(r.rssPeak), loadkit.MiB(r.rssPeak-r.rssBefore))
	}
	for _, tc := range []struct{ name, body string }{
		{"jsonl artifact (local), one dataset", `{"format":"jsonl","delivery":{"mode":"artifact"},` + one + `}`},
		{"jsonl artifact (local), every approved item", `{"format":"jsonl","delivery":{"mode":"artifact"}}`},
	} {
		r, err := c.artifactExport(srv, tc.body)
		if err != nil {
			_ = srv.Stop()
			return fmt.Errorf("%s: %w", tc.name, err)
		}
		fmt.Fprintf(out, "%-44s %d items in %s = %.0f items/s; RSS %.1f MiB before, peak %.1f (+%.1f)\n",
			tc.name, r.items, r.took.Round(time.Millisecond), float64(r.items)/r.took.Seconds(),
			loadkit.MiB(r.rssBefore), loadkit.MiB(r.rssPeak), loadkit.MiB(r.rssPeak-r.rssBefore))
	}
	var lat []time.Duration
	var n int
	for range 7 {
		t0 := time.Now()
		res, data, err := c.Do(http.MethodPost, "/v1/ground-truths/snapshot", []byte(`{`+one+`}`), nil)
		if err != nil || res.StatusCode != http.StatusOK {
			_ = srv.Stop()
			return fmt.Errorf("attachment: %v %d", err, statusOf(res))
		}
		lat = append(lat, time.Since(t0))
		var p struct {
			Count int `json:"count"`
		}
		if err := json.Unmarshal(data, &p); err != nil {
			_ = srv.Stop()
			return err
		}
		n = p.Count
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	fmt.Fprintf(out, "%-44s %d items: median %s, min %s, max %s (7 runs)\n", "json_snapshot_payload attachment, one dataset",
		n, loadkit.MS(lat[len(lat)/2]), loadkit.MS(lat[0]), loadkit.MS(lat[len(lat)-1]))
	_ = srv.Stop()

	if o.blobCS == "" {
		fmt.Fprintf(out, "%-44s skipped (no --blob-connection-string)\n", "Blob artifact exports")
		return nil
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	container := "gtc-bench-" + hex.EncodeToString(rnd[:])
	bsrv, err := loadkit.StartServer(ctx, o.gtc, dir, "GTC_EXPORT_STORAGE_BACKEND=blob", "GTC_EXPORT_BLOB_CONNECTION_STRING="+o.blobCS,
		"GTC_EXPORT_BLOB_CONTAINER="+container, "GTC_EXPORT_BLOB_CREATE_CONTAINER=true")
	if err != nil {
		return err
	}
	defer func() { _ = bsrv.Stop() }()
	bc := &client{loadkit.NewClient(bsrv.Base, 4, 30*time.Minute)}
	for _, tc := range []struct{ name, body string }{
		{"Blob artifact, jsonl, one dataset", `{"format":"jsonl","delivery":{"mode":"artifact"},` + one + `}`},
		{"Blob artifact, one file per item, one dataset", `{"delivery":{"mode":"artifact"},` + one + `}`},
	} {
		r, err := bc.artifactExport(bsrv, tc.body)
		if err != nil {
			return fmt.Errorf("%s: %w", tc.name, err)
		}
		fmt.Fprintf(out, "%-44s %d items in %s = %.0f items/s; RSS peak +%.1f MiB (container %s)\n",
			tc.name, r.items, r.took.Round(time.Millisecond), float64(r.items)/r.took.Seconds(), loadkit.MiB(r.rssPeak-r.rssBefore), container)
	}
	return nil
}

// startSeeded seeds the store of dir with the export suites' approved items, unless it has
// items already, and starts a server on it, with a client; the caller stops the server.
func startSeeded(ctx context.Context, o options, dir, suite string, out io.Writer) (*loadkit.Server, *client, error) {
	if err := seedApproved(ctx, o, dir, suite, out); err != nil {
		return nil, nil, err
	}
	srv, err := loadkit.StartServer(ctx, o.gtc, dir)
	if err != nil {
		return nil, nil, err
	}
	return srv, &client{loadkit.NewClient(srv.Base, 4, 30*time.Minute)}, nil
}

// seedApproved seeds the store of dir with the export suites' approved items, unless it has
// items already.
func seedApproved(ctx context.Context, o options, dir, suite string, out io.Writer) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	fmt.Fprintf(out, "\n%s suite, data dir %s\n", suite, dir)
	start := time.Now()
	seed := exec.CommandContext(ctx, o.gtc, "seed", "--items", strconv.Itoa(o.exportN), "--datasets", strconv.Itoa(o.datasets),
		"--status", "approved", "--if-empty")
	seed.Env = loadkit.Env(dir, "GTC_SQLITE_SYNCHRONOUS=NORMAL", "GTC_LOG_LEVEL=warn")
	seed.Stdout, seed.Stderr = io.Discard, os.Stderr
	if err := seed.Run(); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	fmt.Fprintf(out, "%-44s %s\n", fmt.Sprintf("seed %d approved items", o.exportN), time.Since(start).Round(time.Millisecond))
	return nil
}

type exportRun struct {
	items                                int
	took                                 time.Duration
	rssBefore, rssAt10k, rssEnd, rssPeak int64
}

func statusOf(res *http.Response) int {
	if res == nil {
		return 0
	}
	return res.StatusCode
}

// streamExport reads a stream line by line, noting the server's RSS when the 10,000th
// line arrives.
func (c *client) streamExport(srv *loadkit.Server, body string) (exportRun, error) {
	var r exportRun
	r.rssBefore = srv.RSS()
	srv.ResetPeakRSS(r.rssBefore)
	t0 := time.Now()
	req, err := http.NewRequest(http.MethodPost, c.Base+"/v1/ground-truths/snapshot", strings.NewReader(body))
	if err != nil {
		return r, err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := c.HTTP.Do(req)
	if err != nil {
		return r, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(res.Body)
		return r, fmt.Errorf("%d %s", res.StatusCode, data)
	}
	br := bufio.NewReaderSize(res.Body, 1<<20)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 && err == nil {
			r.items++
			if r.items == 10000 {
				r.rssAt10k = srv.RSS()
			}
		}
		if err == bufio.ErrBufferFull {
			for err == bufio.ErrBufferFull {
				_, err = br.ReadSlice('\n')
			}
			r.items++
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return r, err
		}
	}
	r.took = time.Since(t0)
	r.rssEnd = srv.RSS()
	r.rssPeak = max(srv.PeakRSS(), r.rssEnd, r.rssAt10k)
	return r, nil
}

// artifactExport runs an artifact export and reads its count.
func (c *client) artifactExport(srv *loadkit.Server, body string) (exportRun, error) {
	var r exportRun
	r.rssBefore = srv.RSS()
	srv.ResetPeakRSS(r.rssBefore)
	t0 := time.Now()
	res, data, err := c.Do(http.MethodPost, "/v1/ground-truths/snapshot", []byte(body), nil)
	if err != nil {
		return r, err
	}
	r.took = time.Since(t0)
	if res.StatusCode != http.StatusOK {
		return r, fmt.Errorf("%d %s", res.StatusCode, data)
	}
	var a struct {
		Count int `json:"count"`
	}
	if err := json.Unmarshal(data, &a); err != nil {
		return r, err
	}
	r.items = a.Count
	r.rssPeak = max(srv.PeakRSS(), srv.RSS())
	return r, nil
}
