package codec

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
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

// requireCapped checks a 422 that found total problems: the first gtc.MaxFieldErrors are listed,
// the others counted, and the detail counts them all.
func requireCapped(t *testing.T, err error, total int) *gtc.Error {
	t.Helper()
	ge, ok := gtc.AsError(err)
	require.True(t, ok, "a user error: %v", err)
	require.Equal(t, gtc.CodeValidation, ge.Code)
	require.Len(t, ge.Fields, gtc.MaxFieldErrors, "the list stops at the cap")
	assert.Equal(t, total-gtc.MaxFieldErrors, ge.More, "the rest is counted")
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
	assert.Equal(t, gtc.FieldError{Field: "[0].status", Message: "must be one of: " + gtc.StatusList}, ge.Fields[0])
	assert.Equal(t, gtc.FieldError{Field: "[0].id", Message: "required"}, ge.Fields[1])
	assert.Equal(t, gtc.FieldError{Field: "[0].datasetName", Message: "required"}, ge.Fields[2])
	assert.Equal(t, gtc.FieldError{Field: "[1].id", Message: "required"}, ge.Fields[3])
	assert.Equal(t, gtc.FieldError{Field: "[42].status", Message: "must be one of: " + gtc.StatusList}, ge.Fields[98], "document order")
	assert.Equal(t, gtc.FieldError{Field: "[42].id", Message: "required"}, ge.Fields[99])
}

func TestImportOfNumbersListsTheFirstHundred(t *testing.T) {
	_, err := DecodeImport(numbers(200_000))
	ge := requireCapped(t, err, 200_000)
	for i, f := range ge.Fields {
		require.Equal(t, gtc.FieldError{Field: fmt.Sprintf("[%d]", i), Message: "expected object"}, f)
	}
}
