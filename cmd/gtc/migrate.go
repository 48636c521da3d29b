package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/importer"
	"github.com/gtc-dev/gtc/migrate"
	"github.com/gtc-dev/gtc/tagging"
)

const migrateUsage = `usage: gtc migrate [--dataset NAME]... [--dry-run | --check] [flags]
       gtc migrate convert --in FILE|- --out FILE|- [--tag-map FILE] [--report FILE]

Brings every stored document to the current storage format: legacy v1 items are converted
to v2, documents in an older storage form are rewritten, the tag store is cleaned, and the
migration marker is written when a run over every dataset ends without errors. The run can
be interrupted (Ctrl-C) and resumes from its checkpoint.

Flags:
`

// runMigrate is `gtc migrate`.
func runMigrate(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) (err error) {
	if len(args) > 0 && args[0] == "convert" {
		return runMigrateConvert(ctx, args[1:], stdin, stdout, stderr)
	}
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, migrateUsage)
		fs.PrintDefaults()
	}
	var datasets stringList
	fs.Var(&datasets, "dataset", "only documents of this dataset (repeatable)")
	dryRun := fs.Bool("dry-run", false, "read and convert everything, write nothing; print one line per document that would change")
	check := fs.Bool("check", false, "like --dry-run but print only the totals; exit 4 when anything would change")
	batch := fs.Int("batch-size", 100, "documents per read page and write batch (1-1000)")
	conc := fs.Int("concurrency", 4, "parallel writes within a batch (1-32; Cosmos DB: mind the request units); SQLite hands a whole batch to its single writer")
	checkpoint := fs.String("checkpoint", "", "checkpoint file (default $GTC_DATA_DIR/migrate-<scope>.checkpoint.json)")
	restart := fs.Bool("restart", false, "ignore an existing checkpoint and start from the beginning")
	limit := fs.Int("limit", 0, "stop after this many written documents (a canary run)")
	tagMapPath := fs.String("tag-map", "", "JSON object mapping legacy tags to a replacement tag, or to null to drop them")
	noMove := fs.Bool("no-move", false, "do not move documents between partitions; report them as BUCKET_NEEDS_MOVE")
	report := fs.String("report", "", "write one JSON line per changed, failed or warned document to this file")
	asJSON := fs.Bool("json", false, "print the summary as one JSON object on stdout, and nothing else")
	mode := fs.String("progress", "auto", "progress display: auto, bar, log, none")
	verbose := fs.Bool("verbose", false, "also print a line for each unchanged document")
	failFast := fs.Bool("fail-fast", false, "stop at the first document error")
	metricsFile := fs.String("metrics-file", "", "write the run's counters to this file in the Prometheus text format when it ends (for a textfile collector)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usageError("migrate: %v", err)
	}
	if fs.NArg() > 0 {
		return usageError("migrate: unexpected argument %q", fs.Arg(0))
	}
	switch {
	case *dryRun && *check:
		return usageError("migrate: --dry-run and --check exclude each other")
	case *batch < 1 || *batch > 1000:
		return usageError("migrate: --batch-size %d: must be between 1 and 1000", *batch)
	case *conc < 1 || *conc > 32:
		return usageError("migrate: --concurrency %d: must be between 1 and 32", *conc)
	case *limit < 0:
		return usageError("migrate: --limit %d: must not be negative", *limit)
	case !slices.Contains(progressModes, *mode):
		return usageError("migrate: --progress %q: must be one of auto, bar, log, none", *mode)
	}
	for _, d := range datasets {
		if strings.TrimSpace(d) == "" {
			return usageError("migrate: --dataset must not be empty")
		}
	}
	tagMap, tagMapContent, err := readTagMap(*tagMapPath)
	if err != nil {
		return err
	}

	a, err := openApp(ctx, stderr)
	if err != nil {
		return err
	}
	defer func() { _ = a.Close() }()
	ctx, end := commandSpan(ctx, "job.migrate")
	defer end(&err)
	cfg, log := a.cfg, a.log

	opts := migrate.Options{
		Datasets: datasets, DryRun: *dryRun, Check: *check, BatchSize: *batch, Concurrency: *conc,
		Limit: *limit, NoMove: *noMove, FailFast: *failFast, Restart: *restart, By: "gtc migrate " + version,
	}
	scope := migrate.NewScope(datasets, tagMapContent, *noMove)
	if !*dryRun && !*check {
		path := *checkpoint
		if path == "" {
			path = migrate.DefaultCheckpointPath(cfg.DataDir, scope)
		}
		opts.Checkpoint = &migrate.CheckpointFile{Path: path, Scope: scope}
	}

	var rep *reportFile
	if *report != "" {
		// A resumed run appends to the report of the run it continues.
		resuming := opts.Checkpoint != nil && !*restart && checkpointResumable(opts.Checkpoint)
		if rep, err = openReport(*report, resuming); err != nil {
			return fatal(err)
		}
		defer rep.Close()
	}
	if *asJSON {
		*mode = "none"
	}
	out := bufio.NewWriter(stdout)
	defer out.Flush()
	prog := newProgress(*mode, "migrate", stderr)
	showLines := (*dryRun) && !*asJSON
	job := &migrate.Job{
		Store: a.store, Opts: opts, RunID: newRunID(),
		Env: migrateEnv(a.tagger, tagMap, a.clock.Now()),
		Hooks: migrate.Hooks{
			Progress: func(p migrate.Progress) {
				prog.update(p.Processed, p.Total, fmt.Sprintf("changed %d  unchanged %d  errors %d", p.Migrated, p.Skipped, p.Errors))
			},
			Document: func(d migrate.DocReport) {
				if showLines {
					_, _ = out.WriteString(migrate.DiffLine(d, *verbose))
				}
				if rep != nil && (d.Action != migrate.ActionUnchanged || len(d.Warnings) > 0) {
					rep.write(d)
				}
			},
			BatchDone: func() {
				if rep != nil {
					rep.flush()
				}
				if showLines {
					_ = out.Flush()
				}
			},
		},
	}
	sum, runErr := job.Run(ctx)
	prog.finish()
	if runErr != nil {
		log.Error("migrate stopped", "error", runErr.Error())
		sum.ExitCode = exitFatal
	}
	interrupted := ctx.Err() != nil
	if interrupted {
		sum.ExitCode = signalExit(ctx)
	}
	if *asJSON {
		if err := writeJSONLine(out, sum); err != nil {
			return err
		}
	} else {
		printMigrateSummary(out, sum, opts)
	}
	_ = out.Flush()
	if *metricsFile != "" {
		if err := writeMigrateMetrics(*metricsFile, sum); err != nil {
			log.Error("could not write the metrics file", "file", *metricsFile, "err", err)
		}
	}
	switch {
	case runErr != nil:
		return fatal(fmt.Errorf("migrate: %w (the summary shows how far it got; run it again to resume)", runErr))
	case interrupted:
		return errInterrupted
	case sum.ExitCode == migrate.ExitItemsFailed:
		return &exitError{code: exitItemsFailed, err: fmt.Errorf("migrate: %d documents failed", sum.Failed)}
	case sum.ExitCode == migrate.ExitWorkToDo:
		return &exitError{code: exitWorkToDo, err: fmt.Errorf("migrate --check: %d documents would change", sum.Migrated)}
	}
	return nil
}

