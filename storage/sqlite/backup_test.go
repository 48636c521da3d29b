package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	gtc "github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/codec"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// itemVersion is what a reader can tell of a stored item: its ETag and stored document.
type itemVersion struct {
	etag string
	doc  string
}

// backupFixture opens a file store holding n generated items of every status, curation
// instructions for each dataset, manual tags in the tag store and a tag definition.
func backupFixture(t *testing.T, n int) (*Store, string) {
	t.Helper()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "data", "gtc.db")
	s := openTest(t, Options{Path: path})
	t.Cleanup(func() { _ = s.Close() })
	r := rand.New(rand.NewPCG(7, 7))
	base := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	items := make([]*gtc.Item, 0, n)
	for i := range n {
		items = append(items, benchItem(r, i, base))
	}
	require.NoError(t, s.items.createMany(ctx, items))
	for d := range benchDatasets {
		_, _, err := s.Curation().Put(ctx, &gtc.CurationInstructions{DatasetName: fmt.Sprintf("dataset-%d", d),
			Instructions: fmt.Sprintf("# Rules for %d", d), UpdatedAt: base}, "")
		require.NoError(t, err)
	}
	_, err := s.TagStore().Add(ctx, []string{"custom:kept", "topic:billing"})
	require.NoError(t, err)
	_, _, err = s.TagDefinitions().Upsert(ctx, &gtc.TagDefinition{TagKey: "custom:kept", Description: "kept",
		CreatedBy: ptrTo("alice@example.com"), CreatedAt: base, UpdatedAt: base})
	require.NoError(t, err)
	return s, path
}

// allItems reads every item of s.
func allItems(t *testing.T, s gtc.Store) map[gtc.Key]itemVersion {
	t.Helper()
	out := map[gtc.Key]itemVersion{}
	cursor := ""
	for {
		page, err := s.Items().Scan(t.Context(), gtc.ScanSpec{}, cursor, 500)
		require.NoError(t, err)
		for _, it := range page.Items {
			out[it.Key()] = itemVersion{etag: it.ETag, doc: string(codec.ItemStoredJSON(it))}
		}
		if page.Next == "" {
			return out
		}
		cursor = page.Next
	}
}

// storeContents is everything but the items that a backup must carry.
type storeContents struct {
	counts      map[gtc.Status]int
	curation    map[string]gtc.CurationInstructions
	tags        []string
	definitions []*gtc.TagDefinition
}

func contentsOf(t *testing.T, s gtc.Store) storeContents {
	t.Helper()
	ctx := t.Context()
	counts, err := s.Items().CountByStatus(ctx)
	require.NoError(t, err)
	c := storeContents{counts: counts, curation: map[string]gtc.CurationInstructions{}}
	for d := range benchDatasets {
		ds := fmt.Sprintf("dataset-%d", d)
		cur, err := s.Curation().Get(ctx, ds)
		require.NoError(t, err)
		c.curation[ds] = *cur
	}
	c.tags, err = s.TagStore().List(ctx)
	require.NoError(t, err)
	c.definitions, err = s.TagDefinitions().List(ctx)
	require.NoError(t, err)
	return c
}

// openCopy opens a backup as a fresh store, from a directory of its own as a restore would.
func openCopy(t *testing.T, file string) *Store {
	t.Helper()
	restored := filepath.Join(t.TempDir(), "gtc.db")
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(restored, data, 0o600))
	s := openTest(t, Options{Path: restored})
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// dirNames lists the names in dir.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestBackupQuietStoreIsIdentical(t *testing.T) {
	s, _ := backupFixture(t, 400)
	want, wantContents := allItems(t, s), contentsOf(t, s)
	require.Len(t, want, 400)

	outDir := t.TempDir()
	out := filepath.Join(outDir, "copy.db")
	res, err := s.Backup(t.Context(), out, BackupOptions{})
	require.NoError(t, err)
	t.Logf("backup of 400 items: %d pages of %d bytes, %d bytes, %s", res.Pages, res.PageSize, res.Bytes, res.Duration)
	assert.Equal(t, out, res.Path)
	assert.Equal(t, int64(res.Pages)*int64(res.PageSize), res.Bytes, "the copy is exactly its pages")
	fi, err := os.Stat(out)
	require.NoError(t, err)
	assert.Equal(t, res.Bytes, fi.Size())
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "a copy of the data is private like the database")
	assert.Equal(t, []string{"copy.db"}, dirNames(t, outDir), "one self-contained file: no temporary, -wal or -shm file beside it")
	check, err := CheckFile(t.Context(), out)
	require.NoError(t, err)
	assert.Equal(t, "ok", check)
	var mode string
	require.NoError(t, sqlOpenRO(t, out).QueryRow("PRAGMA journal_mode").Scan(&mode))
	assert.Equal(t, "delete", mode, "the copy needs no -wal or -shm file, so it can be read where nothing can be written")
	assert.Equal(t, []string{"copy.db"}, dirNames(t, outDir), "reading the copy leaves no file beside it")

	cp := openCopy(t, out)
	assert.Equal(t, want, allItems(t, cp), "every item with its ETag")
	assert.Equal(t, wantContents, contentsOf(t, cp), "counts, curation instructions, tag store and definitions")
}

