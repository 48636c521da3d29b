package export

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gtc-dev/gtc"
)

// Config is what an Exporter needs; zero values take the defaults noted below.
type Config struct {
	Items            gtc.ItemStore     // nil: the exporter only reads stored snapshots
	Artifacts        gtc.ArtifactStore // where artifact exports go and snapshots are read from
	Clock            gtc.Clock
	Processors       *ProcessorRegistry
	Formatters       *FormatterRegistry
	DefaultChain     []string      // GTC_EXPORT_PROCESSOR_ORDER, already parsed
	PageSize         int           // items per store page (default 200)
	WriteConcurrency int           // parallel item-file writes (default 8)
	MaxConcurrent    int           // exports at once (default 2)
	BusyWait         time.Duration // how long a request waits for a slot (default 5 s)
	TempDir          string        // attachment spools and manifest runs ($GTC_DATA_DIR/tmp)
	Log              *slog.Logger
	// Observer is told of every finished Stream, Attachment and Artifact (nil: nobody).
	Observer Observer
	// MinFreeBytes refuses an artifact export before it starts when export storage that
	// reports its free space (FreeSpacer: local disk) has less (GTC_EXPORT_MIN_FREE_BYTES;
	// 0: no check).
	MinFreeBytes uint64
	// TagGroups lists the tag groups a release may be stratified by (nil: none).
	TagGroups func(context.Context) ([]string, error)
	// RevisionDiff gives the field-level changes of an item between two revisions, for
	// the changed items of a release comparison (nil: comparisons give none).
	RevisionDiff RevisionDiffFunc
}

// Exporter runs exports: the pipeline from the item store through the processors and a
// formatter to a writer, a spool or the artifact store, and the reading of stored snapshots.
type Exporter struct {
	items        gtc.ItemStore
	artifacts    gtc.ArtifactStore
	clock        gtc.Clock
	processors   *ProcessorRegistry
	formatters   *FormatterRegistry
	defaultChain []string
	pageSize     int
	writers      int
	busyWait     time.Duration
	tmp          string
	minFree      uint64
	log          *slog.Logger
	slots        chan struct{}
	snapshots    *snapshotCache
	observer     Observer
	groups       func(context.Context) ([]string, error)
	revisionDiff RevisionDiffFunc
}

