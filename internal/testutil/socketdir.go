package testutil

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// SocketDir returns a new directory with a short path, removed when the test ends, for unix
// sockets: a socket's path must fit in 108 bytes, and t.TempDir's can be longer.
func SocketDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "morse")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}