func TestBackupWhileWriting(t *testing.T) {
	s, _ := backupFixture(t, 300)
	ctx := t.Context()
	before := allItems(t, s)
	require.Len(t, before, 300)
	keys := make([]gtc.Key, 0, len(before))
	for k := range before {
		keys = append(keys, k)
	}

	// versions holds every version of every item the store acknowledged.
	var mu sync.Mutex
	versions := map[gtc.Key]map[string]string{}
	record := func(it *gtc.Item) {
		mu.Lock()
		defer mu.Unlock()
		if versions[it.Key()] == nil {
			versions[it.Key()] = map[string]string{}
		}
		versions[it.Key()][it.ETag] = string(codec.ItemStoredJSON(it))
	}
	for k, v := range before {
		versions[k] = map[string]string{v.etag: v.doc}
	}
	// keys[0] is left to the write made between two steps of the copy.
	touch := func(i int) error {
		k := keys[1+i%(len(keys)-1)]
		cur, err := s.Items().Get(ctx, k)
		if err != nil {
			return err
		}
		next := cur.Clone()
		next.Comment = fmt.Sprintf("edit %d", i)
		got, err := s.Items().Replace(ctx, cur, next)
		if err != nil {
			return err
		}
		record(got)
		return nil
	}

	// A writer that keeps replacing and creating items until the backup is over.
	stop := make(chan struct{})
	writerDone := make(chan error, 1)
	writes := 0
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				writerDone <- nil
				return
			default:
			}
			if i%3 == 2 {
				it := gtc.NewItem("during", fmt.Sprintf("new-%05d", i))
				it.Bucket = gtc.DeriveBucket(it.DatasetName, it.ID)
				it.History = []gtc.HistoryEntry{{Role: "user", Msg: "q"}, {Role: "assistant", Msg: "a"}}
				got, err := s.Items().Create(ctx, it)
				if err != nil {
					writerDone <- err
					return
				}
				record(got)
			} else if err := touch(i); err != nil {
				writerDone <- err
				return
			}
			writes++
		}
	}()

	// Between the steps of the copy, a write of our own must commit: the backup holds
	// neither the writer nor a lock that would make it wait. It is not in the copy, which
	// is the database as of the start of the backup.
	var midKey gtc.Key
	var midETag string
	steps := 0
	out := filepath.Join(t.TempDir(), "copy.db")
	res, err := s.Backup(ctx, out, BackupOptions{StepPages: 8, Progress: func(copied, total int) {
		steps++
		if steps != 2 {
			return
		}
		midKey = keys[0]
		cur, err := s.Items().Get(ctx, midKey)
		if !assert.NoError(t, err) {
			return
		}
		next := cur.Clone()
		next.Comment = "written while the backup ran"
		got, err := s.Items().Replace(ctx, cur, next)
		if assert.NoError(t, err, "a write commits while the backup runs") {
			midETag = got.ETag
			record(got)
		}
	}})
	close(stop)
	require.NoError(t, <-writerDone)
	require.NoError(t, err)
	t.Logf("backup while writing: %d pages, %d bytes in %d steps, %s; %d concurrent writes", res.Pages, res.Bytes, steps, res.Duration, writes)
	require.Greater(t, steps, 2, "the copy took several steps")
	require.NotEmpty(t, midETag)

	got := allItems(t, openCopy(t, out))
	for k := range before {
		assert.Contains(t, got, k, "an item stored before the backup is in the copy")
	}
	mu.Lock()
	defer mu.Unlock()
	for k, v := range got {
		doc, ok := versions[k][v.etag]
		if assert.True(t, ok, "%s in the copy has ETag %s, which the store never issued", k, v.etag) {
			assert.Equal(t, doc, v.doc, "%s in the copy is the version of its ETag", k)
		}
	}
	assert.NotEqual(t, midETag, got[midKey].etag, "a write committed during the copy is not in it")

	// The source kept every write.
	now := allItems(t, s)
	assert.Equal(t, midETag, now[midKey].etag)
	assert.GreaterOrEqual(t, len(now), len(got))
}

func TestBackupOfMemoryStore(t *testing.T) {
	s := openTest(t, Options{Path: MemoryPath})
	defer s.Close()
	r := rand.New(rand.NewPCG(3, 3))
	base := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	var items []*gtc.Item
	for i := range 50 {
		items = append(items, benchItem(r, i, base))
	}
	require.NoError(t, s.items.createMany(t.Context(), items))
	want := allItems(t, s)

	out := filepath.Join(t.TempDir(), "memory.db")
	_, err := s.Backup(t.Context(), out, BackupOptions{StepPages: 4})
	require.NoError(t, err)
	assert.Equal(t, want, allItems(t, openCopy(t, out)))
	// The store still answers: the one connection went back to it.
	_, err = s.Items().Create(t.Context(), newItem("after", "backup"))
	require.NoError(t, err)
}

