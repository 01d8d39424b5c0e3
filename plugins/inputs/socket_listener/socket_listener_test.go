package socketlistener

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/plugins/parsers/influx"
	"github.com/morse-agent/morse/selfstat"
)

const waitFor = 10 * time.Second

// lineBatch builds n lines of one transport with every field type, and the metrics they must
// become.
func lineBatch(transport string, n int) (lines []string, want []morse.Metric) {
	const base = int64(1700000000123456789)
	for i := range n {
		ts := base + int64(i)
		lines = append(lines, fmt.Sprintf(`lp,seq=%d,transport=%s v=%di,f=%d.5,s="line %d",b=true,u=%du %d`, i, transport, i, i, i, i, ts))
		want = append(want, morse.NewMetric("lp",
			[]morse.Tag{{Key: "seq", Value: fmt.Sprint(i)}, {Key: "transport", Value: transport}},
			[]morse.Field{
				{Key: "v", Value: morse.Int(int64(i))}, {Key: "f", Value: morse.Float(float64(i) + 0.5)},
				{Key: "s", Value: morse.String(fmt.Sprintf("line %d", i))}, {Key: "b", Value: morse.Bool(true)},
				{Key: "u", Value: morse.Uint(uint64(i))},
			},
			time.Unix(0, ts).UTC()))
	}
	return lines, want
}

// newListener returns an initialised listener for address, changed by opts.
func newListener(t *testing.T, address string, opts ...func(*SocketListener)) *SocketListener {
	t.Helper()
	s := New()
	s.ServiceAddress = address
	for _, o := range opts {
		o(s)
	}
	s.SetLogger(testutil.QuietLogger())
	require.NoError(t, s.Init())
	return s
}

// start runs s with a test accumulator and its own stats, and stops it when the test ends.
func start(t *testing.T, s *SocketListener) (*testutil.Accumulator, *selfstat.PluginStats) {
	t.Helper()
	st := selfstat.NewPluginStats(selfstat.New(), "internal_socket_listener", nil)
	s.SetStats(st)
	acc := &testutil.Accumulator{}
	require.NoError(t, s.Start(context.Background(), acc))
	t.Cleanup(s.Stop)
	return acc, st
}

func waitMetrics(t *testing.T, acc *testutil.Accumulator, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	require.NoError(t, acc.Wait(ctx, n))
}

// TestEachTransportDeliversExactlyTheLinesSent runs every transport through a whole agent and
// compares what the output received, after the agent stopped and flushed, with what was sent.
func TestEachTransportDeliversExactlyTheLinesSent(t *testing.T) {
	dir := testutil.SocketDir(t)
	cases := []struct {
		name, address string
		send          func(t *testing.T, addr net.Addr, lines []string)
	}{
		{"tcp", "tcp://127.0.0.1:0", sendStream},
		{"tcp6", "tcp://[::1]:0", sendStream},
		{"udp", "udp://127.0.0.1:0", sendDatagrams},
		{"udp6", "udp://[::1]:0", sendDatagrams},
		{"unix", "unix://" + filepath.Join(dir, "s.sock"), sendStream},
		{"unixgram", "unixgram://" + filepath.Join(dir, "g.sock"), sendDatagrams},
	}
	for _, tc := range cases {
		for _, asLines := range []bool{false, true} {
			name := tc.name
			if asLines {
				name += "/line-metrics"
			}
			t.Run(name, func(t *testing.T) {
				address := tc.address
				if asLines && strings.HasPrefix(address, "unix") {
					address = strings.Replace(address, ".sock", "-lines.sock", 1)
				}
				in := newListener(t, address, func(s *SocketListener) { s.UDPReceivers = 2 })
				run := testserver.RunListener
				if asLines {
					run = testserver.RunLineListener
				}
				agent := run(t, "socket_listener", in)
				lines, want := lineBatch(tc.name, 120)
				tc.send(t, agent.Addr, lines)
				agent.Out.Wait(t, len(want), waitFor)
				agent.Stop(t)
				require.Equal(t, testutil.Canon(want), testutil.Canon(agent.Out.Metrics()))
				if asLines {
					// A stream's lines cut by the end of a read are parsed; most are not.
					require.Greater(t, agent.Out.LineMetrics(), len(want)/2, "lines arrive as line metrics")
				} else {
					require.Zero(t, agent.Out.LineMetrics())
				}
			})
		}
	}
}

