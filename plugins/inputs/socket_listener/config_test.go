package socketlistener

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/config"
	"github.com/morse-agent/morse/plugins/parsers/influx"
)

// TestTelegrafOptionsLoad loads a table written with Telegraf's option names through the
// real config loader.
func TestTelegrafOptionsLoad(t *testing.T) {
	cfg, err := config.Load(config.Options{Sources: []config.Source{{Name: "t.conf", Data: []byte(`
[[inputs.socket_listener]]
  service_address = "tcp://127.0.0.1:0"
  max_connections = 16
  read_timeout = "30s"
  keep_alive_period = "0s"
  read_buffer_size = "1MiB"
  socket_mode = "0600"
  udp_receivers = 3
  content_encoding = "gzip"
  max_decompression_size = "1MiB"
  data_format = "influx"
  influx_timestamp_precision = "1ms"
  tls_cert = "cert.pem"
  tls_key = "key.pem"
  tls_allowed_cacerts = ["ca.pem"]
  tls_min_version = "TLS13"
`)}}})
	require.NoError(t, err)
	s := cfg.Inputs[0].Plugin.(*SocketListener)
	require.Equal(t, 16, s.MaxConnections)
	require.Equal(t, morse.Duration(30*time.Second), s.ReadTimeout)
	require.NotNil(t, s.KeepAlivePeriod)
	require.Equal(t, time.Duration(-1), s.keepAlive(), "0s turns keep-alive off")
	require.Equal(t, morse.Size(1<<20), s.ReadBufferSize)
	require.Equal(t, 3, s.UDPReceivers)
	require.Equal(t, "gzip", s.ContentEncoding)
	require.Equal(t, influx.Precision(time.Millisecond), s.InfluxTimestampPrecision)
	require.Equal(t, []string{"ca.pem"}, s.AllowedCACerts)
	require.Equal(t, "TLS13", s.MinVersion)
	require.Equal(t, time.Duration(0), New().keepAlive(), "unset keeps Go's default")

	_, err = config.Load(config.Options{Sources: []config.Source{{Name: "bad.conf", Data: []byte(`
[[inputs.socket_listener]]
  service_address = "udp://127.0.0.1:8094"
  data_format = "collectd"
  collectd_typesdb = ["/usr/share/collectd/types.db"]
  content_encoding = "br"
`)}}})
	// Every problem in one run: the unknown format, the key no format takes (until collectd
	// is registered), and the listener's own option.
	require.ErrorContains(t, err, `bad.conf:4: inputs.socket_listener.data_format: "collectd" is not a data format morse reads`)
	require.ErrorContains(t, err, `bad.conf:5: inputs.socket_listener.collectd_typesdb: unknown key`)
	require.ErrorContains(t, err, `bad.conf:6: inputs.socket_listener.content_encoding: "br" is not supported`)
}

// TestUDPReceiversShareOnePort binds several sockets to one port, as SO_REUSEPORT allows.
func TestUDPReceiversShareOnePort(t *testing.T) {
	s := newListener(t, "udp://127.0.0.1:0", func(s *SocketListener) { s.UDPReceivers = 3 })
	start(t, s)
	srv := s.srv.(*packetServer)
	want := 3
	if !canReusePort {
		want = 1
	}
	require.Len(t, srv.conns, want)
	for _, c := range srv.conns {
		require.Equal(t, s.Addr().String(), c.LocalAddr().String())
	}
}
