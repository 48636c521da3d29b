package gtc

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

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
