package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/storage/sqlite"
)

// openStore opens a SQLite store on a file of the test, with clock (nil: the system's).
func openStore(t *testing.T, clock gtc.Clock) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(t.TempDir(), "gtc.db"), Synchronous: "NORMAL", Clock: clock})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func newRunner(st gtc.Store, clock gtc.Clock, maxRunning int, o ...func(*Options)) *Runner {
	opts := Options{Store: st.Jobs(), Leases: st.Leases(), Clock: clock, Max: maxRunning, Retention: time.Hour, LeaseTTL: time.Second}
	for _, f := range o {
		f(&opts)
	}
	return New(opts)
}

func queueOf(n int) func(*Options) { return func(o *Options) { o.MaxQueued = &n } }

func waitJob(t *testing.T, r *Runner, id string, status string) gtc.Job {
	t.Helper()
	var job gtc.Job
	require.Eventually(t, func() bool {
		var err error
		job, err = r.Get(context.Background(), id)
		require.NoError(t, err)
		return job.Status == status
	}, 10*time.Second, time.Millisecond, "job %s is %s, want %s", id, job.Status, status)
	return job
}

func TestJobsRunAtMostMaxFirstInFirstOut(t *testing.T) {
	t.Parallel()
	clock := gtc.NewFakeClock(time.Date(2025, 1, 2, 10, 0, 0, 0, time.UTC))
	st := openStore(t, clock)
	r := newRunner(st, clock, 1)
	defer r.Close()
	release := make(chan struct{})
	var mu sync.Mutex
	var order []int
	r.Handle("count", func(ctx context.Context, run *Run) (any, error) {
		n := int(run.Job.Params.(map[string]any)["n"].(float64))
		mu.Lock()
		order = append(order, n)
		mu.Unlock()
		total := 10
		run.Update(gtc.JobProgress{Total: &total, Processed: 3}, nil)
		<-release
		return map[string]int{"n": n}, nil
	})
	ids := make([]string, 3)
	for i := range 3 {
		job, err := r.Submit(context.Background(), "count", "alice", map[string]any{"n": float64(i)})
		require.NoError(t, err)
		assert.Equal(t, gtc.JobQueued, job.Status)
		assert.Regexp(t, `^job-[0-9a-z]{26}$`, job.ID)
		ids[i] = job.ID
	}
	running := waitJob(t, r, ids[0], gtc.JobRunning)
	assert.NotNil(t, running.StartedAt)
	var stored gtc.Job
	require.Eventually(t, func() bool {
		stored, _ = st.Jobs().Get(context.Background(), ids[0])
		return stored.Progress.Processed == 3
	}, 5*time.Second, time.Millisecond, "the store has its first progress, for every server")
	assert.Equal(t, gtc.JobRunning, stored.Status, "and shows it running")
	second, err := r.Get(context.Background(), ids[1])
	require.NoError(t, err)
	assert.Equal(t, gtc.JobQueued, second.Status, "only one job runs at a time")
	close(release)
	done := waitJob(t, r, ids[2], gtc.JobSucceeded)
	assert.Equal(t, map[string]any{"n": float64(2)}, done.Result, "read back from the store")
	assert.Equal(t, []int{0, 1, 2}, order, "queued jobs run first in, first out")

	body, err := json.Marshal(done)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(body, &m))
	assert.Equal(t, "2025-01-02T10:00:00.000Z", m["createdAt"])
	assert.Equal(t, "alice", m["createdBy"])
	assert.Equal(t, float64(0), m["resumed"])
	assert.Nil(t, m["error"])
	assert.NotContains(t, m, "checkpoint")
}

func TestJobFailuresAndRetention(t *testing.T) {
	t.Parallel()
	clock := gtc.NewFakeClock(time.Date(2025, 1, 2, 10, 0, 0, 0, time.UTC))
	st := openStore(t, clock)
	r := newRunner(st, clock, 2)
	defer r.Close()
	r.Handle("unreachable", func(context.Context, *Run) (any, error) { return nil, fmt.Errorf("scan: %w", gtc.ErrUnavailable) })
	r.Handle("panic", func(context.Context, *Run) (any, error) { panic("boom") })
	failed, err := r.Submit(context.Background(), "unreachable", "bob", nil)
	require.NoError(t, err)
	job := waitJob(t, r, failed.ID, gtc.JobFailed)
	assert.Equal(t, &gtc.JobError{Detail: "The store is not reachable", Code: gtc.CodeStoreUnavailable}, job.Error)
	assert.Nil(t, job.Result)

	panicked, err := r.Submit(context.Background(), "panic", "bob", nil)
	require.NoError(t, err)
	job = waitJob(t, r, panicked.ID, gtc.JobFailed)
	assert.Equal(t, gtc.CodeInternal, job.Error.Code, "a panicking job fails; it does not take the server down")

	_, err = r.Submit(context.Background(), "no-such-type", "bob", nil)
	require.Error(t, err, "a type without a handler is refused")

	clock.Advance(59 * time.Minute)
	_, err = r.Get(context.Background(), failed.ID)
	assert.NoError(t, err, "finished jobs stay readable for the retention period")
	clock.Advance(2 * time.Minute)
	_, err = r.Get(context.Background(), failed.ID)
	assert.ErrorIs(t, err, gtc.ErrNotFound, "and are forgotten after it")
	r.Scan(context.Background())
	_, err = st.Jobs().Get(context.Background(), failed.ID)
	assert.ErrorIs(t, err, gtc.ErrNotFound, "the scan deletes them from the store")
}

