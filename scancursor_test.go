package gtc

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A cursor is bound to its spec's hash and its format version.
func TestScanCursorFormat(t *testing.T) {
	spec := ScanSpec{Statuses: []Status{StatusDraft}}
	c := NewScanCursor(spec)
	c.D, c.I = "ds", "x"
	s := c.Encode()
	assert.NotContains(t, s, "+")
	assert.NotContains(t, s, "/")
	got, err := DecodeScanCursor(s, spec)
	assert.NoError(t, err)
	assert.Equal(t, c, got)
	_, err = DecodeScanCursor(s, ScanSpec{})
	assert.ErrorIs(t, err, ErrInvalidArgument, "another spec")
	_, err = DecodeScanCursor(s, ScanSpec{Statuses: []Status{StatusDraft}, Order: AnyOrder})
	assert.ErrorIs(t, err, ErrInvalidArgument, "another order")
	future := c
	future.V++
	_, err = DecodeScanCursor(future.Encode(), spec)
	assert.ErrorIs(t, err, ErrInvalidArgument, "another version")
	empty := NewScanCursor(spec)
	_, err = DecodeScanCursor(empty.Encode(), spec)
	assert.ErrorIs(t, err, ErrInvalidArgument, "no position")
	assert.Equal(t, ScanSpec{DatasetNames: []string{"b", "a"}}.Hash(), ScanSpec{DatasetNames: []string{"a", "b", "a"}}.Hash())
}
