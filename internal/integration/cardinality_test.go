package integration

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/agent"
	"github.com/morse-agent/morse/batch"
	"github.com/morse-agent/morse/config"
	"github.com/morse-agent/morse/internal/testserver"
	_ "github.com/morse-agent/morse/plugins/outputs/influxdb"
	_ "github.com/morse-agent/morse/plugins/processors/cardinality"
)

// churn is the churning workload: every tick, each measurement gets one metric per
// fixed identifier and one per rotating identifier, and the rotating ones move on by
// newPerTick, so that new values arrive at a steady rate.
type churn struct {
	measurements, fixed, rotating, newPerTick int
}

// churnBase puts every point in one shard group (7 days from a Thursday), so that the
// series cardinality is that of one index.
var churnBase = time.Date(2024, 1, 5, 0, 0, 0, 0, time.UTC)

// point is what the workload sent for one metric: its measurement, identifier and time.
type point struct {
	measurement, id string
	ns              int64
}

// tick returns the metrics of tick k, each with its own time, so that no two points of a
// measurement overwrite each other once the identifier is no longer a tag.
func (c churn) tick(k int) ([]morse.Metric, []point) {
	var ms []morse.Metric
	var ps []point
	for j := range c.measurements {
		name := fmt.Sprintf("m%d", j)
		for i := range c.fixed + c.rotating {
			id := fmt.Sprintf("f%03d", i)
			if i >= c.fixed {
				id = fmt.Sprintf("r%05d", k*c.newPerTick+i-c.fixed)
			}
			ts := churnBase.Add(time.Duration(k)*time.Millisecond + time.Duration(i)*time.Microsecond)
			ms = append(ms, morse.NewMetric(name, []morse.Tag{{Key: "host", Value: "h1"}, {Key: "id", Value: id}},
				[]morse.Field{{Key: "v", Value: morse.Float(float64(k))}}, ts))
			ps = append(ps, point{name, id, ts.UnixNano()})
		}
	}
	return ms, ps
}

// distinct is how many identifiers each measurement has seen after ticks ticks.
func (c churn) distinct(ticks int) int { return c.fixed + c.rotating + c.newPerTick*(ticks-1) }

// tickInput gathers one tick of a workload per gather, as far as the test has allowed, so
// that the test decides when the database is looked at.
type tickInput struct {
	gen     func(k int) ([]morse.Metric, []point)
	mu      sync.Mutex
	allowed int
	next    int
	sent    []point
}

func (in *tickInput) Gather(_ context.Context, acc morse.Accumulator) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.next >= in.allowed {
		return nil
	}
	ms, ps := in.gen(in.next)
	in.next++
	in.sent = append(in.sent, ps...)
	for _, m := range ms {
		acc.AddMetric(m)
	}
	return nil
}

// allow lets the input gather up to n ticks in all.
func (in *tickInput) allow(n int) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.allowed = n
}

func (in *tickInput) points() []point {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]point(nil), in.sent...)
}

// runTOMLAgent loads toml, adds in and runs the agent until the test ends.
func runTOMLAgent(t *testing.T, toml string, in morse.Input) *agent.Agent {
	t.Helper()
	cfg, err := config.Load(config.Options{Sources: []config.Source{{Name: t.Name(), Data: []byte(toml)}}})
	require.NoError(t, err)
	cfg.AddInput("ticks", in).Common.Interval = morse.Duration(5 * time.Millisecond)
	a, stop := testserver.RunAgent(t, cfg)
	t.Cleanup(func() { require.NoError(t, stop()) })
	require.Eventually(t, func() bool { return len(a.Outputs()) == 1 }, 10*time.Second, time.Millisecond)
	return a
}

// settle waits until the output has taken care of n metrics: written or dropped.
func settle(t *testing.T, a *agent.Agent, n int) batch.Stats {
	t.Helper()
	var st batch.Stats
	require.Eventually(t, func() bool {
		st = a.Outputs()[0].Stats
		return st.Written+st.Dropped >= int64(n)
	}, 30*time.Second, 5*time.Millisecond, "the output wrote or dropped %d metrics", n)
	return st
}

