package agenttools

import (
	"context"
	"fmt"
	"strings"

	gtc "github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/export"
)

// ReleaseDiffer compares two releases, or a release with the items its selection holds now
// (export.CurrentRelease); *export.Exporter is one.
type ReleaseDiffer interface {
	DiffReleases(ctx context.Context, a, b string, opts export.DiffOptions) (*export.ReleaseDiff, error)
}

// Limits of the compare_releases answer: at most 100 items a call (the schema), at most
// cmpMaxTags tags of the tag shift, each changed item's changes bounded as get_item_history
// bounds a revision's (histMaxChanges changes, values shortened, one value budget for the
// answer). The text shows cmpTextTags tags and histTextChanges changes per item.
const (
	cmpMaxTags  = 100
	cmpTextTags = 10
)

// CompareData is the data of a compare_releases answer: the comparison's counts and tag
// shift, and one page of its items.
type CompareData struct {
	From     string            `json:"from"`
	To       string            `json:"to"`
	Counts   export.DiffCounts `json:"counts"`
	TagShift []export.TagShift `json:"tagShift"`
	// MoreTags counts the tags of the shift past cmpMaxTags, left out.
	MoreTags int           `json:"moreTags,omitempty"`
	Items    []CompareItem `json:"items"`
	// NextCursor continues with the next items; nil after the last.
	NextCursor *string `json:"nextCursor"`
}

// CompareItem is one added, removed or changed item. Changes (changed items) are the
// field-level changes between the two revisions, MoreChanges those left out;
// ChangesUnavailable says why there are none when the history cannot give them.
type CompareItem struct {
	Kind               string          `json:"kind"`
	DatasetName        string          `json:"datasetName"`
	Bucket             string          `json:"bucket"`
	ID                 string          `json:"id"`
	FromRevision       *int64          `json:"fromRevision,omitempty"`
	ToRevision         *int64          `json:"toRevision,omitempty"`
	Changes            []HistoryChange `json:"changes,omitzero"`
	MoreChanges        int             `json:"moreChanges,omitempty"`
	ChangesUnavailable string          `json:"changesUnavailable,omitempty"`
}

// CompareReleases is the compare_releases tool: what changed from release from to release
// to (or to the current items). Args: from, to, kind (optional), limit, cursor (optional).
func (r *Reads) CompareReleases(ctx context.Context, args map[string]any) ToolResult {
	const tool = ToolCompareReleases
	if r.rel == nil {
		return ToolFailure(CodeNotFound, "Not found: releases are not available on this server.", nil)
	}
	ctx, cancel := r.begin(ctx)
	defer cancel()
	from, to, cursor := argString(args, "from"), argString(args, "to"), argString(args, "cursor")
	d, err := r.rel.DiffReleases(ctx, from, to, export.DiffOptions{Kind: argString(args, "kind"),
		Limit: argInt(args, "limit", 20), Cursor: cursor, Changes: true})
	if ge, ok := gtc.AsError(err); ok {
		switch ge.Code {
		case gtc.CodeNotFound:
			return ToolFailure(CodeNotFound, "Not found: "+ge.Message+". Release names are case-sensitive.", nil)
		case gtc.CodeReleaseDeleted:
			return ToolFailure(CodeNotFound, fmt.Sprintf("Not found: %s (on %v by %v).", ge.Message, ge.Extra["deletedAt"], ge.Extra["deletedBy"]), ge.Extra)
		case gtc.CodeValidation:
			probs := make([]FieldProblem, len(ge.Fields))
			for i, f := range ge.Fields {
				probs[i] = FieldProblem{Field: f.Field, Message: f.Message}
			}
			msg := "Invalid input: " + ge.Message
			if len(ge.Fields) > 0 {
				msg = "Invalid input: " + ge.Fields[0].Field + ": " + ge.Fields[0].Message + "."
			}
			return ToolFailure(CodeInvalidInput, msg, map[string]any{"fields": probs})
		}
	}
	if err != nil {
		return r.failure(ctx, tool, "compare the releases", err)
	}
	data := CompareData{From: d.From, To: d.To, Counts: d.Counts, TagShift: d.TagShift, Items: []CompareItem{}, NextCursor: d.NextCursor}
	if len(data.TagShift) > cmpMaxTags {
		data.MoreTags = len(data.TagShift) - cmpMaxTags
		data.TagShift = data.TagShift[:cmpMaxTags]
	}
	budget := histValueBudget
	for _, it := range d.Items {
		c := CompareItem{Kind: it.Kind, DatasetName: it.DatasetName, Bucket: it.Bucket, ID: it.ID,
			FromRevision: it.FromRevision, ToRevision: it.ToRevision, ChangesUnavailable: it.ChangesUnavailable}
		if it.Changes != nil {
			ops := it.Changes[:min(len(it.Changes), histMaxChanges)]
			c.MoreChanges = len(it.Changes) - len(ops)
			c.Changes = make([]HistoryChange, len(ops))
			for i, op := range ops {
				h := HistoryChange{Op: op.Op, Path: op.Path}
				h.Old, h.OldBytes = boundedValue(op.Old, &budget)
				h.Value, h.ValueBytes = boundedValue(op.Value, &budget)
				c.Changes[i] = h
			}
		}
		data.Items = append(data.Items, c)
	}
	return ToolResult{Content: compareText(d, argString(args, "kind")), Data: data}
}

