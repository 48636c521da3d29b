package export

import (
	"encoding/csv"
	"encoding/json"
	"io"
	"strings"

	"github.com/gtc-dev/gtc"
)

// CSV is the csv format: RFC 4180 text (comma, CRLF, UTF-8 without BOM) with a header row
// and a fixed column list. Arrays and objects are written as compact JSON. No
// spreadsheet-formula escaping is applied: the file is data for programs, and changing cell
// text would break round trips — do not open an untrusted export in a spreadsheet.
type CSV struct{}

// CSVColumns are the fixed columns of the csv format, in order.
var CSVColumns = []string{
	"id", "datasetName", "bucket", "status",
	"question", "answer", "manualTags", "computedTags", "tags", "comment", "scenarioId",
	"assignedTo", "assignedAt", "updatedAt", "updatedBy", "reviewedAt", "createdBy", "createdAt",
	"totalReferences", "referenceUrls", "history", "contextEntries", "toolCalls", "expectedTools",
	"feedback", "metadata", "plugins", "traceIds", "tracePayload",
}

// Name is "csv".
func (CSV) Name() string { return "csv" }

// MediaType is text/csv with the charset.
func (CSV) MediaType() string { return "text/csv; charset=utf-8" }

// Extension is "csv".
func (CSV) Extension() string { return "csv" }

// FileStem is "ground-truth-items".
func (CSV) FileStem() string { return "ground-truth-items" }

// NewEncoder writes the header row.
func (CSV) NewEncoder(w io.Writer, h Header) (Encoder, error) {
	cw := csv.NewWriter(w)
	cw.UseCRLF = true
	cols := append(append([]string(nil), CSVColumns...), h.ExtraColumns...)
	if err := cw.Write(cols); err != nil {
		return nil, err
	}
	return &csvEncoder{w: cw, cols: cols, row: make([]string, len(cols))}, nil
}

type csvEncoder struct {
	w    *csv.Writer
	cols []string
	row  []string
	n    int
	buf  []byte
}

func (e *csvEncoder) Encode(rec Record) error {
	for i, c := range e.cols {
		var err error
		switch c {
		case "question", "answer":
			e.row[i] = recordQA(rec, c == "question")
		case "referenceUrls":
			urls := referenceURLs(rec)
			e.buf, err = AppendJSON(e.buf[:0], urls)
			e.row[i] = string(e.buf)
		default:
			e.row[i], err = e.cell(rec[c])
		}
		if err != nil {
			return err
		}
	}
	if err := e.w.Write(e.row); err != nil {
		return err
	}
	e.n++
	return nil
}

func (e *csvEncoder) cell(v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "", nil
	case string:
		return x, nil
	case json.Number:
		return string(x), nil
	case bool:
		if x {
			return "true", nil
		}
		return "false", nil
	}
	var err error
	e.buf, err = AppendJSON(e.buf[:0], v)
	return string(e.buf), err
}

func (e *csvEncoder) Close() error {
	e.w.Flush()
	return e.w.Error()
}

func (e *csvEncoder) Count() int { return e.n }

// recordQA derives the question (the last user turn with text) or the answer (the last
// agent turn with text) from a record's history, trimmed; "" without history.
func recordQA(rec Record, question bool) string {
	history, _ := rec["history"].([]any)
	for i := len(history) - 1; i >= 0; i-- {
		turn, _ := history[i].(map[string]any)
		role, _ := turn["role"].(string)
		if gtc.IsUserRole(role) != question {
			continue
		}
		msg, _ := turn["msg"].(string)
		if m := strings.TrimSpace(msg); m != "" {
			return m
		}
	}
	return ""
}

// isNotBlank reports whether s has a non-space character.
func isNotBlank(s string) bool { return strings.TrimSpace(s) != "" }
