package mqtt

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/plugins/common/mqtt"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testserver.StopSharedMosquitto()
	os.Exit(code)
}

var seq atomic.Int64

func unique() string { return fmt.Sprintf("o%d-%d", os.Getpid(), seq.Add(1)) }

// received is what a subscriber got, topic and payload, in order.
type received struct {
	mu   sync.Mutex
	msgs [][2]string
}

func (r *received) all() [][2]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][2]string(nil), r.msgs...)
}

// subscribe subscribes a real client to filter at QoS 2 over protocol.
func subscribe(t *testing.T, addr, protocol, filter string) *received {
	t.Helper()
	r := &received{}
	cl, err := mqtt.NewClient(mqtt.Options{
		Servers: []*url.URL{{Scheme: "tcp", Host: addr}}, Protocol: protocol, ClientID: "sub-" + unique(),
		ConnectTimeout: 5 * time.Second, Topics: []string{filter}, QoS: 2,
		OnMessage: func(m *mqtt.Message) {
			r.mu.Lock()
			r.msgs = append(r.msgs, [2]string{m.Topic, string(m.Payload)})
			r.mu.Unlock()
			m.Ack()
		},
	}, nil)
	require.NoError(t, err)
	require.NoError(t, cl.Connect(testutil.Context(t)))
	t.Cleanup(func() { _ = cl.Close() })
	return r
}

func waitFor(t *testing.T, r *received, n int) [][2]string {
	t.Helper()
	require.Eventually(t, func() bool { return len(r.all()) >= n }, 10*time.Second, 5*time.Millisecond, "got %v", r.all())
	return r.all()
}

func output(t *testing.T, addr, protocol string, edit func(*MQTT)) *MQTT {
	t.Helper()
	o := New()
	o.Servers = []string{addr}
	o.Protocol = protocol
	o.ConnectionTimeout = morse.Duration(5 * time.Second)
	if edit != nil {
		edit(o)
	}
	o.SetLogger(testutil.QuietLogger())
	require.NoError(t, o.Validate())
	require.NoError(t, o.Init())
	require.NoError(t, o.Connect(testutil.Context(t)))
	t.Cleanup(func() { _ = o.Close() })
	return o
}

func metric(name, host string, fields ...morse.Field) morse.Metric {
	return morse.NewMetric(name, []morse.Tag{{Key: "host", Value: host}}, fields, time.Unix(1700000000, 0))
}

// Each layout publishes Telegraf's topics and payloads, at every QoS, over both protocols.
func TestLayouts(t *testing.T) {
	b := testserver.SharedMosquitto(t)
	batch := []morse.Metric{
		metric("cpu", "a", morse.Field{Key: "usage", Value: morse.Float(1.5)}),
		metric("cpu", "a", morse.Field{Key: "usage", Value: morse.Float(2.5)}),
		metric("mem", "b", morse.Field{Key: "used", Value: morse.Int(3)}, morse.Field{Key: "ok", Value: morse.Bool(true)}),
	}
	for _, proto := range []string{"3.1.1", "5"} {
		for qos := range 3 {
			t.Run(fmt.Sprintf("v%s/qos%d", proto, qos), func(t *testing.T) {
				p := unique()
				topic := p + `/{{ .Tag "host" }}/{{ .PluginName }}`
				r := subscribe(t, b.Addr, proto, p+"/#")

				each := output(t, b.Addr, proto, func(o *MQTT) { o.Topic, o.QoS = topic, qos })
				require.NoError(t, each.Write(testutil.Context(t), batch))
				assert.Equal(t, [][2]string{
					{p + "/a/cpu", "cpu,host=a usage=1.5 1700000000000000000\n"},
					{p + "/a/cpu", "cpu,host=a usage=2.5 1700000000000000000\n"},
					{p + "/b/mem", "mem,host=b used=3i,ok=true 1700000000000000000\n"},
				}, waitFor(t, r, 3))

				r = subscribe(t, b.Addr, proto, p+"/batch/#")
				batched := output(t, b.Addr, proto, func(o *MQTT) {
					o.Topic, o.QoS, o.Layout = p+`/batch/{{ .Name }}`, qos, "batch"
				})
				require.NoError(t, batched.Write(testutil.Context(t), batch))
				assert.Equal(t, [][2]string{
					{p + "/batch/cpu", "cpu,host=a usage=1.5 1700000000000000000\ncpu,host=a usage=2.5 1700000000000000000\n"},
					{p + "/batch/mem", "mem,host=b used=3i,ok=true 1700000000000000000\n"},
				}, waitFor(t, r, 2))

				r = subscribe(t, b.Addr, proto, p+"/field/#")
				fields := output(t, b.Addr, proto, func(o *MQTT) {
					o.Topic, o.QoS, o.Layout = p+`/field/{{ .Name }}`, qos, "field"
				})
				require.NoError(t, fields.Write(testutil.Context(t), batch[2:]))
				assert.Equal(t, [][2]string{{p + "/field/mem/used", "3"}, {p + "/field/mem/ok", "true"}}, waitFor(t, r, 2))
			})
		}
	}
}

