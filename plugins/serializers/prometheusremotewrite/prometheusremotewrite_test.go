package prometheusremotewrite_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/serializers"
	prw "github.com/morse-agent/morse/plugins/serializers/prometheusremotewrite"
)

type tags = map[string]string
type fields = map[string]any

func metric(name string, tg tags, fs fields, tm time.Time) morse.Metric {
	m, _ := morse.NewMetricFromMaps(name, tg, fs, tm)
	return m
}

var t0 = time.Unix(0, 0)

// histogramBatch and summaryBatch are Telegraf's test inputs of those names.
func histogramBatch() []morse.Metric {
	b := []morse.Metric{metric("prometheus", nil, fields{
		"http_request_duration_seconds_sum": int64(53423), "http_request_duration_seconds_count": int64(144320)}, t0)}
	for _, le := range []struct {
		le string
		n  float64
	}{{"0.05", 24054}, {"0.1", 33444}, {"0.2", 100392}, {"0.5", 129389}, {"1.0", 133988}, {"+Inf", 144320}} {
		b = append(b, metric("prometheus", tags{"le": le.le}, fields{"http_request_duration_seconds_bucket": le.n}, t0))
	}
	return b
}

func summaryBatch() []morse.Metric {
	b := []morse.Metric{metric("prometheus", nil, fields{
		"rpc_duration_seconds_sum": 1.7560473e+07, "rpc_duration_seconds_count": int64(2693)}, t0)}
	for _, q := range []struct {
		q string
		v float64
	}{{"0.01", 3102}, {"0.05", 3272}, {"0.5", 4773}, {"0.9", 9001}, {"0.99", 76656}} {
		b = append(b, metric("prometheus", tags{"quantile": q.q}, fields{"rpc_duration_seconds": q.v}, t0))
	}
	return b
}