// counting is a job that counts to its params' "to", one step per Update, resuming from the
// checkpoint; each step waits on step (when not nil).
func counting(step chan struct{}, started chan<- int) Handler {
	return func(ctx context.Context, run *Run) (any, error) {
		from := 0
		if len(run.Job.Checkpoint) > 0 {
			from, _ = strconv.Atoi(string(run.Job.Checkpoint))
		}
		if started != nil {
			started <- from
		}
		to := int(run.Job.Params.(map[string]any)["to"].(float64))
		for i := from; i < to; i++ {
			if step != nil {
				select {
				case <-step:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			run.Update(gtc.JobProgress{Total: &to, Processed: i + 1}, []byte(strconv.Itoa(i+1)))
		}
		return map[string]int{"counted": to - from}, nil
	}
}

// countingServer is a second server of st that runs count jobs without pausing; the channel
// receives the step each run starts from.
func countingServer(t *testing.T, st gtc.Store, clock gtc.Clock) (*Runner, chan int) {
	starts := make(chan int, 1)
	b := newRunner(st, clock, 1)
	t.Cleanup(b.Close)
	b.Handle("count", counting(nil, starts))
	return b, starts
}

// A server that shuts down hands its running job back, queued with its checkpoint and
// progress; another server of the store takes it over at its next scan and goes on from
// there, and the job says it was resumed.
func TestCloseHandsRunningJobsBackForAnotherServer(t *testing.T) {
	t.Parallel()
	st := openStore(t, nil)
	step := make(chan struct{})
	a := newRunner(st, nil, 1)
	a.Handle("count", counting(step, nil))
	job, err := a.Submit(context.Background(), "count", "ops", map[string]any{"to": float64(5)})
	require.NoError(t, err)
	step <- struct{}{}
	step <- struct{}{}
	require.Eventually(t, func() bool { j, _ := a.Get(context.Background(), job.ID); return j.Progress.Processed == 2 }, 5*time.Second, time.Millisecond)
	a.Close()

	back, err := st.Jobs().Get(context.Background(), job.ID)
	require.NoError(t, err)
	assert.Equal(t, gtc.JobQueued, back.Status, "handed back")
	assert.Equal(t, 2, back.Progress.Processed)
	assert.Equal(t, "2", string(back.Checkpoint))
	_, err = st.Leases().Get(context.Background(), "job:"+job.ID)
	assert.ErrorIs(t, err, gtc.ErrNotFound, "its lease is released: no server must wait for it to expire")
	_, err = a.Submit(context.Background(), "count", "ops", map[string]any{"to": float64(1)})
	assert.Equal(t, gtc.CodeJobsBusy, gtc.ErrorCode(err), "a closed server takes no new job")

	b, started := countingServer(t, st, nil)
	b.Scan(context.Background())
	assert.Equal(t, 2, <-started, "b goes on from the checkpoint")
	done := waitJob(t, b, job.ID, gtc.JobSucceeded)
	assert.Equal(t, 1, done.Resumed)
	assert.Equal(t, 5, done.Progress.Processed)
	assert.Equal(t, map[string]any{"counted": float64(3)}, done.Result)
	assert.Empty(t, done.Checkpoint, "a finished job keeps no checkpoint")
}

// A server that stops renewing (killed) keeps its job's lease only until it expires; then
// another server's scan takes the job over from its last stored checkpoint. While the lease
// is live, the scan leaves the job alone.
func TestAJobWhoseServerStoppedIsTakenOverWhenItsLeaseExpires(t *testing.T) {
	t.Parallel()
	clock := gtc.NewFakeClock(time.Date(2025, 1, 2, 10, 0, 0, 0, time.UTC))
	st := openStore(t, clock)
	ctx := context.Background()
	started := clock.Now().UTC()
	to := 4
	job, err := st.Jobs().Create(ctx, gtc.Job{ID: "job-killed", Type: "count", Status: gtc.JobQueued, CreatedAt: started,
		Params: map[string]any{"to": to}})
	require.NoError(t, err)
	job.Status, job.StartedAt, job.Checkpoint = gtc.JobRunning, &started, []byte("3")
	job.Progress = gtc.JobProgress{Total: &to, Processed: 3}
	_, err = st.Jobs().Replace(ctx, job)
	require.NoError(t, err)
	_, err = st.Leases().Acquire(ctx, "job:job-killed", "a-server-now-gone", 30*time.Second)
	require.NoError(t, err)

	b, starts := countingServer(t, st, clock)
	b.Scan(ctx)
	still, err := st.Jobs().Get(ctx, "job-killed")
	require.NoError(t, err)
	assert.Equal(t, gtc.JobRunning, still.Status)
	assert.Equal(t, 0, still.Resumed, "a live lease: its server is at work")

	clock.Advance(31 * time.Second)
	b.Scan(ctx)
	assert.Equal(t, 3, <-starts)
	done := waitJob(t, b, "job-killed", gtc.JobSucceeded)
	assert.Equal(t, 1, done.Resumed, "taken over from a server that stopped")
	assert.Equal(t, map[string]any{"counted": float64(1)}, done.Result)
}

// Two servers scanning at once take one job over once: the lease decides.
func TestTwoServersTakeOneJobOverOnce(t *testing.T) {
	t.Parallel()
	st := openStore(t, nil)
	ctx := context.Background()
	now := time.Now().UTC().Add(-time.Minute)
	_, err := st.Jobs().Create(ctx, gtc.Job{ID: "job-orphan", Type: "count", Status: gtc.JobQueued, CreatedAt: now,
		Params: map[string]any{"to": 1}})
	require.NoError(t, err)
	var mu sync.Mutex
	runs := 0
	var servers []*Runner
	for range 4 {
		r := newRunner(st, nil, 1)
		r.Handle("count", func(context.Context, *Run) (any, error) {
			mu.Lock()
			runs++
			mu.Unlock()
			time.Sleep(50 * time.Millisecond)
			return nil, nil
		})
		servers = append(servers, r)
	}
	var wg sync.WaitGroup
	for _, r := range servers {
		wg.Go(func() { r.Scan(ctx) })
	}
	wg.Wait()
	waitJob(t, servers[0], "job-orphan", gtc.JobSucceeded)
	for _, r := range servers {
		r.Close()
	}
	assert.Equal(t, 1, runs)
}

// The queue holds at most MaxQueued jobs beyond the running ones; more are refused with
// JOBS_BUSY and a Retry-After estimate, and nothing of them is stored.
func TestJobsQueueIsBounded(t *testing.T) {
	t.Parallel()
	st := openStore(t, nil)
	r := newRunner(st, nil, 2, queueOf(3))
	defer r.Close()
	release := make(chan struct{})
	var started sync.WaitGroup
	r.Handle("block", func(ctx context.Context, _ *Run) (any, error) {
		started.Done()
		<-release
		return nil, nil
	})
	var ids []string
	started.Add(2)
	for i := range 5 {
		job, err := r.Submit(context.Background(), "block", "alice", i)
		require.NoError(t, err, "job %d: two run, three wait", i)
		ids = append(ids, job.ID)
	}
	started.Wait()

	_, err := r.Submit(context.Background(), "block", "alice", 5)
	busy, ok := errors.AsType[*gtc.JobsBusyError](err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, 10*time.Second, busy.RetryAfter, "no job has finished: the fixed estimate")
	assert.Equal(t, gtc.CodeJobsBusy, gtc.ErrorCode(err))
	ge, ok := gtc.AsError(err)
	require.True(t, ok)
	assert.Equal(t, "The job queue is full: 2 jobs are running and 3 are waiting; retry later", ge.Message)
	unfinished, err := st.Jobs().Unfinished(context.Background(), 100)
	require.NoError(t, err)
	assert.Len(t, unfinished, 5, "a refused job is not stored")

	started.Add(3)
	close(release)
	for _, id := range ids {
		waitJob(t, r, id, gtc.JobSucceeded)
	}
	started.Add(1)
	job, err := r.Submit(context.Background(), "block", "alice", 6)
	require.NoError(t, err, "the queue has room again")
	waitJob(t, r, job.ID, gtc.JobSucceeded)
}

// Retry-After is the mean run time of the last jobs over the number of slots: roughly how
// often a slot, and so a place in the queue, frees while every slot is busy.
func TestJobsRetryAfterFollowsRunTimes(t *testing.T) {
	t.Parallel()
	clock := gtc.NewFakeClock(time.Date(2025, 1, 2, 10, 0, 0, 0, time.UTC))
	st := openStore(t, clock)
	r := newRunner(st, clock, 2, queueOf(0))
	defer r.Close()
	release := make(chan struct{})
	defer close(release)
	r.Handle("advance", func(_ context.Context, run *Run) (any, error) {
		clock.Advance(time.Duration(run.Job.Params.(float64)) * time.Second)
		return nil, nil
	})
	r.Handle("block", func(context.Context, *Run) (any, error) { <-release; return nil, nil })
	for _, secs := range []float64{60, 120} {
		job, err := r.Submit(context.Background(), "advance", "alice", secs)
		require.NoError(t, err)
		waitJob(t, r, job.ID, gtc.JobSucceeded)
	}
	for range 2 {
		job, err := r.Submit(context.Background(), "block", "alice", nil)
		require.NoError(t, err)
		waitJob(t, r, job.ID, gtc.JobRunning)
	}
	_, err := r.Submit(context.Background(), "block", "alice", nil)
	busy, ok := errors.AsType[*gtc.JobsBusyError](err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, 45*time.Second, busy.RetryAfter, "(60 s + 120 s) / 2 jobs / 2 slots")
}

// A server that could not renew in time and whose job another server took over stops the
// job at its next write: the outcome is the other server's, never overwritten by the first.
func TestAServerThatLostItsJobStopsIt(t *testing.T) {
	t.Parallel()
	clock := gtc.NewFakeClock(time.Date(2025, 1, 2, 10, 0, 0, 0, time.UTC))
	st := openStore(t, clock)
	step := make(chan struct{})
	stopped := make(chan error, 1)
	// a renews every 20 min of real time: never within this test.
	a := newRunner(st, clock, 1, func(o *Options) { o.LeaseTTL = time.Hour })
	defer a.Close()
	a.Handle("count", func(ctx context.Context, run *Run) (any, error) {
		to := 5
		run.Update(gtc.JobProgress{Total: &to, Processed: 1}, []byte("1"))
		<-step
		run.Update(gtc.JobProgress{Total: &to, Processed: 2}, []byte("2"))
		<-ctx.Done()
		stopped <- context.Cause(ctx)
		return nil, ctx.Err()
	})
	job, err := a.Submit(context.Background(), "count", "ops", map[string]any{"to": float64(5)})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		j, _ := st.Jobs().Get(context.Background(), job.ID)
		return j.Progress.Processed == 1
	}, 5*time.Second, time.Millisecond)

	clock.Advance(2 * time.Hour) // a's lease has expired
	b, starts := countingServer(t, st, clock)
	b.Scan(context.Background())
	assert.Equal(t, 1, <-starts, "b resumes from a's last stored checkpoint")
	done := waitJob(t, b, job.ID, gtc.JobSucceeded)

	close(step) // a's next write finds the job b wrote
	assert.ErrorIs(t, <-stopped, errLeaseLost)
	a.Close()
	final, err := st.Jobs().Get(context.Background(), job.ID)
	require.NoError(t, err)
	assert.Equal(t, gtc.JobSucceeded, final.Status)
	assert.Equal(t, done.Result, final.Result, "b's outcome stands")
	assert.Equal(t, 1, final.Resumed)
}

