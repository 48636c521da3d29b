package export

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/gtc-dev/gtc"
)

// SplitTurns is the split_turns processor: it turns a multi-turn conversation into one
// record per answered exchange, the single-turn shape most evaluation harnesses expect.
//
// An exchange is one user turn followed by every agent turn up to the next user turn; it is
// answered when it has at least one agent turn. Turns before the first user turn are the
// preamble. Each output record has history = its exchange, precedingHistory = every turn
// before the exchange's user turn, and sourceItemId, turnIndex and turnCount. With two or
// more answered exchanges the ids become <id>__t<k>. Every other key (tool calls, expected
// tools, context, feedback, metadata, plugins, tag lists, timestamps) describes the whole
// conversation and is copied to each output record unchanged. A record without answered
// exchanges is passed on with turnIndex and turnCount 0.
type SplitTurns struct{}

// Name is "split_turns".
func (SplitTurns) Name() string { return "split_turns" }

// splitTurnsColumns are the csv columns a chain with split_turns adds.
var splitTurnsColumns = []string{"sourceItemId", "turnIndex", "turnCount"}

// splitTurnsTypedColumns are the parquet columns a chain with split_turns adds.
var splitTurnsTypedColumns = []Column{
	{"sourceItemId", ColumnString}, {"turnIndex", ColumnInt}, {"turnCount", ColumnInt},
	{"precedingHistory", ColumnJSON},
}

type exchange struct{ start, end int } // history[start:end], history[start] is the user turn

// Process splits one record.
func (SplitTurns) Process(_ context.Context, rec Record, emit func(Record) error) error {
	id := rec.ID()
	fail := func(msg string) error { return &RecordError{Processor: "split_turns", RecordID: id, Message: msg} }
	history, ok := rec["history"].([]any)
	if !ok {
		return fail("history must be a list of turns")
	}
	users := make([]bool, len(history))
	for i, h := range history {
		turn, ok := h.(map[string]any)
		if !ok {
			return fail(fmt.Sprintf("history[%d] must be an object", i))
		}
		role, _ := turn["role"].(string)
		users[i] = gtc.IsUserRole(role)
	}
	var answered []exchange
	for i := 0; i < len(history); i++ {
		if !users[i] {
			continue
		}
		end := i + 1
		for end < len(history) && !users[end] {
			end++
		}
		if end > i+1 {
			answered = append(answered, exchange{i, end})
		}
		i = end - 1
	}
	n := len(answered)
	num := func(k int) json.Number { return json.Number(strconv.Itoa(k)) }
	if n == 0 {
		rec["sourceItemId"] = id
		rec["turnIndex"] = num(0)
		rec["turnCount"] = num(0)
		rec["precedingHistory"] = []any{}
		return emit(rec)
	}
	for k, ex := range answered {
		out := rec
		if k < n-1 {
			// Every record but the last is a copy; the last one reuses the input.
			out = CopyRecord(rec)
		}
		out["history"] = deepCopy(history[ex.start:ex.end])
		out["precedingHistory"] = deepCopy(history[:ex.start])
		out["sourceItemId"] = id
		out["turnIndex"] = num(k + 1)
		out["turnCount"] = num(n)
		if n > 1 {
			out["id"] = id + "__t" + strconv.Itoa(k+1)
		}
		if err := emit(out); err != nil {
			return err
		}
	}
	return nil
}
