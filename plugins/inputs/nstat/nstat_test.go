package nstat

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

const netstatFile = `TcpExt: SyncookiesSent SyncookiesRecv TW
TcpExt: 0 3 17
IpExt: InNoRoutes InOctets
IpExt: 0 251399988
`

const snmpFile = `Ip: Forwarding DefaultTTL InReceives
Ip: 2 64 13950
IcmpMsg: InType3
IcmpMsg: 1
Tcp: RtoAlgorithm MaxConn
Tcp: 1 -1
`

const snmp6File = `Ip6InReceives                   	13
Ip6InHdrErrors                  	0
Icmp6OutType133                 	2
`

func fixture(t *testing.T, files map[string]string) string {
	root := t.TempDir()
	for name, body := range files {
		path := filepath.Join(root, "net", name)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
	}
	return root
}

// withRoot makes the plugin read its files below root through $PROC_ROOT.
func withRoot(n *Nstat, root string) *Nstat {
	n.getenv = func(k string) string {
		if k == "PROC_ROOT" {
			return root
		}
		return ""
	}
	return n
}

func byName(t *testing.T, n *Nstat) map[string]map[string]any {
	t.Helper()
	acc := &testutil.Accumulator{}
	require.NoError(t, n.Gather(context.Background(), acc))
	out := map[string]map[string]any{}
	for _, m := range acc.Metrics() {
		require.Equal(t, "nstat", m.Name())
		name, _ := m.Tag("name")
		out[name] = testutil.FieldsOf(m)
	}
	return out
}

func TestRegisteredWithTelegrafDefaults(t *testing.T) {
	info, ok := morse.DefaultRegistry().Input("nstat")
	require.True(t, ok)
	require.Equal(t, Description, info.Description)
	require.True(t, strings.HasPrefix(info.SampleConfig, "# "+Description+"\n[[inputs.nstat]]\n"))
	n, ok := info.New().(*Nstat)
	require.True(t, ok)
	require.False(t, n.DumpZeros)
	option := regexp.MustCompile(`(?m)^\s*# (\w+ = .*)$`)
	body := option.ReplaceAllString(info.SampleConfig[strings.Index(info.SampleConfig, "]]\n")+3:], "$1")
	fresh := New()
	md, err := toml.Decode(body, fresh)
	require.NoError(t, err)
	require.Empty(t, md.Undecoded())
	require.Equal(t, New(), fresh, "the sample shows the defaults")
}

func TestTables(t *testing.T) {
	root := fixture(t, map[string]string{"netstat": netstatFile, "snmp": snmpFile, "snmp6": snmp6File})
	tests := []struct {
		dumpZeros bool
		want      map[string]map[string]any
	}{
		{dumpZeros: false, want: map[string]map[string]any{
			"netstat": {"TcpExtSyncookiesRecv": int64(3), "TcpExtTW": int64(17), "IpExtInOctets": int64(251399988)},
			"snmp": {"IpForwarding": int64(2), "IpDefaultTTL": int64(64), "IpInReceives": int64(13950),
				"IcmpMsgInType3": int64(1), "TcpRtoAlgorithm": int64(1), "TcpMaxConn": int64(-1)},
			"snmp6": {"Ip6InReceives": int64(13), "Icmp6OutType133": int64(2)},
		}},
		{dumpZeros: true, want: map[string]map[string]any{
			"netstat": {"TcpExtSyncookiesSent": int64(0), "TcpExtSyncookiesRecv": int64(3), "TcpExtTW": int64(17),
				"IpExtInNoRoutes": int64(0), "IpExtInOctets": int64(251399988)},
			"snmp": {"IpForwarding": int64(2), "IpDefaultTTL": int64(64), "IpInReceives": int64(13950),
				"IcmpMsgInType3": int64(1), "TcpRtoAlgorithm": int64(1), "TcpMaxConn": int64(-1)},
			"snmp6": {"Ip6InReceives": int64(13), "Ip6InHdrErrors": int64(0), "Icmp6OutType133": int64(2)},
		}},
	}
	for _, tt := range tests {
		n := withRoot(&Nstat{DumpZeros: tt.dumpZeros}, root)
		require.Equal(t, tt.want, byName(t, n), "dump_zeros=%v", tt.dumpZeros)
	}
}

