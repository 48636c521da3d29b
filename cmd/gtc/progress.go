package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progress shows how far a long command is: a bar on a terminal, a log line every 5 s
// otherwise, or nothing.
type progress struct {
	label   string
	mode    string // "bar", "log" or "none"
	w       io.Writer
	bar     *progressbar.ProgressBar
	start   time.Time
	lastLog time.Time
	total   int
}

// progressModes are the values of --progress.
var progressModes = []string{"auto", "bar", "log", "none"}

func newProgress(mode, label string, w io.Writer) *progress {
	if mode == "auto" {
		mode = "log"
		if isTerminal(w) {
			mode = "bar"
		}
	}
	return &progress{label: label, mode: mode, w: w, start: time.Now(), lastLog: time.Now(), total: -1}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// update reports done of total (total < 0 while unknown) and the command's counters.
func (p *progress) update(done, total int, counters string) {
	switch p.mode {
	case "bar":
		if p.bar == nil || total != p.total {
			p.total = total
			p.bar = progressbar.NewOptions(total,
				progressbar.OptionSetWriter(p.w),
				progressbar.OptionSetDescription(p.label),
				progressbar.OptionShowCount(),
				progressbar.OptionShowIts(),
				progressbar.OptionSetItsString("items"),
				progressbar.OptionSetPredictTime(true),
				progressbar.OptionThrottle(100*time.Millisecond),
				progressbar.OptionSetWidth(30),
			)
		}
		p.bar.Describe(p.label + "  " + counters)
		_ = p.bar.Set(done)
	case "log":
		if time.Since(p.lastLog) < 5*time.Second {
			return
		}
		p.lastLog = time.Now()
		fmt.Fprintln(p.w, p.line(done, total, counters))
	}
}

// line is the plain progress line: label, done/total, percentage, rate, ETA and counters.
func (p *progress) line(done, total int, counters string) string {
	elapsed := time.Since(p.start).Seconds()
	rate := 0.0
	if elapsed > 0 {
		rate = float64(done) / elapsed
	}
	if total < 0 {
		return fmt.Sprintf("%s  %d  %.0f/s  %s", p.label, done, rate, counters)
	}
	pct := 100
	if total > 0 {
		pct = done * 100 / total
	}
	eta := "?"
	if rate > 0 && total >= done {
		eta = (time.Duration(float64(total-done)/rate) * time.Second).Round(time.Second).String()
	}
	return fmt.Sprintf("%s  %d/%d  %d%%  %.0f/s  eta %s  %s", p.label, done, total, pct, rate, eta, counters)
}

// finish ends the bar so the summary starts on its own line.
func (p *progress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
		fmt.Fprintln(p.w)
	}
}
