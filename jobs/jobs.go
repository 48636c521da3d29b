// Package jobs runs background jobs (the asynchronous tag recompute) on every server of a
// store. A job lives in the store (gtc.JobStore), so any server answers for it; the server
// that runs it holds its lease ("job:" + id) and renews it while the work goes on. A server
// that shuts down hands its running jobs back (queued again, with their checkpoints); a
// server that stops renewing (killed, cut off) loses the lease when it expires. Either way
// another server's periodic scan takes the job over and resumes it from its last
// checkpoint.
package jobs

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/gtc-dev/gtc"
)

// Run is what a job's work sees: the job as stored when this server took it (its params,
// and the checkpoint of an earlier attempt), and how to report progress.
type Run struct {
	Job gtc.Job
	// Update reports the running counters and the checkpoint to resume from (nil keeps the
	// last one). The store is written at most once per CheckpointEvery; the last update is
	// written when the job ends or is handed back.
	Update func(p gtc.JobProgress, checkpoint []byte)
}

// Handler does the work of one job type and returns the result a succeeded job shows. When
// ctx ends because the server is shutting down, it returns ctx's error after its last
// Update: the job is handed back and resumed elsewhere.
type Handler func(ctx context.Context, run *Run) (any, error)

// DefaultMaxQueued is how many jobs may wait for a slot unless Options say otherwise
// (GTC_JOBS_MAX_QUEUED).
const DefaultMaxQueued = 16

// CheckpointEvery is the least time between two progress writes of a running job.
const CheckpointEvery = time.Second

// Options configure a Runner.
type Options struct {
	Store  gtc.JobStore
	Leases gtc.LeaseStore
	Clock  gtc.Clock // nil: the system clock
	// Max jobs run at once on this server (at least 1); MaxQueued more may wait here for a
	// slot (nil: DefaultMaxQueued).
	Max       int
	MaxQueued *int
	// Retention is how long finished jobs stay readable.
	Retention time.Duration
	// LeaseTTL is how long a job's lease lasts without renewal (30 s); it is renewed every
	// third of it, and the scan for jobs to take over runs every LeaseTTL.
	LeaseTTL time.Duration
	Log      *slog.Logger
	// OnFinish is told of every job that ends on this server, with its final snapshot.
	OnFinish func(gtc.Job)
}

// Runner runs jobs on this server: at most Max at once, MaxQueued more waiting here, first
// in first out; beyond that Submit refuses the job.
type Runner struct {
	store     gtc.JobStore
	leases    gtc.LeaseStore
	clock     gtc.Clock
	max       int
	maxQueued int
	retention time.Duration
	ttl       time.Duration
	log       *slog.Logger
	onFinish  func(gtc.Job)
	holder    string

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	handlers map[string]Handler
	local    map[string]*entry // the jobs queued or running on this server
	// unwritten are outcomes of jobs that ended here but could not be stored (a full disk,
	// the store unreachable): this server answers with them, and each scan writes them again.
	unwritten map[string]gtc.Job
	queue     []*entry // FIFO of the jobs waiting here for a slot
	running   int
	recent    []time.Duration // run times of the last jobs that finished here, oldest first
	swept     time.Time       // when Scan last deleted the jobs past their retention
	closed    bool
}

type entry struct {
	job gtc.Job // the freshest snapshot; job.ETag is the stored version
}

// New returns a runner; Start begins its periodic scan.
func New(o Options) *Runner {
	if o.Clock == nil {
		o.Clock = gtc.SystemClock{}
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = 30 * time.Second
	}
	maxQueued := DefaultMaxQueued
	if o.MaxQueued != nil {
		maxQueued = max(0, *o.MaxQueued)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Runner{store: o.Store, leases: o.Leases, clock: o.Clock, max: max(1, o.Max), maxQueued: maxQueued,
		retention: o.Retention, ttl: o.LeaseTTL, log: o.Log, onFinish: o.OnFinish, holder: newID("jobs-runner-", o.Clock.Now()),
		ctx: ctx, cancel: cancel, handlers: map[string]Handler{}, local: map[string]*entry{}, unwritten: map[string]gtc.Job{}}
}

// Handle registers the work of a job type. Register every type before Start and Submit: a
// server takes over only the jobs of the types it knows.
func (r *Runner) Handle(typ string, h Handler) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.handlers[typ] = h
}

