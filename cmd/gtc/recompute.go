package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/gtc-dev/gtc"
)

// runRecompute is `gtc recompute-tags`: the same service as POST /v1/ground-truths/recompute-tags,
// in process.
func runRecompute(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs := flag.NewFlagSet("recompute-tags", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataset := fs.String("dataset", "", "only this dataset")
	status := fs.String("status", "", "only items with this status (draft, approved, skipped, deleted)")
	dryRun := fs.Bool("dry-run", false, "count what would change, write nothing")
	batch := fs.Int("batch-size", 0, "items per page (default GTC_RECOMPUTE_BATCH_SIZE)")
	asJSON := fs.Bool("json", false, "print the summary as one JSON object")
	mode := fs.String("progress", "auto", "progress display: auto, bar, log, none")
	report := fs.String("report", "", "write one JSON line per changed or failed item to this file")
	if err := fs.Parse(args); err != nil {
		return usageError("recompute-tags: %v", err)
	}
	if fs.NArg() > 0 {
		return usageError("recompute-tags: unexpected argument %q", fs.Arg(0))
	}
	req := gtc.RecomputeRequest{DryRun: *dryRun}
	if *dataset != "" {
		req.Dataset = dataset
	}
	if *status != "" {
		st := gtc.Status(*status)
		if !st.Valid() {
			return usageError("recompute-tags: --status %q: must be one of %s", *status, gtc.StatusList)
		}
		req.Status = &st
	}
	if !slices.Contains(progressModes, *mode) {
		return usageError("recompute-tags: --progress %q: must be one of auto, bar, log, none", *mode)
	}
	if *batch < 0 || *batch > 1000 {
		return usageError("recompute-tags: --batch-size %d: must be between 1 and 1000", *batch)
	}
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	if *batch > 0 {
		cfg.RecomputeBatchSize = *batch
	}
	log := newLogger(cfg, stderr)
	a, err := newApp(ctx, cfg, log, true)
	if err != nil {
		return err
	}
	defer func() { _ = a.Close() }()
	ctx, end := commandSpan(ctx, "job.recompute-tags")
	defer end(&err)

	var rep *bufio.Writer
	if *report != "" {
		f, err := os.Create(*report)
		if err != nil {
			return fatal(fmt.Errorf("report: %w", err))
		}
		defer f.Close()
		rep = bufio.NewWriter(f)
		defer rep.Flush()
	}
	if *asJSON {
		*mode = "none"
	}
	prog := newProgress(*mode, "recompute-tags", stderr)
	hooks := gtc.RecomputeHooks{
		Progress: func(p gtc.JobProgress) {
			total := -1
			if p.Total != nil {
				total = *p.Total
			}
			prog.update(p.Processed+p.Errors, total, fmt.Sprintf("updated %d  skipped %d  errors %d", p.Updated, p.Skipped, p.Errors))
			if rep != nil {
				_ = rep.Flush() // the report survives an interruption
			}
		},
		Stopped: func() bool { return ctx.Err() != nil },
	}
	if rep != nil {
		enc := json.NewEncoder(rep)
		enc.SetEscapeHTML(false)
		hooks.Item = func(it gtc.RecomputeItem) { _ = enc.Encode(it) }
	}
	// Store work runs to the end of the page in flight even after a signal; the service
	// stops between pages.
	res, err := a.curator.RecomputeTags(context.WithoutCancel(ctx), req, hooks)
	prog.finish()
	if err != nil {
		return fatal(fmt.Errorf("recompute-tags: %w", err))
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(res); err != nil {
			return err
		}
	} else {
		verb := "updated"
		if res.DryRun {
			verb = "would update"
		}
		fmt.Fprintf(stdout, "recompute-tags: %d matched, %d processed, %s %d, %d unchanged, %d errors in %d ms\n",
			res.Total, res.Processed, verb, res.Updated, res.Skipped, len(res.Errors), res.DurationMS)
		for i, e := range res.Errors {
			if i == 20 {
				fmt.Fprintf(stdout, "  … and %d more errors\n", len(res.Errors)-20)
				break
			}
			fmt.Fprintln(stdout, "  "+e)
		}
	}
	if ctx.Err() != nil {
		return errInterrupted
	}
	if len(res.Errors) > 0 {
		return &exitError{code: exitItemsFailed, err: fmt.Errorf("recompute-tags: %d items failed", len(res.Errors))}
	}
	return nil
}
