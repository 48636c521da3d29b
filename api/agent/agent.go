// Package agent is the transport of the agent tool endpoint: the listing of the tool
// definitions in each client's format, dispatch to the tool handlers, and the MCP server.
// What a tool is (its definition, argument schema and checks, result envelope) and what it
// does belong to package agenttools; this package only makes sure a handler sees a checked
// input and its caller, over HTTP or MCP.
package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/agenttools"
)

// Handler runs one tool. args holds the checked input with defaults applied, as Go values:
// string, bool, int and []string; an absent optional key without a default is absent. A
// handler answers every outcome, errors included, with an envelope.
type Handler func(ctx context.Context, call agenttools.ToolCall, args map[string]any) agenttools.ToolResult

// Options configure the tools.
type Options struct {
	// Version is the binary version the MCP server reports.
	Version string
	// ResolveCaller works out the caller of an MCP call from its HTTP headers, exactly as
	// the identity middleware of the HTTP API does (api.CallerResolver). Required.
	ResolveCaller func(http.Header) (gtc.Caller, error)
	// Authorize refuses a caller whose role does not allow the tool (api.AuthorizeTool,
	// the permission table). Required: every call of every transport passes through it.
	Authorize func(c gtc.Caller, tool string) error
	// Log receives the faults of handlers; nil discards.
	Log *slog.Logger
	// Observe, when set, is told of every call of a known tool once it is answered: the
	// tool, the mode ("preview" or "execute" for the tools with dry_run, else "read") and the
	// outcome ("ok" or the lower-cased error code of the envelope).
	Observe func(tool, mode, outcome string)
}

// Tools is the tool registry: one instance feeds the listing, HTTP invocation and MCP.
type Tools struct {
	defs    []*tool
	byName  map[string]*tool
	opts    Options
	log     *slog.Logger
	version string
	server  *mcp.Server
}

// tool is a definition bound to its handler and its parsed schema.
type tool struct {
	agenttools.Definition
	handler Handler
	check   *agenttools.Checker
	mcp     *mcp.Tool
	// hasDryRun marks the tools that preview or execute (their schema has dry_run).
	hasDryRun bool
}

// New binds a handler to each of the tools. Every tool needs a handler and every
// handler a tool.
func New(handlers map[string]Handler, opts Options) (*Tools, error) {
	if opts.ResolveCaller == nil {
		return nil, errors.New("agent: Options.ResolveCaller is required")
	}
	if opts.Authorize == nil {
		return nil, errors.New("agent: Options.Authorize is required")
	}
	t := &Tools{byName: map[string]*tool{}, opts: opts, log: opts.Log}
	if t.log == nil {
		t.log = slog.New(slog.DiscardHandler)
	}
	var missing []string
	for _, d := range agenttools.Definitions() {
		h := handlers[d.Name]
		if h == nil {
			missing = append(missing, d.Name)
			continue
		}
		c, err := agenttools.NewChecker(d)
		if err != nil {
			return nil, fmt.Errorf("agent: schema of %s: %w", d.Name, err)
		}
		tl := &tool{Definition: d, handler: h, check: c, hasDryRun: d.Previews()}
		t.defs = append(t.defs, tl)
		t.byName[d.Name] = tl
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("agent: no handler for %s", strings.Join(missing, ", "))
	}
	for name := range handlers {
		if t.byName[name] == nil {
			return nil, fmt.Errorf("agent: handler for unknown tool %q", name)
		}
	}
	v, err := agenttools.ToolsetVersion()
	if err != nil {
		return nil, err
	}
	t.version = v
	t.buildMCP()
	return t, nil
}

// Has reports whether name is a tool.
func (t *Tools) Has(name string) bool { return t.byName[name] != nil }

// ToolsetVersion is the first 12 hex digits of the SHA-256 of the canonical definitions.
func (t *Tools) ToolsetVersion() string { return t.version }

// Invoke runs tool name on a raw JSON input (nil or empty = {}). known is false, and the
// result empty, when name is not a tool. A caller whose role does not allow the tool gets a
// FORBIDDEN envelope naming the role needed. Input that is not a JSON object, fails the schema
// or breaks a per-operation rule is an INVALID_INPUT envelope; the handler does not run. A
// handler that panics gives an INTERNAL envelope with the id of the log line.
func (t *Tools) Invoke(ctx context.Context, call agenttools.ToolCall, name string, input []byte) (res agenttools.ToolResult, known bool) {
	tl := t.byName[name]
	if tl == nil {
		return agenttools.ToolResult{}, false
	}
	mode := "read"
	if tl.hasDryRun {
		mode = "preview"
	}
	if t.opts.Observe != nil {
		defer func() { t.opts.Observe(name, mode, Outcome(res)) }()
	}
	if err := t.opts.Authorize(call.Caller, name); err != nil {
		msg := err.Error()
		if e, ok := gtc.AsError(err); ok {
			msg = e.Message
		}
		return agenttools.ToolFailure(agenttools.CodeForbidden, msg+".", nil), true
	}
	raw, err := agenttools.DecodeInput(input)
	if err != nil {
		return agenttools.ToolFailure(agenttools.CodeInvalidInput, "Invalid input: "+err.Error()+".",
			map[string]any{"fields": []agenttools.FieldProblem{{Field: "body", Message: err.Error()}}}), true
	}
	args, fail := tl.check.Check(raw)
	if dry, isBool := raw["dry_run"].(bool); tl.hasDryRun && isBool && !dry {
		mode = "execute"
	}
	if fail != nil {
		return *fail, true
	}
	return t.run(ctx, tl, call, args), true
}

// Outcome is "ok" for a successful result and the lower-cased error code of a failure
// ("internal" when the envelope has none).
func Outcome(res agenttools.ToolResult) string {
	if !res.IsError {
		return "ok"
	}
	if data, ok := res.Data.(map[string]any); ok {
		if e, ok := data["error"].(map[string]any); ok {
			if code, ok := e["code"].(string); ok && code != "" {
				return strings.ToLower(code)
			}
		}
	}
	return "internal"
}

// run calls the handler and turns a panic into an INTERNAL envelope: the handler may have
// been anywhere in a write, so the text sends the model to the audit log before a retry.
func (t *Tools) run(ctx context.Context, tl *tool, call agenttools.ToolCall, args map[string]any) (res agenttools.ToolResult) {
	defer func() {
		if rec := recover(); rec != nil {
			id := newErrorID()
			t.log.ErrorContext(ctx, "agent tool panic", "error_id", id, "tool", tl.Name, "user", call.Caller.UserID,
				"via", call.Via, "panic", fmt.Sprint(rec), "stack", string(debug.Stack()))
			msg := "Internal error (error id " + id + "); the server log has the details. " +
				"Check list_tag_operations before retrying a change."
			res = agenttools.ToolFailure(agenttools.CodeInternal, msg, map[string]any{"errorId": id})
		}
	}()
	return tl.handler(ctx, call, args)
}

func newErrorID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "err_" + hex.EncodeToString(b[:])
}

// CutUserAgent keeps the first 200 characters of a User-Agent header, as the audit log
// records it.
func CutUserAgent(ua string) string {
	if r := []rune(ua); len(r) > 200 {
		return string(r[:200])
	}
	return ua
}
