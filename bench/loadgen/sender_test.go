package loadgen

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testutil"
)

// testPool is a small pool shared by the sender tests.
func testPool(t testing.TB) *Pool {
	t.Helper()
	p, err := Generate(GenOptions{Seed: 1, Hosts: 100, Lines: 4096})
	require.NoError(t, err)
	return p
}

func run(t testing.TB, cfg Config) Report {
	t.Helper()
	require.NoError(t, cfg.Validate())
	rep, err := Run(context.Background(), cfg, testPool(t))
	require.NoError(t, err)
	return rep
}

func TestSendHTTPDeliversExactlyTheLineCount(t *testing.T) {
	for _, gz := range []bool{false, true} {
		sink := &Sink{Parse: true}
		addr := startSink(t, sink)
		rep := run(t, Config{Transport: "http", Addr: addr, Path: "/write?db=x", Gzip: gz,
			Connections: 3, LinesPerRequest: 1000, Lines: 12345})
		require.Equal(t, int64(12345), rep.Lines)
		require.Zero(t, rep.Errors, rep.ErrorSamples)
		require.Equal(t, map[string]int64{"204": 13}, rep.HTTPStatus)
		st := sink.Stats()
		require.Equal(t, int64(12345), st.Lines, "gzip %v", gz)
		require.Zero(t, st.ParseErrors)
		require.Equal(t, rep.Bytes, st.Bytes)
		require.Equal(t, rep.WireBytes, st.WireBytes)
		if gz {
			require.Less(t, rep.WireBytes, rep.Bytes/2)
		}
	}
}

func TestSendTCPDeliversExactlyTheLineCount(t *testing.T) {
	srv := startTCPCounter(t)
	rep := run(t, Config{Transport: "tcp", Addr: srv.ln.Addr().String(),
		Connections: 4, LinesPerRequest: 500, Lines: 23456})
	require.Equal(t, int64(23456), rep.Lines)
	require.Zero(t, rep.Errors, rep.ErrorSamples)
	require.Equal(t, int64(23456), srv.count(23456))
}

func TestSendUDPDeliversExactlyTheLineCount(t *testing.T) {
	srv := startUDPCounter(t)
	// A modest rate, so that the kernel's socket buffer never overflows while the test's
	// reader is descheduled: this checks the count, not the receiver's speed.
	rep := run(t, Config{Transport: "udp", Addr: srv.pc.LocalAddr().String(),
		Connections: 2, LinesPerRequest: 1000, Lines: 3000, Rate: 30000})
	require.Equal(t, int64(3000), rep.Lines)
	require.Zero(t, rep.Errors, rep.ErrorSamples)
	srv.waitFor(t, 3000)
	require.Equal(t, int64(3000), srv.lines.Load())
	require.LessOrEqual(t, srv.maxSize.Load(), int64(MaxDatagram))
	require.Greater(t, srv.datagram.Load(), int64(3), "1000-line batches are split into datagrams")
}

// TestSendUDPPayloadCapsDatagrams sends as Telegraf's InfluxDB output does, in datagrams of
// at most 512 bytes: every datagram fits, and most carry several lines.
func TestSendUDPPayloadCapsDatagrams(t *testing.T) {
	srv := startUDPCounter(t)
	rep := run(t, Config{Transport: "udp", Addr: srv.pc.LocalAddr().String(), UDPPayload: 512,
		Connections: 1, LinesPerRequest: 1000, Lines: 3000, Rate: 30000})
	require.Equal(t, int64(3000), rep.Lines)
	srv.waitFor(t, 3000)
	require.LessOrEqual(t, srv.maxSize.Load(), int64(512))
	dgrams := srv.datagram.Load()
	require.Equal(t, rep.Requests, dgrams)
	require.Less(t, dgrams, int64(3000/2), "a 512-byte datagram holds two or more generated lines")
	require.Greater(t, dgrams, int64(3000*150/512), "no datagram exceeds 512 bytes")
}

func TestConfigRefusesAnOversizedUDPPayload(t *testing.T) {
	c := Config{Transport: "udp", Addr: "127.0.0.1:9", Lines: 1, Connections: 1, LinesPerRequest: 1, UDPPayload: MaxDatagram + 1}
	require.ErrorContains(t, c.Validate(), "udp payload 64001")
}

func TestDatagramsSplitOnLineBoundaries(t *testing.T) {
	srv := startUDPCounter(t)
	c, err := newDatagramConn(srv.pc.LocalAddr().String(), 10)
	require.NoError(t, err)
	defer c.close()
	var st Stats
	c.send(context.Background(), []byte("a 1\nbb 2\nccccccccccc 3\nd 4\n"), 4, &st)
	require.Equal(t, int64(4), st.Lines)
	require.Equal(t, int64(3), st.Requests, `"a 1\nbb 2\n" fits in 10 bytes; the long line goes alone`)
	srv.waitFor(t, 4)
}

