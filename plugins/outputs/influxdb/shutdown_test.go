package influxdb

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/batch"
	"github.com/morse-agent/morse/internal/testserver"
)

// TestShutdownReportsAnUnansweredWriteAsUnknown: an embedded batch writer whose InfluxDB
// stops answering (docker pause: its port still takes connections) while a batch is in
// flight and its buffer fills up again. Close cancels the write at its deadline and reports
// each metric once: the batch in flight, sent with no answer, as unknown, the buffer as
// shutdown, and UnsentError.Left counts both. Nothing is evicted as buffer_full. Once the
// server resumes, it stores what it had received: the database then holds the unknown
// metrics, and none of those reported as surely left unsent.
func TestShutdownReportsAnUnansweredWriteAsUnknown(t *testing.T) {
	t.Parallel()
	const limit = 1000
	in := testserver.StartInfluxDB(t, testserver.InfluxOptions{})
	rec := &dropRecorder{}
	w := batchWriter(t, connected(t, in.URL(), "stop"), batch.Options{BatchSize: limit, BufferLimit: limit,
		OnDrop: rec.onDrop})
	// The writer connects (creating the database) on its first write, before the pause.
	require.NoError(t, w.WriteBatch([]morse.Metric{point("warmup", 1, "v", 1.0)}))
	settled(t, w, 1)

	in.Pause(t)
	var sent []morse.Metric
	for i := range 2 * limit {
		sent = append(sent, point("m", int64(i+1), "v", float64(i)))
	}
	require.NoError(t, w.WriteBatch(sent[:limit])) // a full batch: it leaves at once
	require.Eventually(t, func() bool {
		_, writing := w.WritingFor(time.Now())
		return writing
	}, 10*time.Second, time.Millisecond, "the first batch is in flight")
	require.NoError(t, w.WriteBatch(sent[limit:])) // the buffer is full again

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var unsent *batch.UnsentError
	require.ErrorAs(t, w.Close(ctx), &unsent)

	byReason := map[string][]int64{}
	total := 0
	for _, ev := range rec.get() {
		for _, m := range ev.Metrics {
			byReason[ev.Reason] = append(byReason[ev.Reason], m.Time().UnixNano())
		}
		total += ev.Count
	}
	times := func(ms []morse.Metric) (out []int64) {
		for _, m := range ms {
			out = append(out, m.Time().UnixNano())
		}
		return out
	}
	require.Len(t, byReason, 2, "unknown and shutdown, no buffer_full: %v", slices.Collect(maps.Keys(byReason)))
	require.True(t, slices.Equal(times(sent[:limit]), byReason[morse.ReasonUnknown]), "the batch in flight is unknown")
	require.True(t, slices.Equal(times(sent[limit:]), byReason[morse.ReasonShutdown]), "the buffer's are shutdown")
	require.Equal(t, 2*limit, total, "each metric reported once")
	require.Equal(t, 2*limit, unsent.Left, "Left counts the batch in flight")
	require.Equal(t, limit, unsent.Unknown)
	st := w.Stats()
	require.Equal(t, map[string]int64{morse.ReasonUnknown: limit, morse.ReasonShutdown: limit}, st.DroppedByReason)

	in.Unpause(t)
	var stored []int64
	require.Eventually(t, func() bool {
		stored = storedTimes(t, in, "stop", "m")
		return len(stored) >= limit
	}, 30*time.Second, 50*time.Millisecond, "the server stores the request it received while paused")
	require.True(t, slices.Equal(byReason[morse.ReasonUnknown], stored), "what is stored is exactly what was reported unknown")
	for _, ts := range byReason[morse.ReasonShutdown] {
		require.False(t, slices.Contains(stored, ts), "a metric reported as left unsent is not stored")
	}
	t.Logf("reported unknown %d, shutdown %d; stored after the server resumed: %d, all of them among the unknown",
		len(byReason[morse.ReasonUnknown]), len(byReason[morse.ReasonShutdown]), len(stored))
}
