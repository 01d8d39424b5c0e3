package dataformat_test

import (
	"errors"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/serializers"
	"github.com/morse-agent/morse/plugins/serializers/dataformat"
	"github.com/morse-agent/morse/plugins/serializers/prometheus"
)

// keysOf returns the option keys that err names, in order.
func keysOf(err error) []string {
	var keys []string
	var walk func(error)
	walk = func(err error) {
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		if fe, ok := errors.AsType[*morse.FieldError](err); ok {
			keys = append(keys, fe.Key)
		}
	}
	walk(err)
	return keys
}

// TestValidateReportsEveryProblem: one run names the unknown or bad options of the chosen
// format and every option of another format that is set, each under its key.
func TestValidateReportsEveryProblem(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  dataformat.Config
		keys []string
	}{
		{"defaults", dataformat.Config{}, nil},
		{"every format builds", dataformat.Config{DataFormat: "splunkmetric"}, nil},
		{"unknown format and a stray option", dataformat.Config{DataFormat: "avro", CSV: dataformat.CSV{Header: true}},
			[]string{"data_format", "csv_header"}},
		{"csv's problems together", dataformat.Config{DataFormat: "csv", CSV: dataformat.CSV{Separator: ";;", TimestampFormat: "garbage", Columns: []string{"x"}}},
			[]string{"csv_separator", "csv_timestamp_format", "csv_columns"}},
		{"carbon2's and json's stray one", dataformat.Config{DataFormat: "carbon2", Carbon2: dataformat.Carbon2{Format: "x", SanitizeReplaceChar: "__"},
			JSON: dataformat.JSON{TimestampUnits: morse.Duration(time.Millisecond)}},
			[]string{"carbon2_format", "carbon2_sanitize_replace_char", "json_timestamp_units"}},
		{"prometheus", dataformat.Config{DataFormat: "prometheus", Prometheus: dataformat.Prometheus{NameSanitization: "ascii",
			MetricTypes: prometheus.MetricTypes{Counter: []string{"["}}}}, []string{"prometheus_name_sanitization", "prometheus_metric_types.counter"}},
		{"prometheusremotewrite reads two of prometheus's keys", dataformat.Config{DataFormat: "prometheusremotewrite",
			Prometheus: dataformat.Prometheus{SortMetrics: true, StringAsLabel: true, ExportTimestamp: true, CompactEncoding: true}},
			[]string{"prometheus_export_timestamp", "prometheus_compact_encoding"}},
		{"a key of two formats is reported once", dataformat.Config{DataFormat: "json", Prometheus: dataformat.Prometheus{SortMetrics: true}},
			[]string{"prometheus_sort_metrics"}},
		{"json_transformation that does not compile", dataformat.Config{DataFormat: "json", JSON: dataformat.JSON{Transformation: "$$("}},
			[]string{"json_transformation"}},
		{"influx", dataformat.Config{Influx: dataformat.Influx{InfluxMaxLineBytes: -1}, SplunkMetric: dataformat.SplunkMetric{MultiMetric: true}},
			[]string{"influx_max_line_bytes", "splunkmetric_multimetric"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			require.ElementsMatch(t, tc.keys, keysOf(err), "%v", err)
			_, newErr := tc.cfg.New()
			require.Equal(t, err == nil, newErr == nil, "New refuses what Validate refuses")
		})
	}
}

// TestCSVHeaderOnce: the header is written by the first call only, however many writers
// call at once, as Telegraf writes it once in the serializer's life.
func TestCSVHeaderOnce(t *testing.T) {
	cfg := dataformat.Config{DataFormat: "csv", CSV: dataformat.CSV{Header: true}}
	ser, err := cfg.New()
	require.NoError(t, err)
	m := morse.NewMetric("m", nil, []morse.Field{{Key: "v", Value: morse.Int(1)}}, time.Unix(1, 0))
	var wg sync.WaitGroup
	outs := make([][]byte, 8)
	for i := range outs {
		wg.Go(func() { outs[i], _ = serializers.Append(ser, nil, []morse.Metric{m}, i%2 == 0) })
	}
	wg.Wait()
	headers := 0
	for _, o := range outs {
		if string(o) == "timestamp,measurement,v\n1,m,1\n" {
			headers++
		} else {
			require.Equal(t, "1,m,1\n", string(o))
		}
	}
	require.Equal(t, 1, headers)
}

