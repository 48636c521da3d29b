// Package localfs is the artifact store on local disk.
// Objects are files below one root directory; every access goes through an os.Root, so
// neither a key nor a symlink planted in the tree can reach outside it. Writes go to a
// temporary sibling that is renamed (or hard-linked) onto the key, so a reader or a crash
// never sees a partial object under its real name.
package localfs

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
	"time"

	gtc "github.com/gtc-dev/gtc"
)

// tmpPrefix starts the name of every temporary file; List skips such names and Open
// removes stale ones, which is why keys may not use it (see checkKey).
const tmpPrefix = ".tmp-"

// staleAfter is how old a temporary file must be before Open treats it as a crash leftover
// rather than the body of a Put still running in another process.
const staleAfter = time.Hour

// copyBufferSize is the read size of Put; the context is checked between reads.
const copyBufferSize = 32 << 10

// Store is the local-disk gtc.ArtifactStore. It is safe for concurrent use; file I/O runs
// on the calling goroutine.
type Store struct {
	root *os.Root
}

var _ gtc.ArtifactStore = (*Store)(nil)

// Open opens the artifact root dir, creating it with mode 0700 if missing, proves that it
// is writable with a scratch file, and removes temporary files older than one hour that
// crashed writers left behind. Close releases the root.
func Open(dir string) (*Store, error) {
	notWritable := func(err error) error {
		return fmt.Errorf("GTC_EXPORT_LOCAL_DIR %s is not writable: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, notWritable(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, notWritable(err)
	}
	s := &Store{root: root}
	name, f, err := s.createTemp(".")
	if err == nil {
		err = f.Close()
		if rerr := root.Remove(name); err == nil {
			err = rerr
		}
	}
	if err != nil {
		root.Close()
		return nil, notWritable(err)
	}
	s.removeStaleTemps(time.Now())
	return s, nil
}

// Close releases the root directory; the store is unusable afterwards.
func (s *Store) Close() error { return s.root.Close() }

// Backend is "local".
func (s *Store) Backend() string { return "local" }

// removeStaleTemps deletes crash leftovers. It compares file times with the wall clock
// because the file system stamps them with it. It is best effort: a leftover that cannot
// be removed is harmless (never listed), so it must not stop startup.
func (s *Store) removeStaleTemps(now time.Time) {
	_ = fs.WalkDir(s.root.FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() || !strings.HasPrefix(d.Name(), tmpPrefix) {
			return nil
		}
		if fi, err := d.Info(); err == nil && now.Sub(fi.ModTime()) > staleAfter {
			_ = s.root.Remove(name)
		}
		return nil
	})
}

// checkKey adds one local rule to gtc.ValidateKey: no segment may start with ".tmp-",
// because such a file would be invisible to List, deleted at the next start, and could
// collide with the temporary file of a running Put.
func checkKey(key string, prefix bool) error {
	var err error
	if prefix {
		err = gtc.ValidatePrefix(key)
	} else {
		err = gtc.ValidateKey(key)
	}
	if err != nil {
		return err
	}
	for seg := range strings.SplitSeq(key, "/") {
		if strings.HasPrefix(seg, tmpPrefix) {
			return fmt.Errorf("%w %q: names starting with %s are reserved for temporary files on local disk", gtc.ErrInvalidKey, key, tmpPrefix)
		}
	}
	return nil
}

// Put streams body into a temporary sibling of key, hashing it, makes it durable, then
// renames it onto key (or, with IfNotExists, hard-links it, which fails atomically when
// the key exists). On any failure, cancellation included, the temporary file is removed.
func (s *Store) Put(ctx context.Context, key string, body io.Reader, opts gtc.PutOptions) (gtc.ArtifactInfo, error) {
	if err := checkKey(key, false); err != nil {
		return gtc.ArtifactInfo{}, err
	}
	if err := gtc.ValidatePutOptions(opts); err != nil {
		return gtc.ArtifactInfo{}, err
	}
	if err := ctx.Err(); err != nil {
		return gtc.ArtifactInfo{}, fmt.Errorf("artifacts: put %s: %w", key, err)
	}
	dir := path.Dir(key)
	tmp, f, err := s.createTempIn(dir)
	if err != nil {
		return gtc.ArtifactInfo{}, s.putError(key, err)
	}
	info, err := s.fill(ctx, key, f, body)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = s.putError(key, cerr)
	}
	if err == nil {
		err = s.commit(ctx, key, tmp, opts.IfNotExists)
	}
	if err != nil {
		_ = s.root.Remove(tmp)
		s.pruneEmptyDirs(dir)
		return gtc.ArtifactInfo{}, err
	}
	if err := s.syncDir(dir); err != nil {
		return gtc.ArtifactInfo{}, s.putError(key, err)
	}
	return info, nil
}

