package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/gtc-dev/gtc"
)

// searchError is the 502 of a failed external search service; its cause is logged, never
// sent.
const codeSearchBackend = "SEARCH_BACKEND_ERROR"

func (s *Server) handleSearch(c echo.Context) error {
	text, top, err := parseSearch(c.Request().URL)
	if err != nil {
		return err
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
