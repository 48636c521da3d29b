package gtc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// RecomputeRequest selects the items whose computed tags are refreshed.
type RecomputeRequest struct {
	Dataset *string
	Status  *Status
	DryRun  bool
	// From resumes a recompute that stopped: it goes on after the checkpoint's last page,
	// with its counts.
	From *RecomputeCheckpoint
}

// RecomputeCheckpoint is where a recompute stands after a page: the scan cursor of the next
// page and the counts so far. A job keeps it so that another server can go on from there.
type RecomputeCheckpoint struct {
	Cursor  string          `json:"cursor"`
	Total   int             `json:"total"`
	Matched int             `json:"matched"`
	Result  RecomputeResult `json:"result"`
}

// RecomputeResult is the summary of a recompute; the keys are snake_case, as in the
// reference backend.
type RecomputeResult struct {
	Total      int      `json:"total"`
	Processed  int      `json:"processed"`
	Updated    int      `json:"updated"`
	Skipped    int      `json:"skipped"`
	Errors     []string `json:"errors"`
	DryRun     bool     `json:"dry_run"`
	DurationMS int64    `json:"duration_ms"`
}

// RecomputeItem is what happened to one item, for reports.
type RecomputeItem struct {
	DatasetName string   `json:"datasetName"`
	ID          string   `json:"id"`
	Changed     bool     `json:"changed"`
	Error       string   `json:"error,omitempty"`
	Added       []string `json:"added,omitempty"`
	Removed     []string `json:"removed,omitempty"`
	Stripped    []string `json:"stripped,omitempty"`
}

// RecomputeHooks observe a recompute; both may be nil.
type RecomputeHooks struct {
	// Progress is called after every page with the running counters.
	Progress func(JobProgress)
	// Item is called for every item that changed or failed, in scan order.
	Item func(RecomputeItem)
	// Stopped is asked between pages; true ends the run after the page in flight, with the
	// counts so far.
	Stopped func() bool
	// Checkpoint is called after every page but the last with where the run stands.
	Checkpoint func(RecomputeCheckpoint)
}

// recomputeWorkers run the per-item work of a page in parallel, so several conditional
// writes are queued at once and share commits.
const recomputeWorkers = 64

// RecomputeTags refreshes the stored computed tags: items are read page by page in
// (datasetName, id) order, the tag pipeline runs on their stored manual tags, and changed
// items are written conditionally on the ETag read, retried from a fresh read up to 3 times.
// The write changes the tag lists and the ETag only: updatedAt, the approval stamps and the
// assignment are left alone. Per-item problems are listed in the result; only a job-level
// failure (the store unreachable) returns an error. Memory stays bounded by one page.
func (c *Curator) RecomputeTags(ctx context.Context, req RecomputeRequest, hooks RecomputeHooks) (*RecomputeResult, error) {
	start := time.Now()
	spec := ScanSpec{Order: ByDatasetID}
	filter := Filter{}
	if req.Dataset != nil {
		spec.DatasetNames = []string{*req.Dataset}
		filter.DatasetNames = spec.DatasetNames
	}
	if req.Status != nil {
		spec.Statuses = []Status{*req.Status}
		filter.Statuses = spec.Statuses
	}
	res := &RecomputeResult{Errors: []string{}, DryRun: req.DryRun}
	matched, cursor := 0, ""
	var total int
	if f := req.From; f != nil {
		*res = f.Result
		res.Errors = slices.Clone(f.Result.Errors)
		if res.Errors == nil {
			res.Errors = []string{}
		}
		res.DryRun = req.DryRun
		matched, cursor, total = f.Matched, f.Cursor, f.Total
		start = start.Add(-time.Duration(f.Result.DurationMS) * time.Millisecond) // the earlier attempts' time counts
	} else {
		var err error
		if total, err = c.store.Items().Count(ctx, filter); err != nil {
			return nil, err
		}
	}
	if hooks.Progress != nil {
		hooks.Progress(JobProgress{Total: &total, Processed: res.Processed, Updated: res.Updated, Skipped: res.Skipped, Errors: len(res.Errors)})
	}
	batch := c.recomputeBatch
	if batch < 1 {
		batch = 200
	}
	for index := 0; ; index++ {
		next, err := c.recomputePage(ctx, index, spec, cursor, batch, req.DryRun, hooks, res, &matched)
		if err != nil {
			return nil, err
		}
		if hooks.Progress != nil {
			// Writes during the scan can make more items match than were counted.
			t := max(total, matched)
			hooks.Progress(JobProgress{Total: &t, Processed: res.Processed, Updated: res.Updated, Skipped: res.Skipped, Errors: len(res.Errors)})
		}
		if next == "" || (hooks.Stopped != nil && hooks.Stopped()) {
			break
		}
		cursor = next
		if hooks.Checkpoint != nil {
			cp := RecomputeCheckpoint{Cursor: cursor, Total: total, Matched: matched, Result: *res}
			cp.Result.DurationMS = time.Since(start).Milliseconds()
			hooks.Checkpoint(cp)
		}
		if err := ctx.Err(); err != nil {
			return nil, err // stopped between pages: the checkpoint above is where to go on
		}
	}
	res.Total = matched
	res.DurationMS = time.Since(start).Milliseconds()
	return res, nil
}