// TestTelegrafCases are the inputs and outputs of Telegraf 1.39.3's
// TestRemoteWriteSerialize and TestRemoteWriteSerializeBatch, with prometheus_sort_metrics,
// rendered as its tests render them. Where morse writes something else, the case says why.
func TestTelegrafCases(t *testing.T) {
	for _, tc := range []struct {
		name          string
		batch         []morse.Metric
		stringAsLabel bool
		want          string
	}{
		{"empty labels are skipped", []morse.Metric{metric("cpu", tags{"": "example.org"}, fields{"time_idle": 42.0}, t0)},
			false, `cpu_time_idle 42`},
		{"simple", []morse.Metric{metric("cpu", tags{"host": "example.org"}, fields{"time_idle": 42.0}, t0)},
			false, `cpu_time_idle{host="example.org"} 42`},
		{"prometheus input untyped", []morse.Metric{metric("prometheus", tags{"code": "400", "method": "post"}, fields{"http_requests_total": 3.0}, t0)},
			false, `http_requests_total{code="400", method="post"} 3`},
		// Telegraf's metric is typed a histogram, and it adds the +Inf bucket from the count;
		// a morse metric has no type, and a batch with no bucket does not show one.
		{"prometheus input histogram no buckets", []morse.Metric{metric("prometheus", nil, fields{
			"http_request_duration_seconds_sum": int64(53423), "http_request_duration_seconds_count": int64(144320)}, t0)},
			false, "http_request_duration_seconds_count 144320\nhttp_request_duration_seconds_sum 53423"},
		{"prometheus input histogram only bucket", []morse.Metric{metric("prometheus", tags{"le": "0.5"}, fields{"http_request_duration_seconds_bucket": 129389.0}, t0)},
			false, `http_request_duration_seconds_count 0
http_request_duration_seconds_sum 0
http_request_duration_seconds_bucket{le="+Inf"} 0
http_request_duration_seconds_bucket{le="0.5"} 129389`},
		{"batch simple", []morse.Metric{
			metric("cpu", tags{"host": "one.example.org"}, fields{"time_idle": 42.0}, t0),
			metric("cpu", tags{"host": "two.example.org"}, fields{"time_idle": 42.0}, t0)},
			false, "cpu_time_idle{host=\"one.example.org\"} 42\ncpu_time_idle{host=\"two.example.org\"} 42"},
		{"multiple metric families", []morse.Metric{metric("cpu", tags{"host": "one.example.org"}, fields{"time_idle": 42.0, "time_guest": 42.0}, t0)},
			false, "cpu_time_guest{host=\"one.example.org\"} 42\ncpu_time_idle{host=\"one.example.org\"} 42"},
		{"histogram", histogramBatch(), false, `http_request_duration_seconds_count 144320
http_request_duration_seconds_sum 53423
http_request_duration_seconds_bucket{le="+Inf"} 144320
http_request_duration_seconds_bucket{le="0.05"} 24054
http_request_duration_seconds_bucket{le="0.1"} 33444
http_request_duration_seconds_bucket{le="0.2"} 100392
http_request_duration_seconds_bucket{le="0.5"} 129389
http_request_duration_seconds_bucket{le="1"} 133988`},
		{"summary with quantile", summaryBatch(), false, `rpc_duration_seconds_count 2693
rpc_duration_seconds_sum 17560473
rpc_duration_seconds{quantile="0.01"} 3102
rpc_duration_seconds{quantile="0.05"} 3272
rpc_duration_seconds{quantile="0.5"} 4773
rpc_duration_seconds{quantile="0.9"} 9001
rpc_duration_seconds{quantile="0.99"} 76656`},
		// Telegraf keeps only 43, the newer sample, and drops the older one that comes after
		// it in the batch; morse writes both, in time order, which a receiver accepts.
		{"newer sample", []morse.Metric{
			metric("cpu", nil, fields{"time_idle": 43.0}, time.Unix(1, 0)),
			metric("cpu", nil, fields{"time_idle": 42.0}, t0)},
			false, "cpu_time_idle 42\ncpu_time_idle 43"},
		{"multiple samples for the same series", []morse.Metric{
			metric("cpu", tags{"host": "one.example.org"}, fields{"time_idle": 1.0}, t0),
			metric("cpu", tags{"host": "one.example.org"}, fields{"time_idle": 2.0}, time.Unix(1, 0))},
			false, "cpu_time_idle{host=\"one.example.org\"} 1\ncpu_time_idle{host=\"one.example.org\"} 2"},
		{"colons are not replaced in metric name from measurement", []morse.Metric{metric("cpu::xyzzy", nil, fields{"time_idle": 42.0}, t0)},
			false, `cpu::xyzzy_time_idle 42`},
		{"colons are not replaced in metric name from field", []morse.Metric{metric("cpu", nil, fields{"time:idle": 42.0}, t0)},
			false, `cpu_time:idle 42`},
		{"invalid label", []morse.Metric{metric("cpu", tags{"host-name": "example.org"}, fields{"time_idle": 42.0}, t0)},
			false, `cpu_time_idle{host_name="example.org"} 42`},
		{"colons are replaced in label name", []morse.Metric{metric("cpu", tags{"host:name": "example.org"}, fields{"time_idle": 42.0}, t0)},
			false, `cpu_time_idle{host_name="example.org"} 42`},
		{"discard strings", []morse.Metric{metric("cpu", nil, fields{"time_idle": 42.0, "cpu": "cpu0"}, t0)},
			false, `cpu_time_idle 42`},
		{"string as label", []morse.Metric{metric("cpu", nil, fields{"time_idle": 42.0, "cpu": "cpu0"}, t0)},
			true, `cpu_time_idle{cpu="cpu0"} 42`},
		{"string as label duplicate tag", []morse.Metric{metric("cpu", tags{"cpu": "cpu0"}, fields{"time_idle": 42.0, "cpu": "cpu1"}, t0)},
			true, `cpu_time_idle{cpu="cpu0"} 42`},
		{"replace characters when using string as label", []morse.Metric{metric("cpu", nil, fields{"host:name": "example.org", "time_idle": 42.0}, time.Unix(1574279268, 0))},
			true, `cpu_time_idle{host_name="example.org"} 42`},
		{"multiple fields grouping", []morse.Metric{
			metric("cpu", tags{"cpu": "cpu0"}, fields{"time_guest": 8106.04, "time_system": 26271.4, "time_user": 92904.33}, t0),
			metric("cpu", tags{"cpu": "cpu1"}, fields{"time_guest": 8181.63, "time_system": 25351.49, "time_user": 96912.57}, t0),
			metric("cpu", tags{"cpu": "cpu2"}, fields{"time_guest": 7470.04, "time_system": 24998.43, "time_user": 96034.08}, t0),
			metric("cpu", tags{"cpu": "cpu3"}, fields{"time_guest": 7517.95, "time_system": 24970.82, "time_user": int64(94148)}, t0)},
			false, `cpu_time_guest{cpu="cpu0"} 8106.04
cpu_time_guest{cpu="cpu1"} 8181.63
cpu_time_guest{cpu="cpu2"} 7470.04
cpu_time_guest{cpu="cpu3"} 7517.95
cpu_time_system{cpu="cpu0"} 26271.4
cpu_time_system{cpu="cpu1"} 25351.49
cpu_time_system{cpu="cpu2"} 24998.43
cpu_time_system{cpu="cpu3"} 24970.82
cpu_time_user{cpu="cpu0"} 92904.33
cpu_time_user{cpu="cpu1"} 96912.57
cpu_time_user{cpu="cpu2"} 96034.08
cpu_time_user{cpu="cpu3"} 94148`},
		{"summary with no quantile", []morse.Metric{metric("prometheus", nil, fields{
			"rpc_duration_seconds_sum": 1.7560473e+07, "rpc_duration_seconds_count": int64(2693)}, t0)},
			false, "rpc_duration_seconds_count 2693\nrpc_duration_seconds_sum 17560473"},
		{"empty label string value", []morse.Metric{metric("prometheus", tags{"cpu": ""}, fields{"time_idle": 42.0}, t0)},
			true, `time_idle 42`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := prw.New(prw.Options{SortMetrics: true, StringAsLabel: tc.stringAsLabel})
			data, err := s.AppendBatch(nil, tc.batch)
			require.NoError(t, err)
			require.Equal(t, tc.want, text(decode(t, data)))
		})
	}
}

