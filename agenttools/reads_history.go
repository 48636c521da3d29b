package agenttools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	gtc "github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/history"
)

// Limits of the get_item_history answer. The text keeps within MaxToolContentLength like
// every tool's; the data is bounded by these: at most 100 revisions a call (the schema),
// each with at most histMaxPaths paths and histMaxChanges changes, each value at most
// histMaxValueBytes of compact JSON, and all the values of one answer together at most
// histValueBudget bytes. A value cut short says so with its full size.
const (
	histMaxPaths      = 100
	histMaxChanges    = 50
	histMaxValueBytes = 500
	histValueBudget   = 32 << 10
	histTextPaths     = 10  // paths per revision line in the text
	histTextChanges   = 10  // change lines per revision in the text
	histTextValue     = 120 // bytes of a value in the text
)

// HistoryData is the data of a get_item_history answer.
type HistoryData struct {
	DatasetName string            `json:"datasetName"`
	Bucket      string            `json:"bucket"`
	ID          string            `json:"id"`
	Revisions   []HistoryRevision `json:"revisions"`
	// NextCursor is the cursor of the next (older) page; nil after the oldest revision.
	NextCursor *string `json:"nextCursor"`
}

// HistoryRevision is one revision of a get_item_history answer. Changes is set only with
// with_values. MorePaths and MoreChanges count what was left out past the limits.
type HistoryRevision struct {
	Revision    int64           `json:"revision"`
	At          string          `json:"at"`
	Actor       string          `json:"actor"`
	Source      string          `json:"source"`
	OperationID string          `json:"operationId,omitempty"`
	Paths       []string        `json:"paths"`
	MorePaths   int             `json:"morePaths,omitempty"`
	Changes     []HistoryChange `json:"changes,omitempty"`
	MoreChanges int             `json:"moreChanges,omitempty"`
}

// HistoryChange is one field-level change: op "add" (Value), "remove" (Old) or "replace"
// (Old and Value) at Path, a JSON Pointer into the stored item ("" is the whole item). Old
// and Value are JSON. OldBytes (ValueBytes) is set when the value was cut short and is its
// full size in bytes of compact JSON; the value is then a string holding the start of that
// JSON and "…", or absent when the answer had no room left for values.
type HistoryChange struct {
	Op         string          `json:"op"`
	Path       string          `json:"path"`
	Old        json.RawMessage `json:"old,omitzero"`
	Value      json.RawMessage `json:"value,omitzero"`
	OldBytes   int             `json:"oldBytes,omitempty"`
	ValueBytes int             `json:"valueBytes,omitempty"`
}

// GetItemHistory is the get_item_history tool: the recorded revisions of one item, newest
// first. Args: dataset, id, bucket (optional), limit, cursor (optional), with_values.
func (r *Reads) GetItemHistory(ctx context.Context, args map[string]any) ToolResult {
	const tool = ToolGetItemHistory
	ctx, cancel := r.begin(ctx)
	defer cancel()
	dataset, id := argString(args, "dataset"), argString(args, "id")
	k, fail := r.locate(ctx, tool, dataset, id, argString(args, "bucket"))
	if fail != nil {
		return *fail
	}
	cursor := argString(args, "cursor")
	page, err := history.Page(ctx, r.cur, k, cursor, argInt(args, "limit", 20))
	if err != nil {
		var ge *gtc.Error
		switch {
		case errors.Is(err, gtc.ErrNotFound) || errors.As(err, &ge) && ge.Code == gtc.CodeNotFound:
			return rdNotFound(dataset, id, k.Bucket)
		case errors.Is(err, gtc.ErrInvalidArgument):
			return ToolFailure(CodeInvalidInput, "Invalid input: cursor '"+cursor+"' is not a nextCursor of this item's history.",
				map[string]any{"fields": []FieldProblem{{Field: "cursor", Message: "not a cursor of this history"}}})
		}
		return r.failure(ctx, tool, "read the item's history", err)
	}
	withValues := argBool(args, "with_values", false)
	data := HistoryData{DatasetName: k.DatasetName, Bucket: k.Bucket, ID: k.ID, Revisions: []HistoryRevision{}}
	budget := histValueBudget
	for _, rev := range page.Revisions {
		data.Revisions = append(data.Revisions, historyRevision(rev, withValues, &budget))
	}
	if page.Next != "" {
		data.NextCursor = &page.Next
	}
	return ToolResult{Content: historyText(k, cursor, page, withValues), Data: data}
}

