package testenv

import (
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// HeapPeak runs fn after a garbage collection and returns the peak of the live heap in bytes
// while it ran, sampled every 5 ms and once more at the end. Memory tests and benchmarks use
// it to show that what a request holds does not grow with the data.
func HeapPeak(fn func()) uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak atomic.Uint64
	read := func() {
		metrics.Read(sample)
		if v := sample[0].Value.Uint64(); v > peak.Load() {
			peak.Store(v)
		}
	}
	runtime.GC()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				read()
			}
		}
	})
	fn()
	close(done)
	wg.Wait()
	read()
	return peak.Load()
}