var idEncoding = base32.NewEncoding("0123456789abcdefghjkmnpqrstvwxyz").WithPadding(base32.NoPadding)

// newID returns prefix + 26 characters: the time in milliseconds, then random bits.
func newID(prefix string, now time.Time) string {
	var b [16]byte
	ms := uint64(now.UnixMilli())
	for i := 5; i >= 0; i-- {
		b[i] = byte(ms)
		ms >>= 8
	}
	_, _ = rand.Read(b[6:])
	return prefix + idEncoding.EncodeToString(b[:])
}

func (r *Runner) now() time.Time { return r.clock.Now().UTC().Truncate(time.Microsecond) }

func leaseName(id string) string { return "job:" + id }

// Submit stores a new job and queues it here; it returns its first snapshot. When every
// slot is taken and MaxQueued jobs already wait, or the server is shutting down, nothing
// is stored and the error is a *gtc.JobsBusyError.
func (r *Runner) Submit(ctx context.Context, typ, createdBy string, params any) (gtc.Job, error) {
	r.mu.Lock()
	if _, ok := r.handlers[typ]; !ok {
		r.mu.Unlock()
		return gtc.Job{}, fmt.Errorf("jobs: no handler for job type %q", typ)
	}
	if r.closed {
		r.mu.Unlock()
		return gtc.Job{}, gtc.NewJobsBusyError(5*time.Second, "This server is shutting down and takes no new job; retry (another server takes it)")
	}
	if busy := r.busyLocked(); busy != nil {
		r.mu.Unlock()
		return gtc.Job{}, busy
	}
	// The place is reserved while the job is stored, so concurrent submits cannot overfill.
	now := r.now()
	by := createdBy
	e := &entry{job: gtc.Job{ID: newID("job-", now), Type: typ, Status: gtc.JobQueued, CreatedAt: now, CreatedBy: &by, Params: params}}
	r.local[e.job.ID] = e
	r.queue = append(r.queue, e)
	r.mu.Unlock()

	stored, err := r.store.Create(context.WithoutCancel(ctx), e.job)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		delete(r.local, e.job.ID)
		r.dequeueLocked(e)
		return gtc.Job{}, err
	}
	stored.Params = params // the caller's value, not its decoded JSON
	e.job = stored
	r.dispatchLocked()
	return stored, nil
}

// busyLocked refuses a job when every slot is taken and the queue here is full.
func (r *Runner) busyLocked() *gtc.JobsBusyError {
	if r.running+len(r.queue) < r.max+r.maxQueued {
		return nil
	}
	return gtc.NewJobsBusyError(r.retryAfterLocked(),
		fmt.Sprintf("The job queue is full: %d jobs are running and %d are waiting; retry later", r.running, len(r.queue)))
}

func (r *Runner) dequeueLocked(e *entry) {
	for i, q := range r.queue {
		if q == e {
			r.queue = append(r.queue[:i], r.queue[i+1:]...)
			return
		}
	}
}

// dispatchLocked starts the oldest stored jobs of the queue while slots are free.
func (r *Runner) dispatchLocked() {
	for i := 0; i < len(r.queue) && r.running < r.max && !r.closed; {
		e := r.queue[i]
		if e.job.ETag == "" { // still being stored by Submit
			i++
			continue
		}
		r.queue = append(r.queue[:i], r.queue[i+1:]...)
		r.startLocked(e)
	}
}

// startLocked runs e in a slot of its own.
func (r *Runner) startLocked(e *entry) {
	r.running++
	r.wg.Add(1)
	go r.work(e)
}

// retryAfterLocked estimates how long until a queued job takes a slot, and so the queue has
// room: while every slot is busy one frees about every (mean run time ÷ slots). The mean is
// over the last recentJobs finished jobs; before any has finished the estimate is 10 s. It
// is rounded up to whole seconds and kept between 1 s and 5 min.
func (r *Runner) retryAfterLocked() time.Duration {
	if len(r.recent) == 0 {
		return 10 * time.Second
	}
	var sum time.Duration
	for _, d := range r.recent {
		sum += d
	}
	est := sum / time.Duration(len(r.recent)*r.max)
	secs := (est + time.Second - 1) / time.Second // rounded up
	return min(max(secs, 1), 300) * time.Second
}

