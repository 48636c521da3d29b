package api

import (
	"bytes"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/gtc-dev/gtc"
)

func (s *Server) handleSelfServe(c echo.Context) error {
	limit, err := decodeSelfServe(body(c))
	if err != nil {
		return err
	}
	res, err := s.cur.SelfServe(c.Request().Context(), limit)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	buf.WriteString(`{"assigned":`)
	appendItems(&buf, res.Assigned)
	buf.WriteString(`,"requested":`)
	buf.WriteString(strconv.Itoa(res.Requested))
	buf.WriteString(`,"assignedCount":`)
	buf.WriteString(strconv.Itoa(len(res.Assigned)))
	buf.WriteString(`,"newlyAssigned":`)
	buf.WriteString(strconv.Itoa(res.NewlyAssigned))
	buf.WriteByte('}')
	return writeRaw(c, http.StatusOK, buf.Bytes())
}

func (s *Server) handleMyAssignments(c echo.Context) error {
	return s.streamItems(c, s.cur.MyAssignments(c.Request().Context()))
}

func (s *Server) handleAssignmentPut(c echo.Context) error {
	k, patch, err := decodePatch(c, "dataset", true)
	if err != nil {
		return err
	}
	it, err := s.cur.UpdateItem(c.Request().Context(), k, patch, c.Request().Header.Get("If-Match"), gtc.AssignmentRoute)
	if err != nil {
		return err
	}
	return writeItem(c, http.StatusOK, it)
}

func (s *Server) handleAssign(c echo.Context) error {
	k, errs := itemKey(c, "dataset")
	force, err := decodeAssign(body(c))
	switch {
	case errs == nil && err != nil:
		return err
	case errs != nil:
		if ge, ok := gtc.AsError(err); ok {
			return gtc.ValidationErrorWith(errs, ge)
		}
		return gtc.ValidationError(errs)
	}
	it, err := s.cur.Assign(c.Request().Context(), k, force)
	if err != nil {
		return err
	}
	return writeItem(c, http.StatusOK, it)
}

func (s *Server) handleDuplicate(c echo.Context) error {
	k, errs := itemKey(c, "dataset")
	if errs != nil {
		return gtc.ValidationError(errs)
	}
	it, err := s.cur.Duplicate(c.Request().Context(), k)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, gtc.ItemPath(s.opts.Prefix, it.Key()))
	return writeItem(c, http.StatusCreated, it)
}
