package api

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/codec"
	"github.com/gtc-dev/gtc/history"
)

// revisionSummary is one revision in a history page: what changed, by path, without values.
type revisionSummary struct {
	Revision    int64     `json:"revision"`
	At          time.Time `json:"at"`
	Actor       string    `json:"actor"`
	Source      string    `json:"source"`
	OperationID string    `json:"operationId,omitempty"`
	ETagBefore  string    `json:"etagBefore"`
	ETagAfter   string    `json:"etagAfter"`
	Paths       []string  `json:"paths"`
	// PrunedBefore, on the oldest revision retention kept, is its own number: the ones
	// before it are gone.
	PrunedBefore int64 `json:"prunedBefore,omitempty"`
}

// handleHistory answers GET …/history?limit=&cursor=: the item's revisions, newest first.
func (s *Server) handleHistory(c echo.Context) error {
	k, errs := itemKey(c, "datasetName")
	q := newQueryParams(c.Request().URL)
	limit := q.integer("limit", 50)
	if limit < 1 || limit > history.MaxLimit {
		q.fail("limit", "must be between 1 and "+strconv.Itoa(history.MaxLimit))
	}
	cursor := q.str("cursor")
	if errs != nil || q.err() != nil {
		return gtc.ValidationErrorMore(append(errs, q.errs...), q.more)
	}
	page, err := history.Page(c.Request().Context(), s.cur, k, cursor, limit)
	if errors.Is(err, gtc.ErrInvalidArgument) { // the store's cursors are its own
		return gtc.ValidationError([]gtc.FieldError{{Field: "query.cursor", Message: "not a cursor of this history"}})
	} else if err != nil {
		return err
	}
	out := struct {
		Revisions  []revisionSummary `json:"revisions"`
		NextCursor *string           `json:"nextCursor"`
	}{Revisions: []revisionSummary{}}
	for _, r := range page.Revisions {
		out.Revisions = append(out.Revisions, revisionSummary{
			Revision: r.Number, At: r.At, Actor: r.Actor, Source: r.Source, OperationID: r.OperationID,
			ETagBefore: r.ETagBefore, ETagAfter: r.ETagAfter, Paths: r.Paths(), PrunedBefore: r.PrunedBefore,
		})
	}
	if page.Next != "" {
		out.NextCursor = &page.Next
	}
	return writeJSON(c, http.StatusOK, out)
}

// revisionParam reads a revision number: a positive integer.
func revisionParam(raw, field string, errs []gtc.FieldError) (int64, []gtc.FieldError) {
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || n < 1 {
		return 0, append(errs, gtc.FieldError{Field: field, Message: "must be a positive integer"})
	}
	return n, errs
}

// handleHistoryRevision answers GET …/history/{revision}: the item as it was after it.
func (s *Server) handleHistoryRevision(c echo.Context) error {
	k, errs := itemKey(c, "datasetName")
	n, errs := revisionParam(c.Param("revision"), "path.revision", errs)
	if errs != nil {
		return gtc.ValidationError(errs)
	}
	it, err := history.At(c.Request().Context(), s.cur, k, n)
	if err != nil {
		return err
	}
	return writeRaw(c, http.StatusOK, codec.ItemAPIJSON(it))
}

// handleDiff answers GET …/diff?from=&to=: the changes between two revisions.
func (s *Server) handleDiff(c echo.Context) error {
	k, errs := itemKey(c, "datasetName")
	q := newQueryParams(c.Request().URL)
	var from, to int64
	if raw, ok := q.lookup("from"); ok {
		from, errs = revisionParam(raw, "query.from", errs)
	} else {
		errs = append(errs, gtc.FieldError{Field: "query.from", Message: "required"})
	}
	if raw, ok := q.lookup("to"); ok {
		to, errs = revisionParam(raw, "query.to", errs)
		if to != 0 && from > to {
			errs = append(errs, gtc.FieldError{Field: "query.from", Message: "must not be after to"})
		}
	}
	if errs != nil || q.err() != nil {
		return gtc.ValidationErrorMore(append(errs, q.errs...), q.more)
	}
	from, to, ops, err := history.Diff(c.Request().Context(), s.cur, k, from, to)
	if err != nil {
		return err
	}
	if ops == nil {
		ops = []gtc.PatchOp{}
	}
	return writeJSON(c, http.StatusOK, struct {
		From    int64         `json:"from"`
		To      int64         `json:"to"`
		Changes []gtc.PatchOp `json:"changes"`
	}{from, to, ops})
}

// handleRestore answers POST …/restore {"revision": R} with If-Match: the content of revision
// R written as the item's next revision, through the curator save path.
func (s *Server) handleRestore(c echo.Context) error {
	k, errs := itemKey(c, "datasetName")
	if errs != nil {
		return gtc.ValidationError(errs)
	}
	b := body(c)
	if b == nil {
		return gtc.ValidationError([]gtc.FieldError{{Field: "body", Message: "required"}})
	}
	d, m := codec.ParseFields(b, "revision")
	var n int64
	if v, ok := m["revision"]; !ok {
		d.Add(codec.At("revision"), codec.MsgRequired)
	} else if n, ok = d.Integer(v, codec.At("revision")); ok && n < 1 {
		d.Add(codec.At("revision"), "must be a positive integer")
	}
	if err := d.Err(); err != nil {
		return err
	}
	it, err := history.Restore(c.Request().Context(), s.cur, k, n, c.Request().Header.Get("If-Match"))
	if err != nil {
		return err
	}
	return writeItem(c, http.StatusOK, it)
}
