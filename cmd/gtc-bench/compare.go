package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gtc-dev/gtc/cmd/internal/loadkit"
)

// compareRound is what one round measured on one binary.
type compareRound struct {
	exportRate float64 // jsonl stream of every approved item, items/s
	putRate    float64 // PUT throughput with o.writers writers, writes/s
	putErrs    int64
	// perCommit is how many writes shared one SQLite commit (fsync) during the PUT phase;
	// 0 when the binary does not report its commits.
	perCommit float64
}

// compareSuite measures two gtc binaries side by side on one seeded store (a realistic mix
// of statuses): the jsonl export stream of every approved item and the PUT throughput of o.writers concurrent writers. The
// binaries run in interleaved rounds whose order alternates, so drift of the machine (page
// cache, WAL size, other load) falls on both alike; each round starts the server, streams the
// export, runs the PUT phase and stops it. It prints every round, then the medians and the
// ratio new/old.
func compareSuite(ctx context.Context, o options, dir string, out io.Writer) error {
	if o.gtcOld == "" {
		return errors.New("--suite compare needs --gtc-old, the binary to compare with")
	}
	if o.rounds < 1 {
		return fmt.Errorf("--rounds %d: must be at least 1", o.rounds)
	}
	start := time.Now()
	// A realistic mix of statuses, as the API suite seeds: the export streams the approved
	// items, the PUT phase writes drafts.
	if err := seedStore(ctx, o.gtcOld, dir, o.exportN, o.datasets); err != nil {
		return err
	}
	fmt.Fprintf(out, "%-44s %s (seeded by the old binary)\n", fmt.Sprintf("seed %d items (or reuse)", o.exportN), time.Since(start).Round(time.Millisecond))
	fmt.Fprintf(out, "%d rounds, order alternating; each: start the server, jsonl stream of every approved item, PUT with %d writers for %s, stop\n\n",
		o.rounds, o.writers, o.instrWriteTime)

	bins := []struct{ name, path string }{{"old", o.gtcOld}, {"new", o.gtc}}
	results := map[string][]compareRound{}
	exported := 0 // approved items streamed by the first run; every run must stream as many
	for r := 0; r < o.rounds; r++ {
		for i := range bins {
			b := bins[(i+r)%len(bins)]
			res, err := compareRun(ctx, o, dir, b.path, &exported)
			if err != nil {
				return fmt.Errorf("round %d, %s (%s): %w", r+1, b.name, b.path, err)
			}
			results[b.name] = append(results[b.name], res)
			fmt.Fprintf(out, "round %d %-4s jsonl stream %8.0f items/s | PUT %6.0f writes/s (%d errors), %s writes per commit\n",
				r+1, b.name, res.exportRate, res.putRate, res.putErrs, perCommitText(res.perCommit))
		}
	}
	fig := func(name string, pick func(compareRound) float64) (float64, []float64) {
		var v []float64
		for _, r := range results[name] {
			v = append(v, pick(r))
		}
		return medianFloat(v), v
	}
	fmt.Fprintln(out)
	for _, m := range []struct {
		label, unit string
		pick        func(compareRound) float64
	}{
		{"jsonl stream, every approved item", "items/s", func(r compareRound) float64 { return r.exportRate }},
		{fmt.Sprintf("PUT, %d writers", o.writers), "writes/s", func(r compareRound) float64 { return r.putRate }},
		{"PUT, writes per commit (fsync)", "writes", func(r compareRound) float64 { return r.perCommit }},
	} {
		oldMed, oldV := fig("old", m.pick)
		newMed, newV := fig("new", m.pick)
		fmt.Fprintf(out, "%-36s old %8.0f %s (spread %s)  new %8.0f %s (spread %s)  new/old %.2f\n",
			m.label, oldMed, m.unit, fmtSpread(spreadFloat(oldV), len(oldV)), newMed, m.unit, fmtSpread(spreadFloat(newV), len(newV)), newMed/oldMed)
	}
	return nil
}

// compareRun starts bin on dir, streams the export, runs the PUT phase and stops the server.
func compareRun(ctx context.Context, o options, dir, bin string, exported *int) (compareRound, error) {
	var res compareRound
	srv, err := loadkit.StartServer(ctx, bin, dir)
	if err != nil {
		return res, err
	}
	defer func() { _ = srv.Stop() }()
	c := &client{loadkit.NewClient(srv.Base, 128, 30*time.Minute)}
	r, err := c.streamExport(srv, `{"format":"jsonl","delivery":{"mode":"stream"}}`)
	if err != nil {
		return res, fmt.Errorf("export: %w (see %s)", err, srv.LogPath)
	}
	if *exported == 0 {
		*exported = r.items
	}
	if r.items == 0 || r.items != *exported {
		return res, fmt.Errorf("export streamed %d items, the first run %d", r.items, *exported)
	}
	res.exportRate = float64(r.items) / r.took.Seconds()
	_, keys, err := c.writeKeys(o)
	if err != nil {
		return res, err
	}
	c0, w0, counted := c.commits()
	if res.putRate, _, res.putErrs, err = c.writePhase(keys, o.writers, o.instrWriteTime); err != nil {
		return res, err
	}
	if c1, w1, ok := c.commits(); counted && ok && c1 > c0 {
		res.perCommit = (w1 - w0) / (c1 - c0)
	}
	if err := srv.Stop(); err != nil {
		return res, fmt.Errorf("stop: %w (see %s)", err, srv.LogPath)
	}
	return res, nil
}

// commits reads the server's SQLite commit counters from /metrics; ok is false when it does
// not serve them (an older binary, or metrics off).
func (c *client) commits() (commits, writes float64, ok bool) {
	res, body, err := c.Do(http.MethodGet, "/metrics", nil, nil)
	if err != nil || res.StatusCode != http.StatusOK {
		return 0, 0, false
	}
	var found int
	for _, line := range strings.Split(string(body), "\n") {
		name, value, _ := strings.Cut(line, " ")
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		switch name {
		case "gtc_sqlite_commits_total":
			commits, found = v, found+1
		case "gtc_sqlite_commit_writes_total":
			writes, found = v, found+1
		}
	}
	return commits, writes, found == 2
}

func perCommitText(v float64) string {
	if v == 0 {
		return "n/a"
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}
