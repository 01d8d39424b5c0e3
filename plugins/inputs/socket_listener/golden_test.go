package socketlistener

import (
	"fmt"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

// TestGoldenRealGather sends cpu lines over TCP and UDP to real listeners on loopback ports
// and compares what they add with the golden list.
func TestGoldenRealGather(t *testing.T) {
	shapes := testutil.LoadGolden(t, "testdata/socket_listener.golden")
	var lines []string
	for i := range 5 {
		lines = append(lines, fmt.Sprintf("cpu,cpu=cpu%d,host=foo,datacenter=us-east usage_idle=99,usage_busy=1", i))
	}
	for _, network := range []string{"tcp", "udp"} {
		t.Run(network, func(t *testing.T) {
			s := newListener(t, network+"://127.0.0.1:0", func(s *SocketListener) {
				_, err := toml.Decode(shapes.Config, s)
				require.NoError(t, err)
				s.UDPReceivers = 1
			})
			acc, _ := start(t, s)
			if network == "tcp" {
				sendStream(t, s.Addr(), lines)
			} else {
				sendDatagrams(t, s.Addr(), lines)
			}
			waitMetrics(t, acc, len(lines))
			ms := acc.Metrics()
			require.Empty(t, shapes.Check(ms))
			require.Equal(t, []string{"cpu: field usage_busy: type integer, golden says float"},
				shapes.Check([]morse.Metric{ms[0].WithField("usage_busy", morse.Int(1))}))
		})
	}
}
