// Package importer runs a bulk import from files and streams: it reads the elements of
// JSON arrays, snapshot payload objects and JSON lines one at a time (ReadElements), converts
// legacy v1 documents as gtc migrate does, and sends the elements through the curator's
// import in batches, counting and reporting each one (Importer). DryRunCurator gives an
// import service that checks everything and writes nothing.
package importer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/codec"
	"github.com/gtc-dev/gtc/migrate"
)

// Importer runs the batches of one import and keeps its counts: it reads the sources in
// order, prepares each element on its own (a legacy v1 document is converted first), sends
// the elements that passed to the curator's import one batch at a time, and counts and
// reports every element in input order.
type Importer struct {
	Curator *gtc.Curator
	Options gtc.ImportOptions
	// FailOnDup stops after the batch holding the first existing (datasetName, id);
	// otherwise such an element is counted as skipped.
	FailOnDup bool
	// BatchSize is the number of elements per import request.
	BatchSize int
	// Env is the environment of the legacy conversion.
	Env migrate.Env
	// Report, when set, receives the line of every element that was imported, failed, or
	// was skipped with warnings.
	Report func(ReportLine)
	// Batched, when set, is called after every batch, once its elements are counted and
	// reported.
	Batched func(*Summary)
	// Sum holds the counts; set its Command, Inputs and DryRun, and non-nil WarningCounts
	// and ErrorSamples, before Run.
	Sum Summary
	// StoppedOnDup is set when FailOnDup stopped the run.
	StoppedOnDup bool

	batch []*item
}

// ErrorSamples bounds the errors the summary lists; the report has all of them.
const ErrorSamples = 20

// errStopReading ends the reading of the inputs early: an interruption, or the first
// duplicate with FailOnDup.
var errStopReading = errors.New("import: stop reading")

// Source is one input: a file, stdin, or one data file of a stored snapshot.
type Source struct {
	Name   string // as the report names it
	Format string // auto, json or jsonl
	Open   func(ctx context.Context) (io.ReadCloser, error)
}

// BatchError is a batch the import service refused as a whole (a store failure): the run
// stops there.
type BatchError struct{ Err error }

func (e *BatchError) Error() string { return "import: " + e.Err.Error() }
func (e *BatchError) Unwrap() error { return e.Err }

// item is one input element on its way through a batch.
type item struct {
	input       string
	index       int // position in its input
	datasetName *string
	id          *string
	legacy      bool
	converted   []string         // manual tags the legacy conversion made (custom:<name>)
	entry       *gtc.ImportEntry // nil when the element failed before the import service
	errors      []Issue
	warnings    []Issue
	pii         []gtc.PIIWarning
	dups        []gtc.DuplicateWarning
}

// Issue is the route's per-item error or warning, with the input it came from; Fields lists every schema problem
// of a VALIDATION_ERROR (its message names the first).
type Issue struct {
	Input string `json:"input,omitempty"`
	gtc.ImportIssue
	Fields []gtc.FieldError `json:"fields,omitempty"`
}

// Summary is the counts of a run, as gtc import --json prints them.
type Summary struct {
	Command           string         `json:"command"`
	Inputs            []string       `json:"inputs"`
	Total             int            `json:"total"`
	Imported          int            `json:"imported"`
	Skipped           int            `json:"skipped"`
	Failed            int            `json:"failed"`
	WarningCounts     map[string]int `json:"warningCounts"`
	PIIWarnings       int            `json:"piiWarnings"`
	DuplicateWarnings int            `json:"duplicateWarnings"`
	ErrorSamples      []Issue        `json:"errorSamples"`
	DryRun            bool           `json:"dryRun"`
	DurationMS        int64          `json:"durationMs"`
	ExitCode          int            `json:"exitCode"`
}

// ReportLine is one line of the report (gtc import --report): an item that was imported, failed, or was
// skipped with warnings.
type ReportLine struct {
	Input             string                 `json:"input"`
	Index             int                    `json:"index"`
	DatasetName       *string                `json:"datasetName"`
	ID                *string                `json:"id"`
	Action            string                 `json:"action"`
	Legacy            bool                   `json:"legacy,omitempty"`
	Errors            []Issue                `json:"errors"`
	Warnings          []Issue                `json:"warnings"`
	PIIWarnings       []gtc.PIIWarning       `json:"piiWarnings"`
	DuplicateWarnings []gtc.DuplicateWarning `json:"duplicateWarnings"`
}