// A server whose lease renewal finds the lease in another holder's hands (it expired first)
// stops the job.
func TestALeaseTakenOverStopsTheJob(t *testing.T) {
	t.Parallel()
	clock := gtc.NewFakeClock(time.Date(2025, 1, 2, 10, 0, 0, 0, time.UTC))
	st := openStore(t, clock)
	stopped := make(chan error, 1)
	a := newRunner(st, clock, 1, func(o *Options) { o.LeaseTTL = 300 * time.Millisecond })
	defer a.Close()
	a.Handle("wait", func(ctx context.Context, _ *Run) (any, error) {
		<-ctx.Done()
		stopped <- context.Cause(ctx)
		return nil, ctx.Err()
	})
	job, err := a.Submit(context.Background(), "wait", "ops", nil)
	require.NoError(t, err)
	waitJob(t, a, job.ID, gtc.JobRunning)
	// The lease expires by the store's clock; another server takes it (should a renewal
	// slip in between, the clock moves on again).
	require.Eventually(t, func() bool {
		clock.Advance(time.Second)
		_, err := st.Leases().Acquire(context.Background(), "job:"+job.ID, "another-server", time.Minute)
		return err == nil
	}, 5*time.Second, time.Millisecond)
	select {
	case cause := <-stopped:
		assert.ErrorIs(t, cause, errLeaseLost)
	case <-time.After(10 * time.Second):
		t.Fatal("the job went on after its lease was taken")
	}
}
