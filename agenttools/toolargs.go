package agenttools

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/tagging"
)

// The tools' argument readers. The transport hands over validated, trimmed, typed values
// with defaults applied; a missing key reads as the zero value or def.

func argString(args map[string]any, k string) string {
	s, _ := args[k].(string)
	return strings.TrimSpace(s)
}

func argStrings(args map[string]any, k string) []string {
	switch v := args[k].(type) {
	case []string:
		return v
	case []any:
		out := make([]string, 0, len(v))
		for _, x := range v {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func argBool(args map[string]any, k string, def bool) bool {
	if b, ok := args[k].(bool); ok {
		return b
	}
	return def
}

func argInt(args map[string]any, k string, def int) int {
	switch v := args[k].(type) {
	case int:
		return v
	case int64:
		return int(v)
	case float64:
		return int(v)
	}
	return def
}

// conversationContains reports whether some history msg contains kw (already lower case),
// case-insensitively: the keyword rule of find_and_tag and search_items, which match the
// conversation only.
func conversationContains(it *gtc.Item, kw string) bool {
	for _, h := range it.History {
		if strings.Contains(strings.ToLower(h.Msg), kw) {
			return true
		}
	}
	return false
}

// filterTags normalizes the filter tags of args[k], de-duplicated in order. A dataset: tag
// keeps the case of its value, which is a dataset name. A malformed tag is INVALID_TAG
// naming its position.
func filterTags(args map[string]any, k string) ([]string, *ToolResult) {
	var out []string
	for i, raw := range argStrings(args, k) {
		tag, err := tagging.NormalizeFilterTag(raw)
		if err != nil {
			msg := err.Error()
			var ite *tagging.InvalidTagError
			if !errors.As(err, &ite) {
				msg = fmt.Sprintf("Invalid tag format (expected group:value): '%s'", raw)
			}
			res := ToolFailure(CodeInvalidTag, msg, map[string]any{
				"fields": []FieldProblem{{Field: fmt.Sprintf("%s[%d]", k, i), Message: msg}}})
			return nil, &res
		}
		if !slices.Contains(out, tag) {
			out = append(out, tag)
		}
	}
	return out, nil
}

// maxKnownDatasets is how many names an UNKNOWN_DATASET answer lists.
const maxKnownDatasets = 20

// unknownDataset answers UNKNOWN_DATASET when name is set and no item has it; names are the
// store's datasets, sorted.
func unknownDataset(name string, names []string) *ToolResult {
	if name == "" || slices.Contains(names, name) {
		return nil
	}
	known := slices.Clone(names[:min(len(names), maxKnownDatasets)])
	list := strings.Join(known, ", ")
	if len(names) > maxKnownDatasets {
		list += fmt.Sprintf(" … and %d more", len(names)-maxKnownDatasets)
	}
	if len(names) == 0 {
		list = "none (the store has no items)"
	}
	res := ToolFailure(CodeUnknownDataset, fmt.Sprintf("Unknown dataset '%s'. Known datasets: %s.", name, list),
		map[string]any{"knownDatasets": known})
	return &res
}

// checkDataset answers UNKNOWN_DATASET for a dataset no item has; "" is every dataset.
func checkDataset(ctx context.Context, items gtc.ItemStore, name string) (*ToolResult, error) {
	if name == "" {
		return nil, nil
	}
	names, err := items.Datasets(ctx)
	if err != nil {
		return nil, err
	}
	return unknownDataset(name, names), nil
}

// newErrorID names one logged fault, so a user can quote it.
func newErrorID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "err_" + hex.EncodeToString(b[:])
}

// internalFault logs an unexpected fault under an error id and answers INTERNAL, saying
// whether anything changed; the cause stays in the log.
func internalFault(ctx context.Context, log *slog.Logger, what string, err error, changed bool) ToolResult {
	id := newErrorID()
	log.ErrorContext(ctx, "agent tool failed", "error_id", id, "doing", what, "err", err)
	msg := "Internal error while trying to " + what + " (error id " + id + "); nothing changed."
	if changed {
		msg = "Internal error while trying to " + what + " (error id " + id + "); some items may have changed, list_tag_operations shows which."
	}
	return ToolFailure(CodeInternal, msg, map[string]any{"errorId": id})
}

// readFault answers a read or preview that failed: TIMEOUT past the tool deadline,
// INTERNAL otherwise. Nothing was changed in either case.
func readFault(ctx context.Context, log *slog.Logger, timeout time.Duration, what string, err error) ToolResult {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		after := ""
		if timeout > 0 {
			after = " after " + timeout.String()
		}
		return ToolFailure(CodeTimeout, "Timed out"+after+" while trying to "+what+"; nothing changed. "+
			"Narrow the request (dataset, status, tags) and try again.", nil)
	}
	return internalFault(ctx, log, what, err, false)
}
