package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/history"
)

const historyUsage = "usage: gtc history DATASET ID [--diff R1..R2] [--limit N]"

// historyValueBytes is how much of a value a diff line shows before it is shortened.
const historyValueBytes = 80

// runHistory is `gtc history`: an item's revisions, newest first, or with --diff the changes
// between two of them. It reads the configured store in process, through package history
// like the API's history routes.
func runHistory(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("history", flag.ContinueOnError)
	fs.SetOutput(stderr)
	diff := fs.String("diff", "", "print the changes from revision R1 to R2 (R1..R2; R1.. = to the current one)")
	limit := fs.Int("limit", 50, "print at most N revisions, newest first")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return usageError("history: %v", err)
	}
	if len(pos) != 2 {
		return usageError("history: %s", historyUsage)
	}
	if *limit < 1 {
		return usageError("history: --limit %d: must be at least 1", *limit)
	}
	var from, to int64
	if *diff != "" {
		if from, to, err = parseRevisionRange(*diff); err != nil {
			return usageError("history: --diff %q: %v", *diff, err)
		}
	}
	a, err := openApp(ctx, stderr)
	if err != nil {
		return err
	}
	defer func() { _ = a.Close() }()
	k, err := a.store.Items().Locate(ctx, pos[0], pos[1])
	if err != nil {
		return historyError(pos[0], pos[1], err)
	}
	if *diff != "" {
		from, to, ops, err := history.Diff(ctx, a.curator, k, from, to)
		if err != nil {
			return historyError(pos[0], pos[1], err)
		}
		return printDiff(stdout, k, from, to, ops)
	}
	return printRevisions(ctx, stdout, stderr, a.curator, k, *limit)
}

// parseRevisionRange reads R1..R2 or R1.. (to = 0: the current revision).
func parseRevisionRange(s string) (from, to int64, err error) {
	a, b, ok := strings.Cut(s, "..")
	if !ok {
		return 0, 0, errors.New("must be R1..R2 or R1.. (for example 3..5)")
	}
	if from, err = strconv.ParseInt(a, 10, 64); err != nil || from < 1 {
		return 0, 0, fmt.Errorf("revision %q: must be a positive integer", a)
	}
	if b == "" {
		return from, 0, nil
	}
	if to, err = strconv.ParseInt(b, 10, 64); err != nil || to < 1 {
		return 0, 0, fmt.Errorf("revision %q: must be a positive integer", b)
	}
	if from > to {
		return 0, 0, errors.New("R1 must not be after R2")
	}
	return from, to, nil
}

// historyError maps the errors of reading a history: an unknown item or revision is a usage
// error (exit 2), anything else fatal.
func historyError(dataset, id string, err error) error {
	var ce *gtc.ConflictError
	switch {
	case errors.Is(err, gtc.ErrNotFound):
		return usageError("history: no item %s/%s", dataset, id)
	case errors.As(err, &ce) && len(ce.All) > 1:
		buckets := make([]string, len(ce.All))
		for i, k := range ce.All {
			buckets[i] = k.Bucket
		}
		return fatal(fmt.Errorf("history: %s/%s is in %d buckets (%s); gtc migrate reports such items", dataset, id, len(buckets), strings.Join(buckets, ", ")))
	}
	if ge, ok := gtc.AsError(err); ok && ge.Code == gtc.CodeNotFound {
		if ge.Message == gtc.MsgItemNotFound {
			return usageError("history: no item %s/%s", dataset, id)
		}
		return usageError("history: %s", ge.Message)
	}
	return fatal(fmt.Errorf("history: %s", describeError(err)))
}

// printRevisions prints up to limit revisions, newest first, one a line: number, time,
// actor, source and the changed paths. A note on stderr says when older ones are left out.
func printRevisions(ctx context.Context, stdout, stderr io.Writer, c *gtc.Curator, k gtc.Key, limit int) error {
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	shown, cursor := 0, ""
	var last int64
	for shown < limit {
		page, err := history.Page(ctx, c, k, cursor, min(limit-shown, history.MaxLimit))
		if err != nil {
			return historyError(k.DatasetName, k.ID, err)
		}
		for _, r := range page.Revisions {
			fmt.Fprintf(tw, "r%d\t%s\t%s\t%s\t%s\n", r.Number, r.At.UTC().Format(time.RFC3339), r.Actor, revisionSource(r), pathList(r.Paths()))
			shown, last = shown+1, r.Number
		}
		if cursor = page.Next; cursor == "" {
			break
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	switch {
	case shown == 0:
		fmt.Fprintf(stderr, "history: %s/%s has no recorded revisions\n", k.DatasetName, k.ID)
	case cursor != "":
		fmt.Fprintf(stderr, "history: older revisions than r%d not shown (raise --limit)\n", last)
	}
	return nil
}

// revisionSource is the source, with the operation id when the source does not name it.
func revisionSource(r *gtc.Revision) string {
	if r.OperationID != "" && !strings.Contains(r.Source, r.OperationID) {
		return r.Source + " (" + r.OperationID + ")"
	}
	return r.Source
}

func pathList(paths []string) string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = pathName(p)
	}
	return strings.Join(out, ", ")
}

func pathName(p string) string {
	if p == "" {
		return "(whole item)"
	}
	return p
}

// printDiff prints a header and one line per change: op, path, old → new.
func printDiff(w io.Writer, k gtc.Key, from, to int64, ops []gtc.PatchOp) error {
	changes := "changes"
	if len(ops) == 1 {
		changes = "change"
	}
	fmt.Fprintf(w, "%s/%s r%d..r%d: %d %s\n", k.DatasetName, k.ID, from, to, len(ops), changes)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, op := range ops {
		fmt.Fprintf(tw, "%s\t%s\t%s → %s\n", op.Op, pathName(op.Path), shortValue(op.Old), shortValue(op.Value))
	}
	return tw.Flush()
}

// shortValue shows a value as compact JSON, shortened past historyValueBytes with an
// ellipsis and its size; (none) when absent.
func shortValue(v json.RawMessage) string {
	if len(v) == 0 {
		return "(none)"
	}
	var b bytes.Buffer
	if err := json.Compact(&b, v); err != nil {
		b.Reset()
		b.Write(v)
	}
	s := b.String()
	if len(s) <= historyValueBytes {
		return s
	}
	n := historyValueBytes
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return fmt.Sprintf("%s… (%d bytes)", s[:n], len(s))
}
