package migrate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	gtc "github.com/gtc-dev/gtc"
)

// Options are the flags of one gtc migrate run.
type Options struct {
	Datasets    []string // empty = every dataset
	DryRun      bool     // convert everything, write nothing
	Check       bool     // a dry run that only reports totals
	BatchSize   int      // documents per read page (1–1000, default 100)
	Concurrency int      // parallel writes within a batch (1–32, default 4)
	Limit       int      // stop after this many written documents; 0 = no limit
	NoMove      bool     // report documents that must move as BUCKET_NEEDS_MOVE
	FailFast    bool     // stop at the first document error
	By          string   // recorded on the migration marker: "gtc migrate <version>"
	// Checkpoint keeps progress (nil = none; dry runs never use one).
	Checkpoint *CheckpointFile
	// Restart ignores an existing checkpoint.
	Restart bool
}

// Hooks let the command show progress and write its report; all are optional and are
// called from the goroutine that runs the job.
type Hooks struct {
	// Progress is called after every batch.
	Progress func(Progress)
	// Document is called for every examined document, in scan order, after its batch.
	Document func(DocReport)
	// BatchDone is called after every batch (the command flushes its report there).
	BatchDone func()
}

// Progress is how far a run is.
type Progress struct {
	Processed int
	Total     int // -1 while unknown
	Migrated  int
	Skipped   int
	Errors    int
}

// Action is what happened to one document.
type Action string

// Actions of the report.
const (
	ActionMigrate   Action = "migrate"
	ActionReindex   Action = "reindex"
	ActionMove      Action = "move"
	ActionUnchanged Action = "unchanged"
	ActionError     Action = "error"
)

// DocReport is one document's outcome, the line of the --report file.
type DocReport struct {
	Key      string    `json:"key"`
	Action   Action    `json:"action"`
	Changes  []Change  `json:"changes,omitempty"`
	Warnings []Warning `json:"warnings,omitempty"`
	Error    *DocError `json:"error,omitempty"`
	// Summary is the dry-run line's description (not part of the report file).
	Summary string `json:"-"`
	// DatasetName, Bucket and ID are the parts of Key; NewBucket is set for moves.
	DatasetName string `json:"-"`
	Bucket      string `json:"-"`
	ID          string `json:"-"`
	NewBucket   string `json:"-"`
	// ConvertedTags are the Result's ConvertedTags (ConvertForImport).
	ConvertedTags []string `json:"-"`
}

// SummaryWarning is one warning of the summary.
type SummaryWarning struct {
	DatasetName string `json:"datasetName"`
	ID          string `json:"id"`
	Code        string `json:"code"`
	Message     string `json:"message"`
}

// RegistrySummary reports the registry and marker work; BucketsRegistered and DuplicateIDs
// are reported by stores that keep a registry (Cosmos DB).
type RegistrySummary struct {
	BucketsRegistered *int `json:"bucketsRegistered,omitempty"`
	DuplicateIDs      *int `json:"duplicateIds,omitempty"`
	MarkerWritten     bool `json:"markerWritten"`
}

// Summary is the result of a run.
type Summary struct {
	Total             int              `json:"total"`
	Migrated          int              `json:"migrated"`
	Skipped           int              `json:"skipped"`
	Errors            []string         `json:"errors"`
	Warnings          []SummaryWarning `json:"warnings"`
	TagStoreRemoved   []string         `json:"tagStoreRemoved"`
	DryRun            bool             `json:"dry_run"`
	DurationMS        int64            `json:"duration_ms"`
	Reindexed         int              `json:"reindexed"`
	Moved             int              `json:"moved"`
	Check             bool             `json:"check"`
	ResumedFrom       *string          `json:"resumedFrom"`
	Registry          RegistrySummary  `json:"registry"`
	ErrorsTruncated   bool             `json:"errorsTruncated"`
	WarningsTruncated bool             `json:"warningsTruncated"`
	ExitCode          int              `json:"exitCode"`

	// Failed counts every failed document, also those cut from Errors.
	Failed int `json:"-"`
	// WarningCounts counts the warnings by code, also those cut from Warnings.
	WarningCounts map[string]int `json:"-"`
	// Interrupted is set when the run stopped early (signal, --limit, --fail-fast).
	Interrupted bool `json:"-"`
	// RunID identifies this run (and its checkpoint).
	RunID string `json:"-"`
}

