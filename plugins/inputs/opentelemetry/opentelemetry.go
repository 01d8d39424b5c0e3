// Package opentelemetry is the inputs.opentelemetry plugin: an OTLP receiver of metrics,
// over gRPC (service_address) and, when http_service_address is set, over HTTP with
// protobuf or JSON bodies (http.go), with Telegraf 1.39.3's options and its mapping of OTLP data points to metrics
// (plugins/common/otlpmetrics, metrics_schema "prometheus-v1" or "prometheus-v2").
//
// Data points that neither schema has a shape for are refused one by one and reported to
// the client in the answer's partial success, where Telegraf refuses the whole request.
// Traces, logs and profiles, which Telegraf also receives, are answered Unimplemented.
package opentelemetry

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"time"

	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	_ "google.golang.org/grpc/encoding/gzip" // takes gzip-compressed requests, as OTLP clients send by default

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/common/otlpmetrics"
	"github.com/morse-agent/morse/plugins/common/tlsserver"
)

//go:embed sample.conf
var sampleConfig string

// Description is the one-line summary shown by `morse config`.
const Description = "Receive OpenTelemetry metrics over OTLP/gRPC and OTLP/HTTP"

func init() {
	morse.RegisterInput(morse.InputInfo{
		Name:         "opentelemetry",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Input { return New() },
	})
}

// Defaults. The address is localhost's, where Telegraf's is 0.0.0.0: morse's listeners
// bind to localhost unless configured otherwise.
const (
	DefaultServiceAddress = "localhost:4317"
	DefaultTimeout        = 5 * time.Second
	DefaultMaxMsgSize     = 4 << 20 // gRPC's own default
)

// OpenTelemetry receives OTLP metrics. The TOML keys are Telegraf's.
type OpenTelemetry struct {
	ServiceAddress string `toml:"service_address"`
	// HTTPServiceAddress is where OTLP/HTTP is served, host:port (OTLP's port is 4318);
	// empty, the default, serves gRPC alone. morse's own option: Telegraf receives gRPC only.
	HTTPServiceAddress  string         `toml:"http_service_address"`
	SpanDimensions      []string       `toml:"span_dimensions"`
	LogRecordDimensions []string       `toml:"log_record_dimensions"`
	ProfileDimensions   []string       `toml:"profile_dimensions"`
	MetricsSchema       string         `toml:"metrics_schema"`
	MaxMsgSize          morse.Size     `toml:"max_msg_size"`
	Timeout             morse.Duration `toml:"timeout"`
	tlsserver.Config

	log    *slog.Logger
	schema otlpmetrics.Schema
	server *grpc.Server
	addr   net.Addr
	http   *httpServer
	wg     sync.WaitGroup
}

// New returns the input with Telegraf's defaults, but for the address (see
// DefaultServiceAddress).
func New() *OpenTelemetry {
	return &OpenTelemetry{ServiceAddress: DefaultServiceAddress, Timeout: morse.Duration(DefaultTimeout),
		SpanDimensions: []string{"service.name", "span.name"}, LogRecordDimensions: []string{"service.name"}}
}

var (
	_ morse.ServiceInput = (*OpenTelemetry)(nil)
	_ morse.Validator    = (*OpenTelemetry)(nil)
	_ morse.Initializer  = (*OpenTelemetry)(nil)
	_ morse.LoggerSetter = (*OpenTelemetry)(nil)
)

// SetLogger gives the input the engine's logger.
func (o *OpenTelemetry) SetLogger(l *slog.Logger) { o.log = l }

// Validate checks every option at once, without binding or reading files.
func (o *OpenTelemetry) Validate() error {
	var errs []error
	if _, err := otlpmetrics.ParseSchema(o.MetricsSchema); err != nil {
		errs = append(errs, morse.Errorf("metrics_schema", "%v", err))
	}
	if o.HTTPServiceAddress != "" {
		if _, _, err := net.SplitHostPort(o.HTTPServiceAddress); err != nil {
			errs = append(errs, morse.Errorf("http_service_address", "%q is not host:port: %v", o.HTTPServiceAddress, err))
		}
	}
	if o.MaxMsgSize < 0 {
		errs = append(errs, morse.Errorf("max_msg_size", "must not be negative"))
	}
	if o.Timeout < 0 {
		errs = append(errs, morse.Errorf("timeout", "must not be negative"))
	}
	errs = append(errs, o.ValidateTLS())
	return errors.Join(errs...)
}

