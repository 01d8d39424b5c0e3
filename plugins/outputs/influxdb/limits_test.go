package influxdb

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/batch"
	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
)

// TestServerLimits covers the answers of a server with limits: max-values-per-tag,
// max-series-per-database.
func TestServerLimits(t *testing.T) {
	t.Parallel()
	in := testserver.StartInfluxDB(t, testserver.InfluxOptions{MaxValuesPerTag: 2, MaxSeriesPerDatabase: 3})

	t.Run("max-values-per-tag", func(t *testing.T) {
		for _, mode := range []string{"Write", "BatchWriter"} {
			t.Run(mode, func(t *testing.T) {
				db := "lim_v_" + strings.ToLower(mode)
				o := connected(t, in.URL(), db)
				require.NoError(t, o.Write(testutil.Context(t), []morse.Metric{point("m", 1, "#t", "a", "v", 1.0), point("m", 2, "#t", "b", "v", 2.0)}))
				batch := []morse.Metric{
					point("m", 11, "#t", "a", "v", 11.0), point("m", 12, "#t", "b", "v", 12.0), point("m", 13, "#t", "c", "v", 13.0),
					point("m", 14, "#t", "a", "v", 14.0), point("m", 15, "#t", "b", "v", 15.0),
				}
				w := want{outcome: morse.OutcomePartial, reason: ReasonMaxValuesPerTag, dropped: 1}
				writeAndCheck(t, o, mode, batch, w)
				// The server's quirk (see internal/testserver): it says dropped=1, yet a@11 is
				// lost besides c@13. The answer is all that can be counted.
				require.Equal(t, []int64{1, 2, 12, 14, 15}, storedTimes(t, in, db, "m"))
			})
		}
	})

	t.Run("max-series-per-database", func(t *testing.T) {
		o := connected(t, in.URL(), "lim_s")
		batch := []morse.Metric{
			point("m", 1, "#s", "1", "v", 1.0), point("m", 1, "#s", "2", "v", 1.0),
			point("m", 1, "#s", "3", "v", 1.0), point("m", 1, "#s", "4", "v", 1.0),
		}
		writeAndCheck(t, o, "Write", batch, want{outcome: morse.OutcomePartial, reason: ReasonMaxSeriesPerDatabase, dropped: 4})
		require.Empty(t, in.Query(t, "lim_s", "SELECT * FROM m")[0].Series, "the whole batch was refused")
	})

	t.Run("max-series-per-database counts points of new series, not series", func(t *testing.T) {
		// A quirk of the real 1.6.7: four points of one new series exceed a limit of three.
		o := connected(t, in.URL(), "lim_p")
		batch := []morse.Metric{point("m", 1, "v", 1.0), point("m", 2, "v", 1.0), point("m", 3, "v", 1.0), point("m", 4, "v", 1.0)}
		writeAndCheck(t, o, "Write", batch, want{outcome: morse.OutcomePartial, reason: ReasonMaxSeriesPerDatabase, dropped: 4})
		require.NoError(t, o.Write(testutil.Context(t), batch[:3]), "three fit")
		require.NoError(t, o.Write(testutil.Context(t), batch), "and then the series exists")
		require.Equal(t, []int64{1, 2, 3, 4}, storedTimes(t, in, "lim_p", "m"))
	})
}

// TestBodyLimit covers 413, which a server with max-body-size sends for a larger body.
func TestBodyLimit(t *testing.T) {
	t.Parallel()
	const maxBody = 4096
	in := testserver.StartInfluxDB(t, testserver.InfluxOptions{
		Env: map[string]string{"INFLUXDB_HTTP_MAX_BODY_SIZE": "4096"},
	})

	t.Run("413 splits the batch until it fits", func(t *testing.T) {
		o := connected(t, in.URL(), "lim_big")
		var batch []morse.Metric
		var times []int64
		for i := range 1500 {
			batch = append(batch, point("m", int64(i+1), "v", float64(i)+0.5))
			times = append(times, int64(i+1))
		}
		body, _, _ := o.serialize(o.getScratch(), batch)
		require.Greater(t, len(body), 2*maxBody, "the batch must be over max-body-size")
		require.NoError(t, o.Write(testutil.Context(t), batch))
		require.Equal(t, times, storedTimes(t, in, "lim_big", "m"), "every point arrives, once")
	})

	t.Run("413 for one line: that line is dropped, the rest written", func(t *testing.T) {
		for _, mode := range []string{"Write", "BatchWriter"} {
			t.Run(mode, func(t *testing.T) {
				db := "lim_line_" + strings.ToLower(mode)
				o := connected(t, in.URL(), db)
				batch := []morse.Metric{
					point("m", 1, "v", 1.0), point("m", 2, "s", strings.Repeat("x", maxBody)),
					point("m", 3, "v", 3.0), point("m", 4, "v", 4.0),
				}
				writeAndCheck(t, o, mode, batch, want{outcome: morse.OutcomePartial, reason: ReasonTooLarge, dropped: 1})
				require.Equal(t, []int64{1, 3, 4}, storedTimes(t, in, db, "m"))
			})
		}
	})
}

// writeAndCheck writes sent through the output (mode "Write") or a BatchWriter and checks
// the classification, and for a BatchWriter its counters and OnDrop.
func writeAndCheck(t *testing.T, o *InfluxDB, mode string, sent []morse.Metric, w want) {
	t.Helper()
	if mode == "Write" {
		requireClass(t, o.Write(testutil.Context(t), sent), w)
		return
	}
	var drops dropRecorder
	bw := batchWriter(t, o, batch.Options{BatchSize: len(sent), OnDrop: drops.onDrop})
	require.NoError(t, bw.WriteBatch(sent))
	stats := settled(t, bw, int64(len(sent)))
	dropped := w.dropped
	if w.outcome == morse.OutcomeDropped {
		dropped = len(sent)
	}
	require.Equal(t, map[string]int64{w.reason: int64(dropped)}, stats.DroppedByReason)
	require.Equal(t, int64(len(sent)-dropped), stats.Written)
	events := drops.get()
	requireDropEvent(t, events, sent, dropped, w.outcome)
	requireClass(t, events[0].Err, w)
}
