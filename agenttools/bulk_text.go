package agenttools

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gtc-dev/gtc"
)

// Caps of the answer lists.
const (
	sampleSize      = 10
	skippedDataCap  = 50
	textRefs        = 20
	problemsDataCap = 1000
	maxEntryItems   = 1000
	entryTextItems  = 50
)

func ref(k gtc.Key) string { return k.DatasetName + "/" + k.ID }

func tagList(tags []string) string { return "[" + strings.Join(tags, ", ") + "]" }

func keyData(k gtc.Key) map[string]any {
	return map[string]any{"datasetName": k.DatasetName, "bucket": k.Bucket, "id": k.ID}
}

// clockTime shows the time of day of a deadline, as the preview texts do (10:57:12Z).
func clockTime(p *gtc.AgentPreview) string { return p.ExpiresAt.UTC().Format("15:04:05Z") }

// previewResult answers a dry run.
func previewResult(p *plan, pv *gtc.AgentPreview) ToolResult {
	a := p.args
	var t Text
	wouldSkip := len(p.skipped)
	switch {
	case a.Operation == gtc.AgentKindUndo:
		t.Line("PREVIEW (dry run, nothing changed): undo %s (%s by %s at %s): would restore %s items; %s changed since and would be left alone.",
			a.OperationID, describeOp(p.target), p.target.Actor, p.target.StartedAt.UTC().Format("15:04:05Z"), Count(len(p.changes)), Count(wouldSkip))
	case p.matched == 0:
		t.Line("PREVIEW: no items match (%s); nothing to change.", a.scope())
	default:
		t.Line("PREVIEW (dry run, nothing changed): %s, %s.", a.describe(), a.scope())
		line := fmt.Sprintf("Matched %s items: %s would change, %s would be skipped", Count(p.matched), Count(len(p.changes)), Count(wouldSkip))
		if a.Operation == "find_and_tag" {
			line += fmt.Sprintf(", %s already have the tag", Count(p.unchanged))
		}
		t.Line("%s.", line)
	}
	if len(p.changes) > 0 {
		var parts []string
		for _, ds := range slices.Sorted(maps.Keys(p.byDataset)) {
			parts = append(parts, fmt.Sprintf("%s %s", ds, Count(p.byDataset[ds])))
		}
		if a.Operation != gtc.AgentKindUndo {
			t.Line("By dataset: %s.", strings.Join(parts, ", "))
		}
		switch a.Operation {
		case "find_and_tag":
			t.Line("Change: add '%s'.", a.Tag)
		case "delete_tag":
			t.Line("Change: remove '%s'.", a.Tag)
		case "merge_tags":
			line := fmt.Sprintf("Change: remove '%s', add '%s'", a.TagFrom, a.TagTo)
			if p.alreadyHadTarget > 0 {
				line += fmt.Sprintf(" (%s items already have '%s'; only the removal applies there)", Count(p.alreadyHadTarget), a.TagTo)
			}
			t.Line("%s.", line)
		}
		t.Line("Sample (%d of %s):", min(sampleSize, len(p.changes)), Count(len(p.changes)))
		for _, c := range p.changes[:min(sampleSize, len(p.changes))] {
			t.Line("- %s [%s] %q %s -> %s", ref(c.key), c.status, c.question, tagList(c.before), tagList(c.after))
		}
	}
	skipLines(&t, "Would skip", p.skipped)
	for _, n := range p.notes {
		t.Line("%s", n)
	}
	data := map[string]any{"kind": "preview", "previewId": nil, "expiresAt": nil, "args": a.wire(), "matched": p.matched,
		"wouldChange": len(p.changes), "unchanged": p.unchanged, "wouldSkip": wouldSkip, "byDataset": p.byDataset,
		"warnings": nonNil(p.notes)}
	switch a.Operation {
	case "find_and_tag":
		data["change"] = map[string]any{"add": []string{a.Tag}, "remove": []string{}}
	case "delete_tag":
		data["change"] = map[string]any{"add": []string{}, "remove": []string{a.Tag}}
	case "merge_tags":
		data["change"] = map[string]any{"add": []string{a.TagTo}, "remove": []string{a.TagFrom}}
	default:
		data["change"] = nil
		data["undoOf"] = a.OperationID
	}
	sample := []map[string]any{}
	for _, c := range p.changes[:min(sampleSize, len(p.changes))] {
		s := keyData(c.key)
		s["status"], s["question"], s["manualTagsBefore"], s["manualTagsAfter"], s["alreadyHadTarget"] =
			c.status, c.question, c.before, c.after, c.alreadyHadTarget
		sample = append(sample, s)
	}
	data["sample"] = sample
	skipped := []map[string]any{}
	for _, s := range p.skipped[:min(skippedDataCap, len(p.skipped))] {
		d := keyData(s.key)
		d["reason"] = s.reason
		skipped = append(skipped, d)
	}
	data["skipped"] = skipped
	if pv != nil {
		data["previewId"], data["expiresAt"] = pv.ID, DataTime(pv.ExpiresAt)
		if a.Operation == gtc.AgentKindUndo {
			t.Line("To apply, call undo_tag_operation again with the same operation_id and dry_run=false before %s (preview %s).", clockTime(pv), pv.ID)
		} else {
			t.Line("To apply, call manage_tags again with the same parameters and dry_run=false before %s (preview %s).", clockTime(pv), pv.ID)
		}
	} else if p.matched > 0 {
		t.Line("Nothing to apply: no item would change, so no preview was kept.")
	}
	return ToolResult{Content: t.String(), Data: data}
}

