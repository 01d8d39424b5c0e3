//go:build systemd

package systemdtest

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// everyPlugin adds, to the packaged config's system inputs and file output, every other
// plugin morse ships, each as an operator would first try it. The InfluxDB output writes
// mem to the InfluxDB listener, which renames what it receives so that nothing loops.
const everyPlugin = `
[[inputs.netstat]]
[[inputs.nstat]]
[[inputs.systemd_units]]
  pattern = "dbus.service"
[[inputs.procstat]]
  systemd_unit = "dbus.service"
[[inputs.procstat]]
  pattern = "systemd-journald"
[[inputs.exec]]
  commands = ["/bin/echo exec_check ok=1i"]
[[inputs.tail]]
  files = ["/var/log/tail-check.lp"]
  from_beginning = true
[[inputs.file]]
  files = ["/etc/file-check.lp"]
[[inputs.socket_listener]]
  service_address = "tcp://127.0.0.1:8094"
  data_format = "influx"
[[inputs.influxdb_listener]]
  service_address = "127.0.0.1:8186"
  name_prefix = "looped_"
[[outputs.influxdb]]
  urls = ["http://127.0.0.1:8186"]
  namepass = ["mem"]
`

// TestEveryPluginUnderHardening: under the unit's hardening, as the morse user, every
// plugin gathers or writes, and none logs an error.
func TestEveryPluginUnderHardening(t *testing.T) {
	m := bootMachine(t, image)
	m.copyIn(t, filepath.Join(debDir, "morse1.deb"), "/root/pkg1.deb")
	m.sh(t, "DEBIAN_FRONTEND=noninteractive dpkg -i /root/pkg1.deb")
	m.writeFile(t, "/var/log/tail-check.lp", "tail_check v=1i\n")
	m.writeFile(t, "/etc/file-check.lp", "file_check v=1i\n")
	since := m.cursor(t)
	m.writeFile(t, "/etc/morse/morse.d/every-plugin.conf", everyPlugin)
	m.sh(t, "systemctl reload morse")
	m.waitJournal(t, since, "I! [agent] config reloaded", 30*time.Second, prioDebug)
	m.waitJournal(t, since, "address=127.0.0.1:8094", 30*time.Second, prioDebug)
	m.sh(t, `bash -c 'printf "socket_check v=1i\n" > /dev/tcp/127.0.0.1/8094'`)

	// A metric of each, by measurement and, for procstat, by the tag that tells its two apart.
	type metricOf struct{ name, tag, value string }
	want := []metricOf{
		{name: "cpu"}, {name: "mem"}, {name: "disk"}, {name: "diskio"}, {name: "net"}, {name: "system"},
		{name: "kernel"}, {name: "processes"}, {name: "swap"}, {name: "internal_gather"}, {name: "internal_write"},
		{name: "netstat"}, {name: "nstat"}, {"systemd_units", "name", "dbus.service"},
		{"procstat", "systemd_unit", "dbus.service"}, {"procstat", "pattern", "systemd-journald"},
		{name: "exec_check"}, {name: "tail_check"}, {name: "file_check"}, {name: "socket_check"}, {name: "looped_mem"},
	}
	var missing []metricOf
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("no metric yet of: %v", missing)
		}
	})
	m.waitFor(t, "cat "+metricsOut, 90*time.Second, "a metric of every plugin", func(s string) bool {
		seen := map[metricOf]bool{}
		for _, mt := range parseLines(t, s) {
			seen[metricOf{name: mt.Name()}] = true
			for _, tg := range mt.Tags() {
				seen[metricOf{mt.Name(), tg.Key, tg.Value}] = true
			}
		}
		missing = missing[:0]
		for _, w := range want {
			if !seen[w] {
				missing = append(missing, w)
			}
		}
		return len(missing) == 0
	})
	require.Empty(t, strings.TrimSpace(m.journal(t, since, prioErr)), "no plugin logged an error")
	require.Equal(t, "0", m.prop(t, "morse", "NRestarts"))
}

// TestDocumentedDropIns: what docs/service.md says needs a drop-in does need it, and the
// drop-in it gives works. Docker lets containers bind low ports unprivileged; this machine
// gets the kernel's default back, as on a host.
func TestDocumentedDropIns(t *testing.T) {
	m := bootMachine(t, image, "--sysctl", "net.ipv4.ip_unprivileged_port_start=1024")
	m.copyIn(t, filepath.Join(debDir, "morse1.deb"), "/root/pkg1.deb")
	m.sh(t, "DEBIAN_FRONTEND=noninteractive dpkg -i /root/pkg1.deb")

	// procstat reads another user's process, but not its memory maps, descriptors or I/O.
	since := m.cursor(t)
	m.writeFile(t, "/etc/morse/morse.d/procstat.conf", "[[inputs.procstat]]\n  systemd_unit = \"dbus.service\"\n")
	m.sh(t, "systemctl reload morse")
	m.waitJournal(t, since, "I! [agent] config reloaded", 30*time.Second, prioDebug)
	fields := procstatFields(t, m, 0)
	require.Contains(t, fields, "memory_rss")
	for _, f := range []string{"num_fds", "memory_pss", "read_bytes"} {
		require.NotContains(t, fields, f, "without the drop-in")
	}

	// A listener on a port below 1024 is refused.
	since = m.cursor(t)
	low := "[[inputs.socket_listener]]\n  service_address = \"tcp://127.0.0.1:514\"\n  data_format = \"influx\"\n"
	m.writeFile(t, "/etc/morse/morse.d/low-port.conf", low)
	m.sh(t, "systemctl reload morse")
	m.waitJournal(t, since, "bind: permission denied", 30*time.Second, prioErr)

	// The drop-ins of docs/service.md.
	m.sh(t, "mkdir -p /etc/systemd/system/morse.service.d")
	m.writeFile(t, "/etc/systemd/system/morse.service.d/low-port.conf", "[Service]\nAmbientCapabilities=CAP_NET_BIND_SERVICE\n")
	m.writeFile(t, "/etc/systemd/system/morse.service.d/procstat.conf", "[Service]\nAmbientCapabilities=CAP_SYS_PTRACE CAP_DAC_READ_SEARCH\n")
	since = m.cursor(t)
	m.sh(t, "systemctl daemon-reload && systemctl restart morse")
	m.waitJournal(t, since, "address=127.0.0.1:514", 30*time.Second, prioDebug)
	m.sh(t, `bash -c 'printf "low_port_check v=1i\n" > /dev/tcp/127.0.0.1/514'`)
	m.waitFor(t, "cat "+metricsOut, time.Minute, "the line sent to port 514",
		func(s string) bool { return strings.Contains(s, "\nlow_port_check,") })
	fields = procstatFields(t, m, len(parseLines(t, m.sh(t, "grep '^procstat,' "+metricsOut))))
	for _, f := range []string{"num_fds", "memory_pss", "read_bytes"} {
		require.Contains(t, fields, f, "with the drop-in")
	}
	require.Empty(t, strings.TrimSpace(m.journal(t, since, prioErr)))
}

// procstatFields waits for a procstat metric of dbus.service after the first skip lines of
// procstat in the output file, and returns its field names.
func procstatFields(t *testing.T, m *machine, skip int) map[string]bool {
	t.Helper()
	out := m.waitFor(t, "grep '^procstat,' "+metricsOut, time.Minute, "a procstat metric",
		func(s string) bool { return len(parseLines(t, s)) > skip })
	ms := parseLines(t, out)
	fields := map[string]bool{}
	for _, f := range ms[len(ms)-1].Fields() {
		fields[f.Key] = true
	}
	return fields
}
