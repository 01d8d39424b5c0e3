package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testutil"
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

func TestVersionFlag(t *testing.T) {
	out, _, code := runMorse(t, "--version")
	require.Zero(t, code)
	require.Equal(t, "morse e2e-test\n", out, "as `morse version`")
}

// startService runs the binary as a service with args and returns it with its log.
func startService(t *testing.T, args ...string) (*exec.Cmd, *logWatcher) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, morseBin, args...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd, watchLog(stderr)
}

func serviceConfig(t *testing.T, dir string) string {
	return "[agent]\n  interval = \"1h\"\n  flush_interval = \"1h\"\n  shutdown_timeout = \"5s\"\n" +
		"[[inputs.mem]]\n[[outputs.file]]\n  files = [" + strconv.Quote(filepath.Join(dir, "out.lp")) + "]\n"
}

// TestPidfile: --pidfile holds the process ID while the agent runs and is removed when it
// stops, as Telegraf's.
func TestPidfile(t *testing.T) {
	dir := t.TempDir()
	conf := writeFile(t, dir, "svc.conf", serviceConfig(t, dir))
	pidFile := filepath.Join(dir, "morse.pid")
	cmd, logs := startService(t, "--config", conf, "--pidfile", pidFile)
	logs.waitFor(t, "agent started")
	b, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	require.Equal(t, strconv.Itoa(cmd.Process.Pid)+"\n", string(b))
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Wait())
	require.NoFileExists(t, pidFile)
}

// TestWatchConfig: with --watch-config, a change of the config file reloads the agent, as
// SIGHUP does, with either method; a file of the config directory too.
func TestWatchConfig(t *testing.T) {
	for _, method := range []string{"notify", "inotify", "poll"} {
		t.Run(method, func(t *testing.T) {
			dir := t.TempDir()
			confDir := filepath.Join(dir, "morse.d")
			require.NoError(t, os.Mkdir(confDir, 0o700))
			text := serviceConfig(t, dir)
			conf := writeFile(t, dir, "svc.conf", text)
			_, logs := startService(t, "--config", conf, "--config-directory", confDir, "--watch-config", method)
			logs.waitFor(t, "agent started")
			// A save may be seen as more than one change, each a reload: wait for the
			// reload that read the whole file.
			writeFile(t, dir, "svc.conf", text+"[[inputs.swap]]\n")
			logs.waitFor(t, "config reloaded inputs=2 ")
			writeFile(t, confDir, "extra.conf", "[[inputs.system]]\n")
			logs.waitFor(t, "config reloaded inputs=3 ")
		})
	}
	_, stderr, code := runMorse(t, "--watch-config", "fanotify")
	require.Equal(t, exitBadArgs, code)
	require.Contains(t, stderr, `--watch-config "fanotify"`)
}

// TestWatchDebounceInterval: with --watch-debounce-interval, writes in a row make one
// reload, of the last of them, once the interval has passed with no change, as Telegraf's
// does; a negative interval is refused.
func TestWatchDebounceInterval(t *testing.T) {
	const debounce = 1500 * time.Millisecond
	for _, method := range []string{"notify", "poll"} {
		t.Run(method, func(t *testing.T) {
			dir := t.TempDir()
			text := serviceConfig(t, dir)
			conf := writeFile(t, dir, "svc.conf", text)
			_, logs := startService(t, "--config", conf, "--watch-config", method, "--watch-debounce-interval", debounce.String())
			logs.waitFor(t, "agent started")
			writeFile(t, dir, "svc.conf", text+"[[inputs.swap]]\n")
			if method == "notify" {
				logs.waitFor(t, "config changed") // the watcher has seen the first write
			}
			before := time.Now() // the second write's changes all come after this
			writeFile(t, dir, "svc.conf", text+"[[inputs.swap]]\n[[inputs.system]]\n")
			line := logs.waitFor(t, "config reloaded")
			require.GreaterOrEqual(t, time.Since(before), debounce, "the reload waits for the interval after the last change")
			require.Contains(t, line, "inputs=3 ", "one reload, of the last write")
		})
	}
	_, stderr, code := runMorse(t, "--watch-debounce-interval", "-1s")
	require.Equal(t, exitBadArgs, code)
	require.Contains(t, stderr, "--watch-debounce-interval must not be negative")
}