// TestSendPacedRunTakesItsScheduledTime runs over TCP with a fake clock: 1000 lines at
// 1000 lines/s in batches of 100 start their last batch 0.9 s after the first, and the run
// counts as lasting until the end of that batch's slot, 1 s.
func TestSendPacedRunTakesItsScheduledTime(t *testing.T) {
	srv := startTCPCounter(t)
	clock := newFakeClock()
	rep := run(t, Config{Transport: "tcp", Addr: srv.ln.Addr().String(), Connections: 1,
		LinesPerRequest: 100, Lines: 1000, Rate: 1000, Clock: clock})
	require.Equal(t, int64(1000), rep.Lines)
	require.InDelta(t, 1.0, rep.ElapsedSec, 1e-9)
	require.InDelta(t, 1000, rep.LinesPerSec, 1e-6)
	require.Equal(t, int64(1000), srv.count(1000))
}

func TestSendStopsAtTheDurationOnAFakeClock(t *testing.T) {
	srv := startTCPCounter(t)
	rep := run(t, Config{Transport: "tcp", Addr: srv.ln.Addr().String(), Connections: 1,
		LinesPerRequest: 50, Duration: 3 * time.Second, Rate: 500, Clock: newFakeClock()})
	require.Equal(t, int64(1500), rep.Lines)
	require.Equal(t, int64(1500), srv.count(1500))
}

// TestSendFlatOutStopsByItself checks the real clock's bound loosely: a flat-out run of
// 200 ms ends, and sends something, well within a few seconds.
func TestSendFlatOutStopsByItself(t *testing.T) {
	sink := &Sink{}
	addr := startSink(t, sink)
	start := time.Now()
	rep := run(t, Config{Transport: "http", Addr: addr, Path: "/write", Connections: 2,
		LinesPerRequest: 100, Duration: 200 * time.Millisecond})
	require.Less(t, time.Since(start), 5*time.Second)
	require.Positive(t, rep.Lines)
	// Every line counted as sent arrived. A request whose answer was lost, as the machine
	// stalls under load, may have arrived too although the sender counts it as failed, so
	// the sink may hold more, but never more than those.
	got := sink.Stats().Lines
	require.GreaterOrEqual(t, got, rep.Lines, "failed %d lines: %v", rep.FailedLines, rep.ErrorSamples)
	require.LessOrEqual(t, got, rep.Lines+rep.FailedLines, "failed %d lines: %v", rep.FailedLines, rep.ErrorSamples)
	require.Positive(t, rep.LinesPerSec)
}

func TestSendCountsHTTPErrors(t *testing.T) {
	addr := fixedStatusServer(t, http.StatusInternalServerError, `{"error":"engine: cache-max-memory-size exceeded"}`)
	rep := run(t, Config{Transport: "http", Addr: addr, Path: "/write", Connections: 1,
		LinesPerRequest: 10, Lines: 30})
	require.Zero(t, rep.Lines)
	require.Equal(t, int64(30), rep.FailedLines)
	require.Equal(t, int64(3), rep.Errors)
	require.Equal(t, map[string]int64{"500": 3}, rep.HTTPStatus)
	require.Len(t, rep.ErrorSamples, 1)
	require.Contains(t, rep.ErrorSamples[0], "cache-max-memory-size")
}

func TestSendCountsRefusedTCPConnections(t *testing.T) {
	addr := testutil.FreeAddr(t)
	rep := run(t, Config{Transport: "tcp", Addr: addr, Connections: 1, LinesPerRequest: 10, Lines: 20})
	require.Zero(t, rep.Lines)
	require.Equal(t, int64(20), rep.FailedLines)
	require.Equal(t, int64(2), rep.Errors)
}

func TestConfigValidate(t *testing.T) {
	good := Config{Transport: "http", Addr: "localhost:8086", Path: "/write", Connections: 1, LinesPerRequest: 1, Lines: 1}
	require.NoError(t, good.Validate())
	require.Equal(t, "127.0.0.1:8086", good.Addr)
	require.Equal(t, MaxDuration, good.Duration, "a count-bounded run is also bounded in time")

	for name, mutate := range map[string]func(*Config){
		"remote ip":      func(c *Config) { c.Addr = "10.0.0.1:80" },
		"remote name":    func(c *Config) { c.Addr = "example.com:80" },
		"transport":      func(c *Config) { c.Transport = "quic" },
		"unbounded":      func(c *Config) { c.Lines, c.Duration = 0, 0 },
		"too long":       func(c *Config) { c.Duration = MaxDuration + time.Second },
		"no connections": func(c *Config) { c.Connections = 0 },
		"empty requests": func(c *Config) { c.LinesPerRequest = 0 },
		"relative path":  func(c *Config) { c.Path = "write" },
		"negative rate":  func(c *Config) { c.Rate = -1 },
	} {
		c := Config{Transport: "http", Addr: "127.0.0.1:8086", Path: "/write", Connections: 1, LinesPerRequest: 1, Lines: 1}
		mutate(&c)
		require.Error(t, c.Validate(), name)
	}
}
