package testserver_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testserver"
)

// TestSnmpdServesTheTestMIB asks snmpd with Net-SNMP's own snmpget, over v2c and as each
// v3 user, for the generated values.
func TestSnmpdServesTheTestMIB(t *testing.T) {
	s := testserver.SharedSnmpd(t)
	get := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("snmpget", append(append([]string{"-On", "-t", "2", "-r", "1"}, args...),
			s.Addr, testserver.SnmpdSysName, testserver.SnmpdIfEntry+".2.1000")...).CombinedOutput()
		require.NoError(t, err, "%s", out)
		return string(out)
	}
	out := get("-v2c", "-c", testserver.SnmpdCommunity)
	require.Contains(t, out, `"`+testserver.SnmpdSysNameValue+`"`)
	require.Contains(t, out, `"eth1000"`)
	for _, u := range testserver.SnmpdUsers {
		args := []string{"-v3", "-u", u.Name, "-l", u.Level}
		if u.Auth != "" {
			args = append(args, "-a", strings.Replace(u.Auth, "SHA2", "SHA-2", 1), "-A", u.AuthPass)
		}
		if u.Priv != "" {
			args = append(args, "-x", strings.Replace(u.Priv, "AES1", "AES-1", 1), "-X", u.PrivPass)
			args[len(args)-3] = strings.Replace(args[len(args)-3], "AES2", "AES-2", 1)
		}
		require.Contains(t, get(args...), `"eth1000"`, u.Name)
	}
}