// recomputePage reads the page at cursor and recomputes its items, adding them to res and
// matched; it returns the cursor of the next page ("" after the last). The page is one
// "recompute.batch" span under the job's, and its store calls nest under it.
func (c *Curator) recomputePage(ctx context.Context, index int, spec ScanSpec, cursor string, limit int, dryRun bool,
	hooks RecomputeHooks, res *RecomputeResult, matched *int) (next string, err error) {
	ctx, span := startBatchSpan(ctx, "recompute.batch", index)
	var items, updated, skipped, errs int
	defer func() {
		endBatchSpan(span, err, items, attribute.Int("gtc.batch.updated", updated), attribute.Int("gtc.batch.skipped", skipped),
			attribute.Int("gtc.batch.errors", errs))
	}()
	page, err := c.store.Items().Scan(ctx, spec, cursor, limit)
	if err != nil {
		return "", err
	}
	items = len(page.Items)
	outcomes := make([]recomputeOutcome, len(page.Items))
	var wg sync.WaitGroup
	sem := make(chan struct{}, recomputeWorkers)
	for i, it := range page.Items {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			outcomes[i] = c.recomputeOne(ctx, it, dryRun)
		}()
	}
	wg.Wait()
	for _, o := range outcomes {
		if o.fatal != nil && errors.Is(o.fatal, ErrStorageFull) {
			return "", fmt.Errorf("%w: %w", &Error{Code: CodeInsufficientStorage, Message: "Out of storage space: " +
				"the recompute stopped before it finished (items already refreshed keep their new tags). Free disk space and run it again."}, o.fatal)
		}
		if o.fatal != nil {
			return "", o.fatal
		}
		*matched++
		switch {
		case o.item.Error != "":
			res.Errors = append(res.Errors, o.item.ID+": "+o.item.Error)
			errs++
		case o.item.Changed:
			res.Updated++
			res.Processed++
			updated++
		default:
			res.Skipped++
			res.Processed++
			skipped++
		}
		if hooks.Item != nil && (o.item.Changed || o.item.Error != "") {
			hooks.Item(o.item)
		}
	}
	return page.Next, nil
}

type recomputeOutcome struct {
	item  RecomputeItem
	fatal error
}

