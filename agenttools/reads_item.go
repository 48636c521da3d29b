package agenttools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	gtc "github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/codec"
)

// Limits of the get_item text.
const (
	rdMaxTurns    = 20
	rdMaxTurnText = 500
)

// GetItem is the get_item tool: one item in full. Args: dataset, id, bucket (optional).
// Without bucket the item is located by (dataset, id). data is the item exactly as
// GET /v1/ground-truths/{dataset}/{bucket}/{id} returns it (the same encoder), as raw JSON.
func (r *Reads) GetItem(ctx context.Context, args map[string]any) ToolResult {
	const tool = "get_item"
	ctx, cancel := r.begin(ctx)
	defer cancel()
	dataset := argString(args, "dataset")
	id := argString(args, "id")
	items := r.store.Items()
	k, fail := r.locate(ctx, tool, dataset, id, argString(args, "bucket"))
	if fail != nil {
		return *fail
	}
	it, err := items.Get(ctx, k)
	if errors.Is(err, gtc.ErrNotFound) {
		return rdNotFound(dataset, id, k.Bucket)
	}
	if err != nil {
		return r.failure(ctx, tool, "read the item", err)
	}
	return ToolResult{Content: rdItemText(it), Data: json.RawMessage(codec.ItemAPIJSON(it))}
}

// locate finds the item of (dataset, id), in bucket when one is given (raw, not yet parsed).
// Without a bucket an id found in more than one bucket is AMBIGUOUS_ITEM, naming the buckets
// to call tool with again.
func (r *Reads) locate(ctx context.Context, tool, dataset, id, bucket string) (gtc.Key, *ToolResult) {
	if bucket != "" {
		b, ok := gtc.ParseUUID(bucket)
		if !ok {
			res := ToolFailure(CodeInvalidInput, "Invalid input: bucket must be a UUID (got '"+bucket+"').", map[string]any{
				"fields": []FieldProblem{{Field: "bucket", Message: "must be a UUID"}}})
			return gtc.Key{}, &res
		}
		return gtc.Key{DatasetName: dataset, Bucket: b, ID: id}, nil
	}
	k, err := r.store.Items().Locate(ctx, dataset, id)
	var ce *gtc.ConflictError
	var res ToolResult
	switch {
	case err == nil:
		return k, nil
	case errors.Is(err, gtc.ErrNotFound):
		res = rdNotFound(dataset, id, "")
	case errors.As(err, &ce) && len(ce.All) > 1:
		buckets := make([]string, len(ce.All))
		for i, key := range ce.All {
			buckets[i] = key.Bucket
		}
		res = ToolFailure(CodeAmbiguousItem, fmt.Sprintf(
			"Ambiguous: %s/%s exists in %d buckets (%s); the data breaks the uniqueness of dataset and id (gtc migrate reports it). Call %s again with one of these buckets.",
			dataset, id, len(buckets), strings.Join(buckets, ", "), tool), map[string]any{"buckets": buckets})
	default:
		res = r.failure(ctx, tool, "locate the item", err)
	}
	return gtc.Key{}, &res
}

// rdNotFound answers NOT_FOUND for an item key.
func rdNotFound(dataset, id, bucket string) ToolResult {
	where := ""
	if bucket != "" {
		where = " in bucket " + bucket
	}
	return ToolFailure(CodeNotFound, fmt.Sprintf("Not found: no item %s/%s%s. search_items finds items by keyword, dataset and tags.", dataset, id, where), nil)
}

// rdItemText is the get_item text: header, tags, comment, the turns (each cut at 500
// characters, at most 20), tool calls, expected tools and the reference count. The closing
// lines always fit: turns give way first.
func rdItemText(it *gtc.Item) string {
	var t Text
	assigned := "nobody"
	if it.AssignedTo != nil && *it.AssignedTo != "" {
		assigned = *it.AssignedTo
	}
	reviewed := "never"
	if it.ReviewedAt != nil {
		reviewed = ContentTime(*it.ReviewedAt)
	}
	t.Line("%s/%s [%s] bucket %s, updated %s, reviewed %s, assigned to %s",
		it.DatasetName, it.ID, it.Status, it.Bucket, ContentTime(it.UpdatedAt), reviewed, assigned)
	t.Line("Manual tags: %s", rdTagList(it.ManualTags))
	t.Line("Computed tags: %s", rdTagList(it.ComputedTags))
	if c := rdOneLine(it.Comment, rdMaxTurnText); c != "" {
		t.Line("Comment: %s", c)
	} else {
		t.Line("Comment: none")
	}

	names := make([]string, len(it.ToolCalls))
	for i, tc := range it.ToolCalls {
		names[i] = tc.Name
	}
	tail := []string{
		fmt.Sprintf("Tool calls (%d): %s", len(names), rdTagList(names)),
		"Expected tools: " + rdExpected(it.ExpectedTools),
		fmt.Sprintf("References: %d", gtc.ReferenceCount(it)),
	}
	reserve := 0
	for _, l := range tail {
		reserve += len(l) + 1
	}
	reserve += 40 // the "… N more turns" line

	t.Line("Conversation (%s):", rdPlural(len(it.History), "turn", "turns"))
	shown := 0
	for i, h := range it.History {
		if i == rdMaxTurns {
			break
		}
		line := fmt.Sprintf("%d. %s: %s", i+1, h.Role, rdOneLine(h.Msg, rdMaxTurnText))
		if t.Room() < len(line)+reserve {
			break
		}
		t.Line("%s", line)
		shown++
	}
	if rest := len(it.History) - shown; rest > 0 {
		t.Line("… %d more turns", rest)
	}
	for _, l := range tail {
		t.Line("%s", l)
	}
	return t.String()
}

// rdExpected is "required a, b; optional c; not needed d", or "none".
func rdExpected(e gtc.ExpectedTools) string {
	var parts []string
	for _, g := range []struct {
		label string
		list  []gtc.ToolExpectation
	}{{"required", e.Required}, {"optional", e.Optional}, {"not needed", e.NotNeeded}} {
		if len(g.list) == 0 {
			continue
		}
		names := make([]string, len(g.list))
		for i, x := range g.list {
			names[i] = x.Name
		}
		parts = append(parts, g.label+" "+strings.Join(names, ", "))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}
