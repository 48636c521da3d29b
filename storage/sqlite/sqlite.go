// Package sqlite is the embedded item store: one SQLite file in WAL mode, driven through
// database/sql by the pure-Go modernc.org/sqlite driver.
//
// Writes go through a single writer connection. A writer goroutine batches the writes that
// are queued at the same moment into one BEGIN IMMEDIATE … COMMIT (group commit), each write
// inside its own SAVEPOINT, so every store operation stays atomic on its own while many of
// them share one fsync. Reads use a separate pool of query-only connections, which WAL lets
// run beside the writer.
package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	gtc "github.com/gtc-dev/gtc"
	sqlitedrv "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// MemoryPath is the Path of a private, throw-away in-memory database.
const MemoryPath = ":memory:"

// Defaults of Options.
const (
	DefaultSynchronous     = "FULL"
	DefaultBusyTimeout     = 5 * time.Second
	DefaultReadConnections = 4
)

// Options configures Open. The zero value of every field but Path picks its default.
type Options struct {
	// Path is the database file, or ":memory:" for a private in-memory database.
	Path string
	// Synchronous is "FULL" (default: a committed write survives a power loss) or "NORMAL".
	Synchronous string
	// BusyTimeout bounds the wait for a lock held by another process (default 5 s).
	BusyTimeout time.Duration
	// ReadConnections is the size of the reader pool (default 4).
	ReadConnections int
	// Random feeds the ETags (default crypto/rand.Reader). It is read under a lock, so
	// it need not be safe for concurrent use.
	Random io.Reader
	// Clock stamps the meta rows: the creation of a new database and the migration marker
	// (default the system clock).
	Clock gtc.Clock
	// History configures the item revisions: whether they are recorded, and how many and how
	// old ones are kept (the zero value records and keeps them all). Retention runs inside
	// the item writes: each write deletes at most 32 of the item's revisions that the
	// settings no longer keep.
	History gtc.HistoryOptions
	// Logger receives migrations and shutdown problems (default: discarded).
	Logger *slog.Logger
}

// Store is the SQLite implementation of gtc.Store.
type Store struct {
	path    string
	memory  bool
	log     *slog.Logger
	clock   gtc.Clock
	history gtc.HistoryOptions
	// serveClaim holds the lock of ClaimServe until Close.
	serveClaim *os.File

	wdb *sql.DB // one connection; every write
	rdb *sql.DB // query_only readers; the same pool as wdb for :memory:

	fileInfo os.FileInfo // identity of the file at open, for Ping

	randMu sync.Mutex
	random io.Reader

	stmts statements
	cache stmtCache

	queue chan *writeOp
	// commits and committedWrites count the writer's committed transactions and the
	// writes they carried (Commits).
	commits, committedWrites atomic.Uint64
	// waiting counts the writes queued or waiting for their commit; peak is its largest
	// value since the writer last looked (runWriter's batches wait for that many).
	waiting, peak atomic.Int64
	stop          chan struct{}
	writerDone    chan struct{}
	closed        atomic.Bool
	closeOnce     sync.Once
	closeErr      error

	items       *itemStore
	curation    *curationStore
	tags        *tagStore
	definitions *tagDefinitionStore
	maintenance *maintenance
	agentOps    *agentOpStore
}

var _ gtc.Store = (*Store)(nil)

