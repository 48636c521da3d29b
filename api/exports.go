package api

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/export"
)

// exportRoutes are the routes that run under GTC_EXPORT_TIMEOUT instead of
// GTC_REQUEST_TIMEOUT: producing or downloading a large export takes longer than an ordinary
// request.
func (s *Server) exportRoutes() map[string]bool {
	p := s.opts.Prefix
	return map[string]bool{
		p + "/ground-truths/snapshot":          true,
		p + "/exports/:snapshotId/files/:name": true,
		p + "/releases":                        true,
		p + "/releases/:name/files/:file":      true,
	}
}

var errNoExports = &gtc.Error{Code: gtc.CodeStoreUnavailable, Message: "Exports are not configured on this server"}

func (s *Server) handleGetSnapshot(c echo.Context) error {
	return s.runExport(c, export.GetRequest())
}

func (s *Server) handlePostSnapshot(c echo.Context) error {
	req, err := decodeExportRequest(body(c))
	if err != nil {
		return err
	}
	return s.runExport(c, req)
}

// extendDeadline gives an export GTC_EXPORT_TIMEOUT to finish: the connection's write
// deadline and the request context's.
func (s *Server) extendDeadline(c echo.Context) (context.Context, context.CancelFunc) {
	d := s.opts.ExportTimeout
	if d <= 0 {
		d = 30 * time.Minute
	}
	_ = http.NewResponseController(c.Response().Writer).SetWriteDeadline(time.Now().Add(d))
	return context.WithTimeout(c.Request().Context(), d)
}

// runExport resolves, queues for a slot and runs one export in the requested delivery mode.
func (s *Server) runExport(c echo.Context, req *gtc.ExportRequest) error {
	if s.exp == nil {
		return errNoExports
	}
	caller := gtc.CallerFrom(c.Request().Context())
	plan, err := s.exp.Resolve(req, caller.UserID)
	if err != nil {
		return err
	}
	plan.RequestID = requestID(c)
	ctx, cancel := s.extendDeadline(c)
	defer cancel()
	release, err := s.exp.Acquire(ctx)
	if err != nil {
		if errors.Is(err, export.ErrBusy) {
			c.Response().Header().Set("Retry-After", "10")
		}
		return err
	}
	defer release()
	h := c.Response().Header()
	switch plan.Mode {
	case gtc.DeliveryStream:
		res, err := s.exp.Stream(ctx, plan, c.Response(), func(r export.Result) error {
			h.Set(echo.HeaderContentType, r.MediaType)
			h.Set(echo.HeaderContentDisposition, `attachment; filename="`+r.FileName+`"`)
			c.Response().WriteHeader(http.StatusOK)
			return nil
		})
		if err != nil && res.Started {
			// The body is cut: drop the connection so that no client takes it for complete.
			s.log.ErrorContext(ctx, "export stream aborted", "request_id", requestID(c), "records", res.Count, "err", err)
			panic(http.ErrAbortHandler)
		}
		return export.AsRecordError(err)
	case gtc.DeliveryArtifact:
		res, err := s.exp.Artifact(ctx, plan)
		if err != nil {
			return export.AsRecordError(err)
		}
		url := s.opts.Prefix + "/exports/" + res.SnapshotID
		h.Set(echo.HeaderLocation, url)
		return writeJSON(c, http.StatusOK, artifactResponse{
			Status: "ok", SnapshotID: res.SnapshotID, SnapshotDir: res.SnapshotDir,
			ManifestPath: res.ManifestPath, Count: res.Count, ManifestURL: url,
		})
	default:
		sp, res, err := s.exp.Attachment(ctx, plan)
		if err != nil {
			return export.AsRecordError(err)
		}
		defer sp.Close()
		h.Set(echo.HeaderContentType, res.MediaType)
		h.Set(echo.HeaderContentLength, strconv.FormatInt(sp.Size(), 10))
		h.Set(echo.HeaderContentDisposition, `attachment; filename="`+res.FileName+`"`)
		c.Response().WriteHeader(http.StatusOK)
		_, _ = sp.WriteTo(c.Response()) // a client that goes away only ends the copy
		return nil
	}
}

type artifactResponse struct {
	Status       string `json:"status"`
	SnapshotID   string `json:"snapshotId"`
	SnapshotDir  string `json:"snapshotDir"`
	ManifestPath string `json:"manifestPath"`
	Count        int    `json:"count"`
	ManifestURL  string `json:"manifestUrl"`
}

