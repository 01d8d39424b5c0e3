package influxdb

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/influxquery"
	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
)

// requestsTo sorts what rec saw since from into writes and statements.
func requestsTo(t *testing.T, rec *testserver.Recorder, from int) (writes int, queries []string) {
	t.Helper()
	for _, r := range rec.Requests()[from:] {
		switch r.URL.Path {
		case "/write":
			writes++
		case "/query":
			require.NoError(t, r.ParseForm())
			queries = append(queries, r.Form.Get("q"))
		}
	}
	return writes, queries
}

// TestOneRequestPerShardGroup checks the cost of exact counting against a real InfluxDB
// 1.6.7: a batch within one hour is one request and no question; a batch over several hours
// of one shard group asks for the shard group duration once and is still one request; a
// batch over two shard groups is two requests. Every point is stored.
func TestOneRequestPerShardGroup(t *testing.T) {
	t.Parallel()
	in := testserver.StartInfluxDB(t, testserver.InfluxOptions{})
	rec := testserver.StartRecorder(t, in.URL())
	o := connected(t, rec.URL(), "sg") // autogen: infinite, 7-day shard groups
	week := 7 * 24 * time.Hour
	start := time.Now().Truncate(week) // the current shard group of autogen
	at := func(d time.Duration) morse.Metric { return point("m", start.Add(d).UnixNano(), "v", 1.0) }
	showRP := "SHOW RETENTION POLICIES ON " + influxquery.QuoteIdent("sg")

	for _, step := range []struct {
		name    string
		batch   []morse.Metric
		writes  int
		queries []string
	}{
		{"one hour", []morse.Metric{at(time.Minute), at(2 * time.Minute)}, 1, nil},
		{"three hours of one group", []morse.Metric{at(time.Minute), at(3 * time.Hour), at(5 * time.Hour)}, 1, []string{showRP}},
		{"two groups", []morse.Metric{at(time.Minute), at(-time.Minute), at(time.Hour)}, 2, nil},
	} {
		from := len(rec.Requests())
		require.NoError(t, o.Write(testutil.Context(t), step.batch), step.name)
		writes, queries := requestsTo(t, rec, from)
		require.Equal(t, step.writes, writes, step.name)
		require.Equal(t, step.queries, queries, step.name)
	}
	require.Len(t, storedTimes(t, in, "sg", "m"), 6)
}

// TestShardGroupsWithoutReadPrivilege: a user who may write but not read cannot learn the
// shard group duration; the output then writes one request per hour of data, which InfluxDB's
// shard groups never straddle, asks again only after rpRefresh, and still counts exactly.
func TestShardGroupsWithoutReadPrivilege(t *testing.T) {
	t.Parallel()
	in := testserver.StartInfluxDB(t, testserver.InfluxOptions{
		Env: map[string]string{"INFLUXDB_HTTP_AUTH_ENABLED": "true"},
	})
	in.Exec(t, "CREATE USER admin WITH PASSWORD 'admin-secret' WITH ALL PRIVILEGES")
	admin, err := influxquery.NewClient(influxquery.ClientOptions{URL: in.URL(), Username: "admin", Password: "admin-secret", Timeout: 10 * time.Second})
	require.NoError(t, err)
	_, err = admin.Query(testutil.Context(t), "CREATE USER bob WITH PASSWORD 'bob-secret'; CREATE DATABASE wo; GRANT WRITE ON wo TO bob")
	require.NoError(t, err)
	_, err = admin.Query(testutil.Context(t), "CREATE RETENTION POLICY r ON wo DURATION 1h REPLICATION 1 DEFAULT")
	require.NoError(t, err)

	rec := testserver.StartRecorder(t, in.URL())
	o := connected(t, rec.URL(), "wo", func(o *InfluxDB) {
		o.Username, o.Password, o.SkipDatabaseCreation = "bob", "bob-secret", true
	})
	now := time.Now()
	batch := []morse.Metric{
		point("m", now.UnixNano(), "v", 1.0), point("m", now.Add(-2*time.Hour).UnixNano(), "v", 2.0),
		point("m", now.Add(-3*time.Hour).UnixNano(), "v", 3.0),
	}
	for round := range 2 {
		from := len(rec.Requests())
		err := o.Write(testutil.Context(t), batch)
		pw, ok := errors.AsType[*morse.PartialWriteError](err)
		require.True(t, ok, "%v", err)
		require.Equal(t, map[string]int{morse.ReasonBeyondRetention: 2}, dropsByReason(pw))
		writes, queries := requestsTo(t, rec, from)
		require.Equal(t, 3, writes, "one request per hour")
		require.Len(t, queries, 1-round, "asked once, refused, not asked again at once")
	}
}

// TestOneBucketIsTruncate holds the integer comparison of oneBucket to time.Truncate, which
// is InfluxDB's own rule, around the edges of hours and of 7-day groups (which start on
// Mondays, counted from year 1, not from 1970), before 1970 too.
func TestOneBucketIsTruncate(t *testing.T) {
	now := time.Date(2026, 11, 27, 21, 30, 0, 0, time.UTC)
	week := 7 * 24 * time.Hour
	monday := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	require.Equal(t, monday, now.Truncate(week), "autogen's groups start on Mondays")
	for _, span := range []time.Duration{time.Hour, 90 * time.Minute, 24 * time.Hour, week} {
		for _, base := range []time.Time{now, monday, time.Unix(0, 0), time.Unix(-86400*3-1, 0)} {
			start := base.Truncate(span)
			for _, d := range []time.Duration{-1, 0, 1, span - 1, span, span + 1} {
				first, other := start, start.Add(d)
				ms := []morse.Metric{point("m", first.UnixNano(), "v", 1.0), point("m", other.UnixNano(), "v", 1.0)}
				want := first.Truncate(span).Equal(other.Truncate(span))
				require.Equal(t, want, oneBucket(ms, span, now), "span %v, %v and %v", span, first, other)
			}
		}
	}
}