// recentJobs is how many run times the Retry-After estimate averages.
const recentJobs = 16

// work runs e in the slot it was given, then gives the slot back and starts what waits.
func (r *Runner) work(e *entry) {
	defer r.wg.Done()
	r.runOne(e)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.running--
	delete(r.local, e.job.ID)
	r.dispatchLocked()
}

// errLeaseLost ends a job's context when another server took its lease over.
var errLeaseLost = errors.New("jobs: the job's lease was lost")

// runOne takes the job's lease, marks it running and runs its handler; then it writes the
// outcome, or hands the job back when the server is shutting down.
func (r *Runner) runOne(e *entry) {
	id := e.job.ID
	lease, err := r.leases.Acquire(r.ctx, leaseName(id), r.holder, r.ttl)
	if errors.Is(err, gtc.ErrConflict) {
		return // another server runs it
	}
	if err != nil {
		r.log.Warn("job: taking its lease failed; a later scan retries", "job_id", id, "err", err)
		return
	}
	store := context.WithoutCancel(r.ctx) // the hand-back is written while shutting down
	held := []gtc.Lease{lease}
	defer func() {
		if err := r.leases.Release(store, held[0]); err != nil {
			r.log.Warn("job: releasing its lease failed; it expires", "job_id", id, "err", err)
		}
	}()
	// The stored job is the truth: another server may have finished it, or run it until it
	// stopped.
	job, err := r.store.Get(store, id)
	if err != nil {
		r.log.Warn("job: reading it failed; a later scan retries", "job_id", id, "err", err)
		return
	}
	if job.Finished() {
		return
	}
	r.mu.Lock()
	h := r.handlers[job.Type]
	r.mu.Unlock()
	if h == nil {
		return
	}
	if job.Status == gtc.JobRunning {
		job.Resumed++ // its server stopped without handing it back
	}
	if job.Status == gtc.JobQueued && job.StartedAt != nil {
		job.Resumed++ // handed back by a server that shut down
	}
	started := r.now()
	if job.StartedAt == nil {
		job.StartedAt = &started
	}
	job.Status = gtc.JobRunning
	if job, err = r.store.Replace(store, job); err != nil {
		r.log.Warn("job: marking it running failed; a later scan retries", "job_id", id, "err", err)
		return
	}
	if job.Resumed > 0 {
		r.log.Info("job resumed", "job_id", id, "type", job.Type, "resumed", job.Resumed, "processed", job.Progress.Processed)
	}
	job.Params = e.job.Params // the submitter's typed value, on the server it submitted to
	r.set(e, job)

	jctx, stop := context.WithCancelCause(r.ctx)
	defer stop(nil)
	beatDone := make(chan struct{})
	go func() {
		defer close(beatDone)
		held = gtc.KeepLeases(jctx, r.leases, held, r.ttl, func(gtc.Lease) { stop(errLeaseLost) }, func(_ gtc.Lease, err error) {
			r.log.Warn("job: renewing its lease failed; retrying", "job_id", id, "err", err)
		})
	}()
	w := &writer{r: r, e: e, ctx: store, lost: func() { stop(errLeaseLost) }}
	base := context.Context(jctx)
	if job.CreatedBy != nil { // the job's writes are its creator's
		base = gtc.WithCaller(base, gtc.Caller{UserID: *job.CreatedBy})
	}
	ctx, span := otel.Tracer("github.com/gtc-dev/gtc").Start(base, "job."+job.Type,
		trace.WithAttributes(attribute.String("gtc.job.id", id), attribute.String("gtc.job.type", job.Type)))
	result, err := safeRun(ctx, h, &Run{Job: job, Update: w.update})
	stop(nil)
	<-beatDone

	final := w.current()
	switch {
	case errors.Is(context.Cause(jctx), errLeaseLost):
		span.SetStatus(codes.Error, "lease lost")
		span.End()
		r.log.Warn("job: another server took it over; this server stops it", "job_id", id)
		return
	case err != nil && r.ctx.Err() != nil:
		// Shutting down: back to the queue with the last checkpoint, for another server.
		final.Status = gtc.JobQueued
		if _, err := w.write(final); err != nil {
			r.log.Warn("job: handing it back failed; another server takes it when its lease expires", "job_id", id, "err", err)
		} else {
			r.log.Info("job handed back", "job_id", id, "processed", final.Progress.Processed)
		}
		span.SetStatus(codes.Error, "handed back")
		span.End()
		return
	}
	done := r.now()
	final.FinishedAt = &done
	if err != nil {
		final.Status = gtc.JobFailed
		final.Error = gtc.JobErrorOf(err)
		span.SetStatus(codes.Error, final.Error.Code)
	} else {
		final.Status = gtc.JobSucceeded
		final.Result = result
	}
	final.Checkpoint = nil
	if _, werr := w.write(final); errors.Is(werr, gtc.ErrPreconditionFailed) {
		r.log.Warn("job: another server took it over before it ended here; its outcome is that server's", "job_id", id)
	} else if werr != nil {
		r.log.Error("job: writing its outcome failed; this server answers with it and writes it again at its next scan",
			"job_id", id, "status", final.Status, "err", werr)
		r.mu.Lock()
		r.unwritten[id] = final
		r.mu.Unlock()
	}
	span.SetAttributes(attribute.Int("gtc.job.processed", final.Progress.Processed), attribute.Int("gtc.job.updated", final.Progress.Updated),
		attribute.Int("gtc.job.errors", final.Progress.Errors))
	span.End()
	r.mu.Lock()
	if len(r.recent) == recentJobs {
		r.recent = r.recent[1:]
	}
	r.recent = append(r.recent, done.Sub(started))
	r.mu.Unlock()
	if r.onFinish != nil {
		r.onFinish(final)
	}
}

