package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

// morseBin is the binary built once for every end-to-end test, as `make build` builds it.
var morseBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "morse-e2e")
	if err != nil {
		panic(err)
	}
	morseBin = filepath.Join(dir, "morse")
	if err := testutil.BuildMorse(context.Background(), morseBin, "-ldflags", "-X main.version=e2e-test"); err != nil {
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// runMorse runs the binary to completion and returns its output and exit status.
func runMorse(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, morseBin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), errb.String(), ee.ExitCode()
	}
	require.NoError(t, err)
	return out.String(), errb.String(), 0
}

// parseTestOutput parses what --test prints: every line is "> " and then line protocol, as
// in Telegraf.
func parseTestOutput(t *testing.T, out string) []morse.Metric {
	t.Helper()
	var lp strings.Builder
	for line := range strings.Lines(out) {
		rest, ok := strings.CutPrefix(line, "> ")
		require.True(t, ok, "a --test line starts with \"> \": %q", line)
		lp.WriteString(rest)
	}
	return testutil.Parse(t, lp.String(), false)
}

func byName(ms []morse.Metric) map[string][]morse.Metric {
	out := map[string][]morse.Metric{}
	for _, m := range ms {
		out[m.Name()] = append(out[m.Name()], m)
	}
	return out
}

// requireRealCPUAndMem checks that the metrics hold a real cpu-total usage and real memory.
func requireRealCPUAndMem(t *testing.T, ms []morse.Metric) {
	t.Helper()
	got := byName(ms)
	require.NotEmpty(t, got["cpu"], "cpu lines")
	require.NotEmpty(t, got["mem"], "mem lines")
	var total *morse.Metric
	for i, m := range got["cpu"] {
		if v, _ := m.Tag("cpu"); v == "cpu-total" {
			total = &got["cpu"][i]
		}
	}
	require.NotNil(t, total, "a cpu-total line")
	idle, ok := total.Field("usage_idle")
	require.True(t, ok)
	require.InDelta(t, 50, idle.Float(), 50.0001, "usage_idle is a percentage")
	memTotal, ok := got["mem"][0].Field("total")
	require.True(t, ok)
	require.Greater(t, memTotal.Int(), int64(1<<20), "this machine has more than 1 MiB of memory")
	_, ok = got["mem"][0].Tag("host")
	require.True(t, ok, "the host tag is added")
}

func TestVersion(t *testing.T) {
	out, _, code := runMorse(t, "version")
	require.Zero(t, code)
	require.Equal(t, "morse e2e-test\n", out, "the version comes from -ldflags")
}

func TestTestModePrintsRealCPUAndMem(t *testing.T) {
	out, stderr, code := runMorse(t, "--test")
	require.Zero(t, code, stderr)
	requireRealCPUAndMem(t, parseTestOutput(t, out))
}

func TestOnceWritesRealCPUAndMemAndExitsZero(t *testing.T) {
	dir := t.TempDir()
	outFile := filepath.Join(dir, "metrics.lp")
	conf := writeFile(t, dir, "once.conf", `
[agent]
  interval = "10s"
[[inputs.cpu]]
[[inputs.mem]]
[[outputs.file]]
  files = ["`+outFile+`"]
`)
	_, stderr, code := runMorse(t, "--once", "--config", conf)
	require.Zero(t, code, stderr)
	require.Contains(t, stderr, "outputs.file: 0 metrics left unsent")
	data, err := os.ReadFile(outFile)
	require.NoError(t, err)
	requireRealCPUAndMem(t, testutil.Parse(t, string(data), false))
}

// writeUnsentConfig writes a config whose only output cannot write: every flush fails with a
// warning and --once ends with its metrics unsent.
func writeUnsentConfig(t *testing.T, dir string) string {
	return writeFile(t, dir, "unsent.conf", `
[agent]
  shutdown_timeout = "1s"
[[inputs.mem]]
[[outputs.file]]
  files = ["`+filepath.Join(dir, "no-such-dir", "x.lp")+`"]
`)
}

func TestOnceExitsNonZeroWhenMetricsAreLeftUnsent(t *testing.T) {
	conf := writeUnsentConfig(t, t.TempDir())
	_, stderr, code := runMorse(t, "--once", "--config", conf)
	require.Equal(t, exitFailed, code, stderr)
	require.Contains(t, stderr, "outputs.file: 1 metrics left unsent")
}

