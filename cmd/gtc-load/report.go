package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gtc-dev/gtc/cmd/internal/loadkit"
)

// report prints the figures of a run and its verdict.
func (l *load) report(out io.Writer, o options, res *outcome, rssMeasured bool, fig rssFigures, checkTook time.Duration) {
	t := res.totals
	fmt.Fprintln(out)
	l.rec.printOps(out)
	fmt.Fprintln(out)
	fmt.Fprintf(out, "%-12s %d in %s = %.1f req/s (%d claimed by self-serve, %d approved; self-serve found no item %d times)\n", "requests",
		t.requests, res.elapsed.Round(time.Millisecond), float64(t.requests)/res.elapsed.Seconds(), l.claimed.Load(), l.approved.Load(), l.dry.Load())
	if f := l.foreignMax.Load(); f > 0 {
		fmt.Fprintf(out, "%-12s self-serve handed curators drafts of other datasets (up to %d per curator); they stay assigned to the lt-%s curators, unedited\n",
			"warning", f, l.runID)
	}
	if n := l.lateClaims.Load(); n > 0 {
		fmt.Fprintf(out, "%-12s %d items claimed by self-serve requests that got no answer, found in the curators' queues afterwards\n", "claims", n)
	}
	l.rec.printTimeline(out)
	fmt.Fprintf(out, "%-12s %s\n", "by status", statusText(t.byStatus, t.transport))
	fmt.Fprintf(out, "%-12s 5xx %d, transport errors %d, unexpected 4xx %d, expected conflicts (409/412) %d, other problems %d\n", "errors",
		t.server5xx, t.transport, t.client4xx, t.conflicts, res.problems)
	for _, p := range l.rec.samples() {
		fmt.Fprintf(out, "%-12s %s\n", "", p)
	}
	for _, c := range []struct {
		name string
		s    loadkit.Summary
	}{{"item reads", t.reads}, {"item writes", t.writes}} {
		fmt.Fprintf(out, "%-12s n=%d p50 %s p99 %s max %s: p99 target < %s %s\n", c.name, c.s.N, loadkit.MS(c.s.P50),
			loadkit.MS(c.s.P99), loadkit.MS(c.s.Max), o.targetP99, metText(c.s.P99 < o.targetP99))
	}
	if rssMeasured {
		fmt.Fprintf(out, "%-12s %.1f MiB after setup, peak %.1f MiB during the load, %.1f MiB at the end\n", "server RSS",
			loadkit.MiB(fig.setup), loadkit.MiB(fig.peak), loadkit.MiB(fig.end))
	} else {
		fmt.Fprintf(out, "%-12s not measured (give --pid with --url)\n", "server RSS")
	}
	l.mu.Lock()
	for _, a := range l.agentLines {
		fmt.Fprintf(out, "%-12s %s\n", "agent", a)
	}
	l.mu.Unlock()
	if res.ledgerErr != nil {
		fmt.Fprintf(out, "%-12s could not be checked: %v\n", "ledger", res.ledgerErr)
	} else {
		lr := res.ledger
		fmt.Fprintf(out, "%-12s %d items, %d acknowledged writes, %d unknown (%d of them landed), lost or unexplained: %d problems on %d items (checked in %s)\n",
			"ledger", lr.Items, lr.Acked, lr.Unknown, lr.UnknownKept, len(lr.Problems), lr.ProblemItems, checkTook.Round(time.Millisecond))
		for i, p := range lr.Problems {
			if i == 20 {
				fmt.Fprintf(out, "%-12s … and %d more\n", "", len(lr.Problems)-20)
				break
			}
			fmt.Fprintf(out, "%-12s %s\n", "", p)
		}
	}
	if res.serverExited != nil {
		fmt.Fprintf(out, "%-12s %v\n", "server", res.serverExited)
	}
	fmt.Fprintf(out, "%-12s %s\n", "RESULT", verdict(res))
}

func pidText(pid int) string {
	if pid == 0 {
		return "not given"
	}
	return fmt.Sprint(pid)
}

func metText(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}

// verdict names every reason a run failed, or PASS.
func verdict(o *outcome) string {
	var why []string
	t := o.totals
	if t.server5xx > 0 {
		why = append(why, fmt.Sprintf("%d answers were 5xx", t.server5xx))
	}
	if t.transport > 0 {
		why = append(why, fmt.Sprintf("%d requests failed in transport", t.transport))
	}
	if t.client4xx > 0 {
		why = append(why, fmt.Sprintf("%d unexpected 4xx answers", t.client4xx))
	}
	if o.problems > 0 {
		why = append(why, fmt.Sprintf("%d other problems", o.problems))
	}
	if o.serverExited != nil {
		why = append(why, "the server exited")
	}
	switch {
	case o.ledgerErr != nil:
		why = append(why, "the ledger could not be checked")
	case !o.ledger.OK():
		why = append(why, fmt.Sprintf("the ledger found %d problems (lost or unexplained writes)", len(o.ledger.Problems)))
	case o.ledger.Acked == 0:
		why = append(why, "no write was acknowledged")
	}
	if o.strict && o.p99Missed {
		why = append(why, "a p99 target was missed (--strict)")
	}
	if len(why) == 0 {
		if o.p99Missed {
			return "PASS (no 5xx, no lost update; a p99 target was missed, which fails the run only with --strict)"
		}
		return "PASS (no 5xx, no lost update, p99 targets met)"
	}
	return "FAIL: " + strings.Join(why, "; ")
}
