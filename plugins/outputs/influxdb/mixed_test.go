package influxdb

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/batch"
	"github.com/morse-agent/morse/influxquery"
	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
)

// mixedCase is a batch that InfluxDB 1.6.7 refuses in part for several reasons at once. The
// server's answer names one of them; the output must still count each exactly.
type mixedCase struct {
	name  string
	rp    string // the output's retention_policy; "" for the database's default
	setup func(t *testing.T, in *testserver.Influx, db string)
	// batch builds the metrics, and says how many each reason must drop. Every metric not
	// dropped must be stored.
	batch func(now time.Time) ([]morse.Metric, map[string]int)
	mod   func(*InfluxDB)
}

// createWith creates db with a default retention policy of the given duration and shard
// duration, and a float field v in m at each of the times at, so that strings conflict.
func createWith(dur, shard string, at ...func(now time.Time) time.Time) func(*testing.T, *testserver.Influx, string) {
	return func(t *testing.T, in *testserver.Influx, db string) {
		in.Exec(t, "CREATE DATABASE "+influxquery.QuoteIdent(db))
		if dur != "" {
			in.Exec(t, fmt.Sprintf("CREATE RETENTION POLICY r ON %s DURATION %s REPLICATION 1 SHARD DURATION %s DEFAULT",
				influxquery.QuoteIdent(db), dur, shard))
		}
		for _, f := range at {
			lp := fmt.Sprintf("m v=0.5 %d\n", f(time.Now()).UnixNano())
			require.Equal(t, 204, in.Write(t, db, lp).Status)
		}
	}
}

func ago(d time.Duration) func(time.Time) time.Time {
	return func(now time.Time) time.Time { return now.Add(-d) }
}

// pts makes n points of m at t, t+1µs, ..., with field v set to val.
func pts(n int, t time.Time, val any) []morse.Metric {
	var out []morse.Metric
	for i := range n {
		out = append(out, point("m", t.Add(time.Duration(i)*time.Microsecond).UnixNano(), "v", val))
	}
	return out
}

