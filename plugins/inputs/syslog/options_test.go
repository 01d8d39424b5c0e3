package syslog

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestValidateReportsEveryProblem names each bad option in one run.
func TestValidateReportsEveryProblem(t *testing.T) {
	s := New()
	s.Server, s.Framing, s.Trailer, s.SyslogStandard = "sctp://x:1", "lines", "CR", "RFC9999"
	s.MaxConnections, s.SocketMode, s.ContentEncoding = -1, "999", "gzip"
	s.AllowedSources = []string{"not-an-ip"}
	err := s.Validate()
	require.Error(t, err)
	for _, key := range []string{"server", "framing", "trailer", "syslog_standard", "max_connections",
		"socket_mode", "content_encoding", "allowed_sources"} {
		require.Contains(t, err.Error(), key+":")
	}
	s = New()
	s.Server, s.Cert, s.Key = "udp://127.0.0.1:0", "c", "k"
	require.ErrorContains(t, s.Validate(), "TLS works on stream sockets only")
	require.NoError(t, New().Validate())
}

// TestDefaultPort: an address without a port gets 6514, as in Telegraf; a unix path is
// left alone.
func TestDefaultPort(t *testing.T) {
	for in, want := range map[string]string{
		"tcp://127.0.0.1":     "127.0.0.1:6514",
		"udp://:":             ":6514",
		"tcp://[::1]":         "[::1]:6514",
		"tcp://127.0.0.1:601": "127.0.0.1:601",
		"unix:///run/x.sock":  "/run/x.sock",
	} {
		s := New()
		s.Server = in
		a, err := s.address()
		require.NoError(t, err, in)
		require.Equal(t, want, a.Addr, in)
	}
}

// TestAllowedSourcesRefusesOthers: a connection and a datagram from an address that
// allowed_sources leaves out are refused and counted, and nothing is read from them.
func TestAllowedSourcesRefusesOthers(t *testing.T) {
	for _, network := range []string{"tcp", "udp"} {
		t.Run(network, func(t *testing.T) {
			st := start(t, `server = "`+network+`://127.0.0.1:0"
allowed_sources = ["192.0.2.1"]`)
			c := st.dial(t)
			_, err := c.Write([]byte("16 <1>1 - - - - - -"))
			require.NoError(t, err)
			require.NoError(t, c.Close())
			require.Eventually(t, func() bool { return st.count("connections_refused") == 1 }, 10*time.Second, time.Millisecond)
			require.Zero(t, st.count("messages_received"))
			require.Zero(t, st.acc.NMetrics())
		})
	}
}

// TestStopEndsOpenConnections: Stop returns with a sender still connected, and the socket
// is closed.
func TestStopEndsOpenConnections(t *testing.T) {
	st := start(t, `server = "tcp://127.0.0.1:0"`)
	c := st.dial(t)
	defer c.Close()
	_, err := c.Write([]byte("16 <1>1 - - - - - -"))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, st.acc.Wait(ctx, 1))
	addr := st.p.Addr().String()
	st.p.Stop()
	_, err = net.Dial("tcp", addr)
	require.Error(t, err)
	require.Nil(t, st.p.Addr())
}

// TestStructuredDataFields: an SD-ID without parameters is a true field, parameters are
// string fields joined by sdparam_separator, all in key order with the message's own
// fields; a parameter whose joined name is one of those (severity, code) replaces it, as in Telegraf's map.
func TestStructuredDataFields(t *testing.T) {
	st := start(t, `server = "udp://127.0.0.1:0"`)
	st.send(t, `<13>1 - - - - ID9 [severity code="x"][zz][a b="c"] hi`)
	ms := st.acc.Metrics()
	require.Len(t, ms, 2) // and the sentinel
	var keys []string
	for _, f := range ms[0].Fields() {
		keys = append(keys, f.Key)
	}
	require.Equal(t, []string{"a_b", "facility_code", "message", "msgid", "severity_code", "version", "zz"}, keys)
	v, _ := ms[0].Field("severity_code")
	require.Equal(t, "x", v.Str())
	v, _ = ms[0].Field("zz")
	require.True(t, v.Bool())
}

// TestReadTimeoutAndMaxConnections: a connection silent for read_timeout is closed; at
// max_connections a new sender takes the slot of one that has sent nothing.
func TestReadTimeoutAndMaxConnections(t *testing.T) {
	t.Run("read_timeout", func(t *testing.T) {
		st := start(t, `server = "tcp://127.0.0.1:0"
read_timeout = "50ms"`)
		c := st.dial(t)
		defer c.Close()
		require.Eventually(t, func() bool { return st.count("connections_closed") == 1 }, 10*time.Second, time.Millisecond)
		require.Zero(t, st.count("read_errors"), "an idle connection closed is not an error")
	})
	t.Run("max_connections", func(t *testing.T) {
		st := start(t, `server = "tcp://127.0.0.1:0"
max_connections = 1`)
		idle := st.dial(t)
		defer idle.Close()
		require.Eventually(t, func() bool { return st.count("connections_opened") == 1 }, 10*time.Second, time.Millisecond)
		c := st.dial(t)
		defer c.Close()
		_, err := c.Write([]byte("16 <1>1 - - - - - -"))
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, st.acc.Wait(ctx, 1))
		require.Equal(t, int64(1), st.count("connections_evicted"))
	})
}