// maxListed caps the errors and warnings lists of the summary; the report has them all.
const maxListed = 1000

// Exit codes of the job.
const (
	ExitOK          = 0
	ExitItemsFailed = 1
	ExitWorkToDo    = 4
)

// Job is one gtc migrate run against a store.
type Job struct {
	Store gtc.Store
	Env   Env
	Opts  Options
	Hooks Hooks
	// RunID names the run in its checkpoint (the command passes a fresh random id).
	RunID string
	// Clock measures the duration (default the system clock).
	Clock gtc.Clock
}

// Run executes the passes of a migration in order: items (with the
// registry), duplicates, tag-store clean-up, marker. A document error is recorded and the
// run goes on; an error returned is fatal (store unreachable, checkpoint unwritable) and the
// summary still says how far the run got. When ctx is cancelled the batch in flight
// finishes, the checkpoint is written and the summary has Interrupted set.
func (j *Job) Run(ctx context.Context) (*Summary, error) {
	o := j.Opts
	if o.Check {
		o.DryRun = true
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 100
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 4
	}
	clock := j.Clock
	if clock == nil {
		clock = gtc.SystemClock{}
	}
	start := clock.Now()
	r := &runner{job: j, o: o, m: j.Store.Maintenance(), sum: &Summary{
		DryRun: o.DryRun, Check: o.Check, Errors: []string{}, Warnings: []SummaryWarning{},
		TagStoreRemoved: []string{}, RunID: j.RunID, WarningCounts: map[string]int{},
	}, buckets: map[string]bool{}}
	if j.Store.Backend() == "cosmos" {
		zero, zero2 := 0, 0
		r.sum.Registry.BucketsRegistered, r.sum.Registry.DuplicateIDs = &zero, &zero2
	}
	err := r.run(ctx)
	r.sum.DurationMS = clock.Now().Sub(start).Milliseconds()
	r.sum.ExitCode = r.exitCode()
	return r.sum, err
}

type runner struct {
	job     *Job
	o       Options
	m       gtc.Maintenance
	sum     *Summary
	cp      *Checkpoint
	buckets map[string]bool // dataset/bucket pairs registered in this run
	written int             // documents written in this run (for --limit)
}

func (r *runner) exitCode() int {
	switch {
	case r.sum.Failed > 0:
		return ExitItemsFailed
	case r.o.Check && (r.sum.Migrated > 0 || len(r.sum.TagStoreRemoved) > 0):
		return ExitWorkToDo
	}
	return ExitOK
}

func (r *runner) run(ctx context.Context) error {
	r.cp = r.loadCheckpoint()
	if r.cp.Phase == PhaseItems {
		if err := r.itemsPass(ctx); err != nil || r.sum.Interrupted {
			return err
		}
		r.cp.Phase = PhaseDuplicates
		if err := r.saveCheckpoint(); err != nil {
			return err
		}
	}
	if r.cp.Phase == PhaseDuplicates {
		if err := r.duplicatesPass(ctx); err != nil {
			return err
		}
		r.cp.Phase = PhaseTags
		if err := r.saveCheckpoint(); err != nil {
			return err
		}
	}
	if r.cp.Phase == PhaseTags {
		if err := r.tagStorePass(ctx); err != nil {
			return err
		}
		r.cp.Phase = PhaseMarker
		if err := r.saveCheckpoint(); err != nil {
			return err
		}
	}
	if r.cp.Phase == PhaseMarker {
		if len(r.o.Datasets) == 0 && r.sum.Failed == 0 && !r.o.DryRun {
			if err := r.m.WriteMigrationMarker(context.WithoutCancel(ctx), r.o.By); err != nil {
				return fmt.Errorf("write the migration marker: %w", err)
			}
			r.sum.Registry.MarkerWritten = true
		}
		r.cp.Phase = PhaseDone
		if err := r.saveCheckpoint(); err != nil {
			return err
		}
	}
	return nil
}

// loadCheckpoint resumes a matching unfinished checkpoint or starts a new one.
func (r *runner) loadCheckpoint() *Checkpoint {
	fresh := &Checkpoint{Version: CheckpointVersion, RunID: r.job.RunID, Phase: PhaseItems}
	cf := r.o.Checkpoint
	if r.o.DryRun || cf == nil {
		return fresh
	}
	fresh.Scope, fresh.ScopeHash = cf.Scope, cf.Scope.Hash()
	if r.o.Restart {
		return fresh
	}
	prev, ok := cf.Load()
	if !ok || prev.ScopeHash != fresh.ScopeHash || prev.Phase == PhaseDone {
		return fresh
	}
	prev.Counters.restore(r.sum)
	id := prev.RunID
	r.sum.ResumedFrom = &id
	prev.Scope = cf.Scope
	return prev
}