// listenPort matches the port of a listener's address in a sample config: service_address,
// prometheus_client's listen, syslog's server.
var listenPort = regexp.MustCompile(`(?m)^(\s*(?:service_address|listen|server)\s*=\s*"[^"]*:)\d+"`)

// peerLine matches a line of a sample, not a comment, that names a server on this machine.
var peerLine = regexp.MustCompile(`(?m)^\s*[^#\s].*(?:localhost|127\.0\.0\.1|unix://|\.sock\b)`)

// listenLine matches a listener's own address in a sample.
var listenLine = regexp.MustCompile(`^\s*(?:service_address|listen|server)\s*=`)

// namesAPeer reports whether a plugin's sample connects to a server: a line other than a
// listener's address names one on this machine.
func namesAPeer(sample string) bool {
	for _, line := range peerLine.FindAllString(sample, -1) {
		if !listenLine.MatchString(line) {
			return true
		}
	}
	return false
}

// gatherError matches the log line of a failed gather and names the input.
var gatherError = regexp.MustCompile(`E! \[inputs\.([a-z_0-9]+)\] gather error`)

func TestSampleConfigRunsUnchanged(t *testing.T) {
	// Every plugin's sample, enabled: what the filters name is printed uncommented. The
	// inputs whose samples name a server to connect to (localhost:8086, a broker, a DSN) are
	// left to TestTelegrafSampleConfigsRunUnderTest, which points them at loopback ports of
	// the test's own: here nothing may dial a fixed port.
	reg := morse.DefaultRegistry()
	var inputs []string
	for _, name := range reg.InputNames() {
		info, _ := reg.Input(name)
		if !namesAPeer(info.SampleConfig) {
			inputs = append(inputs, name)
		}
	}
	require.Contains(t, inputs, "cpu")
	require.Contains(t, inputs, "socket_listener", "a listener binds; it names no peer")
	full, _, code := runMorse(t, "config", "--input-filter", strings.Join(inputs, ":"),
		"--output-filter", strings.Join(reg.OutputNames(), ":"))
	require.Zero(t, code)
	require.Contains(t, full, "[[outputs.influxdb]]")
	require.Contains(t, full, "[[inputs.socket_listener]]")
	dir := t.TempDir()
	// The only change: listeners bind a port the system picks, never a fixed one, so the
	// test cannot collide with anything else on this machine.
	full = listenPort.ReplaceAllString(full, `${1}0"`)
	// snmp_trap's sample leaves its address at the default, udp://:162.
	full = strings.Replace(full, "[[inputs.snmp_trap]]\n", "[[inputs.snmp_trap]]\n  service_address = \"udp://127.0.0.1:0\"\n", 1)
	conf := writeFile(t, dir, "full.conf", full)
	out, stderr, code := runMorse(t, "--config", conf, "--test")
	// inputs.file's sample reads a file that is not here, so --test exits 1 after printing
	// the rest. sensors and systemd_units fail only where the machine has no lm-sensors or
	// no system bus; no other input may fail.
	require.Equal(t, exitFailed, code, stderr)
	require.Contains(t, stderr, `E! [inputs.file] gather error error="could not find file(s): /tmp/metrics.out"`)
	failed := gatherError.FindAllStringSubmatch(stderr, -1)
	for _, m := range failed {
		require.Contains(t, []string{"file", "sensors", "systemd_units"}, m[1], stderr)
	}
	require.Contains(t, stderr, fmt.Sprintf("morse: input plugins recorded %d errors\n", len(failed)))
	require.NotEmpty(t, parseTestOutput(t, out))

	// A narrowed sample runs with no change at all.
	narrow, _, code := runMorse(t, "config", "--input-filter", "cpu:mem", "--output-filter", "file")
	require.Zero(t, code)
	require.NotContains(t, narrow, "[[inputs.internal]]")
	require.Contains(t, narrow, "[[inputs.cpu]]")
	conf = writeFile(t, dir, "narrow.conf", narrow)
	out, stderr, code = runMorse(t, "--config", conf, "--once")
	require.Zero(t, code, stderr)
	requireRealCPUAndMem(t, testutil.Parse(t, out, false))
}

