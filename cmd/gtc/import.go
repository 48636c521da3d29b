package main

import (
	"bufio"
	"bytes"
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
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/codec"
	"github.com/gtc-dev/gtc/export"
	"github.com/gtc-dev/gtc/migrate"
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

// importErrorSamples bounds the errors the summary lists; the report has all of them.
const importErrorSamples = 20

// errStopReading ends the reading of the inputs early: an interruption, or the first
// duplicate with --on-conflict fail.
var errStopReading = errors.New("import: stop reading")

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
		inputs = append(inputs, s.name)
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
	cur := a.curator
	if *dryRun {
		cur = dryRunCurator(a)
	}
	im := &importer{
		cur:       cur,
		opts:      gtc.ImportOptions{Approve: *approve, RegisterTags: *registerTags},
		failOnDup: *onConflict == "fail",
		batchSize: *batch,
		env:       migrateEnv(a.tagger, nil, a.clock.Now()),
		prog:      newProgress(*mode, "import", stderr),
		total:     total,
		sum:       importSummary{Command: "import", Inputs: inputs, WarningCounts: map[string]int{}, ErrorSamples: []importIssue{}, DryRun: *dryRun},
		rep:       rep,
	}
	start := time.Now()
	// Items get the caller a request would have; the batch in flight is finished after a
	// signal (the service runs without the cancellation), reading stops.
	wctx := gtc.WithCaller(ctx, gtc.Caller{UserID: "cli:" + osUser()})
	runErr := im.run(wctx, sources)
	im.prog.finish()
	im.sum.DurationMS = time.Since(start).Milliseconds()

	var exit error
	switch {
	case runErr != nil:
		exit = runErr
	case ctx.Err() != nil:
		exit = errInterrupted
	case im.sum.Failed > 0:
		exit = &exitError{code: exitItemsFailed, err: fmt.Errorf("import: %d items failed", im.sum.Failed)}
	}
	im.sum.ExitCode = exitCode(exit, io.Discard)
	if errors.Is(exit, errInterrupted) {
		im.sum.ExitCode = signalExit(ctx)
	}
	if *asJSON {
		if err := writeJSONLine(stdout, im.sum); err != nil {
			return err
		}
	} else {
		im.sum.print(stdout, im.stoppedOnDup)
	}
	return exit
}

// importSource is one input: a file, stdin, or one data file of a stored snapshot.
type importSource struct {
	name   string // as the report names it
	format string // auto, json or jsonl
	open   func(ctx context.Context) (io.ReadCloser, error)
}

