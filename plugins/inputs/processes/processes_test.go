package processes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

// procFixture writes one /proc/<pid>/stat per entry; the key is the pid.
func procFixture(t *testing.T, stats map[int]string) string {
	dir := t.TempDir()
	for pid, stat := range stats {
		d := filepath.Join(dir, fmt.Sprint(pid))
		require.NoError(t, os.Mkdir(d, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(d, "stat"), []byte(stat), 0o644))
	}
	// Entries that are not processes are ignored.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "stat"), []byte("cpu 1 2 3\n"), 0o644))
	return dir
}

// stat builds a /proc/<pid>/stat line with the given name, state and thread count.
func stat(name string, state byte, threads int) string {
	return fmt.Sprintf("1 (%s) %c 0 1 1 0 -1 4194560 1 0 0 0 1 2 0 0 20 0 %d 0 34 1000 100 18446744073709551615\n", name, state, threads)
}

func gather(t *testing.T, p *Processes) map[string]any {
	t.Helper()
	acc := &testutil.Accumulator{}
	require.NoError(t, p.Gather(context.Background(), acc))
	ms := acc.Metrics()
	require.Len(t, ms, 1)
	require.Equal(t, "processes", ms[0].Name())
	require.Empty(t, ms[0].Tags())
	return testutil.FieldsOf(ms[0])
}

func TestRegisteredWithTelegrafDefaults(t *testing.T) {
	info, ok := morse.DefaultRegistry().Input("processes")
	require.True(t, ok)
	require.Equal(t, Description, info.Description)
	require.True(t, strings.HasPrefix(info.SampleConfig, "# "+Description+"\n[[inputs.processes]]\n"))
	p, ok := info.New().(*Processes)
	require.True(t, ok)
	require.False(t, p.UseSudo)
	require.Contains(t, info.SampleConfig, "# use_sudo = false")
}

func TestLinuxStates(t *testing.T) {
	dir := procFixture(t, map[int]string{
		1: stat("init", 'S', 1), 2: stat("kthreadd", 'S', 1), 3: stat("busy", 'R', 4),
		4: stat("disk", 'D', 1), 5: stat("gone", 'Z', 1), 6: stat("dead", 'X', 1),
		7: stat("stop", 'T', 1), 8: stat("traced", 't', 1), 9: stat("paging", 'W', 1),
		10: stat("kworker/0:0", 'I', 1), 11: stat("park", 'P', 1), 12: stat("park2", 'P', 1),
		13: stat("odd (name) with ) parens", 'R', 2), 14: stat("weird", 'Q', 1),
	})
	p := &Processes{ProcDir: dir, goos: "linux"}
	p.SetLogger(slog.New(slog.DiscardHandler))
	require.Equal(t, map[string]any{
		"blocked": int64(1), "dead": int64(1), "idle": int64(1), "paging": int64(1), "parked": int64(2),
		"running": int64(2), "sleeping": int64(2), "stopped": int64(2), "total": int64(14),
		"total_threads": int64(18), "unknown": int64(0), "zombies": int64(1),
	}, gather(t, p), "parked is counted, and an unknown state counts only in total")
}

func TestLinuxWithoutParkedLeavesItOut(t *testing.T) {
	p := &Processes{ProcDir: procFixture(t, map[int]string{1: stat("init", 'S', 1)}), goos: "linux"}
	f := gather(t, p)
	require.NotContains(t, f, "parked")
	require.Len(t, f, 11)
}

func TestLinuxMalformedStat(t *testing.T) {
	p := &Processes{ProcDir: procFixture(t, map[int]string{1: "1 (x) S\n"}), goos: "linux"}
	require.ErrorContains(t, p.Gather(context.Background(), &testutil.Accumulator{}), "something is terribly wrong")
}

func TestPS(t *testing.T) {
	out := "STAT\nSs\nR+\nD\nU\nL\nZ\nT\nI\nW\n?\nSN\n"
	tests := []struct {
		goos string
		want map[string]any
	}{
		{goos: "freebsd", want: map[string]any{"blocked": int64(3), "idle": int64(1), "running": int64(1),
			"sleeping": int64(2), "stopped": int64(1), "total": int64(11), "unknown": int64(1), "wait": int64(1), "zombies": int64(1)}},
		{goos: "darwin", want: map[string]any{"blocked": int64(3), "idle": int64(1), "running": int64(1),
			"sleeping": int64(2), "stopped": int64(1), "total": int64(11), "unknown": int64(1), "wait": int64(1), "zombies": int64(1)}},
	}
	for _, tt := range tests {
		t.Run(tt.goos, func(t *testing.T) {
			var gotSudo bool
			p := &Processes{goos: tt.goos, UseSudo: true, ps: func(_ context.Context, sudo bool) ([]byte, error) {
				gotSudo = sudo
				return []byte(out), nil
			}}
			require.Equal(t, tt.want, gather(t, p))
			require.True(t, gotSudo)
		})
	}
	p := &Processes{goos: "darwin", ps: func(context.Context, bool) ([]byte, error) { return nil, errors.New("no ps") }}
	require.EqualError(t, p.Gather(context.Background(), &testutil.Accumulator{}), "no ps")
	require.ErrorContains(t, (&Processes{goos: "windows"}).Validate(), "does not support Windows")
}

func TestGoldenRealGather(t *testing.T) {
	const path = "testdata/processes.golden"
	shapes := testutil.LoadGolden(t, path)
	require.Empty(t, shapes.Config)

	// A stopped child and a zombie child (exited, not yet waited for) make those counts real.
	stopped := exec.Command("sleep", "30")
	require.NoError(t, stopped.Start())
	t.Cleanup(func() { _ = stopped.Process.Kill(); _ = stopped.Wait() })
	require.NoError(t, stopped.Process.Signal(syscall.SIGSTOP))
	zombie := exec.Command("true")
	require.NoError(t, zombie.Start())
	t.Cleanup(func() { _ = zombie.Wait() })
	waitState(t, stopped.Process.Pid, 'T')
	waitState(t, zombie.Process.Pid, 'Z')

	ms := testutil.CheckGolden(t, path, func() morse.Input { return New() }, 1)
	require.Len(t, ms, 1)
	require.Equal(t, []string{"processes: field wait: emitted but marked absent-here"},
		shapes.Check([]morse.Metric{ms[0].WithField("wait", morse.Int(0))}))

	f := testutil.FieldsOf(ms[0])
	require.GreaterOrEqual(t, f["stopped"], int64(1))
	require.GreaterOrEqual(t, f["zombies"], int64(1))
	require.GreaterOrEqual(t, f["total_threads"], f["total"])
}

// waitState polls /proc until the process is in the state; the kernel applies SIGSTOP and
// the exit of a child asynchronously.
func waitState(t *testing.T, pid int, state byte) {
	t.Helper()
	require.Eventually(t, func() bool {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return false
		}
		i := strings.LastIndexByte(string(data), ')')
		return i > 0 && len(data) > i+2 && data[i+2] == state
	}, 10*time.Second, 5*time.Millisecond)
}
