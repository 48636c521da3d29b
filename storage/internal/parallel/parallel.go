// Package parallel runs the iterations of a loop on a few goroutines.
package parallel

import (
	"context"
	"sync"
)

// ForEach runs fn for 0..n-1 with at most par at once and returns the first error. The first
// error cancels the context the other calls get, and no index is started after it.
func ForEach(ctx context.Context, n, par int, fn func(ctx context.Context, i int) error) error {
	if n == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
		next  = make(chan int)
	)
	for range min(n, par) {
		wg.Go(func() {
			for i := range next {
				if err := fn(ctx, i); err != nil {
					once.Do(func() { first = err; cancel() })
				}
			}
		})
	}
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}
