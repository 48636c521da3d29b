package localfs_test

import (
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FreeBytes is in bytes, within the size of the root's file system, and not zero on the
// disk the tests write to.
func TestFreeBytes(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	free, err := s.FreeBytes()
	require.NoError(t, err)
	var st syscall.Statfs_t
	require.NoError(t, syscall.Statfs(dir, &st))
	assert.Positive(t, free)
	assert.LessOrEqual(t, free, st.Blocks*uint64(st.Bsize), "no more free than the file system holds")
}
