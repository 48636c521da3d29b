package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	gtc "github.com/gtc-dev/gtc"
	sqlitedrv "modernc.org/sqlite"
)

// DefaultBackupStepPages is how many pages Backup copies per step when BackupOptions.StepPages
// is zero: 256 pages, 1 MiB at SQLite's default page size.
const DefaultBackupStepPages = 256

// ErrBackupExists is the error of Backup when the destination file exists and
// BackupOptions.Force is not set.
var ErrBackupExists = fmt.Errorf("%w: the backup file already exists", gtc.ErrInvalidArgument)

// BackupOptions configures Backup.
type BackupOptions struct {
	// Force replaces an existing destination file; without it Backup refuses one.
	Force bool
	// StepPages is how many pages are copied per step (default DefaultBackupStepPages).
	// Cancellation is noticed between steps.
	StepPages int
	// Progress, when set, is called after every step with the pages copied so far and the
	// pages of the database.
	Progress func(copied, total int)
}

// BackupResult describes a finished backup.
type BackupResult struct {
	// Path is the absolute path of the copy.
	Path string
	// Pages and PageSize describe the copied database; Bytes is the size of the copy.
	Pages    int
	PageSize int
	Bytes    int64
	// Duration is the wall time of the whole backup, checks and renaming included.
	Duration time.Duration
}

// backuper is what the modernc.org/sqlite driver connection offers for SQLite's online
// backup API (sqlite3_backup_init/step/finish).
type backuper interface {
	NewBackup(dstURI string) (*sqlitedrv.Backup, error)
}

// Backup writes a consistent copy of the database to dst with SQLite's online backup API
// while the store keeps serving.
//
// The copy is the database as it was when the backup started: the pages are read inside
// one read transaction of a connection of its own, which in WAL mode neither blocks the
// writer nor is disturbed by it (writes committed during the copy are not in it; the WAL
// grows meanwhile, since it cannot be checkpointed past that snapshot). An in-memory
// store has a single connection; it is held for the copy, which then blocks the other
// calls.
//
// The copy goes to a temporary file beside dst; it is switched to the rollback journal
// (so it is one self-contained file), synced, checked with PRAGMA integrity_check and only
// then renamed to dst, so a failed or cancelled backup leaves no file under dst and no
// temporary file. ctx is honoured between steps.
//
// Refused with gtc.ErrInvalidArgument: dst is the live database or one of its -wal, -shm
// or -journal files, an existing directory, in a missing directory, or an existing file
// without opts.Force (ErrBackupExists).
func (s *Store) Backup(ctx context.Context, dst string, opts BackupOptions) (BackupResult, error) {
	start := time.Now()
	if s.closed.Load() {
		return BackupResult{}, errClosed("backup")
	}
	if err := ctx.Err(); err != nil {
		return BackupResult{}, wrapErr("backup", err)
	}
	step := opts.StepPages
	if step <= 0 {
		step = DefaultBackupStepPages
	}
	step = min(step, 1<<30) // sqlite3_backup_step takes an int
	dst, err := s.checkBackupDestination(dst, opts.Force)
	if err != nil {
		return BackupResult{}, err
	}

	tmpFile, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".*.tmp")
	if err != nil {
		return BackupResult{}, fileErr("backup: create temporary file", err)
	}
	tmp := tmpFile.Name()
	if err := tmpFile.Close(); err != nil {
		removeDatabaseFiles(tmp)
		return BackupResult{}, fileErr("backup: create temporary file", err)
	}
	done := false
	defer func() {
		if !done {
			removeDatabaseFiles(tmp)
		}
	}()

	pages, err := s.copyTo(ctx, tmp, step, opts.Progress)
	if err != nil {
		return BackupResult{}, err
	}
	pageSize, err := finishCopy(ctx, tmp)
	if err != nil {
		return BackupResult{}, err
	}
	if err := syncFile(tmp); err != nil {
		return BackupResult{}, fileErr("backup: sync the copy", err)
	}
	// CheckFile opens "file:" + its argument, so the path goes in escaped.
	res, err := CheckFile(ctx, uriPath(tmp))
	if err != nil {
		return BackupResult{}, wrapErr("backup: check the copy", err)
	}
	if res != "ok" {
		return BackupResult{}, fmt.Errorf("sqlite: backup: %w: the copy failed PRAGMA integrity_check: %s", gtc.ErrUnavailable, res)
	}
	fi, err := os.Stat(tmp)
	if err != nil {
		return BackupResult{}, fileErr("backup: stat the copy", err)
	}
	if err := ctx.Err(); err != nil {
		return BackupResult{}, wrapErr("backup", err)
	}
	if err := placeFile(tmp, dst, opts.Force); err != nil {
		return BackupResult{}, err
	}
	done = true
	if err := syncDir(filepath.Dir(dst)); err != nil {
		return BackupResult{}, fileErr("backup: sync the directory of "+dst, err)
	}
	return BackupResult{Path: dst, Pages: pages, PageSize: pageSize, Bytes: fi.Size(), Duration: time.Since(start)}, nil
}

