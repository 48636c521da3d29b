package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gtc-dev/gtc/cmd/internal/loadkit"
)

// The hostile suite measures what request bodies built to make the server allocate cost it
// in memory: 422 answers with millions of problems, large free-form values sent by several
// clients at once, and the list of a dataset of large items. Every case runs on a freshly
// started server, so that one case's heap does not hide the next one's growth; with
// --gtc-old the same cases run against a second binary, case by case, on its own store.

const (
	hostileBigItems    = 100       // items in the dataset the list case reads
	hostileBigItemSize = 1_400_000 // approximate stored size of each of them, in bytes
	hostileConcurrent  = 4         // clients of the concurrent cases
	hostileDataset     = "hostile"
	hostileBigDataset  = "hostile-big"
)

// hostileServer is one binary under measurement and its store.
type hostileServer struct {
	name, bin, dir string
}

// hostileCase is one measured step.
type hostileCase struct {
	name string
	run  func(c *client, target itemKey) ([]hostileAnswer, error)
}

// hostileAnswer is what one request of a case got back.
type hostileAnswer struct {
	status int
	bytes  int64
	body   []byte // the first bytes of the answer
}

// hostileResult is what one case measured on one server.
type hostileResult struct {
	answers               []hostileAnswer
	before, peak, hwmFrom int64 // RSS at the start, the process's high-water mark at the end and at the start
	took                  time.Duration
}

func hostileSuite(ctx context.Context, o options, dir string, out io.Writer) error {
	servers := []hostileServer{{name: "new", bin: o.gtc, dir: filepath.Join(dir, "new")}}
	if o.gtcOld != "" {
		servers = append([]hostileServer{{name: "old", bin: o.gtcOld, dir: filepath.Join(dir, "old")}}, servers...)
	}
	for _, s := range servers {
		fmt.Fprintf(out, "%-4s %s\n", s.name, s.bin)
	}
	const mib = 1 << 20
	cases := []hostileCase{
		{"422 import: 1 MiB array of numbers", post("/v1/ground-truths", numbersBody("[", "]", mib), 1)},
		{"422 import: 10 MiB array of numbers", post("/v1/ground-truths", numbersBody("[", "]", 10*mib), 1)},
		{"422 PUT: 1 MiB history of numbers", put(numbersBody(`{"history":[`, "]}", mib), 1)},
		{"422 PUT: 10 MiB history of numbers", put(numbersBody(`{"history":[`, "]}", 10*mib), 1)},
		{fmt.Sprintf("%d concurrent PUTs: 5M numbers in metadata", hostileConcurrent),
			put(numbersN(`{"metadata":{"n":[`, "]}}", 5_000_000), hostileConcurrent)},
		{fmt.Sprintf("%d concurrent GETs: dataset of %d items of %.1f MB", hostileConcurrent, hostileBigItems, hostileBigItemSize/1e6),
			getDataset(hostileBigDataset, hostileConcurrent)},
	}

	for _, s := range servers {
		start := time.Now()
		if err := hostileSeed(ctx, s); err != nil {
			return fmt.Errorf("%s: seed: %w", s.name, err)
		}
		fmt.Fprintf(out, "%-4s store seeded: 1 item in %s, %d items of ~%.1f MB in %s (%s)\n", s.name, hostileDataset,
			hostileBigItems, hostileBigItemSize/1e6, hostileBigDataset, time.Since(start).Round(time.Millisecond))
	}
	fmt.Fprintf(out, "\nEach case starts the server anew. RSS before: after start and one GET; peak: the process's\n"+
		"high-water mark (VmHWM) when the case is done; growth: peak - before.\n\n")
	fmt.Fprintf(out, "%-50s %-4s %10s %10s %10s %9s  %s\n", "case", "bin", "before", "peak", "growth", "time", "answers")
	var excerpts []string
	for _, hc := range cases {
		for _, s := range servers {
			res, err := hostileRun(ctx, s, hc)
			if err != nil {
				return fmt.Errorf("%s, %s: %w", hc.name, s.name, err)
			}
			fmt.Fprintf(out, "%-50s %-4s %6.1f MiB %6.1f MiB %6.1f MiB %9s  %s\n", hc.name, s.name, loadkit.MiB(res.before),
				loadkit.MiB(res.peak), loadkit.MiB(res.peak-res.before), res.took.Round(time.Millisecond), describeAnswers(res.answers))
			if res.hwmFrom > res.before+16<<20 {
				fmt.Fprintf(out, "%-50s %-4s note: the high-water mark was already %.1f MiB before the case\n", "", s.name, loadkit.MiB(res.hwmFrom))
			}
			if a := res.answers[0]; a.status == http.StatusUnprocessableEntity {
				excerpts = append(excerpts, fmt.Sprintf("%-50s %-4s %s", hc.name, s.name, excerpt(a.body)))
			}
		}
	}
	if len(excerpts) > 0 {
		fmt.Fprintf(out, "\nthe 422 answers\n%s\n", strings.Join(excerpts, "\n"))
	}
	return nil
}