func TestPaths(t *testing.T) {
	root := fixture(t, map[string]string{"netstat": netstatFile, "snmp": snmpFile})
	// Without snmp6 (IPv6 disabled) the other two are still reported.
	got := byName(t, withRoot(New(), root))
	require.Len(t, got, 2)

	// A configured path wins over the environment.
	other := fixture(t, map[string]string{"snmp": "Udp: InDatagrams\nUdp: 5\n"})
	n := withRoot(&Nstat{ProcNetSNMP: filepath.Join(other, "net", "snmp")}, root)
	require.Equal(t, map[string]any{"UdpInDatagrams": int64(5)}, byName(t, n)["snmp"])

	// Without netstat the gather fails, as in Telegraf.
	n = withRoot(New(), fixture(t, map[string]string{"snmp": snmpFile}))
	require.Error(t, n.Gather(context.Background(), &testutil.Accumulator{}))
}

func TestMalformed(t *testing.T) {
	for name, files := range map[string]map[string]string{
		"names without values": {"netstat": "TcpExt: A B\n", "snmp": snmpFile},
		"values do not match":  {"netstat": "TcpExt: A B\nTcpExt: 1\n", "snmp": snmpFile},
		"snmp6 odd":            {"netstat": netstatFile, "snmp": snmpFile, "snmp6": "Ip6InReceives 1\nIp6Odd\n"},
	} {
		t.Run(name, func(t *testing.T) {
			n := withRoot(New(), fixture(t, files))
			require.Error(t, n.Gather(context.Background(), &testutil.Accumulator{}), "an error, never a panic")
		})
	}
	// A value that is not an integer is left out, as in Telegraf.
	n := withRoot(New(), fixture(t, map[string]string{"netstat": "TcpExt: A B\nTcpExt: x 2\n", "snmp": snmpFile}))
	require.Equal(t, map[string]any{"TcpExtB": int64(2)}, byName(t, n)["netstat"])
}

var icmpType = regexp.MustCompile(`^(IcmpMsg(In|Out)Type|Icmp6(In|Out)Type)\d+$`)

// prefixes of each file's counters, longest first so that IpExt is not taken for Ip.
var prefixes = map[string][]string{
	"netstat": {"MPTcpExt", "TcpExt", "IpExt"},
	"snmp":    {"IcmpMsg", "UdpLite", "Icmp", "Tcp", "Udp", "Ip"},
	"snmp6":   {"UdpLite6", "Icmp6", "Udp6", "Ip6"},
}

func TestGoldenRealGather(t *testing.T) {
	shapes := testutil.LoadGolden(t, "testdata/nstat.golden")
	ms := testutil.GatherReal(t, New(), shapes.Config, 1)
	require.Len(t, ms, 3)

	var all []morse.Field
	for _, m := range ms {
		name, _ := m.Tag("name")
		for _, f := range m.Fields() {
			require.Truef(t, hasAnyPrefix(f.Key, prefixes[name]), "%s is a counter of the %s file", f.Key, name)
			if icmpType.MatchString(f.Key) {
				require.Equal(t, morse.TypeInt, f.Value.Type(), f.Key)
				continue
			}
			all = append(all, f)
		}
	}
	merged := ms[0].WithFields(all)
	require.Empty(t, shapes.Check([]morse.Metric{merged}))
	require.Equal(t, []string{"nstat: field TcpExtTCPPrequeued: emitted but marked absent-here"},
		shapes.Check([]morse.Metric{merged.WithField("TcpExtTCPPrequeued", morse.Int(0))}))
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
