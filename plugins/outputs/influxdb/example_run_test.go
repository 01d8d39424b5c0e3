package influxdb

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/batch"
	"github.com/morse-agent/morse/internal/testserver"
)

// TestExampleBatchWriter runs what Example_batchWriter shows against a real InfluxDB.
func TestExampleBatchWriter(t *testing.T) {
	in := testserver.StartInfluxDB(t, testserver.InfluxOptions{})
	out := New()
	out.URLs = []string{in.URL()}
	out.Database = "app"
	w, err := batch.NewWriter(out, batch.Options{
		BatchSize: 1000, FlushInterval: time.Second, FlushJitter: 200 * time.Millisecond,
		BufferLimit: 10000, OnDrop: func(ev batch.DropEvent) { t.Errorf("lost %d: %v", ev.Count, ev.Err) },
	})
	require.NoError(t, err)
	require.NoError(t, w.Write(morse.NewMetric("requests",
		[]morse.Tag{{Key: "path", Value: "/api"}},
		[]morse.Field{{Key: "latency", Value: morse.Float(0.012)}}, time.Unix(0, 42))))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, w.Close(ctx))
	require.Equal(t, []int64{42}, storedTimes(t, in, "app", "requests"))

	_, err = batch.NewWriter(&InfluxDB{URLs: []string{"udp://127.0.0.1:8089"}, Database: "app"}, batch.Options{})
	require.ErrorContains(t, err, "urls", "NewWriter refuses an output its Validate refuses, naming the key")
}
