package socketwriter

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
	socketlistener "github.com/morse-agent/morse/plugins/inputs/socket_listener"
)

// listen starts morse's socket_listener on address (port 0 picks a free one), changed by
// mods, with a test accumulator; it stops when the test ends. It returns the address to
// write to and the accumulator.
func listen(t *testing.T, address string, mods ...func(*socketlistener.SocketListener)) (string, *testutil.Accumulator, *socketlistener.SocketListener) {
	t.Helper()
	l := socketlistener.New()
	l.ServiceAddress = address
	for _, m := range mods {
		m(l)
	}
	l.SetLogger(testutil.QuietLogger())
	require.NoError(t, l.Init())
	acc := &testutil.Accumulator{}
	require.NoError(t, l.Start(context.Background(), acc))
	t.Cleanup(l.Stop)
	scheme, _, _ := strings.Cut(address, "://")
	if strings.HasPrefix(scheme, "unix") {
		return address, acc, l
	}
	return scheme + "://" + l.Addr().String(), acc, l
}

// writer returns an initialised, connected writer for address, changed by mods.
func writer(t *testing.T, address string, mods ...func(*SocketWriter)) *SocketWriter {
	t.Helper()
	w := New()
	w.Address = address
	for _, m := range mods {
		m(w)
	}
	w.SetLogger(testutil.QuietLogger())
	require.NoError(t, w.Init())
	require.NoError(t, w.Connect(testutil.Context(t)))
	t.Cleanup(func() { _ = w.Close() })
	return w
}

// batchOf is n metrics with every field type, escapes and distinct times.
func batchOf(t *testing.T, name string, n int) []morse.Metric {
	base := time.Unix(1_700_000_000, 0)
	out := make([]morse.Metric, 0, n)
	for i := range n {
		m, skipped := morse.NewMetricFromMaps(name, map[string]string{"host": "h " + strconv.Itoa(i%4), "k,=": "v"},
			map[string]any{"f": float64(i) + 0.5, "i": int64(-i), "u": uint64(i), "s": "a \"q\" " + strconv.Itoa(i), "b": i%3 == 0},
			base.Add(time.Duration(i)*time.Millisecond))
		require.Zero(t, skipped)
		out = append(out, m)
	}
	return out
}

// waitFor waits until acc holds n metrics.
func waitFor(t *testing.T, acc *testutil.Accumulator, n int) {
	t.Helper()
	require.NoError(t, acc.Wait(testutil.Context(t), n), "have %d of %d", acc.NMetrics(), n)
}

// TestEachTransport writes into morse's socket_listener over tcp, udp, unix and unixgram,
// with gzip and without: exactly the lines sent arrive, with their types.
func TestEachTransport(t *testing.T) {
	dir := testutil.SocketDir(t)
	for _, network := range []string{"tcp", "udp", "unix", "unixgram"} {
		for _, enc := range []string{"identity", "gzip"} {
			t.Run(network+"/"+enc, func(t *testing.T) {
				address := network + "://127.0.0.1:0"
				if strings.HasPrefix(network, "unix") {
					address = network + "://" + filepath.Join(dir, network+"-"+enc+".sock")
				}
				addr, acc, _ := listen(t, address, func(l *socketlistener.SocketListener) { l.ContentEncoding = enc })
				w := writer(t, addr, func(w *SocketWriter) { w.ContentEncoding = enc; w.InfluxUintSupport = true })
				var sent []morse.Metric
				for round := range 3 { // several batches on one connection (one gzip stream)
					batch := batchOf(t, "m"+strconv.Itoa(round), 40)
					require.NoError(t, w.Write(testutil.Context(t), batch))
					sent = append(sent, batch...)
					waitFor(t, acc, len(sent)) // datagrams may arrive in any order
				}
				require.Equal(t, testutil.Canon(sent), testutil.Canon(acc.Metrics()))
			})
		}
	}
}

