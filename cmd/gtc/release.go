package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/export"
)

const releaseUsage = `usage:
  gtc release create NAME [--dataset D]... [--status S] [--tag T]... [--exclude-tag T]...
                     [--split name=ratio,...] [--stratify-by GROUP] [--format F]... [--notes TEXT]
                     [--actor NAME]
  gtc release list [--limit N]
  gtc release show NAME [--json]
  gtc release get NAME [FILE] --out PATH|-
  gtc release delete NAME [--actor NAME]
  gtc release diff A B [--kind added|removed|changed] [--limit N]

A release is a named, immutable snapshot of the items a selection matches, each pinned at its
revision, written to the configured export storage (GTC_EXPORT_STORAGE_BACKEND) as
POST /v1/releases writes it: one data file per split and format, a dataset card (README.md),
and a manifest listing every item with its revision, split and sha256. A release's name is
never given to other content, not even after the release is deleted.

create  selects the approved items of every dataset; --status S takes another status ("" for
        every status), --dataset D (repeatable) only those datasets, --tag T (repeatable) only
        items carrying every tag given, --exclude-tag T (repeatable) no item carrying one.
        --split train=0.8,test=0.2 shares the items out by a hash of their dataset and id, so
        an item falls in the same split in every release (default: one split, "all");
        --stratify-by GROUP cuts each value of the tag group at the ratios. --format F
        (repeatable) names the formats (default jsonl and parquet); --notes goes into the
        manifest and the dataset card; createdBy is --actor (default cli:<user name>).
        Prints the name, item count, content hash and files.
list    the releases, newest first: name, created at, by, items, content hash.
show    a release's manifest head, split sizes and files; --json prints the manifest as stored.
get     downloads one file of a release (default manifest.json) to PATH, or to stdout with -.
delete  deletes a release's files and leaves a tombstone that keeps the name taken.
diff    what changed from release A to release B (B may be "current": the items A's selection
        matches now): the counts, the tags whose counts moved, then one line per added,
        removed or changed item (at most --limit, default 50), with a changed item's field
        changes below it.
`

func runRelease(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, releaseUsage)
		return usageError("release: give a subcommand: create, list, show, get, delete or diff")
	}
	switch args[0] {
	case "create":
		return runReleaseCreate(ctx, args[1:], stdout, stderr)
	case "list":
		return runReleaseList(ctx, args[1:], stdout, stderr)
	case "show":
		return runReleaseShow(ctx, args[1:], stdout, stderr)
	case "get":
		return runReleaseGet(ctx, args[1:], stdout, stderr)
	case "delete":
		return runReleaseDelete(ctx, args[1:], stdout, stderr)
	case "diff":
		return runReleaseDiff(ctx, args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, releaseUsage)
		return nil
	}
	fmt.Fprint(stderr, releaseUsage)
	return usageError("release: unknown subcommand %q", args[0])
}

// releaseUsageLines are the usage lines of the subcommands, as releaseUsage shows them.
var releaseUsageLines = map[string]string{}

func init() {
	for _, l := range strings.Split(releaseUsage, "\n  gtc release ")[1:] {
		l, _, _ = strings.Cut(l, "\n\n")
		name, _, _ := strings.Cut(l, " ")
		releaseUsageLines[name] = "gtc release " + l
	}
}

// newReleaseFlags is a subcommand's flag set; a bad flag prints the subcommand's usage and
// its flags.
func newReleaseFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("release "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: %s\n", releaseUsageLines[name])
		fs.PrintDefaults()
		fmt.Fprintln(stderr, "(gtc release help explains every subcommand)")
	}
	return fs
}