type snapshotSummary struct {
	SnapshotID   string   `json:"snapshotId"`
	SnapshotAt   *string  `json:"snapshotAt"`
	CreatedAt    *string  `json:"createdAt"`
	CreatedBy    *string  `json:"createdBy"`
	Format       *string  `json:"format"`
	Count        any      `json:"count"`
	DatasetNames []string `json:"datasetNames"`
	FileCount    int      `json:"fileCount"`
	TotalBytes   int64    `json:"totalBytes"`
	ManifestURL  string   `json:"manifestUrl"`
}

type pagination struct {
	Page       int  `json:"page"`
	Limit      int  `json:"limit"`
	Total      int  `json:"total"`
	TotalPages int  `json:"totalPages"`
	HasNext    bool `json:"hasNext"`
	HasPrev    bool `json:"hasPrev"`
}

func (s *Server) handleListExports(c echo.Context) error {
	if s.exp == nil {
		return errNoExports
	}
	page, limit, err := s.parseExportList(c.Request().URL)
	if err != nil {
		return err
	}
	list, total, err := s.exp.ListSnapshots(c.Request().Context(), pageOffset(page, limit), limit)
	if err != nil {
		return err
	}
	items := make([]snapshotSummary, len(list))
	for i, sm := range list {
		items[i] = snapshotSummary{
			SnapshotID: sm.SnapshotID, SnapshotAt: sm.SnapshotAt, CreatedAt: sm.CreatedAt, CreatedBy: sm.CreatedBy,
			Format: sm.Format, DatasetNames: sm.DatasetNames, FileCount: sm.FileCount, TotalBytes: sm.TotalBytes,
			ManifestURL: s.opts.Prefix + "/exports/" + sm.SnapshotID,
		}
		if sm.Count != nil {
			items[i].Count = *sm.Count
		}
	}
	return writeJSON(c, http.StatusOK, struct {
		Items      []snapshotSummary `json:"items"`
		Pagination pagination        `json:"pagination"`
	}{items, pageOf(page, limit, total)})
}

// pageOf is the pagination of page (1-based) of limit entries out of total.
func pageOf(page, limit, total int) pagination {
	pages := (total + limit - 1) / limit
	return pagination{Page: page, Limit: limit, Total: total, TotalPages: pages, HasNext: page < pages, HasPrev: page > 1}
}

func (s *Server) handleGetManifest(c echo.Context) error {
	if s.exp == nil {
		return errNoExports
	}
	m, err := s.exp.OpenManifest(c.Request().Context(), param(c, "snapshotId"))
	if err != nil {
		return err
	}
	defer m.Body.Close()
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, gtc.ContentTypeJSON)
	h.Set(echo.HeaderContentLength, strconv.FormatInt(m.Size, 10))
	c.Response().WriteHeader(http.StatusOK)
	_, _ = io.CopyBuffer(onlyWriter{c.Response()}, m.Body, make([]byte, 32<<10))
	return nil
}

func (s *Server) handleGetExportFile(c echo.Context) error {
	if s.exp == nil {
		return errNoExports
	}
	ctx, cancel := s.extendDeadline(c)
	defer cancel()
	f, err := s.exp.OpenFile(ctx, param(c, "snapshotId"), param(c, "name"))
	if err != nil {
		return err
	}
	s.sendFile(ctx, c, f, http.StatusOK, true)
	return nil
}

// sendFile streams a stored file with its type, its length and, when known, its sha256 as
// ETag; attachment adds Content-Disposition. A copy that fails once the headers are out drops
// the connection, so that a short body never looks complete.
func (s *Server) sendFile(ctx context.Context, c echo.Context, f *export.SnapshotFile, status int, attachment bool) {
	defer f.Body.Close()
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, f.ContentType)
	h.Set(echo.HeaderContentLength, strconv.FormatInt(f.Size, 10))
	if attachment {
		h.Set(echo.HeaderContentDisposition, `attachment; filename="`+f.Name+`"`)
	}
	if f.SHA256 != "" {
		h.Set("ETag", `"`+f.SHA256+`"`)
	}
	c.Response().WriteHeader(status)
	if _, err := io.CopyBuffer(onlyWriter{c.Response()}, f.Body, make([]byte, 32<<10)); err != nil {
		s.log.ErrorContext(ctx, "file download aborted", "request_id", requestID(c), "path", c.Request().URL.Path, "file", f.Name, "err", err)
		panic(http.ErrAbortHandler)
	}
}

// onlyWriter hides ReadFrom so io.CopyBuffer uses the bounded buffer.
type onlyWriter struct{ w io.Writer }

func (o onlyWriter) Write(p []byte) (int, error) { return o.w.Write(p) }