// Init reads the schema.
func (o *OpenTelemetry) Init() error {
	if err := o.Validate(); err != nil {
		return err
	}
	o.schema, _ = otlpmetrics.ParseSchema(o.MetricsSchema)
	if o.ServiceAddress == "" {
		o.ServiceAddress = DefaultServiceAddress
	}
	o.warnUnused()
	return nil
}

// warnUnused logs once, at Init, each option of traces, logs and profiles set to other than
// Telegraf's default: morse receives metrics only, so they have no effect.
func (o *OpenTelemetry) warnUnused() {
	d := New()
	for key, set := range map[string]bool{
		"span_dimensions":       !slices.Equal(o.SpanDimensions, d.SpanDimensions),
		"log_record_dimensions": !slices.Equal(o.LogRecordDimensions, d.LogRecordDimensions),
		"profile_dimensions":    len(o.ProfileDimensions) > 0,
	} {
		if set {
			o.logger().Warn("option has no effect: morse receives metrics only, traces, logs and profiles are answered Unimplemented", "option", key)
		}
	}
}

func (o *OpenTelemetry) logger() *slog.Logger {
	if o.log == nil {
		return slog.Default().With("input", "opentelemetry")
	}
	return o.log
}

// Addr is the address the input listens on for OTLP/gRPC once started, nil before.
func (o *OpenTelemetry) Addr() net.Addr { return o.addr }

// HTTPAddr is the address the input listens on for OTLP/HTTP once started, nil before and
// when http_service_address is empty.
func (o *OpenTelemetry) HTTPAddr() net.Addr {
	if o.http == nil {
		return nil
	}
	return o.http.addr
}

// Start listens and serves OTLP/gRPC, and OTLP/HTTP when http_service_address is set, until
// Stop.
func (o *OpenTelemetry) Start(_ context.Context, acc morse.Accumulator) error {
	if o.schema == 0 {
		if err := o.Init(); err != nil {
			return err
		}
	}
	opts := []grpc.ServerOption{grpc.MaxRecvMsgSize(int(o.maxMsgSize()))}
	tlsCfg, err := o.TLSConfig()
	if err != nil {
		return err
	}
	if tlsCfg != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(tlsCfg)))
	}
	if o.Timeout > 0 {
		opts = append(opts, grpc.ConnectionTimeout(time.Duration(o.Timeout)))
	}
	ln, err := net.Listen("tcp", o.ServiceAddress)
	if err != nil {
		return fmt.Errorf("opentelemetry: %w", err)
	}
	if o.HTTPServiceAddress != "" {
		if o.http, err = o.startHTTP(acc, tlsCfg); err != nil {
			_ = ln.Close()
			return err
		}
	}
	o.addr = ln.Addr()
	o.server = grpc.NewServer(opts...)
	colmetricspb.RegisterMetricsServiceServer(o.server, &metricsService{schema: o.schema, acc: acc})
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		if err := o.server.Serve(ln); err != nil {
			acc.AddError(fmt.Errorf("opentelemetry: serving stopped: %w", err))
		}
	}()
	return nil
}

func (o *OpenTelemetry) maxMsgSize() morse.Size {
	if o.MaxMsgSize <= 0 {
		return DefaultMaxMsgSize
	}
	return o.MaxMsgSize
}

// Gather does nothing: metrics arrive as clients send them.
func (o *OpenTelemetry) Gather(context.Context, morse.Accumulator) error { return nil }

// Stop stops serving, closing the connections, and waits for the server to end.
func (o *OpenTelemetry) Stop() {
	if o.http != nil {
		o.http.stop()
		o.http = nil
	}
	if o.server != nil {
		o.server.Stop()
		o.wg.Wait()
		o.server = nil
	}
}

// metricsService is OTLP's MetricsService.
type metricsService struct {
	colmetricspb.UnimplementedMetricsServiceServer
	schema otlpmetrics.Schema
	acc    morse.Accumulator
}

// Export hands the request's metrics to the accumulator and reports the data points it
// refused in the answer's partial success.
func (s *metricsService) Export(_ context.Context, req *colmetricspb.ExportMetricsServiceRequest) (*colmetricspb.ExportMetricsServiceResponse, error) {
	rejected, err := otlpmetrics.Decode(req, s.schema, s.acc.AddMetric)
	resp := &colmetricspb.ExportMetricsServiceResponse{}
	if rejected > 0 {
		resp.PartialSuccess = &colmetricspb.ExportMetricsPartialSuccess{RejectedDataPoints: int64(rejected), ErrorMessage: err.Error()}
		s.acc.AddError(fmt.Errorf("opentelemetry: refused %d data points: %w", rejected, err))
	}
	return resp, nil
}