// parseSplits reads the values of --split: comma-separated name=ratio pairs, in order.
func parseSplits(values []string) ([]gtc.Split, error) {
	var out []gtc.Split
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			name, ratio, ok := strings.Cut(strings.TrimSpace(part), "=")
			if !ok || name == "" {
				return nil, fmt.Errorf("--split %q: must be name=ratio[,name=ratio...] (for example train=0.8,test=0.2)", v)
			}
			r, err := strconv.ParseFloat(ratio, 64)
			if err != nil {
				return nil, fmt.Errorf("--split %q: the ratio of %q is not a number", v, name)
			}
			out = append(out, gtc.Split{Name: name, Ratio: r})
		}
	}
	return out, nil
}

func runReleaseCreate(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs := newReleaseFlags("create", stderr)
	var datasets, tags, excludeTags, splits, formats stringList
	fs.Var(&datasets, "dataset", "only this dataset (repeatable)")
	var status optionalString
	fs.Var(&status, "status", `only items of this status (default approved; "" for every status)`)
	fs.Var(&tags, "tag", "only items carrying this tag (repeatable; every one)")
	fs.Var(&excludeTags, "exclude-tag", "no item carrying this tag (repeatable)")
	fs.Var(&splits, "split", "the splits, name=ratio,... (ratios add up to 1)")
	stratifyBy := fs.String("stratify-by", "", "cut each value of this tag group at the split ratios")
	fs.Var(&formats, "format", "a format of the data files (repeatable; default jsonl and parquet)")
	notes := fs.String("notes", "", "notes for the manifest and the dataset card")
	actor := fs.String("actor", "", "createdBy of the release (default cli:<user name>)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return usageError("release create: %v", err)
	}
	if len(pos) != 1 {
		return usageError("release create: give one NAME (gtc release help)")
	}
	req := &gtc.ReleaseRequest{Name: pos[0], StratifyBy: *stratifyBy, Notes: *notes}
	if len(datasets) > 0 {
		req.Datasets = datasets
	}
	if status.set {
		req.Status = &status.v
	}
	req.Tags, req.ExcludeTags = tags, excludeTags
	if req.Splits, err = parseSplits(splits); err != nil {
		return usageError("release create: %v", err)
	}
	if len(formats) > 0 {
		req.Formats = formats
	}
	if *actor == "" {
		*actor = "cli:" + osUser()
	}

	a, err := openApp(ctx, stderr)
	if err != nil {
		return err
	}
	defer func() { _ = a.Close() }()
	ctx, end := commandSpan(ctx, "job.release")
	defer end(&err)
	x, err := a.exporter(ctx)
	if err != nil {
		return err
	}
	rp, err := x.ResolveRelease(ctx, req, *actor)
	if err != nil {
		return releaseError(ctx, "create", err)
	}
	info, err := x.CreateRelease(ctx, rp)
	if err != nil {
		return releaseError(ctx, "create", err)
	}
	_, files, err := x.ReleaseFiles(ctx, info.Name)
	if err != nil {
		return releaseError(ctx, "create", err)
	}
	fmt.Fprintf(stdout, "release %s: %d items, %d records\n", info.Name, info.Count, info.Records)
	fmt.Fprintf(stdout, "content hash: %s\n", info.ContentHash)
	return printReleaseFiles(stdout, files)
}

// releaseFlags maps the fields of a release request's problems to the flags that set them.
var releaseFlags = []struct{ field, flag string }{
	{"name", "NAME"},
	{"notes", "--notes"},
	{"datasets", "--dataset"},
	{"filters.status", "--status"},
	{"filters.tags", "--tag"},
	{"filters.excludeTags", "--exclude-tag"},
	{"filters", "selection"},
	{"splits", "--split"},
	{"stratifyBy", "--stratify-by"},
	{"formats", "--format"},
}

var fieldIndex = regexp.MustCompile(`\[\d+\]$`)

// releaseFlagOf names the flag behind a field of a release request: "splits.train" is
// "--split train", "formats[1]" is "--format".
func releaseFlagOf(field string) string {
	field = fieldIndex.ReplaceAllString(field, "")
	for _, f := range releaseFlags {
		if field == f.field {
			return f.flag
		}
		if rest, ok := strings.CutPrefix(field, f.field+"."); ok {
			return f.flag + " " + rest
		}
	}
	return field
}

