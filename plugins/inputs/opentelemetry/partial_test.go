package opentelemetry

import (
	"bytes"
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// TestPartialSuccessAnswer: data points with no shape in the schema (an exponential
// histogram's, one without a time) are refused in the answer's partial success, counted,
// and the rest of the request is taken; Telegraf refuses the whole request.
func TestPartialSuccessAnswer(t *testing.T) {
	in, acc := start(t, "prometheus-v1")
	conn, err := grpc.NewClient(in.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	req := &colmetricspb.ExportMetricsServiceRequest{ResourceMetrics: []*metricspb.ResourceMetrics{{ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{
		{Name: "e", Data: &metricspb.Metric_ExponentialHistogram{ExponentialHistogram: &metricspb.ExponentialHistogram{
			DataPoints: []*metricspb.ExponentialHistogramDataPoint{{TimeUnixNano: 1}, {TimeUnixNano: 2}}}}},
		{Name: "g", Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: []*metricspb.NumberDataPoint{
			{TimeUnixNano: 0, Value: &metricspb.NumberDataPoint_AsInt{AsInt: 1}},
			{TimeUnixNano: 5, Value: &metricspb.NumberDataPoint_AsInt{AsInt: 2}}}}}},
	}}}}}}
	resp, err := colmetricspb.NewMetricsServiceClient(conn).Export(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, int64(3), resp.GetPartialSuccess().GetRejectedDataPoints())
	require.Contains(t, resp.GetPartialSuccess().GetErrorMessage(), "exponential histograms are not supported")
	require.Equal(t, []string{"g gauge=2i"}, shapes(acc.Metrics()))
	require.Len(t, acc.Errors(), 1)
}

// TestWarnsUnusedOptions: trace, log and profile options set to other than Telegraf's
// defaults are each named in a warning at Init; the defaults are not.
func TestWarnsUnusedOptions(t *testing.T) {
	var buf bytes.Buffer
	in := New()
	in.SetLogger(slog.New(slog.NewTextHandler(&buf, nil)))
	require.NoError(t, in.Init())
	require.Empty(t, buf.String())
	in.SpanDimensions, in.ProfileDimensions = []string{"x"}, []string{"y"}
	require.NoError(t, in.Init())
	require.Contains(t, buf.String(), "option=span_dimensions")
	require.Contains(t, buf.String(), "option=profile_dimensions")
	require.NotContains(t, buf.String(), "option=log_record_dimensions")
}
