package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/export"
	"github.com/gtc-dev/gtc/importer"
)

const importUsage = `usage:
  gtc import [FILE|-]... [--from-snapshot ID] [--input-format auto|json|jsonl]
             [--approve] [--register-tags] [--on-conflict skip|fail]
             [--batch-size N] [--dry-run] [--json] [--progress MODE] [--report FILE]

Imports items through the same service as POST /v1/ground-truths, in process, one batch at a
time: the same checks, tag vocabulary, approval (--approve), bucket assignment, computed tags,
output-only keys ignored with a warning, PII and duplicate warnings. Unlike the route, an
element that breaks the item schema fails alone (VALIDATION_ERROR) and the others go on.

Inputs are files, - for stdin, and --from-snapshot ID (a stored snapshot of export storage).
Each holds what gtc export writes: a json_snapshot_payload object, a json_items array, or
JSONL. --input-format auto decides by extension (.jsonl, .ndjson) and then by the first byte:
[ an array, { a payload object (an object without an items array starts JSON lines). CSV is
not accepted. Legacy v1 documents are converted as gtc migrate converts them, then imported;
the custom:<name> tags the conversion makes from bare legacy tags need no --register-tags
and join the tag store with their item.

--on-conflict skip (default) counts an existing (datasetName, id) as skipped, so importing the
same export twice changes nothing; fail stops after the batch holding the first duplicate.
--dry-run runs every check and writes nothing (no items, no tags).
`

func runImport(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) (err error) {
	if len(args) == 1 && (args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
		fmt.Fprint(stdout, importUsage)
		return nil
	}
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, importUsage) }
	snapshot := fs.String("from-snapshot", "", "import a stored snapshot of export storage")
	inputFormat := fs.String("input-format", "auto", "auto, json or jsonl")
	approve := fs.Bool("approve", false, "approve every item (the approval rules run)")
	registerTags := fs.Bool("register-tags", false, "accept unknown manual tags and add them to the tag store")
	onConflict := fs.String("on-conflict", "skip", "an existing (datasetName, id): skip or fail")
	batch := fs.Int("batch-size", 100, "items per import batch (1-1000)")
	dryRun := fs.Bool("dry-run", false, "run every check, write nothing")
	asJSON := fs.Bool("json", false, "print the summary as one JSON object")
	mode := fs.String("progress", "auto", "progress display: auto, bar, log, none")
	report := fs.String("report", "", "write one JSON line per imported, failed or warned item to this file")
	files, err := parseInterspersed(fs, args)
	if err != nil {
		return usageError("import: %v", err)
	}
	switch {
	case len(files) == 0 && *snapshot == "":
		return usageError("import: give one or more FILEs, - for stdin, or --from-snapshot ID")
	case !slices.Contains([]string{"auto", "json", "jsonl"}, *inputFormat):
		return usageError("import: --input-format %q: must be one of auto, json, jsonl", *inputFormat)
	case *onConflict != "skip" && *onConflict != "fail":
		return usageError("import: --on-conflict %q: must be skip or fail", *onConflict)
	case *batch < 1 || *batch > 1000:
		return usageError("import: --batch-size %d: must be between 1 and 1000", *batch)
	case !slices.Contains(progressModes, *mode):
		return usageError("import: --progress %q: must be one of auto, bar, log, none", *mode)
	}
	sources, err := fileSources(files, *inputFormat, stdin)
	if err != nil {
		return err
	}
	inputs := make([]string, 0, len(sources)+1)
	for _, s := range sources {
		inputs = append(inputs, s.Name)
	}

	a, err := openApp(ctx, stderr)
	if err != nil {
		return err
	}
	defer func() { _ = a.Close() }()
	ctx, end := commandSpan(ctx, "job.import")
	defer end(&err)
	total := -1
	if *snapshot != "" {
		snap, count, err := snapshotSources(ctx, a, *snapshot)
		if err != nil {
			return err
		}
		if len(sources) == 0 {
			total = count
		}
		sources = append(sources, snap...)
		inputs = append(inputs, "snapshot:"+*snapshot)
	}

	var rep *reportFile
	if *report != "" {
		if rep, err = openReport(*report, false); err != nil {
			return fatal(fmt.Errorf("import: %w", err))
		}
		defer rep.Close()
	}
	if *asJSON {
		*mode = "none"
	}
	// The run has a curator of its own, whose duplicate check reads each dataset's approved
	// items once for the whole run and adds those the run creates. A dry run creates
	// nothing: its batches are screened against the store as it is.
	var cur *gtc.Curator
	if *dryRun {
		cur = importer.DryRunCurator(a.curatorDeps)
	} else {
		deps := a.curatorDeps
		deps.ImportScreen = a.importScreen.ForRun()
		cur = gtc.NewCurator(deps)
	}
	prog := newProgress(*mode, "import", stderr)
	im := &importer.Importer{
		Curator:   cur,
		Options:   gtc.ImportOptions{Approve: *approve, RegisterTags: *registerTags},
		FailOnDup: *onConflict == "fail",
		BatchSize: *batch,
		Env:       migrateEnv(a.tagger, nil, a.clock.Now()),
		Sum: importer.Summary{Command: "import", Inputs: inputs, WarningCounts: map[string]int{},
			ErrorSamples: []importer.Issue{}, DryRun: *dryRun},
		Batched: func(s *importer.Summary) {
			if rep != nil {
				rep.flush() // the report survives an interruption
			}
			prog.update(s.Total, total, fmt.Sprintf("imported %d  skipped %d  failed %d", s.Imported, s.Skipped, s.Failed))
		},
	}
	if rep != nil {
		im.Report = func(line importer.ReportLine) { rep.write(line) }
	}
	start := time.Now()
	// Items get the caller a request would have; the batch in flight is finished after a
	// signal (the service runs without the cancellation), reading stops.
	wctx := gtc.WithCaller(ctx, gtc.Caller{UserID: "cli:" + osUser()})
	runErr := im.Run(wctx, sources)
	prog.finish()
	im.Sum.DurationMS = time.Since(start).Milliseconds()
	if be := (*importer.BatchError)(nil); errors.As(runErr, &be) {
		runErr = fatal(fmt.Errorf("import: %s", describeError(be.Err)))
	} else if runErr != nil {
		runErr = fatal(runErr)
	}

	var exit error
	switch {
	case runErr != nil:
		exit = runErr
	case ctx.Err() != nil:
		exit = errInterrupted
	case im.Sum.Failed > 0:
		exit = &exitError{code: exitItemsFailed, err: fmt.Errorf("import: %d items failed", im.Sum.Failed)}
	}
	im.Sum.ExitCode = exitCode(exit, io.Discard)
	if errors.Is(exit, errInterrupted) {
		im.Sum.ExitCode = signalExit(ctx)
	}
	if *asJSON {
		if err := writeJSONLine(stdout, im.Sum); err != nil {
			return err
		}
	} else {
		printImportSummary(stdout, &im.Sum, im.StoppedOnDup)
	}
	return exit
}

