package main

import (
	"os/exec"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// startSleeper starts a child process that lives until the test ends and returns its pid.
func startSleeper(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd.Process.Pid
}

// TestTestPrintsProcstatCPUUsage: as `telegraf --test`, procstat is gathered twice and the
// second gather printed, so cpu_usage is there (0 for an idle process) although one sample
// has none.
func TestTestPrintsProcstatCPUUsage(t *testing.T) {
	dir := t.TempDir()
	pidFile := writeFile(t, dir, "sleep.pid", strconv.Itoa(startSleeper(t))+"\n")
	conf := writeFile(t, dir, "procstat.conf", "[agent]\n  omit_hostname = true\n"+
		"[[inputs.procstat]]\n  pid_file = "+strconv.Quote(pidFile)+"\n[[outputs.file]]\n  files = [\"stdout\"]\n")
	out, stderr, code := runMorse(t, "--config", conf, "--test")
	require.Zero(t, code, stderr)
	ms := byName(parseTestOutput(t, out))["procstat"]
	require.Len(t, ms, 1, out)
	usage, ok := ms[0].Field("cpu_usage")
	require.True(t, ok, "cpu_usage on the printed gather:\n%s", out)
	require.Less(t, usage.Float(), 5.0, "sleep uses no CPU")
}