func (r *runner) saveCheckpoint() error {
	if r.o.DryRun || r.o.Checkpoint == nil {
		return nil
	}
	r.cp.Counters = countersOf(r.sum)
	if err := r.o.Checkpoint.Save(r.cp); err != nil {
		return fmt.Errorf("write the checkpoint: %w", err)
	}
	return nil
}

// itemsPass converts every document, batch by batch, writing the checkpoint after each.
func (r *runner) itemsPass(ctx context.Context) error {
	total, err := r.m.CountRaw(ctx, r.o.Datasets)
	if err != nil {
		total = -1
		if errors.Is(err, gtc.ErrUnavailable) {
			return fmt.Errorf("count the documents: %w", err)
		}
	}
	cursor := r.cp.Cursor
	for index := 0; ; index++ {
		if ctx.Err() != nil {
			r.sum.Interrupted = true
			return r.saveCheckpoint()
		}
		next, done, err := r.itemsBatch(ctx, index, cursor, total)
		if done || err != nil {
			return err
		}
		cursor = next
		if cursor == "" {
			return nil
		}
	}
}

// itemsBatch reads the batch at cursor, converts and writes it, records it and writes the
// checkpoint. done is set when the pass ends here (interrupted, failed or cut); next is
// the cursor of the following batch ("" after the last). The batch is one "migrate.batch"
// span and its store calls nest under it.
func (r *runner) itemsBatch(ctx context.Context, index int, cursor string, total int) (next string, done bool, err error) {
	ctx, span := otel.Tracer(tracerName).Start(ctx, "migrate.batch")
	var items int
	migrated, skipped, failed := r.sum.Migrated, r.sum.Skipped, r.sum.Failed
	defer func() {
		if span.IsRecording() {
			span.SetAttributes(attribute.Int("gtc.batch.index", index), attribute.Int("gtc.batch.items", items),
				attribute.Int("gtc.batch.migrated", r.sum.Migrated-migrated),
				attribute.Int("gtc.batch.skipped", r.sum.Skipped-skipped),
				attribute.Int("gtc.batch.errors", r.sum.Failed-failed))
			if r.sum.Interrupted {
				span.SetAttributes(attribute.Bool("gtc.batch.interrupted", true))
			}
			if err != nil {
				span.RecordError(err)
				span.SetStatus(codes.Error, err.Error())
			}
		}
		span.End()
	}()
	page, err := r.m.ScanRaw(ctx, r.o.Datasets, cursor, r.o.BatchSize)
	if err != nil {
		if ctx.Err() != nil {
			r.sum.Interrupted = true
			return "", true, r.saveCheckpoint()
		}
		_ = r.saveCheckpoint()
		return "", true, fmt.Errorf("read the documents: %w", err)
	}
	items = len(page.Docs)
	outcomes, stopAfter := r.processBatch(context.WithoutCancel(ctx), page.Docs)
	fatalErr := r.record(outcomes)
	if r.job.Hooks.BatchDone != nil {
		r.job.Hooks.BatchDone()
	}
	if r.job.Hooks.Progress != nil {
		r.job.Hooks.Progress(Progress{
			Processed: r.sum.Total, Total: total, Migrated: r.sum.Migrated,
			Skipped: r.sum.Skipped, Errors: r.sum.Failed,
		})
	}
	if fatalErr != nil {
		_ = r.saveCheckpoint()
		return "", true, fatalErr
	}
	if stopAfter || (r.o.FailFast && r.sum.Failed > 0) {
		// A cut batch is resumed from its start: its written documents are skipped then.
		r.sum.Interrupted = true
		return "", true, r.saveCheckpoint()
	}
	r.cp.Cursor = page.Next
	if err := r.saveCheckpoint(); err != nil {
		return "", true, err
	}
	return page.Next, false, nil
}

// tracerName names the spans of this package; the tracer is looked up per span so a
// provider installed later is the one used.
const tracerName = "github.com/gtc-dev/gtc/migrate"

