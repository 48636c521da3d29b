package api

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/gtc-dev/gtc"
)

// searchError is the 502 of a failed external search service; its cause is logged, never
// sent.
const codeSearchBackend = "SEARCH_BACKEND_ERROR"

func (s *Server) handleSearch(c echo.Context) error {
	q := newQueryParams(c.Request().URL)
	top := q.integer("top", 5)
	if q.has("top") && len(q.errs) == 0 && (top < 1 || top > 50) {
		q.fail("top", "must be between 1 and 50")
	}
	if err := q.err(); err != nil {
		return err
	}
	text := strings.TrimSpace(q.str("q"))
	if text == "" {
		return invalidQuery("q is required")
	}
	results, err := s.search.Search(c.Request().Context(), text, top)
	if err != nil {
		if detail, ok := gtc.SearchBackendDetail(err); ok {
			s.log.ErrorContext(c.Request().Context(), "search backend failed", "request_id", requestID(c), "err", err)
			return writeJSON(c, http.StatusBadGateway, errorBody{Detail: detail, Status: http.StatusBadGateway, Code: codeSearchBackend})
		}
		return err
	}
	if results == nil {
		results = []gtc.SearchResult{}
	}
	return writeJSON(c, http.StatusOK, map[string]any{"results": results})
}
