// Package influxdbv2 is the outputs.influxdb_v2 plugin: it writes line protocol to the
// InfluxDB v2 write API, POST /api/v2/write, which InfluxDB 2 and 3, InfluxDB Cloud,
// VictoriaMetrics and morse's own influxdb_listener serve. Its options are Telegraf's.
//
// Every answer is sorted into what the agent must do with the batch (see classify.go and
// testdata/influxdb/v2-answers.md, which cites the servers' sources): keep it and retry,
// drop it, count a partial write exactly, or have the agent's batch writer find the lines
// for which InfluxDB 2 refused a whole request (morse.RejectedError) and write the rest. A
// batch is split into one request per bucket when bucket_tag is set, and into halves when
// the server says a request is too large.
package influxdbv2

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/freelist"
	"github.com/morse-agent/morse/plugins/common/httpout"
	"github.com/morse-agent/morse/plugins/common/tlsclient"
	"github.com/morse-agent/morse/plugins/serializers/influx"
)

//go:embed sample.conf
var sampleConfig string

// Description is the one-line summary shown by `morse config`.
const Description = "Write metrics to the InfluxDB v2 write API (InfluxDB 2 and 3, Cloud, VictoriaMetrics)"

func init() {
	morse.RegisterOutput(morse.OutputInfo{
		Name:         "influxdb_v2",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Output { return New() },
	})
}

// Defaults, as Telegraf's (but for the user agent, which names morse).
const (
	DefaultURL     = "http://127.0.0.1:8086"
	DefaultTimeout = 5 * time.Second
	// defaultConcurrentWrites hides a round trip of several milliseconds, as outputs.influxdb
	// does; InfluxDB does not care in which order batches arrive.
	defaultConcurrentWrites = 4
)

// InfluxDBv2 writes batches to /api/v2/write. The TOML keys are Telegraf's, so a Telegraf
// [[outputs.influxdb_v2]] table decodes unchanged; sample.conf says what each one does.
// Build one with New, set fields, then Init (or Connect); the agent does the same from a
// config file.
type InfluxDBv2 struct {
	URLs             []string          `toml:"urls"`
	LocalAddress     string            `toml:"local_address"`
	Token            morse.Secret      `toml:"token"`
	Organization     string            `toml:"organization"`
	Bucket           string            `toml:"bucket"`
	BucketTag        string            `toml:"bucket_tag"`
	ExcludeBucketTag bool              `toml:"exclude_bucket_tag"`
	Timeout          morse.Duration    `toml:"timeout"`
	HTTPHeaders      map[string]string `toml:"http_headers"`
	HTTPProxy        string            `toml:"http_proxy"`
	UserAgent        string            `toml:"user_agent"`
	ContentEncoding  string            `toml:"content_encoding"`
	UintSupport      bool              `toml:"influx_uint_support"`
	OmitTimestamp    bool              `toml:"influx_omit_timestamp"`
	// OmitTimestampAlias is omit_timestamp, the name the morse issue gave the option; it
	// means the same as Telegraf's influx_omit_timestamp.
	OmitTimestampAlias bool           `toml:"omit_timestamp"`
	PingTimeout        morse.Duration `toml:"ping_timeout"`
	ReadIdleTimeout    morse.Duration `toml:"read_idle_timeout"`
	ConcurrentWrites   int            `toml:"concurrent_writes"`
	// RateLimit and RateLimitPeriod are Telegraf's; morse accepts them and warns at Init that
	// they have no effect (see Init).
	RateLimit       RateLimit      `toml:"rate_limit"`
	RateLimitPeriod morse.Duration `toml:"rate_limit_period"`
	tlsclient.Config

	log *slog.Logger

	// mu guards setup: the targets and the serializer are built under it and only read by
	// writes afterwards.
	mu       sync.Mutex
	ready    bool
	targets  []*target
	ser      *influx.Serializer
	failover httpout.Failover // writes start at the target that answered last
	warned   bool             // the warnings of Init were logged

	// scratch keeps the buffers of the writes in flight for the writes after them: one set
	// per write in flight, however many collections pass (see internal/freelist).
	scratch freelist.List[writeScratch]
}

// New returns an output with Telegraf's defaults.
func New() *InfluxDBv2 {
	return &InfluxDBv2{
		scratch:         freelist.List[writeScratch]{Max: maxKeptScratch},
		Timeout:         morse.Duration(DefaultTimeout),
		ContentEncoding: "gzip",
		UserAgent:       "morse",
	}
}

var (
	_ morse.Output           = (*InfluxDBv2)(nil)
	_ morse.Validator        = (*InfluxDBv2)(nil)
	_ morse.Initializer      = (*InfluxDBv2)(nil)
	_ morse.LoggerSetter     = (*InfluxDBv2)(nil)
	_ morse.ConcurrentWriter = (*InfluxDBv2)(nil)
	_ morse.LineWriter       = (*InfluxDBv2)(nil)
	_ morse.WriteTimeouter   = (*InfluxDBv2)(nil)
)

// SetLogger gives the output the engine's logger.
func (o *InfluxDBv2) SetLogger(l *slog.Logger) { o.log = l }

