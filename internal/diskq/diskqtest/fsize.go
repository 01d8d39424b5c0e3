// Package diskqtest helps tests run code against a full disk without privileges: a child
// process with a low file-size limit (RLIMIT_FSIZE), whose writes past it fail with EFBIG
// as writes to a full disk fail with ENOSPC, and whose limit can be raised again to stand
// for space freed.
package diskqtest

import (
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

const childEnv = "DISKQ_FSIZE_CHILD"

// ChildDir returns the directory the child process works in, or "" in the parent. A test
// calls it first: in the parent it then calls RunChild and returns.
func ChildDir() string { return os.Getenv(childEnv) }

// RunChild runs the calling test again in a child process, with ChildDir set to a new
// temporary directory, and fails if the child fails.
func RunChild(t *testing.T) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"="+t.TempDir())
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "child: %s", out)
	require.Contains(t, string(out), "--- PASS: "+t.Name())
}

// LimitFileSize sets the process's soft file-size limit to n bytes (^uint64(0) for none),
// ignoring the SIGXFSZ that a write past it would otherwise kill the process with.
func LimitFileSize(t *testing.T, n uint64) {
	t.Helper()
	signal.Ignore(syscall.SIGXFSZ)
	var lim syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_FSIZE, &lim))
	lim.Cur = min(n, lim.Max)
	require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim))
}
