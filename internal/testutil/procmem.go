package testutil

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
)

// StatusKiB reads the "kB" lines named by keys, such as "VmRSS", "VmHWM", "RssAnon" or
// "RssFile", from /proc/PID/status (pid 0: this process's own), in KiB, in the order of
// keys. It is the one reader of that file for the tests and the benchmark harnesses in
// bench/, which watch the agent from outside; a key the file lacks is an error.
func StatusKiB(pid int, keys ...string) ([]int64, error) {
	path := "/proc/self/status"
	if pid != 0 {
		path = fmt.Sprintf("/proc/%d/status", pid)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseStatusKiB(data, keys)
}

// parseStatusKiB reads the values of keys from the text of a /proc/PID/status file.
func parseStatusKiB(data []byte, keys []string) ([]int64, error) {
	out := make([]int64, len(keys))
	found := make([]bool, len(keys))
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		for i, key := range keys {
			if k != key {
				continue
			}
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("status: %s: %w", key, err)
			}
			out[i], found[i] = n, true
		}
	}
	for i, key := range keys {
		if !found[i] {
			return nil, fmt.Errorf("status: no %s", key)
		}
	}
	return out, sc.Err()
}

// ProcStatus reads a size from /proc/self/status, in bytes: "VmRSS", the resident size, or
// "VmHWM", its peak since the process started or since ResetPeakRSS.
func ProcStatus(tb testing.TB, key string) int64 {
	tb.Helper()
	kib, err := StatusKiB(0, key)
	if err != nil {
		tb.Fatal(err)
	}
	return kib[0] << 10
}

// IdleRSS collects garbage, gives freed memory back to the system, resets the peak that
// VmHWM reports (Linux: clear_refs 5) and returns the resident size, from which PeakGrowth
// measures.
func IdleRSS(tb testing.TB) int64 {
	tb.Helper()
	runtime.GC()
	debug.FreeOSMemory()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		tb.Fatal(err)
	}
	return ProcStatus(tb, "VmRSS")
}

// PeakGrowth is how far the resident size rose above idle, IdleRSS's value, since IdleRSS.
func PeakGrowth(tb testing.TB, idle int64) int64 {
	tb.Helper()
	return ProcStatus(tb, "VmHWM") - idle
}
