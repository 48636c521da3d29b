package tagging

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	gtc "github.com/gtc-dev/gtc"
	"github.com/stretchr/testify/require"
)

// U is a user turn, shorthand for the test vectors.
func U(msg string) gtc.HistoryEntry { return gtc.HistoryEntry{Role: "user", Msg: msg} }

// A is an assistant turn.
func A(msg string) gtc.HistoryEntry { return gtc.HistoryEntry{Role: "assistant", Msg: msg} }

// turn is a turn with any role.
func turn(role, msg string) gtc.HistoryEntry { return gtc.HistoryEntry{Role: role, Msg: msg} }

// W is n distinct words joined by single spaces.
func W(n int) string {
	words := make([]string, n)
	for i := range words {
		words[i] = fmt.Sprintf("word%d", i+1)
	}
	return strings.Join(words, " ")
}

// refsData is a rag-compat data object with one {"url": …} reference per URL.
func refsData(urls ...string) string {
	refs := make([]map[string]string, len(urls))
	for i, u := range urls {
		refs[i] = map[string]string{"url": u}
	}
	b, err := json.Marshal(map[string]any{"references": refs})
	if err != nil {
		panic(err)
	}
	return string(b)
}

// newItem builds an item of dataset ds with the given history and, when data is not "",
// that rag-compat data object.
func newItem(ds, data string, history ...gtc.HistoryEntry) *gtc.Item {
	it := gtc.NewItem(ds, "item-1")
	it.History = append(it.History, history...)
	if data != "" {
		it.Plugins[gtc.RAGCompatSlot] = gtc.PluginPayload{Kind: "rag-compat", Version: "1.0", Data: json.RawMessage(data)}
	}
	return it
}

func defaultRegistry(t testing.TB) *Registry {
	t.Helper()
	reg, err := NewDefaultRegistry()
	require.NoError(t, err)
	return reg
}

func defaultGroups(t testing.TB) *Groups {
	t.Helper()
	g, err := LoadGroups("")
	require.NoError(t, err)
	return g
}

// captureLogger records log output so tests can check what was logged and at which level.
func captureLogger() (*slog.Logger, *bytes.Buffer) {
	var buf bytes.Buffer
	return slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), &buf
}

// logRecords decodes the JSON lines of a captureLogger buffer.
func logRecords(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if line == "" {
			continue
		}
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec))
		out = append(out, rec)
	}
	return out
}
