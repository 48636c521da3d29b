package api

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/agenttools"
	"github.com/gtc-dev/gtc/api/agent"
)

// agentRoutes adds the LLM tool endpoint: the listing and
// invocation under the prefix, and the MCP server on /mcp. Each part is served only when
// there is a registry and its setting is on; otherwise its paths are unknown routes.
func (s *Server) agentRoutes() {
	if s.agent == nil {
		return
	}
	p := s.opts.Prefix
	if s.opts.AgentToolsEnabled {
		s.e.Add(http.MethodGet, p+"/agent/tools", s.handleAgentListing, s.guard(http.MethodGet, p+"/agent/tools"), s.readBody)
		// The tool name and the caller's role are checked before the body: an unknown tool
		// answers 404 and a tool beyond the caller's role 403, before 413 or 415.
		s.e.Add(http.MethodPost, p+"/agent/tools/:name", s.handleAgentInvoke, s.knownTool,
			s.guard(http.MethodPost, p+"/agent/tools/:name"), s.authorizeTool, s.readBody)
	}
	if s.opts.AgentMCPEnabled {
		// Only POST is served: GET (a standalone event stream) and DELETE (ending a session)
		// have no meaning for a stateless server, so they answer 405 like any other method a
		// path does not list.
		s.e.Add(http.MethodPost, "/mcp", echo.WrapHandler(mcpErrors(s.agent.MCPHandler())),
			s.guard(http.MethodPost, "/mcp"), s.readBody, rewindBody)
	}
}

// handleAgentListing answers the tool definitions in the format asked for.
func (s *Server) handleAgentListing(c echo.Context) error {
	format := agent.FormatAnthropic
	if v, ok := c.QueryParams()["format"]; ok {
		format = v[0]
	}
	if !slices.Contains(agent.Formats, format) {
		return gtc.ValidationError([]gtc.FieldError{{Field: "format", Message: "must be one of: " + strings.Join(agent.Formats, ", ")}})
	}
	l, err := s.agent.Listing(format)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, l)
}

// knownTool answers 404 UNKNOWN_TOOL, naming the tools, for a name that is not one.
func (s *Server) knownTool(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if name := param(c, "name"); !s.agent.Has(name) {
			return &gtc.Error{Code: gtc.CodeUnknownTool,
				Message: "Unknown tool '" + name + "'; the tools are: " + strings.Join(agenttools.Names(), ", ")}
		}
		return next(c)
	}
}

// handleAgentInvoke runs one tool. Only transport problems are 4xx; everything the tool has
// to say, bad input included, is a 200 with the envelope, so the model can correct itself.
func (s *Server) handleAgentInvoke(c echo.Context) error {
	b := body(c)
	if _, err := agenttools.DecodeInput(b); err != nil {
		var ie *agenttools.InputError
		if errors.As(err, &ie) && ie.NotObject {
			return &gtc.Error{Code: gtc.CodeToolInputNotObject, Message: "Tool input must be a JSON object, got " + ie.Detail}
		}
		msg := err.Error()
		if ie != nil {
			msg = ie.Detail
		}
		return &gtc.Error{Code: gtc.CodeMalformedJSON, Message: "Request body is not valid JSON: " + msg}
	}
	r := c.Request()
	call := agenttools.ToolCall{Caller: gtc.CallerFrom(r.Context()), Via: "http", UserAgent: agent.CutUserAgent(r.UserAgent())}
	res, _ := s.agent.Invoke(r.Context(), call, param(c, "name"), b)
	return writeJSON(c, http.StatusOK, res)
}

// rewindBody hands a wrapped http.Handler the body that readBody has already read.
func rewindBody(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		b := body(c)
		r := c.Request()
		r.Body = io.NopCloser(bytes.NewReader(b))
		r.ContentLength = int64(len(b))
		return next(c)
	}
}

// mcpErrors gives the SDK's plain-text HTTP errors (a wrong Accept header, an unsupported
// protocol version, a body that is not JSON-RPC) the API's error body, so every answer of
// status ≥ 400 is JSON. JSON-RPC errors pass unchanged: MCP clients read them.
func mcpErrors(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cw := &plainErrorCatcher{ResponseWriter: w}
		h.ServeHTTP(cw, r)
		if cw.status == 0 {
			return
		}
		code := gtc.CodeBadRequest
		switch {
		case cw.status == http.StatusForbidden:
			code = gtc.CodeForbidden
		case cw.status == http.StatusMethodNotAllowed:
			code = gtc.CodeMethodNotAllowed
		case cw.status == http.StatusRequestEntityTooLarge:
			code = gtc.CodeBodyTooLarge
		case cw.status == http.StatusUnsupportedMediaType:
			code = gtc.CodeUnsupportedMediaType
		case cw.status >= 500:
			code = gtc.CodeInternal
		}
		detail := strings.TrimSpace(cw.buf.String())
		if detail == "" {
			detail = http.StatusText(cw.status)
		}
		b, _ := marshal(errorBody{Detail: detail, Status: cw.status, Code: code})
		w.Header().Set("Content-Type", "application/json")
		w.Header().Del("Content-Length")
		w.WriteHeader(cw.status)
		_, _ = w.Write(b)
	})
}

// plainErrorCatcher holds back an error answer that is not JSON; everything else goes
// through.
type plainErrorCatcher struct {
	http.ResponseWriter
	status int
	buf    bytes.Buffer
}

func (w *plainErrorCatcher) WriteHeader(status int) {
	if status >= 400 && !strings.HasPrefix(w.Header().Get("Content-Type"), "application/json") {
		w.status = status
		return
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *plainErrorCatcher) Write(b []byte) (int, error) {
	if w.status != 0 {
		return w.buf.Write(b)
	}
	return w.ResponseWriter.Write(b)
}

func (w *plainErrorCatcher) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok && w.status == 0 {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the real writer.
func (w *plainErrorCatcher) Unwrap() http.ResponseWriter { return w.ResponseWriter }
