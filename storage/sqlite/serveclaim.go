package sqlite

import (
	"fmt"
	"os"
)

// ClaimServe registers this process as a server of the database and reports whether it is
// the only one. A SQLite store is served by one process: its single writer is that
// process's, and its file lives on that host's disk. A second server on the same file
// still works (every piece of shared state is in the database, and writes are
// serialized by SQLite's lock), but two processes contend for one writer; the caller says
// so.
//
// Every server holds a shared advisory lock on a file beside the database (its path with
// "-serve" appended) until Close or its exit, however abrupt: the operating system releases
// it, so a killed server never leaves it behind. Before taking it, a server tries for the
// exclusive lock, which it gets only when no other server holds the file. The locks are
// those of the host: servers on other hosts sharing the file through a network file system
// are not seen. An in-memory database is private to its process: always alone.
func (s *Store) ClaimServe() (alone bool, lockFile string, err error) {
	if s.memory {
		return true, "", nil
	}
	path := s.path + "-serve"
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return false, path, fmt.Errorf("sqlite: register as a server of the database: %w", err)
	}
	alone, err = serveLock(f)
	if err != nil {
		_ = f.Close()
		return false, path, fmt.Errorf("sqlite: register as a server of the database: %w", err)
	}
	s.serveClaim = f
	return alone, path, nil
}
