package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/export"
)

const exportUsage = `usage:
  gtc export [--format NAME] [--status S] [--dataset NAME]... [--processors a,b | --no-processors]
             (--out PATH|- | --artifact) [--actor NAME] [--json] [--progress MODE]
  gtc export list [--page N] [--limit N] [--json]
  gtc export show SNAPSHOT_ID
  gtc export get SNAPSHOT_ID [FILE] --out PATH|-
  gtc export prune --incomplete [--older-than DURATION] [--dry-run]
  gtc export prune --complete --older-than DURATION [--dry-run]

Exports items through the same pipeline as POST /v1/ground-truths/snapshot, in process: the
items matching --status (default approved; "" for every status) and --dataset, in
(datasetName, id) order, through the processors (default GTC_EXPORT_PROCESSOR_ORDER), then the
formatter: json_snapshot_payload (default), json_items, jsonl, csv or parquet (an Apache
Parquet file, one row per record; the README lists its columns).

  --out PATH   writes the body to a temporary file next to PATH and renames it when complete,
               so a failed export never leaves a partial file under PATH; --out - writes to stdout.
  --artifact   writes a snapshot to the configured export storage (GTC_EXPORT_STORAGE_BACKEND)
               and prints its summary.

Processors: merge_tags (tags = sorted union of manualTags and computedTags), strip_internal
(removes GTC_EXPORT_INTERNAL_FIELDS), split_turns (one record per answered exchange, ids
<id>__t<k>). For the built-ins the order of the chain does not change the result; a custom
processor that reads history sees single-turn records only after split_turns.

CSV: cells are written as they are, with no spreadsheet-formula escaping, so that the file
round-trips; do not open an export of untrusted data in a spreadsheet program.

list, show and get read stored snapshots (newest first); prune deletes reserved-but-incomplete
snapshot directories (default older than 24h) or, with --complete, complete snapshots older than
--older-than (e.g. 90d). Both list what they delete; --dry-run deletes nothing.
`

// stringList is a repeatable flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

// optionalString records whether the flag was given, so that an explicit "" differs from
// the default.
type optionalString struct {
	v   string
	set bool
}

func (o *optionalString) String() string     { return o.v }
func (o *optionalString) Set(v string) error { o.v, o.set = v, true; return nil }

// parseInterspersed parses args with fs, letting flags follow the positional arguments
// (fs.Parse alone stops at the first one), and returns the positional arguments.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	return pos, nil
}

