package api

import (
	"bytes"
	"net/http"
	"unicode/utf8"

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

var errCurationNotFound = &gtc.Error{Code: gtc.CodeNotFound, Message: "Not found"}

func (s *Server) handleGetCuration(c echo.Context) error {
	ds := param(c, "datasetName")
	if !possibleDataset(ds) {
		return errCurationNotFound // PUT refuses such names, so no document has one
	}
	d, err := s.cur.CurationInstructions(c.Request().Context(), ds)
	if err != nil {
		return err
	}
	return writeCuration(c, http.StatusOK, d)
}

// datasetPathErrors checks a datasetName path parameter that a write would store: the
// character and length rules of an item's datasetName (api.md §2.1), on the decoded value,
// which must be UTF-8 too. Reads and deletes answer such a name as an unknown one without
// asking the store (possibleDataset).
func datasetPathErrors(name string) []gtc.FieldError {
	msg := gtc.CheckDatasetName(name)
	if msg == "" && !utf8.ValidString(name) {
		msg = gtc.MsgDatasetChars
	}
	if msg == "" {
		return nil
	}
	return []gtc.FieldError{{Field: "path.datasetName", Message: msg}}
}

func (s *Server) handlePutCuration(c echo.Context) error {
	errs := datasetPathErrors(param(c, "datasetName"))
	b := body(c)
	if b == nil {
		return gtc.ValidationError(append(errs, gtc.FieldError{Field: "body", Message: "required"}))
	}
	u, err := gtc.DecodeCurationUpdate(b)
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
	var del gtc.DatasetDeletion
	if ds := param(c, "datasetName"); possibleDataset(ds) {
		var err error
		if del, err = s.cur.DeleteDataset(c.Request().Context(), ds); err != nil {
			return err
		}
	} // else no item or document has that name: nothing to delete (api.md §3.8.4: zero counts)
	return writeJSON(c, http.StatusOK, struct {
		Status                      string `json:"status"`
		ItemsDeleted                int    `json:"itemsDeleted"`
		CurationInstructionsDeleted bool   `json:"curationInstructionsDeleted"`
	}{"deleted", del.Items, del.Curation})
}
