package testserver

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPHPFPMWorkersDieWithTheMaster: as root (the tests' CI), the pools' workers live in
// the master's own PID namespace, so a master killed outright, as the kernel does when the
// test process dies first, takes its workers with it: none is left holding a pool's port.
func TestPHPFPMWorkersDieWithTheMaster(t *testing.T) {
	require.Equal(t, 0, os.Geteuid(), "the tests run as root")
	f, err := startPHPFPM()
	require.NoError(t, err)
	t.Cleanup(f.stop)
	workers := childrenOf(t, f.cmd.Process.Pid)
	require.Len(t, workers, 3, "two workers of www, one of sock")
	require.NoError(t, f.cmd.Process.Kill())
	<-f.done
	require.Eventually(t, func() bool {
		for _, pid := range workers {
			if alive(pid) {
				return false
			}
		}
		return true
	}, 10*time.Second, 10*time.Millisecond, "workers %v outlived their master", workers)
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(t *testing.T, pid int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var out []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status")); err == nil &&
			strings.Contains(string(st), "\nPPid:\t"+strconv.Itoa(pid)+"\n") {
			out = append(out, child)
		}
	}
	return out
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	st, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	return err == nil && !strings.Contains(string(st), "\nState:\tZ")
}