// writer keeps a running job's snapshot and writes it to the store at most once per
// CheckpointEvery.
type writer struct {
	r    *Runner
	e    *entry
	ctx  context.Context
	lost func() // ends the job: another server wrote it, so it holds the lease now
	mu   sync.Mutex
	last time.Time
}

func (w *writer) current() gtc.Job {
	w.r.mu.Lock()
	defer w.r.mu.Unlock()
	return w.e.job
}

func (w *writer) update(p gtc.JobProgress, checkpoint []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.r.mu.Lock()
	w.e.job.Progress = p
	if checkpoint != nil {
		w.e.job.Checkpoint = checkpoint
	}
	job := w.e.job
	w.r.mu.Unlock()
	if now := w.r.clock.Now(); now.Sub(w.last) >= CheckpointEvery {
		w.last = now
		if _, err := w.writeLocked(job); err != nil {
			w.r.log.Warn("job: writing its progress failed", "job_id", job.ID, "err", err)
		}
	}
}

func (w *writer) write(j gtc.Job) (gtc.Job, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writeLocked(j)
}

// writeLocked replaces the stored job; only the lease holder writes it, so its ETag is the
// one this server wrote last.
func (w *writer) writeLocked(j gtc.Job) (gtc.Job, error) {
	stored, err := w.r.store.Replace(w.ctx, j)
	if errors.Is(err, gtc.ErrPreconditionFailed) {
		w.lost()
	}
	if err != nil {
		return j, err
	}
	w.r.mu.Lock()
	w.e.job.ETag = stored.ETag
	w.r.mu.Unlock()
	return stored, nil
}

func (r *Runner) set(e *entry, j gtc.Job) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e.job = j
}

// snapshot returns this server's snapshot of the job with id, or nil.
func (r *Runner) snapshot(id string) *gtc.Job {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.local[id]; ok {
		j := e.job
		return &j
	}
	if j, ok := r.unwritten[id]; ok {
		return &j
	}
	return nil
}

// writeUnwritten stores the outcomes that could not be stored when their jobs ended, over
// whatever the store holds (this server held the lease until then).
func (r *Runner) writeUnwritten(ctx context.Context) {
	r.mu.Lock()
	pending := make([]gtc.Job, 0, len(r.unwritten))
	for _, j := range r.unwritten {
		pending = append(pending, j)
	}
	r.mu.Unlock()
	for _, j := range pending {
		cur, err := r.store.Get(ctx, j.ID)
		if err == nil && !cur.Finished() {
			j.ETag = cur.ETag
			_, err = r.store.Replace(ctx, j)
		}
		if err != nil && !errors.Is(err, gtc.ErrNotFound) {
			continue // still failing: the next scan tries again
		}
		r.mu.Lock()
		delete(r.unwritten, j.ID)
		r.mu.Unlock()
	}
}