// createTempIn creates dir and a temporary file in it. A concurrent Delete may prune the
// freshly made directory before the file exists, so a vanished directory is retried.
func (s *Store) createTempIn(dir string) (string, *os.File, error) {
	for attempt := 0; ; attempt++ {
		if dir != "." {
			if err := s.root.MkdirAll(dir, 0o700); err != nil {
				return "", nil, err
			}
		}
		name, f, err := s.createTemp(dir)
		if errors.Is(err, fs.ErrNotExist) && attempt < 3 {
			continue
		}
		return name, f, err
	}
}

// createTemp creates an empty, exclusive temporary file in dir.
func (s *Store) createTemp(dir string) (string, *os.File, error) {
	for attempt := 0; ; attempt++ {
		var b [8]byte
		_, _ = rand.Read(b[:])
		name := path.Join(dir, tmpPrefix+hex.EncodeToString(b[:]))
		f, err := s.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) && attempt < 3 {
			continue
		}
		return name, f, err
	}
}

// fill copies body into f while hashing, then syncs f. The context is checked between
// reads because a body that keeps producing would otherwise never notice cancellation.
func (s *Store) fill(ctx context.Context, key string, f *os.File, body io.Reader) (gtc.ArtifactInfo, error) {
	h := sha256.New()
	buf := make([]byte, copyBufferSize)
	var size int64
	for {
		if err := ctx.Err(); err != nil {
			return gtc.ArtifactInfo{}, fmt.Errorf("artifacts: put %s: %w", key, err)
		}
		n, rerr := body.Read(buf)
		if n > 0 {
			if _, err := f.Write(buf[:n]); err != nil {
				return gtc.ArtifactInfo{}, s.putError(key, err)
			}
			h.Write(buf[:n])
			size += int64(n)
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return gtc.ArtifactInfo{}, fmt.Errorf("artifacts: put %s: read body: %w", key, rerr)
		}
	}
	if err := f.Sync(); err != nil {
		return gtc.ArtifactInfo{}, s.putError(key, err)
	}
	// The temporary file becomes the object (rename and link keep the inode), so its
	// times are the object's; stat now, as another writer may replace the key later.
	fi, err := f.Stat()
	if err != nil {
		return gtc.ArtifactInfo{}, s.putError(key, err)
	}
	info := infoOf(key, fi)
	info.Size = size
	info.SHA256 = hex.EncodeToString(h.Sum(nil))
	return info, nil
}

// commit makes the durable temporary file visible under key.
func (s *Store) commit(ctx context.Context, key, tmp string, ifNotExists bool) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("artifacts: put %s: %w", key, err)
	}
	if !ifNotExists {
		if err := s.root.Rename(tmp, key); err != nil {
			return s.putError(key, err)
		}
		return nil
	}
	if err := s.root.Link(tmp, key); err != nil {
		return s.putError(key, err)
	}
	// The object is in place; a leftover temporary name is only clutter that the next
	// start removes, so failing the Put over it would mislead the caller.
	_ = s.root.Remove(tmp)
	return nil
}

// putError maps a file-system error of Put. A file where a directory is needed, or a
// directory where the object should go, means the name is taken: disks cannot hold both
// "a" and "a/b", which Blob can.
func (s *Store) putError(key string, err error) error {
	switch {
	case errors.Is(err, fs.ErrExist), errors.Is(err, syscall.EISDIR):
		return fmt.Errorf("artifacts: put %s: %w (%w)", key, gtc.ErrArtifactExists, err)
	case errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("artifacts: put %s: an object is in the way of its directory: %w (%w)", key, gtc.ErrArtifactExists, err)
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		// Not "unavailable": the disk answers, it has no room. Put has removed (or will
		// remove) its temporary file, so nothing partial stays behind.
		return fmt.Errorf("artifacts: put %s: %w: %w", key, gtc.ErrStorageFull, err)
	}
	return fmt.Errorf("%w: put %s: %w", gtc.ErrStorageUnavailable, key, err)
}

