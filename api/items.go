package api

import (
	"bytes"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/codec"
)

// itemKey reads the three path parameters of an item URL. The dataset name and the id must
// obey the name rules every stored item obeys, and the bucket must be a UUID; the problems
// are listed in path order, for one 422.
func itemKey(c echo.Context, datasetParam string) (gtc.Key, []gtc.FieldError) {
	k := gtc.Key{DatasetName: param(c, datasetParam), ID: param(c, "item_id")}
	errs := datasetPathErrors(datasetParam, k.DatasetName)
	if b, ok := gtc.ParseUUID(param(c, "bucket")); ok {
		k.Bucket = b
	} else {
		errs = append(errs, gtc.FieldError{Field: "path.bucket", Message: "must be a UUID"})
	}
	if msg := gtc.CheckItemID(k.ID); msg != "" {
		errs = append(errs, gtc.FieldError{Field: "path.item_id", Message: msg})
	}
	return k, errs
}

// datasetPathErrors checks a path parameter that names a dataset (its decoded value) with
// the dataset name rule (gtc.CheckDatasetName). A name no item, curation document or
// dataset can have is a 422 naming the parameter, on reads and deletes as on writes, and the
// store is never asked about it.
func datasetPathErrors(paramName, name string) []gtc.FieldError {
	if msg := gtc.CheckDatasetName(name); msg != "" {
		return []gtc.FieldError{{Field: "path." + paramName, Message: msg}}
	}
	return nil
}

// withPathErrors is one 422 with the path problems first, then the fields of err (a
// VALIDATION_ERROR of the query or the body); nil errs leaves err alone.
func withPathErrors(errs []gtc.FieldError, err error) error {
	if len(errs) == 0 {
		return err
	}
	if ge, ok := gtc.AsError(err); ok && ge.Code == gtc.CodeValidation {
		errs = append(errs, ge.Fields...)
	}
	return gtc.ValidationError(errs)
}

func (s *Server) handleGetItem(c echo.Context) error {
	k, errs := itemKey(c, "datasetName")
	if errs != nil {
		return gtc.ValidationError(errs)
	}
	it, err := s.cur.GetItem(c.Request().Context(), k)
	if err != nil {
		return err
	}
	return writeItem(c, http.StatusOK, it)
}

// decodePatch checks the path and the PUT body together, so one 422 lists every problem.
func decodePatch(c echo.Context, datasetParam string, allowApprove bool) (gtc.Key, *gtc.ItemPatch, error) {
	k, errs := itemKey(c, datasetParam)
	b := body(c)
	if b == nil {
		return k, nil, gtc.ValidationError(append(errs, gtc.FieldError{Field: "body", Message: "required"}))
	}
	patch, err := decodeItemPatch(b, allowApprove)
	if err != nil {
		ge, ok := gtc.AsError(err)
		if !ok || len(errs) == 0 {
			return k, nil, err
		}
		return k, nil, gtc.ValidationErrorWith(errs, ge)
	}
	if errs != nil {
		return k, nil, gtc.ValidationError(errs)
	}
	return k, patch, nil
}

func (s *Server) handlePutItem(c echo.Context) error {
	k, patch, err := decodePatch(c, "datasetName", false)
	if err != nil {
		return err
	}
	it, err := s.cur.UpdateItem(c.Request().Context(), k, patch, c.Request().Header.Get("If-Match"), gtc.CuratorRoute)
	if err != nil {
		return err
	}
	return writeItem(c, http.StatusOK, it)
}

func (s *Server) handleDeleteItem(c echo.Context) error {
	k, errs := itemKey(c, "datasetName")
	if errs != nil {
		return gtc.ValidationError(errs)
	}
	if err := s.cur.DeleteItem(c.Request().Context(), k, c.Request().Header.Get("If-Match")); err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, map[string]string{"status": "deleted"})
}

func (s *Server) handleList(c echo.Context) error {
	req, err := s.parseList(c.Request().URL)
	if err != nil {
		return err
	}
	page, err := s.cur.List(c.Request().Context(), req)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	buf.WriteString(`{"items":`)
	appendItems(&buf, page.Items)
	buf.WriteString(`,"pagination":{"page":`)
	buf.WriteString(strconv.Itoa(page.Page))
	buf.WriteString(`,"limit":`)
	buf.WriteString(strconv.Itoa(page.Limit))
	buf.WriteString(`,"total":`)
	buf.WriteString(strconv.Itoa(page.Total))
	buf.WriteString(`,"totalPages":`)
	buf.WriteString(strconv.Itoa(page.TotalPages))
	buf.WriteString(`,"hasNext":`)
	buf.WriteString(strconv.FormatBool(page.HasNext))
	buf.WriteString(`,"hasPrev":`)
	buf.WriteString(strconv.FormatBool(page.HasPrev))
	buf.WriteString(`}}`)
	return writeRaw(c, http.StatusOK, buf.Bytes())
}

func (s *Server) handleListDataset(c echo.Context) error {
	ds := param(c, "datasetName")
	status, err := parseStatusFilter(c.Request().URL)
	if errs := datasetPathErrors("datasetName", ds); errs != nil {
		return withPathErrors(errs, err)
	}
	if err != nil {
		return err
	}
	return s.streamItems(c, s.cur.ListDataset(c.Request().Context(), ds, status))
}

func (s *Server) handleStats(c echo.Context) error {
	counts, err := s.cur.Stats(c.Request().Context())
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, struct {
		Draft    int `json:"draft"`
		Approved int `json:"approved"`
		Deleted  int `json:"deleted"`
	}{counts[gtc.StatusDraft], counts[gtc.StatusApproved], counts[gtc.StatusDeleted]})
}

func (s *Server) handleImport(c echo.Context) error {
	opts, err := parseImportOptions(c.Request().URL)
	if err != nil {
		return err
	}
	b, err := requireBody(c)
	if err != nil {
		return err
	}
	entries, err := codec.DecodeImport(b)
	if err != nil {
		return err
	}
	res, err := s.cur.Import(c.Request().Context(), entries, opts)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, res)
}
