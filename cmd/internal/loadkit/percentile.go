package loadkit

import (
	"fmt"
	"io"
	"slices"
	"time"
)

// Summary holds the figures of one set of latencies.
type Summary struct {
	N                  int
	P50, P90, P99, Max time.Duration
}

// Summarize sorts lat in place and returns its count, percentiles and maximum. An empty lat
// gives a zero Summary.
func Summarize(lat []time.Duration) Summary {
	if len(lat) == 0 {
		return Summary{}
	}
	slices.Sort(lat)
	return Summary{N: len(lat), P50: Percentile(lat, 0.50), P90: Percentile(lat, 0.90), P99: Percentile(lat, 0.99), Max: lat[len(lat)-1]}
}

// Percentile returns the p-quantile (0 ≤ p ≤ 1) of sorted: the value at index ⌊n·p⌋, the
// largest for p = 1. It is the definition gtc-bench has always printed, so figures stay
// comparable with BENCHMARKS.md; at n = 100 the p99 is the maximum. Empty: 0.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(float64(len(sorted))*p))]
}

// Report prints one line for lat (sorted in place): the name, n, median, p90, p99 and max.
func Report(out io.Writer, name string, lat []time.Duration) {
	s := Summarize(lat)
	if s.N == 0 {
		fmt.Fprintf(out, "%-44s n=0\n", name)
		return
	}
	fmt.Fprintf(out, "%-44s n=%d  median %s  p90 %s  p99 %s  max %s\n", name, s.N, MS(s.P50), MS(s.P90), MS(s.P99), MS(s.Max))
}

// MS prints a duration in milliseconds with two decimals.
func MS(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d.Microseconds())/1000) }
