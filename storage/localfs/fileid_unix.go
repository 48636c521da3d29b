//go:build unix

package localfs

import (
	"io/fs"
	"syscall"
)

// fileID is the inode of fi, which tells two versions of an object apart when their
// times and sizes agree.
func fileID(fi fs.FileInfo) (uint64, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return uint64(st.Ino), true
}