// checkBackupDestination returns dst as an absolute path, or the reason it cannot be the
// destination of a backup.
func (s *Store) checkBackupDestination(dst string, force bool) (string, error) {
	if strings.TrimSpace(dst) == "" {
		return "", fmt.Errorf("sqlite: backup: %w: empty destination path", gtc.ErrInvalidArgument)
	}
	abs, err := filepath.Abs(dst)
	if err != nil {
		return "", fmt.Errorf("sqlite: backup: %w: destination %q: %w", gtc.ErrInvalidArgument, dst, err)
	}
	dir := filepath.Dir(abs)
	if di, err := os.Stat(dir); err != nil || !di.IsDir() {
		return "", fmt.Errorf("sqlite: backup: %w: directory %s does not exist", gtc.ErrInvalidArgument, dir)
	}
	if !s.memory {
		live, err := filepath.Abs(s.path)
		if err != nil {
			return "", fileErr("backup: locate the database", err)
		}
		for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
			if sameLocation(abs, live+suffix) {
				what := "the live database"
				if suffix != "" {
					what = "the " + suffix[1:] + " file of the live database"
				}
				return "", fmt.Errorf("sqlite: backup: %w: %s is %s; write the copy elsewhere", gtc.ErrInvalidArgument, dst, what)
			}
		}
	}
	fi, err := os.Stat(abs)
	switch {
	case err == nil && fi.IsDir():
		return "", fmt.Errorf("sqlite: backup: %w: %s is a directory; give a file name", gtc.ErrInvalidArgument, dst)
	case err == nil && !fi.Mode().IsRegular():
		return "", fmt.Errorf("sqlite: backup: %w: %s is not a regular file", gtc.ErrInvalidArgument, dst)
	case err == nil && !force:
		return "", fmt.Errorf("sqlite: backup: %w: %s", ErrBackupExists, dst)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return "", fileErr("backup: stat "+dst, err)
	}
	return abs, nil
}

// sameLocation reports whether the paths a and b (absolute) name the same file: the same
// existing file, or the same name in the same directory after symbolic links are resolved.
func sameLocation(a, b string) bool {
	if fa, err := os.Stat(a); err == nil {
		if fb, err := os.Stat(b); err == nil {
			return os.SameFile(fa, fb)
		}
	}
	resolve := func(p string) string {
		if d, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
			return filepath.Join(d, filepath.Base(p))
		}
		return filepath.Clean(p)
	}
	return resolve(a) == resolve(b)
}

// copyTo copies the database into the empty database file tmp, step pages at a time, and
// returns the number of pages copied.
func (s *Store) copyTo(ctx context.Context, tmp string, step int, progress func(copied, total int)) (int, error) {
	var conn *sql.Conn
	if s.memory {
		// The one connection is the database; holding it keeps every other call out, so
		// nothing changes under the copy.
		c, err := s.wdb.Conn(ctx)
		if err != nil {
			return 0, wrapErr("backup", err)
		}
		conn = c
	} else {
		db, err := s.openBackupSource(ctx)
		if err != nil {
			return 0, err
		}
		defer db.Close()
		c, err := db.Conn(ctx)
		if err != nil {
			return 0, wrapErr("backup: connect", err)
		}
		// One read transaction for the whole copy: in WAL mode its snapshot stays put while
		// the writer commits, so the backup never restarts and the copy is consistent.
		if _, err := c.ExecContext(ctx, "BEGIN"); err != nil {
			_ = c.Close()
			return 0, wrapErr("backup: begin", err)
		}
		var n int
		if err := c.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&n); err != nil {
			_ = c.Close()
			return 0, wrapErr("backup: begin", err)
		}
		conn = c
	}
	defer conn.Close()

	var pages int
	err := conn.Raw(func(dc any) error {
		b, ok := dc.(backuper)
		if !ok {
			return fmt.Errorf("the driver connection %T offers no online backup", dc)
		}
		bk, err := b.NewBackup("file:" + uriPath(tmp))
		if err != nil {
			return err
		}
		for {
			more, err := bk.Step(int32(step))
			if err != nil {
				_ = bk.Finish()
				return err
			}
			pages = bk.PageCount()
			if progress != nil {
				progress(pages-bk.Remaining(), pages)
			}
			if !more {
				return bk.Finish()
			}
			if err := ctx.Err(); err != nil {
				_ = bk.Finish()
				return err
			}
		}
	})
	if !s.memory {
		// A read transaction: nothing to keep. The connection is closed with its pool.
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
	}
	if err != nil {
		return 0, wrapErr("backup: copy", err)
	}
	return pages, nil
}

