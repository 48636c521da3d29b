package parallel_test

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gtc-dev/gtc/storage/internal/parallel"
)

func TestEachCallsEveryIndexOnceWithinTheWorkerBound(t *testing.T) {
	for _, tc := range []struct{ n, workers int }{{0, 4}, {1, 4}, {10, 1}, {1000, 7}} {
		calls := make([]atomic.Int32, tc.n)
		var running, peak atomic.Int32
		parallel.Each(tc.n, tc.workers, func(i int) {
			r := running.Add(1)
			for p := peak.Load(); r > p && !peak.CompareAndSwap(p, r); p = peak.Load() {
			}
			calls[i].Add(1)
			running.Add(-1)
		})
		for i := range calls {
			assert.Equal(t, int32(1), calls[i].Load(), "n=%d: index %d", tc.n, i)
		}
		assert.LessOrEqual(t, int(peak.Load()), tc.workers, "n=%d", tc.n)
	}
}
