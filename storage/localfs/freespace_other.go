//go:build !linux

package localfs

import "errors"

// FreeBytes is not measured on this platform: it returns errors.ErrUnsupported, and the
// free-space check of artifact exports is skipped.
func (s *Store) FreeBytes() (uint64, error) { return 0, errors.ErrUnsupported }
