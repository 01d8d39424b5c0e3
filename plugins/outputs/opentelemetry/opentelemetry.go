// Package opentelemetry is the outputs.opentelemetry plugin: it exports metrics to an
// OpenTelemetry receiver (the collector, or any OTLP endpoint) over OTLP, by gRPC or by
// HTTP with a protobuf or JSON body, with Telegraf 1.39.3's options and its mapping of
// metrics to OTLP data points (plugins/common/otlpmetrics).
//
// Each write is one export request. A metric with no OTLP form is dropped, counted under
// morse.ReasonSerialize, and the rest are sent; the receiver's answer is classified as
// the OTLP specification says, by morse's rules where they differ (see classify.go):
// data points the receiver rejects in a partial success are counted under ReasonRejected.
package opentelemetry

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"strings"
	"time"

	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/throttle"
	"github.com/morse-agent/morse/plugins/common/httpout"
	"github.com/morse-agent/morse/plugins/common/otlpmetrics"
	"github.com/morse-agent/morse/plugins/common/tlsclient"
)

//go:embed sample.conf
var sampleConfig string

// Description is the one-line summary shown by `morse config`.
const Description = "Send metrics to an OpenTelemetry receiver over OTLP (gRPC or HTTP)"

func init() {
	morse.RegisterOutput(morse.OutputInfo{
		Name:         "opentelemetry",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Output { return New() },
	})
}

// Defaults, as Telegraf's.
const (
	DefaultServiceAddress = "localhost:4317"
	DefaultTimeout        = 5 * time.Second
	DefaultCompression    = "gzip"
)

// ReasonRejected counts the metrics of data points that a receiver rejected in a partial
// success: at most as many metrics as it rejected points (a metric may make several).
const ReasonRejected = "otlp_rejected"

// OpenTelemetry exports batches as OTLP. The TOML keys are Telegraf's; sample.conf says
// what each one does.
type OpenTelemetry struct {
	ServiceAddress string            `toml:"service_address"`
	EncodingType   string            `toml:"encoding_type"`
	Timeout        morse.Duration    `toml:"timeout"`
	Compression    string            `toml:"compression"`
	Token          morse.Secret      `toml:"token"`
	Headers        map[string]string `toml:"headers"`
	Attributes     map[string]string `toml:"attributes"`
	Coralogix      *Coralogix        `toml:"coralogix"`
	UseSystemProxy bool              `toml:"use_system_proxy"`
	HTTPProxyURL   string            `toml:"http_proxy_url"`
	UseProxy       bool              `toml:"use_proxy"`
	ProxyURL       string            `toml:"proxy_url"`
	tlsclient.Config

	log    *slog.Logger
	warns  *throttle.Throttle // the receivers' warnings, at most one line a minute
	enc    *otlpmetrics.Encoder
	client exporter
}

// Coralogix is Telegraf's table for a Coralogix endpoint: its headers, and TLS on.
type Coralogix struct {
	AppName    string       `toml:"application"`
	SubSystem  string       `toml:"subsystem"`
	PrivateKey morse.Secret `toml:"private_key"`
}

// exporter sends one request: over gRPC or HTTP. rejected and msg are the receiver's
// partial success; err is classified (classify.go).
type exporter interface {
	export(ctx context.Context, req *colmetricspb.ExportMetricsServiceRequest, headers map[string]string) (rejected int64, msg string, err error)
	close() error
}

// New returns an output with Telegraf's defaults.
func New() *OpenTelemetry {
	return &OpenTelemetry{ServiceAddress: DefaultServiceAddress, Timeout: morse.Duration(DefaultTimeout),
		Compression: DefaultCompression, EncodingType: "protobuf"}
}

var (
	_ morse.Output         = (*OpenTelemetry)(nil)
	_ morse.Validator      = (*OpenTelemetry)(nil)
	_ morse.LoggerSetter   = (*OpenTelemetry)(nil)
	_ morse.WriteTimeouter = (*OpenTelemetry)(nil)
)

// SetLogger gives the output the engine's logger.
func (o *OpenTelemetry) SetLogger(l *slog.Logger) { o.log = l }

// overHTTP reports whether the address is a URL, which Telegraf takes as OTLP over HTTP.
func (o *OpenTelemetry) overHTTP() bool {
	return strings.HasPrefix(o.ServiceAddress, "http://") || strings.HasPrefix(o.ServiceAddress, "https://")
}