// Open opens (creating when missing) the database at opts.Path, applies the pending schema
// migrations and starts the writer.
func Open(ctx context.Context, opts Options) (*Store, error) {
	if err := ctx.Err(); err != nil {
		return nil, wrapErr("open", err)
	}
	if opts.Path == "" {
		return nil, fmt.Errorf("sqlite: open: %w: empty path", gtc.ErrInvalidArgument)
	}
	if strings.ContainsAny(opts.Path, "?#") && opts.Path != MemoryPath {
		return nil, fmt.Errorf("sqlite: open: %w: path %q contains '?' or '#'", gtc.ErrInvalidArgument, opts.Path)
	}
	synchronous := strings.ToUpper(opts.Synchronous)
	switch synchronous {
	case "":
		synchronous = DefaultSynchronous
	case "FULL", "NORMAL":
	default:
		return nil, fmt.Errorf("sqlite: open: %w: synchronous must be FULL or NORMAL, got %q", gtc.ErrInvalidArgument, opts.Synchronous)
	}
	busy := opts.BusyTimeout
	if busy <= 0 {
		busy = DefaultBusyTimeout
	}
	readers := opts.ReadConnections
	if readers <= 0 {
		readers = DefaultReadConnections
	}
	random := opts.Random
	if random == nil {
		random = rand.Reader
	}
	clock := opts.Clock
	if clock == nil {
		clock = gtc.SystemClock{}
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}

	s := &Store{
		path:       opts.Path,
		memory:     opts.Path == MemoryPath,
		log:        logger,
		clock:      clock,
		history:    opts.History,
		random:     random,
		queue:      make(chan *writeOp),
		stop:       make(chan struct{}),
		writerDone: make(chan struct{}),
	}
	s.items = &itemStore{s: s, pageBytes: queryAllBytes}
	s.curation = &curationStore{s: s}
	s.tags = &tagStore{s: s}
	s.definitions = &tagDefinitionStore{s: s}
	s.maintenance = &maintenance{s: s}
	s.agentOps = &agentOpStore{s: s}

	if err := s.openPools(ctx, synchronous, busy, readers); err != nil {
		return nil, err
	}
	if err := migrate(ctx, s.wdb, migrationEnv{clock: clock, random: random}, logger); err != nil {
		s.closePools()
		return nil, err
	}
	if err := s.stmts.prepare(ctx, s.wdb, s.rdb); err != nil {
		s.closePools()
		return nil, wrapErr("prepare statements", err)
	}
	go s.runWriter()
	return s, nil
}

// connParams are the pragmas of every connection to a database: what correctness needs
// (the busy timeout, foreign keys), then, for speed: statement journals and sorts stay in
// memory instead of temporary files; each connection caches 8 MiB of pages; and the WAL is
// checkpointed every 10,000 pages (about 40 MiB) instead of 1,000, so hot index pages
// rewritten by many commits are copied back once. No memory map: mapped pages count as the
// server's resident memory, which then grows with the database (a 1 GiB map held 550 MiB at
// 100,000 items for about 1 ms less per list page; see BENCHMARKS.md).
func connParams(busy time.Duration) url.Values {
	params := url.Values{}
	params.Add("_pragma", "busy_timeout("+strconv.FormatInt(busy.Milliseconds(), 10)+")")
	params.Add("_pragma", "foreign_keys(1)")
	params.Add("_pragma", "temp_store(MEMORY)")
	params.Add("_pragma", "mmap_size(0)")
	params.Add("_pragma", "cache_size(-8192)")
	params.Add("_pragma", "wal_autocheckpoint(10000)")
	return params
}

// fileParams adds to connParams what a connection to a database file has: the WAL and the
// durability of each commit.
func fileParams(busy time.Duration, synchronous string) url.Values {
	params := connParams(busy)
	params.Add("_pragma", "journal_mode(WAL)")
	params.Add("_pragma", "synchronous("+synchronous+")")
	return params
}

// WriterDSN is the data source name (driver "sqlite") of the store's writer connection to
// the database file at path: the store's pragmas, synchronous (FULL by default) and BEGIN
// IMMEDIATE transactions. The benchmark of the bare engine opens its copy of a store with
// it, so both sides run with the same pragmas and durability.
func WriterDSN(path, synchronous string) string {
	if synchronous == "" {
		synchronous = "FULL"
	}
	params := fileParams(DefaultBusyTimeout, synchronous)
	params.Set("_txlock", "immediate")
	return path + "?" + params.Encode()
}

