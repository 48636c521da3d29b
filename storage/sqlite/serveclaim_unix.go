//go:build unix

package sqlite

import (
	"errors"
	"os"
	"syscall"
)

// serveLock leaves f with a shared lock, and reports whether the exclusive one was free
// first: that is, whether no other open file held a lock on it.
func serveLock(f *os.File) (alone bool, err error) {
	fd := int(f.Fd())
	switch err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB); {
	case err == nil:
		alone = true
	case !errors.Is(err, syscall.EWOULDBLOCK):
		return false, err
	}
	// Another server holds the exclusive lock only for the moment between its two calls.
	return alone, syscall.Flock(fd, syscall.LOCK_SH)
}
