package snmp

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/gosnmp/gosnmp"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/plugins/common/snmp"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testserver.StopSharedSnmpd()
	os.Exit(code)
}

// build decodes conf (Telegraf's option names; every key taken) after agents and path
// that point at the shared snmpd and its MIBs, and initializes the plugin.
func build(t testing.TB, conf string) *Snmp {
	t.Helper()
	d := testserver.SharedSnmpd(t)
	s := New()
	full := fmt.Sprintf("agents = [%q]\npath = [%q, \"/usr/share/snmp/mibs\"]\ntimeout = \"2s\"\nretries = 1\n%s", d.Addr, d.MIBDir, conf)
	md, err := toml.Decode(full, s)
	require.NoError(t, err)
	require.Empty(t, md.Undecoded(), "Telegraf's option names")
	s.SetLogger(slog.New(slog.DiscardHandler))
	require.NoError(t, s.Init())
	return s
}

func gather(t testing.TB, s *Snmp) *testutil.Accumulator {
	t.Helper()
	acc := &testutil.Accumulator{}
	require.NoError(t, s.Gather(testutil.Context(t), acc))
	return acc
}

// byTag indexes metrics by the value of one tag.
func byTag(t *testing.T, ms []morse.Metric, key string) map[string]morse.Metric {
	t.Helper()
	out := map[string]morse.Metric{}
	for _, m := range ms {
		v, ok := m.Tag(key)
		require.True(t, ok, "tag %s on %v", key, m)
		out[v] = m
	}
	return out
}

// TestTableByMIBNames walks MORSE-TEST-MIB::mtIfTable by name: every column the MIB
// defines, the INDEX column as a tag, the conversions the MIB's types imply (DISPLAY-HINTs),
// the top-level tag inherited, and Telegraf's field types.
func TestTableByMIBNames(t *testing.T) {
	s := build(t, `
[[field]]
  oid = "MORSE-TEST-MIB::mtSysName.0"
  name = "sysName"
  is_tag = true
[[table]]
  oid = "MORSE-TEST-MIB::mtIfTable"
  inherit_tags = ["sysName"]
`)
	acc := gather(t, s)
	require.Empty(t, acc.Errors())
	require.Len(t, acc.MetricsNamed("snmp"), 1)
	top := acc.MetricsNamed("snmp")[0]
	require.Equal(t, map[string]string{"sysName": testserver.SnmpdSysNameValue, "agent_host": "127.0.0.1"}, testutil.TagsOf(top))
	rows := byTag(t, acc.MetricsNamed("mtIfTable"), "mtIfIndex")
	require.Len(t, rows, testserver.SnmpdRows)
	m := rows["700"]
	require.Equal(t, map[string]string{"mtIfIndex": "700", "sysName": testserver.SnmpdSysNameValue, "agent_host": "127.0.0.1"}, testutil.TagsOf(m))
	want := testserver.SnmpdIf(700)
	require.Equal(t, map[string]any{
		"mtIfDescr":       "eth700",              // DisplayString: displayhint 255a
		"mtIfType":        int64(24),             // INTEGER enum: no hint, Telegraf's int64
		"mtIfSpeed":       uint64(want.Speed),    // Gauge32
		"mtIfInOctets":    uint64(want.InOctets), // Counter32
		"mtIfLastChange":  uint64(want.LastChange),
		"mtIfAddress":     "0a0002bc",          // OCTET STRING, not valid UTF-8: hex
		"mtIfPhysAddress": "02:00:00:00:02:bc", // PhysAddress: displayhint 1x:
		"mtIfOperStatus":  int64(2),
		"mtIfTemperature": "20.0", // MtTenths: displayhint d-1
		"mtIfLoad":        "7.00",
	}, testutil.FieldsOf(m))
}

// TestConversions reads numeric OIDs with each conversion Telegraf offers.
func TestConversions(t *testing.T) {
	e := testserver.SnmpdIfEntry
	s := build(t, fmt.Sprintf(`
[[table]]
  name = "conv"
  index_as_tag = true
  [[table.field]]
    oid = "%[1]s.2"
    name = "descr"
    is_tag = true
  [[table.field]]
    oid = "%[1]s.8"
    name = "hwaddr"
    conversion = "hwaddr"
  [[table.field]]
    oid = "%[1]s.7"
    name = "ipaddr"
    conversion = "ipaddr"
  [[table.field]]
    oid = "%[1]s.7"
    name = "hex"
    conversion = "hex"
  [[table.field]]
    oid = "%[1]s.10"
    name = "tenths"
    conversion = "float(1)"
  [[table.field]]
    oid = "%[1]s.11"
    name = "load"
    conversion = "float"
  [[table.field]]
    oid = "%[1]s.5"
    name = "octets"
    conversion = "int"
  [[table.field]]
    oid = "%[1]s.3"
    name = "type"
    conversion = "enum"
  [[table.field]]
    oid = "%[1]s.9"
    name = "status"
    conversion = "enum(1)"
  [[table.field]]
    oid = "%[1]s.10"
    name = "hinted"
    conversion = "displayhint"
  [[table.field]]
    oid = "%[1]s.7"
    name = "addr_int"
    conversion = "hextoint:BigEndian:uint32"
`, e))
	acc := gather(t, s)
	require.Empty(t, acc.Errors())
	rows := byTag(t, acc.MetricsNamed("conv"), "index")
	require.Len(t, rows, testserver.SnmpdRows)
	m := rows["301"]
	require.Equal(t, map[string]string{"index": "301", "descr": "eth301", "agent_host": "127.0.0.1"}, testutil.TagsOf(m))
	require.Equal(t, map[string]any{
		"hwaddr": "02:00:00:00:01:2d", "ipaddr": "10.0.1.45", "hex": "0a00012d",
		"tenths": 20.1, "load": 3.01, "octets": int64(301000),
		"type": "ethernetCsmacd", "status": "up(1)", "hinted": "20.1", "addr_int": uint64(0x0a00012d),
	}, testutil.FieldsOf(m))
}