// seriesCardinality returns SHOW SERIES CARDINALITY (InfluxDB's estimate, from its sketches)
// and SHOW SERIES EXACT CARDINALITY of db.
func seriesCardinality(t *testing.T, in *testserver.Influx, db string) (estimate, exact int64) {
	t.Helper()
	// The exact count comes per measurement, which share no series: their sum is the
	// database's.
	one := func(q string) int64 {
		res := in.Query(t, db, q)
		require.NotEmpty(t, res[0].Series, q)
		var n int64
		for _, s := range res[0].Series {
			require.Len(t, s.Values, 1, "%s: one shard group, one row: %v", q, s)
			v, ok := s.Values[0][0].(int64)
			require.True(t, ok, "%s: %v", q, s.Values)
			n += v
		}
		return n
	}
	return one("SHOW SERIES CARDINALITY"), one("SHOW SERIES EXACT CARDINALITY")
}

// storedIDs returns, for each point of db, the identifier it was stored with: as the tag
// id or as the field id, and which of the two.
func storedIDs(t *testing.T, in *testserver.Influx, db string, names ...string) (ids map[point]bool, asTag, asField int) {
	t.Helper()
	ids = map[point]bool{}
	for _, name := range names {
		res := in.Query(t, db, fmt.Sprintf(`SELECT "id"::tag, "id"::field, v FROM %s`, name))
		for _, s := range res[0].Series {
			for _, row := range s.Values {
				ns := row[0].(int64)
				tag, isTag := row[1].(string)
				field, isField := row[2].(string)
				require.True(t, isTag != isField, "%s at %d: the id is a tag or a field, once: %v", name, ns, row)
				if isTag {
					asTag++
					ids[point{name, tag, ns}] = true
				} else {
					asField++
					ids[point{name, field, ns}] = true
				}
			}
		}
	}
	return ids, asTag, asField
}

// TestGuardKeepsSeriesCardinalityBounded writes the churning workload through a whole agent
// into a real InfluxDB 1.6.7, once without and once with processors.cardinality, and reads
// the series cardinality back at checkpoints.
func TestGuardKeepsSeriesCardinalityBounded(t *testing.T) {
	t.Parallel()
	const maxValues = 250
	w := churn{measurements: 4, fixed: 100, rotating: 100, newPerTick: 10}
	influx := testserver.StartInfluxDB(t, testserver.InfluxOptions{})

	t.Run("without the guard the cardinality grows linearly", func(t *testing.T) {
		estimate, exact, _ := runChurn(t, influx, w, "churn_plain", "")
		for c, ex := range exact {
			// Every identifier is one series per measurement.
			require.Equal(t, int64(w.measurements*w.distinct((c+1)*ticks/checkpoints)), ex)
		}
		for c := 1; c < len(exact); c++ {
			require.Equal(t, int64(w.measurements*w.newPerTick*ticks/checkpoints), exact[c]-exact[c-1],
				"the same growth between each checkpoint")
			require.Greater(t, estimate[c], estimate[c-1])
		}
	})

	t.Run("with the guard it stays under the limit and every value is kept", func(t *testing.T) {
		estimate, exact, sent := runChurn(t, influx, w, "churn_guarded", fmt.Sprintf(`
[[processors.cardinality]]
  max_values = %d
  window = "1h"
  action = "field"`, maxValues))
		// Per measurement: the series of the identifiers seen before the key passed
		// max_values (the estimate is within a few percent), plus the one series of host
		// alone that the metrics have once id is a field.
		bound := int64(w.measurements * (maxValues*103/100 + 1))
		for c, ex := range exact {
			require.LessOrEqual(t, ex, bound, "checkpoint %d", c+1)
			require.LessOrEqual(t, estimate[c], bound, "checkpoint %d", c+1)
			require.Equal(t, exact[0], ex, "no new series once the key is acted on")
		}
		ids, asTag, asField := storedIDs(t, influx, "churn_guarded", "m0", "m1", "m2", "m3")
		t.Logf("with the guard: %d points with id as a tag, %d with id as a field; cardinality bound %d", asTag, asField, bound)
		require.Len(t, ids, len(sent), "every point is stored once")
		for _, p := range sent {
			require.True(t, ids[p], "%v is stored with its identifier", p)
		}
		require.Positive(t, asField)
	})
}

