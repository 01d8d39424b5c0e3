package prometheus_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/plugins/parsers"
	influx "github.com/morse-agent/morse/plugins/parsers/influx"
	"github.com/morse-agent/morse/plugins/parsers/prometheus"
)

// now is the parse time of samples without a timestamp.
var now = time.Date(2026, 11, 27, 20, 0, 0, 0, time.UTC)

func parse(t testing.TB, o prometheus.Options, data []byte) ([]morse.Metric, error) {
	t.Helper()
	p, err := prometheus.New(o, parsers.Settings{MetricName: "file", Now: func() time.Time { return now }})
	require.NoError(t, err)
	var ms []morse.Metric
	err = p.Parse(data, func(m morse.Metric) { ms = append(ms, m) })
	return ms, err
}

// render writes metrics one per line in emission order, with each field's type, so that
// a golden file pins everything a metric holds.
func render(ms []morse.Metric) []byte {
	var b strings.Builder
	for _, m := range ms {
		b.WriteString(m.Name())
		for _, tg := range m.Tags() {
			fmt.Fprintf(&b, ",%s=%q", tg.Key, tg.Value)
		}
		for j, f := range m.Fields() {
			sep := ","
			if j == 0 {
				sep = " "
			}
			fmt.Fprintf(&b, "%s%s=%s:%s", sep, f.Key, f.Value.Type(), f.Value)
		}
		fmt.Fprintf(&b, " %d\n", m.Time().UnixNano())
	}
	return []byte(b.String())
}

// TestTelegrafCases reads the inputs of Telegraf 1.39.3's prometheus parser tests
// (plugins/parsers/prometheus/testcases, copied to testdata/telegraf) with both metric
// versions and compares with its expected outputs. Telegraf's test harness adds the
// metric's value type as the tag _type, which morse's metrics do not carry, and compares
// fields as a set and times only where the expected line has one.
func TestTelegrafCases(t *testing.T) {
	dirs, err := filepath.Glob("testdata/telegraf/*")
	require.NoError(t, err)
	require.Len(t, dirs, 7)
	for _, dir := range dirs {
		for _, version := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s_v%d", filepath.Base(dir), version), func(t *testing.T) {
				input, err := os.ReadFile(filepath.Join(dir, "input.txt"))
				require.NoError(t, err)
				expected, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("expected_v%d.out", version)))
				require.NoError(t, err)
				ignore := filepath.Base(dir) == "ignore_timestamp"
				got, err := parse(t, prometheus.Options{MetricVersion: version, IgnoreTimestamp: ignore}, input)
				require.NoError(t, err)
				want := telegrafExpected(t, expected)
				require.Len(t, got, len(want))
				for i, m := range got {
					w := want[i]
					require.Equal(t, canonFields(w), canonFields(m), "metric %d", i)
					if w.Time().Equal(now) || ignore {
						require.True(t, m.Time().Equal(now), "metric %d has the parse time", i)
					} else {
						require.True(t, m.Time().Equal(w.Time()), "metric %d: %v, want %v", i, m.Time(), w.Time())
					}
				}
				testutil.Golden(t, filepath.Join(dir, fmt.Sprintf("morse_v%d.golden", version)), render(got))
			})
		}
	}
}

// telegrafExpected reads an expected_v*.out file: line protocol without times where the
// sample had none (read here as now), with the _type tag of Telegraf's harness.
func telegrafExpected(t *testing.T, data []byte) []morse.Metric {
	var ms []morse.Metric
	p := influx.Parser{Now: func() time.Time { return now }}
	res := p.Parse(data, func(m morse.Metric) { ms = append(ms, m.WithoutTag("_type")) })
	require.NoError(t, res.Err())
	return ms
}

// canonFields is a metric without its time, its fields in key order.
func canonFields(m morse.Metric) string {
	fields := slices.Clone(m.Fields())
	slices.SortFunc(fields, func(a, b morse.Field) int { return strings.Compare(a.Key, b.Key) })
	return testutil.Canon([]morse.Metric{morse.NewMetric(m.Name(), slices.Clone(m.Tags()), fields, time.Unix(0, 0))})[0]
}

