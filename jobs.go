package gtc

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"sort"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Job statuses (api.md §3.5).
const (
	JobQueued    = "queued"
	JobRunning   = "running"
	JobSucceeded = "succeeded"
	JobFailed    = "failed"
)

// JobProgress are a job's running counters; Total is nil until known.
type JobProgress struct {
	Total     *int `json:"total"`
	Processed int  `json:"processed"`
	Updated   int  `json:"updated"`
	Skipped   int  `json:"skipped"`
	Errors    int  `json:"errors"`
}

// JobError is why a job failed.
type JobError struct {
	Detail string `json:"detail"`
	Code   string `json:"code"`
}

// Job is a snapshot of one background job.
type Job struct {
	ID         string      `json:"id"`
	Type       string      `json:"type"`
	Status     string      `json:"status"`
	CreatedAt  time.Time   `json:"-"`
	StartedAt  *time.Time  `json:"-"`
	FinishedAt *time.Time  `json:"-"`
	CreatedBy  *string     `json:"createdBy"`
	Params     any         `json:"params"`
	Progress   JobProgress `json:"progress"`
	Result     any         `json:"result"`
	Error      *JobError   `json:"error"`
}

// MarshalJSON writes the job with the API's date-time format.
func (j Job) MarshalJSON() ([]byte, error) {
	type plain Job
	ts := func(t *time.Time) *string {
		if t == nil {
			return nil
		}
		s := FormatAPITime(*t)
		return &s
	}
	return json.Marshal(struct {
		plain
		CreatedAt  string  `json:"createdAt"`
		StartedAt  *string `json:"startedAt"`
		FinishedAt *string `json:"finishedAt"`
	}{plain(j), FormatAPITime(j.CreatedAt), ts(j.StartedAt), ts(j.FinishedAt)})
}

// JobFunc is the work of a job. It reports progress through update and returns the result
// that a succeeded job shows.
type JobFunc func(ctx context.Context, update func(JobProgress)) (any, error)

// Jobs runs background jobs in the server process: at most max at once, the others queued
// first in first out. Finished jobs stay readable for the retention period; a restart
// forgets every job, and Close cancels the running ones.
type Jobs struct {
	clock     Clock
	retention time.Duration
	ctx       context.Context
	cancel    context.CancelFunc
	slots     chan struct{}

	onFinish func(Job)

	mu    sync.Mutex
	jobs  map[string]*jobEntry
	queue []*jobEntry // FIFO of queued jobs
	wg    sync.WaitGroup
}

type jobEntry struct {
	job Job
	fn  JobFunc
}

