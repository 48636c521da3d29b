package api

import (
	"bytes"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/codec"
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
	return writeRaw(c, status, codec.CurationAPIJSON(d))
}

func (s *Server) handleGetCuration(c echo.Context) error {
	ds := param(c, "datasetName")
	if errs := datasetPathErrors("datasetName", ds); errs != nil {
		return gtc.ValidationError(errs)
	}
	d, err := s.cur.CurationInstructions(c.Request().Context(), ds)
	if err != nil {
		return err
	}
	return writeCuration(c, http.StatusOK, d)
}

func (s *Server) handlePutCuration(c echo.Context) error {
	errs := datasetPathErrors("datasetName", param(c, "datasetName"))
	b := body(c)
	if b == nil {
		return gtc.ValidationError(append(errs, gtc.FieldError{Field: "body", Message: "required"}))
	}
	u, err := decodeCurationUpdate(b)
	if err != nil {
		if ge, ok := gtc.AsError(err); ok && len(errs) > 0 {
			return gtc.ValidationErrorWith(errs, ge)
		}
		return err
	}
	if errs != nil {
		return gtc.ValidationError(errs)
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
	ds := param(c, "datasetName")
	if errs := datasetPathErrors("datasetName", ds); errs != nil {
		return gtc.ValidationError(errs)
	}
	del, err := s.cur.DeleteDataset(c.Request().Context(), ds)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, struct {
		Status                      string `json:"status"`
		ItemsDeleted                int    `json:"itemsDeleted"`
		CurationInstructionsDeleted bool   `json:"curationInstructionsDeleted"`
	}{"deleted", del.Items, del.Curation})
}
