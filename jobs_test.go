package gtc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func waitJob(t *testing.T, j *Jobs, id string, status string) Job {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		job, ok := j.Get(id)
		require.True(t, ok)
		if job.Status == status {
			return job
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s is %s, want %s", id, job.Status, status)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestJobsRunAtMostMaxFirstInFirstOut(t *testing.T) {
	clock := NewFakeClock(time.Date(2025, 1, 2, 10, 0, 0, 0, time.UTC))
	j := NewJobs(clock, 1, time.Hour)
	defer j.Close()
	release := make(chan struct{})
	var mu sync.Mutex
	var order []int
	ids := make([]string, 3)
	for i := range 3 {
		job, err := j.Submit("recompute-tags", "alice", map[string]any{"n": i}, func(ctx context.Context, update func(JobProgress)) (any, error) {
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			total := 10
			update(JobProgress{Total: &total, Processed: 3})
			<-release
			return map[string]int{"n": i}, nil
		})
		require.NoError(t, err)
		assert.Equal(t, JobQueued, job.Status)
		assert.Regexp(t, `^[A-Za-z0-9_-]{1,64}$`, job.ID)
		ids[i] = job.ID
		// Each job starts queued; give the runner a moment so submission order is the queue order.
		time.Sleep(5 * time.Millisecond)
	}
	running := waitJob(t, j, ids[0], JobRunning)
	assert.Equal(t, 3, running.Progress.Processed)
	second, _ := j.Get(ids[1])
	assert.Equal(t, JobQueued, second.Status, "only one job runs at a time")
	close(release)
	done := waitJob(t, j, ids[2], JobSucceeded)
	assert.Equal(t, map[string]int{"n": 2}, done.Result)
	assert.Equal(t, []int{0, 1, 2}, order, "queued jobs run first in, first out")

	body, err := json.Marshal(done)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(body, &m))
	assert.Equal(t, "2025-01-02T10:00:00.000Z", m["createdAt"])
	assert.Equal(t, "alice", m["createdBy"])
	assert.Nil(t, m["error"])
}

func TestJobFailuresAndRetention(t *testing.T) {
	clock := NewFakeClock(time.Date(2025, 1, 2, 10, 0, 0, 0, time.UTC))
	j := NewJobs(clock, 2, time.Hour)
	defer j.Close()
	failed, err := j.Submit("recompute-tags", "bob", nil, func(context.Context, func(JobProgress)) (any, error) {
		return nil, fmt.Errorf("scan: %w", ErrUnavailable)
	})
	require.NoError(t, err)
	job := waitJob(t, j, failed.ID, JobFailed)
	assert.Equal(t, &JobError{Detail: "The store is not reachable", Code: CodeStoreUnavailable}, job.Error)
	assert.Nil(t, job.Result)

	panicked, err := j.Submit("recompute-tags", "bob", nil, func(context.Context, func(JobProgress)) (any, error) { panic("boom") })
	require.NoError(t, err)
	job = waitJob(t, j, panicked.ID, JobFailed)
	assert.Equal(t, CodeInternal, job.Error.Code, "a panicking job fails; it does not take the server down")

	clock.Advance(59 * time.Minute)
	_, ok := j.Get(failed.ID)
	assert.True(t, ok, "finished jobs stay readable for the retention period")
	clock.Advance(2 * time.Minute)
	_, ok = j.Get(failed.ID)
	assert.False(t, ok, "and are forgotten after it")
}