// sendStream writes the lines over one connection in uneven pieces, so that lines are cut
// across reads, and closes it.
func sendStream(t *testing.T, addr net.Addr, lines []string) {
	t.Helper()
	conn, err := net.Dial(addr.Network(), addr.String())
	require.NoError(t, err)
	defer conn.Close()
	data := []byte(strings.Join(lines, "\n")) // no newline after the last line
	for len(data) > 0 {
		n := min(len(data), 777)
		_, err := conn.Write(data[:n])
		require.NoError(t, err)
		data = data[n:]
	}
}

// sendDatagrams sends the lines ten to a datagram.
func sendDatagrams(t *testing.T, addr net.Addr, lines []string) {
	t.Helper()
	conn, err := net.Dial(addr.Network(), addr.String())
	require.NoError(t, err)
	defer conn.Close()
	for i := 0; i < len(lines); i += 10 {
		_, err := conn.Write([]byte(strings.Join(lines[i:min(i+10, len(lines))], "\n") + "\n"))
		require.NoError(t, err)
	}
}

// TestValueFormat reads data_format "value": a stream one line at a time, a datagram whole;
// a value that is not of data_type is counted in parse_errors and logged with its line,
// and the good ones around it arrive.
func TestValueFormat(t *testing.T) {
	for _, tc := range []struct {
		address string
		send    []string
		lines   int64
	}{
		{"tcp://127.0.0.1:0", []string{"1\r\n2.5\nwarm\n\n3"}, 4},
		{"udp://127.0.0.1:0", []string{"1\n", "2.5", "warm\n", "3\n"}, 4},
	} {
		t.Run(tc.address[:3], func(t *testing.T) {
			var logs testutil.Logs
			s := New()
			s.ServiceAddress, s.DataFormat, s.DataType = tc.address, "value", "float"
			s.SetLogger(logs.Logger())
			require.NoError(t, s.Init())
			acc, st := start(t, s)
			conn, err := net.Dial(s.Addr().Network(), s.Addr().String())
			require.NoError(t, err)
			for _, d := range tc.send {
				_, err = conn.Write([]byte(d))
				require.NoError(t, err)
			}
			require.NoError(t, conn.Close())
			waitMetrics(t, acc, 3)
			var got []string
			for _, m := range acc.Metrics() {
				got = append(got, testutil.Canon([]morse.Metric{m.WithTime(time.Unix(0, 0))})[0])
			}
			require.Equal(t, []string{"socket_listener value=float:1 0", "socket_listener value=float:2.5 0", "socket_listener value=float:3 0"}, got)
			require.Eventually(t, func() bool { return st.Counter("lines_received").Get() == tc.lines }, waitFor, time.Millisecond,
				"lines_received %d", st.Counter("lines_received").Get())
			require.Equal(t, int64(1), st.Counter("parse_errors").Get())
			require.Len(t, logs.Warnings(), 1)
			want := `line 3, column 1: not a float (invalid syntax): "warm"`
			if tc.address[:3] == "udp" {
				want = `line 1, column 1: not a float (invalid syntax): "warm"`
			}
			require.Contains(t, logs.Warnings()[0], want)
		})
	}
}

// TestMalformedLinesAreCountedAndTheStreamGoesOn sends bad lines between good ones over one
// connection and over datagrams; the good ones arrive and the bad ones are counted.
func TestMalformedLinesAreCountedAndTheStreamGoesOn(t *testing.T) {
	body := "m v=1i 1\nm v= 2\n# a comment\n\nm v=3i 3\nm,t= v=1 4\nm v=5i 5\n"
	for _, address := range []string{"tcp://127.0.0.1:0", "udp://127.0.0.1:0"} {
		t.Run(address[:3], func(t *testing.T) {
			s := newListener(t, address)
			acc, st := start(t, s)
			conn, err := net.Dial(s.Addr().Network(), s.Addr().String())
			require.NoError(t, err)
			_, err = conn.Write([]byte(body))
			require.NoError(t, err)
			require.NoError(t, conn.Close())
			waitMetrics(t, acc, 3)
			var got []int64
			for _, m := range acc.Metrics() {
				v, _ := m.Field("v")
				got = append(got, v.Int())
			}
			require.Equal(t, []int64{1, 3, 5}, got)
			require.Eventually(t, func() bool { return st.Counter("lines_received").Get() == 5 }, waitFor, time.Millisecond)
			require.Equal(t, int64(2), st.Counter("parse_errors").Get())
			require.Equal(t, int64(len(body)), st.Counter("bytes_received").Get())
		})
	}
}

