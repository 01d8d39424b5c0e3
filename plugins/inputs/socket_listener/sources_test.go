package socketlistener

import (
	"net"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testutil"
)

// TestAllowedSources sends from 127.0.0.1 to listeners that allow it and that allow only
// 127.0.0.2: the first reads the lines, the second refuses and counts them, as Telegraf's
// allowed_sources does.
func TestAllowedSources(t *testing.T) {
	for _, network := range []string{"tcp", "udp"} {
		for _, allowed := range []string{"127.0.0.1", "127.0.0.2"} {
			t.Run(network+"/"+allowed, func(t *testing.T) {
				s := newListener(t, network+"://127.0.0.1:0", func(s *SocketListener) {
					s.AllowedSources = []string{"::1", allowed}
					s.UDPReceivers = 1
				})
				acc, st := start(t, s)
				addr := s.Addr()
				lines, _ := lineBatch(network, 3)
				if network == "tcp" {
					sendStream(t, addr, lines)
				} else {
					sendDatagrams(t, addr, lines)
				}
				if allowed == "127.0.0.1" {
					waitMetrics(t, acc, 3)
					require.Zero(t, st.Counter("connections_refused").Get())
					return
				}
				require.Eventually(t, func() bool { return st.Counter("connections_refused").Get() > 0 },
					waitFor, time.Millisecond, "a refused sender is counted")
				s.Stop()
				require.Empty(t, acc.Metrics())
			})
		}
	}
}

func TestTelegrafOptions(t *testing.T) {
	s := New()
	_, err := toml.Decode(`
allowed_sources = ["10.0.0.1", "not-an-ip"]
splitting_strategy = "null"
`, s)
	require.NoError(t, err)
	require.ErrorContains(t, s.Validate(), `allowed_sources: "not-an-ip" is not an IP address`)
	require.ErrorContains(t, s.Validate(), `splitting_strategy: "null" is not supported`)

	// Telegraf's sample values: newline splitting and its ignored options are accepted
	// silently; multicast_source and max_parallel_parsers warn once.
	s = New()
	_, err = toml.Decode(`
splitting_strategy = "newline"
splitting_delimiter = "0d0a"
splitting_length = 0
splitting_length_field = {offset = 0, bytes = 0, endianness = "be", header_length = 0}
multicast_source = "192.0.2.1"
max_parallel_parsers = 4
max_decompression_size = 0
`, s)
	require.NoError(t, err)
	var logs testutil.Logs
	s.SetLogger(logs.Logger())
	require.NoError(t, s.Init())
	require.Equal(t, []string{
		"multicast_source has no effect in morse: the listener does not join multicast groups",
		"max_parallel_parsers has no effect in morse: datagrams are parsed by udp_receivers goroutines",
	}, logs.Warnings())
	require.Equal(t, defaultMaxDecompressionSize, s.MaxDecompressionSize, "zero means the default, as in Telegraf")
	require.True(t, s.sourceAllowed(&net.TCPAddr{IP: net.ParseIP("203.0.113.9")}), "no list allows every sender")
}
