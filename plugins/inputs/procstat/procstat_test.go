package procstat

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

// childArg makes the test's child unique among the machine's processes.
const childArg = "3141.5926"

// startChild starts `sleep 3141.5926`, killed when the test ends.
func startChild(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("sleep", childArg)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd.Process.Pid
}

func writePidFile(t *testing.T, pid int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "child.pid")
	require.NoError(t, os.WriteFile(path, []byte(strconv.Itoa(pid)+"\n"), 0o644))
	return path
}

// childCgroup returns a control group directory that holds pid, from /proc/PID/cgroup.
func childCgroup(t *testing.T, pid int) string {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/cgroup", pid))
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		require.Len(t, parts, 3)
		var candidates []string
		if parts[1] == "" {
			candidates = []string{filepath.Join("/sys/fs/cgroup", parts[2]), filepath.Join("/sys/fs/cgroup/unified", parts[2])}
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c != "" {
				candidates = append(candidates, filepath.Join("/sys/fs/cgroup", strings.TrimPrefix(c, "name="), parts[2]))
			}
		}
		for _, dir := range candidates {
			if pids, err := cgroupPIDs(dir); err == nil && contains(pids, pid) {
				return dir
			}
		}
	}
	t.Fatalf("no control group directory lists pid %d", pid)
	return ""
}

func contains(pids []int32, pid int) bool {
	for _, p := range pids {
		if int(p) == pid {
			return true
		}
	}
	return false
}

func gather(t *testing.T, p *Procstat) *testutil.Accumulator {
	t.Helper()
	require.NoError(t, p.Init())
	acc := &testutil.Accumulator{}
	require.NoError(t, p.Gather(context.Background(), acc))
	require.Empty(t, acc.Errors())
	return acc
}

// byPID returns the procstat metric of pid.
func byPID(t *testing.T, acc *testutil.Accumulator, pid int) morse.Metric {
	t.Helper()
	for _, m := range acc.MetricsNamed("procstat") {
		if v, ok := m.Field("pid"); ok && v.Int() == int64(pid) {
			return m
		}
		if v, ok := m.Tag("pid"); ok && v == strconv.Itoa(pid) {
			return m
		}
	}
	t.Fatalf("no procstat metric for pid %d among %d", pid, len(acc.MetricsNamed("procstat")))
	return morse.Metric{}
}

func lookup(t *testing.T, acc *testutil.Accumulator) (map[string]string, map[string]any) {
	t.Helper()
	ms := acc.MetricsNamed("procstat_lookup")
	require.Len(t, ms, 1)
	return testutil.TagsOf(ms[0]), testutil.FieldsOf(ms[0])
}

