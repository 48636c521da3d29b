package gtc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
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

// Job is a snapshot of one background job. Params and Result are what the API shows; a job
// read back from the store has them as decoded JSON (maps, slices, numbers, strings).
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
	// Resumed counts the times a server took the job over from another that stopped (shut
	// down, or stopped renewing its lease) and went on from its last checkpoint.
	Resumed int `json:"resumed"`
	// Checkpoint is where the job's work resumes, in a form of the job type's own; servers
	// read it, the API does not show it.
	Checkpoint []byte `json:"-"`
	// ETag is the stored version this snapshot was read at; JobStore.Replace is conditional
	// on it.
	ETag string `json:"-"`
}

// Finished reports whether the job has ended (succeeded or failed).
func (j Job) Finished() bool { return j.Status == JobSucceeded || j.Status == JobFailed }

// JobStore keeps the jobs of every server of a store, so that any of them answers for a job
// and takes over the work of one that stopped. Which server runs a job is a lease
// ("job:" + its id, LeaseStore), not part of the job.
type JobStore interface {
	// Create stores a new job; an existing id is ErrConflict. It returns the job with its
	// ETag.
	Create(ctx context.Context, j Job) (Job, error)
	// Get returns the job with id; ErrNotFound when there is none (or it was retained away).
	Get(ctx context.Context, id string) (Job, error)
	// Replace writes j while the stored job is still at j.ETag, and returns it with its new
	// ETag; otherwise ErrPreconditionFailed, or ErrNotFound when it is gone.
	Replace(ctx context.Context, j Job) (Job, error)
	// Unfinished returns up to limit queued or running jobs, oldest first.
	Unfinished(ctx context.Context, limit int) ([]Job, error)
	// DeleteFinished removes the jobs that finished before t and returns how many.
	DeleteFinished(ctx context.Context, t time.Time) (int, error)
}

// MaxJobIDBytes bounds a job's id; a longer one names no job.
const MaxJobIDBytes = 128

// MaxJobDocumentBytes bounds a stored job (params, result and checkpoint included), within
// what every store keeps in one document.
const MaxJobDocumentBytes = 1 << 20

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

// NewJobsBusyError refuses a job with message; retry after the given estimate.
func NewJobsBusyError(retryAfter time.Duration, message string) *JobsBusyError {
	return &JobsBusyError{RetryAfter: retryAfter, err: &Error{Code: CodeJobsBusy, Message: message}}
}

// JobsBusyError refuses a job because every slot is taken and the queue is full, or the
// server is shutting down. It wraps
// the JOBS_BUSY *Error; RetryAfter estimates when the queue will have room again.
type JobsBusyError struct {
	RetryAfter time.Duration
	err        *Error
}

func (e *JobsBusyError) Error() string { return e.err.Error() }

// Unwrap returns the JOBS_BUSY *Error.
func (e *JobsBusyError) Unwrap() error { return e.err }

// JobErrorOf is what a job that ended with err shows: the message of a *Error, or a fixed text
// for the store's faults and for anything else (internal errors are never shown).
func JobErrorOf(err error) *JobError {
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

// JobRecord is the stored JSON of a job, the same in every store: the fields of Job with its
// times in the stored format and its params and result as JSON. A store adds its own keys
// (a Cosmos DB document embeds the record next to its id and partition key).
type JobRecord struct {
	ID         string          `json:"jobId"`
	Type       string          `json:"type"`
	Status     string          `json:"status"`
	CreatedAt  string          `json:"createdAt"`
	StartedAt  *string         `json:"startedAt"`
	FinishedAt *string         `json:"finishedAt"`
	CreatedBy  *string         `json:"createdBy"`
	Params     json.RawMessage `json:"params"`
	Progress   JobProgress     `json:"progress"`
	Result     json.RawMessage `json:"result"`
	Error      *JobError       `json:"error"`
	Resumed    int             `json:"resumed"`
	Checkpoint json.RawMessage `json:"checkpoint,omitempty"`
}

// NewJobRecord checks j and returns its stored form: an empty id, params or a result that
// are not JSON, a checkpoint that is not JSON, or a record over MaxJobDocumentBytes are
// ErrInvalidArgument, refused before the store writes anything.
func NewJobRecord(j Job) (*JobRecord, error) {
	if j.ID == "" || len(j.ID) > MaxJobIDBytes {
		return nil, fmt.Errorf("%w: a job id has 1 to %d bytes", ErrInvalidArgument, MaxJobIDBytes)
	}
	r := &JobRecord{ID: j.ID, Type: j.Type, Status: j.Status, CreatedBy: clonePtr(j.CreatedBy), Progress: j.Progress,
		Error: j.Error, Resumed: j.Resumed}
	var err error
	if r.CreatedAt, err = storedTimeChecked("createdAt", j.CreatedAt); err != nil {
		return nil, err
	}
	if j.StartedAt != nil {
		s, err := storedTimeChecked("startedAt", *j.StartedAt)
		if err != nil {
			return nil, err
		}
		r.StartedAt = &s
	}
	if r.FinishedAt, err = storedFinishedAt(j.FinishedAt); err != nil {
		return nil, err
	}
	if r.Params, err = json.Marshal(j.Params); err != nil {
		return nil, fmt.Errorf("%w: job %s: params: %w", ErrInvalidArgument, j.ID, err)
	}
	if r.Result, err = json.Marshal(j.Result); err != nil {
		return nil, fmt.Errorf("%w: job %s: result: %w", ErrInvalidArgument, j.ID, err)
	}
	if len(j.Checkpoint) > 0 {
		if !json.Valid(j.Checkpoint) {
			return nil, fmt.Errorf("%w: job %s: the checkpoint is not JSON", ErrInvalidArgument, j.ID)
		}
		r.Checkpoint = j.Checkpoint
	}
	if n := len(r.Params) + len(r.Result) + len(r.Checkpoint); n > MaxJobDocumentBytes-4096 {
		return nil, fmt.Errorf("%w: job %s: %d bytes of params, result and checkpoint, over the %d a stored job holds",
			ErrTooLarge, j.ID, n, MaxJobDocumentBytes-4096)
	}
	return r, nil
}

// Job reads the record back, with etag as its version. A stored time or value that does not
// read is a damaged store, nothing the caller can fix: ErrUnavailable.
func (r *JobRecord) Job(etag string) (Job, error) {
	j := Job{ID: r.ID, Type: r.Type, Status: r.Status, CreatedBy: r.CreatedBy, Progress: r.Progress, Error: r.Error,
		Resumed: r.Resumed, Checkpoint: r.Checkpoint, ETag: etag}
	fail := func(err error) (Job, error) {
		return Job{}, fmt.Errorf("stored job %s unreadable: %w: %w", r.ID, ErrUnavailable, err)
	}
	var err error
	if j.CreatedAt, err = ParseTime(r.CreatedAt); err != nil {
		return fail(err)
	}
	for _, x := range []struct {
		from *string
		to   **time.Time
	}{{r.StartedAt, &j.StartedAt}, {r.FinishedAt, &j.FinishedAt}} {
		if x.from != nil {
			t, err := ParseTime(*x.from)
			if err != nil {
				return fail(err)
			}
			*x.to = &t
		}
	}
	if len(r.Params) > 0 {
		if err := json.Unmarshal(r.Params, &j.Params); err != nil {
			return fail(err)
		}
	}
	if len(r.Result) > 0 {
		if err := json.Unmarshal(r.Result, &j.Result); err != nil {
			return fail(err)
		}
	}
	return j, nil
}
