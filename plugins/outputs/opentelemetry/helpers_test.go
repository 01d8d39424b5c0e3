package opentelemetry

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

// connect builds an output for address, changed by edit, connected.
func connect(t *testing.T, address string, edit func(*OpenTelemetry)) *OpenTelemetry {
	t.Helper()
	o := New()
	o.ServiceAddress = address
	if edit != nil {
		edit(o)
	}
	require.NoError(t, o.Validate())
	require.NoError(t, o.Connect(context.Background()))
	t.Cleanup(func() { _ = o.Close() })
	return o
}

// points lists the data points of requests as sorted lines "type name{attrs} value",
// resource attributes first in the braces, for one require.Equal.
func points(reqs []*colmetricspb.ExportMetricsServiceRequest) []string {
	var out []string
	for _, req := range reqs {
		for _, rm := range req.ResourceMetrics {
			var res []string
			for _, kv := range rm.GetResource().GetAttributes() {
				res = append(res, kv.Key+"="+kv.GetValue().GetStringValue())
			}
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					out = append(out, metricPoints(strings.Join(res, ","), m)...)
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

func metricPoints(res string, m *metricspb.Metric) []string {
	var out []string
	line := func(typ string, attrs []string, v string) {
		out = append(out, fmt.Sprintf("%s %s{%s|%s} %s", typ, m.Name, res, strings.Join(attrs, ","), v))
	}
	switch d := m.Data.(type) {
	case *metricspb.Metric_Gauge:
		for _, dp := range d.Gauge.DataPoints {
			line("gauge", attrList(dp.Attributes), number(dp))
		}
	case *metricspb.Metric_Sum:
		for _, dp := range d.Sum.DataPoints {
			line("sum", attrList(dp.Attributes), number(dp))
		}
	case *metricspb.Metric_Histogram:
		for _, dp := range d.Histogram.DataPoints {
			line("histogram", attrList(dp.Attributes), fmt.Sprintf("count=%d sum=%v bounds=%v counts=%v", dp.Count, dp.GetSum(), dp.ExplicitBounds, dp.BucketCounts))
		}
	}
	return out
}

func attrList(kvs []*commonpb.KeyValue) []string {
	var out []string
	for _, kv := range kvs {
		out = append(out, kv.Key+"="+kv.GetValue().GetStringValue())
	}
	return out
}

func number(dp *metricspb.NumberDataPoint) string {
	if v, ok := dp.Value.(*metricspb.NumberDataPoint_AsInt); ok {
		return fmt.Sprintf("%di", v.AsInt)
	}
	return fmt.Sprint(dp.GetAsDouble())
}

// metricsOf reads line protocol.
func metricsOf(t *testing.T, lp string) []morse.Metric { return testutil.Parse(t, lp, false) }
