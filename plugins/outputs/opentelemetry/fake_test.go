package opentelemetry

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/morse-agent/morse"
)

// fakeReceiver answers what the collector's receiver never does (a partial success, a
// RetryInfo, Unauthenticated) and keeps each request's metadata. It stands beside the
// tests against the real receiver (collector_test.go), for these answers only.
type fakeReceiver struct {
	colmetricspb.UnimplementedMetricsServiceServer
	answer func() (*colmetricspb.ExportMetricsServiceResponse, error)
	md     chan metadata.MD
}

func (f *fakeReceiver) Export(ctx context.Context, _ *colmetricspb.ExportMetricsServiceRequest) (*colmetricspb.ExportMetricsServiceResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	f.md <- md
	return f.answer()
}

func startFake(t *testing.T, answer func() (*colmetricspb.ExportMetricsServiceResponse, error)) (string, *fakeReceiver) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	f := &fakeReceiver{answer: answer, md: make(chan metadata.MD, 10)}
	srv := grpc.NewServer()
	colmetricspb.RegisterMetricsServiceServer(srv, f)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Stop(); <-done })
	return ln.Addr().String(), f
}

// TestPartialSuccess: data points a receiver rejects are counted under otlp_rejected, as
// many metrics as points at most, beside the metrics that had no OTLP form.
func TestPartialSuccess(t *testing.T) {
	addr, _ := startFake(t, func() (*colmetricspb.ExportMetricsServiceResponse, error) {
		return &colmetricspb.ExportMetricsServiceResponse{PartialSuccess: &colmetricspb.ExportMetricsPartialSuccess{
			RejectedDataPoints: 2, ErrorMessage: "too old"}}, nil
	})
	o := connect(t, addr, nil)
	batch := metricsOf(t, batchLP(time.Now().UnixNano()))
	err := o.Write(context.Background(), batch)
	require.Equal(t, morse.OutcomePartial, morse.Classify(err))
	var pw *morse.PartialWriteError
	require.ErrorAs(t, err, &pw)
	require.Equal(t, morse.ReasonSerialize, pw.Reason)
	require.Len(t, pw.More, 1)
	require.Equal(t, ReasonRejected, pw.More[0].Reason)
	require.Equal(t, 2, pw.More[0].Dropped)
	require.ErrorContains(t, pw.More[0], "rejected 2 of 5 data points: too old")
	written, dropped := pw.Split(len(batch))
	require.Equal(t, []int{2, 3}, []int{written, dropped})
}

// TestMetadata: headers, the token and Coralogix's keys travel as gRPC metadata.
func TestMetadata(t *testing.T) {
	addr, f := startFake(t, func() (*colmetricspb.ExportMetricsServiceResponse, error) {
		return &colmetricspb.ExportMetricsServiceResponse{}, nil
	})
	o := connect(t, addr, func(o *OpenTelemetry) {
		o.Headers = map[string]string{"X-Tenant": "t1"}
		o.Token = "tok"
	})
	require.NoError(t, o.Write(context.Background(), metricsOf(t, "m gauge=1 1\n")))
	md := <-f.md
	require.Equal(t, []string{"t1"}, md.Get("x-tenant"))
	require.Equal(t, []string{"Bearer tok"}, md.Get("authorization"))
	require.Contains(t, md.Get("user-agent")[0], "morse")
}

// TestStatusClasses: RetryInfo sets the wait; Unauthenticated is retried as unauthorized;
// Unimplemented is permanent.
func TestStatusClasses(t *testing.T) {
	var next error
	addr, _ := startFake(t, func() (*colmetricspb.ExportMetricsServiceResponse, error) { return nil, next })
	o := connect(t, addr, nil)
	write := func() error { return o.Write(context.Background(), metricsOf(t, "m gauge=1 1\n")) }

	st, err := status.New(codes.ResourceExhausted, "memory limiter").WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(7 * time.Second)})
	require.NoError(t, err)
	next = st.Err()
	var re *morse.RetryableError
	require.ErrorAs(t, write(), &re)
	require.Equal(t, 7*time.Second, re.RetryAfter)

	next = status.Error(codes.Unauthenticated, "bad token")
	err = write()
	require.Equal(t, morse.OutcomeRetry, morse.Classify(err))
	require.True(t, errors.Is(err, morse.ErrUnauthorized))

	next = status.Error(codes.Unimplemented, "no metrics here")
	err = write()
	var pe *morse.PermanentError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "unimplemented", pe.Reason)
}
