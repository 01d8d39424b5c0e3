//go:build !unix

package tail

import "os"

// fileID identifies a file independently of its name; without inode numbers there is
// none, and a rotated file that matches a pattern again is read again from its start.
type fileID struct{ dev, ino uint64 }

func idOf(os.FileInfo) (fileID, bool) { return fileID{}, false }

func links(os.FileInfo) uint64 { return 1 }
