// Package prometheusclient is the prometheus_client output: it keeps the current value of
// every series written to it and serves them on an HTTP endpoint in Prometheus' text
// exposition format, for a Prometheus server (or vmagent, or another scraper) to scrape,
// with Telegraf 1.39.3's options.
//
// For the engine it is an output like any other: batches are written into a bounded store
// (at most max_series series; a metric that would add one more is dropped and counted as
// series_limit), and a scrape serves what the store holds then, removing first the series
// not written for expiration_interval.
//
// Names are Telegraf's. metric_version 1 (the default): a field is the family
// <measurement>_<field>, but for the fields "value", "counter" and "gauge", which are the
// family <measurement> (untyped, counter, gauge); a metric with the fields count and sum
// and fields named after bounds is a histogram (when one bound is +Inf) or summary named
// after the measurement. metric_version 2: a field is the family <measurement>_<field>, or
// <field> for the measurement "prometheus"; fields <name>_bucket of metrics tagged le make
// the histogram <name>, fields of metrics tagged quantile the summary <name>, and their
// <name>_sum and <name>_count join them. These are the shapes Telegraf's and morse's
// prometheus input and parser write. A morse metric carries no Prometheus type, so other
// families are untyped, but for version 2 names ending in _total, which are counters, and
// what metric_types says. Tags are labels, and so are string fields with string_as_label.
package prometheusclient

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/common/glob"
	"github.com/morse-agent/morse/plugins/common/tlsserver"
	"github.com/morse-agent/morse/selfstat"
)

//go:embed sample.conf
var sampleConfig string

// Description is the one-line summary shown by `morse config`.
const Description = "Serve the metrics written to it on an HTTP endpoint for Prometheus to scrape"

// ReasonSeriesLimit counts the metrics dropped because the store held max_series series
// and they would have added another.
const ReasonSeriesLimit = "series_limit"

// DefaultMaxSeries is the default of max_series.
const DefaultMaxSeries = 1_000_000

func init() {
	morse.RegisterOutput(morse.OutputInfo{
		Name:         "prometheus_client",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Output { return New() },
	})
}

// MetricTypes is the [metric_types] table: globs of family names that are counters or
// gauges whatever their convention says.
type MetricTypes struct {
	Counter []string `toml:"counter"`
	Gauge   []string `toml:"gauge"`
}

// Client is the prometheus_client output. Its TOML keys are Telegraf's.
type Client struct {
	// Listen is the address to listen on, ":9273"; "tcp://" and "http://" prefixes are
	// accepted, as in Telegraf. Telegraf's "vsock://" is refused.
	Listen string `toml:"listen"`
	// ReadTimeout and WriteTimeout bound the reading of a request and the writing of its
	// answer; below one second they are 10 s, as in Telegraf.
	ReadTimeout  morse.Duration `toml:"read_timeout"`
	WriteTimeout morse.Duration `toml:"write_timeout"`
	// MetricVersion is 1 (the default) or 2: how fields are named and typed (package doc).
	MetricVersion int `toml:"metric_version"`
	// BasicUsername and BasicPassword, when set, are required of every request.
	BasicUsername string       `toml:"basic_username"`
	BasicPassword morse.Secret `toml:"basic_password"`
	// IPRange, when set, lists the networks (CIDR) allowed to scrape; others get 403.
	IPRange []string `toml:"ip_range"`
	// Path is where the metrics are served, "/metrics".
	Path string `toml:"path"`
	// ExpirationInterval removes a series not written for this long; 0 keeps every series.
	ExpirationInterval morse.Duration `toml:"expiration_interval"`
	// CollectorsExclude leaves out Telegraf's default collectors: "gocollector" (go_*, the
	// Go runtime) and "process" (process_*, this process's CPU, memory and files).
	CollectorsExclude []string `toml:"collectors_exclude"`
	// StringAsLabel makes string fields labels (true by default); otherwise they are left out.
	StringAsLabel bool `toml:"string_as_label"`
	// NameSanitization is "legacy" (the default) or "utf8"; see names.go.
	NameSanitization string `toml:"name_sanitization"`
	// ExportTimestamp writes each sample's time, that of the metric last written to it.
	ExportTimestamp bool `toml:"export_timestamp"`
	// HTTPHeaders are set on every answer.
	HTTPHeaders map[string]morse.Secret `toml:"http_headers"`
	// MetricTypes types families by name; see MetricTypes.
	MetricTypes MetricTypes `toml:"metric_types"`
	tlsserver.Config

	// MaxSeries bounds the store (morse's own option; Telegraf's store has no bound).
	MaxSeries int `toml:"max_series"`
	// InternalMetrics serves morse's own internal_* metrics, those inputs.internal reports,
	// beside what is written (morse's own option).
	InternalMetrics bool `toml:"internal_metrics"`

	// Now is the clock, for expiration; time.Now when nil. Tests set it.
	Now func() time.Time `toml:"-"`

	log      *slog.Logger
	selfReg  *selfstat.Registry
	st       *store
	conv     *converter
	extraMu  sync.Mutex // the extra collectors' converter and store, built per scrape
	extra    *converter
	lastTidy int64

	connMu sync.Mutex // orders Connect and Close
	mu     sync.Mutex // guards the server's fields
	srv    *http.Server
	addr   net.Addr
	served chan struct{} // closed when Serve returns
	ranges []*net.IPNet
}

var _ morse.StartConnector = (*Client)(nil)

// New returns the output with Telegraf's defaults.
func New() *Client {
	return &Client{
		Listen: ":9273", Path: "/metrics", MetricVersion: 1, StringAsLabel: true,
		ExpirationInterval: morse.Duration(60 * time.Second), NameSanitization: "legacy",
		ReadTimeout: morse.Duration(10 * time.Second), WriteTimeout: morse.Duration(10 * time.Second),
		MaxSeries: DefaultMaxSeries,
	}
}