// TestUnwritable: a metric of which no field makes a sample is reported with its position
// and the last problem, and the others are written. These are Telegraf's
// TestRemoteWriteSerializeNegative inputs, which Telegraf only logs.
func TestUnwritable(t *testing.T) {
	good := metric("cpu", nil, fields{"time_idle": 1.0}, t0)
	for _, tc := range []struct {
		name string
		m    morse.Metric
		why  string
	}{
		{"name", metric("@@!!", nil, fields{"!!": "@@"}, t0), `failed to parse metric name: field "!!"`},
		{"string", metric("prometheus", nil, fields{"http_requests_total": "asd"}, t0), "bad sample value"},
		{"bucket", metric("prometheus", tags{"le": "0.5"}, fields{"http_request_duration_seconds_bucket": "asd"}, t0), "bad sample value"},
		{"quantile", metric("prometheus", tags{"quantile": "0.01a"}, fields{"rpc_duration_seconds": 3102.0}, t0), "can't parse quantile"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := prw.New(prw.Options{})
			data, err := s.AppendBatch([]byte("x"), []morse.Metric{good, tc.m})
			var serr *serializers.Error
			require.ErrorAs(t, err, &serr)
			require.Equal(t, []int{1}, serr.Indices)
			require.ErrorIs(t, err, prw.ErrNoSamples)
			require.ErrorContains(t, err, tc.why)
			require.Equal(t, "x", string(data[:1]), "appended to dst")
			require.Equal(t, "cpu_time_idle 1", text(decode(t, data[1:])))
			require.Error(t, serializers.Result(err, 2))

			data, err = s.AppendMetric(nil, tc.m)
			require.Empty(t, data, "nothing to send")
			require.Error(t, serializers.Result(err, 1))
		})
	}
	// A metric with a sample and a string beside it is written.
	data, err := prw.New(prw.Options{}).AppendBatch(nil, []morse.Metric{metric("prometheus", tags{"code": "400"},
		fields{"http_requests_total": 3.0, "http_requests_errors_total": "3.0"}, t0)})
	require.NoError(t, err)
	require.Equal(t, `http_requests_total{code="400"} 3`, text(decode(t, data)))
}

// TestSamples: timestamps in milliseconds; a series' samples in time order, one per time,
// the later one in the batch winning; labels sorted by name with duplicates left out; the
// order first seen without prometheus_sort_metrics.
func TestSamples(t *testing.T) {
	at := func(ms int64) time.Time { return time.UnixMilli(ms).Add(999 * time.Microsecond) }
	batch := []morse.Metric{
		metric("m", tags{"z": "1", "a-b": "x", "a_b": "y"}, fields{"v": 3.0}, at(3000)),
		metric("first", nil, fields{"v": true}, at(5)),
		metric("m", tags{"z": "1", "a-b": "x", "a_b": "y"}, fields{"v": 1.0}, at(1000)),
		metric("m", tags{"z": "1", "a-b": "x", "a_b": "y"}, fields{"v": 2.0}, at(2000)),
		metric("m", tags{"z": "1", "a-b": "x", "a_b": "y"}, fields{"v": 4.0}, at(2000)),
		metric("neg", nil, fields{"v": uint64(7)}, time.UnixMilli(-1500)),
	}
	data, err := prw.New(prw.Options{}).AppendBatch(nil, batch)
	require.NoError(t, err)
	got := decode(t, data)
	require.Len(t, got, 3)
	require.Equal(t, []wlabel{{"__name__", "m_v"}, {"a_b", "x"}, {"z", "1"}}, got[0].labels)
	require.Equal(t, []wsample{{1, 1000}, {4, 2000}, {3, 3000}}, got[0].samples)
	require.Equal(t, []wsample{{1, 5}}, got[1].samples)
	require.Equal(t, []wsample{{7, -1500}}, got[2].samples)
	require.True(t, strings.HasPrefix(got[1].labels[0].value, "first"))
}