// limitBatch cuts a batch's converted outcomes so that at most Limit documents are written
// in this run; documents that need no write do not count.
func (r *runner) limitBatch(out []outcome) ([]outcome, bool) {
	left := r.o.Limit - r.written
	for i, o := range out {
		if left <= 0 {
			return out[:i], true
		}
		if o.report.Action != ActionError && o.report.Action != ActionUnchanged {
			left--
		}
	}
	return out, left <= 0
}

// outcome is what happened to one document.
type outcome struct {
	report DocReport
	newKey *gtc.Key // key written (for the registry)
	key    gtc.Key  // final key of a good document
	kind   Kind
	moved  bool
	wrote  bool
	fatal  error // the store became unreachable
	body   map[string]any
}

// processBatch converts the documents, cuts the batch at --limit, writes what needs writing
// and returns the outcomes in scan order, and whether the limit stopped the run.
func (r *runner) processBatch(ctx context.Context, docs []gtc.RawDoc) ([]outcome, bool) {
	out := make([]outcome, len(docs))
	if r.o.Limit == 0 || r.o.DryRun {
		// Each worker converts and writes its document, so conversions overlap the writes.
		r.parallel(len(docs), func(i int) { out[i] = r.finish(ctx, docs[i], r.convertOne(docs[i])) })
		return out, false
	}
	r.parallel(len(docs), func(i int) { out[i] = r.convertOne(docs[i]) })
	out, stop := r.limitBatch(out)
	r.parallel(len(out), func(i int) { out[i] = r.finish(ctx, docs[i], out[i]) })
	return out, stop
}

