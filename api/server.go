// Package api serves the gtc HTTP API with echo: routes, request decoding, identity, error
// bodies and the OpenAPI document. It knows the domain (package gtc) and nothing of stores.
package api

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/api/agent"
	"github.com/gtc-dev/gtc/api/openapi"
	"github.com/gtc-dev/gtc/export"
	"github.com/gtc-dev/gtc/jobs"
)

// FrontendConfig is what GET /v1/config tells the curator web frontend.
type FrontendConfig struct {
	RequireReferenceVisit   bool     `json:"requireReferenceVisit"`
	RequireKeyParagraph     bool     `json:"requireKeyParagraph"`
	SelfServeLimit          int      `json:"selfServeLimit"`
	TrustedReferenceDomains []string `json:"trustedReferenceDomains"`
}

// Options are the HTTP settings of the server.
type Options struct {
	Prefix             string
	MaxBodyBytes       int64
	RequestTimeout     time.Duration
	Auth               AuthOptions
	Frontend           FrontendConfig
	PaginationMinLimit int
	PaginationMaxLimit int
	Version            string
	// ExportTimeout is the deadline of an export request or an export file download
	// (GTC_EXPORT_TIMEOUT); they do not run under RequestTimeout.
	ExportTimeout time.Duration
	// AgentToolsEnabled serves GET/POST {prefix}/agent/tools* (GTC_AGENT_TOOLS_ENABLED) and
	// AgentMCPEnabled the MCP server on /mcp (GTC_AGENT_MCP_ENABLED), when Deps.Agent is
	// set. Otherwise those paths are unknown routes (404).
	AgentToolsEnabled bool
	AgentMCPEnabled   bool
	// Metrics, when set, is served at GET /metrics (the Prometheus text format). Who may
	// read it follows the auth mode like every path: anonymous in Easy Auth mode only when
	// listed in Auth.AnonymousPaths.
	Metrics http.Handler
}

// RequestObserver is told of every request: when it starts, and when it is answered with
// its route template ("unmatched" when no route matched; never the raw path), method,
// status and duration. It must be safe for concurrent use.
type RequestObserver interface {
	RequestStarted()
	RequestDone(route, method string, status int, d time.Duration)
}

// Server is the HTTP API. Build it with New and serve Handler().
type Server struct {
	opts   Options
	cur    *gtc.Curator
	jobs   *jobs.Runner
	search gtc.SearchProvider
	exp    *export.Exporter
	agent  *agent.Tools
	long   map[string]bool // routes that run under ExportTimeout
	// resolveCaller works out the caller from request headers (CallerResolver).
	resolveCaller func(http.Header) (gtc.Caller, error)
	observer      RequestObserver
	log           *slog.Logger
	e             *echo.Echo
	draining      atomic.Bool

	docOnce     sync.Once
	docJSON     []byte
	schemasOnce sync.Once
	schemas     *openapi.Doc
	page        pageState // the front door and the API reference
}

// Deps are the services the API serves.
type Deps struct {
	Curator *gtc.Curator
	// Jobs runs the background jobs; New registers the job types of the API with it. nil
	// makes a runner of 2 slots over the curator's store, keeping jobs 24 h, without the
	// scan that takes over other servers' jobs (its owner would have to Close it).
	Jobs   *jobs.Runner
	Search gtc.SearchProvider // reference search; nil answers no results
	// Exporter runs exports and reads stored snapshots; nil answers the export routes 503.
	Exporter *export.Exporter
	// Agent is the agent tool registry; nil serves neither the tool routes nor /mcp. Build
	// it with agent.Options.ResolveCaller = CallerResolver(Options.Auth).
	Agent *agent.Tools
	// Observer counts and times requests (the metrics); nil counts nothing.
	Observer RequestObserver
	Log      *slog.Logger // nil discards
}

// New builds the server and its routes.
func New(d Deps, opts Options) *Server {
	cur, log := d.Curator, d.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if d.Jobs == nil && cur != nil {
		d.Jobs = jobs.New(jobs.Options{Store: cur.Store().Jobs(), Leases: cur.Store().Leases(), Max: 2, Retention: 24 * time.Hour, Log: log})
	}
	if opts.Prefix == "" {
		opts.Prefix = "/v1"
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 10 << 20
	}
	if opts.PaginationMinLimit <= 0 {
		opts.PaginationMinLimit = 1
	}
	if opts.PaginationMaxLimit <= 0 {
		opts.PaginationMaxLimit = 100
	}
	if opts.Frontend.TrustedReferenceDomains == nil {
		opts.Frontend.TrustedReferenceDomains = []string{}
	}
	if d.Search == nil {
		d.Search = gtc.NoSearch{}
	}
	s := &Server{opts: opts, cur: cur, jobs: d.Jobs, search: d.Search, exp: d.Exporter, agent: d.Agent, log: log,
		resolveCaller: CallerResolver(opts.Auth), observer: d.Observer}
	if s.jobs != nil {
		s.jobs.Handle(JobRecomputeTags, s.recomputeJob)
	}
	s.long = s.exportRoutes()
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = s.errorHandler
	e.Use(s.base, s.sameOrigin(), s.identity, s.routeGuard, s.pages)
	s.e = e
	s.routes()
	return s
}

