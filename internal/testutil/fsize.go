package testutil

import (
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// fullDiskEnv names the directory a FullDiskChild works in; it is set only in the child.
const fullDiskEnv = "MORSE_FULL_DISK_CHILD"

// FullDiskChild lets a test run code against a full disk without privileges, in a child
// process whose writes past a low file-size limit (LimitFileSize) fail with EFBIG as writes
// to a full disk fail with ENOSPC, and whose limit can be raised again to stand for space
// freed. In the parent it runs the calling test again in a child process, fails if the
// child fails, and returns ""; the test then returns. In the child it returns the new
// temporary directory the child works in.
func FullDiskChild(t *testing.T) string {
	t.Helper()
	if dir := os.Getenv(fullDiskEnv); dir != "" {
		return dir
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), fullDiskEnv+"="+t.TempDir())
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "child: %s", out)
	require.Contains(t, string(out), "--- PASS: "+t.Name())
	return ""
}

// LimitFileSize sets the process's soft file-size limit to n bytes (^uint64(0) for none),
// ignoring the SIGXFSZ that a write past it would otherwise kill the process with. Only a
// FullDiskChild calls it: the limit holds for the whole process.
func LimitFileSize(t *testing.T, n uint64) {
	t.Helper()
	signal.Ignore(syscall.SIGXFSZ)
	var lim syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_FSIZE, &lim))
	lim.Cur = min(n, lim.Max)
	require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim))
}