// openPools creates the directory and file with private modes and opens both pools.
func (s *Store) openPools(ctx context.Context, synchronous string, busy time.Duration, readers int) error {
	params := connParams(busy)
	if s.memory {
		// One connection is the whole database: it must never be closed or replaced.
		params.Set("_txlock", "immediate")
		db, err := sql.Open("sqlite", MemoryPath+"?"+params.Encode())
		if err != nil {
			return wrapErr("open", err)
		}
		db.SetMaxOpenConns(1)
		db.SetMaxIdleConns(1)
		db.SetConnMaxLifetime(0)
		db.SetConnMaxIdleTime(0)
		if err := db.PingContext(ctx); err != nil {
			_ = db.Close()
			return wrapErr("open", err)
		}
		s.wdb, s.rdb = db, db
		return nil
	}

	dir := filepath.Dir(s.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fileErr("create directory", err)
	}
	// Create the file ourselves so it gets 0600 whatever the umask; SQLite gives the WAL
	// and shared-memory files the mode of the database file. No SQLite connection is open
	// yet, so closing this descriptor cannot drop any of SQLite's POSIX locks.
	f, err := os.OpenFile(s.path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fileErr("create database file", err)
	}
	if err := f.Chmod(0o600); err != nil {
		_ = f.Close()
		return fileErr("chmod database file", err)
	}
	if err := f.Close(); err != nil {
		return fileErr("create database file", err)
	}
	fi, err := os.Stat(s.path)
	if err != nil {
		return fileErr("stat database file", err)
	}
	s.fileInfo = fi

	params = fileParams(busy, synchronous)
	wparams := cloneValues(params)
	wparams.Set("_txlock", "immediate")
	wdb, err := sql.Open("sqlite", s.path+"?"+wparams.Encode())
	if err != nil {
		return wrapErr("open writer", err)
	}
	wdb.SetMaxOpenConns(1)
	wdb.SetMaxIdleConns(1)
	wdb.SetConnMaxLifetime(0)
	wdb.SetConnMaxIdleTime(0)
	// The writer connects first, so the file is in WAL mode before any reader opens it.
	if err := wdb.PingContext(ctx); err != nil {
		_ = wdb.Close()
		return wrapErr("open writer", err)
	}

	rparams := cloneValues(params)
	rparams.Set("_query_only", "1")
	rdb, err := sql.Open("sqlite", s.path+"?"+rparams.Encode())
	if err != nil {
		_ = wdb.Close()
		return wrapErr("open readers", err)
	}
	rdb.SetMaxOpenConns(readers)
	rdb.SetMaxIdleConns(readers)
	rdb.SetConnMaxLifetime(0)
	rdb.SetConnMaxIdleTime(0)
	if err := rdb.PingContext(ctx); err != nil {
		_ = wdb.Close()
		_ = rdb.Close()
		return wrapErr("open readers", err)
	}
	s.wdb, s.rdb = wdb, rdb
	return nil
}

func cloneValues(v url.Values) url.Values {
	out := make(url.Values, len(v))
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}

// Items returns the item store.
func (s *Store) Items() gtc.ItemStore { return s.items }

// Curation returns the curation-instructions store.
func (s *Store) Curation() gtc.CurationStore { return s.curation }

// TagStore returns the global set of manual tags.
func (s *Store) TagStore() gtc.TagStore { return s.tags }

// TagDefinitions returns the store of tag definitions.
func (s *Store) TagDefinitions() gtc.TagDefinitionStore { return s.definitions }

// Backend returns "sqlite".
func (s *Store) Backend() string { return "sqlite" }

// GroupsCommits reports that every write goes through the one writer, which commits the
// writes queued together in one transaction (gtc.GroupCommitter).
func (s *Store) GroupsCommits() bool { return true }

