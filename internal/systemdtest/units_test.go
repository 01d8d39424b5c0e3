//go:build systemd

package systemdtest

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testutil"
)

// TestSystemdUnits runs the packaged morse's inputs.systemd_units, as the morse user, against
// the machine's systemd 252 over D-Bus. The units of the plugin's testdata are in each state
// a unit can be put in on demand; each is reported with the states systemctl shows and
// Telegraf's codes for them, and with details its main PID.
func TestSystemdUnits(t *testing.T) {
	m := bootMachine(t, image)
	m.copyIn(t, filepath.Join(debDir, "morse1.deb"), "/root/pkg1.deb")
	m.sh(t, "DEBIAN_FRONTEND=noninteractive dpkg -i /root/pkg1.deb")
	units, err := filepath.Glob(filepath.Join(repoRoot, "plugins/inputs/systemd_units/testdata/units/*"))
	require.NoError(t, err)
	require.Len(t, units, 6)
	for _, u := range units {
		m.copyIn(t, u, "/etc/systemd/system/"+filepath.Base(u))
	}
	m.sh(t, "systemctl daemon-reload && systemctl start morse-test-sleep morse-test-oneshot morse-test-tpl@one")
	_, _ = m.try("systemctl start morse-test-fail")
	m.waitFor(t, "systemctl is-failed morse-test-fail", 30*time.Second, "morse-test-fail to fail",
		func(s string) bool { return strings.TrimSpace(s) == "failed" })
	m.writeFile(t, "/etc/morse/units.conf", "[[inputs.systemd_units]]\n  pattern = \"morse-test*\"\n"+
		"  collect_disabled_units = true\n  details = true\n")
	out := m.sh(t, "runuser -u morse -- morse --test --config /etc/morse/units.conf 2>&1")

	var text strings.Builder
	for _, line := range strings.Split(out, "\n") {
		if l, ok := strings.CutPrefix(line, "> "); ok && strings.HasPrefix(l, "systemd_units,") {
			text.WriteString(l + "\n")
		}
	}
	got := map[string]string{}
	for _, mt := range testutil.Parse(t, text.String(), false) {
		tg, f := testutil.TagsOf(mt), testutil.FieldsOf(mt)
		got[tg["name"]] = fmt.Sprintf("%s %s %s %T:%v %T:%v %T:%v", tg["load"], tg["active"], tg["sub"],
			f["load_code"], f["load_code"], f["active_code"], f["active_code"], f["sub_code"], f["sub_code"])
		if tg["name"] == "morse-test-sleep.service" {
			require.Equal(t, m.prop(t, "morse-test-sleep", "MainPID"), fmt.Sprint(f["pid"]), "details: the main PID")
			require.IsType(t, uint64(0), f["pid"])
			require.Equal(t, "disabled", tg["state"])
		}
	}
	require.Equal(t, map[string]string{
		"morse-test-sleep.service":    "loaded active running int64:0 int64:0 int64:0",
		"morse-test-tpl@one.service":  "loaded active running int64:0 int64:0 int64:0",
		"morse-test-oneshot.service":  "loaded active exited int64:0 int64:0 int64:4",
		"morse-test-fail.service":     "loaded failed failed int64:0 int64:3 int64:12",
		"morse-test-disabled.service": "loaded inactive dead int64:0 int64:2 int64:1",
		"morse-test-static.service":   "stub inactive dead int64:1 int64:2 int64:1",
	}, got, "morse --test printed:\n%s", out)
	for _, u := range []string{"morse-test-sleep", "morse-test-tpl@one", "morse-test-oneshot", "morse-test-fail"} {
		want := m.prop(t, u, "LoadState") + " " + m.prop(t, u, "ActiveState") + " " + m.prop(t, u, "SubState")
		require.True(t, strings.HasPrefix(got[u+".service"], want+" "), "%s: systemctl says %s", u, want)
	}
	require.NotContains(t, out, " E! ", "no error")
}
