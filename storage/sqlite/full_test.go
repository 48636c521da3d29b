package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	gtc "github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/codec"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sqliteMaxPageCount is SQLite's own ceiling for max_page_count: "no cap".
const sqliteMaxPageCount = 4294967294

// integrity runs PRAGMA integrity_check on db ("ok" when the file is sound).
func integrity(t *testing.T, db *sql.DB) string {
	t.Helper()
	out, err := integrityCheck(context.Background(), db)
	require.NoError(t, err)
	return out
}

// TestFullDatabaseRefusesWritesAndKeepsWhatWasStored caps the database file at its current
// size, as a full disk would, and checks what a caller sees: writes that need room fail
// with ErrStorageFull (not the "retry later" of ErrUnavailable), alone or sharing a group
// commit with others; everything acknowledged before, or beside, stays as it was
// acknowledged; the refused writes left nothing behind; the file is sound; and once there
// is room again, writes work without reopening the store.
func TestFullDatabaseRefusesWritesAndKeepsWhatWasStored(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "gtc.db")
	s := openTest(t, Options{Path: path})
	defer s.Close()

	// About 3 KiB per item: every one needs pages of its own.
	payload := strings.Repeat("the quick brown fox jumps over the lazy dog ", 70)
	n := 0
	newBig := func() *gtc.Item {
		n++
		it := newItem("full", fmt.Sprintf("item-%04d", n))
		it.Comment = fmt.Sprintf("%d %s", n, payload)
		return it
	}
	acked := map[gtc.Key]*gtc.Item{} // what the store answered for every acknowledged write
	var mu sync.Mutex
	for range 40 {
		created, err := s.Items().Create(ctx, newBig())
		require.NoError(t, err)
		acked[created.Key()] = created
	}

	var pages, capped int64
	require.NoError(t, s.wdb.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages))
	require.NoError(t, s.wdb.QueryRowContext(ctx, fmt.Sprintf("PRAGMA max_page_count = %d", pages)).Scan(&capped))
	require.Equal(t, pages, capped, "the writer connection is capped at the current size")

	// Free pages left in the file may take a few more writes; then the store refuses.
	var refused []gtc.Key
	for i := 0; i < 500 && len(refused) == 0; i++ {
		it := newBig()
		created, err := s.Items().Create(ctx, it)
		if err == nil {
			acked[created.Key()] = created
			continue
		}
		require.ErrorIs(t, err, gtc.ErrStorageFull, "a write the full database cannot hold")
		require.NotErrorIs(t, err, gtc.ErrUnavailable, "a full disk is not a store that is unreachable")
		assert.True(t, gtc.IsStoreError(err))
		refused = append(refused, it.Key())
	}
	require.NotEmpty(t, refused, "the capped database refused no write")

	// A burst of concurrent writes shares group commits: creates, and replaces that grow
	// stored items. Each either lands whole or fails with ErrStorageFull.
	var keys []gtc.Key
	for k := range acked {
		keys = append(keys, k)
	}
	var wg sync.WaitGroup
	var failures, others []error
	for i := range 32 {
		wg.Go(func() {
			var err error
			var key gtc.Key
			var out *gtc.Item
			if i%2 == 0 {
				mu.Lock()
				it := newBig()
				mu.Unlock()
				key = it.Key()
				out, err = s.Items().Create(ctx, it)
			} else {
				key = keys[i%len(keys)]
				mu.Lock()
				prev := acked[key]
				mu.Unlock()
				next := prev.Clone()
				next.Comment = prev.Comment + " " + payload
				out, err = s.Items().Replace(ctx, prev, next)
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				acked[key] = out
			case errors.Is(err, gtc.ErrStorageFull) && !errors.Is(err, gtc.ErrUnavailable):
				failures = append(failures, err)
				if i%2 == 0 {
					refused = append(refused, key)
				}
			default:
				others = append(others, err)
			}
		})
	}
	wg.Wait()
	assert.Empty(t, others, "every failure of the burst is ErrStorageFull")
	assert.NotEmpty(t, failures, "the burst found room for every write")
	t.Logf("burst: %d writes refused with ErrStorageFull, %d acknowledged items in all", len(failures), len(acked))

	// A bulk create (an import) while full: its items go in together, and when that fails
	// they are written one at a time; each lands whole or fails with ErrStorageFull.
	var bulk []*gtc.Item
	for range 12 {
		bulk = append(bulk, newBig())
	}
	bulkRefused := 0
	for i, err := range s.Items().CreateEach(ctx, bulk) {
		switch {
		case err == nil:
			got, err := s.Items().Get(ctx, bulk[i].Key())
			require.NoError(t, err, "a bulk create that succeeded is stored")
			acked[got.Key()] = got
		case errors.Is(err, gtc.ErrStorageFull) && !errors.Is(err, gtc.ErrUnavailable):
			bulkRefused++
			refused = append(refused, bulk[i].Key())
		default:
			t.Errorf("bulk create %s: %v", bulk[i].Key(), err)
		}
	}
	assert.Positive(t, bulkRefused, "the full database refused none of the bulk create")

	// Everything acknowledged reads back exactly as acknowledged; the refused creates are
	// not there; the failed replaces left their items unchanged (acked still holds the old
	// state for them).
	for k, want := range acked {
		got, err := s.Items().Get(ctx, k)
		require.NoError(t, err, "acknowledged item %s", k)
		assert.Equal(t, want.ETag, got.ETag, "item %s", k)
		assert.Equal(t, string(codec.ItemStoredJSON(want)), string(codec.ItemStoredJSON(got)), "item %s", k)
	}
	for _, k := range refused {
		_, err := s.Items().Get(ctx, k)
		assert.ErrorIs(t, err, gtc.ErrNotFound, "a refused create stored nothing: %s", k)
	}
	count, err := s.Items().Count(ctx, gtc.Filter{})
	require.NoError(t, err)
	assert.Equal(t, len(acked), count, "the store holds exactly the acknowledged items")
	assert.Equal(t, "ok", integrity(t, s.rdb), "integrity while full")

	// Room again: writes work on the same store, without reopening it.
	require.NoError(t, s.wdb.QueryRowContext(ctx, fmt.Sprintf("PRAGMA max_page_count = %d", int64(sqliteMaxPageCount))).Scan(&capped))
	for range 20 {
		created, err := s.Items().Create(ctx, newBig())
		require.NoError(t, err, "a write after space was freed")
		acked[created.Key()] = created
	}
	prev := acked[keys[0]]
	next := prev.Clone()
	next.Comment = "after the disk was freed " + payload
	out, err := s.Items().Replace(ctx, prev, next)
	require.NoError(t, err)
	acked[out.Key()] = out

	require.NoError(t, s.Close())
	db, err := sql.Open("sqlite", path+"?mode=ro")
	require.NoError(t, err)
	defer db.Close()
	assert.Equal(t, "ok", integrity(t, db), "integrity after close")
	var rows int
	require.NoError(t, db.QueryRow("SELECT count(*) FROM items").Scan(&rows))
	assert.Equal(t, len(acked), rows)
}
