// Package statsd is the inputs.statsd plugin: a StatsD server over UDP or TCP with Telegraf
// 1.39.3's options, measurement names, tags, field names and field types, including its
// InfluxDB-style tags in bucket names ("users.current,region=us-west:32|g"), the graphite
// templates that turn buckets into measurements, tags and fields, and DogStatsD's tags,
// distributions, events and service checks (datadog_extensions).
//
// Readers (one UDP socket, or one goroutine per TCP connection) put what they read on a
// queue of at most allowed_pending_messages packets (and at most 64 MiB), and
// number_workers_threads workers parse it and aggregate it into the caches that Gather
// emits: counters summed, gauges set or moved by +/- deltas, sets counted, timings and
// histograms summarised. A UDP packet that finds the queue full is dropped and counted
// (udp_packets_dropped); a TCP connection that finds it full waits, so that TCP's flow
// control slows the sender instead. A malformed line is counted by reason and logged,
// throttled; the lines around it are kept.
package statsd

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/throttle"
	"github.com/morse-agent/morse/plugins/common/graphitetemplate"
	"github.com/morse-agent/morse/selfstat"
)

// Description is the one-line summary that `morse config` prints above the sample.
const Description = "Statsd server over UDP or TCP, with DogStatsD extensions"

//go:embed sample.conf
var sampleConfig string

func init() {
	morse.RegisterInput(morse.InputInfo{
		Name:         "statsd",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Input { return New() },
	})
}

// logEvery is how often one kind of problem is logged at most; the log line says how many
// were held back.
const logEvery = 30 * time.Second

// Statsd is the inputs.statsd plugin and its configuration. Build it with New, which sets
// Telegraf's defaults; the agent calls Init, then Start, Gather every interval, and Stop.
type Statsd struct {
	// Protocol is "udp", "udp4", "udp6", "tcp", "tcp4" or "tcp6".
	Protocol string `toml:"protocol"`
	// ServiceAddress is the host:port to listen on, ":8125" by default.
	ServiceAddress string `toml:"service_address"`
	// MaxTCPConnections caps the open TCP connections. At the cap a new connection takes
	// the place of one that has sent no complete line, else of the one idle longest; only
	// when every connection is being read is it refused.
	MaxTCPConnections int `toml:"max_tcp_connections"`
	// TCPKeepAlive turns TCP keep-alive probes on, every TCPKeepAlivePeriod when set (the
	// system's period otherwise).
	TCPKeepAlive       bool            `toml:"tcp_keep_alive"`
	TCPKeepAlivePeriod *morse.Duration `toml:"tcp_keep_alive_period"`
	// DeleteGauges, DeleteCounters, DeleteSets and DeleteTimings clear each cache after
	// every Gather; false keeps reporting the last values until max_ttl or a restart.
	DeleteGauges   bool `toml:"delete_gauges"`
	DeleteCounters bool `toml:"delete_counters"`
	DeleteSets     bool `toml:"delete_sets"`
	DeleteTimings  bool `toml:"delete_timings"`
	// EnableAggregationTemporality adds the temporality tag to counters (delta when
	// delete_counters, cumulative otherwise) and a start_time field (RFC 3339, the previous
	// Gather's time) to every aggregate, for OpenTelemetry outputs.
	EnableAggregationTemporality bool `toml:"enable_aggregation_temporality"`
	// Percentiles are the percentiles of timings and histograms, as fields named
	// "<p>_percentile" (90_percentile, 99.9_percentile).
	Percentiles []float64 `toml:"percentiles"`
	// MetricSeparator joins the parts of a bucket that make a measurement ("_").
	MetricSeparator string `toml:"metric_separator"`
	// DataDogExtensions parses DogStatsD's tags (|#k:v,...), container ids (|c:...),
	// events (_e{...}) and service checks (_sc|...). parse_data_dog_tags, which Telegraf
	// removed in 1.35, sets it too (config/deprecated.go).
	DataDogExtensions bool `toml:"datadog_extensions"`
	// DataDogDistributions reports each distribution value (|d) as it came, with
	// datadog_extensions; without them distributions are counted and left out.
	DataDogDistributions bool `toml:"datadog_distributions"`
	// DataDogKeepContainerTag keeps a DogStatsD 1.2 container id as the container tag.
	DataDogKeepContainerTag bool `toml:"datadog_keep_container_tag"`
	// Templates are graphite templates that turn a bucket into a measurement, tags and a
	// field, as in Telegraf's graphite parser.
	Templates []string `toml:"templates"`
	// AllowedPendingMessages is how many packets (UDP datagrams, or runs of TCP lines) may
	// wait for a worker; past it UDP packets are dropped and counted, TCP waits.
	AllowedPendingMessages int `toml:"allowed_pending_messages"`
	// NumberWorkerThreads is how many goroutines parse and aggregate.
	NumberWorkerThreads int `toml:"number_workers_threads"`
	// PercentileLimit is how many values of each timing field percentiles are estimated
	// from (1000 when 0).
	PercentileLimit int `toml:"percentile_limit"`
	// ReadBufferSize sets the socket's receive buffer (SO_RCVBUF); 0 keeps the system's.
	ReadBufferSize morse.Size `toml:"read_buffer_size"`
	// MaxTTL forgets a cached aggregate that no line has updated for this long, when the
	// delete_* option of its kind is false; 0 keeps it.
	MaxTTL morse.Duration `toml:"max_ttl"`
	// SanitizeNamesMethod is "" (names as received) or "upstream" (whitespace to "_", "/"
	// to "-", and characters outside a-zA-Z_-0-9.;= removed, as statsd itself does).
	SanitizeNamesMethod string `toml:"sanitize_name_method"`
	// ConvertNames replaces "." with "_" and "-" with "__" in measurement names.
	ConvertNames bool `toml:"convert_names"`
	// FloatCounters, FloatTimings and FloatSets report counters, timings' count fields and
	// sets as floats instead of integers.
	FloatCounters bool `toml:"float_counters"`
	FloatTimings  bool `toml:"float_timings"`
	FloatSets     bool `toml:"float_sets"`

	log     *slog.Logger
	stats   *selfstat.PluginStats
	c       counters
	engine  *graphitetemplate.Engine // nil without templates: the default is a fast path
	percKey []string                 // the field suffixes of Percentiles
	now     func() time.Time
	errLog  *throttle.Throttle // malformed lines
	ioLog   *throttle.Throttle // drops, refused connections, read errors
	inited  bool

	cache cache

	runMu sync.Mutex
	srv   *server // nil unless started
}

