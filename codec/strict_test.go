package codec

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/codec/codectest"
)

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
	ge := codectest.RequireCapped(t, err, 2*n+(n+2)/3)
	assert.Equal(t, gtc.FieldError{Field: "[0].status", Message: "must be one of: " + gtc.StatusList}, ge.Fields[0])
	assert.Equal(t, gtc.FieldError{Field: "[0].id", Message: "required"}, ge.Fields[1])
	assert.Equal(t, gtc.FieldError{Field: "[0].datasetName", Message: "required"}, ge.Fields[2])
	assert.Equal(t, gtc.FieldError{Field: "[1].id", Message: "required"}, ge.Fields[3])
	assert.Equal(t, gtc.FieldError{Field: "[42].status", Message: "must be one of: " + gtc.StatusList}, ge.Fields[98], "document order")
	assert.Equal(t, gtc.FieldError{Field: "[42].id", Message: "required"}, ge.Fields[99])
}

func TestImportOfNumbersListsTheFirstHundred(t *testing.T) {
	_, err := DecodeImport(codectest.Numbers(200_000))
	ge := codectest.RequireCapped(t, err, 200_000)
	for i, f := range ge.Fields {
		require.Equal(t, gtc.FieldError{Field: fmt.Sprintf("[%d]", i), Message: "expected object"}, f)
	}
}