// NewJobs returns a job runner allowing max concurrent jobs and keeping finished jobs for
// retention.
func NewJobs(clock Clock, max int, retention time.Duration) *Jobs {
	if max < 1 {
		max = 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Jobs{clock: clock, retention: retention, ctx: ctx, cancel: cancel,
		slots: make(chan struct{}, max), jobs: map[string]*jobEntry{}}
}

var jobIDEncoding = base32.NewEncoding("0123456789abcdefghjkmnpqrstvwxyz").WithPadding(base32.NoPadding)

func newJobID(now time.Time) string {
	var b [16]byte
	ms := uint64(now.UnixMilli())
	for i := 5; i >= 0; i-- {
		b[i] = byte(ms)
		ms >>= 8
	}
	_, _ = rand.Read(b[6:])
	return "job-" + jobIDEncoding.EncodeToString(b[:])
}

// OnFinish sets fn to be told of every job that finishes, with its final snapshot (the
// metrics count them). Set it before the first Submit.
func (j *Jobs) OnFinish(fn func(Job)) { j.onFinish = fn }

// Submit queues a job and returns its first snapshot.
func (j *Jobs) Submit(typ, createdBy string, params any, fn JobFunc) Job {
	now := j.clock.Now().UTC()
	by := createdBy
	e := &jobEntry{job: Job{ID: newJobID(now), Type: typ, Status: JobQueued, CreatedAt: now, CreatedBy: &by, Params: params}, fn: fn}
	j.mu.Lock()
	j.gcLocked(now)
	j.jobs[e.job.ID] = e
	j.queue = append(j.queue, e)
	snap := e.job
	j.mu.Unlock()
	j.wg.Add(1)
	go j.run()
	return snap
}

// run waits for a slot, then runs the oldest queued job.
func (j *Jobs) run() {
	defer j.wg.Done()
	select {
	case j.slots <- struct{}{}:
	case <-j.ctx.Done():
		return
	}
	defer func() { <-j.slots }()
	j.mu.Lock()
	if len(j.queue) == 0 {
		j.mu.Unlock()
		return
	}
	e := j.queue[0]
	j.queue = j.queue[1:]
	now := j.clock.Now().UTC()
	e.job.Status = JobRunning
	e.job.StartedAt = &now
	j.mu.Unlock()

	update := func(p JobProgress) {
		j.mu.Lock()
		e.job.Progress = p
		j.mu.Unlock()
	}
	ctx, span := otel.Tracer("github.com/gtc-dev/gtc").Start(j.ctx, "job."+e.job.Type,
		trace.WithAttributes(attribute.String("gtc.job.id", e.job.ID), attribute.String("gtc.job.type", e.job.Type)))
	result, err := safeRun(ctx, e.fn, update)

	j.mu.Lock()
	done := j.clock.Now().UTC()
	e.job.FinishedAt = &done
	if err != nil {
		e.job.Status = JobFailed
		e.job.Error = jobError(err)
		span.SetStatus(codes.Error, e.job.Error.Code)
	} else {
		e.job.Status = JobSucceeded
		e.job.Result = result
	}
	final := e.job
	j.mu.Unlock()
	span.SetAttributes(attribute.Int("gtc.job.processed", final.Progress.Processed), attribute.Int("gtc.job.updated", final.Progress.Updated),
		attribute.Int("gtc.job.errors", final.Progress.Errors))
	span.End()
	if j.onFinish != nil {
		j.onFinish(final)
	}
}

func safeRun(ctx context.Context, fn JobFunc, update func(JobProgress)) (result any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &Error{Code: CodeInternal, Message: "Internal server error"}
		}
	}()
	return fn(ctx, update)
}

func jobError(err error) *JobError {
	if e, ok := AsError(err); ok {
		return &JobError{Detail: e.Message, Code: e.Code}
	}
	switch {
	case errors.Is(err, ErrStorageFull):
		return &JobError{Detail: "Out of storage space: the job stopped before it finished. Free disk space and run it again.", Code: CodeInsufficientStorage}
	case errors.Is(err, ErrUnavailable):
		return &JobError{Detail: "The store is not reachable", Code: CodeStoreUnavailable}
	case errors.Is(err, context.Canceled):
		return &JobError{Detail: "The server stopped before the job finished", Code: CodeInternal}
	}
	return &JobError{Detail: "Internal server error", Code: CodeInternal}
}

// Get returns a snapshot of the job with id, if it is known.
func (j *Jobs) Get(id string) (Job, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.gcLocked(j.clock.Now().UTC())
	e, ok := j.jobs[id]
	if !ok {
		return Job{}, false
	}
	return e.job, true
}

// List returns snapshots of every known job, newest first.
func (j *Jobs) List() []Job {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := make([]Job, 0, len(j.jobs))
	for _, e := range j.jobs {
		out = append(out, e.job)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].CreatedAt.After(out[b].CreatedAt) })
	return out
}

// gcLocked forgets finished jobs older than the retention period.
func (j *Jobs) gcLocked(now time.Time) {
	for id, e := range j.jobs {
		if f := e.job.FinishedAt; f != nil && now.Sub(*f) > j.retention {
			delete(j.jobs, id)
		}
	}
}

// Close cancels the running jobs and waits for them to stop.
func (j *Jobs) Close() {
	j.cancel()
	j.wg.Wait()
}