// syncDir makes a rename or link in dir durable.
func (s *Store) syncDir(dir string) error {
	d, err := s.root.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// Open returns the object at key; the caller closes Body. SHA256 is empty because the
// local store does not keep hashes (the manifest carries them).
func (s *Store) Open(ctx context.Context, key string) (*gtc.ArtifactObject, error) {
	if err := checkKey(key, false); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("artifacts: open %s: %w", key, err)
	}
	f, err := s.root.Open(key)
	if err != nil {
		return nil, readError("open", key, err)
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fs.ErrNotExist
	}
	if err != nil {
		f.Close()
		return nil, readError("open", key, err)
	}
	return &gtc.ArtifactObject{ArtifactInfo: infoOf(key, fi), Body: f}, nil
}

// Stat returns the info of the object at key.
func (s *Store) Stat(ctx context.Context, key string) (gtc.ArtifactInfo, error) {
	if err := checkKey(key, false); err != nil {
		return gtc.ArtifactInfo{}, err
	}
	if err := ctx.Err(); err != nil {
		return gtc.ArtifactInfo{}, fmt.Errorf("artifacts: stat %s: %w", key, err)
	}
	fi, err := s.root.Stat(key)
	if err == nil && !fi.Mode().IsRegular() {
		err = fs.ErrNotExist
	}
	if err != nil {
		return gtc.ArtifactInfo{}, readError("stat", key, err)
	}
	return infoOf(key, fi), nil
}

// Delete removes the object at key, then the directories it leaves empty, so a
// Delimiter listing shows no "directory" without objects, as on Blob.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := checkKey(key, false); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("artifacts: delete %s: %w", key, err)
	}
	// Lstat, not Stat: Remove would take an empty directory too, which is not an object.
	fi, err := s.root.Lstat(key)
	if err == nil && fi.IsDir() {
		err = fs.ErrNotExist
	}
	if err == nil {
		err = s.root.Remove(key)
	}
	if err != nil {
		return readError("delete", key, err)
	}
	s.pruneEmptyDirs(path.Dir(key))
	return nil
}

// DeletePrefix removes every object under prefix, then the directories left empty,
// bottom-up. Temporary files of running Puts are left alone (their directories with
// them); on error it returns how many objects it had removed.
func (s *Store) DeletePrefix(ctx context.Context, prefix string) (int, error) {
	if err := checkKey(prefix, true); err != nil {
		return 0, err
	}
	dir := strings.TrimSuffix(prefix, "/")
	n, err := s.removeTree(ctx, dir)
	s.pruneEmptyDirs(path.Dir(dir))
	return n, err
}

func (s *Store) removeTree(ctx context.Context, dir string) (int, error) {
	entries, err := s.readDir(dir)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return n, fmt.Errorf("artifacts: delete prefix %s/: %w", dir, err)
		}
		name := dir + "/" + e.name
		if e.dir {
			m, err := s.removeTree(ctx, name)
			n += m
			if err != nil {
				return n, err
			}
			continue
		}
		if err := s.root.Remove(name); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue // deleted concurrently: not ours to count
			}
			return n, fmt.Errorf("%w: delete %s: %w", gtc.ErrStorageUnavailable, name, err)
		}
		n++
	}
	// Fails, as intended, when a running Put keeps a temporary file here.
	s.removeEmptyDir(dir)
	return n, nil
}

// pruneEmptyDirs removes dir and its ancestors below the root while they are empty.
// Remove refuses non-empty directories, so a concurrent Put's directory survives (and
// createTempIn retries if it loses the race between its MkdirAll and its create).
func (s *Store) pruneEmptyDirs(dir string) {
	for dir != "." && dir != "/" && dir != "" && s.removeEmptyDir(dir) {
		dir = path.Dir(dir)
	}
}

// removeEmptyDir removes dir if it is an empty directory. Root.Remove takes files too,
// and a prefix such as "a/b.d/" may name an object, which must survive.
func (s *Store) removeEmptyDir(dir string) bool {
	fi, err := s.root.Lstat(dir)
	return err == nil && fi.IsDir() && s.root.Remove(dir) == nil
}

