package integration

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/agent"
	"github.com/morse-agent/morse/batch"
	"github.com/morse-agent/morse/config"
	"github.com/morse-agent/morse/internal/testserver"
	influxdblistener "github.com/morse-agent/morse/plugins/inputs/influxdb_listener"
	socketlistener "github.com/morse-agent/morse/plugins/inputs/socket_listener"
	"github.com/morse-agent/morse/plugins/outputs/influxdb"
	"github.com/morse-agent/morse/selfstat"
)

// Backpressure rig: a listener feeding a real InfluxDB through a proxy that can slow or cut
// it, with a buffer small enough that a flat-out sender overflows it at once if nothing
// holds the sender back.
const (
	bpBatch  = 500
	bpBuffer = 2000
	bpDelay  = 200 * time.Millisecond // per write; 4 writes in flight: 10,000 lines/s at most
)

// statsProbe is an input that only takes the agent's self-metrics registry, so the test can
// read internal_listener.
type statsProbe struct{ reg *selfstat.Registry }

func (p *statsProbe) SetSelfStats(r *selfstat.Registry)               { p.reg = r }
func (p *statsProbe) Gather(context.Context, morse.Accumulator) error { return nil }

// heldBack is the time the listener spent waiting for room, from internal_listener.
func (p *statsProbe) heldBack() time.Duration {
	for _, s := range p.reg.Snapshot() {
		if s.Measurement != "internal_listener" {
			continue
		}
		for _, f := range s.Fields {
			if f.Key == "backpressure_wait_ns" {
				return time.Duration(f.Value)
			}
		}
	}
	return 0
}

type bpRig struct {
	influx *testserver.Influx
	proxy  *testserver.Proxy
	probe  *statsProbe
	agent  *agent.Agent
	stop   func() error
	next   int // the next sequence number to send
	// send writes n lines flat out, each with its own sequence number and timestamp, and
	// returns how long the writing took.
	send func(t *testing.T, n int) time.Duration
}

// The transports the backpressure tests run over: the stream sockets of
// inputs.socket_listener and the HTTP of inputs.influxdb_listener.
var bpTransports = []string{"tcp", "unix", "http"}

func startBackpressureRig(t *testing.T, transport string) *bpRig {
	r := &bpRig{influx: testserver.StartInfluxDB(t, testserver.InfluxOptions{}), probe: &statsProbe{}}
	r.proxy = testserver.StartProxy(t, r.influx.Addr())
	r.influx.Exec(t, "CREATE DATABASE bp")

	cfg := config.DefaultConfig()
	cfg.Agent.OmitHostname = true
	cfg.Agent.FlushInterval = morse.Duration(time.Second)
	addr := r.addListener(t, cfg, transport)
	cfg.AddInput("probe", r.probe)
	out := influxdb.New()
	out.URLs = []string{r.proxy.URL()}
	out.Database = "bp"
	out.SkipDatabaseCreation = true
	oc := cfg.AddOutput("influxdb", out)
	oc.Common.MetricBatchSize, oc.Common.MetricBufferLimit = bpBatch, bpBuffer

	r.agent, r.stop = testserver.RunAgent(t, cfg)
	select {
	case <-r.agent.Ready():
	case <-time.After(time.Minute):
		t.Fatal("the agent did not start")
	}
	a := addr()
	if transport == "http" {
		url := "http://" + a.String() + "/write?db=bp"
		r.send = func(t *testing.T, n int) time.Duration {
			took, statuses := r.sendHTTP(t, url, n, 1000, 4)
			require.Equal(t, map[int]int{http.StatusNoContent: (n + 999) / 1000}, statuses,
				"every write answered 204: none waited past backpressure_max_wait")
			return took
		}
	} else {
		r.send = func(t *testing.T, n int) time.Duration { return r.sendStream(t, a, n) }
	}
	return r
}

// addListener adds the listener of transport to cfg and returns its address once started.
func (r *bpRig) addListener(t *testing.T, cfg *config.Config, transport string) func() net.Addr {
	if transport == "http" {
		ln := influxdblistener.New()
		ln.ServiceAddress = "127.0.0.1:0"
		cfg.AddInput("influxdb_listener", ln)
		return ln.Addr
	}
	ln := socketlistener.New()
	ln.ServiceAddress = "tcp://127.0.0.1:0"
	if transport == "unix" {
		ln.ServiceAddress = "unix://" + filepath.Join(t.TempDir(), "bp.sock")
	}
	// Small socket buffers, so that a held-back connection slows the sender within a few
	// tens of kilobytes rather than after the kernel has taken megabytes.
	ln.ReadBufferSize = 32 << 10
	cfg.AddInput("socket_listener", ln)
	return ln.Addr
}

func (r *bpRig) stats() batch.Stats { return r.agent.Outputs()[0].Stats }