func concat(parts ...[]morse.Metric) []morse.Metric {
	var out []morse.Metric
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

var mixedCases = []mixedCase{{
	// Issue 33, item 10: the server said dropped=2 and stored 5 of 10.
	name:  "type conflicts and points beyond a 1h policy",
	setup: createWith("1h", "1h", ago(time.Minute)),
	batch: func(now time.Time) ([]morse.Metric, map[string]int) {
		return concat(pts(3, now, 1.0), pts(2, now.Add(time.Millisecond), "s"), pts(2, now.Add(2*time.Millisecond), 2.0),
				pts(3, now.Add(-2*time.Hour), 3.0)),
			map[string]int{morse.ReasonFieldTypeConflict: 2, morse.ReasonBeyondRetention: 3}
	},
}, {
	name:  "type conflicts in two shard groups of autogen (infinite, 7d groups)",
	setup: createWith("", "", ago(0), ago(8*24*time.Hour)),
	batch: func(now time.Time) ([]morse.Metric, map[string]int) {
		return concat(pts(2, now, "a"), pts(3, now.Add(-8*24*time.Hour), "b"), pts(4, now.Add(-8*24*time.Hour+time.Second), 1.0)),
			map[string]int{morse.ReasonFieldTypeConflict: 5}
	},
}, {
	name: "beyond a 24h policy of 1h groups, a group straddling the cutoff kept whole",
	rp:   "r",
	setup: func(t *testing.T, in *testserver.Influx, db string) {
		in.Exec(t, "CREATE DATABASE "+influxquery.QuoteIdent(db))
	},
	batch: nil, // see straddleCase
}, {
	name: "malformed lines beyond the policy, type conflicts within it", mod: uints,
	setup: createWith("1h", "1h", ago(time.Minute)),
	batch: func(now time.Time) ([]morse.Metric, map[string]int) {
		old := now.Add(-3 * time.Hour)
		return concat(pts(2, now, 1.0), pts(1, now.Add(time.Millisecond), "s"),
				pts(2, old, 1.0), pts(2, old.Add(time.Millisecond), uint64(7))),
			map[string]int{morse.ReasonFieldTypeConflict: 1, morse.ReasonBeyondRetention: 2, morse.ReasonUnableToParse: 2}
	},
}, {
	name: "malformed lines and type conflicts in different shard groups", mod: uints,
	setup: createWith("", "", ago(0)),
	batch: func(now time.Time) ([]morse.Metric, map[string]int) {
		return concat(pts(2, now, 1.0), pts(2, now.Add(time.Millisecond), "s"),
				pts(2, now.Add(-10*24*time.Hour), 1.0), pts(3, now.Add(-10*24*time.Hour+time.Millisecond), uint64(7))),
			map[string]int{morse.ReasonFieldTypeConflict: 2, morse.ReasonUnableToParse: 3}
	},
}}

// straddleCase fills in the third case: a policy of 24h plus some minutes, chosen so that
// its cutoff falls mid-hour. The hour of the cutoff holds a point before it and one after:
// InfluxDB keeps both (the group exists for the newer one). The hour before is dropped.
func straddleCase(tc mixedCase) mixedCase {
	now := time.Now()
	extra := (now.Sub(now.Truncate(time.Hour)) + 30*time.Minute) % time.Hour
	dur := 24*time.Hour + extra.Truncate(time.Minute)
	inner := tc.setup
	tc.setup = func(t *testing.T, in *testserver.Influx, db string) {
		inner(t, in, db)
		in.Exec(t, fmt.Sprintf("CREATE RETENTION POLICY r ON %s DURATION %s REPLICATION 1 SHARD DURATION 1h",
			influxquery.QuoteIdent(db), influxDuration(dur)))
	}
	tc.batch = func(now time.Time) ([]morse.Metric, map[string]int) {
		cutoff := now.Add(-dur)
		hour := cutoff.Truncate(time.Hour)
		return concat(pts(2, now, 1.0), pts(1, hour.Add(time.Minute), 2.0), pts(1, cutoff.Add(3*time.Minute), 3.0),
				pts(3, hour.Add(-10*time.Minute), 4.0)),
			map[string]int{morse.ReasonBeyondRetention: 3}
	}
	return tc
}

// influxDuration writes d in InfluxQL's units (24h17m becomes 24h17m).
func influxDuration(d time.Duration) string {
	h, m := int(d/time.Hour), int(d%time.Hour/time.Minute)
	return fmt.Sprintf("%dh%dm", h, m)
}

// TestMixedPartialWritesCountedExactly writes each mix through Write and through a
// BatchWriter, and checks that the counts by reason add up to the batch and that exactly the
// metrics counted as written are stored.
func TestMixedPartialWritesCountedExactly(t *testing.T) {
	t.Parallel()
	in := testserver.StartInfluxDB(t, testserver.InfluxOptions{})
	for i, tc := range mixedCases {
		if tc.batch == nil {
			tc = straddleCase(tc)
		}
		t.Run(tc.name, func(t *testing.T) {
			t.Run("Write", func(t *testing.T) {
				db := dbName("mixed_w", i)
				tc.setup(t, in, db)
				o := connected(t, in.URL(), db, modOrNil(tc.mod), func(o *InfluxDB) { o.RetentionPolicy = tc.rp })
				ms, wantDrops := tc.batch(time.Now())
				err := o.Write(testutil.Context(t), ms)
				require.Equal(t, morse.OutcomePartial, morse.Classify(err), "error: %v", err)
				pw, _ := errors.AsType[*morse.PartialWriteError](err)
				require.Equal(t, wantDrops, dropsByReason(pw), "error: %v", err)
				written, _ := pw.Split(len(ms))
				require.Equal(t, written, storedOf(t, in, db, tc.rp, ms))
			})
			t.Run("BatchWriter", func(t *testing.T) {
				db := dbName("mixed_b", i)
				tc.setup(t, in, db)
				o := connected(t, in.URL(), db, modOrNil(tc.mod), func(o *InfluxDB) { o.RetentionPolicy = tc.rp })
				ms, wantDrops := tc.batch(time.Now())
				w := batchWriter(t, o, batch.Options{BatchSize: len(ms)})
				require.NoError(t, w.WriteBatch(ms))
				stats := settled(t, w, int64(len(ms)))
				got := map[string]int{}
				for r, n := range stats.DroppedByReason {
					got[r] = int(n)
				}
				require.Equal(t, wantDrops, got)
				require.Equal(t, int(stats.Written), storedOf(t, in, db, tc.rp, ms))
				require.Equal(t, len(ms), int(stats.Written+stats.Dropped))
			})
		})
	}
}

func dropsByReason(pw *morse.PartialWriteError) map[string]int {
	got := map[string]int{}
	for _, p := range append([]*morse.PartialWriteError{pw}, pw.More...) {
		got[p.Reason] += max(p.Dropped, len(p.Indices))
	}
	return got
}

// storedOf counts the metrics of ms that the server holds in rp ("" for the default).
func storedOf(t *testing.T, in *testserver.Influx, db, rp string, ms []morse.Metric) int {
	t.Helper()
	from := influxquery.QuoteIdent("m")
	if rp != "" {
		from = influxquery.QuoteIdent(rp) + "." + from
	}
	res := in.Query(t, db, "SELECT * FROM "+from)
	require.Len(t, res, 1)
	if len(res[0].Series) == 0 {
		return 0
	}
	var got []int64
	for _, row := range res[0].Series[0].Values {
		n, ok := row[0].(int64)
		require.True(t, ok)
		got = append(got, n)
	}
	return countIn(ms, got)
}