// Run reads the sources in order and imports their elements batch by batch. An
// interruption (ctx ends) finishes the batch in flight and stops reading; it is not an
// error. Errors are a source that cannot be opened or read (BadInputError for input that is
// not JSON) and a BatchError.
func (im *Importer) Run(ctx context.Context, sources []Source) error {
	for _, src := range sources {
		if ctx.Err() != nil {
			return nil
		}
		r, err := src.Open(ctx)
		if err != nil {
			return fmt.Errorf("import: %s: %w", src.Name, err)
		}
		index := 0
		err = ReadElements(r, src.Name, src.Format, func(raw []byte) error {
			if ctx.Err() != nil {
				return errStopReading // the elements not yet sent are left alone
			}
			im.batch = append(im.batch, im.prepare(src.Name, index, raw))
			index++
			if len(im.batch) < im.BatchSize {
				return nil
			}
			return im.flush(ctx)
		})
		r.Close()
		if errors.Is(err, errStopReading) {
			return nil
		}
		if err != nil {
			if be := (*BatchError)(nil); errors.As(err, &be) {
				return err
			}
			// The elements before the broken spot are imported; the summary says how many.
			if ferr := im.flush(ctx); ferr != nil && !errors.Is(ferr, errStopReading) {
				return ferr
			}
			return fmt.Errorf("import: %s: %w", src.Name, err)
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
func (im *Importer) prepare(input string, index int, raw []byte) *item {
	it := &item{input: input, index: index}
	if doc, err := gtc.DecodeRawObject(raw); err == nil {
		it.datasetName, it.id = stringKey(doc, "datasetName"), stringKey(doc, "id")
		if migrate.IsLegacyElement(doc) {
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
	entries, err := codec.DecodeImport(body)
	if err == nil {
		err = im.Curator.CheckImportTags(entries)
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
func (im *Importer) convert(it *item, doc map[string]any) ([]byte, bool) {
	rec, rep := migrate.ConvertForImport(doc, im.Env)
	it.converted = rep.ConvertedTags
	for _, w := range rep.Warnings {
		it.warnings = append(it.warnings, Issue{ImportIssue: gtc.ImportIssue{Index: it.index, ItemID: it.id, Code: w.Code, Message: w.Message}})
	}
	if rep.Error != nil {
		it.fail(Issue{ImportIssue: gtc.ImportIssue{Index: it.index, ItemID: it.id, Code: rep.Error.Code, Message: rep.Error.Message}})
		return nil, false
	}
	out, err := json.Marshal(rec)
	if err != nil {
		it.fail(Issue{ImportIssue: gtc.ImportIssue{Index: it.index, ItemID: it.id, Code: migrate.CodeInvalidDocument, Message: err.Error()}})
		return nil, false
	}
	return out, true
}

func stringKey(doc map[string]any, key string) *string {
	if s, ok := doc[key].(string); ok {
		return &s
	}
	return nil
}

func (it *item) fail(iss Issue) { it.errors = append(it.errors, iss) }

// elementError is the per-item form of the 422 the route answers for a body holding this
// one element: code and message as the route gives them, paths numbered by the element's
// position in its input.
func elementError(err error, index int, raw []byte) Issue {
	ge, ok := gtc.AsError(err)
	if !ok {
		return Issue{ImportIssue: gtc.ImportIssue{Index: index, Code: gtc.CodeValidation, Message: err.Error()}}
	}
	if ge.Code == gtc.CodeInvalidJSON {
		// Parsed on its own, the element's syntax error points into the element, not into
		// the one-element array it was sent in.
		if _, perr := codec.ParseBody(raw); perr != nil {
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
	iss := Issue{ImportIssue: gtc.ImportIssue{Index: index, Code: ge.Code, Message: ge.Message}, Fields: fields}
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
func (im *Importer) flush(ctx context.Context) error {
	batch := im.batch
	im.batch = nil
	if len(batch) == 0 {
		return nil
	}
	var entries []*gtc.ImportEntry
	var pos []int
	opts := im.Options
	opts.ConvertedTags = nil
	for i, it := range batch {
		if it.entry != nil {
			entries = append(entries, it.entry)
			pos = append(pos, i)
			opts.ConvertedTags = append(opts.ConvertedTags, it.converted)
		}
	}
	if len(entries) > 0 {
		res, err := im.Curator.Import(context.WithoutCancel(ctx), entries, opts)
		im.Options.Batch++ // the index of the next batch's span
		if err != nil {
			return &BatchError{Err: err}
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
			it.errors = append(it.errors, Issue{ImportIssue: e})
		}
		for _, w := range res.Warnings {
			it := batch[pos[w.Index]]
			w.Index = it.index
			it.warnings = append(it.warnings, Issue{ImportIssue: w})
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
	if im.Batched != nil {
		im.Batched(&im.Sum)
	}
	if im.StoppedOnDup || ctx.Err() != nil {
		return errStopReading
	}
	return nil
}

// record counts one element and writes its report line.
func (im *Importer) record(it *item) {
	s := &im.Sum
	s.Total++
	action := "imported"
	if len(it.errors) > 0 {
		action = "failed"
		dupOnly := true
		for _, e := range it.errors {
			dupOnly = dupOnly && e.Code == gtc.CodeDuplicateID
		}
		switch {
		case dupOnly && !im.FailOnDup:
			action = "skipped"
		case dupOnly:
			im.StoppedOnDup = true
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
			if len(s.ErrorSamples) < ErrorSamples {
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
	if im.Report == nil || action == "skipped" && !warned {
		return
	}
	line := ReportLine{
		Input: it.input, Index: it.index, DatasetName: it.datasetName, ID: it.id, Action: action, Legacy: it.legacy,
		Errors: orEmpty(it.errors), Warnings: orEmpty(it.warnings), PIIWarnings: orEmpty(it.pii), DuplicateWarnings: orEmpty(it.dups),
	}
	if action == "skipped" {
		line.Errors = []Issue{} // an existing item is not an error under --on-conflict skip
	}
	im.Report(line)
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
