// Package observed wraps a gtc.Store so that every call is timed, counted and traced: a
// span per call (a child of the caller's span) and one Recorder event per call, for both
// store backends alike. cmd/gtc wraps the store it opens; nothing else changes.
package observed

import (
	"context"
	"errors"
	"iter"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/gtc-dev/gtc"
)

// Recorder is told of every store call: the backend, the operation ("items.Replace"), how
// long it took and its error (nil on success). It must be safe for concurrent use.
type Recorder interface {
	StoreCall(backend, op string, d time.Duration, err error)
}

// Reason names the class of a store error for metrics: not_found, conflict,
// precondition_failed, unavailable, storage_full, canceled, timeout, invalid, too_large or other.
func Reason(err error) string {
	switch {
	case errors.Is(err, context.Canceled):
		return "canceled" // the caller went away
	case errors.Is(err, gtc.ErrNotFound), errors.Is(err, gtc.ErrArtifactNotFound):
		return "not_found"
	case errors.Is(err, gtc.ErrPreconditionFailed), errors.Is(err, gtc.ErrConcurrentModification):
		return "precondition_failed"
	case errors.Is(err, gtc.ErrConflict):
		return "conflict"
	case errors.Is(err, gtc.ErrStorageFull):
		return "storage_full"
	case errors.Is(err, gtc.ErrUnavailable), errors.Is(err, gtc.ErrStorageUnavailable):
		return "unavailable"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, gtc.ErrInvalidArgument):
		return "invalid"
	case errors.Is(err, gtc.ErrTooLarge):
		return "too_large"
	}
	return "other"
}

// expected reports errors that are answers, not failures: a span that ends with one keeps
// an unset status.
func expected(reason string) bool {
	switch reason {
	case "not_found", "precondition_failed", "conflict", "invalid", "too_large":
		return true
	}
	return false
}

// tracerName names the spans of this package. The tracer is looked up per span, so a
// provider installed later (or replaced in a test) is always the one used.
const tracerName = "github.com/gtc-dev/gtc/storage/observed"

// obs is what every wrapper shares.
type obs struct {
	backend string
	rec     Recorder
	attr    attribute.KeyValue
	noSpans bool
}

// Option changes how Wrap observes.
type Option func(*obs)

// NoSpans makes the wrapper time and count only: no span is started, which saves the cost of
// a span per call when tracing is off.
func NoSpans() Option { return func(o *obs) { o.noSpans = true } }

// call is one store call in progress.
type call struct {
	o    *obs
	op   string
	t0   time.Time
	span trace.Span
}

func (o *obs) start(ctx context.Context, op string) (context.Context, call) {
	if o.noSpans {
		return ctx, call{o: o, op: op, t0: time.Now()}
	}
	ctx, span := otel.Tracer(tracerName).Start(ctx, "store."+op, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(o.attr, attribute.String("gtc.store.operation", op)))
	return ctx, call{o: o, op: op, t0: time.Now(), span: span}
}

func (c call) end(err error) {
	if c.o.rec != nil {
		c.o.rec.StoreCall(c.o.backend, c.op, time.Since(c.t0), err)
	}
	if c.span == nil {
		return
	}
	if err != nil && c.span.IsRecording() {
		reason := Reason(err)
		c.span.SetAttributes(attribute.String("gtc.store.error", reason))
		if !expected(reason) {
			c.span.SetStatus(codes.Error, reason)
		}
	}
	c.span.End()
}

// seq times a whole iteration: the span and the timing start when the caller starts
// ranging and end when the iteration stops.
func seq[K, V any](o *obs, ctx context.Context, op string, open func(ctx context.Context) iter.Seq2[K, V]) iter.Seq2[K, V] {
	return func(yield func(K, V) bool) {
		ctx, c := o.start(ctx, op)
		var failed error
		for k, v := range open(ctx) {
			if e, ok := any(v).(error); ok && e != nil {
				failed = e
			}
			if !yield(k, v) {
				break
			}
		}
		c.end(failed)
	}
}

// Wrap returns s with every call observed: a span per call, and an event to rec (nil:
// spans only).
func Wrap(s gtc.Store, rec Recorder, opts ...Option) gtc.Store {
	o := &obs{backend: s.Backend(), rec: rec}
	for _, opt := range opts {
		opt(o)
	}
	o.attr = attribute.String("gtc.store.backend", o.backend)
	w := &store{inner: s, o: o,
		curation: curation{inner: s.Curation(), o: o},
		tags:     tags{inner: s.TagStore(), o: o},
		defs:     definitions{inner: s.TagDefinitions(), o: o},
		maint:    maintenance{inner: s.Maintenance(), o: o},
		agentOps: agentOps{inner: s.AgentOperations(), o: o},
		revs:     revisions{inner: s.Revisions(), o: o},
		leases:   leases{inner: s.Leases(), o: o},
		jobs:     jobs{inner: s.Jobs(), o: o},
		previews: agentPreviews{inner: s.AgentPreviews(), o: o},
	}
	base := items{inner: s.Items(), o: o}
	sampler, samples := s.Items().(gtc.EligibleSampler)
	counter, counts := s.Items().(gtc.TagCounter)
	switch {
	case samples && counts:
		w.items = struct {
			items
			eligibleSampler
			tagCounter
		}{base, eligibleSampler{sampler, o}, tagCounter{counter, o}}
	case samples:
		w.items = struct {
			items
			eligibleSampler
		}{base, eligibleSampler{sampler, o}}
	case counts:
		w.items = struct {
			items
			tagCounter
		}{base, tagCounter{counter, o}}
	default:
		w.items = base
	}
	return w
}

// store is the observed gtc.Store.
type store struct {
	inner    gtc.Store
	o        *obs
	items    gtc.ItemStore
	curation curation
	tags     tags
	defs     definitions
	maint    maintenance
	agentOps agentOps
	revs     revisions
	leases   leases
	jobs     jobs
	previews agentPreviews
}

// Unwrap returns the store being observed.
func (s *store) Unwrap() gtc.Store { return s.inner }

func (s *store) Items() gtc.ItemStore                     { return s.items }
func (s *store) Curation() gtc.CurationStore              { return s.curation }
func (s *store) TagStore() gtc.TagStore                   { return s.tags }
func (s *store) TagDefinitions() gtc.TagDefinitionStore   { return s.defs }
func (s *store) Maintenance() gtc.Maintenance             { return s.maint }
func (s *store) AgentOperations() gtc.AgentOperationStore { return s.agentOps }
func (s *store) Revisions() gtc.RevisionStore             { return s.revs }
func (s *store) Leases() gtc.LeaseStore                   { return s.leases }
func (s *store) Jobs() gtc.JobStore                       { return s.jobs }
func (s *store) AgentPreviews() gtc.AgentPreviewStore     { return s.previews }
func (s *store) Backend() string                          { return s.inner.Backend() }
func (s *store) Close() error                             { return s.inner.Close() }

// GroupsCommits passes on whether the store groups commits (gtc.GroupCommitter).
func (s *store) GroupsCommits() bool {
	gc, ok := s.inner.(gtc.GroupCommitter)
	return ok && gc.GroupsCommits()
}

func (s *store) Ping(ctx context.Context) error {
	ctx, c := s.o.start(ctx, "Ping")
	err := s.inner.Ping(ctx)
	c.end(err)
	return err
}

func (s *store) Status(ctx context.Context) (gtc.StoreStatus, error) {
	ctx, c := s.o.start(ctx, "Status")
	st, err := s.inner.Status(ctx)
	c.end(err)
	return st, err
}
