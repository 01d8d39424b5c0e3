package snmp_trap

import (
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
)

const (
	linkDown = testserver.SnmpdLinkDown
	descr5   = testserver.SnmpdIfEntry + ".2.5"
	status5  = testserver.SnmpdIfEntry + ".9.5"
)

// listen starts the plugin on a free loopback port with the test MIBs and Debian's.
func listen(t *testing.T, s *SnmpTrap) (*testutil.Accumulator, string) {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, testserver.WriteSnmpMIBs(dir))
	ports, err := testutil.FreePorts("udp", 1)
	require.NoError(t, err)
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	s.ServiceAddress = "udp://" + addr
	s.Path = []string{dir, "/usr/share/snmp/mibs"}
	s.SetLogger(slog.New(slog.DiscardHandler))
	require.NoError(t, s.Init())
	acc := &testutil.Accumulator{}
	require.NoError(t, s.Start(testutil.Context(t), acc))
	t.Cleanup(s.Stop)
	return acc, addr
}

// send runs Net-SNMP's snmptrap with args, then the destination and the rest.
func send(t *testing.T, args []string, addr string, rest ...string) {
	t.Helper()
	bin, err := testserver.SnmptrapBinary()
	require.NoError(t, err)
	cmd := exec.Command(bin, append(append(append([]string{"-On"}, args...), addr), rest...)...)
	// No MIBs for snmptrap itself: every OID here is numeric.
	cmd.Env = append(os.Environ(), "MIBS=", "MIBDIRS="+filepath.Join(t.TempDir(), "none"))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
}

func wait(t *testing.T, acc *testutil.Accumulator) (map[string]string, map[string]any) {
	t.Helper()
	require.NoError(t, acc.Wait(testutil.Context(t), 1))
	require.Empty(t, acc.Errors())
	m := acc.Metrics()[0]
	require.Equal(t, "snmp_trap", m.Name())
	return testutil.TagsOf(m), testutil.FieldsOf(m)
}

func TestV2cTrap(t *testing.T) {
	acc, addr := listen(t, New())
	send(t, []string{"-v2c", "-c", "public"}, addr, "4242", linkDown, descr5, "s", "eth5", status5, "i", "2")
	tags, fields := wait(t, acc)
	require.Equal(t, map[string]string{"version": "2c", "source": "127.0.0.1", "community": "public",
		"oid": linkDown, "name": "mtLinkDown", "mib": "MORSE-TEST-MIB"}, tags)
	require.Equal(t, map[string]any{"sysUpTimeInstance": uint64(4242), "mtIfDescr.5": "eth5", "mtIfOperStatus.5": int64(2)}, fields)
}

func TestV1Trap(t *testing.T) {
	s := New()
	s.Version = "1"
	acc, addr := listen(t, s)
	// enterprise, agent address, generic 6 (enterprise specific), specific 1, uptime.
	send(t, []string{"-v1", "-c", "public"}, addr, testserver.SnmpdTestMIB+".3", "10.1.2.3", "6", "1", "77", descr5, "s", "eth5")
	tags, fields := wait(t, acc)
	// RFC 2576: ENTERPRISE.0.SPECIFIC, named by the closest node with the rest appended.
	require.Equal(t, map[string]string{"version": "1", "source": "127.0.0.1", "community": "public", "agent_address": "10.1.2.3",
		"oid": testserver.SnmpdTestMIB + ".3.0.1", "name": "mtNotifications.0.1", "mib": "MORSE-TEST-MIB"}, tags)
	require.Equal(t, map[string]any{"sysUpTimeInstance": uint64(77), "mtIfDescr.5": "eth5"}, fields)
}

func TestV3Trap(t *testing.T) {
	for _, u := range testserver.SnmpdUsers[1:] {
		t.Run(u.Name, func(t *testing.T) {
			s := New()
			s.Version, s.SecLevel, s.AuthProtocol, s.PrivProtocol = "3", u.Level, u.Auth, u.Priv
			s.SecName, s.AuthPassword, s.PrivPassword = secret(u.Name), secret(u.AuthPass), secret(u.PrivPass)
			acc, addr := listen(t, s)
			args := []string{"-v3", "-u", u.Name, "-l", u.Level, "-e", "0x8000000001020304", "-E", "0x8000000001020304", "-a", netsnmp(u.Auth), "-A", u.AuthPass}
			if u.Priv != "" {
				args = append(args, "-x", netsnmp(u.Priv), "-X", u.PrivPass)
			}
			send(t, args, addr, "5", linkDown, status5, "i", "1")
			tags, fields := wait(t, acc)
			require.Equal(t, "3", tags["version"])
			require.Equal(t, "mtLinkDown", tags["name"])
			require.Equal(t, "8000000001020304", tags["engine_id"])
			require.NotContains(t, tags, "community")
			require.Equal(t, int64(1), fields["mtIfOperStatus.5"])
		})
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	s := New()
	s.Version, s.ServiceAddress = "4", "tcp://:162"
	err := s.Validate()
	require.ErrorContains(t, err, "version:")
	require.ErrorContains(t, err, "service_address:")
	s = New()
	s.Version, s.AuthProtocol = "3", "md4"
	require.ErrorContains(t, s.Validate(), "auth_protocol:")
	require.NoError(t, New().Validate())
}

func secret(s string) morse.Secret { return morse.Secret(s) }

// netsnmp spells a protocol as snmptrap's -a and -x take it.
func netsnmp(p string) string {
	switch p {
	case "SHA224", "SHA256", "SHA384", "SHA512":
		return "SHA-" + p[3:]
	case "AES192", "AES256":
		return "AES-" + p[3:]
	}
	return p
}