// Ping checks that the database file is still the one opened and answers one read.
func (s *Store) Ping(ctx context.Context) error {
	if s.closed.Load() {
		return errClosed("ping")
	}
	if !s.memory {
		// An open descriptor keeps reading a deleted or replaced file happily, so the
		// read alone would report a store that lost its data as healthy.
		fi, err := os.Stat(s.path)
		if err != nil {
			return fmt.Errorf("sqlite: ping: %w: %w", gtc.ErrUnavailable, err)
		}
		if !os.SameFile(fi, s.fileInfo) {
			return fmt.Errorf("sqlite: ping: %w: database file %s was replaced", gtc.ErrUnavailable, s.path)
		}
	}
	var v string
	if err := s.stmts.ping.QueryRowContext(ctx).Scan(&v); err != nil {
		return wrapErr("ping", err)
	}
	return nil
}

// Close stops the writer (the batch being written is committed; writes not yet taken fail
// with ErrUnavailable), checkpoints the WAL into the database file and closes both pools.
// It is safe to call more than once.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		close(s.stop)
		<-s.writerDone
		s.stmts.close()
		s.closeStmtCache()
		var errs []error
		if s.rdb != s.wdb {
			errs = append(errs, s.rdb.Close())
			if _, err := s.wdb.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
				s.log.Warn("sqlite: checkpoint at close failed", "path", s.path, "err", err)
				errs = append(errs, wrapErr("checkpoint", err))
			}
		}
		errs = append(errs, s.wdb.Close())
		if s.serveClaim != nil {
			_ = s.serveClaim.Close() // releases the lock
		}
		if err := errors.Join(errs...); err != nil {
			s.closeErr = fmt.Errorf("sqlite: close: %w", err)
		}
	})
	return s.closeErr
}

func (s *Store) closePools() {
	if s.rdb != nil && s.rdb != s.wdb {
		_ = s.rdb.Close()
	}
	if s.wdb != nil {
		_ = s.wdb.Close()
	}
}

func (s *Store) newETag() string {
	s.randMu.Lock()
	defer s.randMu.Unlock()
	return gtc.NewETag(s.random)
}

// fileErr wraps an error of the file operations around opening the database: a full disk
// is ErrStorageFull, anything else ErrUnavailable.
func fileErr(op string, err error) error {
	if isStorageFull(err) {
		return fmt.Errorf("sqlite: %s: %w: %w", op, gtc.ErrStorageFull, err)
	}
	return fmt.Errorf("sqlite: %s: %w: %w", op, gtc.ErrUnavailable, err)
}

func errClosed(op string) error {
	return fmt.Errorf("sqlite: %s: %w: store is closed", op, gtc.ErrUnavailable)
}

// wrapErr turns a driver, database/sql or context error into one of the store's sentinel
// errors, keeping the cause. Errors that already carry a sentinel pass through.
func wrapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	if gtc.IsStoreError(err) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("sqlite: %s: %w: %w", op, gtc.ErrUnavailable, err)
	}
	if isStorageFull(err) {
		return fmt.Errorf("sqlite: %s: %w: %w", op, gtc.ErrStorageFull, err)
	}
	var se *sqlitedrv.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_TOOBIG:
			return fmt.Errorf("sqlite: %s: %w: %w", op, gtc.ErrTooLarge, err)
		case sqlite3.SQLITE_CONSTRAINT:
			return fmt.Errorf("sqlite: %s: %w: %w", op, gtc.ErrConflict, err)
		}
	}
	// Busy, locked, I/O, read-only file, closed pool, corrupt file, SQL the store should
	// never have sent: nothing the caller can fix by changing its request.
	return fmt.Errorf("sqlite: %s: %w: %w", op, gtc.ErrUnavailable, err)
}

// isStorageFull reports whether err means there is no room left for the write: SQLITE_FULL
// (the unix VFS reports a write that failed with ENOSPC so, and max_page_count gives it
// too), SQLITE_IOERR_SHMSIZE (the WAL index could not grow), or a system error of a full
// disk or an exhausted quota when the driver passes one through.
func isStorageFull(err error) bool {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return true
	}
	var se *sqlitedrv.Error
	if !errors.As(err, &se) {
		return false
	}
	return se.Code()&0xff == sqlite3.SQLITE_FULL || se.Code() == sqlite3.SQLITE_IOERR_SHMSIZE
}