// sendStream writes n lines flat out on one connection to addr.
func (r *bpRig) sendStream(t *testing.T, addr net.Addr, n int) time.Duration {
	t.Helper()
	c, err := net.Dial(addr.Network(), addr.String())
	require.NoError(t, err)
	if tc, ok := c.(*net.TCPConn); ok {
		require.NoError(t, tc.SetWriteBuffer(32<<10))
	}
	base := time.Now().Add(-time.Hour).UnixNano()
	buf := make([]byte, 0, 64<<10)
	start := time.Now()
	for i := r.next; i < r.next+n; i++ {
		buf = fmt.Appendf(buf, "bp,host=sender n=%di %d\n", i, base+int64(i))
		if len(buf) > 60<<10 {
			_, err = c.Write(buf)
			require.NoError(t, err)
			buf = buf[:0]
		}
	}
	_, err = c.Write(buf)
	require.NoError(t, err)
	took := time.Since(start)
	require.NoError(t, c.Close())
	r.next += n
	return took
}

// settled waits until every sent line is written or dropped.
func (r *bpRig) settled(t *testing.T) batch.Stats {
	t.Helper()
	require.Eventually(t, func() bool {
		st := r.stats()
		return st.Written+st.Dropped == int64(r.next) && st.BufferSize == 0
	}, 2*time.Minute, 10*time.Millisecond, "every line is written or dropped")
	return r.stats()
}

func (r *bpRig) stored(t *testing.T) int64 {
	t.Helper()
	res := r.influx.Query(t, "bp", "SELECT count(n) FROM bp")
	if len(res) == 0 || len(res[0].Series) == 0 {
		return 0
	}
	v, ok := res[0].Series[0].Values[0][1].(int64)
	require.True(t, ok)
	return v
}

// TestBackpressureSlowSink: a sink that takes 200 ms per write and a sender that outruns it
// a hundred times over, over TCP, a unix socket and HTTP (four connections, bodies of 1000
// lines). Every line arrives, none is evicted, and the sender was slowed to the sink's pace.
func TestBackpressureSlowSink(t *testing.T) {
	for _, transport := range bpTransports {
		t.Run(transport, func(t *testing.T) {
			r := startBackpressureRig(t, transport)
			r.proxy.SetDelay(bpDelay)
			const lines = 30000
			took := r.send(t, lines)
			st := r.settled(t)
			require.Zero(t, st.Dropped, "nothing evicted while the sink keeps up")
			require.Equal(t, int64(lines), st.Written)
			require.Equal(t, int64(lines), r.stored(t), "every line is in InfluxDB")
			// Unslowed, the sender writes 30,000 lines in well under 100 ms; the sink takes at
			// least 30,000 / 10,000 per second, less what the buffer and the sockets hold.
			t.Logf("%s: sender took %s, held back %s", transport, took, r.probe.heldBack())
			require.Greater(t, took, time.Second, "the sender was slowed")
			require.Greater(t, r.probe.heldBack(), time.Second, "the listener waited for room")
			require.NoError(t, r.stop())
		})
	}
}

// TestBackpressureDownThenHealthy: while the sink is down the listener never waits (HTTP
// answers 204 at once), the buffer evicts the oldest and counts them exactly; once the sink
// is back and the buffer is high, the listener pushes back again and nothing more is
// evicted.
func TestBackpressureDownThenHealthy(t *testing.T) {
	for _, transport := range []string{"tcp", "http"} {
		t.Run(transport, func(t *testing.T) { testDownThenHealthy(t, transport) })
	}
}

func testDownThenHealthy(t *testing.T, transport string) {
	r := startBackpressureRig(t, transport)
	r.proxy.Cut()
	// An output is taken to keep up until a write fails; the first one fails at once.
	r.send(t, bpBatch)
	require.Eventually(t, func() bool { return r.stats().WriteErrors > 0 }, time.Minute, time.Millisecond)
	const down = 20000
	took := r.send(t, down-bpBatch)
	require.Eventually(t, func() bool { return r.stats().Dropped >= down-bpBuffer-4*bpBatch }, time.Minute,
		10*time.Millisecond, "the buffer evicts while the sink is down")
	require.Zero(t, r.probe.heldBack(), "no wait while the sink is down")
	t.Logf("down: sender took %s", took)
	require.Less(t, took, 5*time.Second, "the sender was not slowed while the sink was down")

	r.proxy.SetDelay(bpDelay)
	r.proxy.Restore()
	st := r.settled(t)
	evicted := st.DroppedByReason[morse.ReasonBufferFull]
	require.Equal(t, st.Dropped, evicted, "every loss is an eviction")
	require.Equal(t, st.Written, r.stored(t), "what was written is stored")
	require.Equal(t, int64(down), st.Written+evicted, "every line is stored or counted as evicted")

	const up = 30000
	took = r.send(t, up)
	st = r.settled(t)
	require.Equal(t, evicted, st.DroppedByReason[morse.ReasonBufferFull], "nothing evicted once the sink is back")
	require.Equal(t, int64(down+up)-evicted, r.stored(t))
	t.Logf("healthy again: sender took %s, held back %s", took, r.probe.heldBack())
	require.Greater(t, r.probe.heldBack(), time.Second, "the listener pushes back once the sink is healthy")
	require.NoError(t, r.stop())
}