// The engine finds these optional interfaces by type assertion; a typo would go unnoticed.
var (
	_ morse.ServiceInput = (*Statsd)(nil)
	_ morse.Validator    = (*Statsd)(nil)
	_ morse.Initializer  = (*Statsd)(nil)
	_ morse.LoggerSetter = (*Statsd)(nil)
	_ morse.StatsSetter  = (*Statsd)(nil)
)

// New returns the plugin with Telegraf's defaults: UDP on port 8125 of every interface,
// every cache cleared after each Gather, 10,000 pending packets, 5 workers, 250 TCP
// connections, and no percentiles (the sample config asks for six).
func New() *Statsd {
	return &Statsd{
		Protocol:               "udp",
		ServiceAddress:         ":8125",
		MaxTCPConnections:      250,
		DeleteGauges:           true,
		DeleteCounters:         true,
		DeleteSets:             true,
		DeleteTimings:          true,
		MetricSeparator:        "_",
		AllowedPendingMessages: 10000,
		NumberWorkerThreads:    5,
	}
}

// SetLogger gives the plugin the engine's logger, which already names the plugin.
func (s *Statsd) SetLogger(l *slog.Logger) { s.log = l }

// SetStats gives the plugin its self-metric counters, reported as internal_statsd.
func (s *Statsd) SetStats(st *selfstat.PluginStats) { s.stats = st }

// Validate checks every option without touching the network, and reports every problem.
func (s *Statsd) Validate() error {
	var errs []error
	switch s.Protocol {
	case "udp", "udp4", "udp6", "tcp", "tcp4", "tcp6":
	default:
		errs = append(errs, morse.Errorf("protocol", "%q is not one of udp, udp4, udp6, tcp, tcp4, tcp6", s.Protocol))
	}
	if _, port, err := net.SplitHostPort(s.ServiceAddress); err != nil {
		errs = append(errs, morse.Errorf("service_address", "%v", err))
	} else if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		errs = append(errs, morse.Errorf("service_address", "port %q is not a number from 0 to 65535", port))
	}
	if s.MaxTCPConnections < 1 {
		errs = append(errs, morse.Errorf("max_tcp_connections", "must be at least 1, got %d", s.MaxTCPConnections))
	}
	if s.TCPKeepAlivePeriod != nil && *s.TCPKeepAlivePeriod < 0 {
		errs = append(errs, morse.Errorf("tcp_keep_alive_period", "must not be negative"))
	}
	for _, p := range s.Percentiles {
		if !(p >= 0 && p <= 100) {
			errs = append(errs, morse.Errorf("percentiles", "%v is not between 0 and 100", p))
		}
	}
	if s.AllowedPendingMessages < 0 {
		errs = append(errs, morse.Errorf("allowed_pending_messages", "must not be negative, got %d", s.AllowedPendingMessages))
	}
	if s.NumberWorkerThreads < 1 {
		errs = append(errs, morse.Errorf("number_workers_threads", "must be at least 1: without a worker nothing is parsed, got %d", s.NumberWorkerThreads))
	}
	if s.PercentileLimit < 0 {
		errs = append(errs, morse.Errorf("percentile_limit", "must not be negative (0 means 1000), got %d", s.PercentileLimit))
	}
	if s.ReadBufferSize < 0 {
		errs = append(errs, morse.Errorf("read_buffer_size", "must not be negative"))
	}
	if s.MaxTTL < 0 {
		errs = append(errs, morse.Errorf("max_ttl", "must not be negative (0 keeps aggregates)"))
	}
	if s.SanitizeNamesMethod != "" && s.SanitizeNamesMethod != "upstream" {
		errs = append(errs, morse.Errorf("sanitize_name_method", "%q is not \"\" or \"upstream\"", s.SanitizeNamesMethod))
	}
	if _, err := s.newEngine(); err != nil {
		errs = append(errs, morse.Errorf("templates", "%w", err))
	}
	return errors.Join(errs...)
}

