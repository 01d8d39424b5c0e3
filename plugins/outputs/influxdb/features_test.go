package influxdb

import (
	"net/url"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
)

// typedBatch has every field type, tags that need escaping, and strings with quotes,
// backslashes, newlines and non-ASCII text.
func typedBatch() []morse.Metric {
	return []morse.Metric{
		point("typed", 1_600_000_000_000_000_001, "#host", "a b,c", "#region", "eu=1",
			"f", 1.5, "i", int64(-3), "s", "hi \"x\" \\ y\nz é", "b", true),
		point("typed", 1_600_000_000_000_000_002, "#host", "a b,c", "f", -2.25e-7, "i", int64(9_000_000_000), "b", false),
		point("typed", 1_600_000_000_000_000_003, "#host", "z", "s", "", "u", uint64(42)),
	}
}

// TestFeatures runs the output's options against one real server.
func TestFeatures(t *testing.T) {
	t.Parallel()
	in := testserver.StartInfluxDB(t, testserver.InfluxOptions{})
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, *testserver.Influx)
	}{
		{"gzip writes are stored identically", testGzip},
		{"failover: a dead URL is skipped", testFailover},
		{"every URL dead: retryable", testAllDead},
		{"database and retention policy tags route, and are excluded", testRouting},
		{"a database dropped while running is created again", testRecreate},
		{"omit timestamp: the server's time is used", testOmitTimestamp},
		{"requests carry the options", testRequestOptions},
		{"concurrent writes, routed and gzipped, each stored once", testConcurrentWrites},
		{"line metrics are stored as their expanded metrics are", testLineMetrics},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, in) })
	}
}

func testGzip(t *testing.T, in *testserver.Influx) {
	plain := connected(t, in.URL(), "gz_plain")
	zipped := connected(t, in.URL(), "gz_zipped", func(o *InfluxDB) { o.ContentEncoding = "gzip" })
	require.NoError(t, plain.Write(testutil.Context(t), typedBatch()))
	require.NoError(t, zipped.Write(testutil.Context(t), typedBatch()))
	body, _, _ := zipped.serialize(zipped.getScratch(), typedBatch())
	require.Equal(t, []byte{0x1f, 0x8b}, body[:2], "the body is gzip")

	const q = "SELECT * FROM typed GROUP BY *"
	want := in.Query(t, "gz_plain", q)
	require.Len(t, want[0].Series, 3)
	require.Equal(t, want, in.Query(t, "gz_zipped", q))
}

func testFailover(t *testing.T, in *testserver.Influx) {
	o := connected(t, deadURL(t), "failover", func(o *InfluxDB) { o.URLs = append(o.URLs, in.URL()) })
	require.NoError(t, o.Write(testutil.Context(t), []morse.Metric{point("m", 1, "v", 1.0)}))
	require.NoError(t, o.Write(testutil.Context(t), []morse.Metric{point("m", 2, "v", 2.0)}))
	require.Equal(t, 1, o.failover.Current(), "later writes start at the URL that answered")
	require.Equal(t, []int64{1, 2}, storedTimes(t, in, "failover", "m"))
}

func testAllDead(t *testing.T, in *testserver.Influx) {
	o := connected(t, deadURL(t), "nowhere", func(o *InfluxDB) { o.URLs = append(o.URLs, deadURL(t)) })
	err := o.Write(testutil.Context(t), []morse.Metric{point("m", 1, "v", 1.0)})
	require.Equal(t, morse.OutcomeRetry, morse.Classify(err))
	require.ErrorContains(t, err, "connection refused")
}

func testRouting(t *testing.T, in *testserver.Influx) {
	in.Exec(t, "CREATE DATABASE routed_b")
	in.Exec(t, "CREATE RETENTION POLICY week ON routed_b DURATION 7d REPLICATION 1")
	in.Exec(t, "CREATE DATABASE routed_c")
	require.Equal(t, 204, in.Write(t, "routed_c", "m v=0.5 1\n").Status)
	o := connected(t, in.URL(), "routed_default", func(o *InfluxDB) {
		o.DatabaseTag, o.ExcludeDatabaseTag = "db", true
		o.RetentionPolicyTag, o.ExcludeRetentionPolicyTag = "rp", true
	})
	batch := []morse.Metric{
		point("m", 10, "#db", "routed_a", "#host", "x", "v", 1.0),   // a database created on first use
		point("m", now, "#db", "routed_b", "#rp", "week", "v", 2.0), // a week keeps only recent points
		point("m", 12, "v", 3.0),
		point("m", 13, "#db", "routed_c", "v", "conflict"),
		point("m", 14, "#db", "routed_c", "v", 4.0),
	}
	// One request per group; the type conflict of routed_c makes the batch partial.
	requireClass(t, o.Write(testutil.Context(t), batch), want{outcome: morse.OutcomePartial, reason: morse.ReasonFieldTypeConflict, dropped: 1})

	require.Equal(t, []int64{10}, storedTimes(t, in, "routed_a", "m"))
	res := in.Query(t, "routed_a", "SHOW TAG KEYS FROM m")
	require.Equal(t, [][]any{{"host"}}, res[0].Series[0].Values, "the db tag is not written")
	res = in.Query(t, "routed_b", "SELECT * FROM week.m")
	require.Equal(t, []string{"time", "v"}, res[0].Series[0].Columns, "the rp tag is not written")
	require.Empty(t, in.Query(t, "routed_b", "SELECT * FROM autogen.m")[0].Series)
	require.Equal(t, []int64{12}, storedTimes(t, in, "routed_default", "m"))
	require.Equal(t, []int64{1, 14}, storedTimes(t, in, "routed_c", "m"))
}

