package netstat

import (
	"context"
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"

	psnet "github.com/shirou/gopsutil/v4/net"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

func gather(t *testing.T, n *Netstat) map[string]any {
	t.Helper()
	acc := &testutil.Accumulator{}
	require.NoError(t, n.Gather(context.Background(), acc))
	ms := acc.Metrics()
	require.Len(t, ms, 1)
	require.Equal(t, "netstat", ms[0].Name())
	require.Empty(t, ms[0].Tags())
	return testutil.FieldsOf(ms[0])
}

func TestRegistered(t *testing.T) {
	info, ok := morse.DefaultRegistry().Input("netstat")
	require.True(t, ok)
	require.Equal(t, Description, info.Description)
	require.True(t, strings.HasPrefix(info.SampleConfig, "# "+Description+"\n[[inputs.netstat]]\n"))
}

func TestCounts(t *testing.T) {
	stream := func(status string) psnet.ConnectionStat {
		return psnet.ConnectionStat{Type: syscall.SOCK_STREAM, Status: status}
	}
	conns := []psnet.ConnectionStat{
		stream("ESTABLISHED"), stream("ESTABLISHED"), stream("LISTEN"), stream("TIME_WAIT"),
		stream("NONE"), stream("SYN_SENT"), stream("SYN_RECV"), stream("FIN_WAIT1"), stream("FIN_WAIT2"),
		stream("CLOSE"), stream("CLOSE_WAIT"), stream("LAST_ACK"), stream("CLOSING"),
		stream("NEW_SYN_RECV"), // a state Telegraf has no field for: not counted anywhere
		{Type: syscall.SOCK_DGRAM, Status: "NONE"}, {Type: syscall.SOCK_DGRAM, Family: syscall.AF_UNIX},
	}
	n := &Netstat{Connections: func(_ context.Context, kind string) ([]psnet.ConnectionStat, error) {
		require.Equal(t, "all", kind)
		return conns, nil
	}}
	require.Equal(t, map[string]any{
		"tcp_established": int64(2), "tcp_syn_sent": int64(1), "tcp_syn_recv": int64(1), "tcp_fin_wait1": int64(1),
		"tcp_fin_wait2": int64(1), "tcp_time_wait": int64(1), "tcp_close": int64(1), "tcp_close_wait": int64(1),
		"tcp_last_ack": int64(1), "tcp_listen": int64(1), "tcp_closing": int64(1), "tcp_none": int64(1),
		"udp_socket": int64(2),
	}, gather(t, n))

	n.Connections = func(context.Context, string) ([]psnet.ConnectionStat, error) { return nil, nil }
	for k, v := range gather(t, n) {
		require.Equal(t, int64(0), v, "%s is reported as zero", k)
	}
	n.Connections = func(context.Context, string) ([]psnet.ConnectionStat, error) { return nil, errors.New("no /proc/net") }
	require.ErrorContains(t, n.Gather(context.Background(), &testutil.Accumulator{}), "error getting net connections info: no /proc/net")
}

func TestGoldenRealGather(t *testing.T) {
	const path = "testdata/netstat.golden"
	shapes := testutil.LoadGolden(t, path)
	require.Empty(t, shapes.Config)

	// A listener and a UDP socket of our own make those counts real.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { pc.Close() })

	ms := testutil.CheckGolden(t, path, func() morse.Input { return New() }, 1)
	require.Len(t, ms, 1)
	require.Equal(t, []string{"netstat: field tcp_new_syn_recv: emitted but not in the golden list"},
		shapes.Check([]morse.Metric{ms[0].WithField("tcp_new_syn_recv", morse.Int(0))}))
	f := testutil.FieldsOf(ms[0])
	require.GreaterOrEqual(t, f["tcp_listen"], int64(1))
	require.GreaterOrEqual(t, f["udp_socket"], int64(1))
}
