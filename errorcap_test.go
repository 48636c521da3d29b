package gtc

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// numbers returns "[1,1,…]" with n elements.
func numbers(n int) []byte {
	var b bytes.Buffer
	b.Grow(2*n + 2)
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('1')
	}
	b.WriteByte(']')
	return b.Bytes()
}

// requireCapped checks a 422 that found total problems: the first MaxFieldErrors are listed,
// the others counted, and the detail counts them all.
func requireCapped(t *testing.T, err error, total int) *Error {
	t.Helper()
	ge, ok := AsError(err)
	require.True(t, ok, "a user error: %v", err)
	require.Equal(t, CodeValidation, ge.Code)
	require.Len(t, ge.Fields, MaxFieldErrors, "the list stops at the cap")
	assert.Equal(t, total-MaxFieldErrors, ge.More, "the rest is counted")
	assert.Equal(t, "Request validation failed: "+ge.Fields[0].Field+": "+ge.Fields[0].Message+
		" (and "+strconv.Itoa(total-1)+" more)", ge.Message)
	return ge
}

func TestImportOfManyBadElementsListsTheFirstHundred(t *testing.T) {
	// Each element misses id and datasetName; every third has a bad status too.
	const n = 5000
	var b strings.Builder
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		if i%3 == 0 {
			b.WriteString(`{"status":"nope"}`)
		} else {
			b.WriteString(`{}`)
		}
	}
	b.WriteByte(']')
	_, err := DecodeImport([]byte(b.String()))
	ge := requireCapped(t, err, 2*n+(n+2)/3)
	assert.Equal(t, FieldError{Field: "[0].status", Message: "must be one of: " + StatusList}, ge.Fields[0])
	assert.Equal(t, FieldError{Field: "[0].id", Message: "required"}, ge.Fields[1])
	assert.Equal(t, FieldError{Field: "[0].datasetName", Message: "required"}, ge.Fields[2])
	assert.Equal(t, FieldError{Field: "[1].id", Message: "required"}, ge.Fields[3])
	assert.Equal(t, FieldError{Field: "[42].status", Message: "must be one of: " + StatusList}, ge.Fields[98], "document order")
	assert.Equal(t, FieldError{Field: "[42].id", Message: "required"}, ge.Fields[99])
}

func TestImportOfNumbersListsTheFirstHundred(t *testing.T) {
	_, err := DecodeImport(numbers(200_000))
	ge := requireCapped(t, err, 200_000)
	for i, f := range ge.Fields {
		require.Equal(t, FieldError{Field: fmt.Sprintf("[%d]", i), Message: "expected object"}, f)
	}
}

func TestPutWithThousandsOfUnknownKeysListsTheFirstHundred(t *testing.T) {
	const n = 3000
	var b strings.Builder
	b.WriteString(`{"comment":7,`)
	for i := range n {
		fmt.Fprintf(&b, `"k%d":1,`, i)
	}
	// Repeated unknown keys are reported once, at their first position.
	b.WriteString(`"k0":2,"k5":3,"status":"draft"}`)
	_, err := DecodeItemPatch([]byte(b.String()), false)
	ge := requireCapped(t, err, n+1)
	assert.Equal(t, FieldError{Field: "comment", Message: "expected string"}, ge.Fields[0])
	for i, f := range ge.Fields[1:] {
		require.Equal(t, FieldError{Field: fmt.Sprintf("k%d", i), Message: "unknown field"}, f)
	}
}

func TestPutWithAHistoryOfNumbersListsTheFirstHundred(t *testing.T) {
	body := append(append([]byte(`{"history":`), numbers(200_000)...), '}')
	_, err := DecodeItemPatch(body, false)
	ge := requireCapped(t, err, 200_000)
	assert.Equal(t, FieldError{Field: "history[0]", Message: "expected object"}, ge.Fields[0])
	assert.Equal(t, FieldError{Field: "history[99]", Message: "expected object"}, ge.Fields[99])
}

func TestAShortErrorListIsUnchanged(t *testing.T) {
	_, err := DecodeItemPatch([]byte(`{"history":[1,{"role":2}],"answer":1,"metadata":[]}`), false)
	ge, ok := AsError(err)
	require.True(t, ok)
	assert.Equal(t, &Error{Code: CodeValidation,
		Message: "Request validation failed: history[0]: expected object (and 3 more)",
		Fields: []FieldError{{"history[0]", "expected object"}, {"history[1].role", "expected string"},
			{"answer", "unknown field"}, {"metadata", "expected object"}}}, ge)
}

func TestErrorConstructorsCapTheirLists(t *testing.T) {
	many := make([]FieldError, 250)
	for i := range many {
		many[i] = FieldError{Field: fmt.Sprintf("tags[%d]", i), Message: "bad"}
	}
	fe := FieldsError(CodeInvalidTagFormat, many)
	assert.Len(t, fe.Fields, MaxFieldErrors)
	assert.Equal(t, 150, fe.More)
	assert.Equal(t, "bad", fe.Message)

	ve := ValidationError(many)
	assert.Len(t, ve.Fields, MaxFieldErrors)
	assert.Equal(t, 150, ve.More)
	assert.Equal(t, "Request validation failed: tags[0]: bad (and 249 more)", ve.Message)

	// Path problems come first, and what the body's error counted is carried over.
	path := []FieldError{{Field: "path.bucket", Message: "must be a UUID"}}
	joined := ValidationErrorWith(path, ve)
	assert.Len(t, joined.Fields, MaxFieldErrors)
	assert.Equal(t, path[0], joined.Fields[0])
	assert.Equal(t, 151, joined.More)
	assert.Equal(t, "Request validation failed: path.bucket: must be a UUID (and 250 more)", joined.Message)

	few := ValidationErrorWith(path, ValidationError(many[:2]))
	assert.Equal(t, &Error{Code: CodeValidation, Message: "Request validation failed: path.bucket: must be a UUID (and 2 more)",
		Fields: []FieldError{path[0], many[0], many[1]}}, few)
}
