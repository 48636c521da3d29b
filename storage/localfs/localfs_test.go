package localfs_test

import (
	"bytes"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	gtc "github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/storage/localfs"
	"github.com/gtc-dev/gtc/storage/storetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// openStore opens a store on a fresh directory and closes it at cleanup.
func openStore(t *testing.T, dir string) *localfs.Store {
	t.Helper()
	s, err := localfs.Open(dir)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	return s
}

// rawFiles lists every non-directory below dir, relative and "/"-separated.
func rawFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		out = append(out, filepath.ToSlash(rel))
		return err
	})
	require.NoError(t, err)
	sort.Strings(out)
	return out
}

func TestConformance(t *testing.T) {
	var dirs sync.Map // *localfs.Store → its directory
	start := time.Now()
	storetest.RunArtifacts(t, storetest.ArtifactHarness{
		New: func(t *testing.T) gtc.ArtifactStore {
			dir := t.TempDir()
			s := openStore(t, dir)
			dirs.Store(s, dir)
			return s
		},
		Raw: func(t *testing.T, s gtc.ArtifactStore) []string {
			dir, ok := dirs.Load(s)
			require.True(t, ok, "store not made by this harness")
			return rawFiles(t, dir.(string))
		},
	})
	t.Cleanup(func() { t.Logf("artifact conformance suite: %s", time.Since(start).Round(time.Millisecond)) })
}

func TestOpenCreatesRoot(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data", "exports")
	s := openStore(t, dir)
	fi, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
	assert.Equal(t, "local", s.Backend())
	assert.Empty(t, rawFiles(t, dir), "the scratch file is gone")
}

func TestOpenNotWritable(t *testing.T) {
	t.Run("path under a regular file", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "file")
		require.NoError(t, os.WriteFile(file, nil, 0o600))
		dir := filepath.Join(file, "exports")
		_, err := localfs.Open(dir)
		require.Error(t, err)
		assert.True(t, strings.HasPrefix(err.Error(), "GTC_EXPORT_LOCAL_DIR "+dir+" is not writable: "), err.Error())
	})
	t.Run("read-only directory", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("running as root: directory permissions do not stop writes")
		}
		dir := filepath.Join(t.TempDir(), "ro")
		require.NoError(t, os.Mkdir(dir, 0o500))
		t.Cleanup(func() { os.Chmod(dir, 0o700) })
		_, err := localfs.Open(dir)
		require.Error(t, err)
		assert.True(t, strings.HasPrefix(err.Error(), "GTC_EXPORT_LOCAL_DIR "+dir+" is not writable: "), err.Error())
		assert.ErrorIs(t, err, fs.ErrPermission)
	})
}

func TestOpenRemovesStaleTemporaryFiles(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-2 * time.Hour)
	files := map[string]time.Time{
		".tmp-00000000000000aa":                      old,
		"exports/snapshots/x/.tmp-00000000000000bb":  old,
		"exports/snapshots/x/.tmp-00000000000000cc":  time.Now().Add(-time.Minute), // a Put may still own it
		"exports/snapshots/x/manifest.json":          old,
		"exports/snapshots/x/.reserved":              old,
		"exports/snapshots/x/tmp-not-a-leftover.bin": old,
	}
	for name, mtime := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o700))
		require.NoError(t, os.WriteFile(p, []byte("x"), 0o600))
		require.NoError(t, os.Chtimes(p, mtime, mtime))
	}
	s := openStore(t, dir)
	assert.Equal(t, []string{
		"exports/snapshots/x/.reserved",
		"exports/snapshots/x/.tmp-00000000000000cc",
		"exports/snapshots/x/manifest.json",
		"exports/snapshots/x/tmp-not-a-leftover.bin",
	}, rawFiles(t, dir))

	var listed []string
	for e, err := range s.List(t.Context(), "exports/", gtc.ListOptions{}) {
		require.NoError(t, err)
		listed = append(listed, e.Key)
	}
	assert.Equal(t, []string{
		"exports/snapshots/x/.reserved",
		"exports/snapshots/x/manifest.json",
		"exports/snapshots/x/tmp-not-a-leftover.bin",
	}, listed, "the fresh temporary file is not an object")
}

func TestTemporaryNamesAreReserved(t *testing.T) {
	s := openStore(t, t.TempDir())
	ctx := t.Context()
	for _, key := range []string{".tmp-0123456789abcdef", "a/.tmp-x/b.json"} {
		_, err := s.Put(ctx, key, strings.NewReader("x"), gtc.PutOptions{ContentType: gtc.ContentTypeOctet})
		assert.ErrorIs(t, err, gtc.ErrInvalidKey, "Put %s", key)
		_, err = s.Open(ctx, key)
		assert.ErrorIs(t, err, gtc.ErrInvalidKey, "Open %s", key)
		assert.ErrorIs(t, s.Delete(ctx, key), gtc.ErrInvalidKey, "Delete %s", key)
	}
	_, err := s.DeletePrefix(ctx, "a/.tmp-x/")
	assert.ErrorIs(t, err, gtc.ErrInvalidKey)
}