// fileSources checks the file arguments before anything is done: a file that cannot be read
// is a usage error (exit 2), like a bad flag.
func fileSources(files []string, format string, stdin io.Reader) ([]importer.Source, error) {
	var out []importer.Source
	seenStdin := false
	for _, name := range files {
		if name == "-" {
			if seenStdin {
				return nil, usageError("import: - (stdin) can be given once")
			}
			seenStdin = true
			out = append(out, importer.Source{Name: "-", Format: format, Open: func(context.Context) (io.ReadCloser, error) {
				return io.NopCloser(stdin), nil
			}})
			continue
		}
		fi, err := os.Stat(name)
		if err != nil {
			return nil, usageError("import: %v", err)
		}
		if fi.IsDir() {
			return nil, usageError("import: %s is a directory", name)
		}
		if strings.EqualFold(filepath.Ext(name), ".csv") {
			return nil, usageError("import: %s: CSV is not accepted (it loses the item structure); export as json_items or jsonl", name)
		}
		if strings.EqualFold(filepath.Ext(name), ".parquet") {
			return nil, usageError("import: %s: Parquet is not accepted; export as json_items or jsonl", name)
		}
		out = append(out, importer.Source{Name: name, Format: format, Open: func(context.Context) (io.ReadCloser, error) {
			return os.Open(name)
		}})
	}
	return out, nil
}

