package iotdb_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/agent"
	"github.com/morse-agent/morse/config"
	"github.com/morse-agent/morse/internal/testserver"
	_ "github.com/morse-agent/morse/plugins/inputs/influxdb_listener" // the tests' way in
)

// The outputs.iotdb of a whole agent, against the real IoTDB: delivery tracking, the dead
// letter, the disk buffer across a restart, and backpressure while IoTDB is frozen.

// runConf runs an agent of conf, built from reg (nil: the default registry).
func runConf(t *testing.T, reg *morse.Registry, conf string) (*agent.Agent, *config.Config, func() error) {
	t.Helper()
	cfg, err := config.Load(config.Options{Registry: reg, Sources: []config.Source{{Name: "test.conf", Data: []byte(conf)}}})
	require.NoError(t, err)
	a, stop := testserver.RunAgent(t, cfg)
	return a, cfg, stop
}

// listenerURL waits for the agent's influxdb_listener to bind and returns its write URL.
func listenerURL(t *testing.T, cfg *config.Config) string {
	t.Helper()
	in := cfg.Inputs[0].Plugin.(testserver.Listener)
	require.Eventually(t, func() bool { return in.Addr() != nil }, 10*time.Second, time.Millisecond)
	return "http://" + in.Addr().String() + "/write?precision=ms"
}

// body is n lines of measurement name with host=h1, v numbered from first, one millisecond
// apart: every line is a point of its own, and sending one again overwrites it.
func body(name string, first, n int) string {
	var b strings.Builder
	for i := first; i < first+n; i++ {
		fmt.Fprintf(&b, "%s,host=h1 v=%di %d\n", name, i, t0.UnixMilli()+int64(i))
	}
	return b.String()
}

func post(t *testing.T, url, data string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "text/plain", strings.NewReader(data))
	require.NoError(t, err)
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(msg)
}

// TestListenerBackpressureWhileFrozen: IoTDB frozen (docker pause: SIGSTOP to every process)
// for less than the output's timeout is a slow IoTDB, not a failed one. The writes in flight
// wait, the buffer fills, and the influxdb_listener pushes back with 503 instead of taking
// what the buffer could not hold; once IoTDB runs again every accepted line is stored, none
// dropped.
func TestListenerBackpressureWhileFrozen(t *testing.T) {
	srv := testserver.SharedIoTDB(t)
	a, cfg, _ := runConf(t, nil, fmt.Sprintf(`
[agent]
  omit_hostname = true
  flush_interval = "50ms"
  metric_batch_size = 100
  metric_buffer_limit = 1000
[[inputs.influxdb_listener]]
  service_address = "127.0.0.1:0"
  backpressure = true
  backpressure_max_wait = "300ms"
[[outputs.iotdb]]
  url = %q
  database = "root.bp"
  timestamp_precision = "millisecond"
  timeout = "60s"
`, srv.URL()))
	url := listenerURL(t, cfg)
	code, msg := post(t, url, body("bp", 0, 100))
	require.Equal(t, http.StatusNoContent, code, msg)
	require.Eventually(t, func() bool { return countOrZero(t, srv, "root.bp.bp.h1") == 100 }, 30*time.Second, 20*time.Millisecond)

	srv.Pause(t)
	sent, refused := 100, ""
	for i := 0; i < 40 && refused == ""; i++ { // 4000 lines: four buffers
		data := body("bp", sent, 100)
		sent += 100
		if code, msg = post(t, url, data); code == http.StatusServiceUnavailable {
			refused = data
		} else {
			require.Equal(t, http.StatusNoContent, code, msg)
		}
	}
	require.NotEmpty(t, refused, "the listener pushed back while IoTDB was frozen")
	require.Contains(t, msg, "the outputs are full")
	require.Zero(t, a.Outputs()[0].Stats.Dropped)
	srv.Unpause(t)

	// The sender does as the 503 says: it sends the write again.
	require.Eventually(t, func() bool {
		code, _ := post(t, url, refused)
		return code == http.StatusNoContent
	}, 30*time.Second, 50*time.Millisecond)
	require.Eventually(t, func() bool { return countOrZero(t, srv, "root.bp.bp.h1") == sent }, 60*time.Second, 50*time.Millisecond)
	st := a.Outputs()[0].Stats
	require.Zero(t, st.Dropped, "%+v", st)
}

// countOrZero counts the points of v under path, 0 while there is none.
func countOrZero(t *testing.T, srv *testserver.IoTDB, path string) int {
	t.Helper()
	r := srv.Query(t, "select count(v) from "+path)
	if len(r.Values) == 0 || len(r.Values[0]) == 0 {
		return 0
	}
	n, err := r.Values[0][0].(interface{ Int64() (int64, error) }).Int64()
	require.NoError(t, err)
	return int(n)
}