// New checks the configuration and returns the exporter. The default chain must name
// registered processors, each once.
func New(c Config) (*Exporter, error) {
	if c.Processors == nil || c.Formatters == nil {
		return nil, errors.New("export: processors and formatters are required")
	}
	if err := CheckProcessorOrder(c.Processors, c.DefaultChain); err != nil {
		return nil, err
	}
	if c.Clock == nil {
		c.Clock = gtc.SystemClock{}
	}
	if c.PageSize <= 0 {
		c.PageSize = 200
	}
	if c.WriteConcurrency <= 0 {
		c.WriteConcurrency = 8
	}
	if c.MaxConcurrent <= 0 {
		c.MaxConcurrent = 2
	}
	if c.BusyWait <= 0 {
		c.BusyWait = 5 * time.Second
	}
	if c.TempDir == "" {
		c.TempDir = os.TempDir()
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	return &Exporter{
		items: c.Items, artifacts: c.Artifacts, clock: c.Clock,
		processors: c.Processors, formatters: c.Formatters, defaultChain: c.DefaultChain,
		pageSize: c.PageSize, writers: c.WriteConcurrency, busyWait: c.BusyWait,
		tmp: c.TempDir, minFree: c.MinFreeBytes, log: c.Log,
		slots:        make(chan struct{}, c.MaxConcurrent),
		snapshots:    newSnapshotCache(4096),
		observer:     c.Observer,
		groups:       c.TagGroups,
		revisionDiff: c.RevisionDiff,
	}, nil
}

// Processors returns the processor registry.
func (x *Exporter) Processors() *ProcessorRegistry { return x.processors }

// Formatters returns the formatter registry.
func (x *Exporter) Formatters() *FormatterRegistry { return x.formatters }

// tempPrefix starts the name of every temporary file the exporter leaves in TempDir.
const tempPrefix = "gtc-export-"

// CleanTemp removes the temporary files a previous process left behind (a crash during an
// attachment or a large artifact export).
func CleanTemp(dir string) (int, error) {
	matches, err := filepath.Glob(filepath.Join(dir, tempPrefix+"*"))
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, m := range matches {
		if err := os.RemoveAll(m); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// ErrBusy is the answer when every export slot stays taken for the whole wait.
var ErrBusy = &gtc.Error{Code: gtc.CodeExportBusy, Message: "Too many exports are running; retry later"}

// Acquire takes one of the MaxConcurrent export slots, waiting up to BusyWait; the caller
// calls the returned release when its export ends.
func (x *Exporter) Acquire(ctx context.Context) (release func(), err error) {
	t := time.NewTimer(x.busyWait)
	defer t.Stop()
	select {
	case x.slots <- struct{}{}:
		return func() { <-x.slots }, nil
	case <-t.C:
		return nil, ErrBusy
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Result describes a finished (or failed) export.
type Result struct {
	SnapshotAt string    // YYYYMMDDTHHMMSSZ of the start
	StartedAt  time.Time // the clock, read once
	FileName   string    // the download name
	MediaType  string
	Count      int   // records written
	Bytes      int64 // body bytes written
	SnapshotID string
	Started    bool // a stream has sent its headers
}

// Progress, when set on a context with WithProgress, is called after every page with the
// number of items read so far.
type Progress func(items int)

type progressKey struct{}

// WithProgress returns a context whose exports report their progress to p.
func WithProgress(ctx context.Context, p Progress) context.Context {
	return context.WithValue(ctx, progressKey{}, p)
}

func (x *Exporter) begin(plan *Plan) Result {
	start := x.clock.Now().UTC()
	at := start.Format("20060102T150405Z")
	return Result{SnapshotAt: at, StartedAt: start, FileName: DownloadName(plan.Formatter, at), MediaType: plan.Formatter.MediaType()}
}

func (x *Exporter) header(plan *Plan, res Result) Header {
	return Header{SchemaVersion: SchemaVersion, SnapshotAt: res.SnapshotAt, Filters: plan.FiltersEcho,
		ExtraColumns: plan.extraColumns(), ExtraTypedColumns: plan.extraTypedColumns()}
}

// sink receives the finished records of a run. raw, when set, takes records on the fast
// path (canonical.go), which the run uses when every processor of the chain allows it.
//
// start and item, when set, are told of every item read, in order: start before its records
// reach the sink, item after. The item's status and tags are given only with counts.
type sink struct {
	rec    func(Record) error
	raw    func(*rawRecord) error
	start  func(itemRef) error
	item   func(itemRef) error
	counts bool
}

// itemRef is what a sink learns of the item whose records it is given; status and tags
// only when the sink counts them.
type itemRef struct {
	ItemEntry
	bucket string
	status gtc.Status
	tags   []string
}

func (s *sink) wantsItems() bool { return s.start != nil || s.item != nil }

// encoderSink feeds an encoder, on the fast path when the encoder has one.
func encoderSink(enc Encoder, note func(ds string)) sink {
	s := sink{rec: func(r Record) error {
		if note != nil {
			note(r.DatasetName())
		}
		return enc.Encode(r)
	}}
	if re, ok := enc.(rawEncoder); ok {
		s.raw = func(r *rawRecord) error {
			if note != nil {
				note(r.str("datasetName"))
			}
			return re.encodeRaw(r)
		}
	}
	return s
}

// run reads the plan's items page by page in (datasetName, id) order, builds each record,
// pushes it through the chain and the projection into the sink, and calls afterPage when a
// page is done. It returns the number of items read.
//
// Three goroutines form a pipeline, each a page ahead of the next: one reads and decodes
// pages from the store, one builds the records of a page (on the fast path, where every
// record is independent of the others), and the caller's goroutine runs the sink. Reading,
// building and writing each cost about a third of an export, so on two cores they overlap.
// At most four pages are held at a time; records reach the sink in order.
func (x *Exporter) run(ctx context.Context, plan *Plan, s sink, afterPage func(page int) error) (int, error) {
	if x.items == nil {
		return 0, errors.New("export: this exporter has no item store; it only reads stored snapshots")
	}
	progress, _ := ctx.Value(progressKey{}).(Progress)
	fast := s.raw != nil && fastChain(plan.Processors)
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()

	type page struct {
		items []*gtc.Item
		refs  []itemRef    // the items read, when the sink asks for them
		raws  []*rawRecord // fast path: the built records, in order
		last  bool
		err   error // after items (and raws) up to the failure
	}
	spec := gtc.ScanSpec{Statuses: plan.Statuses, DatasetNames: plan.DatasetNames, Order: gtc.ByDatasetID}
	scanned := make(chan page, 1)
	// The read stage is the scan goroutine; the store's Scan spans nest under its span.
	rctx, rspan := startSpan(ctx, spanRead)
	wg.Go(func() {
		defer close(scanned)
		n := 0
		var failed error
		defer func() { endSpan(rspan, n, failed) }()
		cursor := ""
		for {
			p, err := x.items.Scan(rctx, spec, cursor, x.pageSize)
			n += len(p.Items)
			if err != nil && ctx.Err() == nil {
				failed = err
			}
			if plan.Select != nil {
				kept := p.Items[:0]
				for _, it := range p.Items {
					if plan.Select(it) {
						kept = append(kept, it)
					}
				}
				p.Items = kept
			}
			var refs []itemRef
			if s.wantsItems() {
				refs = make([]itemRef, len(p.Items))
				for i, it := range p.Items {
					refs[i] = itemRef{ItemEntry: ItemEntry{DatasetName: it.DatasetName, ID: it.ID, Revision: it.Revision}, bucket: it.Bucket}
					if s.counts {
						refs[i].status, refs[i].tags = it.Status, it.Tags()
					}
				}
			}
			select {
			case scanned <- page{items: p.Items, refs: refs, last: p.Next == "", err: err}:
			case <-ctx.Done():
				return
			}
			if err != nil || p.Next == "" {
				return
			}
			cursor = p.Next
		}
	})
	built := scanned
	if fast {
		out := make(chan page, 1)
		built = out
		_, bspan := startSpan(ctx, spanBuild) // the fast path's build goroutine
		wg.Go(func() {
			defer close(out)
			n := 0
			var failed error
			defer func() { endSpan(bspan, n, failed) }()
			var c canon
			for p := range scanned {
				if p.err == nil {
					p.raws = make([]*rawRecord, 0, len(p.items))
					for _, it := range p.items {
						rec, err := x.buildFast(plan, it, &c)
						if err != nil {
							p.err, failed = err, err
							break
						}
						p.raws = append(p.raws, rec)
					}
					n += len(p.raws)
					p.items = nil
				}
				select {
				case out <- p:
				case <-ctx.Done():
					return
				}
				if p.err != nil {
					return
				}
			}
		})
	}

	// The write stage is this goroutine: the general path's build and chain, the sink.
	wctx, wspan := startSpan(ctx, spanWrite)
	read := 0
	var failed error // the write stage's own failure, not one passed down from reading
	defer func() { endSpan(wspan, read, failed) }()
	fail := func(err error) (int, error) {
		failed = err
		return read, err
	}
	var scratch bytes.Buffer
	chain := newChainRunner(wctx, plan.Processors, func(r Record) error {
		if err := project(r); err != nil {
			return err
		}
		return s.rec(r)
	})
	for n := 0; ; n++ {
		p, ok := <-built
		if !ok {
			return read, ctx.Err()
		}
		around := func(i int, write func() error) error {
			if p.refs != nil && s.start != nil {
				if err := s.start(p.refs[i]); err != nil {
					return err
				}
			}
			if err := write(); err != nil {
				return err
			}
			if p.refs != nil && s.item != nil {
				return s.item(p.refs[i])
			}
			return nil
		}
		for i, it := range p.items {
			if err := ctx.Err(); err != nil {
				return read, err
			}
			rec, err := BuildRecord(it, &scratch)
			if err != nil {
				return fail(err)
			}
			p.items[i] = nil // the page need not keep what has been exported
			if err := around(i, func() error { return chain.push(rec) }); err != nil {
				return fail(err)
			}
			read++
		}
		for i, rec := range p.raws {
			if err := ctx.Err(); err != nil {
				return read, err
			}
			p.raws[i] = nil
			if err := around(i, func() error { return s.raw(rec) }); err != nil {
				return fail(err)
			}
			read++
		}
		if p.err != nil {
			return read, p.err
		}
		if progress != nil {
			progress(read)
		}
		if p.last {
			if err := chain.finish(); err != nil {
				return fail(err)
			}
		}
		if afterPage != nil {
			if err := afterPage(n); err != nil {
				return fail(err)
			}
		}
		if p.last {
			return read, nil
		}
	}
}

// buildFast makes the record of one item on the fast path: built from the item, through
// the chain's field processors, projected.
func (x *Exporter) buildFast(plan *Plan, it *gtc.Item, c *canon) (*rawRecord, error) {
	rec, err := buildDirect(it, c)
	if err != nil {
		return nil, err
	}
	for _, p := range plan.Processors {
		if err := p.(fieldProcessor).apply(rec, it.ID); err != nil {
			return nil, err
		}
	}
	return rec, rec.projectRaw()
}

// countingWriter counts what passes through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

type flusher interface{ Flush() }

// Stream writes the export body to w as it is produced. start is called once the first
// page has been read and processed, before the first byte reaches w, so that errors up to
// then can still be ordinary error responses; Result.Started tells the caller whether it
// was called. w is flushed after every page (and with http.Flusher semantics when w has a
// Flush method).
func (x *Exporter) Stream(ctx context.Context, plan *Plan, w io.Writer, start func(Result) error) (res Result, err error) {
	res = x.begin(plan)
	ctx, op := x.startOperation(ctx, spanStream, plan)
	defer func() { op.done(res, err) }()
	cw := &countingWriter{w: w}
	g := &gate{w: cw}
	bw := bufio.NewWriterSize(g, 64<<10)
	enc, err := plan.Formatter.NewEncoder(bw, x.header(plan, res))
	if err != nil {
		return res, err
	}
	flushDown := func() error {
		if err := bw.Flush(); err != nil {
			return err
		}
		if f, ok := w.(flusher); ok && g.open {
			f.Flush()
		}
		return nil
	}
	_, err = x.run(ctx, plan, encoderSink(enc, nil), func(page int) error {
		if page == 0 {
			if start != nil {
				if err := start(res); err != nil {
					return err
				}
			}
			res.Started = true
			if err := g.openGate(); err != nil {
				return err
			}
		}
		return flushDown()
	})
	res.Count = enc.Count()
	if err == nil {
		err = enc.Close()
	}
	if err == nil {
		err = flushDown()
	}
	res.Bytes = cw.n
	return res, err
}

// Attachment produces the whole export body into a spool before anything is sent, so any
// failure is an ordinary error and a client never receives part of a file. The caller
// sends the spool and closes it.
func (x *Exporter) Attachment(ctx context.Context, plan *Plan) (sp *Spool, res Result, err error) {
	res = x.begin(plan)
	ctx, op := x.startOperation(ctx, spanAttachment, plan)
	defer func() { op.done(res, err) }()
	sp = newSpool(x.tmp)
	bw := bufio.NewWriterSize(sp, 64<<10)
	enc, err := plan.Formatter.NewEncoder(bw, x.header(plan, res))
	if err == nil {
		_, err = x.run(ctx, plan, encoderSink(enc, nil), nil)
		res.Count = enc.Count()
	}
	if err == nil {
		err = enc.Close()
	}
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		_ = sp.Close()
		return nil, res, err
	}
	res.Bytes = sp.Size()
	return sp, res, nil
}

// logDone writes the one summary line of an export; outcome is outcomeOf(err).
func (x *Exporter) logDone(plan *Plan, res Result, err error, outcome string, d time.Duration) {
	level := slog.LevelInfo
	if err != nil {
		level = slog.LevelWarn
	}
	attrs := []any{
		"request_id", plan.RequestID, "actor", plan.Actor, "mode", plan.Mode,
		"format", plan.Formatter.Name(), "processors", strings.Join(plan.ProcessorNames(), ","),
		"filters", filtersText(plan.FiltersEcho), "count", res.Count, "bytes", res.Bytes,
		"duration_ms", d.Milliseconds(), "outcome", outcome,
	}
	if res.SnapshotID != "" {
		attrs = append(attrs, "snapshot_id", res.SnapshotID)
	}
	if err != nil {
		attrs = append(attrs, "err", err)
	}
	x.log.Log(context.Background(), level, "export", attrs...)
}

// AsRecordError turns a processor's RecordError into the 400 the API answers before a
// response has started; other errors are returned unchanged.
func AsRecordError(err error) error {
	var re *RecordError
	if errors.As(err, &re) {
		return &gtc.Error{Code: gtc.CodeExportRecordInvalid, Message: re.Error()}
	}
	return err
}

// filtersText is the filters echo as compact JSON, for the log line.
func filtersText(f map[string]any) string {
	b, err := AppendJSON(nil, f)
	if err != nil {
		return fmt.Sprint(f)
	}
	return string(b)
}