// skipLines writes one heading per reason with up to textRefs item refs.
func skipLines(t *Text, heading string, skips []skip) {
	var reasons []string
	by := map[string][]string{}
	for _, s := range skips {
		if _, ok := by[s.reason]; !ok {
			reasons = append(reasons, s.reason)
		}
		by[s.reason] = append(by[s.reason], ref(s.key))
	}
	for _, r := range reasons {
		refs := by[r]
		line := fmt.Sprintf("%s (%s): %s", heading, r, strings.Join(refs[:min(textRefs, len(refs))], ", "))
		if len(refs) > textRefs {
			line += fmt.Sprintf(" … and %d more", len(refs)-textRefs)
		}
		t.Line("%s", line)
	}
}

func nonNil(ss []string) []string {
	if ss == nil {
		return []string{}
	}
	return ss
}

// resultHeadings are how the execution text names each non-applied result.
var resultHeadings = map[string]string{
	gtc.AgentItemSkippedChanged:  "Skipped, changed since preview (left as is)",
	gtc.AgentItemSkippedConflict: "Skipped, tag rule conflict",
	gtc.AgentItemSkippedMissing:  "Skipped, deleted since preview",
	gtc.AgentItemFailed:          "Failed",
	gtc.AgentItemNotAttempted:    "Not attempted",
}

// executionResult answers a finished execution.
func executionResult(op *gtc.AgentOperation, p *plan, entries []gtc.AgentOpItem) ToolResult {
	c := op.Counts
	skipped := c.SkippedChanged + c.SkippedConflict + c.SkippedMissing + c.NotAttempted
	var t Text
	if op.UndoOf != nil {
		t.Line("DONE %s (undo of %s): restored %s items, %s skipped, %s failed.", op.OperationID, *op.UndoOf, Count(c.Applied), Count(skipped), Count(c.Failed))
	} else {
		t.Line("DONE %s %s: %s of %s previewed items changed, %s skipped, %s failed.", op.OperationID, p.args.describe(),
			Count(c.Applied), Count(c.Planned), Count(skipped), Count(c.Failed))
	}
	if op.Status == gtc.AgentOpFailed {
		t.Line("Stopped early: the store kept failing, so the remaining items were not attempted.")
	}
	if op.Status == gtc.AgentOpInterrupted {
		t.Line("Interrupted: the server shut down, so the remaining items were not attempted.")
	}
	problems := []map[string]any{}
	for _, res := range []string{gtc.AgentItemSkippedChanged, gtc.AgentItemSkippedConflict, gtc.AgentItemSkippedMissing, gtc.AgentItemFailed, gtc.AgentItemNotAttempted} {
		var refs []string
		for _, e := range entries {
			if e.Result != res {
				continue
			}
			refs = append(refs, ref(e.Key()))
			if len(problems) < problemsDataCap {
				d := keyData(e.Key())
				d["result"], d["reason"] = e.Result, e.Reason
				problems = append(problems, d)
			}
		}
		if len(refs) > 0 {
			line := resultHeadings[res] + ": " + strings.Join(refs[:min(textRefs, len(refs))], ", ")
			if len(refs) > textRefs {
				line += fmt.Sprintf(" … and %d more", len(refs)-textRefs)
			}
			t.Line("%s", line)
		}
	}
	if c.Applied > 0 {
		t.Line("To revert: undo_tag_operation with operation_id %q.", op.OperationID)
	}
	notApplied := c.Planned - c.Applied
	data := map[string]any{"kind": "execution", "operationId": op.OperationID, "status": op.Status, "args": json.RawMessage(op.Args),
		"counts": c, "excludedAtPreview": op.ExcludedAtPreview, "problems": problems, "problemsTruncated": notApplied > len(problems),
		"startedAt": DataTime(op.StartedAt), "finishedAt": timeOrNil(op)}
	if op.UndoOf != nil {
		data["undoOf"] = *op.UndoOf
	}
	return ToolResult{Content: t.String(), Data: data}
}

