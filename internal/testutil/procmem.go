package testutil

import (
	"bufio"
	"bytes"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
)

// ProcStatus reads a size from /proc/self/status, in bytes: "VmRSS", the resident size, or
// "VmHWM", its peak since the process started or since ResetPeakRSS.
func ProcStatus(tb testing.TB, key string) int64 {
	tb.Helper()
	return ProcStatusOf(tb, "self", key)
}

// ProcStatusOf is ProcStatus of another process, such as an agent a test started: pid is
// its process id, or "self".
func ProcStatusOf(tb testing.TB, pid, key string) int64 {
	tb.Helper()
	data, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		tb.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), key+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				tb.Fatal(err)
			}
			return kb << 10
		}
	}
	tb.Fatalf("no %s in /proc/%s/status", key, pid)
	return 0
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
