package otlpmetrics

import (
	"testing"

	"github.com/stretchr/testify/require"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

const (
	start = uint64(1395066363000000000)
	stamp = uint64(1395066363000000123)
)

func intAttr(k string, v int64) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v}}}
}

// libRequest is the request of otel2influx's tests (v0.5.12): a resource node=42, the scope
// "My Library" "latest", and one metric with its data points' attributes code=200 (an int)
// and method=post.
func libRequest(m *metricspb.Metric) *colmetricspb.ExportMetricsServiceRequest {
	return &colmetricspb.ExportMetricsServiceRequest{ResourceMetrics: []*metricspb.ResourceMetrics{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{strAttr("node", "42")}},
		ScopeMetrics: []*metricspb.ScopeMetrics{{
			Scope:   &commonpb.InstrumentationScope{Name: "My Library", Version: "latest"},
			Metrics: []*metricspb.Metric{m},
		}},
	}}}
}

var pointAttrs = []*commonpb.KeyValue{intAttr("code", 200), strAttr("method", "post")}

func histogram() *metricspb.Metric {
	sum, lo, hi := 53423.0, 0.0, 100.0
	return &metricspb.Metric{Name: "http_request_duration_seconds", Data: &metricspb.Metric_Histogram{Histogram: &metricspb.Histogram{
		AggregationTemporality: metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE,
		DataPoints: []*metricspb.HistogramDataPoint{{Attributes: pointAttrs, StartTimeUnixNano: start, TimeUnixNano: stamp,
			Count: 144320, Sum: &sum, Min: &lo, Max: &hi,
			BucketCounts: []uint64{24054, 9390, 66948, 28997, 4599, 10332}, ExplicitBounds: []float64{0.05, 0.1, 0.2, 0.5, 1}}},
	}}}
}

func summary() *metricspb.Metric {
	return &metricspb.Metric{Name: "rpc_duration_seconds", Data: &metricspb.Metric_Summary{Summary: &metricspb.Summary{
		DataPoints: []*metricspb.SummaryDataPoint{{Attributes: pointAttrs, StartTimeUnixNano: start, TimeUnixNano: stamp,
			Count: 2693, Sum: 17560473, QuantileValues: []*metricspb.SummaryDataPoint_ValueAtQuantile{{Quantile: 0.01, Value: 3102}, {Quantile: 0.5, Value: 4773}}}},
	}}}
}

func sum(monotonic bool, temporality metricspb.AggregationTemporality) *metricspb.Metric {
	return &metricspb.Metric{Name: "http_requests_total", Data: &metricspb.Metric_Sum{Sum: &metricspb.Sum{
		IsMonotonic: monotonic, AggregationTemporality: temporality,
		DataPoints: []*metricspb.NumberDataPoint{{Attributes: pointAttrs, StartTimeUnixNano: start, TimeUnixNano: stamp,
			Value: &metricspb.NumberDataPoint_AsDouble{AsDouble: 1027}}},
	}}}
}

func decode(t *testing.T, req *colmetricspb.ExportMetricsServiceRequest, s Schema) (string, int, error) {
	t.Helper()
	var out []morse.Metric
	n, err := Decode(req, s, func(m morse.Metric) { out = append(out, m) })
	return testutil.Format(out), n, err
}

