package procstat

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testutil"
)

// fakeSystemctl puts a systemctl script first in PATH. It records its arguments and prints
// body, then exits with code.
func fakeSystemctl(t *testing.T, body string, code int) (argsFile string) {
	t.Helper()
	dir := t.TempDir()
	argsFile = filepath.Join(dir, "args")
	script := "#!/bin/sh\necho \"$@\" > " + argsFile + "\ncat <<'EOF'\n" + body + "EOF\n"
	if code != 0 {
		script += "echo 'System has not been booted with systemd as init system (PID 1). Can'\"'\"'t operate.' >&2\n"
		script += "exit " + strconv.Itoa(code) + "\n"
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "systemctl"), []byte(script), 0o755))
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return argsFile
}

func TestSystemdUnitWithoutSystemctl(t *testing.T) {
	// An empty PATH: no systemctl (and no pgrep, so the native finder).
	t.Setenv("PATH", t.TempDir())
	_, err := exec.LookPath("systemctl")
	require.Error(t, err)
	p := New()
	p.SystemdUnit = "nginx.service"
	p.PidFinder = "native"
	require.NoError(t, p.Init())
	acc := &testutil.Accumulator{}
	err = p.Gather(context.Background(), acc)
	require.ErrorContains(t, err, `systemd_unit "nginx.service": systemctl not found in PATH`)
	lt, lf := lookup(t, acc)
	require.Equal(t, map[string]string{"pid_finder": "native", "result": "lookup_error", "systemd_unit": "nginx.service"}, lt)
	require.Equal(t, int64(1), lf["result_code"])
	require.Empty(t, acc.MetricsNamed("procstat"))
}

func TestSystemdUnitFakeSystemctl(t *testing.T) {
	pid := startChild(t)
	tests := []struct {
		name     string
		output   string
		code     int
		children bool
		wantErr  string
		wantPIDs int
	}{
		{name: "main pid", output: "Id=app.service\nMainPID=" + strconv.Itoa(pid) + "\nControlGroup=/system.slice/app.service\n", wantPIDs: 1},
		{name: "unit not running", output: "Id=app.service\nMainPID=0\nControlGroup=\n"},
		{name: "systemd not running", code: 1, wantErr: "System has not been booted with systemd"},
		{name: "garbage pid", output: "MainPID=abc\n", wantErr: `invalid MainPID "abc"`},
		{name: "children from the control group", children: true,
			output: "MainPID=" + strconv.Itoa(pid) + "\nControlGroup=" + strings.TrimPrefix(childCgroup(t, pid), "/sys/fs/cgroup") + "\n", wantPIDs: -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := fakeSystemctl(t, tt.output, tt.code)
			p := New()
			p.SystemdUnit = "app.service"
			p.IncludeSystemdChildren = tt.children
			require.NoError(t, p.Init())
			acc := &testutil.Accumulator{}
			err := p.Gather(context.Background(), acc)
			got, readErr := os.ReadFile(args)
			require.NoError(t, readErr)
			require.Equal(t, "show app.service\n", string(got), "systemctl found through PATH and asked for the unit")
			lt, lf := lookup(t, acc)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				require.Equal(t, "lookup_error", lt["result"])
				return
			}
			require.NoError(t, err)
			require.Equal(t, "success", lt["result"])
			if tt.wantPIDs >= 0 {
				require.Equal(t, int64(tt.wantPIDs), lf["pid_count"])
			}
			if tt.wantPIDs != 0 {
				m := byPID(t, acc, pid)
				if tt.children {
					require.Equal(t, "systemd/system.slice/app.service", testutil.TagsOf(m)["cgroup"], "tagged as Telegraf tags it")
				} else {
					require.Equal(t, "app.service", testutil.TagsOf(m)["systemd_unit"])
				}
			}
		})
	}
}
