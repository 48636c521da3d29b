package tagging

import (
	"encoding/json"
	"testing"

	gtc "github.com/gtc-dev/gtc"
	"github.com/stretchr/testify/require"
)

// benchItem is a realistic item: four turns of 10–25 words, three references with the keys
// the curator UI writes, two tool calls.
func benchItem() *gtc.Item {
	it := gtc.NewItem("support-kb", "item-0042")
	it.History = []gtc.HistoryEntry{
		U("How do I reset the admin password on the appliance after the last firmware upgrade failed halfway?"),
		A("You can reset it from the recovery console. Boot into recovery mode, choose the password option and follow the prompts shown on screen."),
		U("The recovery console asks me for a license key that I no longer have, where can I find the key for my installation?"),
		A("The key is printed on the license certificate and is also listed in the customer portal under Products, then Licenses, for every registered installation."),
	}
	it.Plugins[gtc.RAGCompatSlot] = gtc.PluginPayload{Kind: gtc.RAGCompatSlot, Version: "1.0", Data: json.RawMessage(`{
  "references": [
    {"url": "https://support.example.com/help/articles/CS431120", "title": "Resetting the admin password", "visitedAt": "2025-01-02T10:00:00Z", "keyParagraph": "Boot the appliance into recovery mode and choose Reset password."},
    {"url": "https://support.example.com/kb/licensing/where-to-find-your-key", "title": "Where to find your license key", "visitedAt": "2025-01-02T10:01:30Z", "keyParagraph": "Every license certificate lists the key under \"Activation\"."},
    {"url": "https://portal.example.com/products/licenses", "title": "Customer portal: licenses", "visitedAt": "2025-01-02T10:02:10Z", "keyParagraph": "Registered installations and their keys."}
  ]
}`)}
	it.ToolCalls = []gtc.ToolCall{
		{ID: "call-1", Name: "search_kb", CallType: "tool", Arguments: json.RawMessage(`{"query":"reset admin password recovery"}`), Response: json.RawMessage(`{"hits":3}`)},
		{ID: "call-2", Name: "lookup_license", CallType: "tool", Arguments: json.RawMessage(`{"customer":"acme"}`), Response: json.RawMessage(`{"found":true}`)},
	}
	return it
}

// benchTags are four manual tags as the curator UI sends them; one needs normalization.
var benchTags = []string{"source:sme", "topic:install", " Intent : Action ", "difficulty:medium"}

func BenchmarkPrepare(b *testing.B) {
	vs, err := NewValidators(nil, defaultGroups(b).Schema())
	require.NoError(b, err)
	p := NewPipeline(defaultRegistry(b), vs, nil)
	it := benchItem()
	prep, err := p.Prepare(it, benchTags, true)
	require.NoError(b, err)
	require.Equal(b, []string{"difficulty:medium", "intent:action", "source:sme", "topic:install"}, prep.ManualTags)
	require.Equal(b, []string{"dataset:support-kb", "question_length:medium", "reference_type:article",
		"reference_type:helpcenter", "retrieval_behavior:rich", "turns:multiturn"}, prep.ComputedTags)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Prepare(it, benchTags, true); err != nil {
			b.Fatal(err)
		}
	}
}
