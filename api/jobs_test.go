// Left out of the fuzz builds with the rest of package api_test (see harness_test.go).

//go:build !fuzzing

package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc/api"
	"github.com/gtc-dev/gtc/jobs"
)

// With every job slot taken and the queue full, another async recompute is refused with
// 429 JOBS_BUSY and a Retry-After, and no job is made; once the queue drains it is accepted.
func TestRecomputeAsyncRefusedWhenTheQueueIsFull(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.importItems(basicItem("a", "1"))
	one := 1
	runner := jobs.New(jobs.Options{Store: h.store.Jobs(), Leases: h.store.Leases(), Clock: h.clock, Max: 1, MaxQueued: &one, Retention: time.Hour})
	t.Cleanup(runner.Close)
	release := make(chan struct{})
	runner.Handle("block", func(ctx context.Context, _ *jobs.Run) (any, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil, nil
	})
	for range 2 { // one runs, one waits
		_, err := runner.Submit(context.Background(), "block", "ops", nil)
		require.NoError(t, err)
	}
	srv := api.New(api.Deps{Curator: h.cur, Jobs: runner}, api.Options{Prefix: "/v1", RequestTimeout: time.Minute,
		Auth: api.AuthOptions{DevUserID: "anonymous"}})
	busy := *h
	busy.srv = serve(t, srv)

	res := busy.do(req{Method: http.MethodPost, Path: "/v1/ground-truths/recompute-tags?async=true"})
	require.Equal(t, http.StatusTooManyRequests, res.Status, string(res.Body))
	body := res.Object(t)
	assert.Equal(t, "JOBS_BUSY", body["code"])
	assert.Equal(t, "The job queue is full: 1 jobs are running and 1 are waiting; retry later", body["detail"])
	assert.Equal(t, "10", res.Header.Get("Retry-After"), "no job has finished yet: the fixed estimate")
	assert.Len(t, runner.Local(), 2, "the refused job was not queued")

	// The inline recompute does not use the queue.
	res = busy.do(req{Method: http.MethodPost, Path: "/v1/ground-truths/recompute-tags"})
	assert.Equal(t, http.StatusOK, res.Status, string(res.Body))

	close(release)
	require.Eventually(t, func() bool { return len(runner.Local()) == 0 }, 10*time.Second, 5*time.Millisecond)
	res = busy.do(req{Method: http.MethodPost, Path: "/v1/ground-truths/recompute-tags?async=true"})
	assert.Equal(t, http.StatusAccepted, res.Status, string(res.Body))
}