// TestLineMetricsAndOptions: line metrics go out as their text; without uint support
// unsigned integers are written signed and clamped; influx_omit_timestamp leaves times to
// the listener.
func TestLineMetricsAndOptions(t *testing.T) {
	addr, acc, _ := listen(t, "tcp://127.0.0.1:0")
	w := writer(t, addr, func(w *SocketWriter) { w.InfluxOmitTimestamp = true })
	require.True(t, w.WritesLines())
	before := time.Now()
	batch := []morse.Metric{
		morse.NewLineMetric(morse.LineText{Text: `lm,t=a v=1i,s="x y"`}, time.Unix(1, 0)),
		morse.NewMetric("big", nil, []morse.Field{{Key: "u", Value: morse.Uint(math.MaxUint64)}}, time.Unix(2, 0)),
	}
	require.NoError(t, w.Write(testutil.Context(t), batch))
	waitFor(t, acc, 2)
	got := acc.Metrics()
	require.Equal(t, []string{`lm,t=a v=integer:1,s=string:"x y"`, "big u=integer:9223372036854775807"},
		[]string{lineOf(got[0]), lineOf(got[1])})
	for _, m := range got {
		require.False(t, m.Time().Before(before.Truncate(time.Second)), "stamped by the listener")
	}
}

// lineOf is a metric rendered by testutil.Canon, without its time.
func lineOf(m morse.Metric) string {
	s := testutil.Canon([]morse.Metric{m})[0]
	return s[:strings.LastIndexByte(s, ' ')]
}

// TestTLS writes over TLS on tcp and unix to a listener that requires a client certificate.
func TestTLS(t *testing.T) {
	certs := testutil.NewCerts(t)
	dir := testutil.SocketDir(t)
	for _, address := range []string{"tcp://127.0.0.1:0", "unix://" + filepath.Join(dir, "tls.sock")} {
		t.Run(strings.Split(address, ":")[0], func(t *testing.T) {
			addr, acc, _ := listen(t, address, func(l *socketlistener.SocketListener) {
				l.Cert, l.Key, l.AllowedCACerts = certs.ServerCert, certs.ServerKey, []string{certs.CA}
			})
			w := writer(t, addr, func(w *SocketWriter) {
				w.CA, w.Cert, w.Key = certs.CA, certs.ClientCert, certs.ClientKey
				w.ServerName = "127.0.0.1" // a unix socket's path is no name to verify
			})
			batch := batchOf(t, "tls", 10)
			require.NoError(t, w.Write(testutil.Context(t), batch))
			waitFor(t, acc, len(batch))
			require.Equal(t, testutil.Canon(withoutUints(batch)), testutil.Canon(acc.Metrics()))
		})
	}
}

// TestDatagramTooLarge: a metric too large for one UDP datagram is dropped for good and
// counted; its batch-mates arrive.
func TestDatagramTooLarge(t *testing.T) {
	addr, acc, _ := listen(t, "udp://127.0.0.1:0")
	w := writer(t, addr)
	batch := batchOf(t, "d", 5)
	huge := morse.NewMetric("huge", nil, []morse.Field{{Key: "s", Value: morse.String(strings.Repeat("x", 70_000))}}, time.Unix(9, 0))
	err := w.Write(testutil.Context(t), append(append([]morse.Metric{}, batch[:2]...), append([]morse.Metric{huge}, batch[2:]...)...))
	var pw *morse.PartialWriteError
	require.True(t, errors.As(err, &pw), "%v", err)
	require.Equal(t, 1, pw.Dropped)
	require.Equal(t, ReasonDatagramTooLarge, pw.Reason)
	waitFor(t, acc, len(batch))
	require.Equal(t, testutil.Canon(withoutUints(batch)), testutil.Canon(acc.Metrics()))
}

// withoutUints is what a writer without influx_uint_support sends: unsigned as signed.
func withoutUints(batch []morse.Metric) []morse.Metric {
	out := make([]morse.Metric, len(batch))
	for i, m := range batch {
		u, _ := m.Field("u")
		out[i] = m.WithField("u", morse.Int(int64(u.Uint())))
	}
	return out
}

// TestMaxLineBytes: a metric longer than influx_max_line_bytes goes out as several lines of
// the same series and time.
func TestMaxLineBytes(t *testing.T) {
	addr, acc, _ := listen(t, "tcp://127.0.0.1:0")
	w := writer(t, addr, func(w *SocketWriter) { w.InfluxMaxLineBytes = 40 })
	m := morse.NewMetric("wide", []morse.Tag{{Key: "t", Value: "x"}},
		[]morse.Field{{Key: "first_field", Value: morse.Int(1)}, {Key: "second_field", Value: morse.Int(2)}}, time.Unix(5, 0))
	require.NoError(t, w.Write(testutil.Context(t), []morse.Metric{m}))
	waitFor(t, acc, 2)
	require.Equal(t, []string{
		"wide,t=x first_field=integer:1 5000000000",
		"wide,t=x second_field=integer:2 5000000000",
	}, testutil.Canon(acc.Metrics()))
}