func TestRegisteredWithTelegrafDefaults(t *testing.T) {
	info, ok := morse.DefaultRegistry().Input("procstat")
	require.True(t, ok)
	require.Equal(t, Description, info.Description)
	require.True(t, strings.HasPrefix(info.SampleConfig, "# "+Description+"\n[[inputs.procstat]]\n"))
	p, ok := info.New().(*Procstat)
	require.True(t, ok)
	require.Equal(t, "pgrep", p.PidFinder)
	require.Equal(t, []string{"cpu", "memory", "mmap"}, p.Properties, "Telegraf's default leaves limits out")

	option := regexp.MustCompile(`(?m)^\s*# (\w+ = .*)$`)
	body := option.ReplaceAllString(info.SampleConfig[strings.Index(info.SampleConfig, "]]\n")+3:], "$1")
	fresh := New()
	md, err := toml.Decode(body, fresh)
	require.NoError(t, err)
	require.Empty(t, md.Undecoded())
	require.NoError(t, fresh.Validate())
	require.Equal(t, p.Properties, fresh.Properties)
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(p *Procstat)
		want   string
	}{
		{name: "tag_with", change: func(p *Procstat) { p.TagWith = []string{"pid", "source"} }, want: `tag_with: invalid 'tag_with' setting "source"`},
		{name: "socket_protocols", change: func(p *Procstat) { p.SocketProtocols = []string{"sctp"} }, want: `socket_protocols: invalid 'socket_protocol' setting "sctp"`},
		{name: "filter sections", change: func(p *Procstat) { p.Filter = []map[string]any{{"name": "shell"}} },
			want: "filter: [[inputs.procstat.filter]] sections are not supported by morse"},
		{name: "properties", change: func(p *Procstat) { p.Properties = []string{"disk"} }, want: `properties: invalid 'properties' setting "disk"`},
		{name: "pid_finder", change: func(p *Procstat) { p.PidFinder = "ps" }, want: `pid_finder: unknown pid_finder "ps"`},
		{name: "mode", change: func(p *Procstat) { p.Mode = "linux" }, want: `mode: unknown mode "linux"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := New()
			p.PidFile = "/run/x.pid"
			require.NoError(t, p.Validate())
			tt.change(p)
			var fe *morse.FieldError
			require.ErrorAs(t, p.Validate(), &fe)
			require.ErrorContains(t, p.Validate(), tt.want)
		})
	}
}

func TestAcceptedOptionsWarnOnceAndChangeNothing(t *testing.T) {
	pid := startChild(t)
	p := New()
	p.PidFile = writePidFile(t, pid)
	p.SocketProtocols = []string{"tcp4"}
	p.Properties = append(p.Properties, "sockets")
	p.TagWith = []string{"src"}
	var logs testutil.Logs
	p.SetLogger(logs.Logger())
	require.NoError(t, p.Validate())
	require.NoError(t, p.Init())
	require.Equal(t, []string{
		"socket_protocols has no effect in morse: the sockets property (procstat_socket) is not implemented",
		`properties: "sockets" has no effect in morse: procstat_socket is not implemented`,
		"tag_with: value has no effect in morse: it names socket or filter data that morse does not collect value=src",
	}, logs.Warnings())
	acc := &testutil.Accumulator{}
	require.NoError(t, p.Gather(context.Background(), acc))
	require.NoError(t, p.Gather(context.Background(), acc))
	require.Empty(t, acc.Errors())
	require.Len(t, logs.Warnings(), 3, "once, at start")
	m := byPID(t, acc, pid)
	_, tagged := m.Tag("src")
	require.False(t, tagged)
	require.Empty(t, acc.MetricsNamed("procstat_socket"))
}

func TestWindowsSelectorFindsNothing(t *testing.T) {
	tests := []struct {
		name   string
		change func(p *Procstat)
		warn   string
		tag    [2]string
	}{
		{"win_service", func(p *Procstat) { p.WinService = "Spooler" }, "win_service has no effect in morse", [2]string{"win_service", "Spooler"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := New()
			p.PidFile = writePidFile(t, startChild(t))
			tt.change(p)
			var logs testutil.Logs
			p.SetLogger(logs.Logger())
			require.NoError(t, p.Init())
			require.Len(t, logs.Warnings(), 1)
			require.Contains(t, logs.Warnings()[0], tt.warn)
			acc := gather(t, p)
			require.Empty(t, acc.MetricsNamed("procstat"), "it takes precedence over pid_file, as in Telegraf, and finds nothing")
			lookup := acc.MetricsNamed("procstat_lookup")
			require.Len(t, lookup, 1)
			v, _ := lookup[0].Tag(tt.tag[0])
			require.Equal(t, tt.tag[1], v)
		})
	}
}

func TestSelectors(t *testing.T) {
	pid := startChild(t)
	cgroup := childCgroup(t, pid)
	tests := []struct {
		name    string
		config  func(p *Procstat)
		tags    map[string]string
		finders []string
	}{
		{name: "pid_file", config: func(p *Procstat) { p.PidFile = writePidFile(t, pid) }},
		{name: "exe", config: func(p *Procstat) { p.Exe = "sleep" }, tags: map[string]string{"exe": "sleep"}},
		{name: "pattern", config: func(p *Procstat) { p.Pattern = "sleep " + childArg }, tags: map[string]string{"pattern": "sleep " + childArg}},
		{name: "user", config: func(p *Procstat) { p.User = "root" }, tags: map[string]string{"user": "root"}},
		{name: "cgroup path", config: func(p *Procstat) { p.CGroup = cgroup }, tags: map[string]string{"cgroup": cgroup, "cgroup_full": cgroup}},
		{name: "cgroup name", config: func(p *Procstat) {
			p.CGroup = strings.TrimPrefix(cgroup, "/sys/fs/cgroup/")
		}, tags: map[string]string{"cgroup": strings.TrimPrefix(cgroup, "/sys/fs/cgroup/"), "cgroup_full": cgroup}},
	}
	for _, tt := range tests {
		for _, finder := range []string{"pgrep", "native"} {
			t.Run(tt.name+"/"+finder, func(t *testing.T) {
				p := New()
				p.PidFinder = finder
				tt.config(p)
				acc := gather(t, p)
				m := byPID(t, acc, pid)
				tags := testutil.TagsOf(m)
				require.Equal(t, "sleep", tags["process_name"])
				for k, v := range tt.tags {
					require.Equal(t, v, tags[k], k)
				}
				if tt.name == "pid_file" {
					require.Equal(t, p.PidFile, tags["pidfile"])
				}
				lt, lf := lookup(t, acc)
				require.Equal(t, "success", lt["result"])
				require.Equal(t, finder, lt["pid_finder"])
				require.Equal(t, int64(0), lf["result_code"])
				require.GreaterOrEqual(t, lf["running"], int64(1))
				require.Equal(t, int64(len(acc.MetricsNamed("procstat"))), lf["running"])
			})
		}
	}
}

func TestNoSelectorWatchesTheAgentItself(t *testing.T) {
	p := New()
	require.NoError(t, p.Validate(), "a bare [[inputs.procstat]] is valid")
	acc := gather(t, p)
	byPID(t, acc, os.Getpid())
	_, lf := lookup(t, acc)
	require.Equal(t, int64(1), lf["running"])
}

func TestLookupFailures(t *testing.T) {
	dead := exec.Command("true")
	require.NoError(t, dead.Run())
	p := New()
	p.PidFile = writePidFile(t, dead.Process.Pid)
	acc := gather(t, p)
	require.Empty(t, acc.MetricsNamed("procstat"), "a stale pid file finds no running process")
	_, lf := lookup(t, acc)
	require.Equal(t, map[string]any{"pid_count": int64(1), "running": int64(0), "result_code": int64(0)}, lf)

	p = New()
	p.PidFile = filepath.Join(t.TempDir(), "missing.pid")
	require.NoError(t, p.Init())
	acc = &testutil.Accumulator{}
	require.ErrorContains(t, p.Gather(context.Background(), acc), "failed to read pidfile")
	lt, lf := lookup(t, acc)
	require.Equal(t, map[string]string{"pid_finder": "pgrep", "pidfile": p.PidFile, "result": "lookup_error"}, lt)
	require.Equal(t, map[string]any{"pid_count": int64(0), "running": int64(0), "result_code": int64(1)}, lf)

	p = New()
	p.Exe = "morse-no-such-process-name"
	acc = gather(t, p)
	_, lf = lookup(t, acc)
	require.Equal(t, int64(0), lf["pid_count"], "pgrep's exit status 1 means none found, not an error")
}

func TestTagWithAndPrefix(t *testing.T) {
	pid := startChild(t)
	p := New()
	p.PidFile = writePidFile(t, pid)
	p.TagWith = []string{"cmdline", "ppid", "status", "user"}
	p.PidTag = true
	p.Prefix = "app"
	p.ProcessName = "renamed"
	m := byPID(t, gather(t, p), pid)
	tags := testutil.TagsOf(m)
	require.Equal(t, "sleep "+childArg, tags["cmdline"])
	require.Equal(t, strconv.Itoa(pid), tags["pid"])
	require.Equal(t, strconv.Itoa(os.Getpid()), tags["ppid"])
	require.Equal(t, "root", tags["user"])
	require.Contains(t, []string{"sleep", "running"}, tags["status"])
	require.Equal(t, "renamed", tags["process_name"])
	f := testutil.FieldsOf(m)
	for _, k := range []string{"pid", "app_pid", "app_cmdline", "app_ppid", "app_status", "app_user"} {
		require.NotContains(t, f, k, "%s is a tag", k)
	}
	require.Contains(t, f, "app_num_threads")
	require.Contains(t, f, "app_memory_rss")
}

func TestGoldenRealGather(t *testing.T) {
	shapes := testutil.LoadGolden(t, "testdata/procstat.golden")
	p := New()
	md, err := toml.Decode(shapes.Config, p)
	require.NoError(t, err)
	require.Empty(t, md.Undecoded(), "the golden config uses Telegraf's option names")
	pid := startChild(t)
	p.PidFile = writePidFile(t, pid)

	first := gather(t, p)
	require.Empty(t, shapes.Check(first.Metrics()))
	require.NotContains(t, testutil.FieldsOf(byPID(t, first, pid)), "cpu_usage", "one sample is no usage")
	second := &testutil.Accumulator{}
	require.NoError(t, p.Gather(context.Background(), second))
	require.Empty(t, shapes.Check(second.Metrics()))
	m := byPID(t, second, pid)
	f := testutil.FieldsOf(m)
	require.Contains(t, f, "cpu_usage")
	require.Equal(t, "sleep "+childArg, f["cmdline"])
	require.Equal(t, int64(os.Getpid()), f["ppid"])
	require.Positive(t, f["memory_rss"])

	require.Equal(t, []string{"measurement procstat_socket: emitted but marked absent-here",
		"procstat_socket: tag protocol: emitted but marked absent-here", "procstat_socket: field state: emitted but marked absent-here"},
		shapes.Check(append(second.Metrics(), morse.NewMetric("procstat_socket", []morse.Tag{{Key: "protocol", Value: "tcp4"}}, []morse.Field{{Key: "state", Value: morse.String("x")}}, m.Time()))))
	require.Equal(t, []string{"procstat: field memory_rss: type integer, golden says unsigned"},
		shapes.Check([]morse.Metric{m.WithField("memory_rss", morse.Int(1)), second.MetricsNamed("procstat_lookup")[0]}))

	// Without the limits property num_fds is gopsutil's int32, as in Telegraf.
	p = New()
	p.PidFile = writePidFile(t, pid)
	require.Equal(t, morse.TypeInt, fieldType(t, byPID(t, gather(t, p), pid), "num_fds"))
	require.Equal(t, morse.TypeUint, fieldType(t, m, "num_fds"), "the limits property sets it to rlim.Used")
}

func fieldType(t *testing.T, m morse.Metric, key string) morse.ValueType {
	t.Helper()
	v, ok := m.Field(key)
	require.True(t, ok, key)
	return v.Type()
}