// Handler returns the http.Handler of the API.
func (s *Server) Handler() http.Handler { return s.e }

// SetDraining makes /readyz answer 503 while the server shuts down.
func (s *Server) SetDraining() { s.draining.Store(true) }

// tracerName names the spans of this package. The tracer is looked up per span, so a
// provider installed later (or replaced in a test) is always the one used.
const tracerName = "github.com/gtc-dev/gtc/api"

const (
	ctxRequestID = "gtc.requestID"
	ctxUser      = "gtc.user"
	ctxBody      = "gtc.body"
)

func requestID(c echo.Context) string {
	id, _ := c.Get(ctxRequestID).(string)
	return id
}

func validRequestID(s string) bool {
	if len(s) < 1 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

func newRequestID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// base sets the headers every response carries, the request id and deadline, and logs one
// line per request.
func (s *Server) base(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		start := time.Now()
		r := c.Request()
		id := r.Header.Get("X-Request-Id")
		if !validRequestID(id) {
			id = newRequestID()
		}
		c.Set(ctxRequestID, id)
		route := c.Path()
		if route == "" || c.Get(echo.ContextKeyHeaderAllow) != nil {
			route = "unmatched"
		}
		if s.observer != nil {
			s.observer.RequestStarted()
		}
		// The request span continues the caller's trace (W3C traceparent) and is the
		// parent of every store call, export stage and Azure SDK call of the request.
		ctx, span := otel.Tracer(tracerName).Start(otel.GetTextMapPropagator().Extract(r.Context(), propagation.HeaderCarrier(r.Header)),
			r.Method+" "+route, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("http.request.method", r.Method), attribute.String("http.route", route),
				attribute.String("gtc.request_id", id)))
		defer span.End()
		r = r.WithContext(ctx)
		c.SetRequest(r)
		h := c.Response().Header()
		h.Set("X-Request-Id", id)
		h.Set("X-Content-Type-Options", "nosniff")
		p := r.URL.Path
		if p == s.opts.Prefix || strings.HasPrefix(p, s.opts.Prefix+"/") || p == "/healthz" || p == "/readyz" {
			h.Set("Cache-Control", "no-store")
		}
		if s.opts.RequestTimeout > 0 && r.Body != nil && r.Body != http.NoBody {
			// The body must arrive within the request deadline: a client that trickles it
			// would otherwise hold a connection and a goroutine for as long as it likes.
			// readBody lifts the deadline once the body is in, so a long answer (an export)
			// is not cut by it.
			_ = http.NewResponseController(c.Response()).SetReadDeadline(start.Add(s.opts.RequestTimeout))
		}
		if s.opts.RequestTimeout > 0 && !s.long[c.Path()] {
			ctx, cancel := context.WithTimeout(r.Context(), s.opts.RequestTimeout)
			defer cancel()
			c.SetRequest(r.WithContext(ctx))
		}
		defer func() {
			if rec := recover(); rec != nil {
				if rec == http.ErrAbortHandler {
					// A response that has started and cannot be finished: net/http drops the
					// connection without the final chunk, so the client sees a cut body.
					s.log.WarnContext(r.Context(), "request", "request_id", id, "method", r.Method, "route", c.Path(),
						"path", r.URL.Path, "status", c.Response().Status, "aborted", true,
						"duration_ms", float64(time.Since(start).Microseconds())/1000, "bytes_out", c.Response().Size)
					panic(rec)
				}
				s.log.ErrorContext(r.Context(), "panic in handler", "request_id", id, "panic", rec)
				err = &gtc.Error{Code: gtc.CodeInternal, Message: "Internal server error"}
			}
			if err != nil {
				c.Error(err)
				err = nil
			}
			status := c.Response().Status
			elapsed := time.Since(start)
			if s.observer != nil {
				s.observer.RequestDone(route, r.Method, status, elapsed)
			}
			span.SetAttributes(attribute.Int("http.response.status_code", status))
			if status >= 500 {
				span.SetStatus(codes.Error, http.StatusText(status))
			}
			user, _ := c.Get(ctxUser).(string)
			level := slog.LevelInfo
			if status >= 500 {
				level = slog.LevelError
			}
			attrs := []any{"request_id", id, "method", r.Method, "route", c.Path(), "path", r.URL.Path,
				"status", status, "duration_ms", float64(elapsed.Microseconds()) / 1000,
				"user", user, "bytes_out", c.Response().Size}
			if sc := span.SpanContext(); sc.IsValid() {
				attrs = append(attrs, "trace_id", sc.TraceID().String(), "span_id", sc.SpanID().String())
			}
			s.log.Log(r.Context(), level, "request", attrs...)
		}()
		return next(c)
	}
}