// A reader that opened the object before an overwrite keeps reading the old bytes, and
// readers racing with overwrites only ever see one whole version.
func TestAtomicReplace(t *testing.T) {
	s := openStore(t, t.TempDir())
	ctx := t.Context()
	const key, size = "snap/ground-truth-items.jsonl", 256 << 10
	versions := [][]byte{bytes.Repeat([]byte("a"), size), bytes.Repeat([]byte("b"), size)}
	put := func(v []byte) {
		_, err := s.Put(ctx, key, bytes.NewReader(v), gtc.PutOptions{ContentType: gtc.ContentTypeNDJSON})
		require.NoError(t, err)
	}
	put(versions[0])
	old, err := s.Open(ctx, key)
	require.NoError(t, err)
	put(versions[1])
	got, err := io.ReadAll(old.Body)
	require.NoError(t, err)
	require.NoError(t, old.Body.Close())
	assert.Equal(t, versions[0], got, "an open reader keeps its version")

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				obj, err := s.Open(ctx, key)
				if !assert.NoError(t, err, "the key is never missing during a replace") {
					return
				}
				b, err := io.ReadAll(obj.Body)
				obj.Body.Close()
				assert.NoError(t, err)
				if !assert.True(t, bytes.Equal(b, versions[0]) || bytes.Equal(b, versions[1]), "a torn read of %d bytes", len(b)) {
					return
				}
			}
		})
	}
	for i := range 40 {
		put(versions[i%2])
	}
	close(stop)
	wg.Wait()
}

// A symlink planted inside the root that points outside must not let the store read,
// write, list or delete anything out there.
func TestSymlinkEscapeRefused(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.json")
	require.NoError(t, os.WriteFile(secret, []byte(`{"secret":true}`), 0o600))
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "exports"), 0o700))
	require.NoError(t, os.Symlink(secret, filepath.Join(dir, "exports", "abs.json")))
	rel, err := filepath.Rel(filepath.Join(dir, "exports"), secret)
	require.NoError(t, err)
	require.NoError(t, os.Symlink(rel, filepath.Join(dir, "exports", "rel.json")))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "linkdir")))
	s := openStore(t, dir)
	ctx := t.Context()

	for _, key := range []string{"exports/abs.json", "exports/rel.json", "linkdir/secret.json"} {
		obj, err := s.Open(ctx, key)
		if assert.Error(t, err, "Open %s", key) {
			assert.NotErrorIs(t, err, gtc.ErrInvalidKey, "the key itself is fine")
		} else {
			obj.Body.Close()
		}
		_, err = s.Stat(ctx, key)
		assert.Error(t, err, "Stat %s", key)
	}

	_, err = s.Put(ctx, "linkdir/planted.json", strings.NewReader("{}"), gtc.PutOptions{ContentType: gtc.ContentTypeJSON})
	assert.Error(t, err, "Put through a directory symlink")
	assert.NoFileExists(t, filepath.Join(outside, "planted.json"))

	for _, prefix := range []string{"linkdir/", "exports/"} {
		for e, err := range s.List(ctx, prefix, gtc.ListOptions{}) {
			if err == nil {
				assert.NotContains(t, e.Key, "secret", "List %s", prefix)
			}
		}
		_, _ = s.DeletePrefix(ctx, prefix)
	}
	assert.NoError(t, s.Delete(ctx, "exports/abs.json"), "deleting the planted link itself is harmless")
	assert.ErrorIs(t, s.Delete(ctx, "linkdir/secret.json"), gtc.ErrStorageUnavailable)

	// A plain Put onto a planted file link replaces the link, never the target.
	_, err = s.Put(ctx, "exports/rel.json", strings.NewReader("{}"), gtc.PutOptions{ContentType: gtc.ContentTypeJSON})
	require.NoError(t, err)
	b, err := os.ReadFile(secret)
	require.NoError(t, err)
	assert.Equal(t, `{"secret":true}`, string(b), "the outside file is untouched")
	fi, err := os.Lstat(filepath.Join(dir, "exports", "rel.json"))
	require.NoError(t, err)
	assert.True(t, fi.Mode().IsRegular(), "the link was replaced by the object")
}

func TestClosedStoreIsUnavailable(t *testing.T) {
	s, err := localfs.Open(t.TempDir())
	require.NoError(t, err)
	require.NoError(t, s.Close())
	_, err = s.Stat(t.Context(), "x.json")
	assert.ErrorIs(t, err, gtc.ErrStorageUnavailable)
	_, err = s.Put(t.Context(), "x.json", strings.NewReader("{}"), gtc.PutOptions{ContentType: gtc.ContentTypeJSON})
	assert.ErrorIs(t, err, gtc.ErrStorageUnavailable)
}