// runningResult answers an execution still going on after the wait.
func runningResult(op *gtc.AgentOperation, p *plan, processed int) ToolResult {
	c := op.Counts
	skipped := c.SkippedChanged + c.SkippedConflict + c.SkippedMissing + c.Failed + c.NotAttempted
	what := p.args.describe()
	if op.UndoOf != nil {
		what = "(undo of " + *op.UndoOf + ")"
	}
	content := fmt.Sprintf("RUNNING %s %s: %s of %s items processed (%s changed, %s skipped); it goes on server-side, check list_tag_operations operation_id %q.",
		op.OperationID, what, Count(processed), Count(len(p.changes)), Count(c.Applied), Count(skipped), op.OperationID)
	data := map[string]any{"kind": "execution", "operationId": op.OperationID, "status": gtc.AgentOpRunning, "args": json.RawMessage(op.Args),
		"counts": c, "excludedAtPreview": op.ExcludedAtPreview, "problems": []any{}, "problemsTruncated": false,
		"startedAt": DataTime(op.StartedAt), "finishedAt": nil, "processed": processed}
	if op.UndoOf != nil {
		data["undoOf"] = *op.UndoOf
	}
	return ToolResult{Content: content, Data: data}
}

func timeOrNil(op *gtc.AgentOperation) any {
	if op.FinishedAt == nil {
		return nil
	}
	return DataTime(*op.FinishedAt)
}

// describeOp shows a logged operation as the texts do, from its stored arguments.
func describeOp(op *gtc.AgentOperation) string {
	var m map[string]any
	_ = json.Unmarshal(op.Args, &m) // we wrote it; a broken one shows as the bare kind
	s := func(k string) string { v, _ := m[k].(string); return v }
	switch op.Kind {
	case "find_and_tag":
		return fmt.Sprintf("find_and_tag %q -> '%s'", s("keyword"), s("tag"))
	case "delete_tag":
		return fmt.Sprintf("delete_tag '%s'", s("tag"))
	case "merge_tags":
		return fmt.Sprintf("merge_tags '%s' -> '%s'", s("tag_from"), s("tag_to"))
	case gtc.AgentKindUndo:
		return "undo of " + s("operation_id")
	}
	return op.Kind
}

func opScope(op *gtc.AgentOperation) string {
	if op.Kind == gtc.AgentKindUndo {
		return "its items"
	}
	var m map[string]any
	_ = json.Unmarshal(op.Args, &m)
	ds, _ := m["dataset"].(string)
	return rdDatasetScope(ds)
}

// opData is a header as data shows it (times in the API's form).
func opData(op *gtc.AgentOperation) map[string]any {
	return map[string]any{"operationId": op.OperationID, "kind": op.Kind, "actor": op.Actor, "via": op.Via,
		"args": json.RawMessage(op.Args), "userAgent": op.UserAgent, "previewId": op.PreviewID,
		"previewedAt": DataTime(op.PreviewedAt), "startedAt": DataTime(op.StartedAt), "finishedAt": timeOrNil(op),
		"status": op.Status, "counts": op.Counts, "excludedAtPreview": op.ExcludedAtPreview, "undoOf": op.UndoOf, "undoneBy": op.UndoneBy}
}

