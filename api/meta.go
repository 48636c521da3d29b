package api

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/api/openapi"
)

func (s *Server) handleHealthz(c echo.Context) error {
	return writeJSON(c, http.StatusOK, map[string]string{"status": "ok"})
}

// readyTimeout bounds the store check of /readyz.
const readyTimeout = 2 * time.Second

func (s *Server) handleReadyz(c echo.Context) error {
	notReady := func(detail string) error {
		return writeError(c, &gtc.Error{Code: gtc.CodeNotReady, Message: detail,
			Extra: map[string]any{"checks": map[string]string{"store": "error"}}})
	}
	if s.draining.Load() {
		return notReady("Server is shutting down")
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), readyTimeout)
	defer cancel()
	if err := s.cur.Store().Ping(ctx); err != nil {
		s.log.WarnContext(ctx, "readiness check failed", "request_id", requestID(c), "err", err)
		return notReady("Store is not reachable")
	}
	return writeJSON(c, http.StatusOK, map[string]any{"status": "ready", "checks": map[string]string{"store": "ok"}})
}

func (s *Server) handleConfig(c echo.Context) error {
	return writeJSON(c, http.StatusOK, s.opts.Frontend)
}

// document returns the OpenAPI document of this server, built once.
func (s *Server) document() []byte {
	s.docOnce.Do(func() { s.docJSON = s.schemaDoc().JSON() })
	return s.docJSON
}

func (s *Server) handleOpenAPI(c echo.Context) error {
	return writeRaw(c, http.StatusOK, s.document())
}

// schemaDoc returns the document's builder for the schema routes, built once.
func (s *Server) schemaDoc() *openapi.Doc {
	s.schemasOnce.Do(func() { s.schemas = openapi.Document(s.opts.Prefix, s.opts.Version) })
	return s.schemas
}

// handleSchemas lists the component schemas: {name, title} objects, then the names again as
// strings, the form of the reference backend.
func (s *Server) handleSchemas(c echo.Context) error {
	doc := s.schemaDoc()
	names := doc.SchemaNames()
	out := make([]any, 0, 2*len(names))
	for _, n := range names {
		title := n
		if sch, ok := doc.Schema(n); ok {
			if t, ok := sch["title"].(string); ok && t != "" {
				title = t
			}
		}
		out = append(out, map[string]string{"name": n, "title": title})
	}
	for _, n := range names {
		out = append(out, n)
	}
	return writeJSON(c, http.StatusOK, out)
}

func (s *Server) handleSchema(c echo.Context) error {
	sch, ok := s.schemaDoc().Schema(param(c, "name"))
	if !ok {
		return &gtc.Error{Code: gtc.CodeNotFound, Message: "Schema not found"}
	}
	return writeJSON(c, http.StatusOK, sch)
}