// SetLogger gives the output the engine's logger.
func (c *Client) SetLogger(l *slog.Logger) { c.log = l }

// SetSelfStats gives the output the registry of morse's own counters, for internal_metrics.
func (c *Client) SetSelfStats(r *selfstat.Registry) {
	c.extraMu.Lock()
	c.selfReg = r
	c.extraMu.Unlock()
}

// Validate reports every problem of the options.
func (c *Client) Validate() error {
	var errs []error
	if _, err := c.listenAddr(); err != nil {
		errs = append(errs, morse.Errorf("listen", "%v", err))
	}
	if c.MetricVersion < 0 || c.MetricVersion > 2 {
		errs = append(errs, morse.Errorf("metric_version", "must be 1 or 2, got %d", c.MetricVersion))
	}
	if c.Path != "" && !strings.HasPrefix(c.Path, "/") {
		errs = append(errs, morse.Errorf("path", "must start with /, got %q", c.Path))
	}
	if c.ExpirationInterval < 0 {
		errs = append(errs, morse.Errorf("expiration_interval", "must not be negative"))
	}
	for _, r := range c.IPRange {
		if _, _, err := net.ParseCIDR(r); err != nil {
			errs = append(errs, morse.Errorf("ip_range", "%q: %v", r, err))
		}
	}
	for _, col := range c.CollectorsExclude {
		if col != "gocollector" && col != "process" {
			errs = append(errs, morse.Errorf("collectors_exclude", "unrecognized collector %q: \"gocollector\" or \"process\"", col))
		}
	}
	switch c.NameSanitization {
	case "", "legacy", "utf8":
	default:
		errs = append(errs, morse.Errorf("name_sanitization", "invalid %q: must be \"legacy\" or \"utf8\"", c.NameSanitization))
	}
	if _, err := glob.Compile("metric_types.counter", c.MetricTypes.Counter); err != nil {
		errs = append(errs, err)
	}
	if _, err := glob.Compile("metric_types.gauge", c.MetricTypes.Gauge); err != nil {
		errs = append(errs, err)
	}
	if c.MaxSeries < 1 {
		errs = append(errs, morse.Errorf("max_series", "must be at least 1, got %d", c.MaxSeries))
	}
	if err := c.ValidateTLS(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// listenAddr is the host:port of listen.
func (c *Client) listenAddr() (string, error) {
	u, err := url.ParseRequestURI(c.Listen)
	if err != nil || u.Host == "" {
		if _, _, err := net.SplitHostPort(c.Listen); err != nil {
			return "", fmt.Errorf("%q is not host:port: %w", c.Listen, err)
		}
		return c.Listen, nil
	}
	switch strings.ToLower(u.Scheme) {
	case "tcp", "http", "https":
		return u.Host, nil
	case "vsock":
		return "", errors.New("vsock listeners are not supported; listen on a TCP address")
	}
	return "", fmt.Errorf("unsupported scheme %q in %q", u.Scheme, c.Listen)
}

// Init builds the store; its content outlives Close, so that a reload that keeps the
// output keeps serving what it had.
func (c *Client) Init() error {
	if err := c.Validate(); err != nil {
		return err
	}
	counters, _ := glob.Compile("metric_types.counter", c.MetricTypes.Counter)
	gauges, _ := glob.Compile("metric_types.gauge", c.MetricTypes.Gauge)
	version := max(c.MetricVersion, 1)
	c.st = newStore(c.MaxSeries)
	c.conv = newConverter(version, c.StringAsLabel, counters, gauges, c.NameSanitization == "utf8")
	for _, r := range c.IPRange {
		_, n, _ := net.ParseCIDR(r)
		c.ranges = append(c.ranges, n)
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	return nil
}

func (c *Client) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// Write puts the batch into the store. Metrics of which no field makes a sample are
// dropped as serialize, those that would pass max_series as series_limit.
func (c *Client) Write(_ context.Context, batch []morse.Metric) error {
	if c.st == nil {
		if err := c.Init(); err != nil {
			return err
		}
	}
	now := c.now().UnixNano()
	c.st.mu.Lock()
	failed := c.conv.write(c.st, batch, now)
	// Expire here too, at most once a second, so that a store nobody scrapes stays bounded
	// by what is current, as Telegraf's does.
	if exp := int64(c.ExpirationInterval); exp > 0 && now-c.lastTidy > int64(time.Second) {
		c.st.expire(now - exp)
		c.lastTidy = now
	}
	c.st.mu.Unlock()
	return dropped(failed)
}

// dropped is the error that reports the metrics not stored, by reason.
func dropped(failed map[int]outcome) error {
	if len(failed) == 0 {
		return nil
	}
	var serialize, limit []int
	for i, o := range failed {
		if o == full {
			limit = append(limit, i)
		} else {
			serialize = append(serialize, i)
		}
	}
	slices.Sort(serialize)
	slices.Sort(limit)
	var errs []*morse.PartialWriteError
	if len(serialize) > 0 {
		errs = append(errs, &morse.PartialWriteError{Dropped: len(serialize), Reason: morse.ReasonSerialize,
			Err: errors.New("no field makes a Prometheus sample"), Indices: serialize})
	}
	if len(limit) > 0 {
		errs = append(errs, &morse.PartialWriteError{Dropped: len(limit), Reason: ReasonSeriesLimit,
			Err: errors.New("the store holds max_series series"), Indices: limit})
	}
	first := errs[0]
	first.More = errs[1:]
	return first
}