// TestValidateNamesTheKey checks that each bad option is refused under its own key.
func TestValidateNamesTheKey(t *testing.T) {
	cases := []struct {
		key string
		set func(*SocketListener)
	}{
		{"service_address", func(s *SocketListener) { s.ServiceAddress = "127.0.0.1:8094" }},
		{"service_address", func(s *SocketListener) { s.ServiceAddress = "sctp://127.0.0.1:8094" }},
		{"service_address", func(s *SocketListener) { s.ServiceAddress = "tcp://localhost" }},
		{"data_format", func(s *SocketListener) { s.DataFormat = "collectd" }},
		{"max_connections", func(s *SocketListener) { s.MaxConnections = -1 }},
		{"udp_receivers", func(s *SocketListener) { s.UDPReceivers = -2 }},
		{"content_encoding", func(s *SocketListener) { s.ContentEncoding = "br" }},
		{"socket_mode", func(s *SocketListener) { s.SocketMode = "rw-rw----" }},
		{"influx_timestamp_precision", func(s *SocketListener) { s.InfluxTimestampPrecision = influx.Precision(time.Minute) }},
		{"tls_cert", func(s *SocketListener) { s.Cert = "cert.pem" }},
		{"tls_min_version", func(s *SocketListener) { s.MinVersion = "TLS11" }},
		{"tls_cert", func(s *SocketListener) {
			s.ServiceAddress, s.Cert, s.Key = "udp://127.0.0.1:8094", "c.pem", "k.pem"
		}},
	}
	for _, tc := range cases {
		s := New()
		tc.set(s)
		err := s.Validate()
		require.Error(t, err)
		require.Contains(t, err.Error(), tc.key+": ")
	}
	require.NoError(t, New().Validate(), "the defaults are valid")
}

// TestTimestampPrecision reads second timestamps when influx_timestamp_precision says so.
func TestTimestampPrecision(t *testing.T) {
	s := newListener(t, "udp://127.0.0.1:0", func(s *SocketListener) {
		s.InfluxTimestampPrecision = influx.Precision(time.Second)
	})
	acc, _ := start(t, s)
	sendDatagrams(t, s.Addr(), []string{"m v=1 1700000000"})
	waitMetrics(t, acc, 1)
	require.Equal(t, time.Unix(1700000000, 0).UTC(), acc.Metrics()[0].Time())
}

// TestOneCPUReadsAndParsesInline: on a single CPU, with one receiver, the reader parses the
// datagrams it reads itself, with one batch of buffers, and still delivers exactly the lines
// sent, over UDP and unixgram alike.
func TestOneCPUReadsAndParsesInline(t *testing.T) {
	prev := singleCPU
	singleCPU = func() bool { return true }
	t.Cleanup(func() { singleCPU = prev })
	dir := testutil.SocketDir(t)
	for _, tc := range []struct{ name, address string }{
		{"udp", "udp://127.0.0.1:0"},
		{"unixgram", "unixgram://" + filepath.Join(dir, "inline.sock")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := newListener(t, tc.address, func(s *SocketListener) { s.UDPReceivers = 1 })
			agent := testserver.RunListener(t, "socket_listener", in)
			srv := in.srv.(*packetServer)
			require.Equal(t, 1, cap(srv.free), "one batch of buffers, and no workers")
			lines, want := lineBatch(tc.name, 120)
			sendDatagrams(t, agent.Addr, lines)
			agent.Out.Wait(t, len(want), waitFor)
			agent.Stop(t)
			require.Equal(t, testutil.Canon(want), testutil.Canon(agent.Out.Metrics()))
		})
	}
}
