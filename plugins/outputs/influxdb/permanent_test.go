package influxdb

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/batch"
	"github.com/morse-agent/morse/influxquery"
	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
)

// permanentCase is one permanent row of testdata/influxdb/classifier.md (or another answer
// of the same kind), produced by a real InfluxDB 1.6.7 through the output.
type permanentCase struct {
	name   string
	mod    func(*InfluxDB)
	setup  func(t *testing.T, in *testserver.Influx, db string)
	batch  []morse.Metric
	want   want
	stored []int64 // times of the points of "m" that the server kept; nil: no database
	// lost, when set, is how many points were really lost, where the server's answer says
	// less (see the mixed case).
	lost int
}

var now = time.Now().UnixNano()

func skipCreate(o *InfluxDB) { o.SkipDatabaseCreation = true }

// uints writes unsigned integers as 5u, which InfluxDB 1.6 cannot parse: the way to make the
// output send a malformed line.
func uints(o *InfluxDB) { o.InfluxUintSupport = true }

// floatField creates the database with a float field v in m, at time 1.
func floatField(t *testing.T, in *testserver.Influx, db string) {
	in.Exec(t, "CREATE DATABASE "+influxquery.QuoteIdent(db))
	require.Equal(t, 204, in.Write(t, db, "m v=0.5 1\n").Status)
}

var permanentCases = []permanentCase{{
	name: "database not found", mod: skipCreate,
	batch: []morse.Metric{point("m", 10, "v", 1.0)},
	want:  want{outcome: morse.OutcomeDropped, reason: morse.ReasonDatabaseNotFound},
}, {
	name:   "string into a float field, among good points",
	setup:  floatField,
	batch:  []morse.Metric{point("m", 10, "v", 1.0), point("m", 11, "v", "x"), point("m", 12, "v", 3.0)},
	want:   want{outcome: morse.OutcomePartial, reason: morse.ReasonFieldTypeConflict, dropped: 1},
	stored: []int64{1, 10, 12},
}, {
	name: "timestamp older than the retention policy",
	setup: func(t *testing.T, in *testserver.Influx, db string) {
		in.Exec(t, "CREATE DATABASE "+influxquery.QuoteIdent(db)+" WITH DURATION 1h")
	},
	batch:  []morse.Metric{point("m", 1e9, "v", 1.0), point("m", now, "v", 2.0)},
	want:   want{outcome: morse.OutcomePartial, reason: morse.ReasonBeyondRetention, dropped: 1},
	stored: []int64{now},
}, {
	name: "a malformed line among valid ones", mod: uints,
	batch:  []morse.Metric{point("m", 10, "v", 1.0), point("m", 11, "u", uint64(5)), point("m", 12, "v", 3.0)},
	want:   want{outcome: morse.OutcomePartial, reason: morse.ReasonUnableToParse, dropped: 1},
	stored: []int64{10, 12},
}, {
	name: "several malformed lines among valid ones: dropped=0, counted by clause", mod: uints,
	batch: []morse.Metric{
		point("m", 10, "v", 1.0), point("m", 11, "u", uint64(5)), point("m", 12, "v", 3.0),
		point("m", 13, "u", uint64(6)), point("m", 14, "v", 5.0),
	},
	want:   want{outcome: morse.OutcomePartial, reason: morse.ReasonUnableToParse, dropped: 2},
	stored: []int64{10, 12, 14},
}, {
	name: "only malformed lines: nothing stored", mod: uints,
	setup:  floatField, // so that the database has m and the query answers
	batch:  []morse.Metric{point("m", 11, "u", uint64(5)), point("m", 12, "u", uint64(6))},
	want:   want{outcome: morse.OutcomeDropped, reason: morse.ReasonUnableToParse},
	stored: []int64{1},
}, {
	name: "retention policy not found (a 500)", mod: func(o *InfluxDB) { o.RetentionPolicy = "nope" },
	setup:  floatField,
	batch:  []morse.Metric{point("m", 10, "v", 1.0)},
	want:   want{outcome: morse.OutcomeDropped, reason: ReasonRetentionPolicyNotFound},
	stored: []int64{1},
}, {
	// The server names only the type conflict and says dropped=1, though the malformed
	// line is lost too: the classifier counts what the answer says.
	name: "a malformed line and a type conflict: only the conflict is reported", mod: uints,
	setup: floatField,
	batch: []morse.Metric{
		point("m", 10, "v", 1.0), point("m", 11, "v", "s"), point("m", 12, "u", uint64(7)), point("m", 13, "v", 4.0),
	},
	want:   want{outcome: morse.OutcomePartial, reason: morse.ReasonFieldTypeConflict, dropped: 1},
	stored: []int64{1, 10, 13},
	lost:   2,
}}

// TestPermanentErrors writes each case through the output's Write, then again through a
// BatchWriter, each time into a database of its own.
func TestPermanentErrors(t *testing.T) {
	t.Parallel()
	in := testserver.StartInfluxDB(t, testserver.InfluxOptions{})
	for i, tc := range permanentCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Run("Write", func(t *testing.T) {
				db := dbName("perm_w", i)
				if tc.setup != nil {
					tc.setup(t, in, db)
				}
				o := connected(t, in.URL(), db, modOrNil(tc.mod))
				err := o.Write(testutil.Context(t), tc.batch)
				requireClass(t, err, tc.want)
				checkStored(t, in, db, tc)
			})
			t.Run("BatchWriter", func(t *testing.T) {
				db := dbName("perm_b", i)
				if tc.setup != nil {
					tc.setup(t, in, db)
				}
				o := connected(t, in.URL(), db, modOrNil(tc.mod))
				var drops dropRecorder
				w := batchWriter(t, o, batch.Options{BatchSize: len(tc.batch), OnDrop: drops.onDrop})
				require.NoError(t, w.WriteBatch(tc.batch))
				stats := settled(t, w, int64(len(tc.batch)))

				dropped := tc.want.dropped
				if tc.want.outcome == morse.OutcomeDropped {
					dropped = len(tc.batch)
				}
				require.Equal(t, map[string]int64{tc.want.reason: int64(dropped)}, stats.DroppedByReason)
				require.Equal(t, int64(len(tc.batch)-dropped), stats.Written)
				events := drops.get()
				requireDropEvent(t, events, tc.batch, dropped, tc.want.outcome)
				requireClass(t, events[0].Err, tc.want)
				checkStored(t, in, db, tc)
			})
		})
	}
}

func modOrNil(m func(*InfluxDB)) func(*InfluxDB) {
	if m == nil {
		return func(*InfluxDB) {}
	}
	return m
}

func dbName(prefix string, i int) string { return prefix + "_" + string(rune('a'+i)) }

func checkStored(t *testing.T, in *testserver.Influx, db string, tc permanentCase) {
	t.Helper()
	if tc.stored == nil {
		got := in.Query(t, "", "SHOW DATABASES")
		for _, row := range got[0].Series[0].Values {
			require.NotEqual(t, db, row[0], "the database must not have been created")
		}
		return
	}
	got := storedTimes(t, in, db, "m")
	require.Equal(t, tc.stored, got, "the good points of the batch are stored, the bad ones are not")
	if tc.lost > 0 {
		require.Equal(t, len(tc.batch)-tc.lost, countIn(tc.batch, got))
	}
}

// countIn counts how many times of got belong to batch.
func countIn(batch []morse.Metric, got []int64) int {
	n := 0
	for _, m := range batch {
		for _, ts := range got {
			if m.Time().UnixNano() == ts {
				n++
			}
		}
	}
	return n
}
