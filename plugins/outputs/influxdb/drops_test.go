package influxdb

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/batch"
	"github.com/morse-agent/morse/internal/testserver"
)

// TestDropEventsAgainstInfluxDB: what a batch writer reports lost, against a real InfluxDB
// 1.6.7, equals what the server dropped: the count of a partial write is the server's
// dropped=N, and a routed write reports only the metrics of the sub-request that failed.
func TestDropEventsAgainstInfluxDB(t *testing.T) {
	in := testserver.StartInfluxDB(t, testserver.InfluxOptions{})

	t.Run("partial write", func(t *testing.T) {
		floatField(t, in, "acc_partial")
		o := connected(t, in.URL(), "acc_partial")
		var sent []morse.Metric
		for i := range 2000 {
			var v any = float64(i)
			if i%4 == 3 {
				v = "conflict" // 500 strings into a float field
			}
			sent = append(sent, point("m", int64(100+i), "v", v))
		}
		var drops dropRecorder
		w := batchWriter(t, o, batch.Options{BatchSize: len(sent), OnDrop: drops.onDrop})
		require.NoError(t, w.WriteBatch(sent))
		st := settled(t, w, int64(len(sent)))
		require.Equal(t, int64(1500), st.Written)
		require.Equal(t, map[string]int64{morse.ReasonFieldTypeConflict: 500}, st.DroppedByReason)
		requireDropEvent(t, drops.get(), sent, 500, morse.OutcomePartial)
		require.Len(t, storedTimes(t, in, "acc_partial", "m"), 1501, "1500 and the point that typed the field")
	})

	t.Run("routed write with one database missing", func(t *testing.T) {
		in.Exec(t, "CREATE DATABASE acc_present")
		o := connected(t, in.URL(), "acc_default", func(o *InfluxDB) {
			o.DatabaseTag, o.ExcludeDatabaseTag, o.SkipDatabaseCreation = "db", true, true
		})
		var sent, lost []morse.Metric
		for i := range 400 {
			db := "acc_present"
			if i%2 == 1 {
				db = "acc_missing"
			}
			m := point("m", int64(100+i), "#db", db, "#i", strconv.Itoa(i), "v", 1.0)
			sent = append(sent, m)
			if db == "acc_missing" {
				lost = append(lost, m)
			}
		}
		var drops dropRecorder
		w := batchWriter(t, o, batch.Options{BatchSize: len(sent), OnDrop: drops.onDrop})
		require.NoError(t, w.WriteBatch(sent))
		st := settled(t, w, int64(len(sent)))
		require.Equal(t, int64(200), st.Written)
		require.Equal(t, map[string]int64{morse.ReasonDatabaseNotFound: 200}, st.DroppedByReason)
		events := drops.get()
		require.Len(t, events, 1)
		require.Equal(t, 200, events[0].Count)
		require.False(t, events[0].Partial, "the server refused whole sub-requests: the lost metrics are known")
		require.Equal(t, lost, events[0].Metrics, "only the metrics routed to the missing database")
		require.Len(t, storedTimes(t, in, "acc_present", "m"), 200)
	})
}

// TestConflictsWithinABatchDropOnlyTheConflictingPoints: whatever InfluxDB 1.6.7 answers
// for a batch whose points disagree on a field's type, a batch writer stores every point
// that agrees with the first and drops exactly the others.
func TestConflictsWithinABatchDropOnlyTheConflictingPoints(t *testing.T) {
	in := testserver.StartInfluxDB(t, testserver.InfluxOptions{})
	o := connected(t, in.URL(), "acc_inbatch")
	var sent []morse.Metric
	for i := range 1000 {
		var v any = float64(i) // the first point makes v a float
		if i == 333 || i == 777 {
			v = "text"
		}
		sent = append(sent, point("m", int64(100+i), "v", v))
	}
	var drops dropRecorder
	w := batchWriter(t, o, batch.Options{BatchSize: len(sent), OnDrop: drops.onDrop})
	require.NoError(t, w.WriteBatch(sent))
	st := settled(t, w, int64(len(sent)))
	require.Equal(t, int64(998), st.Written)
	require.Equal(t, map[string]int64{morse.ReasonFieldTypeConflict: 2}, st.DroppedByReason)
	require.Len(t, storedTimes(t, in, "acc_inbatch", "m"), 998)
}