func TestBackupRefusals(t *testing.T) {
	s, live := backupFixture(t, 20)
	ctx := t.Context()
	dir := t.TempDir()
	existing := filepath.Join(dir, "existing.db")
	require.NoError(t, os.WriteFile(existing, []byte("keep me"), 0o600))
	link := filepath.Join(dir, "link.db")
	require.NoError(t, os.Symlink(live, link))
	liveRel, err := filepath.Rel(mustGetwd(t), live)
	require.NoError(t, err)

	for _, tc := range []struct {
		name, dst string
		force     bool
		want      string
	}{
		{"live database", live, true, "is the live database"},
		{"live database, relative", liveRel, true, "is the live database"},
		{"symbolic link to the live database", link, true, "is the live database"},
		{"WAL", live + "-wal", true, "is the wal file of the live database"},
		{"shared memory", live + "-shm", true, "is the shm file of the live database"},
		{"directory", dir, true, "is a directory"},
		{"missing directory", filepath.Join(dir, "missing", "copy.db"), true, "does not exist"},
		{"existing file without force", existing, false, "the backup file already exists"},
		{"empty", "", true, "empty destination"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Backup(ctx, tc.dst, BackupOptions{Force: tc.force})
			require.Error(t, err)
			assert.ErrorIs(t, err, gtc.ErrInvalidArgument)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	assert.ErrorIs(t, func() error { _, err := s.Backup(ctx, existing, BackupOptions{}); return err }(), ErrBackupExists)
	data, err := os.ReadFile(existing)
	require.NoError(t, err)
	assert.Equal(t, "keep me", string(data), "a refused backup leaves the existing file alone")
	assert.ElementsMatch(t, []string{"existing.db", "link.db"}, dirNames(t, dir), "no temporary file left")

	// The live database is untouched and still serves.
	check, err := CheckFile(ctx, live)
	require.NoError(t, err)
	assert.Equal(t, "ok", check)
	n, err := s.Items().Count(ctx, gtc.Filter{})
	require.NoError(t, err)
	assert.Equal(t, 20, n)

	// With Force the existing file is replaced by the copy.
	_, err = s.Backup(ctx, existing, BackupOptions{Force: true})
	require.NoError(t, err)
	assert.Len(t, allItems(t, openCopy(t, existing)), 20)
	assert.ElementsMatch(t, []string{"existing.db", "link.db"}, dirNames(t, dir))

	require.NoError(t, s.Close())
	_, err = s.Backup(ctx, filepath.Join(dir, "closed.db"), BackupOptions{})
	assert.ErrorIs(t, err, gtc.ErrUnavailable, "a closed store cannot be backed up")
}

// sqlOpenRO opens the database file at path read-only.
func sqlOpenRO(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func mustGetwd(t *testing.T) string {
	wd, err := os.Getwd()
	require.NoError(t, err)
	return wd
}

func TestBackupCancelledLeavesNothing(t *testing.T) {
	s, _ := backupFixture(t, 200)
	for _, tc := range []struct {
		name  string
		force bool
	}{{"new file", false}, {"replacing with force", true}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "copy.db")
			if tc.force {
				require.NoError(t, os.WriteFile(out, []byte("previous backup"), 0o600))
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			steps := 0
			_, err := s.Backup(ctx, out, BackupOptions{Force: tc.force, StepPages: 4, Progress: func(copied, total int) {
				steps++
				if steps == 2 {
					require.Less(t, copied, total, "cancelled in the middle of the copy")
					cancel()
				}
			}})
			require.Error(t, err)
			assert.True(t, errors.Is(err, context.Canceled), "the error says the backup was cancelled: %v", err)
			assert.Equal(t, 2, steps, "no step after the cancellation")
			if tc.force {
				assert.Equal(t, []string{"copy.db"}, dirNames(t, dir), "no temporary file left")
				data, err := os.ReadFile(out)
				require.NoError(t, err)
				assert.Equal(t, "previous backup", string(data), "the file being replaced is untouched")
			} else {
				assert.Empty(t, dirNames(t, dir), "neither the file nor a temporary file")
			}
		})
	}

	// A context cancelled before the call creates nothing either.
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := s.Backup(ctx, filepath.Join(dir, "copy.db"), BackupOptions{})
	assert.ErrorIs(t, err, context.Canceled)
	assert.Empty(t, dirNames(t, dir))
}

func TestBackupPathsThatNeedEscaping(t *testing.T) {
	s, _ := backupFixture(t, 10)
	dir := filepath.Join(t.TempDir(), "odd %41 ? # dir")
	require.NoError(t, os.Mkdir(dir, 0o700))
	out := filepath.Join(dir, "copy %2f?.db")
	_, err := s.Backup(t.Context(), out, BackupOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"copy %2f?.db"}, dirNames(t, dir), "the copy is under the exact name given")
	assert.Len(t, allItems(t, openCopy(t, out)), 10)
}
