package iotdb_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/batch"
	"github.com/morse-agent/morse/internal/testserver"
)

// batchWriter is the agent's writer around o, flushing and retrying fast.
func batchWriter(t *testing.T, o morse.Output) *batch.Writer {
	t.Helper()
	w, err := batch.NewWriter(o, batch.Options{BatchSize: 50, BufferLimit: 1000, FlushInterval: 20 * time.Millisecond,
		RetryInitial: 50 * time.Millisecond, RetryMax: 200 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = w.Close(ctx)
	})
	return w
}

func wave(t *testing.T, w *batch.Writer, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		require.NoError(t, w.Write(morse.NewMetric("s", nil, []morse.Field{{Key: "v", Value: morse.Int(int64(i))}}, t0.Add(time.Duration(i)*time.Millisecond))))
	}
}

func count(t *testing.T, srv *testserver.IoTDB, path string) json.Number {
	t.Helper()
	r := srv.Query(t, "select count(v) from "+path)
	require.Len(t, r.Values, 1)
	return r.Values[0][0].(json.Number)
}

// TestRestartMidStream stops IoTDB between two waves of metrics and starts it again: the
// writer keeps what it could not write and stores all of it once IoTDB is back.
func TestRestartMidStream(t *testing.T) {
	srv := testserver.SharedIoTDB(t)
	o := newOutput(t, srv, "root.restart")
	w := batchWriter(t, o)
	wave(t, w, 0, 100)
	require.Eventually(t, func() bool { return w.Stats().Written == 100 }, 30*time.Second, 20*time.Millisecond)
	srv.Stop(t)
	wave(t, w, 100, 100)
	require.Eventually(t, func() bool { return w.Stats().WriteErrors > 0 }, 30*time.Second, 20*time.Millisecond)
	srv.Start(t)
	wave(t, w, 200, 100)
	require.Eventually(t, func() bool { return w.Stats().Written == 300 }, 60*time.Second, 20*time.Millisecond)
	require.Zero(t, w.Stats().Dropped)
	require.Equal(t, json.Number("300"), count(t, srv, "root.restart.s"))
}

// TestPausedServer freezes IoTDB (docker pause: every process stopped as by SIGSTOP): writes
// time out and are retried, the buffer holds the metrics, and all of them are stored once
// IoTDB runs again.
func TestPausedServer(t *testing.T) {
	srv := testserver.SharedIoTDB(t)
	o := newOutput(t, srv, "root.paused")
	o.Timeout = morse.Duration(500 * time.Millisecond)
	require.NoError(t, o.Init())
	w := batchWriter(t, o)
	srv.Pause(t)
	wave(t, w, 0, 200)
	require.Eventually(t, func() bool { return w.Stats().WriteErrors >= 2 }, 30*time.Second, 20*time.Millisecond)
	require.Zero(t, w.Stats().Written)
	require.Zero(t, w.Stats().Dropped)
	require.GreaterOrEqual(t, w.Stats().BufferSize, 200-o.MaxConcurrentWrites()*50,
		"held: the buffer, and at most MaxConcurrentWrites batches of 50 in flight")
	srv.Unpause(t)
	require.Eventually(t, func() bool { return w.Stats().Written == 200 }, 60*time.Second, 20*time.Millisecond)
	require.Zero(t, w.Stats().Dropped)
	require.Equal(t, json.Number("200"), count(t, srv, "root.paused.s"))
}