// releaseError maps the errors of the release subcommands: an invalid request (one problem
// a line), an unknown, taken or deleted name is a usage error (exit 2); anything else is
// fatal (exit 3).
func releaseError(ctx context.Context, cmd string, err error) error {
	if ctx.Err() != nil {
		return errInterrupted
	}
	ge, ok := gtc.AsError(err)
	if !ok {
		return fatal(fmt.Errorf("release %s: %s", cmd, describeError(err)))
	}
	switch ge.Code {
	case gtc.CodeValidation:
		var b strings.Builder
		fmt.Fprintf(&b, "release %s: the release was not made:", cmd)
		for _, f := range ge.Fields {
			fmt.Fprintf(&b, "\n  %s: %s", releaseFlagOf(f.Field), f.Message)
		}
		if ge.More > 0 {
			fmt.Fprintf(&b, "\n  (and %d more)", ge.More)
		}
		return usageError("%s", b.String())
	case gtc.CodeReleaseDeleted:
		msg := ge.Message
		if by, at := ge.Extra["deletedBy"], ge.Extra["deletedAt"]; by != nil && at != nil {
			msg += fmt.Sprintf(" by %v at %v", by, at)
		}
		return usageError("release %s: %s", cmd, msg)
	case gtc.CodeNotFound, gtc.CodeReleaseExists:
		return usageError("release %s: %s", cmd, ge.Message)
	}
	return fatal(fmt.Errorf("release %s: %s", cmd, describeError(export.AsRecordError(err))))
}

// printReleaseFiles prints a release's files, one a line: name, items, bytes, sha256.
func printReleaseFiles(w io.Writer, files []export.FileEntry) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FILE\tITEMS\tBYTES\tSHA256")
	for _, f := range files {
		items := strconv.Itoa(f.Items)
		if f.ContentType == gtc.ContentTypeMarkdown {
			items = "-" // the dataset card
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", f.Name, items, f.Bytes, f.SHA256)
	}
	return tw.Flush()
}

func runReleaseList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newReleaseFlags("list", stderr)
	limit := fs.Int("limit", 25, "print at most N releases, newest first (1-1000)")
	if err := fs.Parse(args); err != nil {
		return usageError("release list: %v", err)
	}
	if fs.NArg() > 0 {
		return usageError("release list: unexpected argument %q", fs.Arg(0))
	}
	if *limit < 1 || *limit > 1000 {
		return usageError("release list: --limit %d: must be between 1 and 1000", *limit)
	}
	a, x, err := openExporter(ctx, stderr)
	if err != nil {
		return err
	}
	defer func() { _ = a.Close() }()
	list, total, err := x.ListReleases(ctx, 0, *limit)
	if err != nil {
		return releaseError(ctx, "list", err)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tCREATED\tBY\tITEMS\tCONTENT HASH")
	for _, r := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", r.Name, r.CreatedAt, r.CreatedBy, r.Count, r.ContentHash)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d of %d releases\n", len(list), total)
	return nil
}