// separator is metric_separator, "_" when empty as in Telegraf.
func (s *Statsd) separator() string {
	if s.MetricSeparator == "" {
		return "_"
	}
	return s.MetricSeparator
}

// newEngine builds the template engine, nil without templates.
func (s *Statsd) newEngine() (*graphitetemplate.Engine, error) {
	if len(s.Templates) == 0 {
		return nil, nil
	}
	def, err := graphitetemplate.NewTemplate(graphitetemplate.DefaultSeparator, "measurement*", nil)
	if err != nil {
		return nil, err
	}
	return graphitetemplate.NewEngine(s.separator(), def, s.Templates)
}

// Init checks the options and prepares the templates and the caches.
func (s *Statsd) Init() error {
	if err := s.Validate(); err != nil {
		return err
	}
	s.engine, _ = s.newEngine()
	s.percKey = make([]string, len(s.Percentiles))
	for i, p := range s.Percentiles {
		s.percKey[i] = strconv.FormatFloat(p, 'g', -1, 64) + "_percentile"
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.DataDogDistributions && !s.DataDogExtensions {
		s.log.Warn("datadog_distributions needs datadog_extensions: distributions are counted as distributions_ignored and left out")
	}
	s.errLog, s.ioLog = throttle.New(logEvery), throttle.New(logEvery)
	s.cache.init(s.now())
	s.inited = true
	return nil
}

// setup prepares what Start needs when the plugin was built in code without the agent.
func (s *Statsd) setup() error {
	if !s.inited {
		if err := s.Init(); err != nil {
			return err
		}
	}
	if s.stats == nil {
		s.stats = selfstat.NewPluginStats(nil, "internal_statsd", nil)
	}
	s.c = newCounters(s.stats)
	s.c.maxConns.Set(int64(s.MaxTCPConnections))
	s.c.maxPending.Set(int64(s.AllowedPendingMessages))
	return nil
}

// Start binds the socket and starts the readers and workers. It returns once the socket is
// bound, so that a client may send as soon as it has returned.
func (s *Statsd) Start(_ context.Context, acc morse.Accumulator) error {
	s.runMu.Lock()
	defer s.runMu.Unlock()
	if s.srv != nil {
		return errors.New("statsd: already started")
	}
	if err := s.setup(); err != nil {
		return err
	}
	srv, err := s.listen(acc)
	if err != nil {
		return fmt.Errorf("statsd: listening on %s %s: %w", s.Protocol, s.ServiceAddress, err)
	}
	s.srv = srv
	s.log.Info("listening", "address", srv.addr().String(), "protocol", s.Protocol)
	return nil
}

// Stop closes the socket and every connection, lets the workers parse what is queued, and
// returns once every goroutine the plugin started has ended. What they aggregated is
// reported by the next Gather.
func (s *Statsd) Stop() {
	s.runMu.Lock()
	srv := s.srv
	s.srv = nil
	s.runMu.Unlock()
	if srv != nil {
		srv.close()
	}
}

// Addr is the address the server is bound to, with the port the system chose for port 0;
// nil when it is not running.
func (s *Statsd) Addr() net.Addr {
	s.runMu.Lock()
	defer s.runMu.Unlock()
	if s.srv == nil {
		return nil
	}
	return s.srv.addr()
}

// Gather reports the aggregates of the interval, then clears the caches that the delete_*
// options name and forgets aggregates older than max_ttl.
func (s *Statsd) Gather(_ context.Context, acc morse.Accumulator) error {
	if !s.inited {
		if err := s.Init(); err != nil {
			return err
		}
	}
	for _, m := range s.cache.gather(s, s.now()) {
		acc.AddMetric(m)
	}
	return nil
}

// sanitizeUpstream does what sanitize_name_method = "upstream" asks: runs of whitespace to
// "_", "/" to "-", and every character outside a-zA-Z_-0-9.;= removed.
func sanitizeUpstream(name string) string {
	var b strings.Builder
	b.Grow(len(name))
	space := false
	for _, r := range name {
		switch {
		case r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\f':
			if !space {
				b.WriteByte('_')
			}
			space = true
			continue
		case r == '/':
			b.WriteByte('-')
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9',
			r == '_', r == '-', r == '.', r == ';', r == '=':
			b.WriteRune(r)
		}
		space = false
	}
	return b.String()
}
