package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/gtc-dev/gtc"
)

// statusOf maps every gtc error code to its HTTP status. It is the one place
// where codes meet statuses.
var statusOf = map[string]int{
	gtc.CodeInvalidQuery:           http.StatusBadRequest,
	gtc.CodeInvalidStatus:          http.StatusBadRequest,
	gtc.CodeInvalidField:           http.StatusBadRequest,
	gtc.CodeFieldNotAllowed:        http.StatusBadRequest,
	gtc.CodeInvalidTagFormat:       http.StatusBadRequest,
	gtc.CodeTagRuleViolation:       http.StatusBadRequest,
	gtc.CodeInvalidApproval:        http.StatusBadRequest,
	gtc.CodeItemTooLarge:           http.StatusBadRequest,
	gtc.CodeBadRequest:             http.StatusBadRequest,
	gtc.CodeUnauthenticated:        http.StatusUnauthorized,
	gtc.CodeForbidden:              http.StatusForbidden,
	gtc.CodeAssignmentOwnership:    http.StatusForbidden,
	gtc.CodeNotFound:               http.StatusNotFound,
	gtc.CodeRouteNotFound:          http.StatusNotFound,
	gtc.CodeMethodNotAllowed:       http.StatusMethodNotAllowed,
	gtc.CodeAssignmentConflict:     http.StatusConflict,
	gtc.CodeConcurrentModification: http.StatusConflict,
	gtc.CodeETagRequired:           http.StatusPreconditionFailed,
	gtc.CodeETagMismatch:           http.StatusPreconditionFailed,
	gtc.CodeBodyTooLarge:           http.StatusRequestEntityTooLarge,
	gtc.CodeRequestTimeout:         http.StatusRequestTimeout,
	gtc.CodeUnsupportedMediaType:   http.StatusUnsupportedMediaType,
	gtc.CodeValidation:             http.StatusUnprocessableEntity,
	gtc.CodeInvalidJSON:            http.StatusUnprocessableEntity,
	gtc.CodeInternal:               http.StatusInternalServerError,
	gtc.CodeStoreUnavailable:       http.StatusServiceUnavailable,
	gtc.CodeInsufficientStorage:    http.StatusInsufficientStorage,
	gtc.CodeNotReady:               http.StatusServiceUnavailable,
	gtc.CodeUnknownFormat:          http.StatusBadRequest,
	gtc.CodeUnknownProcessor:       http.StatusBadRequest,
	gtc.CodeDuplicateProcessor:     http.StatusBadRequest,
	gtc.CodeExportRecordInvalid:    http.StatusBadRequest,
	gtc.CodeStorageError:           http.StatusInternalServerError,
	gtc.CodeExportBusy:             http.StatusServiceUnavailable,
	gtc.CodeJobsBusy:               http.StatusTooManyRequests,
	gtc.CodeReleaseExists:          http.StatusConflict,
	gtc.CodeReleaseDeleted:         http.StatusGone,
	gtc.CodeMalformedJSON:          http.StatusBadRequest,
	gtc.CodeToolInputNotObject:     http.StatusBadRequest,
	gtc.CodeUnknownTool:            http.StatusNotFound,
}

// errorBody is the JSON of every response with status ≥ 400.
type errorBody struct {
	Detail string           `json:"detail"`
	Status int              `json:"status"`
	Code   string           `json:"code"`
	Errors []gtc.FieldError `json:"errors,omitempty"`
	// MoreErrors counts the problems found past the gtc.MaxFieldErrors that errors lists.
	MoreErrors int `json:"moreErrors,omitempty"`
}

// writeError answers with the error body of e. Whatever built e, the body lists at most
// gtc.MaxFieldErrors problems and counts the rest in moreErrors.
func writeError(c echo.Context, e *gtc.Error) error {
	status, ok := statusOf[e.Code]
	if !ok {
		status = http.StatusBadRequest
	}
	fields, more := e.Fields, e.More
	if len(fields) > gtc.MaxFieldErrors {
		more += len(fields) - gtc.MaxFieldErrors
		fields = fields[:gtc.MaxFieldErrors]
	}
	if len(e.Extra) == 0 {
		return writeJSON(c, status, errorBody{Detail: e.Message, Status: status, Code: e.Code, Errors: fields, MoreErrors: more})
	}
	body := map[string]any{"detail": e.Message, "status": status, "code": e.Code}
	if len(fields) > 0 {
		body["errors"] = fields
	}
	if more > 0 {
		body["moreErrors"] = more
	}
	for k, v := range e.Extra {
		body[k] = v
	}
	return writeJSON(c, status, body)
}

// errorHandler is echo's HTTPErrorHandler: it turns every error a handler returns into the
// product's error body. Internal errors are logged with the request id and answered with a
// fixed text; their details never reach the client.
func (s *Server) errorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	ctx := c.Request().Context()
	if errors.Is(err, gtc.ErrStorageFull) {
		// Not transient like an unreachable store: someone has to free space. An operation
		// that knows better what was kept (an export, a recompute) says so in its own
		// message.
		s.log.ErrorContext(ctx, "out of storage space", "request_id", requestID(c), "route", c.Path(), "err", err)
		if e, ok := gtc.AsError(err); ok && e.Code == gtc.CodeInsufficientStorage {
			_ = writeError(c, e)
			return
		}
		_ = writeError(c, &gtc.Error{Code: gtc.CodeInsufficientStorage, Message: gtc.MsgStorageFull})
		return
	}
	if e, ok := gtc.AsError(err); ok {
		if e.Code == gtc.CodeStoreUnavailable && err != error(e) {
			// Export storage that cannot be reached: the client gets the fixed text, the log
			// the cause it wraps.
			s.log.ErrorContext(ctx, "store unavailable", "request_id", requestID(c), "err", err)
		}
		_ = writeError(c, e)
		return
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		switch he.Code {
		case http.StatusNotFound:
			_ = writeError(c, &gtc.Error{Code: gtc.CodeRouteNotFound, Message: "Not Found"})
		case http.StatusMethodNotAllowed:
			_ = writeError(c, &gtc.Error{Code: gtc.CodeMethodNotAllowed, Message: "Method Not Allowed"})
		case http.StatusRequestEntityTooLarge:
			_ = writeError(c, s.bodyTooLarge())
		default:
			msg := http.StatusText(he.Code)
			_ = writeJSON(c, he.Code, errorBody{Detail: msg, Status: he.Code, Code: gtc.CodeBadRequest})
		}
		return
	}
	switch {
	case errors.Is(err, gtc.ErrUnavailable):
		s.log.ErrorContext(ctx, "store unavailable", "request_id", requestID(c), "err", err)
		_ = writeError(c, &gtc.Error{Code: gtc.CodeStoreUnavailable, Message: "The store is not reachable; retry later"})
		return
	case errors.Is(err, context.DeadlineExceeded):
		s.log.ErrorContext(ctx, "request deadline exceeded", "request_id", requestID(c), "err", err)
		_ = writeError(c, &gtc.Error{Code: gtc.CodeStoreUnavailable, Message: "The request took too long; retry later"})
		return
	case errors.Is(err, context.Canceled):
		// The client went away; nobody reads the answer.
		c.Response().WriteHeader(499)
		return
	}
	s.log.ErrorContext(ctx, "internal error", "request_id", requestID(c), "route", c.Path(), "err", err)
	_ = writeError(c, &gtc.Error{Code: gtc.CodeInternal, Message: "Internal server error"})
}
