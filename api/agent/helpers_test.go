package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/agenttools"
	"github.com/gtc-dev/gtc/api/agent"
)

// seen records the last call of a fake handler.
type seen struct {
	mu   sync.Mutex
	call agenttools.ToolCall
	args map[string]any
	n    int
}

func (s *seen) last() (agenttools.ToolCall, map[string]any, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.call, s.args, s.n
}

// echoHandlers answer every tool with the arguments and caller they got. A dataset named
// "fail" answers a tool error, "boom" panics.
func echoHandlers(s *seen) map[string]agent.Handler {
	out := map[string]agent.Handler{}
	for _, name := range agenttools.Names() {
		out[name] = func(_ context.Context, call agenttools.ToolCall, args map[string]any) agenttools.ToolResult {
			s.mu.Lock()
			s.call, s.args, s.n = call, args, s.n+1
			s.mu.Unlock()
			switch args["dataset"] {
			case "boom":
				panic("handler exploded")
			case "fail":
				return agenttools.ToolFailure(agenttools.CodeUnknownDataset, "Unknown dataset 'fail'.",
					map[string]any{"knownDatasets": []string{"a", "b"}})
			}
			return agenttools.ToolResult{Content: name + " ok",
				Data: map[string]any{"tool": name, "args": args, "user": call.Caller.UserID, "via": call.Via}}
		}
	}
	return out
}

// headerResolver is a stand-in for api.CallerResolver: X-User-Id is the caller, and a
// request without it is refused; no header at all (an in-process transport) is "inproc".
func headerResolver(h http.Header) (gtc.Caller, error) {
	if h == nil {
		return gtc.Caller{UserID: "inproc"}, nil
	}
	id := h.Get("X-User-Id")
	if id == "" {
		return gtc.Caller{}, errors.New("no principal")
	}
	return gtc.Caller{UserID: id}, nil
}

// allowAll is an Authorize that lets every caller use every tool; the permission table's
// own decisions are tested with the API (api/permissions_test.go).
func allowAll(gtc.Caller, string) error { return nil }

func newTools(t *testing.T, s *seen, log *bytes.Buffer) *agent.Tools {
	t.Helper()
	opts := agent.Options{Version: "test-version", ResolveCaller: headerResolver, Authorize: allowAll}
	if log != nil {
		opts.Log = slog.New(slog.NewJSONHandler(log, nil))
	}
	tools, err := agent.New(echoHandlers(s), opts)
	require.NoError(t, err)
	return tools
}

// plain turns a value into its JSON form as generic values, to compare what crosses a wire.
func plain(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	var out any
	require.NoError(t, json.Unmarshal(b, &out))
	return out
}
