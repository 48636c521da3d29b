package api

import (
	"bytes"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/gtc-dev/gtc"
)

// itemKey reads the three path parameters of an item URL; the bucket must be a UUID.
func itemKey(c echo.Context, datasetParam string) (gtc.Key, []gtc.FieldError) {
	k := gtc.Key{DatasetName: param(c, datasetParam), ID: param(c, "item_id")}
	b, ok := gtc.ParseUUID(param(c, "bucket"))
	if !ok {
		return k, []gtc.FieldError{{Field: "path.bucket", Message: "must be a UUID"}}
	}
	k.Bucket = b
	return k, nil
}

var errItemNotFound = &gtc.Error{Code: gtc.CodeNotFound, Message: gtc.MsgItemNotFound}

// unknownItem answers 404 for a key no stored item can have, before the store is asked:
// every item obeys the id and datasetName rules (api.md §2.1; import, duplicate and gtc
// migrate enforce them), so a decoded path with invalid UTF-8, a "/" from %2F, a "\" or a
// control character names nothing. Cosmos DB could not even be asked about some of them.
func unknownItem(k gtc.Key) error {
	if !possibleDataset(k.DatasetName) || k.ID == "" || !utf8.ValidString(k.ID) || gtc.CheckItemID(k.ID) != "" {
		return errItemNotFound
	}
	return nil
}

// possibleDataset reports whether a dataset could have this name (api.md §2.1).
func possibleDataset(name string) bool {
	return utf8.ValidString(name) && gtc.CheckDatasetName(name) == ""
}

func (s *Server) handleGetItem(c echo.Context) error {
	k, errs := itemKey(c, "datasetName")
	if errs != nil {
		return gtc.ValidationError(errs)
	}
	if err := unknownItem(k); err != nil {
		return err
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
	patch, err := gtc.DecodeItemPatch(b, allowApprove)
	if err != nil {
		ge, ok := gtc.AsError(err)
		if !ok || len(errs) == 0 {
			return k, nil, err
		}
		return k, nil, gtc.ValidationError(append(errs, ge.Fields...))
	}
	if errs != nil {
		return k, nil, gtc.ValidationError(errs)
	}
	if err := unknownItem(k); err != nil {
		return k, nil, err
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
	if err := unknownItem(k); err != nil {
		return err
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
	status, err := parseStatusFilter(c.Request().URL)
	if err != nil {
		return err
	}
	ds := param(c, "datasetName")
	if !possibleDataset(ds) {
		return writeItems(c, nil) // no item has such a dataset name
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
	entries, err := gtc.DecodeImport(b)
	if err != nil {
		return err
	}
	res, err := s.cur.Import(c.Request().Context(), entries, opts)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, res)
}