// TestFeatures reads an exposition with every construct of the format (escapes, comments,
// blank and indented lines, special values, quoted names, histograms with and without
// +Inf, a summary with a NaN quantile, timestamps, CRLF, no final line feed) with both
// versions and with timestamps ignored, against golden files.
func TestFeatures(t *testing.T) {
	input, err := os.ReadFile("testdata/features.txt")
	require.NoError(t, err)
	for _, o := range []prometheus.Options{{}, {MetricVersion: 1}, {MetricVersion: 2, IgnoreTimestamp: true}} {
		t.Run(fmt.Sprintf("v%d_ignore=%v", o.MetricVersion, o.IgnoreTimestamp), func(t *testing.T) {
			got, err := parse(t, o, input)
			require.NoError(t, err)
			name := fmt.Sprintf("features_v%d.golden", max(o.MetricVersion, 2))
			if o.MetricVersion == 1 {
				name = "features_v1.golden"
			}
			if o.IgnoreTimestamp {
				for _, m := range got {
					require.True(t, m.Time().Equal(now))
				}
				name = "features_ignore.golden"
			}
			testutil.Golden(t, filepath.Join("testdata", name), render(got))
		})
	}
}

// TestDefaultIsVersion2 holds the default to Telegraf's parser: prometheus_metric_version
// 0 is version 2 (Telegraf's prometheus input, not its parser, defaults to 1).
func TestDefaultIsVersion2(t *testing.T) {
	ms, err := parse(t, prometheus.Options{}, []byte("# TYPE up gauge\nup{job=\"a\"} 1\n"))
	require.NoError(t, err)
	require.Equal(t, "prometheus,job=\"a\" up=float:1 1795809600000000000\n", string(render(ms)))
	ms, err = parse(t, prometheus.Options{MetricVersion: 1}, []byte("# TYPE up gauge\nup{job=\"a\"} 1\n"))
	require.NoError(t, err)
	require.Equal(t, "up,job=\"a\" gauge=float:1 1795809600000000000\n", string(render(ms)))
}

func TestValidate(t *testing.T) {
	for _, v := range []int{-1, 3} {
		o := prometheus.Options{MetricVersion: v}
		err := o.Validate()
		var fe *morse.FieldError
		require.ErrorAs(t, err, &fe)
		require.Equal(t, "prometheus_metric_version", fe.Key)
		_, err = prometheus.New(o, parsers.Settings{})
		require.Error(t, err)
	}
	for _, v := range []int{0, 1, 2} {
		o := prometheus.Options{MetricVersion: v}
		require.NoError(t, o.Validate())
	}
}

// TestMappingFamily converts a family built in code, as an input reading the protobuf
// format would build it: the exported mapping is the parser's.
func TestMappingFamily(t *testing.T) {
	f := &prometheus.Family{Name: "lat", Type: prometheus.Histogram, Samples: []prometheus.Sample{{
		Labels:  []morse.Tag{{Key: "z", Value: "1"}, {Key: "a", Value: ""}},
		Count:   3,
		Sum:     1.5,
		Buckets: []prometheus.Bucket{{UpperBound: 0.5, Count: 1}, {UpperBound: math.Inf(1), Count: 3}},
	}}}
	var ms []morse.Metric
	prometheus.Mapping{MetricVersion: 1}.Metrics(f, now, func(m morse.Metric) { ms = append(ms, m) })
	prometheus.Mapping{MetricVersion: 2}.Metrics(f, now, func(m morse.Metric) { ms = append(ms, m) })
	require.Equal(t, `lat,z="1" count=float:3,sum=float:1.5,0.5=float:1,+Inf=float:3 1795809600000000000
prometheus,z="1" lat_count=float:3,lat_sum=float:1.5 1795809600000000000
prometheus,le="0.5",z="1" lat_bucket=float:1 1795809600000000000
prometheus,le="+Inf",z="1" lat_bucket=float:3 1795809600000000000
`, string(render(ms)))
}