// TestTestWait: --test-wait is test mode that keeps service inputs running for that many
// seconds after the gather, so what a listener receives then is printed.
func TestTestWait(t *testing.T) {
	dir := t.TempDir()
	addr := testutil.FreeAddr(t)
	conf := writeFile(t, dir, "listen.conf", "[agent]\n  omit_hostname = true\n[[inputs.socket_listener]]\n"+
		"  service_address = \"tcp://"+addr+"\"\n")
	done := make(chan struct{})
	var out, stderr string
	var code int
	go func() {
		defer close(done)
		out, stderr, code = runMorse(t, "--config", conf, "--test-wait", "2")
	}()
	var conn net.Conn
	require.Eventually(t, func() bool {
		var err error
		conn, err = net.Dial("tcp", addr)
		return err == nil
	}, 20*time.Second, 10*time.Millisecond, "the listener runs during the wait")
	_, err := conn.Write([]byte("waited,src=test v=1i 1700000000000000000\n"))
	require.NoError(t, err)
	require.NoError(t, conn.Close())
	<-done
	require.Zero(t, code, stderr)
	require.Contains(t, out, "> waited,src=test v=1i 1700000000000000000\n")
}

// TestTestFailsWhenAGatherFails: --test prints what the inputs gathered and exits 1 with
// Telegraf's message when a gather failed.
func TestTestFailsWhenAGatherFails(t *testing.T) {
	dir := t.TempDir()
	conf := writeFile(t, dir, "fail.conf", "[agent]\n  omit_hostname = true\n[[inputs.mem]]\n"+
		"[[inputs.file]]\n  files = ["+strconv.Quote(filepath.Join(dir, "missing.lp"))+"]\n")
	out, stderr, code := runMorse(t, "--config", conf, "--test")
	require.Equal(t, exitFailed, code, stderr)
	require.Contains(t, stderr, "input plugins recorded 1 errors")
	require.NotEmpty(t, byName(parseTestOutput(t, out))["mem"], "the other inputs are printed")
}

// TestNothingToRunIsRefused: Telegraf's messages for a config without inputs, always, and
// without outputs, unless in test mode.
func TestNothingToRunIsRefused(t *testing.T) {
	dir := t.TempDir()
	noOutputs := writeFile(t, dir, "in.conf", "[[inputs.mem]]\n")
	noInputs := writeFile(t, dir, "out.conf", "[[outputs.file]]\n  files = [\"stdout\"]\n")
	tests := []struct {
		args []string
		code int
		msg  string
	}{
		{args: []string{"--config", noOutputs}, code: exitBadArgs, msg: "no outputs found, probably invalid config file provided"},
		{args: []string{"--config", noOutputs, "--once"}, code: exitBadArgs, msg: "no outputs found, probably invalid config file provided"},
		{args: []string{"--config", noOutputs, "--test"}, code: exitOK},
		{args: []string{"--config", noOutputs, "--test-wait", "1"}, code: exitOK},
		{args: []string{"--config", noInputs}, code: exitBadArgs, msg: "no inputs found, probably invalid config file provided"},
		{args: []string{"--config", noInputs, "--test"}, code: exitBadArgs, msg: "no inputs found, probably invalid config file provided"},
	}
	for _, tt := range tests {
		_, stderr, code := runMorse(t, tt.args...)
		require.Equal(t, tt.code, code, "%v: %s", tt.args, stderr)
		if tt.msg != "" {
			require.Contains(t, stderr, tt.msg, "%v", tt.args)
		}
	}
}

