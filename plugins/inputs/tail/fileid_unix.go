//go:build unix

package tail

import (
	"os"
	"syscall"
)

// fileID identifies a file independently of its name.
type fileID struct{ dev, ino uint64 }

// idOf returns the file's device and inode numbers.
func idOf(st os.FileInfo) (fileID, bool) {
	s, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{dev: uint64(s.Dev), ino: uint64(s.Ino)}, true //nolint:unconvert // the widths differ by platform
}

// links is the number of names the file has; zero once it was deleted.
func links(st os.FileInfo) uint64 {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return uint64(s.Nlink) //nolint:unconvert // the width differs by platform
	}
	return 1
}