// TestDiskBufferAcrossRestart: with buffer_strategy = "disk", what the agent took while IoTDB
// was frozen past the output's timeout survives the agent's stop, and the next agent on the
// same buffer directory stores all of it.
func TestDiskBufferAcrossRestart(t *testing.T) {
	srv := testserver.SharedIoTDB(t)
	conf := fmt.Sprintf(`
[agent]
  omit_hostname = true
  flush_interval = "50ms"
  metric_batch_size = 100
  shutdown_timeout = "1s"
[[inputs.influxdb_listener]]
  service_address = "127.0.0.1:0"
[[outputs.iotdb]]
  url = %q
  database = "root.disk"
  timestamp_precision = "millisecond"
  timeout = "300ms"
  buffer_strategy = "disk"
  buffer_directory = %q
`, srv.URL(), t.TempDir())
	a, cfg, stop := runConf(t, nil, conf)
	url := listenerURL(t, cfg)
	srv.Pause(t)
	for i := range 3 {
		code, msg := post(t, url, body("dq", i*100, 100))
		require.Equal(t, http.StatusNoContent, code, msg)
	}
	require.Eventually(t, func() bool { return a.Outputs()[0].Stats.WriteErrors > 0 }, 30*time.Second, 20*time.Millisecond)
	st := a.Outputs()[0].Stats
	require.Zero(t, st.Written)
	require.Zero(t, st.Dropped)
	_ = stop() // IoTDB is still frozen: the metrics stay in the buffer's files
	srv.Unpause(t)

	a, _, _ = runConf(t, nil, conf)
	require.Eventually(t, func() bool { return countOrZero(t, srv, "root.disk.dq.h1") == 300 }, 60*time.Second, 50*time.Millisecond)
	require.Zero(t, a.Outputs()[0].Stats.Dropped)
}

// trackedInput is a service input that hands its tracking accumulator to the test.
type trackedInput struct {
	acc chan morse.TrackingAccumulator
}

func (in *trackedInput) Gather(context.Context, morse.Accumulator) error { return nil }
func (in *trackedInput) Start(_ context.Context, acc morse.Accumulator) error {
	in.acc <- acc.(morse.DeliveryTracking).WithTracking(10)
	return nil
}
func (in *trackedInput) Stop() {}

// TestTrackingAndDeadLetter: IoTDB refuses a DOUBLE into an INT64 series and stores the rest
// of the batch (507). The tracked group that held the refused metric is reported not
// delivered, the other delivered; the dead letter holds exactly the refused metric, with
// the reason.
func TestTrackingAndDeadLetter(t *testing.T) {
	srv := testserver.SharedIoTDB(t)
	srv.NonQuery(t, "create timeseries root.trk.d.v with datatype=INT64")
	reg := morse.NewRegistry()
	info, ok := morse.DefaultRegistry().Output("iotdb")
	require.True(t, ok)
	require.NoError(t, reg.AddOutput(info))
	accs := make(chan morse.TrackingAccumulator, 1)
	require.NoError(t, reg.AddInput(morse.InputInfo{Name: "tracked", Description: "t",
		New: func() morse.Input { return &trackedInput{acc: accs} }}))
	dead := filepath.Join(t.TempDir(), "dead.lp")
	runConf(t, reg, fmt.Sprintf(`
[agent]
  omit_hostname = true
  flush_interval = "50ms"
[[inputs.tracked]]
[[outputs.iotdb]]
  url = %q
  database = "root.trk"
  timestamp_precision = "millisecond"
  dead_letter_file = %q
`, srv.URL(), dead))
	acc := <-accs
	m := func(i int, v morse.Value) morse.Metric {
		return morse.NewMetric("d", nil, []morse.Field{{Key: "v", Value: v}}, t0.Add(time.Duration(i)*time.Millisecond))
	}
	good := acc.AddTrackingMetricGroup([]morse.Metric{m(0, morse.Int(1)), m(1, morse.Int(2))})
	bad := acc.AddTrackingMetricGroup([]morse.Metric{m(2, morse.Int(3)), m(3, morse.Float(2.5))})
	var got []morse.DeliveryInfo
	for len(got) < 2 {
		select {
		case d := <-acc.Delivered():
			got = append(got, d)
		case <-time.After(30 * time.Second):
			t.Fatalf("delivered so far: %v", got)
		}
	}
	require.ElementsMatch(t, []morse.DeliveryInfo{{ID: good, Delivered: true}, {ID: bad, Delivered: false}}, got)
	require.Equal(t, 3, countOrZero(t, srv, "root.trk.d"))
	text, err := os.ReadFile(dead)
	require.NoError(t, err)
	require.Contains(t, string(text), "output=iotdb reason=field_type_conflict metrics=1")
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(text)), "\n") {
		if !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	require.Equal(t, []string{fmt.Sprintf("d v=2.5 %d", t0.Add(3*time.Millisecond).UnixNano())}, lines)
}