// List yields the objects under prefix in ascending byte order of their keys. With
// Delimiter it yields the objects directly under prefix and one IsPrefix entry per child
// directory. A missing prefix directory yields nothing.
func (s *Store) List(ctx context.Context, prefix string, opts gtc.ListOptions) iter.Seq2[gtc.ArtifactEntry, error] {
	return func(yield func(gtc.ArtifactEntry, error) bool) {
		if err := checkKey(prefix, true); err != nil {
			yield(gtc.ArtifactEntry{}, err)
			return
		}
		dir := strings.TrimSuffix(prefix, "/")
		if !opts.Delimiter {
			s.walk(ctx, dir, yield)
			return
		}
		entries, err := s.readDir(dir)
		if err != nil {
			yield(gtc.ArtifactEntry{}, err)
			return
		}
		for _, e := range entries {
			if err := ctx.Err(); err != nil {
				yield(gtc.ArtifactEntry{}, fmt.Errorf("artifacts: list %s: %w", prefix, err))
				return
			}
			entry := gtc.ArtifactEntry{Key: prefix + e.name, Size: e.size}
			if e.dir {
				entry = gtc.ArtifactEntry{Key: prefix + e.name + "/", IsPrefix: true}
			}
			if !yield(entry, nil) {
				return
			}
		}
	}
}

// walk yields the objects below dir depth first. Because readDir orders each directory
// by the key its entries contribute ("b/" for a directory), this depth-first order is
// the byte order of full keys even for names with bytes below '/' such as "b-c".
func (s *Store) walk(ctx context.Context, dir string, yield func(gtc.ArtifactEntry, error) bool) bool {
	entries, err := s.readDir(dir)
	if err != nil {
		return yield(gtc.ArtifactEntry{}, err)
	}
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			yield(gtc.ArtifactEntry{}, fmt.Errorf("artifacts: list %s/: %w", dir, err))
			return false
		}
		name := dir + "/" + e.name
		if e.dir {
			if !s.walk(ctx, name, yield) {
				return false
			}
			continue
		}
		if !yield(gtc.ArtifactEntry{Key: name, Size: e.size}, nil) {
			return false
		}
	}
	return true
}

type dirEntry struct {
	name string
	dir  bool
	size int64
}

// sortKey is what the entry contributes to a full key at this level.
func (e dirEntry) sortKey() string {
	if e.dir {
		return e.name + "/"
	}
	return e.name
}

// readDir lists the objects and subdirectories of dir in key order. Temporary files and
// anything that is neither a regular file nor a directory (a planted symlink) are not
// objects. A missing dir, or one that is a file, holds nothing.
func (s *Store) readDir(dir string) ([]dirEntry, error) {
	f, err := s.root.Open(dir)
	if err != nil {
		if notFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("%w: list %s/: %w", gtc.ErrStorageUnavailable, dir, err)
	}
	defer f.Close()
	raw, err := f.ReadDir(-1)
	if err != nil {
		if notFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("%w: list %s/: %w", gtc.ErrStorageUnavailable, dir, err)
	}
	out := make([]dirEntry, 0, len(raw))
	for _, d := range raw {
		switch {
		case d.IsDir():
			out = append(out, dirEntry{name: d.Name(), dir: true})
		case d.Type().IsRegular() && !strings.HasPrefix(d.Name(), tmpPrefix):
			fi, err := d.Info()
			if err != nil {
				continue // removed since the directory was read
			}
			out = append(out, dirEntry{name: d.Name(), size: fi.Size()})
		}
	}
	slices.SortFunc(out, func(a, b dirEntry) int { return cmp.Compare(a.sortKey(), b.sortKey()) })
	return out, nil
}

// infoOf describes the file fi as the object key. The ETag adds the file's identity
// (inode) to "<mtime ns>-<size>": many kernels stamp file times from a coarse
// clock (one tick, a few ms), so two same-size writes in a row could share an ETag, while
// a replacement is always a new file, created before the old one is gone.
func infoOf(key string, fi fs.FileInfo) gtc.ArtifactInfo {
	mtime := fi.ModTime()
	etag := fmt.Sprintf(`"%x-%x"`, mtime.UnixNano(), fi.Size())
	if id, ok := fileID(fi); ok {
		etag = fmt.Sprintf(`"%x-%x-%x"`, mtime.UnixNano(), fi.Size(), id)
	}
	return gtc.ArtifactInfo{
		Key:          key,
		Size:         fi.Size(),
		ContentType:  gtc.ContentTypeFor(key),
		ETag:         etag,
		LastModified: mtime.UTC(),
	}
}

// notFound reports whether err means the path does not name anything, including a path
// that runs through a file ("a/b" when "a" is an object).
func notFound(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

func readError(op, key string, err error) error {
	if notFound(err) {
		return fmt.Errorf("artifacts: %s %s: %w", op, key, gtc.ErrArtifactNotFound)
	}
	return fmt.Errorf("%w: %s %s: %w", gtc.ErrStorageUnavailable, op, key, err)
}