// snapshotSources lists the data files of a stored snapshot in manifest order: its single
// data file, or one file per record. The manifest's own count is the progress total.
func snapshotSources(ctx context.Context, a *app, id string) ([]importer.Source, int, error) {
	x, err := a.exporter(ctx)
	if err != nil {
		return nil, 0, err
	}
	m, err := x.OpenManifest(ctx, id)
	if err != nil {
		if ge, ok := gtc.AsError(err); ok && ge.Code == gtc.CodeNotFound {
			return nil, 0, usageError("import: --from-snapshot %s: %s", id, ge.Message)
		}
		return nil, 0, fatal(fmt.Errorf("import: --from-snapshot %s: %s", id, describeError(err)))
	}
	var manifest struct {
		Format *string      `json:"format"`
		Count  *json.Number `json:"count"`
		Files  []struct {
			Name string `json:"name"`
		} `json:"files"`
	}
	err = json.NewDecoder(m.Body).Decode(&manifest)
	m.Body.Close()
	if err != nil {
		return nil, 0, fatal(fmt.Errorf("import: --from-snapshot %s: manifest: %w", id, err))
	}
	if manifest.Format != nil && *manifest.Format == "csv" {
		return nil, 0, usageError("import: --from-snapshot %s: the snapshot is CSV, which import does not accept (it loses the item structure)", id)
	}
	if manifest.Format != nil && *manifest.Format == "parquet" {
		return nil, 0, usageError("import: --from-snapshot %s: the snapshot is Parquet, which import does not accept", id)
	}
	total := -1
	if manifest.Count != nil {
		if n, err := manifest.Count.Int64(); err == nil {
			total = int(n)
		}
	}
	// The files are read straight from storage: they are listed in the manifest, so the
	// exporter's per-file lookup in the manifest would only repeat it for every record.
	arts := a.artifacts
	dir := export.SnapshotDir(id) + "/"
	var out []importer.Source
	for _, f := range manifest.Files {
		name := f.Name
		key := dir + name
		if name == "" || strings.ContainsAny(name, `/\`) || gtc.ValidateKey(key) != nil {
			return nil, 0, fatal(fmt.Errorf("import: --from-snapshot %s: the manifest lists an invalid file name %q", id, name))
		}
		if strings.EqualFold(filepath.Ext(name), ".csv") {
			return nil, 0, usageError("import: --from-snapshot %s: %s is CSV, which import does not accept", id, name)
		}
		out = append(out, importer.Source{Name: "snapshot:" + id + "/" + name, Format: "auto", Open: func(ctx context.Context) (io.ReadCloser, error) {
			obj, err := arts.Open(ctx, key)
			if err != nil {
				return nil, err
			}
			return obj.Body, nil
		}})
	}
	return out, total, nil
}

// printImportSummary writes the human summary and the first errors.
func printImportSummary(w io.Writer, s *importer.Summary, stoppedOnDup bool) {
	verb := "imported"
	if s.DryRun {
		verb = "would import"
	}
	fmt.Fprintf(w, "import: %d read, %s %d, skipped %d (already present), failed %d in %d ms\n",
		s.Total, verb, s.Imported, s.Skipped, s.Failed, s.DurationMS)
	if len(s.WarningCounts) > 0 || s.PIIWarnings > 0 || s.DuplicateWarnings > 0 {
		codes := slices.Sorted(maps.Keys(s.WarningCounts))
		parts := make([]string, 0, len(codes)+2)
		for _, c := range codes {
			parts = append(parts, fmt.Sprintf("%s %d", c, s.WarningCounts[c]))
		}
		if s.PIIWarnings > 0 {
			parts = append(parts, fmt.Sprintf("PII %d", s.PIIWarnings))
		}
		if s.DuplicateWarnings > 0 {
			parts = append(parts, fmt.Sprintf("possible duplicates %d", s.DuplicateWarnings))
		}
		fmt.Fprintf(w, "  warnings: %s\n", strings.Join(parts, ", "))
	}
	if stoppedOnDup {
		fmt.Fprintln(w, "  stopped after the batch holding the first existing item (--on-conflict fail)")
	}
	for _, e := range s.ErrorSamples {
		id := "-"
		if e.ItemID != nil {
			id = *e.ItemID
		}
		fmt.Fprintf(w, "  %s #%d %s: %s: %s\n", e.Input, e.Index, id, e.Code, e.Message)
	}
	if s.Failed > 0 && len(s.ErrorSamples) == importer.ErrorSamples {
		fmt.Fprintln(w, "  … the report (--report FILE) lists every error")
	}
}
