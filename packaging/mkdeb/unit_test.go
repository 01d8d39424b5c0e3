package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// verifyUnit runs `systemd-analyze verify` on a unit in a root of its own and returns what
// it printed. verify resolves the unit's dependencies and executables inside --root: it
// needs ExecStart's binary (the real one, built in TestMain) and /bin/kill to exist, and a
// sysinit.target, which a unit with default dependencies pulls in; an empty unit file would
// count as masked. It reports unparseable settings as "..., ignoring" and still exits 0,
// so any output at all is a failure.
func verifyUnit(t *testing.T, unit string) (string, error) {
	t.Helper()
	root := t.TempDir()
	kill, err := exec.LookPath("kill")
	require.NoError(t, err, "kill(1) is needed in the verify root")
	files := []struct {
		src, dst string
		data     []byte
	}{
		{src: testBinary, dst: "usr/bin/morse"},
		{src: kill, dst: "bin/kill"},
		{dst: "lib/systemd/system/sysinit.target", data: []byte("[Unit]\nDescription=System Initialization\n")},
		{dst: "lib/systemd/system/morse.service", data: []byte(unit)},
	}
	for _, f := range files {
		data := f.data
		mode := os.FileMode(0o644)
		if f.src != "" {
			data, err = os.ReadFile(f.src)
			require.NoError(t, err)
			mode = 0o755
		}
		p := filepath.Join(root, f.dst)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, data, mode))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "systemd-analyze", "verify", "--root="+root, "/lib/systemd/system/morse.service")
	cmd.Env = append(os.Environ(), "SYSTEMD_LOG_COLOR=0", "SYSTEMD_PAGER=")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func readUnit(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "packaging/morse.service"))
	require.NoError(t, err)
	return string(data)
}

func TestUnitFileVerifies(t *testing.T) {
	out, err := verifyUnit(t, readUnit(t))
	require.NoError(t, err, out)
	require.Empty(t, out, "systemd-analyze verify says nothing about a good unit")
}

// TestBrokenUnitIsCaught: the check above would catch these, each of which systemd shrugs
// off with a message and exit status 0, or refuses outright.
func TestBrokenUnitIsCaught(t *testing.T) {
	tests := []struct {
		name, old, new, want string
	}{
		{"misspelt type", "Type=notify\n", "Type=notfy\n", "Failed to parse service type, ignoring: notfy"},
		{"misspelt key", "ProtectSystem=strict\n", "ProtectSytem=strict\n", "Unknown key 'ProtectSytem' in section [Service], ignoring"},
		{"bad timeout", "TimeoutStopSec=30s\n", "TimeoutStopSec=thirty\n", "Failed to parse time value, ignoring: thirty"},
		{"missing binary", "ExecStart=/usr/bin/morse ", "ExecStart=/usr/bin/morsed ", "/usr/bin/morsed"},
		{"bad signal", "WatchdogSignal=SIGTERM\n", "WatchdogSignal=SIGTREM\n", "SIGTREM"},
	}
	unit := readUnit(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Contains(t, unit, tt.old)
			out, _ := verifyUnit(t, strings.Replace(unit, tt.old, tt.new, 1))
			require.Contains(t, out, tt.want)
		})
	}
}

// TestUnitStopTimeoutCoversShutdownTimeout: the stop timeout leaves the default final flush
// its whole deadline plus a margin, and the watchdog period is the one documented.
func TestUnitStopTimeoutCoversShutdownTimeout(t *testing.T) {
	settings := map[string]string{}
	for _, line := range strings.Split(readUnit(t), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			settings[k] = v
		}
	}
	stop, err := time.ParseDuration(settings["TimeoutStopSec"])
	require.NoError(t, err)
	shutdown := defaultShutdownTimeout(t)
	require.GreaterOrEqual(t, stop, shutdown+10*time.Second, "TimeoutStopSec %v against shutdown_timeout %v", stop, shutdown)
	require.Equal(t, "notify", settings["Type"])
	require.Equal(t, "main", settings["NotifyAccess"])
	require.Equal(t, "/bin/kill -HUP $MAINPID", settings["ExecReload"])
	require.Equal(t, "/usr/bin/morse --config /etc/morse/morse.conf --config-directory /etc/morse/morse.d", settings["ExecStart"])
	require.Equal(t, "30s", settings["WatchdogSec"])
}

// defaultShutdownTimeout reads shutdown_timeout from the sample config the binary prints.
func defaultShutdownTimeout(t *testing.T) time.Duration {
	t.Helper()
	out, err := exec.Command(testBinary, "config", "--input-filter", "none", "--output-filter", "none").Output()
	require.NoError(t, err)
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "shutdown_timeout = "); ok {
			d, err := time.ParseDuration(strings.Trim(v, `"`))
			require.NoError(t, err)
			return d
		}
	}
	t.Fatal("no shutdown_timeout in the sample config")
	return 0
}