func TestBadConfigExitsNonZeroNamingFileAndLine(t *testing.T) {
	dir := t.TempDir()
	conf := writeFile(t, dir, "bad.conf", `[agent]
  interval = "10s"
  flush_jitter = "forever"
[[inputs.cpu]]
  percpu = "yes"
[[outputs.nosuch]]
`)
	_, stderr, code := runMorse(t, "--config", conf, "--test")
	require.Equal(t, exitBadArgs, code)
	for _, want := range []string{
		conf + `:3: agent.flush_jitter: invalid duration "forever"`,
		conf + `:5: inputs.cpu.percpu: expected a boolean`,
		conf + `:6: outputs.nosuch: unknown output plugin`,
	} {
		require.Contains(t, stderr, want, "every problem is reported in one run")
	}
}

func TestUnknownFlagExitsNonZero(t *testing.T) {
	_, stderr, code := runMorse(t, "--no-such-flag")
	require.Equal(t, exitBadArgs, code)
	require.Contains(t, stderr, "no-such-flag")
}

func writeFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

// logWatcher reads a process's stderr and lets a test wait for a line, instead of sleeping.
type logWatcher struct {
	mu    sync.Mutex
	lines []string
	cond  *sync.Cond
	done  bool
}

func watchLog(r io.Reader) *logWatcher {
	w := &logWatcher{}
	w.cond = sync.NewCond(&w.mu)
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			w.mu.Lock()
			w.lines = append(w.lines, sc.Text())
			w.cond.Broadcast()
			w.mu.Unlock()
		}
		w.mu.Lock()
		w.done = true
		w.cond.Broadcast()
		w.mu.Unlock()
	}()
	return w
}

// waitFor blocks until a line containing s has been logged and returns it, or fails when the
// log ends.
func (w *logWatcher) waitFor(t *testing.T, s string) string {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for seen := 0; ; {
		for ; seen < len(w.lines); seen++ {
			if line := w.lines[seen]; strings.Contains(line, s) {
				w.lines = w.lines[seen+1:]
				return line
			}
		}
		if w.done {
			t.Fatalf("the log ended without %q", s)
		}
		w.cond.Wait()
	}
}

func TestSignalsReloadAndGracefulShutdown(t *testing.T) {
	dir := t.TempDir()
	outFile := filepath.Join(dir, "out.lp")
	good := `
[agent]
  interval = "1s"
  round_interval = false
  flush_interval = "1h" # only the shutdown flush writes
  shutdown_timeout = "5s"
[[inputs.mem]]
[[outputs.file]]
  files = ["` + outFile + `"]
`
	conf := writeFile(t, dir, "svc.conf", good)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, morseBin, "--config", conf)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	logs := watchLog(stderr)
	logs.waitFor(t, "agent started")

	writeFile(t, dir, "svc.conf", good+"\n[[inputs.nosuch]]\n")
	require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
	logs.waitFor(t, "reload refused")

	writeFile(t, dir, "svc.conf", good+"\n[[inputs.cpu]]\n")
	require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
	line := logs.waitFor(t, "config reloaded")
	require.Contains(t, line, "outputs_kept=1", "the file output did not change, so it kept its buffer")

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	logs.waitFor(t, "outputs.file: 0 metrics left unsent")
	require.NoError(t, cmd.Wait(), "a graceful shutdown exits zero")
	data, err := os.ReadFile(outFile)
	require.NoError(t, err)
	got := byName(testutil.Parse(t, string(data), false))
	require.NotEmpty(t, got["mem"], "the shutdown flush wrote what was buffered")
	require.NotEmpty(t, got["cpu"], "the reloaded config's new input ran")
}

func TestPprofAddrServesTheProfiler(t *testing.T) {
	dir := t.TempDir()
	conf := writeFile(t, dir, "p.conf", "[[inputs.mem]]\n[[outputs.file]]\n  files = [\""+filepath.Join(dir, "out.lp")+"\"]\n")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, morseBin, "--config", conf, "--pprof-addr", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	logs := watchLog(stderr)
	line := logs.waitFor(t, "profiler listening")
	addr := regexp.MustCompile(`address=(127\.0\.0\.1:\d+)`).FindStringSubmatch(line)
	require.Len(t, addr, 2, line)
	resp, err := http.Get("http://" + addr[1] + "/debug/pprof/")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(body), "goroutine")
	// The profiler starts before the agent; until the agent runs, SIGTERM has no handler.
	logs.waitFor(t, "agent started")
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Wait())
}

