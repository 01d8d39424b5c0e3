package otlpmetrics

import (
	"fmt"
	"strings"

	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
)

// render writes a request as indented text, one line per resource, scope, metric and data
// point, so that a test states what it expects as the library's tests do, in a few lines.
func render(req *colmetricspb.ExportMetricsServiceRequest) string {
	var b strings.Builder
	for _, rm := range req.ResourceMetrics {
		fmt.Fprintf(&b, "resource %s\n", attrs(rm.GetResource().GetAttributes()))
		for _, sm := range rm.ScopeMetrics {
			fmt.Fprintf(&b, " scope %q %q\n", sm.GetScope().GetName(), sm.GetScope().GetVersion())
			for _, m := range sm.Metrics {
				renderMetric(&b, m)
			}
		}
	}
	return b.String()
}

func renderMetric(b *strings.Builder, m *metricspb.Metric) {
	switch d := m.Data.(type) {
	case *metricspb.Metric_Gauge:
		fmt.Fprintf(b, "  gauge %s\n", m.Name)
		for _, dp := range d.Gauge.DataPoints {
			renderNumber(b, dp)
		}
	case *metricspb.Metric_Sum:
		fmt.Fprintf(b, "  sum %s monotonic=%v %s\n", m.Name, d.Sum.IsMonotonic, d.Sum.AggregationTemporality)
		for _, dp := range d.Sum.DataPoints {
			renderNumber(b, dp)
		}
	case *metricspb.Metric_Histogram:
		fmt.Fprintf(b, "  histogram %s %s\n", m.Name, d.Histogram.AggregationTemporality)
		for _, dp := range d.Histogram.DataPoints {
			fmt.Fprintf(b, "   {%s} t=%d start=%d count=%d sum=%v bounds=%v counts=%v\n", attrs(dp.Attributes),
				dp.TimeUnixNano, dp.StartTimeUnixNano, dp.Count, dp.GetSum(), dp.ExplicitBounds, dp.BucketCounts)
		}
	default:
		fmt.Fprintf(b, "  %T %s\n", d, m.Name)
	}
}

func renderNumber(b *strings.Builder, dp *metricspb.NumberDataPoint) {
	var v string
	switch x := dp.Value.(type) {
	case *metricspb.NumberDataPoint_AsInt:
		v = fmt.Sprintf("%di", x.AsInt)
	case *metricspb.NumberDataPoint_AsDouble:
		v = fmt.Sprint(x.AsDouble)
	}
	fmt.Fprintf(b, "   {%s} t=%d start=%d %s\n", attrs(dp.Attributes), dp.TimeUnixNano, dp.StartTimeUnixNano, v)
}

func attrs(kvs []*commonpb.KeyValue) string {
	parts := make([]string, 0, len(kvs))
	for _, kv := range kvs {
		parts = append(parts, kv.Key+"="+valueString(kv.Value))
	}
	return strings.Join(parts, ",")
}

func replaceAll(s, old, new string) string { return strings.ReplaceAll(s, old, new) }
