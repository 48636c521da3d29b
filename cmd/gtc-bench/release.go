package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/gtc-dev/gtc/cmd/internal/loadkit"
)

// releaseSuite measures releases on a store of approved items: one release per format, all
// the items in one split and then in two, timed with the server's RSS growth.
func releaseSuite(ctx context.Context, o options, dir string, out io.Writer) error {
	srv, c, err := startSeeded(ctx, o, dir, "release", out)
	if err != nil {
		return err
	}
	defer func() { _ = srv.Stop() }()
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	run := hex.EncodeToString(rnd[:])
	for i, tc := range []struct{ name, body string }{
		{"jsonl", `{"formats":["jsonl"]}`},
		{"parquet", `{"formats":["parquet"]}`},
		{"jsonl, train/test 0.8/0.2", `{"formats":["jsonl"],"splits":{"train":0.8,"test":0.2}}`},
		{"jsonl and parquet", `{"formats":["jsonl","parquet"]}`},
	} {
		name := fmt.Sprintf("bench-%s-%d", run, i+1)
		body := `{"name":"` + name + `",` + tc.body[1:]
		before := srv.RSS()
		srv.ResetPeakRSS(before)
		t0 := time.Now()
		res, data, err := c.Do(http.MethodPost, "/v1/releases", []byte(body), nil)
		took := time.Since(t0)
		if err != nil {
			return fmt.Errorf("release %s: %w", tc.name, err)
		}
		if res.StatusCode != http.StatusCreated {
			fmt.Fprintf(out, "%-44s %d %s\n", "release, "+tc.name, res.StatusCode, firstLine(data))
			continue
		}
		var m struct {
			Count int `json:"count"`
		}
		if err := json.Unmarshal(data, &m); err != nil {
			return err
		}
		peak := max(srv.PeakRSS(), srv.RSS())
		fmt.Fprintf(out, "%-44s %d items in %s = %.0f items/s; RSS %.1f MiB before, peak %.1f (+%.1f)\n",
			"release, "+tc.name, m.Count, took.Round(time.Millisecond), float64(m.Count)/took.Seconds(),
			loadkit.MiB(before), loadkit.MiB(peak), loadkit.MiB(peak-before))
	}
	return nil
}

func firstLine(b []byte) string {
	if len(b) > 200 {
		b = b[:200]
	}
	return string(b)
}
