package gtc

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// Error codes a caller can cause. They are the machine codes of the HTTP error body
// (api.md §1.6); the api package maps each to its status in one place.
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
	CodeRoleRequired           = "ROLE_REQUIRED"
	CodeNotFound               = "NOT_FOUND"
	CodeRouteNotFound          = "ROUTE_NOT_FOUND"
	CodeMethodNotAllowed       = "METHOD_NOT_ALLOWED"
	CodeAssignmentConflict     = "ASSIGNMENT_CONFLICT"
	CodeConcurrentModification = "CONCURRENT_MODIFICATION"
	CodeETagRequired           = "ETAG_REQUIRED"
	CodeETagMismatch           = "ETAG_MISMATCH"
	CodeBodyTooLarge           = "BODY_TOO_LARGE"
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
	// Agent tool invocation only (api.md §3.11): the body is not JSON, or not an object;
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

// Error is an error a user can cause: a machine code, a human-readable message and, when
// fields are at fault, one entry per problem.
type Error struct {
	Code    string
	Message string
	Fields  []FieldError
	// Extra holds additional top-level keys of the error body where the spec asks for them.
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

// FieldsError returns an *Error whose message is the first field's message.
func FieldsError(code string, fields []FieldError) *Error {
	msg := ""
	if len(fields) > 0 {
		msg = fields[0].Message
	}
	return &Error{Code: code, Message: msg, Fields: fields}
}

// ValidationError returns the 422 error for schema problems: the detail names the first
// problem and counts the others (api.md §1.6).
func ValidationError(fields []FieldError) *Error {
	return &Error{Code: CodeValidation, Message: ValidationDetail(fields), Fields: fields}
}

// ValidationDetail formats "Request validation failed: <field>: <message> (and <n> more)".
func ValidationDetail(fields []FieldError) string {
	if len(fields) == 0 {
		return "Request validation failed"
	}
	s := "Request validation failed: " + fields[0].Field + ": " + fields[0].Message
	if len(fields) > 1 {
		s += " (and " + strconv.Itoa(len(fields)-1) + " more)"
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

// fieldPath builds the paths of errors[].field (api.md §1.6).
type fieldPath string

func (p fieldPath) key(k string) fieldPath {
	if !plainKey(k) {
		var b bytes.Buffer
		b.WriteString(string(p))
		b.WriteByte('[')
		writeJSONString(&b, k)
		b.WriteByte(']')
		return fieldPath(b.String())
	}
	if p == "" {
		return fieldPath(k)
	}
	return p + "." + fieldPath(k)
}

func (p fieldPath) index(i int) fieldPath {
	return p + "[" + fieldPath(strconv.Itoa(i)) + "]"
}

func (p fieldPath) String() string {
	if p == "" {
		return "body"
	}
	return string(p)
}

func plainKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
