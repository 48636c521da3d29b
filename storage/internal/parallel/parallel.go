// Package parallel runs the iterations of a loop on a few goroutines.
package parallel

import (
	"sync"
	"sync/atomic"
)

// Each calls f(i) for every i in [0, n), from at most workers goroutines at once, each
// taking the next index as it finishes one, and returns when every call has returned.
func Each(n, workers int, f func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				f(i)
			}
		})
	}
	wg.Wait()
}