// TestDecodeLibraryCases holds Decode to what otel2influx's tests expect of the same
// requests, under both schemas.
func TestDecodeLibraryCases(t *testing.T) {
	const tags = `code=200,method=post,node=42,otel.library.name=My\ Library,otel.library.version=latest`
	cases := map[string]struct {
		m      *metricspb.Metric
		schema Schema
		want   string
	}{
		"v1 histogram": {histogram(), PrometheusV1, "http_request_duration_seconds," + tags +
			" +Inf=144320,0.05=24054,0.1=33444,0.2=100392,0.5=129389,1=133988,count=144320,max=100,min=0,start_time_unix_nano=1395066363000000000i,sum=53423 1395066363000000123\n"},
		"v2 histogram": {histogram(), PrometheusV2, "prometheus," + tags +
			" http_request_duration_seconds_count=144320,http_request_duration_seconds_max=100,http_request_duration_seconds_min=0,http_request_duration_seconds_sum=53423,start_time_unix_nano=1395066363000000000i 1395066363000000123\n" +
			"prometheus,code=200,le=0.05,method=post,node=42,otel.library.name=My\\ Library,otel.library.version=latest http_request_duration_seconds_bucket=24054 1395066363000000123\n" +
			"prometheus,code=200,le=0.1,method=post,node=42,otel.library.name=My\\ Library,otel.library.version=latest http_request_duration_seconds_bucket=33444 1395066363000000123\n" +
			"prometheus,code=200,le=0.2,method=post,node=42,otel.library.name=My\\ Library,otel.library.version=latest http_request_duration_seconds_bucket=100392 1395066363000000123\n" +
			"prometheus,code=200,le=0.5,method=post,node=42,otel.library.name=My\\ Library,otel.library.version=latest http_request_duration_seconds_bucket=129389 1395066363000000123\n" +
			"prometheus,code=200,le=1,method=post,node=42,otel.library.name=My\\ Library,otel.library.version=latest http_request_duration_seconds_bucket=133988 1395066363000000123\n" +
			"prometheus,code=200,le=+Inf,method=post,node=42,otel.library.name=My\\ Library,otel.library.version=latest http_request_duration_seconds_bucket=144320 1395066363000000123\n"},
		"v1 summary": {summary(), PrometheusV1, "rpc_duration_seconds," + tags +
			" 0.01=3102,0.5=4773,count=2693,start_time_unix_nano=1395066363000000000i,sum=1.7560473e+07 1395066363000000123\n"},
		"v2 summary": {summary(), PrometheusV2, "prometheus," + tags +
			" rpc_duration_seconds_count=2693,rpc_duration_seconds_sum=1.7560473e+07,start_time_unix_nano=1395066363000000000i 1395066363000000123\n" +
			"prometheus," + tags + ",quantile=0.01 rpc_duration_seconds=3102 1395066363000000123\n" +
			"prometheus," + tags + ",quantile=0.5 rpc_duration_seconds=4773 1395066363000000123\n"},
		"v1 monotonic cumulative sum is a counter": {sum(true, metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE), PrometheusV1,
			"http_requests_total," + tags + " counter=1027,start_time_unix_nano=1395066363000000000i 1395066363000000123\n"},
		"v1 delta sum is a gauge": {sum(true, metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA), PrometheusV1,
			"http_requests_total," + tags + " gauge=1027,start_time_unix_nano=1395066363000000000i 1395066363000000123\n"},
		"v2 sum": {sum(true, metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE), PrometheusV2,
			"prometheus," + tags + " http_requests_total=1027,start_time_unix_nano=1395066363000000000i 1395066363000000123\n"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			got, n, err := decode(t, libRequest(c.m), c.schema)
			require.NoError(t, err)
			require.Zero(t, n)
			require.Equal(t, c.want, got)
		})
	}
}

// TestDecodeRefusesPoints: points Telegraf refuses the whole request for are refused one by
// one, counted, and the others decoded.
func TestDecodeRefusesPoints(t *testing.T) {
	bad := histogram()
	bad.GetHistogram().DataPoints[0].BucketCounts = []uint64{1, 2}
	noTime := sum(false, metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE)
	noTime.GetSum().DataPoints[0].TimeUnixNano = 0
	expo := &metricspb.Metric{Name: "e", Data: &metricspb.Metric_ExponentialHistogram{ExponentialHistogram: &metricspb.ExponentialHistogram{
		DataPoints: []*metricspb.ExponentialHistogramDataPoint{{TimeUnixNano: 1}, {TimeUnixNano: 2}}}}}
	req := libRequest(bad)
	sm := req.ResourceMetrics[0].ScopeMetrics[0]
	sm.Metrics = append(sm.Metrics, noTime, expo, summary())
	got, n, err := decode(t, req, PrometheusV1)
	require.Equal(t, 4, n)
	require.ErrorContains(t, err, "invalid metric histogram bucket counts qty 2 vs explicit bounds qty 5")
	require.Contains(t, got, "rpc_duration_seconds,")
	require.NotContains(t, got, "http_request")
}

// TestRoundTrip: what Decode makes of a request, Encoder makes the same request of, for
// the shapes that survive without a value type: v1 counters, gauges and histograms.
func TestRoundTrip(t *testing.T) {
	for _, m := range []*metricspb.Metric{histogram(), sum(true, metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE)} {
		req := libRequest(m)
		var out []morse.Metric
		_, err := Decode(req, PrometheusV1, func(m morse.Metric) { out = append(out, m) })
		require.NoError(t, err)
		e := NewEncoder()
		for _, m := range out {
			require.NoError(t, e.Add(m))
		}
		back := render(e.Request(nil))
		// node is no semantic-convention key, so it comes back as a point attribute; the
		// start time, a field, is not read back (as in the library); min and max neither.
		want := render(req)
		want = replaceAll(want, "resource node=42", "resource ")
		want = replaceAll(want, "{code=200,method=post}", "{code=200,method=post,node=42}")
		want = replaceAll(want, "start=1395066363000000000", "start=0")
		require.Equal(t, want, back)
	}
}