func opLine(op *gtc.AgentOperation) string {
	c := op.Counts
	line := fmt.Sprintf("%s %s %s %s (%s): %s, %s applied, %s skipped", op.OperationID, ContentTime(op.StartedAt), op.Actor,
		describeOp(op), opScope(op), op.Status, Count(c.Applied), Count(c.SkippedChanged+c.SkippedConflict+c.SkippedMissing+c.NotAttempted))
	if c.Failed > 0 {
		line += fmt.Sprintf(", %s failed", Count(c.Failed))
	}
	if op.UndoneBy != nil {
		line += "; undone by " + *op.UndoneBy
	}
	return line
}

// operationsResult answers list_tag_operations without an id.
func operationsResult(ops []*gtc.AgentOperation, total int, f gtc.AgentOpFilter) ToolResult {
	var t Text
	var scope []string
	if f.Actor != "" {
		scope = append(scope, "by "+f.Actor)
	}
	if f.Tag != "" {
		scope = append(scope, "naming '"+f.Tag+"'")
	}
	sc := ""
	if len(scope) > 0 {
		sc = " (" + strings.Join(scope, ", ") + ")"
	}
	if total == 0 {
		t.Line("No tag operations%s.", sc)
	} else {
		t.Line("%s tag operations%s, newest first; showing %d:", Count(total), sc, len(ops))
	}
	list := []map[string]any{}
	for _, op := range ops {
		t.Line("%s", opLine(op))
		list = append(list, opData(op))
	}
	return ToolResult{Content: t.String(), Data: map[string]any{"operations": list, "total": total}}
}

// operationResult answers list_tag_operations with an id: the header and its items.
func operationResult(op *gtc.AgentOperation, items []gtc.AgentOpItem) ToolResult {
	var t Text
	t.Line("%s", opLine(op))
	t.Line("Run by %s via %s; previewed %s (%s), started %s, finished %s.", op.Actor, op.Via, ContentTime(op.PreviewedAt), op.PreviewID,
		ContentTime(op.StartedAt), finishedText(op))
	c := op.Counts
	t.Line("Counts: planned %s, applied %s, skipped changed %s, skipped conflict %s, skipped missing %s, failed %s, not attempted %s; left out at preview: %s unchanged, %s conflicts.",
		Count(c.Planned), Count(c.Applied), Count(c.SkippedChanged), Count(c.SkippedConflict), Count(c.SkippedMissing), Count(c.Failed),
		Count(c.NotAttempted), Count(op.ExcludedAtPreview.Unchanged), Count(op.ExcludedAtPreview.Conflict))
	if op.UndoOf != nil {
		t.Line("This is the undo of %s.", *op.UndoOf)
	}
	truncated := len(items) > maxEntryItems
	items = items[:min(len(items), maxEntryItems)]
	for i, e := range items {
		if i == entryTextItems {
			t.Line("… and %d more items", len(items)-entryTextItems)
			break
		}
		if e.Result == gtc.AgentItemApplied {
			t.Line("%s applied %s -> %s", ref(e.Key()), tagList(e.ManualTagsBefore), tagList(e.ManualTagsAfter))
		} else {
			reason := ""
			if e.Reason != nil {
				reason = ": " + *e.Reason
			}
			t.Line("%s %s%s", ref(e.Key()), e.Result, reason)
		}
	}
	d := opData(op)
	list := make([]map[string]any, len(items))
	for i, e := range items {
		m := keyData(e.Key())
		m["result"], m["reason"], m["etagBefore"], m["etagAfter"], m["manualTagsBefore"], m["manualTagsAfter"] =
			e.Result, e.Reason, e.ETagBefore, e.ETagAfter, e.ManualTagsBefore, e.ManualTagsAfter
		list[i] = m
	}
	d["items"] = list
	return ToolResult{Content: t.String(), Data: map[string]any{"operation": d, "itemsTruncated": truncated}}
}

func finishedText(op *gtc.AgentOperation) string {
	if op.FinishedAt == nil {
		return "not yet"
	}
	return ContentTime(*op.FinishedAt)
}
