package api

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// Route is one served operation.
type Route struct {
	Method string
	Path   string // echo form with the prefix, e.g. /v1/datasets/:datasetName
}

// routes lists the whole HTTP surface in one place.
func (s *Server) routes() {
	p := s.opts.Prefix
	add := func(method, path string, h echo.HandlerFunc) {
		s.e.Add(method, path, h, s.guard(method, path), s.readBody)
	}
	add(http.MethodGet, "/healthz", s.handleHealthz)
	add(http.MethodGet, "/readyz", s.handleReadyz)
	if s.opts.Metrics != nil {
		add(http.MethodGet, "/metrics", echo.WrapHandler(s.opts.Metrics))
	}

	add(http.MethodGet, p+"/openapi.json", s.handleOpenAPI)
	add(http.MethodGet, p+"/schemas", s.handleSchemas)
	add(http.MethodGet, p+"/schemas/:name", s.handleSchema)
	add(http.MethodGet, p+"/config", s.handleConfig)

	add(http.MethodGet, p+"/ground-truths/stats", s.handleStats)
	add(http.MethodPost, p+"/ground-truths", s.handleImport)
	add(http.MethodGet, p+"/ground-truths", s.handleList)
	add(http.MethodGet, p+"/ground-truths/:datasetName", s.handleListDataset)
	add(http.MethodGet, p+"/ground-truths/:datasetName/:bucket/:item_id", s.handleGetItem)
	add(http.MethodPut, p+"/ground-truths/:datasetName/:bucket/:item_id", s.handlePutItem)
	add(http.MethodDelete, p+"/ground-truths/:datasetName/:bucket/:item_id", s.handleDeleteItem)
	add(http.MethodGet, p+"/ground-truths/:datasetName/:bucket/:item_id/history", s.handleHistory)
	add(http.MethodGet, p+"/ground-truths/:datasetName/:bucket/:item_id/history/:revision", s.handleHistoryRevision)
	add(http.MethodGet, p+"/ground-truths/:datasetName/:bucket/:item_id/diff", s.handleDiff)
	add(http.MethodPost, p+"/ground-truths/:datasetName/:bucket/:item_id/restore", s.handleRestore)
	add(http.MethodPost, p+"/ground-truths/recompute-tags", s.handleRecompute)
	add(http.MethodGet, p+"/ground-truths/snapshot", s.handleGetSnapshot)
	add(http.MethodPost, p+"/ground-truths/snapshot", s.handlePostSnapshot)
	add(http.MethodGet, p+"/exports", s.handleListExports)
	add(http.MethodGet, p+"/exports/:snapshotId", s.handleGetManifest)
	add(http.MethodGet, p+"/exports/:snapshotId/files/:name", s.handleGetExportFile)
	add(http.MethodPost, p+"/releases", s.handleCreateRelease)
	add(http.MethodGet, p+"/releases", s.handleListReleases)
	add(http.MethodGet, p+"/releases/:name", s.handleGetRelease)
	add(http.MethodDelete, p+"/releases/:name", s.handleDeleteRelease)
	add(http.MethodGet, p+"/releases/:name/files/:file", s.handleGetReleaseFile)
	add(http.MethodGet, p+"/releases/:name/diff/:to", s.handleDiffReleases)
	add(http.MethodGet, p+"/jobs/:id", s.handleGetJob)

	add(http.MethodPost, p+"/assignments/self-serve", s.handleSelfServe)
	add(http.MethodGet, p+"/assignments/my", s.handleMyAssignments)
	add(http.MethodPut, p+"/assignments/:dataset/:bucket/:item_id", s.handleAssignmentPut)
	add(http.MethodPost, p+"/assignments/:dataset/:bucket/:item_id/assign", s.handleAssign)
	add(http.MethodPost, p+"/assignments/:dataset/:bucket/:item_id/duplicate", s.handleDuplicate)

	add(http.MethodGet, p+"/search", s.handleSearch)

	add(http.MethodGet, p+"/tags/schema", s.handleTagSchema)
	add(http.MethodGet, p+"/tags", s.handleListTags)
	add(http.MethodPost, p+"/tags", s.handleAddTags)
	add(http.MethodDelete, p+"/tags", s.handleRemoveTags)
	add(http.MethodGet, p+"/tags/glossary", s.handleGlossary)
	add(http.MethodPost, p+"/tags/definitions", s.handlePutDefinition)
	add(http.MethodDelete, p+"/tags/definitions/:tag_key", s.handleDeleteDefinition)

	add(http.MethodGet, p+"/datasets", s.handleDatasets)
	add(http.MethodGet, p+"/datasets/:datasetName/curation-instructions", s.handleGetCuration)
	add(http.MethodPut, p+"/datasets/:datasetName/curation-instructions", s.handlePutCuration)
	add(http.MethodDelete, p+"/datasets/:datasetName", s.handleDeleteDataset)

	s.agentRoutes()
}

// Routes returns every served operation (method and echo path), for the document check.
func (s *Server) Routes() []Route {
	var out []Route
	for _, r := range s.e.Routes() {
		out = append(out, Route{Method: r.Method, Path: r.Path})
	}
	return out
}
