package parallel_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc/storage/internal/parallel"
)

func TestForEachCallsEveryIndexOnceWithinTheBound(t *testing.T) {
	for _, tc := range []struct{ n, par int }{{0, 4}, {1, 4}, {10, 1}, {1000, 7}} {
		calls := make([]atomic.Int32, tc.n)
		var running, peak atomic.Int32
		err := parallel.ForEach(t.Context(), tc.n, tc.par, func(_ context.Context, i int) error {
			r := running.Add(1)
			for p := peak.Load(); r > p && !peak.CompareAndSwap(p, r); p = peak.Load() {
			}
			calls[i].Add(1)
			running.Add(-1)
			return nil
		})
		require.NoError(t, err)
		for i := range calls {
			assert.Equal(t, int32(1), calls[i].Load(), "n=%d: index %d", tc.n, i)
		}
		assert.LessOrEqual(t, int(peak.Load()), tc.par, "n=%d", tc.n)
	}
}

func TestForEachStopsAtTheFirstError(t *testing.T) {
	boom := errors.New("boom")
	var started atomic.Int32
	err := parallel.ForEach(t.Context(), 1000, 1, func(ctx context.Context, i int) error {
		started.Add(1)
		if i == 3 {
			return boom
		}
		return ctx.Err()
	})
	require.ErrorIs(t, err, boom)
	assert.Less(t, int(started.Load()), 10, "no index is started long after the error")
}
