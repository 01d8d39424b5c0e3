package influxdblistener

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/config"
	"github.com/morse-agent/morse/internal/testutil"
)

// TestASlowSinkSlowsTheHTTPSender: the agent with one output whose sink takes 200 ms per
// write of 500 lines (at most 2,500 lines/s a write in flight), fed by two HTTP clients
// that send 20,000 lines flat out, far faster. Every line arrives, none is evicted, no
// write is refused, and the senders were slowed: the listener held their writes back.
func TestASlowSinkSlowsTheHTTPSender(t *testing.T) {
	l := newListener(t)
	cfg := config.DefaultConfig()
	cfg.Agent.OmitHostname = true
	cfg.Agent.FlushInterval = morse.Duration(time.Second)
	cfg.AddInput("influxdb_listener", l)
	sink := &testutil.ScriptOutput{Answer: func(int, []morse.Metric) error {
		time.Sleep(200 * time.Millisecond) // the sink's own pace, not a wait for the test
		return nil
	}}
	oc := cfg.AddOutput("slow", sink)
	oc.Common.MetricBatchSize, oc.Common.MetricBufferLimit = 500, 2000
	ag := runAgent(t, cfg, l)

	const senders, bodies, perBody = 2, 10, 1000
	took := sendFlatOut(t, newClient(t, l.Addr(), nil), senders, bodies, perBody)
	const lines = senders * bodies * perBody
	require.Eventually(t, func() bool {
		_, written := sink.Snapshot()
		return len(written) == lines
	}, 10*time.Second, 10*time.Millisecond, "every line reaches the sink: %+v", ag.Outputs()[0].Stats)
	st := ag.Outputs()[0].Stats
	require.Zero(t, st.Dropped, "nothing evicted while the sink keeps up")
	require.Equal(t, int64(lines), st.Written)
	_, written := sink.Snapshot()
	seen := make(map[int64]bool, lines)
	for _, m := range written {
		v, _ := m.Field("n")
		seen[v.Int()] = true
	}
	require.Len(t, seen, lines, "each line once")
	held := time.Duration(l.c.waitNs.Get())
	t.Logf("senders took %v, held back %v in all, %d refused", took, held, l.c.busy.Get())
	// Unslowed, 20,000 lines take a few tens of milliseconds; the sink needs at least
	// (20,000 - 2,000 buffered) / 2,500 per second a write in flight.
	require.Greater(t, took, time.Second, "the senders were slowed")
	require.Greater(t, held, time.Second, "the listener held their writes back")
	require.Zero(t, l.c.busy.Get(), "no write waited past backpressure_max_wait")
}

// sendFlatOut has senders clients send bodies writes of perBody lines each, each line with
// its own number n, as fast as they are answered; every answer must be 204. It returns how
// long they took.
func sendFlatOut(t *testing.T, c *client, senders, bodies, perBody int) time.Duration {
	t.Helper()
	begun := time.Now()
	var wg sync.WaitGroup
	answers := make([][]answer, senders)
	for s := range senders {
		wg.Go(func() {
			for b := range bodies {
				var body strings.Builder
				for i := range perBody {
					n := (s*bodies+b)*perBody + i
					fmt.Fprintf(&body, "slow,sender=s%d n=%di %d\n", s, n, 1700000000000000000+int64(n))
				}
				a, err := c.do("POST", "/write?db=x", []byte(body.String()))
				if err != nil {
					a = answer{body: err.Error()}
				}
				answers[s] = append(answers[s], a)
			}
		})
	}
	wg.Wait()
	took := time.Since(begun)
	for s := range senders {
		for b, a := range answers[s] {
			require.Equal(t, http.StatusNoContent, a.status, "sender %d, body %d: %s", s, b, a.body)
		}
	}
	return took
}