// hostileSeed imports the PUT target and the dataset of large items into s's store.
func hostileSeed(ctx context.Context, s hostileServer) error {
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return err
	}
	srv, err := loadkit.StartServer(ctx, s.bin, s.dir)
	if err != nil {
		return err
	}
	defer func() { _ = srv.Stop() }()
	c := &client{loadkit.NewClient(srv.Base, 8, 5*time.Minute)}
	var page listPage
	if err := c.GetJSON("/v1/ground-truths?dataset="+hostileBigDataset+"&limit=1", &page); err != nil {
		return err
	}
	if len(page.Items) > 0 {
		return nil // seeded by an earlier run
	}
	target := []map[string]any{{"id": "target", "datasetName": hostileDataset,
		"history": []map[string]string{{"role": "user", "msg": "Where is the installer?"}, {"role": "assistant", "msg": "On the downloads page."}}}}
	if err := importItems(c, target); err != nil {
		return err
	}
	// Items of about hostileBigItemSize stored bytes: 100 turns of plain words each.
	const turns = 100
	words := strings.Repeat("plain words of a long answer that goes on and on ", hostileBigItemSize/turns/50)
	var batch []map[string]any
	for i := range hostileBigItems {
		history := make([]map[string]string, turns)
		for t := range history {
			role := "user"
			if t%2 == 1 {
				role = "assistant"
			}
			history[t] = map[string]string{"role": role, "msg": fmt.Sprintf("item %d turn %d: %s", i, t, words)}
		}
		batch = append(batch, map[string]any{"id": fmt.Sprintf("big-%03d", i), "datasetName": hostileBigDataset, "history": history})
		if len(batch) == 6 || i == hostileBigItems-1 {
			if err := importItems(c, batch); err != nil {
				return err
			}
			batch = nil
		}
	}
	return nil
}

func importItems(c *client, items []map[string]any) error {
	body, err := json.Marshal(items)
	if err != nil {
		return err
	}
	res, data, err := c.Do(http.MethodPost, "/v1/ground-truths", body, nil)
	if err != nil {
		return err
	}
	var out struct {
		Imported int `json:"imported"`
	}
	if res.StatusCode != http.StatusOK || json.Unmarshal(data, &out) != nil || out.Imported != len(items) {
		return fmt.Errorf("import: %d %.300s", res.StatusCode, data)
	}
	return nil
}

// hostileRun starts s's server, runs one case and stops it.
func hostileRun(ctx context.Context, s hostileServer, hc hostileCase) (hostileResult, error) {
	var res hostileResult
	srv, err := loadkit.StartServer(ctx, s.bin, s.dir)
	if err != nil {
		return res, err
	}
	defer func() { _ = srv.Stop() }()
	c := &client{loadkit.NewClient(srv.Base, 2*hostileConcurrent, 5*time.Minute)}
	var page listPage
	if err := c.GetJSON("/v1/ground-truths?dataset="+hostileDataset+"&limit=1", &page); err != nil {
		return res, err
	}
	if len(page.Items) != 1 {
		return res, fmt.Errorf("the PUT target is missing from %s", s.dir)
	}
	it := page.Items[0]
	target := itemKey{path: "/v1/ground-truths/" + url.PathEscape(it.DatasetName) + "/" + it.Bucket + "/" + url.PathEscape(it.ID), etag: it.ETag}
	res.before, res.hwmFrom = srv.RSS(), readHWM(srv.Pid())
	start := time.Now()
	res.answers, err = hc.run(c, target)
	res.took = time.Since(start)
	if err != nil {
		return res, err
	}
	res.peak = max(readHWM(srv.Pid()), srv.PeakRSS())
	if err := srv.Stop(); err != nil {
		return res, fmt.Errorf("stop: %w (see %s)", err, srv.LogPath)
	}
	return res, nil
}

