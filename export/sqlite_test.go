// The fuzz builds (scripts/fuzz.sh, -tags fuzzing) leave out the tests on the SQLite store:
// a fuzz build instruments every package of the test binary, and modernc.org/sqlite is the
// largest of them. The fuzz targets need no store.

//go:build !fuzzing

package export

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/storage/sqlite"
)

// newSQLite opens an SQLite store on a real file in a temporary directory.
func newSQLite(t testing.TB) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(t.TempDir(), "gtc.db"), Synchronous: "NORMAL"})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	return st
}

// fill creates n items over the datasets, every third one a draft.
func fill(t testing.TB, st gtc.Store, datasets []string, n int) {
	t.Helper()
	ctx := context.Background()
	for i := 0; i < n; i++ {
		status := gtc.StatusApproved
		if i%3 == 2 {
			status = gtc.StatusDraft
		}
		_, err := st.Items().Create(ctx, fixtureItem(datasets[i%len(datasets)], i, status))
		require.NoError(t, err)
	}
}