// The churn tests run this many ticks, and look at the database every ticks/checkpoints.
const ticks, checkpoints = 40, 4

// runChurn writes the workload w through an agent with the given processors into db, and
// returns the series cardinality (estimated and exact) at each checkpoint and what was sent.
func runChurn(t *testing.T, influx *testserver.Influx, w churn, db, processors string) (estimate, exact []int64, sent []point) {
	perTick := w.measurements * (w.fixed + w.rotating)
	in := &tickInput{gen: w.tick}
	a := runTOMLAgent(t, fmt.Sprintf(`
[agent]
  omit_hostname = true
  precision = "ns" # keep the sub-second times; unset, a gather rounds them as Telegraf does
[[outputs.influxdb]]
  urls = [%q]
  database = %q
  metric_batch_size = 1000
  flush_interval = "50ms"
%s`, influx.URL(), db, processors), in)
	for c := 1; c <= checkpoints; c++ {
		in.allow(c * ticks / checkpoints)
		st := settle(t, a, c*ticks/checkpoints*perTick)
		require.Zero(t, st.Dropped, "nothing is refused: %v", st.DroppedByReason)
		est, ex := seriesCardinality(t, influx, db)
		t.Logf("%s: after %d ticks (%d identifiers per measurement): series cardinality %d (exact %d)",
			db, c*ticks/checkpoints, w.distinct(c*ticks/checkpoints), est, ex)
		estimate, exact = append(estimate, est), append(exact, ex)
	}
	return estimate, exact, in.points()
}

// TestGuardTrippedByTheServer runs an agent whose InfluxDB output names the guard in
// cardinality_guard, against a server with a low max-values-per-tag. The server's first
// refusal trips the key, and the next metrics of that key are written with id as a field
// instead of being refused.
func TestGuardTrippedByTheServer(t *testing.T) {
	t.Parallel()
	const limit, perTick = 50, 10
	influx := testserver.StartInfluxDB(t, testserver.InfluxOptions{MaxValuesPerTag: limit})
	gen := func(k int) ([]morse.Metric, []point) {
		var ms []morse.Metric
		var ps []point
		for i := range perTick {
			id := fmt.Sprintf("n%04d", k*perTick+i)
			ts := churnBase.Add(time.Duration(k*perTick+i) * time.Millisecond)
			ms = append(ms, morse.NewMetric("req", []morse.Tag{{Key: "id", Value: id}},
				[]morse.Field{{Key: "v", Value: morse.Int(int64(k))}}, ts))
			ps = append(ps, point{"req", id, ts.UnixNano()})
		}
		return ms, ps
	}
	in := &tickInput{gen: gen}
	a := runTOMLAgent(t, fmt.Sprintf(`
[agent]
  omit_hostname = true
  precision = "ns" # keep the sub-second times; unset, a gather rounds them as Telegraf does
[[processors.cardinality]]
  alias = "guard"
  max_values = 10000
[[outputs.influxdb]]
  urls = [%q]
  database = "limited"
  metric_batch_size = %d
  flush_interval = "50ms"
  cardinality_guard = "guard"`, influx.URL(), perTick), in)

	in.allow(limit / perTick)
	st := settle(t, a, limit)
	require.Equal(t, int64(limit), st.Written, "up to the server's limit, every value is a tag")

	in.allow(limit/perTick + 1)
	st = settle(t, a, limit+perTick)
	require.Equal(t, map[string]int64{"max_values_per_tag": perTick}, st.DroppedByReason,
		"the batch that passes the server's limit is refused")

	in.allow(limit/perTick + 5)
	st = settle(t, a, limit+5*perTick)
	require.Equal(t, int64(limit+4*perTick), st.Written, "after the refusal, the key's metrics are converted and written")
	require.Equal(t, int64(perTick), st.Dropped, "nothing more is refused")

	ids, asTag, asField := storedIDs(t, influx, "limited", "req")
	require.Equal(t, limit, asTag)
	require.Equal(t, 4*perTick, asField)
	for _, p := range in.points()[limit+perTick:] {
		require.True(t, ids[p], "%v is stored with its identifier as a field", p)
	}
}
