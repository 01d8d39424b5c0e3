package influxdbv2

import (
	"context"
	"errors"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
	influxdblistener "github.com/morse-agent/morse/plugins/inputs/influxdb_listener"
)

// startListener runs morse's own influxdb_listener on a free loopback port with a test
// accumulator, changed by mods, and stops it when the test ends.
func startListener(t *testing.T, mods ...func(*influxdblistener.InfluxDBListener)) (string, *testutil.Accumulator) {
	t.Helper()
	l := influxdblistener.New()
	l.ServiceAddress = "127.0.0.1:0"
	for _, m := range mods {
		m(l)
	}
	l.SetLogger(testutil.QuietLogger())
	require.NoError(t, l.Init())
	acc := &testutil.Accumulator{}
	require.NoError(t, l.Start(context.Background(), acc))
	t.Cleanup(l.Stop)
	return "http://" + l.Addr().String(), acc
}

// listenerBatch is a batch with every field type, escapes in names, tags and strings, and
// distinct times.
func listenerBatch(t *testing.T, n int) []morse.Metric {
	base := time.Unix(1_700_000_000, 123456789)
	batch := make([]morse.Metric, 0, n)
	for i := range n {
		batch = append(batch, metric(t, "cpu load", map[string]string{"host": "h,=" + strconv.Itoa(i%3), "dc": "eu west"},
			map[string]any{"f": float64(i) / 3, "i": int64(-i), "u": uint64(i) * 1_000_000_007, "big": uint64(math.MaxUint64),
				"s": "say \"hi\"\\ " + strconv.Itoa(i), "ok": i%2 == 0}, base.Add(time.Duration(i)*time.Microsecond)))
	}
	return batch
}

// TestListener writes to morse's influxdb_listener on /api/v2/write: exactly the lines sent
// arrive, with their types, with gzip and without, with unsigned integers written as such
// or as clamped signed ones.
func TestListener(t *testing.T) {
	for _, tc := range []struct {
		name     string
		encoding string
		uints    bool
	}{
		{"gzip with uints", "gzip", true},
		{"identity with uints", "identity", true},
		{"gzip without uints", "gzip", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, acc := startListener(t)
			o := connected(t, url, func(o *InfluxDBv2) { o.ContentEncoding = tc.encoding; o.UintSupport = tc.uints })
			batch := listenerBatch(t, 50)
			require.NoError(t, o.Write(testutil.Context(t), batch))
			require.NoError(t, acc.Wait(testutil.Context(t), len(batch)))

			want := batch
			if !tc.uints {
				want = make([]morse.Metric, len(batch))
				for i, m := range batch {
					u, _ := m.Field("u")
					want[i] = m.WithField("u", morse.Int(int64(u.Uint()))).WithField("big", morse.Int(math.MaxInt64))
				}
			}
			require.Equal(t, testutil.Canon(want), testutil.Canon(acc.Metrics()))
		})
	}
}

// TestListenerLineMetrics sends metrics held as line-protocol text, which the output writes
// as they are, and metrics expanded, in one batch.
func TestListenerLineMetrics(t *testing.T) {
	url, acc := startListener(t)
	o := connected(t, url)
	require.True(t, o.WritesLines())
	ts := time.Unix(1_700_000_000, 0)
	batch := []morse.Metric{
		morse.NewLineMetric(morse.LineText{Text: `m,t=a v=1i,s="x y"`}, ts),
		metric(t, "m", map[string]string{"t": "b"}, map[string]any{"v": int64(2)}, ts),
		morse.NewLineMetric(morse.LineText{Text: `m,t=c v=3u`, Uints: true}, ts),
	}
	require.NoError(t, o.Write(testutil.Context(t), batch))
	require.NoError(t, acc.Wait(testutil.Context(t), 3))
	require.Equal(t, []string{
		`m,t=a v=integer:1,s=string:"x y" 1700000000000000000`,
		"m,t=b v=integer:2 1700000000000000000",
		"m,t=c v=integer:3 1700000000000000000", // without influx_uint_support, as signed
	}, testutil.Canon(acc.Metrics()))
}