// parallel calls fn for 0..n-1 with Concurrency workers, or all at once for a store whose
// single writer commits queued writes together.
func (r *runner) parallel(n int, fn func(i int)) {
	workers := r.o.Concurrency
	if gc, ok := r.job.Store.(gtc.GroupCommitter); ok && gc.GroupsCommits() {
		workers = n
	}
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, max(n, 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				fn(i)
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
}

// maxAttempts bounds the conversions of one document that loses races.
const maxAttempts = 3

// finish writes the document whose conversion is o, when it needs a write. A lost race
// reads the document again and converts it again (maxAttempts in all).
func (r *runner) finish(ctx context.Context, doc gtc.RawDoc, o outcome) outcome {
	for attempt := 1; ; attempt++ {
		if attempt > 1 {
			o = r.convertOne(doc)
		}
		if o.report.Action == ActionError || o.report.Action == ActionUnchanged || r.o.DryRun {
			return r.register(ctx, o)
		}
		written, err := r.write(ctx, doc, o)
		if err == nil {
			o.wrote = true
			o.key = keyOf(written)
			return r.register(ctx, o)
		}
		var ce *gtc.ConflictError
		var mi *gtc.MoveIncompleteError
		switch {
		case errors.As(err, &mi):
			return r.fail(o, CodeMoveIncomplete, mi.Error())
		case errors.As(err, &ce):
			target := keyOf(doc)
			if o.newKey != nil {
				target = *o.newKey
			}
			return r.fail(o, CodeDuplicateID, fmt.Sprintf("(%s, %s) is held by two documents: %s and %s; nothing was changed",
				target.DatasetName, target.ID, keyOf(doc), ce.Existing))
		case errors.Is(err, gtc.ErrPreconditionFailed):
			if attempt == maxAttempts {
				return r.fail(o, CodeConcurrentModification, fmt.Sprintf("the document changed during each of %d attempts; run gtc migrate again", maxAttempts))
			}
			fresh, gerr := r.m.GetRaw(ctx, doc.PartitionKey, doc.ID)
			if errors.Is(gerr, gtc.ErrNotFound) {
				return r.fail(o, CodeConcurrentModification, "the document was deleted or moved while it was migrated")
			}
			if gerr != nil {
				return r.writeFailed(o, gerr)
			}
			doc = fresh
		case errors.Is(err, gtc.ErrNotFound):
			return r.fail(o, CodeConcurrentModification, "the document was deleted or moved while it was migrated")
		case errors.Is(err, gtc.ErrUnaddressable):
			return r.fail(o, CodeUnaddressableDocument, err.Error())
		default:
			return r.writeFailed(o, err)
		}
	}
}

// writeFailed records a write error; an unreachable store or a full disk also stops the
// run (every later write would fail the same way).
func (r *runner) writeFailed(o outcome, err error) outcome {
	o = r.fail(o, CodeWriteFailed, err.Error())
	if errors.Is(err, gtc.ErrUnavailable) || errors.Is(err, gtc.ErrStorageFull) {
		o.fatal = fmt.Errorf("write %s: %w", o.report.Key, err)
	}
	return o
}

func (r *runner) fail(o outcome, code, msg string) outcome {
	o.report.Action = ActionError
	o.report.Error = &DocError{Code: code, Message: msg}
	return o
}

// convertOne converts doc and classifies the write it needs.
func (r *runner) convertOne(doc gtc.RawDoc) outcome {
	o := outcome{report: newReport(doc), key: keyOf(doc)}
	res, err := Convert(doc.Body, r.job.Env)
	if err != nil {
		o.report.setError(err)
		return o
	}
	if res.Kind == KindNone && doc.IndexVersion < gtc.IndexVersion {
		res.Kind = KindReindex
		res.Summary = fmt.Sprintf("reindex (index fields v%d → v%d)", doc.IndexVersion, gtc.IndexVersion)
	}
	if res.NewKey != nil && res.Kind == KindNone {
		res.Kind = KindReindex
	}
	o.report.apply(res)
	if res.NewKey != nil {
		if r.o.NoMove {
			return r.fail(o, CodeBucketNeedsMove, fmt.Sprintf("bucket %q must become %s, which moves the document; rerun without --no-move",
				doc.BucketString(), res.NewKey.Bucket))
		}
		k := *res.NewKey
		o.newKey, o.moved = &k, true
	}
	o.kind, o.body = res.Kind, res.Body
	return o
}

func (r *runner) write(ctx context.Context, prev gtc.RawDoc, o outcome) (gtc.RawDoc, error) {
	if o.newKey != nil {
		return r.m.MoveRaw(ctx, prev, o.body)
	}
	return r.m.ReplaceRaw(ctx, prev, o.body)
}

// register makes the bucket of a good document known to the registry (Cosmos) and counts
// the pairs registered.
func (r *runner) register(ctx context.Context, o outcome) outcome {
	if o.report.Action == ActionError || r.o.DryRun || o.key.Bucket == "" || !gtc.IsCanonicalUUID(o.key.Bucket) {
		return o
	}
	if err := r.m.EnsureRegistered(ctx, o.key); err != nil {
		return r.writeFailed(o, fmt.Errorf("register bucket: %w", err))
	}
	return o
}

func keyOf(d gtc.RawDoc) gtc.Key {
	return gtc.Key{DatasetName: d.DatasetName(), Bucket: d.BucketString(), ID: d.ID}
}

// record adds the outcomes of a batch to the summary and hands them to the hooks, in scan
// order. It returns the first fatal error.
func (r *runner) record(outs []outcome) error {
	var fatalErr error
	for _, o := range outs {
		s := r.sum
		s.Total++
		switch o.report.Action {
		case ActionError:
			s.Failed++
			if len(s.Errors) < maxListed {
				s.Errors = append(s.Errors, fmt.Sprintf("%s/%s: %s: %s", o.report.DatasetName, o.report.ID, o.report.Error.Code, o.report.Error.Message))
			} else {
				s.ErrorsTruncated = true
			}
			if fatalErr == nil && o.fatal != nil {
				fatalErr = o.fatal
			}
		case ActionUnchanged:
			s.Skipped++
		default:
			s.Migrated++
			if o.moved {
				s.Moved++
			}
			if o.kind == KindReindex {
				s.Reindexed++
			}
			if o.wrote {
				r.written++
			}
		}
		if o.report.Action != ActionError {
			for _, w := range o.report.Warnings {
				s.WarningCounts[w.Code]++
				if len(s.Warnings) < maxListed {
					s.Warnings = append(s.Warnings, SummaryWarning{DatasetName: o.report.DatasetName, ID: o.report.ID, Code: w.Code, Message: w.Message})
				} else {
					s.WarningsTruncated = true
				}
			}
			if !r.o.DryRun && gtc.IsCanonicalUUID(o.key.Bucket) {
				pair := o.key.DatasetName + "\x00" + o.key.Bucket
				if !r.buckets[pair] {
					r.buckets[pair] = true
					if s.Registry.BucketsRegistered != nil {
						*s.Registry.BucketsRegistered++
					}
				}
			}
		}
		if r.job.Hooks.Document != nil {
			r.job.Hooks.Document(o.report)
		}
	}
	return fatalErr
}

// duplicatesPass reports every (datasetName, id) held by more than one document.
func (r *runner) duplicatesPass(ctx context.Context) error {
	for keys, err := range r.m.DuplicateIDs(ctx, r.o.Datasets) {
		if err != nil {
			return fmt.Errorf("look for duplicate ids: %w", err)
		}
		if len(keys) == 0 {
			continue
		}
		names := make([]string, len(keys))
		for i, k := range keys {
			names[i] = k.String()
		}
		rep := DocReport{
			Key: keys[0].String(), Action: ActionError, DatasetName: keys[0].DatasetName, ID: keys[0].ID, Bucket: keys[0].Bucket,
			Error: &DocError{Code: CodeDuplicateID, Message: fmt.Sprintf("held by %d documents: %s; keep one (delete or re-import the others under another id) and run gtc migrate again",
				len(keys), strings.Join(names, ", "))},
		}
		r.sum.Failed++
		if len(r.sum.Errors) < maxListed {
			r.sum.Errors = append(r.sum.Errors, fmt.Sprintf("%s/%s: %s: %s", rep.DatasetName, rep.ID, rep.Error.Code, rep.Error.Message))
		} else {
			r.sum.ErrorsTruncated = true
		}
		if r.sum.Registry.DuplicateIDs != nil {
			*r.sum.Registry.DuplicateIDs++
		}
		if r.job.Hooks.Document != nil {
			r.job.Hooks.Document(rep)
		}
	}
	return nil
}

// tagStorePass removes computed and malformed entries from the tag store and stores the
// normalized spelling of the others. The tag store is global, so
// a run restricted to datasets skips it.
func (r *runner) tagStorePass(ctx context.Context) error {
	if len(r.o.Datasets) > 0 {
		return nil
	}
	ts := r.job.Store.TagStore()
	stored, err := ts.List(ctx)
	if err != nil {
		return fmt.Errorf("read the tag store: %w", err)
	}
	normalize := func(t string) (string, error) {
		out, err := r.job.Env.Tagger.NormalizeManual([]string{t})
		if err != nil {
			return "", err
		}
		if len(out) != 1 {
			return "", fmt.Errorf("tag %q normalizes to nothing", t)
		}
		return out[0], nil
	}
	keep, removed := CleanTagStore(stored, normalize, r.job.Env.IsComputed)
	r.sum.TagStoreRemoved = append([]string{}, removed...)
	sort.Strings(r.sum.TagStoreRemoved)
	var drop, add []string
	for _, t := range stored {
		if !slices.Contains(keep, t) {
			drop = append(drop, t)
		}
	}
	for _, t := range keep {
		if !slices.Contains(stored, t) {
			add = append(add, t)
		}
	}
	if r.o.DryRun || (len(drop) == 0 && len(add) == 0) {
		return nil
	}
	wctx := context.WithoutCancel(ctx)
	if len(add) > 0 {
		if _, err := ts.Add(wctx, add); err != nil {
			return fmt.Errorf("clean the tag store: %w", err)
		}
	}
	if len(drop) > 0 {
		if _, err := ts.Remove(wctx, drop); err != nil {
			return fmt.Errorf("clean the tag store: %w", err)
		}
	}
	return nil
}

// DiffLine is the dry-run line of a report, followed
// by one indented line per warning; "" for unchanged documents unless verbose.
func DiffLine(d DocReport, verbose bool) string {
	key := d.DatasetName + "/" + gtc.ShortBucket(d.Bucket) + "/" + d.ID
	var b strings.Builder
	switch d.Action {
	case ActionUnchanged:
		if !verbose {
			return ""
		}
		fmt.Fprintf(&b, "= %s  unchanged\n", key)
	case ActionError:
		fmt.Fprintf(&b, "! %s  %s: %s\n", key, d.Error.Code, d.Error.Message)
	case ActionMigrate:
		fmt.Fprintf(&b, "~ %s  %s\n", key, d.Summary)
	case ActionMove:
		fmt.Fprintf(&b, "> %s  bucket %s → %s (move)\n", key, gtc.ShortBucket(d.Bucket), gtc.ShortBucket(d.NewBucket))
	case ActionReindex:
		s := d.Summary
		if s == "" {
			s = "reindex (storage form only)"
		}
		fmt.Fprintf(&b, "* %s  %s\n", key, s)
	}
	for _, w := range d.Warnings {
		fmt.Fprintf(&b, "    warning %s: %s\n", w.Code, w.Message)
	}
	return b.String()
}
