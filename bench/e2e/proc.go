package e2e

import (
	"github.com/morse-agent/morse/internal/testutil"
)

// The harness reads /proc through internal/testutil's readers, the ones the tests use:
// ProcCPU, StatusKiB and ReadUDPPort.

// statusKiB returns a "kB" line of /proc/PID/status, such as VmHWM, in KiB.
func statusKiB(pid int, key string) (int64, error) {
	v, err := testutil.StatusKiB(pid, key)
	if err != nil {
		return 0, err
	}
	return v[0], nil
}