func runReleaseShow(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newReleaseFlags("show", stderr)
	asJSON := fs.Bool("json", false, "print the manifest as stored")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return usageError("release show: %v", err)
	}
	if len(pos) != 1 {
		return usageError("release show: give one NAME")
	}
	a, x, err := openExporter(ctx, stderr)
	if err != nil {
		return err
	}
	defer func() { _ = a.Close() }()
	if *asJSON {
		f, err := x.OpenReleaseFile(ctx, pos[0], "manifest.json")
		if err != nil {
			return releaseError(ctx, "show", err)
		}
		defer f.Body.Close()
		_, err = io.Copy(stdout, f.Body)
		return err
	}
	s, files, err := x.ReleaseFiles(ctx, pos[0])
	if err != nil {
		return releaseError(ctx, "show", err)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	line := func(label, value string) { fmt.Fprintf(tw, "%s\t%s\n", label, value) }
	line("release", s.Name)
	line("created", s.CreatedAt+" by "+s.CreatedBy)
	if s.Notes != "" {
		line("notes", strings.ReplaceAll(s.Notes, "\n", " "))
	}
	line("items", fmt.Sprintf("%d (%d records)", s.Count, s.Records))
	line("content hash", s.ContentHash)
	line("selection", selectionText(s.Selection))
	line("splits", splitsText(s.Counts.Splits, s.Selection["splits"]))
	if g, ok := s.Selection["stratifyBy"].(string); ok && g != "" {
		line("stratified by", g)
	}
	line("formats", listText(s.Selection["formats"], "-"))
	line("processors", listText(s.Selection["processors"], "none"))
	line("datasets", countsText(s.Counts.Datasets))
	line("statuses", countsText(s.Counts.Statuses))
	label := "tags"
	for _, group := range tagGroupsText(s.Counts.Tags) {
		line(label, group)
		label = ""
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(stdout)
	return printReleaseFiles(stdout, files)
}

// selectionText is a release's selection in words: status, datasets and tag filters.
func selectionText(sel map[string]any) string {
	status, _ := sel["status"].(string)
	if status == "" {
		status = "every status"
	}
	parts := []string{status, "datasets: " + listText(sel["datasets"], "all")}
	if t := listText(sel["tags"], ""); t != "" {
		parts = append(parts, "tags: "+t)
	}
	if t := listText(sel["excludeTags"], ""); t != "" {
		parts = append(parts, "excluding: "+t)
	}
	return strings.Join(parts, "; ")
}

// listText joins a JSON list of strings; none when it is empty or absent.
func listText(v any, none string) string {
	l, _ := v.([]any)
	if len(l) == 0 {
		return none
	}
	s := make([]string, len(l))
	for i, e := range l {
		s[i] = fmt.Sprint(e)
	}
	return strings.Join(s, ", ")
}

// splitsText is each split with its size and ratio, by name.
func splitsText(sizes map[string]int, ratios any) string {
	r, _ := ratios.(map[string]any)
	names := slices.Sorted(maps.Keys(r))
	for n := range sizes {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s %d", n, sizes[n])
		if ratio, ok := r[n]; ok {
			parts[i] += fmt.Sprintf(" (%v)", ratio)
		}
	}
	return strings.Join(parts, ", ")
}

// countsText is "key n" pairs by key; - when there are none.
func countsText(m map[string]int) string {
	if len(m) == 0 {
		return "-"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// tagGroupsText is a release's tag counts, one tag group a line: "topic: install 6, license 4".
func tagGroupsText(tags map[string]int) []string {
	if len(tags) == 0 {
		return []string{"-"}
	}
	var out []string
	last := ""
	for _, t := range slices.Sorted(maps.Keys(tags)) {
		group, value, _ := strings.Cut(t, ":")
		if len(out) == 0 || group != last {
			out = append(out, fmt.Sprintf("%s: %s %d", group, value, tags[t]))
			last = group
			continue
		}
		out[len(out)-1] += fmt.Sprintf(", %s %d", value, tags[t])
	}
	return out
}

func runReleaseGet(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return getFile(ctx, newReleaseFlags("get", stderr), args, stdout, stderr, "NAME", (*export.Exporter).OpenReleaseFile,
		func(err error) error { return releaseError(ctx, "get", err) })
}

func runReleaseDelete(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newReleaseFlags("delete", stderr)
	actor := fs.String("actor", "", "deletedBy of the tombstone (default cli:<user name>)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return usageError("release delete: %v", err)
	}
	if len(pos) != 1 {
		return usageError("release delete: give one NAME")
	}
	if *actor == "" {
		*actor = "cli:" + osUser()
	}
	a, x, err := openExporter(ctx, stderr)
	if err != nil {
		return err
	}
	defer func() { _ = a.Close() }()
	t, err := x.DeleteRelease(ctx, pos[0], *actor)
	if err != nil {
		return releaseError(ctx, "delete", err)
	}
	fmt.Fprintf(stdout, "release %s deleted by %s at %s; its name stays taken\n", t.Name, t.DeletedBy, t.DeletedAt)
	return nil
}

// releaseDiffKinds are the values of gtc release diff --kind.
var releaseDiffKinds = []string{"added", "removed", "changed"}

// maxReleaseDiffLimit bounds gtc release diff --limit.
const maxReleaseDiffLimit = 500

func runReleaseDiff(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newReleaseFlags("diff", stderr)
	kind := fs.String("kind", "", "only items of this kind: added, removed or changed (default all three)")
	limit := fs.Int("limit", 50, fmt.Sprintf("print at most N items (1-%d)", maxReleaseDiffLimit))
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return usageError("release diff: %v", err)
	}
	switch {
	case len(pos) != 2:
		return usageError(`release diff: give two releases, A B (B may be "current")`)
	case *kind != "" && !slices.Contains(releaseDiffKinds, *kind):
		return usageError("release diff: --kind %q: must be one of %s", *kind, strings.Join(releaseDiffKinds, ", "))
	case *limit < 1 || *limit > maxReleaseDiffLimit:
		return usageError("release diff: --limit %d: must be between 1 and %d", *limit, maxReleaseDiffLimit)
	}
	a, err := openApp(ctx, stderr)
	if err != nil {
		return err
	}
	defer func() { _ = a.Close() }()
	x, err := a.exporter(ctx)
	if err != nil {
		return err
	}
	d, err := diffReleases(ctx, x, pos[0], pos[1], *kind, *limit)
	if err != nil {
		return releaseError(ctx, "diff", err)
	}
	return printReleaseDiff(stdout, stderr, d)
}

// diffReleases compares release a with release b (or "current"): the first limit items of
// kind ("" for every kind), in (datasetName, id) order, with their field changes.
func diffReleases(ctx context.Context, x *export.Exporter, a, b, kind string, limit int) (*export.ReleaseDiff, error) {
	return x.DiffReleases(ctx, a, b, export.DiffOptions{Kind: kind, Limit: limit, Changes: true})
}

// printReleaseDiff prints a diff: a line of counts, the tag shifts, then one line per item
// (kind, dataset/id, revisions) with a changed item's field changes indented below it. A
// note on stderr says when items past the limit were left out.
func printReleaseDiff(stdout, stderr io.Writer, d *export.ReleaseDiff) error {
	fmt.Fprintf(stdout, "%s → %s: %d added, %d removed, %d changed, %d unchanged\n",
		d.From, d.To, d.Counts.Added, d.Counts.Removed, d.Counts.Changed, d.Counts.Unchanged)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	if len(d.TagShift) > 0 {
		fmt.Fprintln(tw, "tag shift:")
		for _, s := range d.TagShift {
			fmt.Fprintf(tw, "  %s\t%d → %d\t%+d\n", s.Tag, s.From, s.To, s.Delta)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	rev := func(r *int64) string {
		if r == nil {
			return "-"
		}
		return "r" + strconv.FormatInt(*r, 10)
	}
	for _, it := range d.Items {
		fmt.Fprintf(tw, "%s\t%s/%s\t%s → %s\n", it.Kind, it.DatasetName, it.ID, rev(it.FromRevision), rev(it.ToRevision))
		if it.Kind != "changed" {
			continue
		}
		if it.ChangesUnavailable != "" {
			fmt.Fprintf(tw, "  \t(changes unknown: %s)\n", it.ChangesUnavailable)
			continue
		}
		for _, op := range it.Changes {
			fmt.Fprintf(tw, "  \t%s %s\t%s → %s\n", op.Op, pathName(op.Path), shortValue(op.Old), shortValue(op.Value))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if d.NextCursor != nil {
		fmt.Fprintf(stderr, "release diff: more items than the %d shown (raise --limit or narrow --kind)\n", len(d.Items))
	}
	return nil
}
