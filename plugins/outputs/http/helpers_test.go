package http_test

import (
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/batch"
	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
	httpout "github.com/morse-agent/morse/plugins/outputs/http"
)

// TestMain stops the shared Prometheus after the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	testserver.StopShared()
	os.Exit(code)
}

// connected returns an output writing to url, changed by mods, after Init and Connect.
func connected(t testing.TB, url string, mods ...func(*httpout.HTTP)) *httpout.HTTP {
	t.Helper()
	o := httpout.New()
	o.URL = url
	for _, m := range mods {
		m(o)
	}
	o.SetLogger(testutil.QuietLogger())
	require.NoError(t, o.Init())
	require.NoError(t, o.Connect(testutil.Context(t)))
	t.Cleanup(func() { _ = o.Close() })
	return o
}

func remoteWrite(o *httpout.HTTP) { o.DataFormat = "prometheusremotewrite" }

// metric builds a metric; fields keep the types given.
func metric(t testing.TB, name string, tags map[string]string, fields map[string]any, ts time.Time) morse.Metric {
	t.Helper()
	m, skipped := morse.NewMetricFromMaps(name, tags, fields, ts)
	require.Zero(t, skipped)
	return m
}

// drained writes metrics through a batch writer in front of o, in one batch, and closes the
// writer, which writes what it holds before it returns: the agent's path, with its search
// for the metrics of a refused request. It returns the writer's counts and the metrics it
// dropped, by reason.
func drained(t *testing.T, o morse.Output, metrics []morse.Metric) (batch.Stats, map[string][]morse.Metric) {
	t.Helper()
	var mu sync.Mutex
	dropped := map[string][]morse.Metric{}
	var unknown []error
	w, err := batch.NewWriter(o, batch.Options{
		BatchSize: len(metrics), BufferLimit: len(metrics), FlushInterval: time.Hour,
		Logger: testutil.QuietLogger(), Name: "http", Initialized: true,
		OnDrop: func(e batch.DropEvent) {
			mu.Lock()
			defer mu.Unlock()
			if e.Partial {
				unknown = append(unknown, e.Err)
			}
			dropped[e.Reason] = append(dropped[e.Reason], e.Metrics...)
		},
	})
	require.NoError(t, err)
	require.NoError(t, w.WriteBatch(metrics))
	require.NoError(t, w.Close(testutil.Context(t)))
	require.Empty(t, unknown, "every drop is known metric by metric")
	return w.Stats(), dropped
}