// TestEnsureTwoProcs: an agent confined to one core still gets a second P, so that the
// network poller answers an output's round trip at once, unless GOMAXPROCS was set.
func TestEnsureTwoProcs(t *testing.T) {
	prev := runtime.GOMAXPROCS(1)
	t.Cleanup(func() { runtime.GOMAXPROCS(prev) })

	t.Setenv("GOMAXPROCS", "1")
	ensureTwoProcs()
	require.Equal(t, 1, runtime.GOMAXPROCS(0), "an explicit GOMAXPROCS is obeyed")

	t.Setenv("GOMAXPROCS", "")
	ensureTwoProcs()
	require.Equal(t, 2, runtime.GOMAXPROCS(0), "one core gets two Ps")

	runtime.GOMAXPROCS(8)
	ensureTwoProcs()
	require.Equal(t, 8, runtime.GOMAXPROCS(0), "more cores keep their Ps")
}

// TestPaceGC: the pacer raises GOGC for a small heap while it runs and restores it when
// stopped; an explicit GOGC leaves the collector alone.
func TestPaceGC(t *testing.T) {
	prev := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(prev) })
	gogc := func() uint64 {
		s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}

	t.Setenv("GOGC", "")
	stop := paceGC()
	require.Eventually(t, func() bool { return gogc() > 100 }, 5*time.Second, time.Millisecond,
		"a small live heap gets a higher GOGC")
	stop()
	require.Equal(t, uint64(100), gogc(), "stopping restores GOGC")

	t.Setenv("GOGC", "50")
	paceGC()()
	require.Equal(t, uint64(100), gogc(), "an explicit GOGC is left alone")
}

func TestVersionFromBuildInfo(t *testing.T) {
	info := func(mod string, kv ...string) *debug.BuildInfo {
		bi := &debug.BuildInfo{Main: debug.Module{Version: mod}}
		for i := 0; i+1 < len(kv); i += 2 {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return bi
	}
	tests := []struct {
		name string
		info *debug.BuildInfo
		want string
	}{
		{"go install of a tag", info("v1.4.0"), "v1.4.0"},
		{"go build in a checkout", info("(devel)", "vcs.revision", "3b5349b0123456789abc", "vcs.modified", "false"), "3b5349b01234"},
		{"a modified checkout", info("(devel)", "vcs.revision", "3b5349b0123456789abc", "vcs.modified", "true"), "3b5349b01234-dirty"},
		{"a pseudo-version names its revision already", info("v0.0.0-20261123185600-3b5349b01234", "vcs.revision", "3b5349b0123456789abc"), "v0.0.0-20261123185600-3b5349b01234"},
		{"a tag and another revision", info("v1.4.0", "vcs.revision", "abcdef0123456789"), "v1.4.0 (abcdef012345)"},
		{"nothing recorded", info("(devel)"), "dev"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, fromBuildInfo(tc.info))
		})
	}
}

// TestVersionOfAPlainBuild: a binary built with plain `go build`, without ldflags, names its
// VCS revision instead of "dev".
func TestVersionOfAPlainBuild(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "morse")
	// Go's default is to stamp the VCS revision (-buildvcs=auto); a machine whose GOFLAGS
	// turn that off is not what a user who runs plain `go build` has.
	require.NoError(t, testutil.BuildMorse(t.Context(), bin, "-buildvcs=auto"))
	out, err := exec.Command(bin, "version").Output()
	require.NoError(t, err)
	rev, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output()
	require.NoError(t, err)
	require.Contains(t, string(out), strings.TrimSpace(string(rev)), "the revision comes from the build info")
	require.NotContains(t, string(out), "dev\n")
}

// TestProcessorsAndAggregatorsFromTheConfig: the shipped processors and aggregators run
// from a config: rename changes mem's name, and minmax summarises what was gathered.
func TestProcessorsAndAggregatorsFromTheConfig(t *testing.T) {
	conf := writeFile(t, t.TempDir(), "p.conf", `
[agent]
  omit_hostname = true
[[inputs.mem]]
[[processors.rename]]
  [[processors.rename.replace]]
    measurement = "mem"
    dest = "memory"
[[aggregators.minmax]]
  period = "30s"
  namepass = ["memory"]
`)
	out, stderr, code := runMorse(t, "--test", "--config", conf)
	require.Zero(t, code, stderr)
	got := byName(parseTestOutput(t, out))
	require.Len(t, got["memory"], 2, "renamed, and minmax's summary of what --test gathered:\n%s", out)
	require.Empty(t, got["mem"])
	_, ok := got["memory"][1].Field("used_min")
	require.True(t, ok, "minmax names its fields _min and _max")
}
