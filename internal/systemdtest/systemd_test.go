//go:build systemd

package systemdtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

// The two builds: the second upgrades the first.
const (
	version1 = "1.0.0~systemdtest1"
	version2 = "1.0.0~systemdtest2"
	// versionWedged is a build with -tags wedgetest: plugins that ignore their contexts.
	versionWedged = "1.0.0~systemdtest3"
)

var (
	repoRoot string
	image    string
	debDir   string // holds morse1.deb and morse2.deb
)

func TestMain(m *testing.M) {
	code, err := setup(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "systemdtest:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

// setup builds the image and two packages of this tree, with `make deb`'s tools and flags,
// differing only in their version.
func setup(m *testing.M) (int, error) {
	ctx := context.Background()
	root, err := filepath.Abs("../..")
	if err != nil {
		return 0, err
	}
	repoRoot = root
	start := time.Now()
	if image, err = systemdImage(ctx, repoRoot); err != nil {
		return 0, err
	}
	fmt.Fprintf(os.Stderr, "systemdtest: image %s ready in %v\n", image, time.Since(start).Round(time.Second))
	if debDir, err = os.MkdirTemp("", "systemdtest-debs"); err != nil {
		return 0, err
	}
	defer os.RemoveAll(debDir)
	for i, v := range []string{version1, version2, versionWedged} {
		if err := buildDeb(ctx, v, filepath.Join(debDir, fmt.Sprintf("morse%d.deb", i+1))); err != nil {
			return 0, err
		}
	}
	return m.Run(), nil
}

// buildDeb builds the binary as `make build` does and packages it as `make deb` does.
func buildDeb(ctx context.Context, version, dst string) error {
	dir, err := os.MkdirTemp("", "systemdtest-build")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "morse")
	err = testutil.BuildMorse(ctx, bin, "-trimpath", "-tags", tagsOf(version), "-ldflags", "-s -w -X main.version="+version)
	if err != nil {
		return err
	}
	pkg := exec.CommandContext(ctx, "go", "run", "./packaging/mkdeb", "--binary", bin, "--out", dir, "--version", version)
	pkg.Dir = repoRoot
	if out, err := pkg.CombinedOutput(); err != nil {
		return fmt.Errorf("go run ./packaging/mkdeb: %w\n%s", err, out)
	}
	return os.Rename(filepath.Join(dir, "morse_"+version+"_amd64.deb"), dst)
}

// tagsOf is the build tags of a test version: the wedged one has plugins that hang.
func tagsOf(version string) string {
	if version == versionWedged {
		return "wedgetest"
	}
	return ""
}

// TestWatchdogRestartsAWedgedAgent: an output whose write ignores its context wedges the
// flush loop; the agent stops feeding the watchdog, says why, and systemd restarts the
// service with result watchdog.
func TestWatchdogRestartsAWedgedAgent(t *testing.T) {
	m := bootMachine(t, image)
	m.copyIn(t, filepath.Join(debDir, "morse3.deb"), "/root/pkg3.deb")
	m.sh(t, "DEBIAN_FRONTEND=noninteractive dpkg -i /root/pkg3.deb 2>&1")
	m.writeFile(t, "/etc/morse/morse.d/wedged.conf", "[[outputs.wedged]]\n  flush_interval = \"1s\"\n")
	after := m.cursor(t)
	m.sh(t, "systemctl restart morse")
	m.waitJournal(t, after, "not pinging the service manager", 90*time.Second, 3)
	m.waitJournal(t, after, "Watchdog timeout", 90*time.Second, 7)
	m.waitJournal(t, after, "Failed with result 'watchdog'", 90*time.Second, 7)
	m.waitFor(t, "systemctl show -p NRestarts --value morse", 90*time.Second, "a restart", func(s string) bool {
		return strings.TrimSpace(s) != "0"
	})
}

// parseLines parses the complete lines of line protocol, failing on any bad line. A file
// read while morse appends to it may end in part of a line, which is left out.
func parseLines(t *testing.T, text string) []morse.Metric {
	t.Helper()
	return testutil.Parse(t, text[:strings.LastIndexByte(text, '\n')+1], false)
}

// metricsOut is the file the packaged config writes to.
const metricsOut = "/var/lib/morse/metrics.out"

// mainPID is morse's process as systemd knows it.
func mainPID(t *testing.T, m *machine) string {
	t.Helper()
	pid := m.prop(t, "morse", "MainPID")
	require.NotEqual(t, "0", pid, "morse runs")
	return pid
}

// TestPackageLifecycle takes the package through install, reload, stop, upgrade, remove and
// purge under systemd, checking at each step what an operator would.
func TestPackageLifecycle(t *testing.T) {
	m := bootMachine(t, image)
	m.copyIn(t, filepath.Join(debDir, "morse1.deb"), "/root/pkg1.deb")
	m.copyIn(t, filepath.Join(debDir, "morse2.deb"), "/root/pkg2.deb")
	steps := []struct {
		name string
		run  func(*testing.T, *machine)
	}{
		{"install enables and starts it", testInstall},
		{"journal priorities", testJournalPriorities},
		{"reload keeps the process", testReload},
		{"refused reload", testRefusedReload},
		{"stop flushes", testStop},
		{"upgrade restarts it", testUpgrade},
		{"remove stops it", testRemove},
		{"purge leaves nothing", testPurge},
	}
	for _, s := range steps {
		if !t.Run(s.name, func(t *testing.T) { s.run(t, m) }) {
			return // each step starts where the last one left the machine
		}
	}
}

func testInstall(t *testing.T, m *machine) {
	out := m.sh(t, "DEBIAN_FRONTEND=noninteractive dpkg -i /root/pkg1.deb 2>&1")
	require.NotContains(t, out, "warning", out)
	require.Equal(t, "enabled", strings.TrimSpace(m.sh(t, "systemctl is-enabled morse")))
	require.Equal(t, "active", m.prop(t, "morse", "ActiveState"))
	require.Equal(t, "running", m.prop(t, "morse", "SubState"))
	pid := mainPID(t, m)

	// It runs as morse, without privileges, under the hardening.
	require.Equal(t, "morse", strings.TrimSpace(m.sh(t, "ps -o user= -p "+pid)))
	status := m.sh(t, "cat /proc/"+pid+"/status")
	require.Regexp(t, `(?m)^NoNewPrivs:\s+1$`, status)
	require.Regexp(t, `(?m)^CapEff:\s+0+$`, status)
	require.Contains(t, m.sh(t, "getent passwd morse"), ":/var/lib/morse:/usr/sbin/nologin")

	// A real input writes to a real output: cpu usage, from the kernel, in the file.
	out = m.waitFor(t, "cat "+metricsOut, time.Minute, "cpu-total in "+metricsOut, func(s string) bool {
		return strings.Contains(s, "cpu=cpu-total")
	})
	var found bool
	for _, mt := range parseLines(t, out) {
		if v, _ := mt.Tag("cpu"); mt.Name() == "cpu" && v == "cpu-total" {
			idle, ok := mt.Field("usage_idle")
			require.True(t, ok)
			require.InDelta(t, 50, idle.Float(), 50.0001)
			found = true
		}
	}
	require.True(t, found)
	require.Equal(t, "morse:morse", strings.TrimSpace(m.sh(t, "stat -c %U:%G "+metricsOut)))
}

// testJournalPriorities: a config that warns puts its warnings under
// `journalctl -u morse -p warning`, the operator's command, and leaves the info lines out.
func testJournalPriorities(t *testing.T, m *machine) {
	since := m.cursor(t)
	// /etc is read-only to the service, so this output's every flush fails with a warning.
	m.writeFile(t, "/etc/morse/morse.d/warn.conf", "[[outputs.file]]\n  files = [\"/etc/morse/unwritable.lp\"]\n")
	m.sh(t, "systemctl reload morse")
	m.waitJournal(t, since, "W! [outputs.file] write failed, will retry", time.Minute, prioWarning)

	warnings := m.sh(t, "journalctl --no-pager -q -o cat -u morse -p warning")
	require.Contains(t, warnings, "W! [outputs.file] write failed, will retry")
	require.Contains(t, warnings, "read-only file system")
	require.NotContains(t, warnings, "I! [", "info lines are not warnings")
	all := m.sh(t, "journalctl --no-pager -q -o cat -u morse")
	require.Contains(t, all, "I! [agent] agent started")
	require.Contains(t, all, "I! [agent] config reloaded")
	require.NotRegexp(t, `(?m)^\d{4}-\d\d-\d\dT`, all, "the journal has the time; the line does not repeat it")

	m.sh(t, "rm /etc/morse/morse.d/warn.conf")
	since = m.cursor(t)
	m.sh(t, "systemctl reload morse")
	m.waitJournal(t, since, "I! [agent] config reloaded", 30*time.Second, prioDebug)
}

// testReload: the process stays and the unit returns to running.
func testReload(t *testing.T, m *machine) {
	pid := mainPID(t, m)
	since := m.cursor(t)
	m.writeFile(t, "/etc/morse/morse.d/extra.conf", "[[inputs.mem]]\n  name_override = \"mem_reloaded\"\n")
	m.sh(t, "systemctl reload morse")
	line := m.waitJournal(t, since, "I! [agent] config reloaded", 30*time.Second, prioDebug)
	require.Contains(t, line, "outputs_kept=1", "the unchanged file output kept its buffer")
	m.waitFor(t, "systemctl show -p SubState --value morse", 10*time.Second, "running again",
		func(s string) bool { return strings.TrimSpace(s) == "running" })
	require.Equal(t, pid, mainPID(t, m), "a reload keeps the process")
	require.Equal(t, "0", m.prop(t, "morse", "NRestarts"))
	m.waitFor(t, "cat "+metricsOut, time.Minute, "the reloaded config's new input",
		func(s string) bool { return strings.Contains(s, "mem_reloaded,") })
	m.sh(t, "rm /etc/morse/morse.d/extra.conf")
}

// testRefusedReload: a config with problems is refused, the agent runs on, and the status
// line says why; a good reload clears it.
func testRefusedReload(t *testing.T, m *machine) {
	pid := mainPID(t, m)
	since := m.cursor(t)
	m.writeFile(t, "/etc/morse/morse.d/bad.conf", "[[inputs.cpu]]\n  percpu = \"yes\"\n")
	m.sh(t, "systemctl reload morse")
	m.waitJournal(t, since, "reload refused", 30*time.Second, prioErr)
	m.waitFor(t, "systemctl show -p StatusText --value morse", 10*time.Second, "the refusal in STATUS",
		func(s string) bool {
			return strings.TrimSpace(s) == "reload refused; still running the previous config: "+
				"/etc/morse/morse.d/bad.conf:2: inputs.cpu.percpu: expected a boolean, got a string"
		})
	require.Equal(t, "active", m.prop(t, "morse", "ActiveState"))
	require.Equal(t, pid, mainPID(t, m))

	m.sh(t, "rm /etc/morse/morse.d/bad.conf && systemctl reload morse")
	m.waitFor(t, "systemctl show -p StatusText --value morse", 10*time.Second, "STATUS cleared",
		func(s string) bool { return strings.TrimSpace(s) == "" })
}

// testStop: systemctl stop returns well within TimeoutStopSec, after the final flush, and
// the journal says what was left.
func testStop(t *testing.T, m *machine) {
	since := m.cursor(t)
	start := time.Now()
	m.sh(t, "systemctl stop morse")
	took := time.Since(start)
	require.Less(t, took, 30*time.Second, "within TimeoutStopSec")
	all := m.journal(t, since, prioDebug)
	require.Contains(t, all, "morse: outputs.file: 0 metrics left unsent")
	require.Equal(t, "success", m.prop(t, "morse", "Result"))
	require.Equal(t, "0", m.prop(t, "morse", "ExecMainStatus"))
	t.Logf("systemctl stop took %v", took.Round(time.Millisecond))
	m.sh(t, "systemctl start morse")
	require.Equal(t, "active", m.prop(t, "morse", "ActiveState"))
}

// testUpgrade: installing the second build restarts the service on the new binary and
// keeps an edited conffile.
func testUpgrade(t *testing.T, m *machine) {
	old := mainPID(t, m)
	m.sh(t, `printf '\n# edited by the operator\n' >> /etc/morse/morse.conf`)
	m.sh(t, "DEBIAN_FRONTEND=noninteractive dpkg -i /root/pkg2.deb </dev/null 2>&1")
	require.Equal(t, "active", m.prop(t, "morse", "ActiveState"))
	pid := mainPID(t, m)
	require.NotEqual(t, old, pid, "restarted")
	require.Equal(t, "/usr/bin/morse", strings.TrimSpace(m.sh(t, "readlink /proc/"+pid+"/exe")), "running the new binary")
	require.Equal(t, "morse "+version2+"\n", m.sh(t, "/usr/bin/morse version"))
	require.Contains(t, m.sh(t, "dpkg-query -W -f '${Version}' morse"), version2)
	require.Contains(t, m.sh(t, "cat /etc/morse/morse.conf"), "# edited by the operator")
	require.Equal(t, "enabled", strings.TrimSpace(m.sh(t, "systemctl is-enabled morse")))
}

// testRemove: dpkg -r stops the service and leaves the config.
func testRemove(t *testing.T, m *machine) {
	m.sh(t, "dpkg -r morse 2>&1")
	require.Equal(t, "inactive", m.prop(t, "morse", "ActiveState"))
	require.Equal(t, "not-found", m.prop(t, "morse", "LoadState"))
	_, err := m.try("pgrep -x morse")
	require.Error(t, err, "no morse process")
	m.sh(t, "test -f /etc/morse/morse.conf && test ! -e /usr/bin/morse")
}

// testPurge: nothing of morse is left but its user and group, which Debian leaves.
func testPurge(t *testing.T, m *machine) {
	m.sh(t, "dpkg --purge morse 2>&1")
	left := m.sh(t, `find / -xdev \( -path /proc -o -path /sys \) -prune -o -name '*morse*' -print | grep -v '^/root/pkg' || true`)
	require.Empty(t, strings.TrimSpace(left), "files left behind")
	require.Empty(t, strings.TrimSpace(m.sh(t, "dpkg -l | grep -w morse || true")))
	m.sh(t, "getent passwd morse && getent group morse")
}

// TestInstallWithoutRunningSystemd: in a chroot or an image build, where systemd is
// installed but not running, the package installs, enables the unit, and starts nothing.
func TestInstallWithoutRunningSystemd(t *testing.T) {
	out, err := docker(context.Background(), "run", "--rm", "-v", debDir+":/debs:ro", image, "sh", "-ec", `
		dpkg -i /debs/morse1.deb
		test -L /etc/systemd/system/multi-user.target.wants/morse.service
		getent passwd morse
		! pgrep -x morse
		echo INSTALLED-OFFLINE`)
	require.NoError(t, err, out)
	require.Contains(t, out, "INSTALLED-OFFLINE")
}