func (o *InfluxDBv2) logger() *slog.Logger {
	if o.log == nil {
		return slog.Default().With("output", "influxdb_v2")
	}
	return o.log
}

func (o *InfluxDBv2) urls() []string {
	if len(o.URLs) == 0 {
		return []string{DefaultURL}
	}
	return o.URLs
}

// Validate checks the options after decoding, without reading any file.
func (o *InfluxDBv2) Validate() error {
	var errs []error
	for i, u := range o.urls() {
		if _, err := parseURL(u); err != nil {
			errs = append(errs, morse.Errorf("urls", "entry %d: %v", i+1, err))
		}
	}
	if err := httpout.ValidateRequest(time.Duration(o.Timeout), o.ContentEncoding, o.HTTPHeaders); err != nil {
		errs = append(errs, err)
	}
	if err := o.transportOptions(nil).Validate(); err != nil {
		errs = append(errs, err)
	}
	if o.PingTimeout < 0 || o.ReadIdleTimeout < 0 {
		errs = append(errs, morse.Errorf("ping_timeout", "ping_timeout and read_idle_timeout must not be negative"))
	}
	if o.ConcurrentWrites < 0 {
		errs = append(errs, morse.Errorf("concurrent_writes", "must not be negative, got %d", o.ConcurrentWrites))
	}
	if o.RateLimitPeriod < 0 {
		errs = append(errs, morse.Errorf("rate_limit_period", "must not be negative"))
	}
	if err := o.Config.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// parseURL reads one of urls: http(s)://host[:port][/prefix] or unix:///path/to/socket.
func parseURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, err
	}
	switch u.Scheme {
	case "http", "https":
		if u.Host == "" {
			return nil, fmt.Errorf("%q: no host", s)
		}
	case "unix":
		if u.Path == "" {
			return nil, fmt.Errorf("%q: no socket path", s)
		}
	default:
		return nil, fmt.Errorf("%q: the scheme must be http, https or unix", s)
	}
	if u.User != nil {
		return nil, fmt.Errorf("%q: put the token in token, not in the URL, so that it is never logged", httpout.RedactURL(u))
	}
	return u, nil
}

// Init builds the HTTP clients, so that a TLS file that cannot be read stops the agent at
// start instead of failing every write, and logs once what is accepted but not done.
func (o *InfluxDBv2) Init() error {
	if err := o.Validate(); err != nil {
		return err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.warned {
		o.warned = true
		if o.Bucket == "" {
			// Not an error: VictoriaMetrics ignores the bucket, and Telegraf allows it empty.
			o.logger().Warn("bucket is empty: InfluxDB 2 and 3 refuse such writes (404, dropped); set bucket unless the server ignores it")
		}
		if o.RateLimit > 0 || o.RateLimitPeriod > 0 {
			o.logger().Warn("rate_limit and rate_limit_period have no effect in morse: bound what the output sends with metric_batch_size and flush_interval",
				"rate_limit", int64(o.RateLimit), "rate_limit_period", o.RateLimitPeriod)
		}
	}
	return o.setup()
}

// Connect prepares the HTTP clients unless Init has. It does not contact the servers: a
// server that is down at start is retried by the writes, like any other outage.
func (o *InfluxDBv2) Connect(context.Context) error {
	if err := o.Validate(); err != nil {
		return err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ready {
		return nil
	}
	return o.setup()
}

// setup builds the targets and the serializer; it is also what a Write before Connect gets.
func (o *InfluxDBv2) setup() error {
	tlsCfg, err := o.Config.TLSConfig()
	if err != nil {
		return err
	}
	o.closeTargets()
	o.targets = o.targets[:0]
	for _, s := range o.urls() {
		u, _ := parseURL(s) // Validate has checked it
		t, err := o.newTarget(u, tlsCfg)
		if err != nil {
			return err
		}
		o.targets = append(o.targets, t)
	}
	o.failover.Reset()
	o.ser = influx.New(influx.Options{UintSupport: o.UintSupport})
	o.ready = true
	return nil
}

func (o *InfluxDBv2) closeTargets() {
	for _, t := range o.targets {
		t.client.CloseIdleConnections()
	}
}

// Close releases idle connections.
func (o *InfluxDBv2) Close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closeTargets()
	return nil
}

// MaxConcurrentWrites tells the agent that Write is safe for concurrent use (each write has
// buffers of its own), and how many writes may be in flight: concurrent_writes, or 4.
func (o *InfluxDBv2) MaxConcurrentWrites() int {
	if o.ConcurrentWrites > 0 {
		return o.ConcurrentWrites
	}
	return defaultConcurrentWrites
}

// WritesLines tells the agent that line metrics (morse.NewLineMetric) may come as they are:
// the serializer writes their text. With bucket_tag the output reads a tag of every metric,
// which would only expand each one, so it takes them expanded.
func (o *InfluxDBv2) WritesLines() bool { return o.BucketTag == "" }

// omitTimestamp reports whether either spelling of the option is set.
func (o *InfluxDBv2) omitTimestamp() bool { return o.OmitTimestamp || o.OmitTimestampAlias }
