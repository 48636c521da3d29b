package api

import (
	"bytes"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/gtc-dev/gtc"
)

func (s *Server) handleDatasets(c echo.Context) error {
	ds, err := s.cur.Datasets(c.Request().Context())
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, ds)
}

func writeCuration(c echo.Context, status int, d *gtc.CurationInstructions) error {
	c.Response().Header().Set("ETag", gtc.ETagHeader(d.ETag))
	return writeRaw(c, status, d.APIJSON())
}

func (s *Server) handleGetCuration(c echo.Context) error {
	d, err := s.cur.CurationInstructions(c.Request().Context(), param(c, "datasetName"))
	if err != nil {
		return err
	}
	return writeCuration(c, http.StatusOK, d)
}

func (s *Server) handlePutCuration(c echo.Context) error {
	b, err := requireBody(c)
	if err != nil {
		return err
	}
	u, err := gtc.DecodeCurationUpdate(b)
	if err != nil {
		return err
	}
	token := c.Request().Header.Get("If-Match")
	if len(bytes.TrimSpace([]byte(token))) == 0 {
		token = u.Token
	}
	d, created, err := s.cur.PutCurationInstructions(c.Request().Context(), param(c, "datasetName"), u.Instructions, token)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return writeCuration(c, status, d)
}

func (s *Server) handleDeleteDataset(c echo.Context) error {
	del, err := s.cur.DeleteDataset(c.Request().Context(), param(c, "datasetName"))
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, struct {
		Status                      string `json:"status"`
		ItemsDeleted                int    `json:"itemsDeleted"`
		CurationInstructionsDeleted bool   `json:"curationInstructionsDeleted"`
	}{"deleted", del.Items, del.Curation})
}
