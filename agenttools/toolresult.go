package agenttools

import (
	"fmt"
	"strings"
	"time"

	"github.com/gtc-dev/gtc"
)

// ToolResult is the envelope every agent tool answers with: text for
// the model, the same facts as JSON, and whether it is an error. IsError is true exactly
// when Data holds an "error" key.
type ToolResult struct {
	Content string `json:"content"`
	Data    any    `json:"data"`
	IsError bool   `json:"isError"`
}

// ToolCall is who calls a tool and how.
type ToolCall struct {
	Caller    gtc.Caller
	Via       string // "http" or "mcp"
	UserAgent string // cut to 200 characters
}

// Tool error codes.
const (
	CodeInvalidInput       = "INVALID_INPUT"
	CodeInvalidTag         = "INVALID_TAG"
	CodeComputedTag        = "COMPUTED_TAG"
	CodeIdenticalTags      = "IDENTICAL_TAGS"
	CodeUnknownDataset     = "UNKNOWN_DATASET"
	CodeTooManyItems       = "TOO_MANY_ITEMS"
	CodeNoPreview          = "NO_PREVIEW"
	CodePreviewExpired     = "PREVIEW_EXPIRED"
	CodeAlreadyExecuted    = "ALREADY_EXECUTED"
	CodeBusy               = "BUSY"
	CodeTagBusy            = "TAG_BUSY"
	CodeForbidden          = "FORBIDDEN"
	CodeNotFound           = "NOT_FOUND"
	CodeAmbiguousItem      = "AMBIGUOUS_ITEM"
	CodeOperationRunning   = "OPERATION_RUNNING"
	CodeAlreadyUndone      = "ALREADY_UNDONE"
	CodeNothingToUndo      = "NOTHING_TO_UNDO"
	CodeTimeout            = "TIMEOUT"
	CodeInternal           = "INTERNAL"
	MaxToolContentLength   = 8000
	toolContentTruncatedAt = MaxToolContentLength - 40
)

// FieldProblem is one bad input field of an INVALID_INPUT or INVALID_TAG error.
type FieldProblem struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// ToolFailure builds an error envelope: data is {"error": {"code", "message", ...extra}},
// and the message is the content.
func ToolFailure(code, message string, extra map[string]any) ToolResult {
	e := map[string]any{"code": code, "message": message}
	for k, v := range extra {
		e[k] = v
	}
	return ToolResult{Content: message, Data: map[string]any{"error": e}, IsError: true}
}

// Text builds a tool's content line by line and keeps it within MaxToolContentLength: a
// line that would not fit is replaced, with every later one, by "… and N more".
type Text struct {
	b       strings.Builder
	dropped int
}

// Line appends one formatted line.
func (t *Text) Line(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	if t.dropped > 0 || t.b.Len()+len(line)+1 > toolContentTruncatedAt {
		t.dropped++
		return
	}
	if t.b.Len() > 0 {
		t.b.WriteByte('\n')
	}
	t.b.WriteString(line)
}

// Room is how many more bytes a line may have and still fit; 0 once a line was dropped.
// Callers that close a list with their own "… and N more" line check it before each line.
func (t *Text) Room() int {
	if t.dropped > 0 {
		return 0
	}
	return max(0, toolContentTruncatedAt-t.b.Len()-1) // as Line counts: one byte for the newline
}

// String returns the text, closed by the count of lines that did not fit.
func (t *Text) String() string {
	if t.dropped == 0 {
		return t.b.String()
	}
	return t.b.String() + fmt.Sprintf("\n… and %d more lines", t.dropped)
}

// ContentTime shows a time to the second.
func ContentTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05Z") }

// DataTime shows a time in the API's form, milliseconds and Z.
func DataTime(t time.Time) string { return gtc.FormatAPITime(t) }

// Count formats n with thousands separators, as the texts show numbers (1,204).
func Count(n int) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// Snippet is the question snippet of an item: the msg of its last user turn, whitespace
// collapsed, cut at 80 characters with "…"; "(no question)" when empty.
func Snippet(it *gtc.Item) string {
	if q := rdOneLine(gtc.QuestionText(it), 80); q != "" {
		return q
	}
	return "(no question)"
}
