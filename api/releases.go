package api

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/export"
)

// handleCreateRelease makes a release and answers with its manifest.
func (s *Server) handleCreateRelease(c echo.Context) error {
	if s.exp == nil {
		return errNoExports
	}
	req, err := decodeReleaseRequest(body(c))
	if err != nil {
		return err
	}
	caller := gtc.CallerFrom(c.Request().Context())
	ctx, cancel := s.extendDeadline(c)
	defer cancel()
	rp, err := s.exp.ResolveRelease(ctx, req, caller.UserID)
	if err != nil {
		return err
	}
	release, err := s.exp.Acquire(ctx)
	if err != nil {
		if errors.Is(err, export.ErrBusy) {
			c.Response().Header().Set("Retry-After", "10")
		}
		return err
	}
	info, err := s.exp.CreateRelease(ctx, rp)
	release()
	if err != nil {
		return export.AsRecordError(err)
	}
	c.Response().Header().Set(echo.HeaderLocation, s.opts.Prefix+"/releases/"+info.Name)
	return s.sendReleaseFile(c, info.Name, "manifest.json", http.StatusCreated, false)
}

func (s *Server) handleListReleases(c echo.Context) error {
	if s.exp == nil {
		return errNoExports
	}
	page, limit, err := s.parseExportList(c.Request().URL)
	if err != nil {
		return err
	}
	list, total, err := s.exp.ListReleases(c.Request().Context(), pageOffset(page, limit), limit)
	if err != nil {
		return err
	}
	type item struct {
		export.ReleaseSummary
		ManifestURL string `json:"manifestUrl"`
	}
	items := make([]item, len(list))
	for i, r := range list {
		items[i] = item{r, s.opts.Prefix + "/releases/" + r.Name}
	}
	return writeJSON(c, http.StatusOK, struct {
		Items      []item     `json:"items"`
		Pagination pagination `json:"pagination"`
	}{items, pageOf(page, limit, total)})
}

func (s *Server) handleGetRelease(c echo.Context) error {
	if s.exp == nil {
		return errNoExports
	}
	return s.sendReleaseFile(c, param(c, "name"), "manifest.json", http.StatusOK, false)
}

func (s *Server) handleGetReleaseFile(c echo.Context) error {
	if s.exp == nil {
		return errNoExports
	}
	return s.sendReleaseFile(c, param(c, "name"), param(c, "file"), http.StatusOK, true)
}

// sendReleaseFile streams one file of a release: the manifest inline, a data file as an
// attachment with its sha256 as ETag.
func (s *Server) sendReleaseFile(c echo.Context, name, file string, status int, attachment bool) error {
	ctx, cancel := s.extendDeadline(c)
	defer cancel()
	f, err := s.exp.OpenReleaseFile(ctx, name, file)
	if err != nil {
		return err
	}
	s.sendFile(ctx, c, f, status, attachment)
	return nil
}

func (s *Server) handleDeleteRelease(c echo.Context) error {
	if s.exp == nil {
		return errNoExports
	}
	caller := gtc.CallerFrom(c.Request().Context())
	t, err := s.exp.DeleteRelease(c.Request().Context(), param(c, "name"), caller.UserID)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, t)
}

// handleDiffReleases answers GET /releases/{name}/diff/{to}?kind=&limit=&cursor=&changes=:
// the items added, removed and changed from release name to release to (or to the items
// name's selection holds now, when to is "current"), a page at a time, with the counts and the
// tag shift of the whole comparison.
func (s *Server) handleDiffReleases(c echo.Context) error {
	if s.exp == nil {
		return errNoExports
	}
	q := newQueryParams(c.Request().URL)
	opts := export.DiffOptions{
		Kind:    q.enum("kind", export.DiffAdded, export.DiffRemoved, export.DiffChanged),
		Limit:   q.integer("limit", export.DefaultDiffLimit),
		Cursor:  q.str("cursor"),
		Changes: q.boolean("changes", true),
	}
	if opts.Limit < 1 || opts.Limit > export.MaxDiffLimit {
		q.fail("limit", "must be between 1 and "+strconv.Itoa(export.MaxDiffLimit))
	}
	if err := q.err(); err != nil {
		return err
	}
	ctx, cancel := s.extendDeadline(c)
	defer cancel()
	d, err := s.exp.DiffReleases(ctx, param(c, "name"), param(c, "to"), opts)
	if ge, ok := gtc.AsError(err); ok && ge.Code == gtc.CodeValidation {
		fields := make([]gtc.FieldError, len(ge.Fields))
		for i, f := range ge.Fields {
			fields[i] = gtc.FieldError{Field: "query." + f.Field, Message: f.Message}
		}
		return gtc.ValidationError(fields)
	}
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, d)
}
