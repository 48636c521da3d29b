package agenttools

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/tagging"
)

// U is a user turn, shorthand for the test vectors.
func U(msg string) gtc.HistoryEntry { return gtc.HistoryEntry{Role: "user", Msg: msg} }

// A is an assistant turn.
func A(msg string) gtc.HistoryEntry { return gtc.HistoryEntry{Role: "assistant", Msg: msg} }

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

func defaultRegistry(t testing.TB) *tagging.Registry {
	t.Helper()
	reg, err := tagging.NewDefaultRegistry()
	require.NoError(t, err)
	return reg
}

func defaultGroups(t testing.TB) *tagging.Groups {
	t.Helper()
	g, err := tagging.LoadGroups("")
	require.NoError(t, err)
	return g
}

// captureLogger records log output so tests can check what was logged and at which level.
func captureLogger() (*slog.Logger, *bytes.Buffer) {
	var buf bytes.Buffer
	return slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), &buf
}