// fileSources checks the file arguments before anything is done: a file that cannot be read
// is a usage error (exit 2), like a bad flag.
func fileSources(files []string, format string, stdin io.Reader) ([]importSource, error) {
	var out []importSource
	seenStdin := false
	for _, name := range files {
		if name == "-" {
			if seenStdin {
				return nil, usageError("import: - (stdin) can be given once")
			}
			seenStdin = true
			out = append(out, importSource{name: "-", format: format, open: func(context.Context) (io.ReadCloser, error) {
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
		out = append(out, importSource{name: name, format: format, open: func(context.Context) (io.ReadCloser, error) {
			return os.Open(name)
		}})
	}
	return out, nil
}

// snapshotSources lists the data files of a stored snapshot in manifest order: its single
// data file, or one file per record. The manifest's own count is the progress total.
func snapshotSources(ctx context.Context, a *app, id string) ([]importSource, int, error) {
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
	var out []importSource
	for _, f := range manifest.Files {
		name := f.Name
		key := dir + name
		if name == "" || strings.ContainsAny(name, `/\`) || gtc.ValidateKey(key) != nil {
			return nil, 0, fatal(fmt.Errorf("import: --from-snapshot %s: the manifest lists an invalid file name %q", id, name))
		}
		if strings.EqualFold(filepath.Ext(name), ".csv") {
			return nil, 0, usageError("import: --from-snapshot %s: %s is CSV, which import does not accept", id, name)
		}
		out = append(out, importSource{name: "snapshot:" + id + "/" + name, format: "auto", open: func(ctx context.Context) (io.ReadCloser, error) {
			obj, err := arts.Open(ctx, key)
			if err != nil {
				return nil, err
			}
			return obj.Body, nil
		}})
	}
	return out, total, nil
}

// --- reading ---------------------------------------------------------------------------------

// readElements reads one input as a token stream and calls emit with each element's JSON
// text, in order, so that memory holds one element (and the batch the caller keeps).
func readElements(r io.Reader, name, format string, emit func([]byte) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	if format == "auto" {
		switch strings.ToLower(filepath.Ext(name)) {
		case ".jsonl", ".ndjson":
			format = "jsonl"
		}
	}
	if format == "jsonl" {
		return readJSONLines(br, emit)
	}
	first, err := firstByte(br)
	if err == io.EOF {
		return nil // an empty input, as an empty JSONL export is
	}
	if err != nil {
		return err
	}
	switch first {
	case '[':
		return readArray(br, emit)
	case '{':
		return readObject(br, emit)
	default:
		return badInputError{fmt.Errorf("expected a JSON array, a JSON object or JSON lines; the input starts with %q", first)}
	}
}

// firstByte skips white space and a byte-order mark and returns the next byte, unread.
func firstByte(br *bufio.Reader) (byte, error) {
	if bom, err := br.Peek(3); err == nil && string(bom) == "\xef\xbb\xbf" {
		_, _ = br.Discard(3)
	}
	for {
		b, err := br.Peek(1)
		if err != nil {
			return 0, err
		}
		switch b[0] {
		case ' ', '\t', '\r', '\n':
			_, _ = br.Discard(1)
		default:
			return b[0], nil
		}
	}
}

// readJSONLines reads one element per non-blank line. A line that is not JSON fails alone,
// so one broken line does not lose the rest of the file.
func readJSONLines(br *bufio.Reader, emit func([]byte) error) error {
	for {
		line, err := br.ReadBytes('\n')
		if t := bytes.TrimSpace(line); len(t) > 0 {
			if e := emit(t); e != nil {
				return e
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func readArray(br *bufio.Reader, emit func([]byte) error) error {
	dec := json.NewDecoder(br)
	if _, err := dec.Token(); err != nil { // the '[' firstByte saw
		return syntaxError(dec, err)
	}
	if err := readElementsOf(dec, emit); err != nil {
		return err
	}
	return expectEnd(dec)
}

// readElementsOf emits the elements of the array whose '[' dec has just read, and reads
// its ']'.
func readElementsOf(dec *json.Decoder, emit func([]byte) error) error {
	for dec.More() {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return syntaxError(dec, err)
		}
		if err := emit(raw); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return syntaxError(dec, err)
	}
	return nil
}

// readObject reads a json_snapshot_payload object: its items array, wherever it sits among
// the keys; the other keys are skipped. An object without an items key is a record, not a
// payload: the input is then JSON lines (a JSONL export on stdin), or a snapshot's
// per-record file, and is read as such from its first byte.
func readObject(br *bufio.Reader, emit func([]byte) error) error {
	rec := &recorder{r: br, on: true}
	dec := json.NewDecoder(rec)
	if _, err := dec.Token(); err != nil {
		return syntaxError(dec, err)
	}
	payload := false
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return syntaxError(dec, err)
		}
		if t != "items" {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return syntaxError(dec, err)
			}
			continue
		}
		payload = true
		rec.stop()
		t, err = dec.Token()
		if err != nil {
			return syntaxError(dec, err)
		}
		switch t {
		case json.Delim('['):
			if err := readElementsOf(dec, emit); err != nil {
				return err
			}
		case nil:
		default:
			return errors.New("the payload's items key is not an array")
		}
	}
	if _, err := dec.Token(); err != nil {
		return syntaxError(dec, err)
	}
	if payload {
		return expectEnd(dec)
	}
	end := dec.InputOffset()
	seen := rec.buf.Bytes()
	if err := emit(seen[:end]); err != nil {
		return err
	}
	return readJSONLines(bufio.NewReader(io.MultiReader(bytes.NewReader(seen[end:]), br)), emit)
}

// recorder keeps what the decoder reads until stop, so that an object that turns out to be
// a record can be read again as the first line of JSON lines.
type recorder struct {
	r   io.Reader
	buf bytes.Buffer
	on  bool
}

func (r *recorder) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if r.on {
		r.buf.Write(p[:n])
	}
	return n, err
}

func (r *recorder) stop() { r.on, r.buf = false, bytes.Buffer{} }

// expectEnd fails when anything but white space follows the document.
func expectEnd(dec *json.Decoder) error {
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("unexpected data after the JSON document at byte %d", dec.InputOffset())
	}
	return nil
}

func syntaxError(dec *json.Decoder, err error) error {
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return badInputError{fmt.Errorf("invalid JSON near byte %d: %w", dec.InputOffset(), err)}
}

// badInputError is input that is not the JSON it should be, as opposed to a failed read:
// the user's file is wrong, not the system.
type badInputError struct{ error }

func (e badInputError) Unwrap() error { return e.error }

// --- importing -------------------------------------------------------------------------------

// importer runs the batches of one gtc import and keeps its counts.
type importer struct {
	cur          *gtc.Curator
	opts         gtc.ImportOptions
	failOnDup    bool
	batchSize    int
	env          migrate.Env
	prog         *progress
	total        int
	batch        []*importItem
	sum          importSummary
	stoppedOnDup bool
	rep          *reportFile
}

// importItem is one input element on its way through a batch.
type importItem struct {
	input       string
	index       int // position in its input
	datasetName *string
	id          *string
	legacy      bool
	converted   []string         // manual tags the legacy conversion made (custom:<name>)
	entry       *gtc.ImportEntry // nil when the element failed before the import service
	errors      []importIssue
	warnings    []importIssue
	pii         []gtc.PIIWarning
	dups        []gtc.DuplicateWarning
}

// importIssue is the route's per-item error or warning; Fields lists every schema problem
// of a VALIDATION_ERROR (its message names the first).
type importIssue struct {
	Input string `json:"input,omitempty"`
	gtc.ImportIssue
	Fields []gtc.FieldError `json:"fields,omitempty"`
}

// importSummary is the --json summary.
type importSummary struct {
	Command           string         `json:"command"`
	Inputs            []string       `json:"inputs"`
	Total             int            `json:"total"`
	Imported          int            `json:"imported"`
	Skipped           int            `json:"skipped"`
	Failed            int            `json:"failed"`
	WarningCounts     map[string]int `json:"warningCounts"`
	PIIWarnings       int            `json:"piiWarnings"`
	DuplicateWarnings int            `json:"duplicateWarnings"`
	ErrorSamples      []importIssue  `json:"errorSamples"`
	DryRun            bool           `json:"dryRun"`
	DurationMS        int64          `json:"durationMs"`
	ExitCode          int            `json:"exitCode"`
}

// importReportLine is one line of --report: an item that was imported, failed, or was
// skipped with warnings.
type importReportLine struct {
	Input             string                 `json:"input"`
	Index             int                    `json:"index"`
	DatasetName       *string                `json:"datasetName"`
	ID                *string                `json:"id"`
	Action            string                 `json:"action"`
	Legacy            bool                   `json:"legacy,omitempty"`
	Errors            []importIssue          `json:"errors"`
	Warnings          []importIssue          `json:"warnings"`
	PIIWarnings       []gtc.PIIWarning       `json:"piiWarnings"`
	DuplicateWarnings []gtc.DuplicateWarning `json:"duplicateWarnings"`
}

// run reads the sources in order and imports their elements batch by batch.
func (im *importer) run(ctx context.Context, sources []importSource) error {
	for _, src := range sources {
		if ctx.Err() != nil {
			return nil
		}
		r, err := src.open(ctx)
		if err != nil {
			return fatal(fmt.Errorf("import: %s: %w", src.name, err))
		}
		index := 0
		err = readElements(r, src.name, src.format, func(raw []byte) error {
			if ctx.Err() != nil {
				return errStopReading // the elements not yet sent are left alone
			}
			im.batch = append(im.batch, im.prepare(src.name, index, raw))
			index++
			if len(im.batch) < im.batchSize {
				return nil
			}
			return im.flush(ctx)
		})
		r.Close()
		if errors.Is(err, errStopReading) {
			return nil
		}
		if err != nil {
			if _, ok := err.(*exitError); ok {
				return err
			}
			// The elements before the broken spot are imported; the summary says how many.
			if ferr := im.flush(ctx); ferr != nil && !errors.Is(ferr, errStopReading) {
				return ferr
			}
			return fatal(fmt.Errorf("import: %s: %w", src.name, err))
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	if err := im.flush(ctx); err != nil && !errors.Is(err, errStopReading) {
		return err
	}
	return nil
}

// prepare decodes one element on its own through the route's decoder, converting a legacy
// document first. A schema or tag problem fails this element alone, with the code, message
// and path the route would give for it.
func (im *importer) prepare(input string, index int, raw []byte) *importItem {
	it := &importItem{input: input, index: index}
	if doc, err := gtc.DecodeRawObject(raw); err == nil {
		it.datasetName, it.id = stringKey(doc, "datasetName"), stringKey(doc, "id")
		if legacyElement(doc) {
			it.legacy = true
			converted, ok := im.convert(it, doc)
			if !ok {
				return it
			}
			raw = converted
		}
	}
	body := make([]byte, 0, len(raw)+2)
	body = append(append(append(body, '['), raw...), ']')
	entries, err := gtc.DecodeImport(body)
	if err == nil {
		err = im.cur.CheckImportTags(entries)
	}
	if err != nil {
		iss := elementError(err, index, raw)
		if iss.ItemID == nil {
			iss.ItemID = it.id
		}
		it.fail(iss)
		return it
	}
	it.entry = entries[0]
	return it
}

// convert turns a legacy v1 document into the v2 record gtc migrate convert writes for it,
// so that importing a legacy file equals converting it and importing the result. The
// conversion's warnings become import warnings with their codes.
func (im *importer) convert(it *importItem, doc map[string]any) ([]byte, bool) {
	rec, rep := migrate.ConvertForImport(doc, im.env)
	it.converted = rep.ConvertedTags
	for _, w := range rep.Warnings {
		it.warnings = append(it.warnings, importIssue{ImportIssue: gtc.ImportIssue{Index: it.index, ItemID: it.id, Code: w.Code, Message: w.Message}})
	}
	if rep.Error != nil {
		it.fail(importIssue{ImportIssue: gtc.ImportIssue{Index: it.index, ItemID: it.id, Code: rep.Error.Code, Message: rep.Error.Message}})
		return nil, false
	}
	// The import computes the computed tags again; sending the converted ones would only
	// earn the element an OUTPUT_FIELDS_IGNORED warning for a key it never had.
	delete(rec, "computedTags")
	out, err := json.Marshal(rec)
	if err != nil {
		it.fail(importIssue{ImportIssue: gtc.ImportIssue{Index: it.index, ItemID: it.id, Code: migrate.CodeInvalidDocument, Message: err.Error()}})
		return nil, false
	}
	return out, true
}

// legacyElement reports whether an element is a legacy v1 document. migrate.IsLegacy judges
// stored documents, which always have manualTags, computedTags and history; an import
// element may leave those out, and an export record carries the output-only tags (next to
// manualTags) and totalReferences. The probe fills in the first and drops the second, so
// what decides is what only a legacy document has: a legacy key, a legacy history entry or
// rag-compat data, or a tags list without manualTags.
func legacyElement(doc map[string]any) bool {
	probe := maps.Clone(doc)
	if _, ok := probe["manualTags"]; ok {
		delete(probe, "tags")
	} else if _, ok := probe["tags"]; !ok {
		probe["manualTags"] = []any{}
	}
	if _, ok := probe["computedTags"]; !ok {
		probe["computedTags"] = []any{}
	}
	if probe["history"] == nil {
		probe["history"] = []any{}
	}
	delete(probe, "totalReferences")
	return migrate.IsLegacy(probe)
}

func stringKey(doc map[string]any, key string) *string {
	if s, ok := doc[key].(string); ok {
		return &s
	}
	return nil
}

func (it *importItem) fail(iss importIssue) { it.errors = append(it.errors, iss) }

// elementError is the per-item form of the 422 the route answers for a body holding this
// one element: code and message as the route gives them, paths numbered by the element's
// position in its input.
func elementError(err error, index int, raw []byte) importIssue {
	ge, ok := gtc.AsError(err)
	if !ok {
		return importIssue{ImportIssue: gtc.ImportIssue{Index: index, Code: gtc.CodeValidation, Message: err.Error()}}
	}
	if ge.Code == gtc.CodeInvalidJSON {
		// Parsed on its own, the element's syntax error points into the element, not into
		// the one-element array it was sent in.
		if _, perr := gtc.ParseBody(raw); perr != nil {
			if pe, ok := gtc.AsError(perr); ok {
				ge = pe
			}
		}
	}
	fields := make([]gtc.FieldError, len(ge.Fields))
	for i, f := range ge.Fields {
		if rest, ok := strings.CutPrefix(f.Field, "[0]"); ok {
			f.Field = "[" + strconv.Itoa(index) + "]" + rest
		}
		fields[i] = f
	}
	iss := importIssue{ImportIssue: gtc.ImportIssue{Index: index, Code: ge.Code, Message: ge.Message}, Fields: fields}
	if len(fields) > 0 {
		iss.Field = &fields[0].Field
	}
	if ge.Code == gtc.CodeValidation {
		iss.Message = gtc.ValidationDetailMore(fields, ge.More)
	}
	return iss
}

// flush sends the elements of the batch that passed their checks to the import service as
// one request, then counts and reports every element of the batch in input order.
func (im *importer) flush(ctx context.Context) error {
	batch := im.batch
	im.batch = nil
	if len(batch) == 0 {
		return nil
	}
	var entries []*gtc.ImportEntry
	var pos []int
	opts := im.opts
	opts.ConvertedTags = nil
	for i, it := range batch {
		if it.entry != nil {
			entries = append(entries, it.entry)
			pos = append(pos, i)
			opts.ConvertedTags = append(opts.ConvertedTags, it.converted)
		}
	}
	if len(entries) > 0 {
		res, err := im.cur.Import(context.WithoutCancel(ctx), entries, opts)
		im.opts.Batch++ // the index of the next batch's span
		if err != nil {
			return fatal(fmt.Errorf("import: %s", describeError(err)))
		}
		ids := make([]string, len(entries))
		for n, id := range res.UUIDs {
			it := batch[pos[n]]
			it.id, it.datasetName = &id, &entries[n].Item.DatasetName
			ids[n] = id
		}
		for _, e := range res.Errors {
			it := batch[pos[e.Index]]
			e.Index = it.index
			it.errors = append(it.errors, importIssue{ImportIssue: e})
		}
		for _, w := range res.Warnings {
			it := batch[pos[w.Index]]
			w.Index = it.index
			it.warnings = append(it.warnings, importIssue{ImportIssue: w})
		}
		// PII and duplicate warnings name the item only by id; the service lists them in
		// request order, so each one belongs to the next entry with that id.
		n := 0
		for _, w := range res.PIIWarnings {
			for n < len(ids)-1 && ids[n] != w.ItemID {
				n++
			}
			batch[pos[n]].pii = append(batch[pos[n]].pii, w)
		}
		n = 0
		for _, w := range res.DuplicateWarnings {
			for n < len(ids)-1 && ids[n] != w.ItemID {
				n++
			}
			batch[pos[n]].dups = append(batch[pos[n]].dups, w)
		}
	}
	for _, it := range batch {
		im.record(it)
	}
	if im.rep != nil {
		im.rep.flush() // the report survives an interruption
	}
	im.prog.update(im.sum.Total, im.total, fmt.Sprintf("imported %d  skipped %d  failed %d", im.sum.Imported, im.sum.Skipped, im.sum.Failed))
	if im.stoppedOnDup || ctx.Err() != nil {
		return errStopReading
	}
	return nil
}

// record counts one element and writes its report line.
func (im *importer) record(it *importItem) {
	s := &im.sum
	s.Total++
	action := "imported"
	if len(it.errors) > 0 {
		action = "failed"
		dupOnly := true
		for _, e := range it.errors {
			dupOnly = dupOnly && e.Code == gtc.CodeDuplicateID
		}
		switch {
		case dupOnly && !im.failOnDup:
			action = "skipped"
		case dupOnly:
			im.stoppedOnDup = true
		}
	}
	switch action {
	case "imported":
		s.Imported++
	case "skipped":
		s.Skipped++
	case "failed":
		s.Failed++
		for _, e := range it.errors {
			if len(s.ErrorSamples) < importErrorSamples {
				e.Input = it.input
				s.ErrorSamples = append(s.ErrorSamples, e)
			}
		}
	}
	for _, w := range it.warnings {
		s.WarningCounts[w.Code]++
	}
	s.PIIWarnings += len(it.pii)
	s.DuplicateWarnings += len(it.dups)
	warned := len(it.warnings) > 0 || len(it.pii) > 0 || len(it.dups) > 0
	if im.rep == nil || action == "skipped" && !warned {
		return
	}
	line := importReportLine{
		Input: it.input, Index: it.index, DatasetName: it.datasetName, ID: it.id, Action: action, Legacy: it.legacy,
		Errors: orEmpty(it.errors), Warnings: orEmpty(it.warnings), PIIWarnings: orEmpty(it.pii), DuplicateWarnings: orEmpty(it.dups),
	}
	if action == "skipped" {
		line.Errors = []importIssue{} // an existing item is not an error under --on-conflict skip
	}
	im.rep.write(line)
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// print writes the human summary and the first errors.
func (s *importSummary) print(w io.Writer, stoppedOnDup bool) {
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
	if s.Failed > 0 && len(s.ErrorSamples) == importErrorSamples {
		fmt.Fprintln(w, "  … the report (--report FILE) lists every error")
	}
}

// --- dry run ---------------------------------------------------------------------------------

// dryRunCurator is the import service over a store and a tag vocabulary that check but do
// not write: the import runs every step of the route, and only the writes are left out.
func dryRunCurator(a *app) *gtc.Curator {
	deps := a.curatorDeps
	items := &dryRunItems{ItemStore: deps.Store.Items(), created: map[[2]string]bool{}}
	deps.Store = dryRunStore{Store: deps.Store, items: items}
	deps.Vocabulary = dryRunVocabulary{TagVocabulary: deps.Vocabulary}
	return gtc.NewCurator(deps)
}

type dryRunStore struct {
	gtc.Store
	items *dryRunItems
}

func (s dryRunStore) Items() gtc.ItemStore { return s.items }

// dryRunItems answers a create as the store would (an existing (datasetName, id), also one
// "created" earlier in the run, is a conflict; an oversized item is too large) without
// writing.
type dryRunItems struct {
	gtc.ItemStore
	mu      sync.Mutex
	created map[[2]string]bool
}

func (s *dryRunItems) Create(ctx context.Context, it *gtc.Item) (*gtc.Item, error) {
	if len(codec.ItemStoredJSON(it)) > gtc.MaxItemBytes {
		return nil, gtc.ErrTooLarge
	}
	k := [2]string{it.DatasetName, it.ID}
	if _, err := s.ItemStore.Locate(ctx, it.DatasetName, it.ID); err == nil {
		return nil, &gtc.ConflictError{Existing: gtc.Key{DatasetName: it.DatasetName, Bucket: it.Bucket, ID: it.ID}}
	} else if !errors.Is(err, gtc.ErrNotFound) {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.created[k] {
		return nil, &gtc.ConflictError{Existing: gtc.Key{DatasetName: it.DatasetName, Bucket: it.Bucket, ID: it.ID}}
	}
	s.created[k] = true
	return it.Clone(), nil
}

// Locate also finds the items of earlier batches, so generated ids stay unique in the run.
func (s *dryRunItems) Locate(ctx context.Context, datasetName, id string) (gtc.Key, error) {
	s.mu.Lock()
	seen := s.created[[2]string{datasetName, id}]
	s.mu.Unlock()
	if seen {
		return gtc.Key{DatasetName: datasetName, ID: id}, nil
	}
	return s.ItemStore.Locate(ctx, datasetName, id)
}

// dryRunVocabulary registers no tags (--register-tags with --dry-run).
type dryRunVocabulary struct{ gtc.TagVocabulary }

func (dryRunVocabulary) AddTags(context.Context, []string) ([]string, error) { return nil, nil }
