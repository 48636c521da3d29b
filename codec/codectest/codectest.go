// Package codectest holds what the tests of the strict decoders share: hostile bodies and the
// check of a 422 whose problem list was capped. Only tests import it.
package codectest

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
)

// Numbers returns "[1,1,…]" with n elements.
func Numbers(n int) []byte {
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

// RequireCapped checks a 422 that found total problems: the first gtc.MaxFieldErrors are
// listed, the others counted, and the detail counts them all.
func RequireCapped(t *testing.T, err error, total int) *gtc.Error {
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
