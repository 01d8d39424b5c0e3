package testutil

import (
	"fmt"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// MountTmpfs mounts a tmpfs of size bytes on dir, created if need be, with the mount flags
// (0, or syscall.MS_RDONLY for a directory that even root cannot write to), and unmounts it
// when the test ends. It needs root, which the tests run as.
func MountTmpfs(t testing.TB, dir string, size int, flags uintptr) string {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, syscall.Mount("tmpfs", dir, "tmpfs", flags, fmt.Sprintf("size=%d", size)),
		"mount a tmpfs on %s (needs root)", dir)
	t.Cleanup(func() { require.NoError(t, syscall.Unmount(dir, syscall.MNT_DETACH)) })
	return dir
}