// TestCasesLineProtocolCannotHold are Telegraf's cases (and behaviours) whose metrics line
// protocol cannot express: empty tag values, NaN, newlines in tag values.
func TestCasesLineProtocolCannotHold(t *testing.T) {
	ts := time.Unix(1700000000, 0)
	for _, tc := range []struct {
		name string
		cfg  dataformat.Config
		m    morse.Metric
		want string
	}{
		{"carbon2 empty tag value (Telegraf's TestSerializeMetricWithEmptyStringTag)", dataformat.Config{DataFormat: "carbon2"},
			morse.NewMetric("cpu", []morse.Tag{{Key: "cpu", Value: ""}}, []morse.Field{{Key: "usage_idle", Value: morse.Float(91.5)}}, ts),
			"metric=cpu field=usage_idle cpu=null  91.5 1700000000\n"},
		{"splunkmetric leaves NaN out", dataformat.Config{DataFormat: "splunkmetric"},
			morse.NewMetric("cpu", nil, []morse.Field{{Key: "a", Value: morse.Float(math.NaN())}, {Key: "b", Value: morse.Float(0.5)}}, time.Unix(0, 0)),
			`{"_value":0.5,"metric_name":"cpu.b","time":0}`},
		{"prometheus escapes label values", dataformat.Config{DataFormat: "prometheus", Prometheus: dataformat.Prometheus{CompactEncoding: true}},
			morse.NewMetric("m", []morse.Tag{{Key: "path", Value: "C:\\dir\n\"x\""}}, []morse.Field{{Key: "v", Value: morse.Float(math.Inf(-1))}}, ts),
			"# TYPE m_v untyped\nm_v{path=\"C:\\\\dir\\n\\\"x\\\"\"} -Inf\n"},
		{"prometheus legacy names", dataformat.Config{DataFormat: "prometheus", Prometheus: dataformat.Prometheus{CompactEncoding: true}},
			morse.NewMetric("1disk.io", []morse.Tag{{Key: "dev.name", Value: "sda"}}, []morse.Field{{Key: "read bytes", Value: morse.Int(7)}}, ts),
			"# TYPE disk_io_read_bytes untyped\ndisk_io_read_bytes{dev_name=\"sda\"} 7\n"},
		{"prometheus utf8 names, escaped as the encoder escapes them", dataformat.Config{DataFormat: "prometheus",
			Prometheus: dataformat.Prometheus{CompactEncoding: true, NameSanitization: "utf8"}},
			morse.NewMetric("1disk.io", []morse.Tag{{Key: "dev.name", Value: "sda"}}, []morse.Field{{Key: "read bytes", Value: morse.Int(7)}}, ts),
			"# TYPE _disk_io_read_bytes untyped\n_disk_io_read_bytes{dev_name=\"sda\"} 7\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ser, err := tc.cfg.New()
			require.NoError(t, err)
			got, err := ser.AppendMetric(nil, tc.m)
			require.NoError(t, err)
			require.Equal(t, tc.want, string(got))
		})
	}
}

// TestUnwritableMetricsAreCounted: a metric that a format cannot write is left out of the
// batch and named, by position, with ReasonSerialize; its neighbours are written.
func TestUnwritableMetricsAreCounted(t *testing.T) {
	good := morse.NewMetric("m", nil, []morse.Field{{Key: "v", Value: morse.Int(1)}}, time.Unix(0, 0))
	onlyString := morse.NewMetric("m", nil, []morse.Field{{Key: "s", Value: morse.String("x")}}, time.Unix(0, 0))
	for _, format := range []string{"carbon2", "splunkmetric", "prometheus"} {
		for _, batch := range []bool{false, true} {
			cfg := dataformat.Config{DataFormat: format}
			ser, err := cfg.New()
			require.NoError(t, err)
			out, err := serializers.Append(ser, nil, []morse.Metric{good, onlyString, good}, batch)
			require.NotEmpty(t, out)
			se, ok := errors.AsType[*serializers.Error](err)
			require.True(t, ok, "%s: %v", format, err)
			require.Equal(t, []int{1}, se.Indices, format)
			pe, ok := serializers.Result(err, 3).(*morse.PartialWriteError)
			require.True(t, ok)
			require.Equal(t, morse.ReasonSerialize, pe.Reason)
			require.Equal(t, 1, pe.Dropped)
		}
	}
}
