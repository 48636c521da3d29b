package gtc

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Job statuses.
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

// DefaultMaxQueuedJobs is how many jobs may wait for a slot unless LimitQueue says otherwise
// (GTC_JOBS_MAX_QUEUED).
const DefaultMaxQueuedJobs = 16

// Jobs runs background jobs in the server process: at most max at once, and at most
// maxQueued more waiting for a slot, first in first out; beyond that Submit refuses the
// job. Finished jobs stay readable for the retention period; a restart forgets every job,
// and Close cancels the running ones.
type Jobs struct {
	clock     Clock
	retention time.Duration
	ctx       context.Context
	cancel    context.CancelFunc
	max       int
	maxQueued int

	onFinish func(Job)

	mu      sync.Mutex
	jobs    map[string]*jobEntry
	queue   []*jobEntry     // FIFO of the jobs waiting for a slot
	running int             // jobs holding a slot
	recent  []time.Duration // run times of the last jobs that finished, oldest first
	wg      sync.WaitGroup
}

type jobEntry struct {
	job Job
	fn  JobFunc
}

// NewJobs returns a job runner allowing max concurrent jobs, DefaultMaxQueuedJobs waiting,
// and keeping finished jobs for retention.
func NewJobs(clock Clock, max int, retention time.Duration) *Jobs {
	if max < 1 {
		max = 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Jobs{clock: clock, retention: retention, ctx: ctx, cancel: cancel,
		max: max, maxQueued: DefaultMaxQueuedJobs, jobs: map[string]*jobEntry{}}
}

// LimitQueue sets how many jobs may wait for a slot while every slot is taken (0: none may
// wait). Set it before the first Submit.
func (j *Jobs) LimitQueue(n int) { j.maxQueued = max(0, n) }

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

// JobsBusyError refuses a job because every slot is taken and the queue is full. It wraps
// the JOBS_BUSY *Error; RetryAfter estimates when the queue will have room again.
type JobsBusyError struct {
	RetryAfter time.Duration
	err        *Error
}

func (e *JobsBusyError) Error() string { return e.err.Error() }

// Unwrap returns the JOBS_BUSY *Error.
func (e *JobsBusyError) Unwrap() error { return e.err }

// Submit queues a job and returns its first snapshot. When every slot is taken and
// maxQueued jobs already wait, nothing is queued and the error is a *JobsBusyError.
func (j *Jobs) Submit(typ, createdBy string, params any, fn JobFunc) (Job, error) {
	now := j.clock.Now().UTC()
	j.mu.Lock()
	defer j.mu.Unlock()
	j.gcLocked(now)
	if j.running >= j.max && len(j.queue) >= j.maxQueued {
		return Job{}, &JobsBusyError{RetryAfter: j.retryAfterLocked(), err: &Error{Code: CodeJobsBusy,
			Message: fmt.Sprintf("The job queue is full: %d jobs are running and %d are waiting; retry later", j.running, len(j.queue))}}
	}
	by := createdBy
	e := &jobEntry{job: Job{ID: newJobID(now), Type: typ, Status: JobQueued, CreatedAt: now, CreatedBy: &by, Params: params}, fn: fn}
	j.jobs[e.job.ID] = e
	if j.running < j.max {
		j.running++
		j.wg.Add(1)
		go j.work(e)
	} else {
		j.queue = append(j.queue, e)
	}
	return e.job, nil
}

// retryAfterLocked estimates how long until a queued job takes a slot, and so the queue has
// room: while every slot is busy one frees about every (mean run time ÷ slots). The mean is
// over the last recentJobs finished jobs; before any has finished the estimate is 10 s. It
// is rounded up to whole seconds and kept between 1 s and 5 min.
func (j *Jobs) retryAfterLocked() time.Duration {
	if len(j.recent) == 0 {
		return 10 * time.Second
	}
	var sum time.Duration
	for _, d := range j.recent {
		sum += d
	}
	est := sum / time.Duration(len(j.recent)*j.max)
	secs := (est + time.Second - 1) / time.Second // rounded up
	return min(max(secs, 1), 300) * time.Second
}

// recentJobs is how many run times the Retry-After estimate averages.
const recentJobs = 16

// work runs e in the slot it was given, then the oldest queued jobs, until the queue is
// empty or the runner is closed; then it gives the slot back.
func (j *Jobs) work(e *jobEntry) {
	defer j.wg.Done()
	for e != nil && j.ctx.Err() == nil {
		j.runOne(e)
		e = j.next()
	}
	if e != nil {
		// Closed before e could start: it stays queued, as the queue does.
		j.mu.Lock()
		j.running--
		j.mu.Unlock()
	}
}

// next takes the oldest queued job for a slot that has just become free, or gives the slot
// back when no job waits or the runner is closed.
func (j *Jobs) next() *jobEntry {
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.queue) == 0 || j.ctx.Err() != nil {
		j.running--
		return nil
	}
	e := j.queue[0]
	j.queue[0] = nil
	j.queue = j.queue[1:]
	return e
}

// runOne runs one job in the slot the caller holds.
func (j *Jobs) runOne(e *jobEntry) {
	j.mu.Lock()
	now := j.clock.Now().UTC()
	e.job.Status = JobRunning
	e.job.StartedAt = &now
	j.mu.Unlock()

	update := func(p JobProgress) {
		j.mu.Lock()
		e.job.Progress = p
		j.mu.Unlock()
	}
	base := j.ctx
	if e.job.CreatedBy != nil { // the job's writes are its creator's
		base = WithCaller(base, Caller{UserID: *e.job.CreatedBy})
	}
	ctx, span := otel.Tracer("github.com/gtc-dev/gtc").Start(base, "job."+e.job.Type,
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
	if len(j.recent) == recentJobs {
		j.recent = j.recent[1:]
	}
	j.recent = append(j.recent, done.Sub(now))
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