func runExport(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	if len(args) > 0 {
		switch args[0] {
		case "list":
			return runExportList(ctx, args[1:], stdout, stderr)
		case "show":
			return runExportShow(ctx, args[1:], stdout, stderr)
		case "get":
			return runExportGet(ctx, args[1:], stdout, stderr)
		case "prune":
			return runExportPrune(ctx, args[1:], stdout, stderr)
		case "help", "-h", "--help":
			fmt.Fprint(stdout, exportUsage)
			return nil
		}
	}
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, exportUsage) }
	format := fs.String("format", export.DefaultFormat, "json_snapshot_payload, json_items, jsonl, csv or parquet")
	var status optionalString
	fs.Var(&status, "status", `only items of this status (default approved; "" for every status)`)
	var datasets stringList
	fs.Var(&datasets, "dataset", "only this dataset (repeatable)")
	var processors optionalString
	fs.Var(&processors, "processors", "processor chain, comma-separated (default GTC_EXPORT_PROCESSOR_ORDER)")
	noProcessors := fs.Bool("no-processors", false, "run no processor")
	out := fs.String("out", "", "write the body to this file, or - for stdout")
	artifact := fs.Bool("artifact", false, "write a snapshot to the configured export storage")
	actor := fs.String("actor", "", "createdBy of an artifact (default cli:<user name>)")
	asJSON := fs.Bool("json", false, "print the summary as one JSON object")
	mode := fs.String("progress", "auto", "progress display: auto, bar, log, none")
	if err := fs.Parse(args); err != nil {
		return usageError("export: %v", err)
	}
	switch {
	case fs.NArg() > 0:
		return usageError("export: unexpected argument %q", fs.Arg(0))
	case (*out == "") == !*artifact:
		return usageError("export: give exactly one of --out PATH|- and --artifact")
	case processors.set && *noProcessors:
		return usageError("export: --processors and --no-processors exclude each other")
	case *out == "-" && *asJSON:
		return usageError("export: --json needs stdout, which --out - uses for the export")
	case !slices.Contains(progressModes, *mode):
		return usageError("export: --progress %q: must be one of auto, bar, log, none", *mode)
	}
	req := &gtc.ExportRequest{Format: format, Mode: gtc.DeliveryStream}
	if status.set {
		req.Status = &status.v
	}
	if len(datasets) > 0 {
		ds := []string(datasets)
		req.DatasetNames = &ds
	}
	if *noProcessors {
		req.Processors = &[]string{}
	} else if processors.set {
		names, _ := export.ParseProcessorOrder(processors.v)
		if names == nil {
			names = []string{}
		}
		req.Processors = &names
	}
	if *artifact {
		req.Mode = gtc.DeliveryArtifact
	}
	if *actor == "" {
		*actor = "cli:" + osUser()
	}

	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	log := newLogger(cfg, stderr)
	a, err := newApp(ctx, cfg, log, true)
	if err != nil {
		return err
	}
	defer func() { _ = a.Close() }()
	ctx, end := commandSpan(ctx, "job.export")
	defer end(&err)
	x, err := a.exporter(ctx)
	if err != nil {
		return err
	}
	plan, err := x.Resolve(req, *actor)
	if err != nil {
		return usageError("export: %s", describeError(err))
	}

	// The total for the progress bar is a count taken before the run.
	total := -1
	if n, err := a.store.Items().Count(ctx, gtc.Filter{Statuses: plan.Statuses, DatasetNames: plan.DatasetNames}); err == nil {
		total = n
	}
	if *asJSON || *out == "-" && !isTerminal(stderr) && *mode == "auto" {
		*mode = "none"
	}
	prog := newProgress(*mode, "export", stderr)
	ctx = export.WithProgress(ctx, func(items int) { prog.update(items, total, "") })

	if *artifact {
		res, err := x.Artifact(ctx, plan)
		prog.finish()
		if err != nil {
			return exportFailed(ctx, err)
		}
		summary := map[string]any{
			"status": "ok", "snapshotId": res.SnapshotID, "snapshotDir": res.SnapshotDir,
			"manifestPath": res.ManifestPath, "count": res.Count, "storage": cfg.ExportStorageBackend,
		}
		return writeJSONLine(stdout, summary)
	}

	if *out == "-" {
		res, err := x.Stream(ctx, plan, stdout, nil)
		prog.finish()
		if err != nil {
			return exportFailed(ctx, err)
		}
		fmt.Fprintf(stderr, "export: %d records, %d bytes to stdout\n", res.Count, res.Bytes)
		return nil
	}
	res, err := writeFileAtomically(*out, func(w io.Writer) (export.Result, error) { return x.Stream(ctx, plan, w, nil) })
	prog.finish()
	if err != nil {
		return exportFailed(ctx, err)
	}
	if *asJSON {
		return writeJSONLine(stdout, map[string]any{"status": "ok", "file": *out, "count": res.Count, "bytes": res.Bytes,
			"format": plan.Formatter.Name(), "snapshotAt": res.SnapshotAt})
	}
	fmt.Fprintf(stdout, "export: %d records, %d bytes written to %s\n", res.Count, res.Bytes, *out)
	return nil
}

// writeFileAtomically writes to a temporary file next to path and renames it onto path
// only when fn succeeds.
func writeFileAtomically[T any](path string, fn func(io.Writer) (T, error)) (T, error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		var zero T
		return zero, fatal(err)
	}
	res, err := fn(tmp)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return res, err
	}
	return res, nil
}

// exportFailed maps an export error to the command's exit: interrupted, or fatal with the
// message a user can act on.
func exportFailed(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return errInterrupted
	}
	return fatal(fmt.Errorf("export: %s", describeError(export.AsRecordError(err))))
}

// describeError is the user-facing text of an error: an API error with every field problem
// (unknown names list the known ones), or the error itself.
func describeError(err error) string {
	ge, ok := gtc.AsError(err)
	if !ok {
		return err.Error()
	}
	if len(ge.Fields) == 0 {
		msg := ge.Message
		if cause := errors.Unwrap(err); cause != nil && cause != error(ge) {
			msg += " (" + err.Error() + ")"
		}
		return msg
	}
	var parts []string
	for _, f := range ge.Fields {
		parts = append(parts, f.Field+": "+f.Message)
	}
	return strings.Join(parts, "; ")
}

func osUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if n := os.Getenv("USER"); n != "" {
		return n
	}
	return "unknown"
}

func writeJSONLine(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// openExporter builds the exporter of the snapshot subcommands. They only read and prune
// stored snapshots, so the item store (and the tag engine) is not opened: they work while
// the store is unreachable, and on Cosmos DB they skip its startup checks.
func openExporter(ctx context.Context, stderr io.Writer) (*app, *export.Exporter, error) {
	cfg, err := loadConfig()
	if err != nil {
		return nil, nil, err
	}
	log := newLogger(cfg, stderr)
	for _, w := range cfg.Warnings() {
		log.Warn(w)
	}
	a := &app{cfg: cfg, log: log, clock: gtc.SystemClock{}}
	x, err := a.exporter(ctx)
	if err != nil {
		_ = a.Close()
		return nil, nil, err
	}
	return a, x, nil
}

// snapshotError maps the errors of reading stored snapshots: a missing snapshot or file is
// a usage error (exit 2), anything else fatal.
func snapshotError(cmd string, err error) error {
	if ge, ok := gtc.AsError(err); ok && ge.Code == gtc.CodeNotFound {
		return usageError("export %s: %s", cmd, ge.Message)
	}
	return fatal(fmt.Errorf("export %s: %s", cmd, describeError(err)))
}

func runExportList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("export list", flag.ContinueOnError)
	fs.SetOutput(stderr)
	page := fs.Int("page", 1, "1-based page")
	limit := fs.Int("limit", 25, "snapshots per page (1-1000)")
	asJSON := fs.Bool("json", false, "print the page as one JSON object")
	if err := fs.Parse(args); err != nil {
		return usageError("export list: %v", err)
	}
	if fs.NArg() > 0 {
		return usageError("export list: unexpected argument %q", fs.Arg(0))
	}
	if *page < 1 || *limit < 1 || *limit > 1000 {
		return usageError("export list: --page must be at least 1 and --limit between 1 and 1000")
	}
	a, x, err := openExporter(ctx, stderr)
	if err != nil {
		return err
	}
	defer func() { _ = a.Close() }()
	list, total, err := x.ListSnapshots(ctx, (*page-1)**limit, *limit)
	if err != nil {
		return snapshotError("list", err)
	}
	if *asJSON {
		items := make([]map[string]any, len(list))
		for i, s := range list {
			items[i] = map[string]any{"snapshotId": s.SnapshotID, "snapshotAt": s.SnapshotAt, "createdAt": s.CreatedAt,
				"createdBy": s.CreatedBy, "format": s.Format, "count": s.Count, "datasetNames": s.DatasetNames,
				"fileCount": s.FileCount, "totalBytes": s.TotalBytes}
		}
		return writeJSONLine(stdout, map[string]any{"items": items, "total": total, "page": *page, "limit": *limit})
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SNAPSHOT\tCREATED\tBY\tFORMAT\tITEMS\tFILES\tBYTES")
	for _, s := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\n", s.SnapshotID, deref(s.CreatedAt), deref(s.CreatedBy), deref(s.Format),
			countText(s.Count), s.FileCount, s.TotalBytes)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d of %d snapshots (page %d)\n", len(list), total, *page)
	return nil
}

func deref(s *string) string {
	if s == nil {
		return "-"
	}
	return *s
}

func countText(n *json.Number) string {
	if n == nil {
		return "-"
	}
	return n.String()
}

func runExportShow(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) != 1 || strings.HasPrefix(args[0], "-") {
		return usageError("export show: give one SNAPSHOT_ID")
	}
	a, x, err := openExporter(ctx, stderr)
	if err != nil {
		return err
	}
	defer func() { _ = a.Close() }()
	m, err := x.OpenManifest(ctx, args[0])
	if err != nil {
		return snapshotError("show", err)
	}
	defer m.Body.Close()
	_, err = io.Copy(stdout, m.Body)
	return err
}

func runExportGet(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("export get", flag.ContinueOnError)
	fs.SetOutput(stderr)
	return getFile(ctx, fs, args, stdout, stderr, "SNAPSHOT_ID", (*export.Exporter).OpenFile,
		func(err error) error { return snapshotError("get", err) })
}