// recomputeOne handles one item: run the tag pipeline, compare, write when changed, and
// re-read and retry on a lost race.
func (c *Curator) recomputeOne(ctx context.Context, cur *Item, dryRun bool) recomputeOutcome {
	ctx = WithChange(ctx, Change{Source: SourceRecompute})
	out := RecomputeItem{DatasetName: cur.DatasetName, ID: cur.ID}
	for attempt := 1; ; attempt++ {
		// A shallow copy is enough: the pipeline replaces the two tag lists and reads the
		// rest, and nothing else changes before the write.
		cp := *cur
		next := &cp
		prep, err := c.tagger.Prepare(next, cur.ManualTags, true)
		if err != nil {
			var fe *TagFormatError
			var re *TagRuleError
			switch {
			case errors.As(err, &fe):
				out.Error = fe.Error()
			case errors.As(err, &re):
				out.Error = re.Error()
			default:
				return recomputeOutcome{fatal: err}
			}
			return recomputeOutcome{item: out}
		}
		added, removed := setDiff(cur.ComputedTags, next.ComputedTags)
		out.Changed = len(added) > 0 || len(removed) > 0 || len(prep.Stripped) > 0
		out.Added, out.Removed, out.Stripped = added, removed, prep.Stripped
		if !out.Changed || dryRun {
			return recomputeOutcome{item: out}
		}
		_, err = c.store.Items().Replace(ctx, cur, next)
		switch {
		case err == nil:
			return recomputeOutcome{item: out}
		case errors.Is(err, ErrPreconditionFailed):
			if attempt == UpdateAttempts {
				out.Error, out.Changed = MsgConcurrentModification, false
				return recomputeOutcome{item: out}
			}
			cur, err = c.store.Items().Get(ctx, cur.Key())
			if errors.Is(err, ErrNotFound) {
				out.Error, out.Changed = MsgItemNotFound, false
				return recomputeOutcome{item: out}
			}
			if err != nil {
				return recomputeOutcome{fatal: err}
			}
		case errors.Is(err, ErrNotFound):
			out.Error, out.Changed = MsgItemNotFound, false
			return recomputeOutcome{item: out}
		case errors.Is(err, ErrTooLarge):
			out.Error, out.Changed = MsgItemTooLarge, false
			return recomputeOutcome{item: out}
		case errors.Is(err, ErrUnavailable), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			return recomputeOutcome{fatal: err}
		case errors.Is(err, ErrStorageFull):
			// Every later write would fail the same way: stop rather than list them all.
			return recomputeOutcome{fatal: err}
		default:
			c.log.ErrorContext(ctx, "recompute: write failed", "dataset", cur.DatasetName, "item", cur.ID, "err", err)
			out.Error, out.Changed = "The store refused the write", false
			return recomputeOutcome{item: out}
		}
	}
}

// setDiff returns the tags only in b (added) and only in a (removed), each sorted.
func setDiff(a, b []string) (added, removed []string) {
	in := func(s []string, t string) bool { return slices.Contains(s, t) }
	for _, t := range b {
		if !in(a, t) {
			added = append(added, t)
		}
	}
	for _, t := range a {
		if !in(b, t) {
			removed = append(removed, t)
		}
	}
	slices.Sort(added)
	slices.Sort(removed)
	return slices.Compact(added), slices.Compact(removed)
}

// tracerName names the spans of the root package (the job spans of jobs.go and the batch
// spans here). The tracer is looked up per span so a provider installed later is used.
const tracerName = "github.com/gtc-dev/gtc"

// startBatchSpan starts the span of one batch of a job ("recompute.batch", "import.batch")
// under ctx's span; the store calls of the batch take the returned context.
func startBatchSpan(ctx context.Context, name string, index int) (context.Context, trace.Span) {
	ctx, span := otel.Tracer(tracerName).Start(ctx, name)
	if span.IsRecording() {
		span.SetAttributes(attribute.Int("gtc.batch.index", index))
	}
	return ctx, span
}

// endBatchSpan ends a batch span with its item count and counts, and an error status when
// the batch failed as a whole (per-item problems are counts, not a failed batch).
func endBatchSpan(span trace.Span, err error, items int, counts ...attribute.KeyValue) {
	if span.IsRecording() {
		span.SetAttributes(attribute.Int("gtc.batch.items", items))
		span.SetAttributes(counts...)
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
	}
	span.End()
}
