package mqtt_consumer

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/plugins/common/mqtt"
	"github.com/morse-agent/morse/selfstat"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testserver.StopSharedMosquitto()
	os.Exit(code)
}

var seq atomic.Int64

// unique returns a topic prefix and client id no other test uses on the shared broker.
func unique(t *testing.T) string {
	return fmt.Sprintf("t%d-%d", os.Getpid(), seq.Add(1))
}

// publisher connects a client of the given protocol to addr, for the tests to publish with.
func publisher(t *testing.T, addr, protocol string, persistent bool) mqtt.Client {
	t.Helper()
	u := &url.URL{Scheme: "tcp", Host: addr}
	cl, err := mqtt.NewClient(mqtt.Options{
		Servers: []*url.URL{u}, Protocol: protocol, ClientID: "pub-" + unique(t),
		ConnectTimeout: 5 * time.Second, MaxReconnectInterval: 2 * time.Second, KeepAlive: 10 * time.Second,
		Persistent: persistent,
	}, nil)
	require.NoError(t, err)
	require.NoError(t, cl.Connect(testutil.Context(t)))
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}

func publish(t *testing.T, cl mqtt.Client, topic string, qos byte, payloads ...string) {
	t.Helper()
	for _, p := range payloads {
		require.NoError(t, cl.Publish(testutil.Context(t), topic, []byte(p), qos, false))
	}
}

// consumerFor returns a validated, initialized input on broker address addr.
func consumerFor(t *testing.T, addr, protocol string, topics []string, edit func(*MQTTConsumer)) (*MQTTConsumer, *selfstat.PluginStats) {
	t.Helper()
	m := New()
	m.Servers = []string{"tcp://" + addr}
	m.Protocol = protocol
	m.Topics = topics
	m.ConnectionTimeout = morse.Duration(5 * time.Second)
	m.MaxReconnectInterval = morse.Duration(2 * time.Second)
	if edit != nil {
		edit(m)
	}
	st := selfstat.NewPluginStats(nil, "internal_mqtt_consumer", nil)
	m.SetStats(st)
	m.SetLogger(testutil.QuietLogger())
	require.NoError(t, m.Validate())
	require.NoError(t, m.Init())
	return m, st
}

// holdingAcc is a tracking accumulator whose groups are done only when the test says so,
// as if the outputs had not written them yet.
type holdingAcc struct {
	*testutil.Accumulator
	delivered chan morse.DeliveryInfo
	mu        sync.Mutex
	last      morse.TrackingID
	held      []morse.TrackingID
}

func newHoldingAcc() *holdingAcc {
	return &holdingAcc{Accumulator: &testutil.Accumulator{}, delivered: make(chan morse.DeliveryInfo, 1000)}
}

func (h *holdingAcc) WithTracking(int) morse.TrackingAccumulator { return h }

func (h *holdingAcc) AddTrackingMetricGroup(g []morse.Metric) morse.TrackingID {
	h.mu.Lock()
	h.last++
	id := h.last
	h.held = append(h.held, id)
	h.mu.Unlock()
	for _, m := range g {
		h.AddMetric(m)
	}
	return id
}

func (h *holdingAcc) Delivered() <-chan morse.DeliveryInfo { return h.delivered }

// release reports every group held so far done.
func (h *holdingAcc) release() {
	h.mu.Lock()
	held := h.held
	h.held = nil
	h.mu.Unlock()
	for _, id := range held {
		h.delivered <- morse.DeliveryInfo{ID: id, Delivered: true}
	}
}

func start(t *testing.T, m *MQTTConsumer, acc morse.Accumulator) {
	t.Helper()
	require.NoError(t, m.Start(testutil.Context(t), acc))
	t.Cleanup(m.Stop)
}

func wait(t *testing.T, acc *testutil.Accumulator, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, acc.Wait(ctx, n), "got %d metrics: %v", acc.NMetrics(), acc.Metrics())
}