// TestVersionsAndUsers reads the scalar and walks the port table over v1, v2c and as
// every v3 user (each authentication and privacy protocol pair snmpd was given).
func TestVersionsAndUsers(t *testing.T) {
	conf := func(extra string) string {
		return extra + fmt.Sprintf(`
[[field]]
  oid = "%s"
  name = "sysName"
  is_tag = true
[[table]]
  name = "port"
  inherit_tags = ["sysName"]
  [[table.field]]
    oid = "%s.3"
    name = "name"
`, testserver.SnmpdSysName, testserver.SnmpdPortEntry)
	}
	cases := map[string]string{"v1": "version = 1\n", "v2c": "version = 2\n"}
	for _, u := range testserver.SnmpdUsers {
		cases["v3 "+u.Name] = fmt.Sprintf("version = 3\nsec_name = %q\nsec_level = %q\nauth_protocol = %q\nauth_password = %q\npriv_protocol = %q\npriv_password = %q\n",
			u.Name, u.Level, u.Auth, u.AuthPass, u.Priv, u.PrivPass)
	}
	for name, extra := range cases {
		t.Run(name, func(t *testing.T) {
			acc := gather(t, build(t, conf(extra)))
			require.Empty(t, acc.Errors())
			ports := acc.MetricsNamed("port")
			require.Len(t, ports, testserver.SnmpdPorts)
			for _, m := range ports {
				tag, _ := m.Tag("sysName")
				require.Equal(t, testserver.SnmpdSysNameValue, tag)
			}
			require.Equal(t, "port1", testutil.FieldsOf(ports[0])["name"], "rows in index order")
		})
	}
}

// TestWrongCredentials: each gather reports a clear error naming the agent and the option.
func TestWrongCredentials(t *testing.T) {
	u := testserver.SnmpdUsers[3]
	for conf, want := range map[string]string{
		fmt.Sprintf("version = 3\nsec_name = %q\nsec_level = \"authPriv\"\nauth_protocol = %q\nauth_password = \"wrong-password\"\npriv_protocol = %q\npriv_password = %q\n", u.Name, u.Auth, u.Priv, u.PrivPass): "wrong digest (auth_protocol, auth_password)",
		"version = 3\nsec_name = \"nobody\"\nsec_level = \"noAuthNoPriv\"\n": "unknown username (sec_name)",
	} {
		s := build(t, conf+fmt.Sprintf("[[field]]\n  oid = %q\n  name = \"x\"\n", testserver.SnmpdSysName))
		acc := gather(t, s)
		require.Len(t, acc.Errors(), 1)
		require.ErrorContains(t, acc.Errors()[0], want)
		require.ErrorContains(t, acc.Errors()[0], "agent "+s.Agents[0])
	}
}

// blackhole is a UDP socket that reads and never answers: an agent that is down without
// the kernel saying so (snmpd cannot be made to stay silent).
func blackhole(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { pc.Close() })
	return pc.LocalAddr().String()
}

// TestDeadAgentsDoNotStallTheOthers: four silent agents each time out (1s, no retry)
// at the same time as the live one is read; the gather ends well before the four timeouts
// in a row would.
func TestDeadAgentsDoNotStallTheOthers(t *testing.T) {
	s := build(t, fmt.Sprintf("[[table]]\n  name = \"port\"\n  [[table.field]]\n    oid = \"%s.3\"\n    name = \"name\"\n", testserver.SnmpdPortEntry))
	live := s.Agents[0]
	s.Agents = []string{blackhole(t), live, blackhole(t), blackhole(t), blackhole(t)}
	s.Timeout, s.Retries = morse.Duration(time.Second), 0
	s.ready = false
	require.NoError(t, s.Init())
	start := time.Now()
	acc := gather(t, s)
	require.Less(t, time.Since(start), 3*time.Second, "the agents are read concurrently")
	require.Len(t, acc.MetricsNamed("port"), testserver.SnmpdPorts)
	require.Len(t, acc.Errors(), 4)
	for _, err := range acc.Errors() {
		require.ErrorContains(t, err, "request timeout")
	}
}