// TestListenerBucketRouting routes by bucket_tag; the listener tags each metric with the
// bucket it was written to, so each must carry its own.
func TestListenerBucketRouting(t *testing.T) {
	url, acc := startListener(t, func(l *influxdblistener.InfluxDBListener) { l.DatabaseTag = "written_to" })
	o := connected(t, url, func(o *InfluxDBv2) { o.Bucket = "main"; o.BucketTag = "bucket"; o.ExcludeBucketTag = true })
	var batch []morse.Metric
	for i := range 30 {
		tags := map[string]string{"i": strconv.Itoa(i)}
		if i%3 != 0 {
			tags["bucket"] = "b" + strconv.Itoa(i%3)
		}
		batch = append(batch, metric(t, "r", tags, map[string]any{"v": float64(i)}, time.Unix(0, int64(i))))
	}
	require.NoError(t, o.Write(testutil.Context(t), batch))
	require.NoError(t, acc.Wait(testutil.Context(t), len(batch)))
	require.Len(t, acc.Metrics(), len(batch))
	for _, m := range acc.Metrics() {
		i, _ := m.Tag("i")
		n, _ := strconv.Atoi(i)
		want := "main"
		if n%3 != 0 {
			want = "b" + strconv.Itoa(n%3)
		}
		got, _ := m.Tag("written_to")
		require.Equal(t, want, got, "metric %d", n)
		_, has := m.Tag("bucket")
		require.False(t, has, "exclude_bucket_tag")
	}
}

// TestListenerOmitTimestamp leaves timestamps out: the listener stamps the points.
func TestListenerOmitTimestamp(t *testing.T) {
	for _, key := range []string{"influx_omit_timestamp", "omit_timestamp"} {
		t.Run(key, func(t *testing.T) {
			url, acc := startListener(t)
			o := connected(t, url, func(o *InfluxDBv2) {
				o.OmitTimestamp = key == "influx_omit_timestamp"
				o.OmitTimestampAlias = key == "omit_timestamp"
			})
			before := time.Now()
			require.NoError(t, o.Write(testutil.Context(t), []morse.Metric{metric(t, "m", nil, map[string]any{"v": 1.0}, time.Unix(1, 0))}))
			require.NoError(t, acc.Wait(testutil.Context(t), 1))
			got := acc.Metrics()[0].Time()
			require.False(t, got.Before(before.Truncate(time.Second)), "stamped on arrival, not at 1970: %s", got)
		})
	}
}

// TestListenerToken checks the token: a wrong one is refused with 401, which is retryable
// (an operator can fix the token while the data waits), and nothing arrives.
func TestListenerToken(t *testing.T) {
	url, acc := startListener(t, func(l *influxdblistener.InfluxDBListener) { l.Token = "right" })
	batch := listenerBatch(t, 3)

	wrong := connected(t, url, func(o *InfluxDBv2) { o.Token = "wrong" })
	err := wrong.Write(testutil.Context(t), batch)
	require.Equal(t, morse.OutcomeRetry, morse.Classify(err), "%v", err)
	var serr *ServerError
	require.True(t, errors.As(err, &serr))
	require.Equal(t, 401, serr.StatusCode)
	require.Zero(t, acc.NMetrics())

	right := connected(t, url, func(o *InfluxDBv2) { o.Token = "right" })
	require.NoError(t, right.Write(testutil.Context(t), batch))
	require.NoError(t, acc.Wait(testutil.Context(t), len(batch)))
}

// TestListenerUnparsableLines sends lines the listener cannot parse. It stores the others and
// answers "partial write: line K: unable to parse '...' (k of n lines rejected) dropped=k",
// whose k is exact and whose reason follows "line K: "; with no line accepted, the whole
// request is refused for good, with nothing to search for.
func TestListenerUnparsableLines(t *testing.T) {
	ts := time.Unix(1_700_000_000, 0)
	good := func(v float64) morse.Metric {
		return metric(t, "m", nil, map[string]any{"v": v}, ts.Add(time.Duration(v)))
	}
	bad := morse.NewLineMetric(morse.LineText{Text: "m v="}, ts)
	for _, tc := range []struct {
		name  string
		batch []morse.Metric
		want  verdict
		store int
	}{
		{"one bad of four", []morse.Metric{good(1), bad, good(2), good(3)}, partV(morse.ReasonUnableToParse, 1), 3},
		{"two bad of four", []morse.Metric{bad, good(1), bad, good(2)}, partV(morse.ReasonUnableToParse, 2), 2},
		{"every line bad", []morse.Metric{bad, bad}, permV(morse.ReasonUnableToParse), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, acc := startListener(t)
			o := connected(t, url)
			err := o.Write(testutil.Context(t), tc.batch)
			require.Equal(t, tc.want, verdictOf(err), "%v", err)
			require.NoError(t, acc.Wait(testutil.Context(t), tc.store))
			require.Equal(t, tc.store, acc.NMetrics())
		})
	}
}
