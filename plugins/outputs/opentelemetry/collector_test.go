package opentelemetry

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testserver"
)

// batchLP is a batch of the shapes the output maps: fields of an ordinary input (one gauge
// each, host.name a resource attribute), a v1 counter and histogram, a v2 gauge, and a
// metric of text only, which has no OTLP form.
func batchLP(ts int64) string {
	return fmt.Sprintf(`cpu,cpu=cpu0,host.name=h1 usage_idle=97.5,usage_user=1i %[1]d
http_requests_total,code=200 counter=5i %[1]d
latency,path=/ count=4,sum=2.5,0.1=1,1=3 %[1]d
prometheus,job=x up=1 %[1]d
log message="text only" %[1]d
`, ts)
}

var batchPoints = []string{
	"gauge cpu_usage_idle{host.name=h1|cpu=cpu0} 97.5",
	"gauge cpu_usage_user{host.name=h1|cpu=cpu0} 1i",
	"gauge up{|job=x} 1",
	"histogram latency{|path=/} count=4 sum=2.5 bounds=[0.1 1] counts=[1 2 1]",
	"sum http_requests_total{|code=200} 5i",
}

// TestExportToCollector writes a batch to the OpenTelemetry Collector's own OTLP receiver
// over gRPC and over HTTP (protobuf and JSON, gzip or not): the receiver takes every data
// point, and the metric without an OTLP form is dropped exactly, under serialize.
func TestExportToCollector(t *testing.T) {
	col := testserver.StartOtelcol(t, testserver.OtelcolOptions{})
	cases := map[string]func(*OpenTelemetry){
		"grpc gzip":          func(o *OpenTelemetry) { o.ServiceAddress = col.GRPC },
		"grpc none":          func(o *OpenTelemetry) { o.ServiceAddress, o.Compression = col.GRPC, "none" },
		"http protobuf gzip": func(o *OpenTelemetry) { o.ServiceAddress = col.HTTP + "/v1/metrics" },
		"http json none": func(o *OpenTelemetry) {
			o.ServiceAddress, o.EncodingType, o.Compression = col.HTTP+"/v1/metrics", "json", "none"
		},
	}
	ts := time.Now().UnixNano()
	for name, edit := range cases {
		t.Run(name, func(t *testing.T) {
			before := len(col.Requests(t))
			o := connect(t, "", edit)
			err := o.Write(context.Background(), metricsOf(t, batchLP(ts)))
			var pw *morse.PartialWriteError
			require.ErrorAs(t, err, &pw)
			require.Equal(t, morse.ReasonSerialize, pw.Reason)
			require.Equal(t, []int{4}, pw.Indices)
			reqs := col.Requests(t)
			require.Len(t, reqs, before+1, "one request per write")
			require.Equal(t, batchPoints, points(reqs[before:]))
		})
	}
}

// TestCollectorRefusals: the collector's pipeline refusing a request, as a permanent error
// (the receiver answers gRPC Internal, HTTP 500) drops the batch, counted under the code, and as a
// transient one (gRPC Unavailable, HTTP 503) keeps it for a retry, which then passes.
func TestCollectorRefusals(t *testing.T) {
	lp := batchLP(time.Now().UnixNano())
	for _, proto := range []string{"grpc", "http"} {
		address := func(c *testserver.Otelcol) string {
			if proto == "grpc" {
				return c.GRPC
			}
			return c.HTTP + "/v1/metrics"
		}
		t.Run(proto+" permanent", func(t *testing.T) {
			col := testserver.StartOtelcol(t, testserver.OtelcolOptions{Fail: "permanent"})
			err := connect(t, address(col), nil).Write(context.Background(), metricsOf(t, lp)[:4])
			require.Equal(t, morse.OutcomeDropped, morse.Classify(err), "%v", err)
			var se *StatusError
			require.ErrorAs(t, err, &se)
			var pe *morse.PermanentError
			require.ErrorAs(t, err, &pe)
			if proto == "grpc" {
				require.Equal(t, codes.Internal, se.Code)
				require.Equal(t, "internal", pe.Reason)
			} else {
				require.Equal(t, 500, se.HTTPStatus)
				require.Equal(t, "http_500", pe.Reason)
			}
			require.Contains(t, se.Message, "refused request 1 on purpose")
			require.Empty(t, col.Requests(t))
		})
		t.Run(proto+" retryable", func(t *testing.T) {
			col := testserver.StartOtelcol(t, testserver.OtelcolOptions{Fail: "retryable", FailCount: 1})
			o := connect(t, address(col), nil)
			err := o.Write(context.Background(), metricsOf(t, lp)[:4])
			require.Equal(t, morse.OutcomeRetry, morse.Classify(err), "%v", err)
			var se *StatusError
			require.ErrorAs(t, err, &se)
			if proto == "grpc" {
				require.Equal(t, codes.Unavailable, se.Code)
			} else {
				require.Equal(t, 503, se.HTTPStatus)
			}
			require.NoError(t, o.Write(context.Background(), metricsOf(t, lp)[:4]), "the retry passes")
			require.Equal(t, batchPoints, points(col.Requests(t)))
		})
	}
}

// TestReceiverDown: no receiver at the address is a retryable error, over both protocols.
func TestReceiverDown(t *testing.T) {
	col := testserver.StartOtelcol(t, testserver.OtelcolOptions{})
	grpcAddr, httpAddr := col.GRPC, col.HTTP+"/v1/metrics"
	// A port that was just free, now closed: nothing listens there.
	testserver.StopOtelcol(t, col)
	for _, addr := range []string{grpcAddr, httpAddr} {
		o := connect(t, addr, func(o *OpenTelemetry) { o.Timeout = morse.Duration(2 * time.Second) })
		err := o.Write(context.Background(), metricsOf(t, "m gauge=1 1\n"))
		require.Error(t, err)
		require.Equal(t, morse.OutcomeRetry, morse.Classify(err), "%s: %v", addr, err)
		require.False(t, errors.Is(err, morse.ErrUnauthorized))
	}
}
