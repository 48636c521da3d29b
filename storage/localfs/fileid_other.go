//go:build !unix

package localfs

import "io/fs"

// fileID has no portable source of file identity here; ETags fall back to time and size.
func fileID(fs.FileInfo) (uint64, bool) { return 0, false }