// sameOrigin refuses a state-changing request (any method but GET, HEAD and OPTIONS) that
// the browser marks as cross-origin: Sec-Fetch-Site other than same-origin or none, or,
// from browsers that do not send it, an Origin whose host is not the request's Host. A page
// on another site must not change items with the credentials the browser adds (cookies of
// the platform's sign-in), whatever the body or its absence. Requests that are not from a
// browser (curl, SDKs, MCP clients) send neither header and pass.
func (s *Server) sameOrigin() echo.MiddlewareFunc {
	csrf := http.NewCrossOriginProtection()
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			if err := csrf.Check(r); err != nil {
				return &gtc.Error{Code: gtc.CodeForbidden,
					Message: "Forbidden: cross-origin " + r.Method + " requests are refused; send it from the page's own origin"}
			}
			return next(c)
		}
	}
}

// routeGuard answers what echo's router would get wrong for this API: OPTIONS is not
// handled (405 with Allow, never 204), and paths with an empty segment or a trailing slash
// never match a route.
func (s *Server) routeGuard(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		// The path as sent: an encoded slash (%2F) belongs to a path parameter, it does not
		// make an empty segment.
		p := r.URL.EscapedPath()
		if strings.HasPrefix(p, s.opts.Prefix+"/") && (strings.HasSuffix(p, "/") || strings.Contains(p, "//")) {
			return echo.ErrNotFound
		}
		// echo marks a known path with an unknown method by setting the allowed methods.
		if allow, ok := c.Get(echo.ContextKeyHeaderAllow).(string); ok && allow != "" {
			var methods []string
			for _, m := range strings.Split(allow, ",") {
				if m = strings.TrimSpace(m); m != "" && m != http.MethodOptions {
					methods = append(methods, m)
				}
			}
			c.Response().Header().Set(echo.HeaderAllow, strings.Join(methods, ", "))
			return echo.ErrMethodNotAllowed
		}
		return next(c)
	}
}

func (s *Server) bodyTooLarge() *gtc.Error {
	return &gtc.Error{Code: gtc.CodeBodyTooLarge, Message: "Request body exceeds the limit of " + strconv.FormatInt(s.opts.MaxBodyBytes, 10) + " bytes"}
}

// readBody runs on every matched route: it enforces the body limit (413, before reading
// when Content-Length declares too much), reads the body, treats whitespace as no body and
// checks the media type of a non-empty one (415).
func (s *Server) readBody(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.ContentLength > s.opts.MaxBodyBytes {
			return s.bodyTooLarge()
		}
		if r.Body == nil || r.Body == http.NoBody {
			return next(c)
		}
		data, err := io.ReadAll(io.LimitReader(r.Body, s.opts.MaxBodyBytes+1))
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				c.Response().Header().Set(echo.HeaderConnection, "close")
				return &gtc.Error{Code: gtc.CodeRequestTimeout,
					Message: "The request body did not arrive within " + s.opts.RequestTimeout.String() + " (GTC_REQUEST_TIMEOUT)"}
			}
			return gtc.ValidationError([]gtc.FieldError{{Field: "body", Message: "could not be read"}})
		}
		_ = http.NewResponseController(c.Response()).SetReadDeadline(time.Time{})
		if int64(len(data)) > s.opts.MaxBodyBytes {
			return s.bodyTooLarge()
		}
		if len(bytes.TrimSpace(data)) == 0 {
			return next(c)
		}
		if ct := r.Header.Get(echo.HeaderContentType); ct != "" {
			mt, _, err := mime.ParseMediaType(ct)
			if err != nil || !(mt == "application/json" || strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json")) {
				return &gtc.Error{Code: gtc.CodeUnsupportedMediaType, Message: "Unsupported media type: send application/json"}
			}
		}
		c.Set(ctxBody, data)
		return next(c)
	}
}

// body returns the request body, or nil when there is none.
func body(c echo.Context) []byte {
	b, _ := c.Get(ctxBody).([]byte)
	return b
}

// requireBody returns the body or the 422 of a required body that is missing.
func requireBody(c echo.Context) ([]byte, error) {
	b := body(c)
	if b == nil {
		return nil, gtc.ValidationError([]gtc.FieldError{{Field: "body", Message: "required"}})
	}
	return b, nil
}

// param returns a path parameter percent-decoded once. echo leaves the
// parameters encoded when it routed on the raw path.
func param(c echo.Context, name string) string {
	v := c.Param(name)
	if c.Request().URL.RawPath != "" {
		if d, err := url.PathUnescape(v); err == nil {
			return d
		}
	}
	return v
}
