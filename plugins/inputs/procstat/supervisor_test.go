package procstat

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testutil"
)

// startSupervisord runs a real supervisord (Debian's supervisor package, installed by
// scripts/test-deps-supervisor.sh) with two programs: web, a shell with two sleeping
// children, and idle, never started. The test's working directory holds the config, where
// supervisorctl looks for it, as Telegraf's plugin relies on.
func startSupervisord(t *testing.T) {
	t.Helper()
	_, err := exec.LookPath("supervisord")
	require.NoError(t, err, "supervisord is needed: run scripts/test-deps-supervisor.sh")
	dir := testutil.SocketDir(t)
	conf := fmt.Sprintf(`[unix_http_server]
file=%[1]s/s.sock
[supervisord]
logfile=%[1]s/supervisord.log
pidfile=%[1]s/supervisord.pid
[rpcinterface:supervisor]
supervisor.rpcinterface_factory = supervisor.rpcinterface:make_main_rpcinterface
[supervisorctl]
serverurl=unix://%[1]s/s.sock
[program:web]
command=/bin/sh -c "sleep 300 & sleep 301 & wait"
startsecs=0
stopasgroup=true
killasgroup=true
stopsignal=KILL
stopwaitsecs=1
[program:idle]
command=/bin/sleep 300
autostart=false
`, dir)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "supervisord.conf"), []byte(conf), 0o600))
	cmd := exec.Command("supervisord", "-n", "-c", filepath.Join(dir, "supervisord.conf"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		_ = cmd.Wait()
	})
	t.Chdir(dir)
	require.Eventually(t, func() bool {
		out, _ := exec.Command("supervisorctl", "status", "web").Output()
		return strings.Contains(string(out), "RUNNING")
	}, 20*time.Second, 50*time.Millisecond, "supervisord starts web")
	require.Eventually(t, func() bool { return len(webChildren(t)) == 2 }, 20*time.Second, 20*time.Millisecond,
		"web's shell starts its two children")
}

// webChildren are the PIDs of the children of web's main process, as pgrep sees them.
func webChildren(t *testing.T) []int32 {
	out, _ := exec.Command("supervisorctl", "status", "web").Output()
	f := strings.Fields(string(out))
	if len(f) < 4 {
		return nil
	}
	main, err := strconv.Atoi(strings.TrimSuffix(f[3], ","))
	require.NoError(t, err)
	kids, err := pgrepFinder{path: "pgrep"}.children(context.Background(), int32(main))
	require.NoError(t, err)
	return kids
}

// TestSupervisorUnits runs supervisor_units against a real supervisord, with both PID
// finders: the running program's children are reported with its status tags, and the
// stopped program adds its status to the lookup, as in Telegraf.
func TestSupervisorUnits(t *testing.T) {
	shapes := testutil.LoadGolden(t, "testdata/procstat.golden") // before the working directory changes
	startSupervisord(t)
	want := webChildren(t)
	slices.Sort(want)
	for _, finder := range []string{"pgrep", "native"} {
		t.Run(finder, func(t *testing.T) {
			p := New()
			p.PidFinder = finder
			p.SupervisorUnits = []string{"web", "idle"}
			p.Properties = []string{"cpu", "limits", "memory", "mmap"} // the golden list's
			var logs testutil.Logs
			p.SetLogger(logs.Logger())
			acc := gather(t, p)
			require.Empty(t, logs.Warnings(), "supervisor_units is implemented")
			require.Empty(t, shapes.Check(acc.Metrics()))
			var got []int32
			for _, m := range acc.MetricsNamed("procstat") {
				v, _ := m.Field("pid")
				got = append(got, int32(v.Int()))
				tags := testutil.TagsOf(m)
				require.Equal(t, "web", tags["supervisor_unit"])
				require.Equal(t, "RUNNING", tags["status"])
				require.Regexp(t, `^\d+:\d\d:\d\d$`, tags["uptimes"])
				require.Contains(t, tags, "parent_pid", "Telegraf sets parent_pid (to the pattern option)")
				require.NotContains(t, tags, "pid")
			}
			slices.Sort(got)
			require.Equal(t, want, got, "the children of web's main process")
			lookup := acc.MetricsNamed("procstat_lookup")
			require.Len(t, lookup, 1)
			require.Equal(t, "web;idle", testutil.TagsOf(lookup[0])["supervisor_unit"])
			lf := testutil.FieldsOf(lookup[0])
			require.Equal(t, int64(2), lf["pid_count"])
			require.Equal(t, int64(2), lf["running"])
		})
	}
}

func TestParseSupervisorStatus(t *testing.T) {
	out := "web                              RUNNING   pid 11083, uptime 0:00:02\n" +
		"idle                             STOPPED   Not started\n" +
		"crash                            FATAL     Exited too quickly (process log may have details)\n" +
		"nothere: ERROR (no such process)\n"
	require.Equal(t, map[string]map[string]string{
		"web":      {"supervisor_unit": "web", "status": "RUNNING", "pid": "11083", "uptimes": "0:00:02"},
		"idle":     {"supervisor_unit": "idle", "status": "STOPPED"},
		"crash":    {"supervisor_unit": "crash", "status": "FATAL", "error": "Exited too quickly (process log may have details)"},
		"nothere:": {"supervisor_unit": "nothere:", "status": "ERROR"},
	}, parseSupervisorStatus(out))
}
