package export

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/gtc-dev/gtc"
)

var fixtureNow = time.Date(2026, 1, 16, 9, 30, 0, 0, time.UTC)

const fixtureBucket = "00000000-0000-0000-0000-000000000000"

// fixtureItem builds a realistic item of about 4 KiB: a multi-turn conversation, tool
// calls, expected tools, references, metadata with numbers and nested nulls.
func fixtureItem(ds string, i int, status gtc.Status) *gtc.Item {
	r := rand.New(rand.NewPCG(7, uint64(i)))
	it := gtc.NewItem(ds, fmt.Sprintf("gt-%06d", i))
	it.Bucket = fixtureBucket
	it.Status = status
	for e := 0; e < 1+r.IntN(3); e++ {
		turn := fmt.Sprintf("t%d", 2*e+1)
		it.History = append(it.History,
			gtc.HistoryEntry{Role: "user", Msg: fmt.Sprintf("How do I rotate the signing keys of tenant %d without downtime? Step %d of the runbook says <restart> & wait.", i, e), TurnID: &turn},
			gtc.HistoryEntry{Role: "assistant", Msg: strings.Repeat("Rotate the secondary key first, update every client, then promote it. ", 4+r.IntN(6)), ExpectedBehavior: []string{"tool:search"}})
	}
	for c := 0; c < 1+r.IntN(3); c++ {
		step := int64(c + 1)
		it.ToolCalls = append(it.ToolCalls, gtc.ToolCall{ID: fmt.Sprintf("call_%d", c), Name: "search_docs", CallType: "tool",
			Arguments: json.RawMessage(`{"query":"rotate keys","top":5,"filters":{"lang":"en","since":null}}`), StepNumber: &step,
			Response: json.RawMessage(`{"status":"ok","hits":[{"id":"doc-1","score":0.87},{"id":"doc-2","score":0.5}]}`)})
	}
	it.ExpectedTools.Required = []gtc.ToolExpectation{{Name: "search_docs"}}
	refs := make([]map[string]any, 0, 3)
	for k := 0; k < r.IntN(4); k++ {
		refs = append(refs, map[string]any{"url": fmt.Sprintf(" https://docs.example.com/keys/rotate?ref=%d ", k), "title": "Rotating keys", "bonus": k > 1})
	}
	if len(refs) > 0 {
		data, _ := json.Marshal(map[string]any{"references": refs})
		it.Plugins[gtc.RAGCompatSlot] = gtc.PluginPayload{Kind: gtc.RAGCompatSlot, Version: "1.0", Data: data}
	}
	it.Metadata = json.RawMessage(fmt.Sprintf(`{"origin":"fixture","big":12345678901234567890,"score":0.1,"nested":{"x":null},"seq":%d}`, i))
	it.ManualTags = []string{"source:synthetic", "topic:keys"}
	it.ComputedTags = []string{"turns:multiturn"}
	it.Comment = "Check against the release notes."
	created := fixtureNow.Add(-time.Duration(i) * time.Minute)
	it.CreatedAt = &created
	it.UpdatedAt = created
	who := "alice@example.com"
	it.CreatedBy = &who
	it.UpdatedBy = &who
	if status == gtc.StatusApproved {
		it.ReviewedAt = &created
	}
	return it
}

// rec decodes a JSON object into a Record.
func rec(doc string) Record {
	v, err := DecodeJSON([]byte(doc))
	if err != nil {
		panic(err)
	}
	return Record(v.(map[string]any))
}