// TestConfigDirectoryAsTelegraf: --config-directory reads what Telegraf's WalkDirectory
// reads: *.conf files of at least six characters, in the directories below too, in path
// order, skipping Kubernetes' "..data" mounts and every other file.
func TestConfigDirectoryAsTelegraf(t *testing.T) {
	dir := t.TempDir()
	input := func(name string) string {
		return "[[inputs.mem]]\n  name_override = " + strconv.Quote(name) + "\n"
	}
	for _, d := range []string{"b", "..data", "..2026_11_27_20_00_00.1"} {
		require.NoError(t, os.Mkdir(filepath.Join(dir, d), 0o700))
	}
	writeFile(t, dir, "c.conf", input("c"))
	writeFile(t, dir, "a.conf", input("a")+"[agent]\n  omit_hostname = true\n")
	writeFile(t, filepath.Join(dir, "b"), "x.conf", input("b_x"))
	writeFile(t, filepath.Join(dir, "..data"), "k.conf", input("mounted"))
	writeFile(t, filepath.Join(dir, "..2026_11_27_20_00_00.1"), "k.conf", input("mounted"))
	writeFile(t, dir, "README.md", "not a config = [")
	writeFile(t, dir, "c.conf.bak", "not a config = [")
	writeFile(t, dir, ".conf", "not a config = [")
	out, stderr, code := runMorse(t, "--config-directory", dir, "--test")
	require.Zero(t, code, stderr)
	var names []string
	for _, m := range parseTestOutput(t, out) {
		names = append(names, m.Name())
	}
	require.Equal(t, []string{"a", "b_x", "c"}, names)
}

// TestFiltersWarnAboutUnknownNames: a filter name that matches no plugin is warned about,
// when running and when printing a sample.
func TestFiltersWarnAboutUnknownNames(t *testing.T) {
	dir := t.TempDir()
	conf := writeFile(t, dir, "f.conf", "[[inputs.mem]]\n[[outputs.file]]\n  files = [\"stdout\"]\n")
	_, stderr, code := runMorse(t, "--config", conf, "--test", "--input-filter", "mem:mme", "--output-filter", "fiel")
	require.Zero(t, code, stderr)
	require.Contains(t, stderr, "W! [agent] --input-filter names an input the config does not have name=mme\n")
	require.Contains(t, stderr, "W! [agent] --output-filter names an output the config does not have name=fiel\n")
	require.NotContains(t, stderr, "name=mem")

	_, stderr, code = runMorse(t, "config", "--input-filter", "cpu:cpux")
	require.Zero(t, code)
	require.Equal(t, "morse: --input-filter: \"cpux\" is not an input plugin of morse\n", stderr)

	_, stderr, code = runMorse(t, "config", "--input-filter", "none", "--output-filter", "none")
	require.Zero(t, code)
	require.Empty(t, stderr, "Telegraf's none names no plugin on purpose")
}

// TestConfigPrintsTelegrafsDefaults: `morse config` enables what `telegraf config` enables,
// and prints the other plugins commented out; a filter prints only what it names.
func TestConfigPrintsTelegrafsDefaults(t *testing.T) {
	enabled := regexp.MustCompile(`(?m)^\[\[(inputs|outputs)\.(\w+)\]\]`)
	tables := func(sample string) []string {
		var out []string
		for _, m := range enabled.FindAllStringSubmatch(sample, -1) {
			out = append(out, m[1]+"."+m[2])
		}
		return out
	}
	sample, _, code := runMorse(t, "config")
	require.Zero(t, code)
	require.Equal(t, []string{"outputs.influxdb", "inputs.cpu", "inputs.disk", "inputs.diskio", "inputs.kernel",
		"inputs.mem", "inputs.processes", "inputs.swap", "inputs.system"}, tables(sample))
	require.Contains(t, sample, "\n# [[inputs.procstat]]\n", "the others, commented out")
	require.Contains(t, sample, "\n# [[outputs.file]]\n")

	narrow, _, code := runMorse(t, "config", "--input-filter", "procstat", "--output-filter", "file")
	require.Zero(t, code)
	require.Equal(t, []string{"outputs.file", "inputs.procstat"}, tables(narrow))
	require.NotContains(t, narrow, "inputs.cpu]]")
}