// numbersBody is prefix + "1,1,…,1" + suffix, size bytes in all (give or take one).
func numbersBody(prefix, suffix string, size int) []byte {
	return numbersN(prefix, suffix, (size-len(prefix)-len(suffix)+1)/2)
}

// numbersN is prefix + n times "1" separated by commas + suffix.
func numbersN(prefix, suffix string, n int) []byte {
	b := make([]byte, 0, len(prefix)+2*n+len(suffix))
	b = append(b, prefix...)
	b = append(b, bytes.Repeat([]byte("1,"), n)[:2*n-1]...)
	return append(b, suffix...)
}

func post(path string, body []byte, clients int) func(*client, itemKey) ([]hostileAnswer, error) {
	return func(c *client, _ itemKey) ([]hostileAnswer, error) {
		return concurrently(clients, func() (hostileAnswer, error) { return send(c, http.MethodPost, path, body, nil) })
	}
}

func put(body []byte, clients int) func(*client, itemKey) ([]hostileAnswer, error) {
	return func(c *client, k itemKey) ([]hostileAnswer, error) {
		return concurrently(clients, func() (hostileAnswer, error) {
			return send(c, http.MethodPut, k.path, body, map[string]string{"If-Match": k.etag})
		})
	}
}

func getDataset(name string, clients int) func(*client, itemKey) ([]hostileAnswer, error) {
	return func(c *client, _ itemKey) ([]hostileAnswer, error) {
		return concurrently(clients, func() (hostileAnswer, error) {
			return send(c, http.MethodGet, "/v1/ground-truths/"+url.PathEscape(name), nil, nil)
		})
	}
}

// send makes one request and counts the answer's bytes, keeping only the first of them.
func send(c *client, method, path string, body []byte, hdr map[string]string) (hostileAnswer, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, c.Base+path, r)
	if err != nil {
		return hostileAnswer{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := c.HTTP.Do(req)
	if err != nil {
		return hostileAnswer{}, err
	}
	defer res.Body.Close()
	head := make([]byte, 64<<10)
	n, _ := io.ReadFull(res.Body, head)
	rest, err := io.Copy(io.Discard, res.Body)
	if err != nil {
		return hostileAnswer{}, err
	}
	return hostileAnswer{status: res.StatusCode, bytes: int64(n) + rest, body: head[:n]}, nil
}

// concurrently runs f n times at once and returns the answers.
func concurrently(n int, f func() (hostileAnswer, error)) ([]hostileAnswer, error) {
	answers := make([]hostileAnswer, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { answers[i], errs[i] = f() })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return answers, nil
}

// describeAnswers prints the statuses and sizes, "422 × 1, 1.9 KiB".
func describeAnswers(as []hostileAnswer) string {
	counts := map[int]int{}
	var total int64
	for _, a := range as {
		counts[a.status]++
		total += a.bytes
	}
	var parts []string
	for status, n := range counts {
		parts = append(parts, fmt.Sprintf("%d × %d", status, n))
	}
	size := strconv.FormatInt(total/int64(len(as)), 10) + " B"
	if avg := total / int64(len(as)); avg >= 1<<20 {
		size = fmt.Sprintf("%.1f MiB", loadkit.MiB(avg))
	} else if avg >= 1<<10 {
		size = fmt.Sprintf("%.1f KiB", float64(avg)/(1<<10))
	}
	return strings.Join(parts, ", ") + ", " + size + " each"
}

// excerpt is the start of an error answer: its detail, how many errors it lists and the
// moreErrors count, when it has one.
func excerpt(body []byte) string {
	var e struct {
		Detail     string            `json:"detail"`
		Errors     []json.RawMessage `json:"errors"`
		MoreErrors *int              `json:"moreErrors"`
	}
	if json.Unmarshal(body, &e) != nil {
		return fmt.Sprintf("%.160q… (only its first %d KiB were kept)", body, len(body)>>10)
	}
	s := fmt.Sprintf("%q, %d errors listed", e.Detail, len(e.Errors))
	if e.MoreErrors != nil {
		s += fmt.Sprintf(", moreErrors %d", *e.MoreErrors)
	}
	return s
}

// readHWM is a process's peak resident set size (VmHWM) in bytes; 0 when it cannot be read.
func readHWM(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb * 1024
		}
	}
	return 0
}
