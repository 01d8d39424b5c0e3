package mqtt_consumer

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
)

// A QoS 1 message whose metrics no output has written yet is not acknowledged: the input
// stops, a new one resumes the persistent session and gets it again, together with what
// was published meanwhile. Once it is done, it is acknowledged and never comes again.
func TestPersistentSessionResumesUnacknowledged(t *testing.T) {
	b := testserver.SharedMosquitto(t)
	for _, proto := range []string{"3.1.1", "5"} {
		t.Run("v"+proto, func(t *testing.T) {
			prefix := unique(t)
			edit := func(m *MQTTConsumer) {
				m.QoS, m.PersistentSession, m.ClientID = 1, true, "c-"+prefix
			}
			pub := publisher(t, b.Addr, proto, false)

			m1, _ := consumerFor(t, b.Addr, proto, []string{prefix + "/#"}, edit)
			held := newHoldingAcc()
			require.NoError(t, m1.Start(testutil.Context(t), held))
			publish(t, pub, prefix+"/a", 1, "m n=1i 1700000000000000000")
			wait(t, held.Accumulator, 1)
			m1.Stop() // not delivered, so not acknowledged

			publish(t, pub, prefix+"/a", 1, "m n=2i 1700000000000000000") // while no one listens

			m2, _ := consumerFor(t, b.Addr, proto, []string{prefix + "/#"}, edit)
			held2 := newHoldingAcc()
			start(t, m2, held2)
			wait(t, held2.Accumulator, 2)
			assert.Equal(t, []int64{1, 2}, values(held2.Metrics()))
			held2.release()
			// Once both are done, both are acknowledged (Stop lets the library send
			// what it holds).
			require.Eventually(t, func() bool { return len(m2.inFlight()) == 0 }, 10*time.Second, 5*time.Millisecond)
			m2.Stop()

			m3, _ := consumerFor(t, b.Addr, proto, []string{prefix + "/#"}, edit)
			acc3 := &testutil.Accumulator{}
			start(t, m3, acc3)
			publish(t, pub, prefix+"/a", 1, "m n=3i 1700000000000000000")
			wait(t, acc3, 1)
			assert.Equal(t, []int64{3}, values(acc3.Metrics()), "acknowledged messages must not come again")
		})
	}
}

// The broker restarts while a QoS 1 stream flows from a publisher to a persistent
// consumer: every message arrives (at least once), none is lost.
func TestBrokerRestartLosesNothingAtQoS1(t *testing.T) {
	b := testserver.StartMosquitto(t)
	const n = 400
	for _, proto := range []string{"3.1.1", "5"} {
		t.Run("v"+proto, func(t *testing.T) {
			prefix := unique(t)
			m, _ := consumerFor(t, b.Addr, proto, []string{prefix + "/#"}, func(m *MQTTConsumer) {
				m.QoS, m.PersistentSession, m.ClientID = 1, true, "c-"+prefix
				m.MaxReconnectInterval = morse.Duration(200 * time.Millisecond)
			})
			acc := &testutil.Accumulator{}
			start(t, m, acc)
			pub := publisher(t, b.Addr, proto, true)
			ctx := testutil.Context(t)
			for i := range n {
				if i == n/2 {
					b.Stop(t)
					b.Start(t)
				}
				line := fmt.Sprintf("s seq=%di 1700000000000000000", i)
				// A publish that fails while the broker is away is tried again, as the
				// batch writer retries a write: at least once.
				for {
					err := pub.Publish(ctx, prefix+"/s", []byte(line), 1, false)
					if err == nil {
						break
					}
					select {
					case <-ctx.Done():
						t.Fatalf("publish %d: %v", i, err)
					case <-time.After(20 * time.Millisecond):
					}
				}
			}
			seen := map[int64]bool{}
			require.Eventually(t, func() bool {
				for _, v := range values(acc.Metrics()) {
					seen[v] = true
				}
				return len(seen) == n
			}, 30*time.Second, 10*time.Millisecond, "distinct messages received: %d of %d", len(seen), n)
			for v := range seen {
				require.True(t, v >= 0 && v < n, "unexpected seq %d", v)
			}
			t.Logf("protocol %s: %d messages sent, %d received (%d duplicates)", proto, n, acc.NMetrics(), acc.NMetrics()-n)
		})
	}
}

// values returns the integer field of each metric (n or seq).
func values(ms []morse.Metric) []int64 {
	var out []int64
	for _, m := range ms {
		for _, f := range m.Fields() {
			if f.Value.Type() == morse.TypeInt {
				out = append(out, f.Value.Int())
			}
		}
	}
	return out
}

// inFlight lists the messages not yet acknowledged.
func (m *MQTTConsumer) inFlight() []*entry {
	m.mu.Lock()
	c := m.c
	m.mu.Unlock()
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*entry(nil), c.queue...)
}

// A broker that is not up when the input starts is waited for: Start succeeds, and the
// messages come once it listens.
func TestStartBeforeBroker(t *testing.T) {
	b := testserver.StartMosquitto(t)
	b.Stop(t)
	prefix := unique(t)
	m, _ := consumerFor(t, b.Addr, "5", []string{prefix + "/#"}, func(m *MQTTConsumer) {
		m.MaxReconnectInterval = morse.Duration(time.Second)
	})
	acc := &testutil.Accumulator{}
	start(t, m, acc)
	b.Start(t)
	pub := publisher(t, b.Addr, "5", false)
	require.Eventually(t, func() bool {
		publish(t, pub, prefix+"/late", 0, "late v=1i 1700000000000000000")
		return acc.NMetrics() > 0
	}, 20*time.Second, 100*time.Millisecond)
}
