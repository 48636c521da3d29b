package gtc

import (
	"errors"
	"fmt"
	"strconv"
)

// Error codes a caller can cause. They are the machine codes of the HTTP error body; the api
// package maps each to its status in one place.
const (
	CodeInvalidQuery           = "INVALID_QUERY"
	CodeInvalidStatus          = "INVALID_STATUS"
	CodeInvalidField           = "INVALID_FIELD"
	CodeFieldNotAllowed        = "FIELD_NOT_ALLOWED"
	CodeInvalidTagFormat       = "INVALID_TAG_FORMAT"
	CodeTagRuleViolation       = "TAG_RULE_VIOLATION"
	CodeInvalidApproval        = "INVALID_APPROVAL"
	CodeItemTooLarge           = "ITEM_TOO_LARGE"
	CodeBadRequest             = "BAD_REQUEST"
	CodeUnauthenticated        = "UNAUTHENTICATED"
	CodeForbidden              = "FORBIDDEN"
	CodeAssignmentOwnership    = "ASSIGNMENT_OWNERSHIP"
	CodeNotFound               = "NOT_FOUND"
	CodeRouteNotFound          = "ROUTE_NOT_FOUND"
	CodeMethodNotAllowed       = "METHOD_NOT_ALLOWED"
	CodeAssignmentConflict     = "ASSIGNMENT_CONFLICT"
	CodeConcurrentModification = "CONCURRENT_MODIFICATION"
	CodeETagRequired           = "ETAG_REQUIRED"
	CodeETagMismatch           = "ETAG_MISMATCH"
	CodeBodyTooLarge           = "BODY_TOO_LARGE"
	CodeRequestTimeout         = "REQUEST_TIMEOUT"
	CodeUnsupportedMediaType   = "UNSUPPORTED_MEDIA_TYPE"
	CodeValidation             = "VALIDATION_ERROR"
	CodeInvalidJSON            = "INVALID_JSON"
	CodeInternal               = "INTERNAL"
	CodeStoreUnavailable       = "STORE_UNAVAILABLE"
	CodeInsufficientStorage    = "INSUFFICIENT_STORAGE"
	CodeNotReady               = "NOT_READY"
	CodeUnknownFormat          = "UNKNOWN_FORMAT"
	CodeUnknownProcessor       = "UNKNOWN_PROCESSOR"
	CodeDuplicateProcessor     = "DUPLICATE_PROCESSOR"
	CodeExportRecordInvalid    = "EXPORT_RECORD_INVALID"
	CodeStorageError           = "STORAGE_ERROR"
	CodeExportBusy             = "EXPORT_BUSY"
	CodeJobsBusy               = "JOBS_BUSY"
	CodeReleaseExists          = "RELEASE_EXISTS"
	CodeReleaseDeleted         = "RELEASE_DELETED"
	// Agent tool invocation only: the body is not JSON, or not an object;
	// the name is not a tool.
	CodeMalformedJSON      = "MALFORMED_JSON"
	CodeToolInputNotObject = "TOOL_INPUT_NOT_OBJECT"
	CodeUnknownTool        = "UNKNOWN_TOOL"
)

// Messages that clients and tests match exactly.
const (
	MsgItemNotFound           = "Item not found"
	MsgETagRequired           = "ETag required"
	MsgETagMismatch           = "ETag mismatch"
	MsgConcurrentModification = "The item was modified concurrently; retry the request"
	MsgItemTooLarge           = "Item exceeds the storage limit of 1.5 MiB"
	MsgStorageFull            = "The server is out of storage space; nothing was saved. Free disk space and retry."
)

// FieldError names one field at fault and what is wrong with it.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// MaxFieldErrors bounds the problems an error lists: past it they are only counted, so a
// hostile body cannot make the answer (or the work of building it) grow with its size.
const MaxFieldErrors = 100

// Error is an error a user can cause: a machine code, a human-readable message and, when
// fields are at fault, one entry per problem.
type Error struct {
	Code    string
	Message string
	// Fields lists the problems in document order, at most MaxFieldErrors of them.
	Fields []FieldError
	// More counts the problems found after Fields was full; they are not listed.
	More int
	// Extra holds additional top-level keys of the error body (the holder and time of a 409
	// assignment conflict, for example).
	Extra map[string]any
}

func (e *Error) Error() string {
	if e.Message != "" {
		return e.Code + ": " + e.Message
	}
	return e.Code
}

// Errorf returns an *Error with a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// capFields keeps the first MaxFieldErrors of fields and counts the rest.
func capFields(fields []FieldError, more int) ([]FieldError, int) {
	if len(fields) > MaxFieldErrors {
		more += len(fields) - MaxFieldErrors
		fields = fields[:MaxFieldErrors:MaxFieldErrors]
	}
	return fields, more
}

// FieldsError returns an *Error whose message is the first field's message. It lists at most
// MaxFieldErrors fields and counts the others in More.
func FieldsError(code string, fields []FieldError) *Error {
	msg := ""
	if len(fields) > 0 {
		msg = fields[0].Message
	}
	fields, more := capFields(fields, 0)
	return &Error{Code: code, Message: msg, Fields: fields, More: more}
}

// ValidationError returns the 422 error for schema problems: the detail names the first
// problem and counts the others. It lists at most MaxFieldErrors of them.
func ValidationError(fields []FieldError) *Error {
	return ValidationErrorMore(fields, 0)
}

// ValidationErrorWith returns the 422 listing fields followed by the problems of e (a 422
// itself, whose More is carried over): a handler that checked its path parameters reports
// them together with the problems of the body.
func ValidationErrorWith(fields []FieldError, e *Error) *Error {
	if len(fields) == 0 {
		return ValidationErrorMore(e.Fields, e.More)
	}
	all := make([]FieldError, 0, min(len(fields)+len(e.Fields), MaxFieldErrors+1))
	all = append(all, fields...)
	all = append(all, e.Fields...)
	return ValidationErrorMore(all, e.More)
}

// ValidationErrorMore is ValidationError for a list followed by more problems that were
// counted but not listed.
func ValidationErrorMore(fields []FieldError, more int) *Error {
	fields, more = capFields(fields, more)
	return &Error{Code: CodeValidation, Message: ValidationDetailMore(fields, more), Fields: fields, More: more}
}

// ValidationDetail formats "Request validation failed: <field>: <message> (and <n> more)".
func ValidationDetail(fields []FieldError) string {
	return ValidationDetailMore(fields, 0)
}

// ValidationDetailMore is ValidationDetail for a list followed by more problems that were
// counted but not listed: n counts them too.
func ValidationDetailMore(fields []FieldError, more int) string {
	if len(fields) == 0 {
		return "Request validation failed"
	}
	s := "Request validation failed: " + fields[0].Field + ": " + fields[0].Message
	if n := len(fields) - 1 + more; n > 0 {
		s += " (and " + strconv.Itoa(n) + " more)"
	}
	return s
}

// AsError returns the *Error inside err, if any.
func AsError(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}

// ErrorCode returns the code of err, or "" when err is not an *Error.
func ErrorCode(err error) string {
	if e, ok := AsError(err); ok {
		return e.Code
	}
	return ""
}
