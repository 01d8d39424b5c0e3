package integration

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/config"
	"github.com/morse-agent/morse/internal/testserver"
	influxdblistener "github.com/morse-agent/morse/plugins/inputs/influxdb_listener"
	"github.com/morse-agent/morse/plugins/outputs/influxdb"
)

// startHTTPBackpressureRig is startBackpressureRig with inputs.influxdb_listener: the same
// real InfluxDB behind the same proxy, the same batch and buffer. It returns the rig and
// the listener's write URL.
func startHTTPBackpressureRig(t *testing.T) (*bpRig, string) {
	r := &bpRig{influx: testserver.StartInfluxDB(t, testserver.InfluxOptions{}), probe: &statsProbe{}}
	r.proxy = testserver.StartProxy(t, r.influx.Addr())
	r.influx.Exec(t, "CREATE DATABASE bp")

	cfg := config.DefaultConfig()
	cfg.Agent.OmitHostname = true
	cfg.Agent.FlushInterval = morse.Duration(time.Second)
	ln := influxdblistener.New()
	ln.ServiceAddress = "127.0.0.1:0"
	cfg.AddInput("influxdb_listener", ln)
	cfg.AddInput("probe", r.probe)
	out := influxdb.New()
	out.URLs = []string{r.proxy.URL()}
	out.Database = "bp"
	out.SkipDatabaseCreation = true
	oc := cfg.AddOutput("influxdb", out)
	oc.BatchSize, oc.BufferLimit = bpBatch, bpBuffer

	r.agent, r.stop = runAgent(t, cfg)
	select {
	case <-r.agent.Ready():
	case <-time.After(time.Minute):
		t.Fatal("the agent did not start")
	}
	return r, "http://" + ln.Addr().String() + "/write?db=bp"
}

// sendHTTP writes n lines flat out as bodies of perBody lines over conns connections at
// once, each line with its own sequence number and timestamp, and returns how long it took
// and every answer's status.
func (r *bpRig) sendHTTP(t *testing.T, url string, n, perBody, conns int) (time.Duration, map[int]int) {
	t.Helper()
	tr := &http.Transport{MaxConnsPerHost: conns, MaxIdleConnsPerHost: conns}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: time.Minute}
	base := time.Now().Add(-time.Hour).UnixNano()
	bodies := make(chan [2]int, n/perBody+1)
	for from := r.next; from < r.next+n; from += perBody {
		bodies <- [2]int{from, min(from+perBody, r.next+n)}
	}
	close(bodies)
	var mu sync.Mutex
	statuses := map[int]int{}
	start := time.Now()
	var wg sync.WaitGroup
	for range conns {
		wg.Go(func() {
			var buf bytes.Buffer
			for b := range bodies {
				buf.Reset()
				for i := b[0]; i < b[1]; i++ {
					fmt.Fprintf(&buf, "bp,host=sender n=%di %d\n", i, base+int64(i))
				}
				status := -1 // a transport error
				if resp, err := hc.Post(url, "text/plain", &buf); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					_ = resp.Body.Close()
					status = resp.StatusCode
				}
				mu.Lock()
				statuses[status]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	r.next += n
	return time.Since(start), statuses
}

// TestBackpressureSlowSinkHTTP is TestBackpressureSlowSink over HTTP: a sink that takes
// 200 ms per write, and four HTTP connections that send 30,000 lines in bodies of 1,000
// flat out, a hundred times faster than it. Every write is answered 204 (none waited past
// backpressure_max_wait), every line is in InfluxDB, none is evicted, and the senders were
// slowed to the sink's pace: the listener held their writes back.
func TestBackpressureSlowSinkHTTP(t *testing.T) {
	r, url := startHTTPBackpressureRig(t)
	r.proxy.SetDelay(bpDelay)
	const lines = 30000
	took, statuses := r.sendHTTP(t, url, lines, 1000, 4)
	require.Equal(t, map[int]int{http.StatusNoContent: lines / 1000}, statuses, "every write answered 204")
	st := r.settled(t)
	require.Zero(t, st.Dropped, "nothing evicted while the sink keeps up")
	require.Equal(t, int64(lines), st.Written)
	require.Equal(t, int64(lines), r.stored(t), "every line is in InfluxDB")
	t.Logf("http: senders took %s, held back %s", took, r.probe.heldBack())
	require.Greater(t, took, time.Second, "the senders were slowed")
	require.Greater(t, r.probe.heldBack(), time.Second, "the listener waited for room")
	require.NoError(t, r.stop())
}

// TestBackpressureDownThenHealthyHTTP is TestBackpressureDownThenHealthy over HTTP: while
// the sink is down every write is answered 204 without waiting, and the buffer evicts the
// oldest and counts them exactly; once the sink is back and the buffer is high, the
// listener holds writes back again, answers 204 to each, and nothing more is evicted.
func TestBackpressureDownThenHealthyHTTP(t *testing.T) {
	r, url := startHTTPBackpressureRig(t)
	r.proxy.Cut()
	// An output is taken to keep up until a write fails; the first one fails at once.
	_, statuses := r.sendHTTP(t, url, bpBatch, bpBatch, 1)
	require.Equal(t, map[int]int{http.StatusNoContent: 1}, statuses)
	require.Eventually(t, func() bool { return r.stats().WriteErrors > 0 }, time.Minute, time.Millisecond)
	const down = 20000
	took, statuses := r.sendHTTP(t, url, down-bpBatch, 1000, 4)
	require.Equal(t, map[int]int{http.StatusNoContent: (down - bpBatch + 999) / 1000}, statuses)
	require.Eventually(t, func() bool { return r.stats().Dropped >= down-bpBuffer-4*bpBatch }, time.Minute,
		10*time.Millisecond, "the buffer evicts while the sink is down")
	require.Zero(t, r.probe.heldBack(), "no wait while the sink is down")
	t.Logf("down: senders took %s", took)
	require.Less(t, took, 5*time.Second, "the senders were not slowed while the sink was down")

	r.proxy.SetDelay(bpDelay)
	r.proxy.Restore()
	st := r.settled(t)
	evicted := st.DroppedByReason[morse.ReasonBufferFull]
	require.Equal(t, st.Dropped, evicted, "every loss is an eviction")
	require.Equal(t, st.Written, r.stored(t), "what was written is stored")
	require.Equal(t, int64(down), st.Written+evicted, "every line is stored or counted as evicted")

	const up = 30000
	took, statuses = r.sendHTTP(t, url, up, 1000, 4)
	require.Equal(t, map[int]int{http.StatusNoContent: up / 1000}, statuses)
	st = r.settled(t)
	require.Equal(t, evicted, st.DroppedByReason[morse.ReasonBufferFull], "nothing evicted once the sink is back")
	require.Equal(t, int64(down+up)-evicted, r.stored(t))
	t.Logf("healthy again: senders took %s, held back %s", took, r.probe.heldBack())
	require.Greater(t, r.probe.heldBack(), time.Second, "the listener pushes back once the sink is healthy")
	require.NoError(t, r.stop())
}