// migrateEnv is the conversion environment: the server's registry and validators, in a
// pipeline that does not log each stripped tag (the report lists them per document).
func migrateEnv(p *tagging.Pipeline, tagMap map[string]*string, now time.Time) migrate.Env {
	quiet := tagging.NewPipeline(p.Registry(), p.Validators(), nil)
	return migrate.Env{Tagger: quiet, IsComputed: p.Registry().IsComputed, TagMap: tagMap, Now: now}
}

// exitWorkToDo is --check's "the check ran and found work to do".
const exitWorkToDo = 4

// signalExit is the exit code of the signal that cancelled ctx (130 when unknown).
func signalExit(ctx context.Context) int {
	var sc signalCause
	if errors.As(context.Cause(ctx), &sc) {
		return signalExitCode(sc.sig)
	}
	return 130
}

func checkpointResumable(cf *migrate.CheckpointFile) bool {
	cp, ok := cf.Load()
	return ok && cp.ScopeHash == cf.Scope.Hash() && cp.Phase != migrate.PhaseDone
}

func newRunID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// readTagMap reads --tag-map: a JSON object of legacy tag → replacement string or null.
func readTagMap(path string) (map[string]*string, []byte, error) {
	if path == "" {
		return nil, nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, usageError("migrate: --tag-map: %v", err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, nil, usageError("migrate: --tag-map %s: must be a JSON object mapping tags to a tag or null: %v", path, err)
	}
	out := make(map[string]*string, len(raw))
	for k, v := range raw {
		if string(bytes.TrimSpace(v)) == "null" {
			out[k] = nil
			continue
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, nil, usageError("migrate: --tag-map %s: the value of %q must be a string or null", path, k)
		}
		out[k] = &s
	}
	return out, b, nil
}

// reportFile is the --report JSONL file, flushed after every batch so it survives an
// interruption.
type reportFile struct {
	f   *os.File
	w   *bufio.Writer
	enc *json.Encoder
}

func openReport(path string, appendTo bool) (*reportFile, error) {
	flags := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if appendTo {
		flags = os.O_CREATE | os.O_WRONLY | os.O_APPEND
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return &reportFile{f: f, w: w, enc: enc}, nil
}

func (r *reportFile) write(v any) { _ = r.enc.Encode(v) }
func (r *reportFile) flush()      { _ = r.w.Flush() }
func (r *reportFile) Close() {
	r.flush()
	_ = r.f.Close()
}

// printMigrateSummary is the human summary: totals, the registry and marker, the first
// errors and the warnings by code.
func printMigrateSummary(w io.Writer, s *migrate.Summary, o migrate.Options) {
	verb := "migrated"
	if s.DryRun {
		verb = "would migrate"
	}
	fmt.Fprintf(w, "migrate: %d documents examined, %s %d (%d re-indexed, %d moved), %d already current, %d failed in %s\n",
		s.Total, verb, s.Migrated, s.Reindexed, s.Moved, s.Skipped, s.Failed, (time.Duration(s.DurationMS) * time.Millisecond).String())
	if s.ResumedFrom != nil {
		fmt.Fprintf(w, "  resumed from run %s (counts include the earlier run)\n", *s.ResumedFrom)
	}
	switch {
	case len(o.Datasets) > 0:
		fmt.Fprintln(w, "  tag store: not cleaned (--dataset given; the tag store is global)")
	case len(s.TagStoreRemoved) > 0:
		fmt.Fprintf(w, "  tag store: %s %d entries: %s\n", map[bool]string{true: "would remove", false: "removed"}[s.DryRun],
			len(s.TagStoreRemoved), strings.Join(s.TagStoreRemoved, ", "))
	default:
		fmt.Fprintln(w, "  tag store: clean")
	}
	if s.Registry.BucketsRegistered != nil {
		fmt.Fprintf(w, "  registry: %d buckets registered, %d duplicate ids\n", *s.Registry.BucketsRegistered, *s.Registry.DuplicateIDs)
	}
	switch {
	case s.Registry.MarkerWritten:
		fmt.Fprintln(w, "  migration marker: written")
	case s.DryRun:
		fmt.Fprintln(w, "  migration marker: not written (dry run)")
	case s.Interrupted:
		fmt.Fprintln(w, "  migration marker: not written (the run stopped early; run gtc migrate again to continue)")
	case len(o.Datasets) > 0:
		fmt.Fprintln(w, "  migration marker: not written (the run covered only some datasets)")
	case s.Failed > 0:
		fmt.Fprintln(w, "  migration marker: not written (documents failed; fix them and run gtc migrate again)")
	}
	if len(s.WarningCounts) > 0 {
		codes := make([]string, 0, len(s.WarningCounts))
		for c := range s.WarningCounts {
			codes = append(codes, c)
		}
		sort.Strings(codes)
		parts := make([]string, len(codes))
		for i, c := range codes {
			parts[i] = fmt.Sprintf("%s %d", c, s.WarningCounts[c])
		}
		more := ""
		if s.WarningsTruncated {
			more = " (the --json summary lists the first 1000; --report has all)"
		}
		fmt.Fprintf(w, "  warnings: %s%s\n", strings.Join(parts, ", "), more)
	}
	for i, e := range s.Errors {
		if i == 20 {
			fmt.Fprintf(w, "  … and %d more errors (see --report)\n", s.Failed-20)
			break
		}
		fmt.Fprintln(w, "  error "+e)
	}
}

// runMigrateConvert is `gtc migrate convert`: the same
// conversion applied to a file of raw documents, writing importable v2 records as JSONL.
func runMigrateConvert(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("migrate convert", flag.ContinueOnError)
	fs.SetOutput(stderr)
	in := fs.String("in", "", "raw documents: a JSON array or JSONL file, or - for stdin")
	outPath := fs.String("out", "", "where the v2 records go as JSONL: a file, or - for stdout")
	tagMapPath := fs.String("tag-map", "", "JSON object mapping legacy tags to a replacement tag, or to null to drop them")
	report := fs.String("report", "", "write one JSON line per converted, failed or warned document to this file")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usageError("migrate convert: %v", err)
	}
	if fs.NArg() > 0 {
		return usageError("migrate convert: unexpected argument %q", fs.Arg(0))
	}
	if *in == "" || *outPath == "" {
		return usageError("migrate convert: --in and --out are required")
	}
	tagMap, _, err := readTagMap(*tagMapPath)
	if err != nil {
		return err
	}
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	te, err := newTagEngine(cfg, newLogger(cfg, stderr))
	if err != nil {
		return err
	}
	env := migrateEnv(te.pipeline, tagMap, time.Now().UTC())

	var src io.Reader = stdin
	if *in != "-" {
		f, err := os.Open(*in)
		if err != nil {
			return usageError("migrate convert: --in: %v", err)
		}
		defer f.Close()
		src = f
	}
	var rep *reportFile
	if *report != "" {
		if rep, err = openReport(*report, false); err != nil {
			return fatal(err)
		}
		defer rep.Close()
	}
	// A JSON array, or JSON lines (by extension, or when the input starts with an object).
	br := bufio.NewReaderSize(src, 64<<10)
	format := "jsonl"
	if ext := strings.ToLower(filepath.Ext(*in)); ext != ".jsonl" && ext != ".ndjson" {
		if first, ferr := importer.FirstByte(br); ferr == nil && first == '[' {
			format = "json"
		}
	}
	var inputErr error
	write := func(dst io.Writer) (converted, failed int, err error) {
		w := bufio.NewWriter(dst)
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		i := 0
		err = importer.ReadElements(br, *in, format, func(el []byte) error {
			if ctx.Err() != nil {
				return errInterrupted
			}
			defer func() { i++ }()
			doc, derr := gtc.DecodeRawObject(el)
			if derr != nil {
				inputErr = fmt.Errorf("document %d: %w", i, derr)
				return inputErr
			}
			rec, d := migrate.ConvertForImport(doc, env)
			if rep != nil && (d.Action != migrate.ActionUnchanged || len(d.Warnings) > 0) {
				rep.write(d)
			}
			if d.Error != nil {
				failed++
				fmt.Fprintf(stderr, "gtc: migrate convert: document %d (%s): %s: %s\n", i, d.Key, d.Error.Code, d.Error.Message)
				return nil
			}
			converted++
			return enc.Encode(rec)
		})
		if ferr := w.Flush(); err == nil {
			err = ferr
		}
		return converted, failed, err
	}
	var converted, failed int
	if *outPath == "-" {
		converted, failed, err = write(stdout)
	} else {
		_, err = writeFileAtomically(*outPath, func(w io.Writer) (struct{}, error) {
			var werr error
			converted, failed, werr = write(w)
			return struct{}{}, werr
		})
	}
	if errors.Is(err, errInterrupted) {
		return errInterrupted
	}
	if err != nil {
		var bad importer.BadInputError
		if inputErr != nil || errors.As(err, &bad) {
			return usageError("migrate convert: --in %s: %v (nothing was written)", *in, err)
		}
		return fatal(fmt.Errorf("migrate convert: %w", err))
	}
	fmt.Fprintf(stderr, "migrate convert: %d documents converted, %d failed\n", converted, failed)
	if failed > 0 {
		return &exitError{code: exitItemsFailed, err: fmt.Errorf("migrate convert: %d documents failed", failed)}
	}
	return nil
}
