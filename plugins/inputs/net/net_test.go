package net

import (
	"context"
	"errors"
	stdnet "net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	psnet "github.com/shirou/gopsutil/v4/net"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

func fake(t *testing.T) Source {
	sys := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(sys, "class", "net", "eth0"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(sys, "class", "net", "eth0", "speed"), []byte("10000\n"), 0o644))
	return Source{
		IOCounters: func(context.Context, bool) ([]psnet.IOCountersStat, error) {
			return []psnet.IOCountersStat{
				{Name: "lo", BytesSent: 1},
				{Name: "eth0", BytesSent: 1, BytesRecv: 2, PacketsSent: 3, PacketsRecv: 4, Errin: 5, Errout: 6, Dropin: 7, Dropout: 8, Fifoin: 9},
				{Name: "eth1"},
				{Name: "docker0"},
				{Name: "gone0"},
			}, nil
		},
		Protocols: func(context.Context, []string) ([]psnet.ProtoCountersStat, error) {
			return []psnet.ProtoCountersStat{
				{Protocol: "tcp", Stats: map[string]int64{"ActiveOpens": 11, "MaxConn": -1}},
				{Protocol: "udp", Stats: map[string]int64{"InDatagrams": 12}},
			}, nil
		},
		Interfaces: func() ([]stdnet.Interface, error) {
			return []stdnet.Interface{
				{Name: "lo", Flags: stdnet.FlagUp | stdnet.FlagLoopback},
				{Name: "eth0", Flags: stdnet.FlagUp},
				{Name: "eth1"},
				{Name: "docker0", Flags: stdnet.FlagUp},
			}, nil
		},
		SysDir: sys,
	}
}

func fieldsOf(m morse.Metric) map[string]any {
	out := map[string]any{}
	for _, f := range m.Fields() {
		out[f.Key] = f.Value.Interface()
	}
	return out
}

func names(ms []morse.Metric) []string {
	var out []string
	for _, m := range ms {
		i, _ := m.Tag("interface")
		out = append(out, i)
	}
	return out
}

func gather(t *testing.T, n *Net) []morse.Metric {
	t.Helper()
	require.NoError(t, n.Validate())
	acc := &testutil.Accumulator{}
	require.NoError(t, n.Gather(context.Background(), acc))
	require.Empty(t, acc.Errors())
	return acc.Metrics()
}

func TestRegisteredWithTelegrafDefaults(t *testing.T) {
	info, ok := morse.DefaultRegistry().Input("net")
	require.True(t, ok)
	require.Equal(t, Description, info.Description)
	require.True(t, strings.HasPrefix(info.SampleConfig, "# "+Description+"\n[[inputs.net]]\n"))
	n, ok := info.New().(*Net)
	require.True(t, ok)
	require.Empty(t, n.Interfaces)
	require.False(t, n.IgnoreProtocolStats)
	option := regexp.MustCompile(`(?m)^\s*# (\w+ = .*)$`)
	body := option.ReplaceAllString(info.SampleConfig[strings.Index(info.SampleConfig, "]]\n")+3:], "$1")
	md, err := toml.Decode(body, New())
	require.NoError(t, err)
	require.Empty(t, md.Undecoded())
}

func TestSelection(t *testing.T) {
	tests := []struct {
		name       string
		interfaces []string
		want       []string
	}{
		{name: "default: up, not loopback, known", want: []string{"eth0", "docker0", "all"}},
		{name: "globs, whatever the state", interfaces: []string{"eth*", "lo", "gone[0-9]"}, want: []string{"lo", "eth0", "eth1", "gone0", "all"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := &Net{Interfaces: tt.interfaces, Source: fake(t)}
			require.Equal(t, tt.want, names(gather(t, n)))
		})
	}
	require.ErrorContains(t, (&Net{Interfaces: []string{"eth["}}).Validate(), `interfaces: invalid pattern "eth["`)
}

