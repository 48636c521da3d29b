package localfs

import "syscall"

// FreeBytes reports the bytes of the root's file system that the server may still write:
// the blocks available to unprivileged users, as df shows them.
func (s *Store) FreeBytes() (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(s.root.Name(), &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}