func TestJobsCloseCancelsRunningJobs(t *testing.T) {
	j := NewJobs(SystemClock{}, 1, time.Hour)
	started := make(chan struct{})
	job, err := j.Submit("recompute-tags", "ops", nil, func(ctx context.Context, _ func(JobProgress)) (any, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	require.NoError(t, err)
	<-started
	j.Close()
	got, ok := j.Get(job.ID)
	require.True(t, ok)
	assert.Equal(t, JobFailed, got.Status)
	assert.Equal(t, "The server stopped before the job finished", got.Error.Detail)
}

// The queue holds at most maxQueued jobs beyond the running ones; more are refused with
// JOBS_BUSY and a Retry-After estimate, and nothing of them is kept.
func TestJobsQueueIsBounded(t *testing.T) {
	j := NewJobs(SystemClock{}, 2, time.Hour)
	j.LimitQueue(3)
	defer j.Close()
	release := make(chan struct{})
	var started sync.WaitGroup
	block := func(ctx context.Context, _ func(JobProgress)) (any, error) {
		started.Done()
		<-release
		return nil, nil
	}
	var ids []string
	started.Add(2)
	for i := range 5 {
		job, err := j.Submit("recompute-tags", "alice", i, block)
		require.NoError(t, err, "job %d: two run, three wait", i)
		ids = append(ids, job.ID)
	}
	started.Wait() // the two running jobs hold their slots; they do not count against the queue

	_, err := j.Submit("recompute-tags", "alice", 5, block)
	busy, ok := errors.AsType[*JobsBusyError](err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, 10*time.Second, busy.RetryAfter, "no job has finished: the fixed estimate")
	ge, ok := AsError(err)
	require.True(t, ok)
	assert.Equal(t, CodeJobsBusy, ge.Code)
	assert.Equal(t, "The job queue is full: 2 jobs are running and 3 are waiting; retry later", ge.Message)
	assert.Len(t, j.List(), 5, "a refused job is not kept")

	started.Add(3)
	close(release)
	for _, id := range ids {
		waitJob(t, j, id, JobSucceeded)
	}
	job, err := j.Submit("recompute-tags", "alice", 6, func(context.Context, func(JobProgress)) (any, error) { return nil, nil })
	require.NoError(t, err, "the queue has room again")
	waitJob(t, j, job.ID, JobSucceeded)
}

// Retry-After is the mean run time of the last jobs over the number of slots: roughly how
// often a slot, and so a place in the queue, frees while every slot is busy.
func TestJobsRetryAfterFollowsRunTimes(t *testing.T) {
	clock := NewFakeClock(time.Date(2025, 1, 2, 10, 0, 0, 0, time.UTC))
	j := NewJobs(clock, 2, time.Hour)
	j.LimitQueue(0)
	defer j.Close()
	for _, d := range []time.Duration{60 * time.Second, 120 * time.Second} {
		job, err := j.Submit("recompute-tags", "alice", nil, func(context.Context, func(JobProgress)) (any, error) {
			clock.Advance(d)
			return nil, nil
		})
		require.NoError(t, err)
		waitJob(t, j, job.ID, JobSucceeded)
	}
	release := make(chan struct{})
	defer close(release)
	for range 2 {
		job, err := j.Submit("recompute-tags", "alice", nil, func(context.Context, func(JobProgress)) (any, error) {
			<-release
			return nil, nil
		})
		require.NoError(t, err)
		waitJob(t, j, job.ID, JobRunning)
	}
	_, err := j.Submit("recompute-tags", "alice", nil, func(context.Context, func(JobProgress)) (any, error) { return nil, nil })
	busy, ok := errors.AsType[*JobsBusyError](err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, 45*time.Second, busy.RetryAfter, "(60 s + 120 s) / 2 jobs / 2 slots")
}

func TestJobsQueueOfZeroRunsOnlyWhatHasASlot(t *testing.T) {
	j := NewJobs(SystemClock{}, 1, time.Hour)
	j.LimitQueue(0)
	release := make(chan struct{})
	defer j.Close()
	defer close(release)
	first, err := j.Submit("recompute-tags", "alice", nil, func(ctx context.Context, _ func(JobProgress)) (any, error) {
		<-release
		return nil, nil
	})
	require.NoError(t, err)
	waitJob(t, j, first.ID, JobRunning)
	_, err = j.Submit("recompute-tags", "alice", nil, func(context.Context, func(JobProgress)) (any, error) { return nil, nil })
	assert.Equal(t, CodeJobsBusy, ErrorCode(err))
}