func TestFields(t *testing.T) {
	ms := gather(t, &Net{Source: fake(t)})
	require.Equal(t, map[string]any{"bytes_sent": int64(1), "bytes_recv": int64(2), "packets_sent": int64(3),
		"packets_recv": int64(4), "err_in": int64(5), "err_out": int64(6), "drop_in": int64(7), "drop_out": int64(8),
		"speed": int64(10000)}, fieldsOf(ms[0]))
	require.Equal(t, int64(-1), fieldsOf(ms[1])["speed"], "no speed file: -1, as Telegraf reports it")
	require.Equal(t, map[string]any{"tcp_activeopens": int64(11), "tcp_maxconn": int64(-1), "udp_indatagrams": int64(12)},
		fieldsOf(ms[2]))
}

func TestProtocolStats(t *testing.T) {
	n := &Net{IgnoreProtocolStats: true, Source: fake(t)}
	require.Equal(t, []string{"eth0", "docker0"}, names(gather(t, n)))

	// A failure to read the protocol counters is ignored, as in Telegraf.
	n = &Net{Source: fake(t)}
	n.Source.Protocols = func(context.Context, []string) ([]psnet.ProtoCountersStat, error) { return nil, errors.New("no snmp") }
	require.Equal(t, []string{"eth0", "docker0"}, names(gather(t, n)))

	n = &Net{Source: fake(t)}
	n.Source.IOCounters = func(context.Context, bool) ([]psnet.IOCountersStat, error) { return nil, errors.New("no dev") }
	require.ErrorContains(t, n.Gather(context.Background(), &testutil.Accumulator{}), "error getting net io info: no dev")
}

var icmpMsg = regexp.MustCompile(`^icmpmsg_(in|out)type\d+$`)

// interfaceKeys are the fields of an interface series.
var interfaceKeys = []string{"bytes_sent", "bytes_recv", "packets_sent", "packets_recv", "err_in", "err_out", "drop_in", "drop_out", "speed"}

func TestGoldenRealGather(t *testing.T) {
	shapes, err := testutil.LoadShapes("../../../testdata/inputs/net.golden")
	require.NoError(t, err)
	n := New()
	md, err := toml.Decode(shapes.Config, n)
	require.NoError(t, err)
	require.Empty(t, md.Undecoded(), "the golden config uses Telegraf's option names")
	ms := gather(t, n)
	require.GreaterOrEqual(t, len(ms), 2, "at least one interface and the protocol counters")

	all := ms[len(ms)-1]
	require.Equal(t, "all", names(ms)[len(ms)-1])
	var protocol []morse.Field
	for _, f := range all.Fields() {
		require.NotContains(t, interfaceKeys, f.Key, "interface fields are not on interface=all")
		if icmpMsg.MatchString(f.Key) {
			require.Equal(t, morse.TypeInt, f.Value.Type(), f.Key)
			continue
		}
		protocol = append(protocol, f)
	}
	var merged morse.Metric
	for _, m := range ms[:len(ms)-1] {
		require.Len(t, m.Fields(), len(interfaceKeys), "no protocol fields on %v", m.Tags())
		merged = m.WithFields(append(append([]morse.Field(nil), m.Fields()...), protocol...))
		require.Empty(t, shapes.Check([]morse.Metric{merged}))
	}
	require.Equal(t, []string{"net: field speed: type float, golden says integer"},
		shapes.Check([]morse.Metric{merged.WithField("speed", morse.Float(1))}))
	require.Equal(t, []string{"net: field tcp_currestab: missing"},
		shapes.Check([]morse.Metric{without(merged, "tcp_currestab")}))
}

// without returns m minus one field, to show that a missing field is caught.
func without(m morse.Metric, key string) morse.Metric {
	var fs []morse.Field
	for _, f := range m.Fields() {
		if f.Key != key {
			fs = append(fs, f)
		}
	}
	return m.WithFields(fs)
}
