//go:build unix

package sqlite

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Each store opened on a file counts as a server of its own: the lock is held by the open
// file, as it is by a process.
func TestClaimServeSeesAnotherServer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gtc.db")
	claim := func(s *Store) bool {
		t.Helper()
		alone, lockFile, err := s.ClaimServe()
		require.NoError(t, err)
		assert.Equal(t, path+"-serve", lockFile)
		return alone
	}
	a := openTest(t, Options{Path: path})
	require.True(t, claim(a), "the first server is alone")
	b := openTest(t, Options{Path: path})
	assert.False(t, claim(b), "a second server sees the first")
	c := openTest(t, Options{Path: path})
	assert.False(t, claim(c), "a third sees both")

	require.NoError(t, a.Close())
	d := openTest(t, Options{Path: path})
	assert.False(t, claim(d), "the first gone, the second and third still serve")
	require.NoError(t, b.Close())
	require.NoError(t, c.Close())
	require.NoError(t, d.Close())

	e := openTest(t, Options{Path: path})
	t.Cleanup(func() { _ = e.Close() })
	assert.True(t, claim(e), "once every server has closed, the next is alone")

	m := openTest(t, Options{Path: MemoryPath})
	t.Cleanup(func() { _ = m.Close() })
	alone, _, err := m.ClaimServe()
	require.NoError(t, err)
	assert.True(t, alone, "an in-memory database is its process's own")
}