func safeRun(ctx context.Context, h Handler, run *Run) (result any, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &gtc.Error{Code: gtc.CodeInternal, Message: "Internal server error"}
		}
	}()
	return h(ctx, run)
}

// Get returns the job with id: this server's snapshot while it runs here (the freshest),
// otherwise the stored one; ErrNotFound when no server knows it.
func (r *Runner) Get(ctx context.Context, id string) (gtc.Job, error) {
	if j := r.snapshot(id); j != nil {
		return *j, nil
	}
	j, err := r.store.Get(ctx, id)
	if err != nil {
		return gtc.Job{}, err
	}
	if j.Finished() && r.retention > 0 && r.now().Sub(*j.FinishedAt) > r.retention {
		return gtc.Job{}, fmt.Errorf("jobs: job %s: %w", id, gtc.ErrNotFound)
	}
	return j, nil
}

// Local returns snapshots of the jobs queued or running on this server, newest first.
func (r *Runner) Local() []gtc.Job {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]gtc.Job, 0, len(r.local))
	for _, e := range r.local {
		out = append(out, e.job)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].CreatedAt.After(out[b].CreatedAt) })
	return out
}

// scanLimit bounds the unfinished jobs one scan reads.
const scanLimit = 100

// sweepEvery is the least time between two deletions of the jobs past their retention
// (Get hides them as soon as they are).
const sweepEvery = time.Hour

// Scan takes over the unfinished jobs no server holds (their server shut down or stopped
// renewing) while this server has free slots, and deletes the jobs finished longer ago than
// the retention period, at most once per sweepEvery. Start runs it every LeaseTTL.
func (r *Runner) Scan(ctx context.Context) {
	r.writeUnwritten(ctx)
	now := r.now()
	r.mu.Lock()
	sweep := r.retention > 0 && (r.swept.IsZero() || now.Sub(r.swept) >= sweepEvery)
	r.mu.Unlock()
	if sweep {
		if _, err := r.store.DeleteFinished(ctx, now.Add(-r.retention)); err != nil {
			r.log.Warn("jobs: deleting finished jobs failed", "err", err)
		} else {
			r.mu.Lock()
			r.swept = now
			r.mu.Unlock()
		}
	}
	jobs, err := r.store.Unfinished(ctx, scanLimit)
	if err != nil {
		r.log.Warn("jobs: reading the unfinished jobs failed", "err", err)
		return
	}
	for _, j := range jobs {
		r.mu.Lock()
		_, mine := r.local[j.ID]
		if _, ended := r.unwritten[j.ID]; ended {
			mine = true
		}
		_, known := r.handlers[j.Type]
		free := !r.closed && r.running < r.max
		r.mu.Unlock()
		if mine || !known || !free {
			continue
		}
		if j.Status == gtc.JobQueued && j.StartedAt == nil && r.now().Sub(j.CreatedAt) < r.ttl {
			continue // just submitted: its server is about to start it
		}
		l, err := r.leases.Get(ctx, leaseName(j.ID))
		if err == nil && l.LiveAt(r.now()) {
			continue // its server is at work
		}
		if err != nil && !errors.Is(err, gtc.ErrNotFound) {
			continue // unknown: count it as held
		}
		r.mu.Lock()
		if r.closed || r.running >= r.max {
			r.mu.Unlock()
			return
		}
		if _, mine := r.local[j.ID]; mine {
			r.mu.Unlock()
			continue
		}
		e := &entry{job: j}
		r.local[j.ID] = e
		r.startLocked(e)
		r.mu.Unlock()
	}
}

// Start runs Scan now and then every LeaseTTL until Close.
func (r *Runner) Start() {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		t := time.NewTicker(r.ttl)
		defer t.Stop()
		for {
			r.Scan(r.ctx)
			select {
			case <-r.ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// Close refuses new jobs, stops the running ones and hands them back to the store for
// another server (queued, with their checkpoints), and waits for that to be written. Jobs
// queued here and not started stay queued in the store.
func (r *Runner) Close() {
	r.mu.Lock()
	r.closed = true
	r.queue = nil
	r.mu.Unlock()
	r.cancel()
	r.wg.Wait()
}