// TestSecondaryIndexJoin joins the interface table's mtIfDescr to the ports that point to
// it, with and without the outer join.
func TestSecondaryIndexJoin(t *testing.T) {
	conf := func(outer bool) string {
		return fmt.Sprintf(`
[[table]]
  name = "port"
  index_as_tag = true
  [[table.field]]
    oid = "%[1]s.2"
    name = "ifIndex"
    secondary_index_table = true
    secondary_outer_join = %[3]v
  [[table.field]]
    oid = "%[1]s.3"
    name = "name"
    is_tag = true
  [[table.field]]
    oid = "%[2]s.2"
    name = "ifDescr"
    secondary_index_use = true
`, testserver.SnmpdPortEntry, testserver.SnmpdIfEntry, outer)
	}
	rows := byTag(t, gather(t, build(t, conf(false))).MetricsNamed("port"), "index")
	require.Len(t, rows, testserver.SnmpdPorts)
	for p := 1; p <= testserver.SnmpdPorts; p++ {
		m := rows[strconv.Itoa(p)]
		require.Equal(t, "port"+strconv.Itoa(p), testutil.TagsOf(m)["name"])
		require.Equal(t, map[string]any{"ifIndex": int64(testserver.SnmpdPortIf(p)), "ifDescr": fmt.Sprintf("eth%d", testserver.SnmpdPortIf(p))}, testutil.FieldsOf(m))
	}
	rows = byTag(t, gather(t, build(t, conf(true))).MetricsNamed("port"), "index")
	require.Len(t, rows, testserver.SnmpdRows, "10 joined rows and 990 interfaces no port points to")
	require.Equal(t, map[string]any{"ifDescr": "eth3"}, testutil.FieldsOf(rows["Secondary.3"]))
}

// TestIndexSuffixAndLength: oid_index_suffix keeps the answers ending in it, without it;
// oid_index_length keeps the first sub-identifiers, a later answer replacing an earlier.
func TestIndexSuffixAndLength(t *testing.T) {
	s := build(t, fmt.Sprintf(`
[[table]]
  name = "suffix"
  index_as_tag = true
  [[table.field]]
    oid = "%[1]s"
    name = "v"
    oid_index_suffix = ".5"
[[table]]
  name = "length"
  index_as_tag = true
  [[table.field]]
    oid = "%[1]s"
    name = "v"
    oid_index_length = 1
`, testserver.SnmpdIfEntry))
	acc := gather(t, s)
	require.Empty(t, acc.Errors())
	suffix := byTag(t, acc.MetricsNamed("suffix"), "index")
	require.Len(t, suffix, 11, "one row per column: .COLUMN.5")
	require.Equal(t, "eth5", testutil.FieldsOf(suffix["2"])["v"])
	length := byTag(t, acc.MetricsNamed("length"), "index")
	require.Len(t, length, 11)
	require.Equal(t, "eth1000", testutil.FieldsOf(length["2"])["v"])
}

// TestValidateReportsEveryProblem names each bad option.
func TestValidateReportsEveryProblem(t *testing.T) {
	s := New()
	s.Version, s.SecLevel, s.AuthProtocol, s.PrivProtocol = 4, "some", "md4", "rc4"
	s.Agents = []string{"sctp://host"}
	s.Tables = []snmp.Table{{}}
	err := s.Validate()
	for _, key := range []string{"version:", "sec_level:", "auth_protocol:", "priv_protocol:", "agents:", "table[0]:"} {
		require.ErrorContains(t, err, key)
	}
	require.NoError(t, New().Validate())
}

// TestBigTableStreams: the rows of the 1,000-row table reach the accumulator while the
// walk goes on, the first after the first request, so the plugin never holds the table.
func TestBigTableStreams(t *testing.T) {
	s := build(t, fmt.Sprintf("[[table]]\n  name = \"if\"\n  [[table.field]]\n    oid = \"%[1]s.2\"\n    name = \"descr\"\n  [[table.field]]\n    oid = \"%[1]s.5\"\n    name = \"octets\"\n", testserver.SnmpdIfEntry))
	acc := &countingAcc{Accumulator: &testutil.Accumulator{}}
	ctx := testutil.Context(t)
	gs, err := s.connection(ctx, 0)
	require.NoError(t, err)
	gs.OnSent = func(*gosnmp.GoSNMP) { acc.sent++ }
	require.NoError(t, s.Gather(ctx, acc))
	require.Equal(t, testserver.SnmpdRows, acc.NMetrics())
	require.Equal(t, 1, acc.sentAtFirst, "the first rows are emitted after the first request")
	require.Greater(t, acc.sent, 50, "1,000 rows take many requests of max_repetitions = 10")
}

// countingAcc notes how many requests were sent when the first metric arrived.
type countingAcc struct {
	*testutil.Accumulator
	sent, sentAtFirst int
}

func (c *countingAcc) AddMetric(m morse.Metric) {
	if c.NMetrics() == 0 {
		c.sentAtFirst = c.sent
	}
	c.Accumulator.AddMetric(m)
}