// openBackupSource opens a pool of one query-only connection to the database file, with the
// busy timeout of the store's readers.
func (s *Store) openBackupSource(ctx context.Context) (*sql.DB, error) {
	var busyMS int64
	if err := s.rdb.QueryRowContext(ctx, "PRAGMA busy_timeout").Scan(&busyMS); err != nil {
		return nil, wrapErr("backup: read busy timeout", err)
	}
	params := url.Values{}
	params.Add("_pragma", "busy_timeout("+strconv.FormatInt(busyMS, 10)+")")
	params.Add("_pragma", "query_only(1)")
	params.Add("_pragma", "mmap_size(0)")
	db, err := sql.Open("sqlite", s.path+"?"+params.Encode())
	if err != nil {
		return nil, wrapErr("backup: open", err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	return db, nil
}

// finishCopy switches the copy from WAL (the backup copies the source's header, which says
// WAL) to the rollback journal, so that the copy is one self-contained file, and returns its
// page size. gtc serve switches a restored copy back to WAL when it opens it.
func finishCopy(ctx context.Context, tmp string) (int, error) {
	db, err := sql.Open("sqlite", "file:"+uriPath(tmp))
	if err != nil {
		return 0, wrapErr("backup: open the copy", err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	var mode string
	if err := db.QueryRowContext(ctx, "PRAGMA journal_mode=DELETE").Scan(&mode); err != nil {
		return 0, wrapErr("backup: set the journal mode of the copy", err)
	}
	if mode != "delete" {
		return 0, fmt.Errorf("sqlite: backup: %w: the copy stayed in journal mode %q", gtc.ErrUnavailable, mode)
	}
	var pageSize int
	if err := db.QueryRowContext(ctx, "PRAGMA page_size").Scan(&pageSize); err != nil {
		return 0, wrapErr("backup: read the page size of the copy", err)
	}
	if err := db.Close(); err != nil {
		return 0, wrapErr("backup: close the copy", err)
	}
	return pageSize, nil
}

// placeFile moves the finished copy tmp to dst. Without force a hard link does it, which
// fails if dst appeared meanwhile; where the file system has no hard links, a rename after
// a last check.
func placeFile(tmp, dst string, force bool) error {
	if !force {
		err := os.Link(tmp, dst)
		if err == nil {
			removeDatabaseFiles(tmp)
			return nil
		}
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("sqlite: backup: %w: %s", ErrBackupExists, dst)
		}
		if _, err := os.Lstat(dst); err == nil {
			return fmt.Errorf("sqlite: backup: %w: %s", ErrBackupExists, dst)
		}
	}
	if err := os.Rename(tmp, dst); err != nil {
		return fileErr("backup: rename the copy to "+dst, err)
	}
	return nil
}

// removeDatabaseFiles removes the database file p and the journal files SQLite may have left
// beside it.
func removeDatabaseFiles(p string) {
	for _, suffix := range []string{"", "-journal", "-wal", "-shm"} {
		_ = os.Remove(p + suffix)
	}
}

func syncFile(p string) error {
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// syncDir makes a rename in dir durable. File systems that cannot sync a directory answer
// EINVAL; there is nothing more to do on them.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return err
	}
	return nil
}

// uriPath escapes the characters of a file path that end or change the path part of an
// SQLite URI filename ("file:" + path), so any path can be opened as a URI.
func uriPath(p string) string {
	return strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(p)
}