// historyRevision is the data of one revision; values spend budget.
func historyRevision(rev *gtc.Revision, withValues bool, budget *int) HistoryRevision {
	paths := rev.Paths()
	h := HistoryRevision{Revision: rev.Number, At: DataTime(rev.At), Actor: rev.Actor, Source: rev.Source,
		OperationID: rev.OperationID, Paths: paths[:min(len(paths), histMaxPaths)], MorePaths: max(0, len(paths)-histMaxPaths)}
	if !withValues {
		return h
	}
	ops := rev.Ops[:min(len(rev.Ops), histMaxChanges)]
	h.MoreChanges = len(rev.Ops) - len(ops)
	h.Changes = make([]HistoryChange, len(ops))
	for i, op := range ops {
		c := HistoryChange{Op: op.Op, Path: op.Path}
		c.Old, c.OldBytes = boundedValue(op.Old, budget)
		c.Value, c.ValueBytes = boundedValue(op.Value, budget)
		h.Changes[i] = c
	}
	return h
}

// boundedValue is v as compact JSON when it fits histMaxValueBytes and what is left of
// budget; otherwise its start as a JSON string ending in "…" (nil when even that does not
// fit), and its full size.
func boundedValue(v json.RawMessage, budget *int) (json.RawMessage, int) {
	if len(v) == 0 {
		return nil, 0
	}
	c := compactJSON(v)
	if len(c) <= min(histMaxValueBytes, *budget) {
		*budget -= len(c)
		return c, 0
	}
	head, _ := json.Marshal(cutBytes(string(c), histMaxValueBytes/2) + "…")
	if len(head) > *budget {
		*budget = 0
		return nil, len(c)
	}
	*budget -= len(head)
	return head, len(c)
}

// compactJSON is v without insignificant whitespace; v as it is when it is not JSON.
func compactJSON(v json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, v); err != nil {
		return v
	}
	return b.Bytes()
}

// cutBytes is the longest start of s of at most n bytes that ends on a rune boundary.
func cutBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// historyText is the get_item_history text: a header line, then one line per revision
// ("r3 2025-11-20T10:00:00Z bob@example.com via api: /comment, /status"), with withValues
// followed by its changes, one indented line each.
func historyText(k gtc.Key, cursor string, page gtc.RevisionPage, withValues bool) string {
	var t Text
	ref := k.DatasetName + "/" + k.ID
	revs := page.Revisions
	switch {
	case len(revs) == 0 && cursor != "":
		t.Line("%s: no revisions before cursor %q.", ref, cursor)
	case len(revs) == 0:
		t.Line("%s: no revisions recorded; it has not been written since its history began.", ref)
	case page.Next != "":
		t.Line("%s: revisions %d to %d, newest first; older ones: call again with cursor %q.",
			ref, revs[0].Number, revs[len(revs)-1].Number, page.Next)
	default:
		t.Line("%s: revisions %d to %d, newest first; revision %d is the first.",
			ref, revs[0].Number, revs[len(revs)-1].Number, revs[len(revs)-1].Number)
	}
	for _, rev := range revs {
		t.Line("r%d %s %s via %s: %s", rev.Number, ContentTime(rev.At), rev.Actor, rev.Source, historyPaths(rev.Paths()))
		if !withValues {
			continue
		}
		for i, op := range rev.Ops {
			if i == histTextChanges {
				t.Line("  … and %d more changes", len(rev.Ops)-i)
				break
			}
			t.Line("  %s %s: %s → %s", op.Op, pathText(op.Path), valueText(op.Old), valueText(op.Value))
		}
	}
	return t.String()
}

// historyPaths lists the paths of a revision line, at most histTextPaths.
func historyPaths(paths []string) string {
	shown := make([]string, 0, min(len(paths), histTextPaths))
	for _, p := range paths[:min(len(paths), histTextPaths)] {
		shown = append(shown, pathText(p))
	}
	s := strings.Join(shown, ", ")
	if len(paths) > histTextPaths {
		s += fmt.Sprintf(" … and %d more", len(paths)-histTextPaths)
	}
	return s
}

// pathText shows a path; the empty path is the whole item.
func pathText(p string) string {
	if p == "" {
		return "(whole item)"
	}
	return p
}

// valueText shows a value as compact JSON, cut at histTextValue bytes with "…" and its
// size; "(none)" when absent.
func valueText(v json.RawMessage) string {
	if len(v) == 0 {
		return "(none)"
	}
	c := string(compactJSON(v))
	if len(c) <= histTextValue {
		return c
	}
	return cutBytes(c, histTextValue) + "… (" + Count(len(c)) + " bytes)"
}