// getFile is gtc export get and gtc release get, whose flag set fs names the command: ID
// [FILE] --out PATH|-, FILE defaulting to manifest.json. open opens a file of the snapshot or
// release ID (idName in the usage); fail maps its error to the command's.
func getFile(ctx context.Context, fs *flag.FlagSet, args []string, stdout, stderr io.Writer, idName string,
	open func(x *export.Exporter, ctx context.Context, id, name string) (*export.SnapshotFile, error),
	fail func(error) error) error {
	cmd := fs.Name()
	out := fs.String("out", "", "file to write, or - for stdout")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return usageError("%s: %v", cmd, err)
	}
	if len(pos) < 1 || len(pos) > 2 || *out == "" {
		return usageError("%s: usage: gtc %s %s [FILE] --out PATH|- (FILE defaults to manifest.json)", cmd, cmd, idName)
	}
	name := "manifest.json"
	if len(pos) == 2 {
		name = pos[1]
	}
	a, x, err := openExporter(ctx, stderr)
	if err != nil {
		return err
	}
	defer func() { _ = a.Close() }()
	f, err := open(x, ctx, pos[0], name)
	if err != nil {
		return fail(err)
	}
	defer f.Body.Close()
	return saveFile(stdout, cmd, f, *out)
}

// saveFile writes a downloaded file to stdout (out "-") or to out, through a temporary file
// renamed when complete, and says so; cmd names the command in messages.
func saveFile(stdout io.Writer, cmd string, f *export.SnapshotFile, out string) error {
	if out == "-" {
		_, err := io.Copy(stdout, f.Body)
		return err
	}
	_, err := writeFileAtomically(out, func(w io.Writer) (export.Result, error) {
		n, err := io.Copy(w, f.Body)
		return export.Result{Bytes: n}, err
	})
	if err != nil {
		return fatal(fmt.Errorf("%s: %w", cmd, err))
	}
	fmt.Fprintf(stdout, "%s: %s (%d bytes) written to %s\n", cmd, f.Name, f.Size, out)
	return nil
}

// parseAge parses a Go duration or a number of days such as "90d".
func parseAge(s string) (time.Duration, error) {
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseFloat(d, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("invalid duration %q", s)
		}
		return time.Duration(n * float64(24*time.Hour)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("invalid duration %q (use e.g. 36h or 90d)", s)
	}
	return d, nil
}

func runExportPrune(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("export prune", flag.ContinueOnError)
	fs.SetOutput(stderr)
	incomplete := fs.Bool("incomplete", false, "delete reserved snapshots that never got a manifest")
	complete := fs.Bool("complete", false, "delete complete snapshots (needs --older-than)")
	var olderThan optionalString
	fs.Var(&olderThan, "older-than", "only snapshots older than this (e.g. 24h, 90d; default 24h with --incomplete)")
	dryRun := fs.Bool("dry-run", false, "list what would be deleted, delete nothing")
	if err := fs.Parse(args); err != nil {
		return usageError("export prune: %v", err)
	}
	switch {
	case fs.NArg() > 0:
		return usageError("export prune: unexpected argument %q", fs.Arg(0))
	case *incomplete == *complete:
		return usageError("export prune: give exactly one of --incomplete and --complete")
	case *complete && !olderThan.set:
		return usageError("export prune: --complete needs --older-than (e.g. --older-than 90d)")
	}
	age := 24 * time.Hour
	if olderThan.set {
		d, err := parseAge(olderThan.v)
		if err != nil {
			return usageError("export prune: --older-than: %v", err)
		}
		age = d
	}
	a, x, err := openExporter(ctx, stderr)
	if err != nil {
		return err
	}
	defer func() { _ = a.Close() }()
	pruned, err := x.Prune(ctx, export.PruneOptions{Incomplete: *incomplete, Complete: *complete, OlderThan: age, DryRun: *dryRun})
	verb := "deleted"
	if *dryRun {
		verb = "would delete"
	}
	for _, p := range pruned {
		kind := "incomplete"
		if p.Complete {
			kind = "complete"
		}
		fmt.Fprintf(stdout, "%s %s snapshot %s (last written %s, %d objects)\n", verb, kind, p.SnapshotID,
			p.Modified.UTC().Format(time.RFC3339), p.Objects)
	}
	if err != nil {
		return snapshotError("prune", err)
	}
	fmt.Fprintf(stdout, "export prune: %s %d snapshots\n", verb, len(pruned))
	return nil
}
