package integration

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/agent"
	"github.com/morse-agent/morse/batch"
	"github.com/morse-agent/morse/config"
	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/plugins/outputs/influxdb"
)

// seqInput emits one metric per gather with a sequence number, so that the test knows
// exactly what was gathered and in which order.
type seqInput struct {
	mu sync.Mutex
	n  int64
}

func (s *seqInput) Gather(_ context.Context, acc morse.Accumulator) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	acc.AddMetric(morse.NewMetric("seq", nil, []morse.Field{{Key: "n", Value: morse.Int(s.n)}}, time.Now()))
	s.n++
	return nil
}

func (s *seqInput) count() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// outageRig is an Agent writing a steady sequence through a cuttable proxy into a real
// InfluxDB.
type outageRig struct {
	influx *testserver.Influx
	proxy  *testserver.Proxy
	in     *seqInput
	agent  *agent.Agent
	stop   func() error
}

const (
	rigBatch  = 50
	rigBuffer = 60
	rigFlush  = 500 * time.Millisecond
	rigGather = 50 * time.Millisecond // 20 metrics a second
	// rigLargeBuffer holds 10 s of metrics. Writes resume only when the backoff lets the
	// next attempt through, up to 4 s after a cut of a second or so (1 s doubling, full
	// jitter), so a buffer of rigBuffer may overflow in a short outage, however short the
	// cut; this one cannot.
	rigLargeBuffer = 200
)

func startOutageRig(t *testing.T, bufferLimit int) *outageRig {
	r := &outageRig{influx: testserver.StartInfluxDB(t, testserver.InfluxOptions{}), in: &seqInput{}}
	r.proxy = testserver.StartProxy(t, r.influx.Addr())
	r.influx.Exec(t, "CREATE DATABASE outage")

	cfg := config.DefaultConfig()
	cfg.Agent.Interval = morse.Duration(rigGather)
	cfg.Agent.RoundInterval = false
	cfg.Agent.OmitHostname = true
	cfg.Agent.ShutdownTimeout = morse.Duration(30 * time.Second)
	cfg.AddInput("seq", r.in)
	out := influxdb.New()
	out.URLs = []string{r.proxy.URL()}
	out.Database = "outage"
	out.SkipDatabaseCreation = true
	out.Timeout = morse.Duration(2 * time.Second)
	oc := cfg.AddOutput("influxdb", out)
	oc.Common.FlushInterval, oc.Common.MetricBatchSize, oc.Common.MetricBufferLimit = morse.Duration(rigFlush), rigBatch, bufferLimit

	r.agent, r.stop = testserver.RunAgent(t, cfg)
	require.Eventually(t, func() bool { return len(r.agent.Outputs()) == 1 }, 10*time.Second, time.Millisecond,
		"the agent started its output")
	return r
}

func (r *outageRig) stats() batch.Stats { return r.agent.Outputs()[0].Stats }

// cut makes the server unreachable and returns how many metrics had been written by the
// time the first attempt failed. The proxy lets a request already under way finish, so no
// write is left half done and that count is exact.
func (r *outageRig) cut(t *testing.T) (writtenBefore int64) {
	t.Helper()
	refused := r.proxy.Refused()
	r.proxy.Cut()
	require.Eventually(t, func() bool { return r.proxy.Refused() > refused }, time.Minute, time.Millisecond,
		"the output tried to write during the outage")
	return r.stats().Written
}

// stored returns the sequence numbers in the database, in time order.
func (r *outageRig) stored(t *testing.T) []int64 {
	t.Helper()
	res := r.influx.Query(t, "outage", "SELECT n FROM seq ORDER BY time")
	var out []int64
	for _, s := range res[0].Series {
		for _, row := range s.Values {
			v, ok := row[1].(int64)
			require.True(t, ok, "n %v is an integer", row[1])
			out = append(out, v)
		}
	}
	return out
}

// TestShortOutageLosesNothing runs metrics through a full Agent into a real InfluxDB while
// the server is unreachable for about a second, which the buffer holds with room to spare
// for the backoff: everything gathered is written once it is back.
func TestShortOutageLosesNothing(t *testing.T) {
	r := startOutageRig(t, rigLargeBuffer)
	require.Eventually(t, func() bool { return r.stats().Written > 0 }, time.Minute, time.Millisecond,
		"metrics flow before the outage")

	r.cut(t)
	waitGathered(t, r.in, 20)
	gatheredAtRestore := r.in.count()
	r.proxy.Restore()
	require.Eventually(t, func() bool { return r.stats().Written >= gatheredAtRestore }, 90*time.Second, 10*time.Millisecond,
		"after the short outage everything gathered during it is written")
	require.Positive(t, r.stats().WriteErrors, "the short outage failed writes")
	require.Zero(t, r.stats().Dropped, "an outage within buffer capacity loses nothing")
	require.NoError(t, r.stop())
	got := r.stored(t)
	require.Len(t, got, int(r.in.count()), "every metric gathered is stored")
	for i, n := range got {
		require.Equal(t, int64(i), n, "exactly once and in order")
	}
}

// TestLongOutageThroughAgent runs metrics through a full Agent into a real InfluxDB while
// the server is unreachable for much longer than the buffer holds.
func TestLongOutageThroughAgent(t *testing.T) {
	r := startOutageRig(t, rigBuffer)
	require.Eventually(t, func() bool { return r.stats().Written > 0 }, time.Minute, time.Millisecond,
		"metrics flow before the outage")

	// A long outage: about 160 metrics into a buffer of 60.
	refusedBefore := r.proxy.Refused()
	cutAt := time.Now()
	writtenAtCut := r.cut(t)
	waitGathered(t, r.in, 160)
	outage := time.Since(cutAt)
	refused := r.proxy.Refused() - refusedBefore
	r.proxy.Restore()
	require.Eventually(t, func() bool { return r.stats().BufferSize < rigBatch && r.stats().Dropped > 0 },
		90*time.Second, 10*time.Millisecond)
	require.NoError(t, r.stop())

	gathered := r.in.count()
	got := r.stored(t)
	st := r.stats()
	missing := gathered - int64(len(got))
	require.Positive(t, missing, "the long outage overflowed the buffer")
	require.Equal(t, missing, st.DroppedByReason[morse.ReasonBufferFull], "every missing metric is counted as buffer_full")
	require.Equal(t, st.Dropped, st.DroppedByReason[morse.ReasonBufferFull], "and nothing was dropped for another reason")

	// Exactly once and in order, with one gap: the oldest metrics of the long outage, which
	// begin right after the last one written before the cut.
	want := make([]int64, 0, gathered-missing)
	for n := int64(0); n < gathered; n++ {
		if n < writtenAtCut || n >= writtenAtCut+missing {
			want = append(want, n)
		}
	}
	require.Equal(t, want, got)

	// The retries followed the backoff (1 s doubling, full jitter), not the 0.5 s flush or a
	// tight loop: a loop would have made hundreds of attempts in this time.
	t.Logf("long outage %s: %d attempts refused by the cut proxy; %d gathered, %d written before it, %d stored, %d dropped",
		outage.Round(time.Millisecond), refused, gathered, writtenAtCut, len(got), missing)
	require.Positive(t, refused, "the output kept retrying")
	require.Less(t, float64(refused), outage.Seconds()+3, "fewer attempts than one per second of outage")
}

func waitGathered(t *testing.T, in *seqInput, more int64) {
	t.Helper()
	target := in.count() + more
	require.Eventually(t, func() bool { return in.count() >= target }, time.Minute, 5*time.Millisecond)
}