// compareText is the compare_releases text: the counts, the tag shift, then one line per
// item with its changes indented below it, and how to go on.
func compareText(d *export.ReleaseDiff, kind string) string {
	var t Text
	to := d.To
	if to == export.CurrentRelease {
		to = "current (the items " + d.From + "'s selection holds now)"
	}
	c := d.Counts
	t.Line("%s → %s: %s added, %s removed, %s changed, %s unchanged.", d.From, to, Count(c.Added), Count(c.Removed), Count(c.Changed), Count(c.Unchanged))
	if len(d.TagShift) == 0 {
		t.Line("Tag counts: the same in both.")
	} else {
		shown := make([]string, 0, cmpTextTags)
		for _, s := range d.TagShift[:min(len(d.TagShift), cmpTextTags)] {
			shown = append(shown, fmt.Sprintf("%s %+d (%s → %s)", s.Tag, s.Delta, Count(s.From), Count(s.To)))
		}
		line := "Tag shift: " + strings.Join(shown, ", ")
		if n := len(d.TagShift) - len(shown); n > 0 {
			line += fmt.Sprintf(" … and %d more", n)
		}
		t.Line("%s.", line)
	}
	which := "added, removed or changed items"
	if kind != "" {
		which = kind + " items"
	}
	var closing string
	if d.NextCursor != nil {
		closing = fmt.Sprintf("More %s: call again with cursor %q.", which, *d.NextCursor)
	} else if len(d.Items) > 0 {
		closing = "No more " + which + "."
	}
	if len(d.Items) == 0 { // only the last page can be empty
		t.Line("No %s.", which)
		return t.String()
	}
	t.Line("%s, in (dataset, id) order:", strings.ToUpper(which[:1])+which[1:])
	for i, it := range d.Items {
		lines := []string{compareItemLine(it)}
		for j, op := range it.Changes {
			if j == histTextChanges {
				lines = append(lines, fmt.Sprintf("  … and %d more changes", len(it.Changes)-j))
				break
			}
			lines = append(lines, fmt.Sprintf("  %s %s: %s → %s", op.Op, pathText(op.Path), valueText(op.Old), valueText(op.Value)))
		}
		need := len(closing) + 60
		for _, l := range lines {
			need += len(l) + 1
		}
		if t.Room() < need {
			t.Line("… and %d more items in the data.", len(d.Items)-i)
			break
		}
		for _, l := range lines {
			t.Line("%s", l)
		}
	}
	t.Line("%s", closing)
	return t.String()
}

// compareItemLine is "changed support/q-1 r2 → r5", "added support/q-9 r1" or
// "removed support/q-3 r4", with why the changes are missing when they are.
func compareItemLine(it export.DiffItem) string {
	line := it.Kind + " " + it.DatasetName + "/" + it.ID
	switch {
	case it.FromRevision != nil && it.ToRevision != nil:
		line += fmt.Sprintf(" r%d → r%d", *it.FromRevision, *it.ToRevision)
		if *it.FromRevision == *it.ToRevision {
			line += " (same revision; its exported content differs)"
		}
	case it.FromRevision != nil:
		line += fmt.Sprintf(" r%d", *it.FromRevision)
	case it.ToRevision != nil:
		line += fmt.Sprintf(" r%d", *it.ToRevision)
	}
	if it.ChangesUnavailable != "" {
		line += ": no field-level changes. " + it.ChangesUnavailable
	}
	return line
}
