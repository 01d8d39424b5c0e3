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
		Interfaces: func() ([]stdnet.Interface, error) {
			return []stdnet.Interface{
				{Name: "lo", Flags: stdnet.FlagUp | stdnet.FlagLoopback},
				{Name: "eth0", Flags: stdnet.FlagUp},
				{Name: "eth1"},
				{Name: "docker0", Flags: stdnet.FlagUp},
			}, nil
		},
		SysDir: sys,
		Getenv: func(string) string { return "" },
	}
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
	require.Nil(t, n.IgnoreProtocolStats)
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
		hostProc   string
		want       []string
	}{
		{name: "default: up, not loopback, known", want: []string{"eth0", "docker0"}},
		{name: "globs, whatever the state", interfaces: []string{"eth*", "lo", "gone[0-9]"}, want: []string{"lo", "eth0", "eth1", "gone0"}},
		{name: "HOST_PROC: no checks against the local interface list", hostProc: "/hostfs/proc",
			want: []string{"lo", "eth0", "eth1", "docker0", "gone0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := &Net{Interfaces: tt.interfaces, Source: fake(t)}
			n.Source.Getenv = func(k string) string {
				if k == "HOST_PROC" {
					return tt.hostProc
				}
				return ""
			}
			require.Equal(t, tt.want, names(gather(t, n)))
		})
	}
	require.ErrorContains(t, (&Net{Interfaces: []string{"eth["}}).Validate(), `interfaces: invalid pattern "eth["`)
}

func TestFields(t *testing.T) {
	ms := gather(t, &Net{Source: fake(t)})
	require.Len(t, ms, 2, "no protocol statistics (interface=all), as in Telegraf 1.37 and later")
	require.Equal(t, map[string]any{"bytes_sent": uint64(1), "bytes_recv": uint64(2), "packets_sent": uint64(3),
		"packets_recv": uint64(4), "err_in": uint64(5), "err_out": uint64(6), "drop_in": uint64(7), "drop_out": uint64(8),
		"speed": int64(10000)}, testutil.FieldsOf(ms[0]))
	require.Equal(t, int64(-1), testutil.FieldsOf(ms[1])["speed"], "no speed file: -1, as Telegraf reports it")

	n := &Net{Source: fake(t)}
	n.Source.IOCounters = func(context.Context, bool) ([]psnet.IOCountersStat, error) { return nil, errors.New("no dev") }
	require.ErrorContains(t, n.Gather(context.Background(), &testutil.Accumulator{}), "error getting net io info: no dev")
}

func TestIgnoreProtocolStatsWarnsOnceAndChangesNothing(t *testing.T) {
	for _, value := range []string{"true", "false"} {
		t.Run(value, func(t *testing.T) {
			n := &Net{Source: fake(t)}
			_, err := toml.Decode("ignore_protocol_stats = "+value, n)
			require.NoError(t, err)
			var logs testutil.Logs
			n.SetLogger(logs.Logger())
			require.NoError(t, n.Init())
			require.Equal(t, []string{"ignore_protocol_stats has no effect: protocol statistics are not reported by inputs.net " +
				"(as in Telegraf 1.37 and later); use inputs.nstat for them"}, logs.Warnings())
			require.Equal(t, []string{"eth0", "docker0"}, names(gather(t, n)))
			require.Equal(t, []string{"eth0", "docker0"}, names(gather(t, n)))
			require.Len(t, logs.Warnings(), 1, "once, at start")
		})
	}
	var logs testutil.Logs
	n := New()
	n.SetLogger(logs.Logger())
	require.NoError(t, n.Init())
	require.Empty(t, logs.All(), "no warning without the key")
}

func TestGoldenRealGather(t *testing.T) {
	const path = "testdata/net.golden"
	ms := testutil.CheckGolden(t, path, func() morse.Input { return New() }, 1)
	shapes := testutil.LoadGolden(t, path)
	for _, m := range ms {
		i, _ := m.Tag("interface")
		require.NotEqual(t, "all", i, "no protocol statistics")
	}
	require.Equal(t, []string{"net: field speed: type float, golden says integer"},
		shapes.Check([]morse.Metric{ms[0].WithField("speed", morse.Float(1))}))
	require.Equal(t, []string{"net: field tcp_activeopens: emitted but not in the golden list"},
		shapes.Check([]morse.Metric{ms[0].WithField("tcp_activeopens", morse.Int(1))}))
}