// Validate checks every option at once, without dialing or reading files.
func (o *OpenTelemetry) Validate() error {
	var errs []error
	if o.ServiceAddress == "" {
		errs = append(errs, morse.Errorf("service_address", "must not be empty"))
	} else if o.overHTTP() {
		if _, err := url.Parse(o.ServiceAddress); err != nil {
			errs = append(errs, morse.Errorf("service_address", "%v", err))
		}
	}
	switch o.EncodingType {
	case "", "protobuf", "json":
	default:
		errs = append(errs, morse.Errorf("encoding_type", `invalid encoding %q: want "protobuf" or "json"`, o.EncodingType))
	}
	switch o.Compression {
	case "", "gzip", "none":
	default:
		errs = append(errs, morse.Errorf("compression", `unknown compression %q: want "gzip" or "none"`, o.Compression))
	}
	if o.Timeout < 0 {
		errs = append(errs, morse.Errorf("timeout", "must not be negative, got %s", o.Timeout))
	}
	if o.HTTPProxyURL != "" {
		if _, err := httpout.ParseProxy(o.HTTPProxyURL); err != nil {
			errs = append(errs, morse.Errorf("http_proxy_url", "%v", err))
		}
	}
	if o.UseProxy {
		if err := checkSocks(o.ProxyURL); err != nil {
			errs = append(errs, morse.Errorf("proxy_url", "%v", err))
		}
	}
	if c := o.Coralogix; c != nil && (c.AppName == "" || c.SubSystem == "" || !c.PrivateKey.IsSet()) {
		errs = append(errs, morse.Errorf("coralogix", "private_key, application and subsystem are required"))
	}
	errs = append(errs, o.Config.Validate())
	return errors.Join(errs...)
}

func (o *OpenTelemetry) timeout() time.Duration {
	if o.Timeout <= 0 {
		return DefaultTimeout
	}
	return time.Duration(o.Timeout)
}

// WriteTimeout bounds one write: a request, and the halves of one the receiver found too
// large, each bounded by timeout.
func (o *OpenTelemetry) WriteTimeout() time.Duration { return httpout.WriteTimeout(o.timeout()) }

// Connect builds the client. It does not dial: gRPC connects on the first export and HTTP
// per request, so a receiver that is down makes writes retry, not Connect fail.
func (o *OpenTelemetry) Connect(context.Context) error {
	if err := o.Validate(); err != nil {
		return err
	}
	o.enc = otlpmetrics.NewEncoder()
	o.warns = throttle.New(time.Minute)
	tlsCfg, err := o.TLSConfig()
	if err != nil {
		return err
	}
	if o.overHTTP() {
		o.client, err = newHTTPExporter(o, tlsCfg)
	} else {
		o.client, err = newGRPCExporter(o, tlsCfg)
	}
	return err
}

// Close closes the client; Connect makes a new one.
func (o *OpenTelemetry) Close() error {
	if o.client == nil {
		return nil
	}
	err := o.client.close()
	o.client = nil
	return err
}

// headers are the configured headers with the token's and Coralogix's.
func (o *OpenTelemetry) headers() map[string]string {
	h := maps.Clone(o.Headers)
	if h == nil {
		h = map[string]string{}
	}
	if c := o.Coralogix; c != nil {
		h["ApplicationName"] = c.AppName
		h["ApiName"] = c.SubSystem
		h["Authorization"] = "Bearer " + string(c.PrivateKey)
	}
	if o.Token.IsSet() {
		h["authorization"] = "Bearer " + string(o.Token)
	}
	return h
}

// Write exports the batch as one request; see the package comment for what is counted.
func (o *OpenTelemetry) Write(ctx context.Context, batch []morse.Metric) error {
	if o.client == nil {
		return morse.Retryable(errors.New("opentelemetry: not connected"), 0)
	}
	err := o.write(ctx, batch)
	if errors.Is(err, httpout.ErrTooLarge) && len(batch) > 1 {
		return httpout.Halves(batch, func(half []morse.Metric) error { return o.Write(ctx, half) })
	}
	return err
}

func (o *OpenTelemetry) write(ctx context.Context, batch []morse.Metric) error {
	o.enc.Reset()
	var unsent []int
	var first error
	for i, m := range batch {
		if err := o.enc.Add(m); err != nil {
			unsent = append(unsent, i)
			first = cmpOr(first, err)
		}
	}
	var unsentErr *morse.PartialWriteError
	if len(unsent) > 0 {
		unsentErr = &morse.PartialWriteError{Dropped: len(unsent), Indices: unsent, Reason: morse.ReasonSerialize,
			Err: fmt.Errorf("%d metrics have no OTLP form, the first: %w", len(unsent), first)}
	}
	if o.enc.DataPoints() == 0 {
		if unsentErr != nil {
			return unsentErr
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout())
	defer cancel()
	rejected, msg, err := o.client.export(ctx, o.enc.Request(o.Attributes), o.headers())
	if err != nil {
		return err
	}
	if rejected > 0 {
		part := &morse.PartialWriteError{Dropped: int(min(rejected, int64(len(batch)-len(unsent)))), Reason: ReasonRejected,
			Err: fmt.Errorf("the receiver rejected %d of %d data points: %s", rejected, o.enc.DataPoints(), msg)}
		if unsentErr == nil {
			return part
		}
		unsentErr.More = append(unsentErr.More, part)
	} else if msg != "" {
		o.warns.Log(o.logger(), slog.LevelWarn, "the receiver accepted the export with a warning", "message", msg)
	}
	if unsentErr != nil {
		return unsentErr
	}
	return nil
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func (o *OpenTelemetry) logger() *slog.Logger {
	if o.log == nil {
		return slog.Default().With("output", "opentelemetry")
	}
	return o.log
}