// homie-v4 announces the device and node once, then the properties with their types.
func TestHomieV4(t *testing.T) {
	b := testserver.SharedMosquitto(t)
	p := unique()
	r := subscribe(t, b.Addr, "3.1.1", p+"/#")
	o := output(t, b.Addr, "3.1.1", func(o *MQTT) {
		o.Topic, o.Layout, o.QoS = p+`/{{ .Tag "host" }}`, "homie-v4", 1
		o.HomieDeviceName, o.HomieNodeID = `dev {{ .Tag "host" }}`, `{{ .Name }}`
	})
	require.NoError(t, o.Write(testutil.Context(t), []morse.Metric{metric("Disk_IO", "h1", morse.Field{Key: "free", Value: morse.Float(0.5)})}))
	d := p + "/h1"
	assert.Equal(t, [][2]string{
		{d + "/$homie", "4.0"}, {d + "/$name", "dev h1"}, {d + "/$state", "ready"},
		{d + "/$nodes", "disk-io"}, {d + "/disk-io/$name", "Disk_IO"},
		{d + "/disk-io/$properties", "free,host"},
		{d + "/disk-io/host", "h1"}, {d + "/disk-io/host/$name", "host"}, {d + "/disk-io/host/$datatype", "string"},
		{d + "/disk-io/free", "0.5"}, {d + "/disk-io/free/$name", "free"}, {d + "/disk-io/free/$datatype", "float"},
	}, waitFor(t, r, 12))
	require.NoError(t, o.Close())
	assert.Equal(t, [2]string{d + "/$state", "lost"}, waitFor(t, r, 13)[12])
}

// retain = true leaves the last message with the broker: a client that subscribes later
// gets it.
func TestRetain(t *testing.T) {
	b := testserver.SharedMosquitto(t)
	for _, proto := range []string{"3.1.1", "5"} {
		t.Run("v"+proto, func(t *testing.T) {
			p := unique()
			o := output(t, b.Addr, proto, func(o *MQTT) { o.Topic, o.Retain, o.QoS = p+"/{{ .Name }}", true, 1 })
			require.NoError(t, o.Write(testutil.Context(t), []morse.Metric{metric("r", "h", morse.Field{Key: "v", Value: morse.Int(7)})}))
			late := subscribe(t, b.Addr, proto, p+"/#")
			assert.Equal(t, [][2]string{{p + "/r", "r,host=h v=7i 1700000000000000000\n"}}, waitFor(t, late, 1))

			plain := output(t, b.Addr, proto, func(o *MQTT) { o.Topic, o.QoS = p+"/plain/{{ .Name }}", 1 })
			require.NoError(t, plain.Write(testutil.Context(t), []morse.Metric{metric("n", "h", morse.Field{Key: "v", Value: morse.Int(1)})}))
			later := subscribe(t, b.Addr, proto, p+"/#")
			o2 := output(t, b.Addr, proto, func(o *MQTT) { o.Topic = p + "/marker" })
			require.NoError(t, o2.Write(testutil.Context(t), []morse.Metric{metric("m", "h", morse.Field{Key: "v", Value: morse.Int(1)})}))
			got := waitFor(t, later, 2)
			assert.Equal(t, p+"/r", got[0][0], "only the retained message is kept for a late subscriber")
			assert.Equal(t, p+"/marker", got[1][0])
		})
	}
}

// A wrong password is refused at Connect with an error that says so; a broker that went
// away makes a write retryable, and once it is back the same batch is written.
func TestAuthAndBrokerDown(t *testing.T) {
	b := testserver.StartMosquitto(t)
	for _, proto := range []string{"3.1.1", "5"} {
		t.Run("v"+proto, func(t *testing.T) {
			o := New()
			o.Servers, o.Protocol = []string{b.AuthAddr}, proto
			o.Username, o.Password = testserver.MosquittoUser, "wrong"
			require.NoError(t, o.Init())
			err := o.Connect(testutil.Context(t))
			require.Error(t, err)
			assert.True(t, errors.Is(err, mqtt.ErrNotAuthorized), "%v", err)

			ok := output(t, b.AuthAddr, proto, func(o *MQTT) {
				o.Username, o.Password, o.QoS = testserver.MosquittoUser, testserver.MosquittoPassword, 1
				o.Timeout = morse.Duration(500 * time.Millisecond)
			})
			m := []morse.Metric{metric("d", "h", morse.Field{Key: "v", Value: morse.Int(1)})}
			require.NoError(t, ok.Write(testutil.Context(t), m))
			b.Stop(t)
			err = ok.Write(testutil.Context(t), m)
			require.Error(t, err)
			assert.Equal(t, morse.OutcomeRetry, morse.Classify(err), "%v", err)
			b.Start(t)
			r := subscribe(t, b.Addr, proto, "#")
			require.Eventually(t, func() bool {
				ctx, cancel := context.WithTimeout(testutil.Context(t), time.Second)
				defer cancel()
				return ok.Write(ctx, m) == nil
			}, 20*time.Second, 50*time.Millisecond)
			waitFor(t, r, 1)
		})
	}
}

func TestValidate(t *testing.T) {
	o := New()
	o.QoS, o.Layout, o.Topic, o.Protocol = 5, "homie-v4", "a/+/b", "4"
	o.PersistentSession = true
	err := o.Validate()
	require.Error(t, err)
	for _, key := range []string{"qos:", "topic:", "homie_device_name:", "homie_node_id:", "protocol:", "persistent_session:"} {
		assert.Contains(t, err.Error(), key)
	}
}