func testRecreate(t *testing.T, in *testserver.Influx) {
	o := connected(t, in.URL(), "recreated")
	require.NoError(t, o.Write(testutil.Context(t), []morse.Metric{point("m", 1, "v", 1.0)}))
	in.Exec(t, "DROP DATABASE recreated")
	require.NoError(t, o.Write(testutil.Context(t), []morse.Metric{point("m", 2, "v", 2.0)}))
	require.Equal(t, []int64{2}, storedTimes(t, in, "recreated", "m"))
}

func testOmitTimestamp(t *testing.T, in *testserver.Influx) {
	o := connected(t, in.URL(), "omit", func(o *InfluxDB) { o.InfluxOmitTimestamp = true })
	require.NoError(t, o.Write(testutil.Context(t), []morse.Metric{point("m", 1, "v", 1.0)}))
	got := storedTimes(t, in, "omit", "m")
	require.Len(t, got, 1)
	require.Greater(t, got[0], int64(1_600_000_000_000_000_000))
}

func testRequestOptions(t *testing.T, in *testserver.Influx) {
	rec := testserver.StartRecorder(t, in.URL())
	o := connected(t, rec.URL(), "headers", func(o *InfluxDB) {
		o.ContentEncoding, o.UserAgent = "gzip", "morse-test/1"
		o.Username, o.Password = "u", "p-secret"
		o.WriteConsistency, o.RetentionPolicy = "any", "autogen"
		o.HTTPHeaders = map[string]string{"X-Special": "yes"}
	})
	require.NoError(t, o.Write(testutil.Context(t), []morse.Metric{point("m", 1, "v", 1.0)}))
	reqs := rec.Requests()
	require.Len(t, reqs, 2, "CREATE DATABASE, then the write")
	create, write := reqs[0], reqs[1]
	require.Equal(t, "/query", create.URL.Path)
	require.Equal(t, "/write", write.URL.Path)
	require.Equal(t, url.Values{"db": {"headers"}, "rp": {"autogen"}, "consistency": {"any"}}, write.URL.Query())
	for _, r := range reqs {
		require.Equal(t, "morse-test/1", r.Header.Get("User-Agent"))
		require.Equal(t, "yes", r.Header.Get("X-Special"))
		user, pass, ok := r.BasicAuth()
		require.True(t, ok)
		require.Equal(t, "u", user)
		require.Equal(t, "p-secret", pass)
	}
	require.Equal(t, "gzip", write.Header.Get("Content-Encoding"))
	require.Equal(t, []int64{1}, storedTimes(t, in, "headers", "m"))
}

// deadURL returns the URL of a 127.0.0.1 port that was bound and closed, so nothing listens.
func deadURL(t *testing.T) string {
	t.Helper()
	return "http://" + testutil.FreeAddr(t)
}

// testConcurrentWrites writes from several goroutines at once through one output, as the
// agent does when it keeps several batches in flight, with gzip and tag routing so that
// every per-write buffer is in use. Run under the race detector, it shows that Write is safe
// for concurrent use; the query shows that every point is stored once, in the right database.
func testConcurrentWrites(t *testing.T, in *testserver.Influx) {
	o := connected(t, in.URL(), "cw_default", func(o *InfluxDB) {
		o.ContentEncoding = "gzip"
		o.DatabaseTag = "db"
		o.ExcludeDatabaseTag = true
	})
	require.Positive(t, o.MaxConcurrentWrites())
	const writers, perWriter, batch = 6, 5, 40
	var wg sync.WaitGroup
	errs := make(chan error, writers*perWriter)
	for w := range writers {
		wg.Go(func() {
			for b := range perWriter {
				var ms []morse.Metric
				for i := range batch {
					ts := int64(((w*perWriter)+b)*batch + i + 1)
					db := []string{"cw_a", "cw_b"}[ts%2]
					ms = append(ms, point("m", ts, "#db", db, "v", float64(ts)))
				}
				errs <- o.Write(testutil.Context(t), ms)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	var odd, even []int64
	for ts := int64(1); ts <= writers*perWriter*batch; ts++ {
		if ts%2 == 0 {
			even = append(even, ts)
		} else {
			odd = append(odd, ts)
		}
	}
	require.Equal(t, even, storedTimes(t, in, "cw_a", "m"), "database cw_a holds the even times, once each")
	require.Equal(t, odd, storedTimes(t, in, "cw_b", "m"), "database cw_b holds the odd times, once each")
}
