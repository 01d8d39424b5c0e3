// Package influxdb is the InfluxDB 1.x output, with Telegraf's outputs.influxdb options.
//
// The output sorts the server's answers into what the agent must do with a batch: keep it
// and retry, drop it, or count a partial write exactly (see classify). It fails over between
// several URLs on connection errors, creates the database on Connect, routes metrics to
// databases and retention policies by tag, and compresses with gzip on request. To read
// InfluxDB back, see package influxquery.
package influxdb

import (
	"context"
	"crypto/tls"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/influxquery"
	"github.com/morse-agent/morse/internal/freelist"
	"github.com/morse-agent/morse/internal/throttle"
	"github.com/morse-agent/morse/plugins/common/httpout"
	"github.com/morse-agent/morse/plugins/common/tlsclient"
	"github.com/morse-agent/morse/plugins/serializers/influx"
)

//go:embed sample.conf
var sampleConfig string

// Description is the one-line summary shown by `morse config`.
const Description = "Write metrics to InfluxDB 1.x over HTTP(S)"

func init() {
	morse.RegisterOutput(morse.OutputInfo{
		Name:         "influxdb",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Output { return New() },
	})
}

// Defaults, as Telegraf's.
const (
	DefaultURL      = "http://127.0.0.1:8086"
	DefaultDatabase = "telegraf"
	DefaultTimeout  = 5 * time.Second
)

// InfluxDB writes batches to InfluxDB 1.x's /write endpoint. The TOML keys are Telegraf's, so
// a Telegraf [[outputs.influxdb]] table decodes unchanged. Build one with New, set fields,
// then Connect; the agent does the same from a config file.
type InfluxDB struct {
	URLs                      []string          `toml:"urls"`
	URL                       string            `toml:"url"` // Telegraf's deprecated single URL, added to URLs
	Database                  string            `toml:"database"`
	DatabaseTag               string            `toml:"database_tag"`
	ExcludeDatabaseTag        bool              `toml:"exclude_database_tag"`
	RetentionPolicy           string            `toml:"retention_policy"`
	RetentionPolicyTag        string            `toml:"retention_policy_tag"`
	ExcludeRetentionPolicyTag bool              `toml:"exclude_retention_policy_tag"`
	WriteConsistency          string            `toml:"write_consistency"`
	Timeout                   morse.Duration    `toml:"timeout"`
	Username                  string            `toml:"username"`
	Password                  morse.Secret      `toml:"password"`
	UserAgent                 string            `toml:"user_agent"`
	HTTPHeaders               map[string]string `toml:"http_headers"`
	HTTPProxy                 string            `toml:"http_proxy"`
	ContentEncoding           string            `toml:"content_encoding"`
	SkipDatabaseCreation      bool              `toml:"skip_database_creation"`
	InfluxUintSupport         bool              `toml:"influx_uint_support"`
	InfluxOmitTimestamp       bool              `toml:"influx_omit_timestamp"`
	LocalAddress              string            `toml:"local_address"`     // bind connections to this IP (and port)
	CardinalityGuard          string            `toml:"cardinality_guard"` // alias of a processors.cardinality to tell of max-values-per-tag refusals
	tlsclient.Config

	// Accepted so that Telegraf configs keep loading: Telegraf itself ignores precision,
	// and udp_payload means nothing without a udp:// URL, which morse refuses.
	Precision  string     `toml:"precision"`
	UDPPayload morse.Size `toml:"udp_payload"`

	log *slog.Logger

	// mu guards setup: the client, the targets and the serializer are built under it and
	// only read by writes afterwards.
	mu       sync.Mutex
	client   *http.Client
	targets  []target // parsed URLs, in order
	ser      *influx.Serializer
	failover httpout.Failover // writes start at the target that answered last

	// dbMu guards the bookkeeping of database creation, which concurrent writes share.
	dbMu    sync.Mutex
	created map[string]bool
	warned  map[string]time.Time // when a failed database creation was last logged
	rps     map[string]*rpInfo   // shard group durations by database, see shardGroup
	rpWarn  *throttle.Throttle   // a database whose retention policies cannot be read

	// trip is the guard that cardinality_guard names (see SetTagLimitGuard). Writes read it
	// while a reload may replace it.
	trip atomic.Pointer[func(measurement, key string)]

	// scratch keeps the buffers of the writes in flight for the writes after them: one set
	// per write in flight (at most concurrentWrites, freelist.DefaultMax), however many
	// collections pass.
	scratch freelist.List[writeScratch]
}

// target is one configured URL.
type target struct {
	base     *url.URL // scheme, host and path prefix
	write    string   // base + /write, for errors and logs (no credentials)
	query    *influxquery.Client
	queryURL string // base + /query, for errors and logs (no credentials)
}

// New returns an output with Telegraf's defaults.
func New() *InfluxDB {
	return &InfluxDB{
		Database:        DefaultDatabase,
		Timeout:         morse.Duration(DefaultTimeout),
		ContentEncoding: "identity",
		UserAgent:       "morse",
	}
}

var (
	_ morse.Output       = (*InfluxDB)(nil)
	_ morse.Validator    = (*InfluxDB)(nil)
	_ morse.Initializer  = (*InfluxDB)(nil)
	_ morse.LoggerSetter = (*InfluxDB)(nil)

	_ morse.TagLimitReporter = (*InfluxDB)(nil)
)

// Init builds the HTTP client, so that a TLS file that cannot be read stops the agent at start
// instead of failing every connection attempt.
func (o *InfluxDB) Init() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.setup()
}

// SetLogger gives the output the engine's logger.
func (o *InfluxDB) SetLogger(l *slog.Logger) { o.log = l }

func (o *InfluxDB) logger() *slog.Logger {
	if o.log == nil {
		return slog.Default().With("output", "influxdb")
	}
	return o.log
}

// urls is URLs plus the deprecated URL, or the default when both are empty.
func (o *InfluxDB) urls() []string {
	urls := slices.Clone(o.URLs)
	if o.URL != "" && !slices.Contains(urls, o.URL) {
		urls = append(urls, o.URL)
	}
	if len(urls) == 0 {
		urls = []string{DefaultURL}
	}
	return urls
}

// Validate checks the options after decoding.
func (o *InfluxDB) Validate() error {
	var errs []error
	for i, u := range o.urls() {
		if _, err := parseURL(u); err != nil {
			errs = append(errs, morse.Errorf("urls", "entry %d: %v", i+1, err))
		}
	}
	if err := o.transportOptions(nil).Validate(); err != nil {
		errs = append(errs, err)
	}
	if o.Database == "" {
		// Also with database_tag: it is where metrics without the tag go.
		errs = append(errs, morse.Errorf("database", "must not be empty"))
	}
	switch o.WriteConsistency {
	case "", "any", "one", "quorum", "all":
	default:
		errs = append(errs, morse.Errorf("write_consistency", "%q: must be \"any\", \"one\", \"quorum\" or \"all\"", o.WriteConsistency))
	}
	if err := httpout.ValidateRequest(time.Duration(o.Timeout), o.ContentEncoding, o.HTTPHeaders); err != nil {
		errs = append(errs, err)
	}
	if err := o.Config.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func parseURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, err
	}
	switch u.Scheme {
	case "http", "https":
	case "udp", "udp4", "udp6":
		return nil, fmt.Errorf("%q: UDP is not supported, use http:// or https://", s)
	default:
		return nil, fmt.Errorf("%q: the scheme must be http or https", s)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("%q: no host", s)
	}
	if u.User != nil {
		return nil, fmt.Errorf("%q: put credentials in username and password, not in the URL, so that they are never logged", httpout.RedactURL(u))
	}
	return u, nil
}

// Connect prepares the HTTP client and, unless skip_database_creation, creates the database
// on the first URL that answers. A failure to create it is logged, not returned: the
// database may exist already, or the user may lack the right to create it but not to write.
func (o *InfluxDB) Connect(ctx context.Context) error {
	if err := o.Validate(); err != nil {
		return err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.setup(); err != nil {
		return err
	}
	if !o.SkipDatabaseCreation && o.Database != "" {
		o.ensureDatabase(ctx, o.Database)
	}
	return nil
}

// transportOptions are the options of the HTTP transport to every URL.
func (o *InfluxDB) transportOptions(tlsCfg *tls.Config) httpout.Options {
	return httpout.Options{TLS: tlsCfg, Proxy: o.HTTPProxy, LocalAddress: o.LocalAddress}
}

// setup builds what Connect needs; it is also what a Write before Connect gets.
func (o *InfluxDB) setup() error {
	tlsCfg, err := o.Config.TLSConfig()
	if err != nil {
		return err
	}
	for _, s := range o.urls() {
		if u, _ := parseURL(s); o.Config.Disabled() && u != nil && u.Scheme == "https" {
			return morse.Errorf("tls_enable", "is false, but %s asks for https", u.Redacted())
		}
	}
	tr, err := httpout.NewTransport(o.transportOptions(tlsCfg))
	if err != nil {
		return err
	}
	if o.client != nil {
		o.client.CloseIdleConnections()
	}
	// Timeouts are set per attempt with a context, so that failover gets a fresh one.
	o.client = &http.Client{Transport: tr}
	o.targets = o.targets[:0]
	for _, s := range o.urls() {
		u, _ := parseURL(s) // Validate has checked it
		q, err := influxquery.NewClient(influxquery.ClientOptions{
			URL: s, Username: o.Username, Password: string(o.Password), Timeout: timeoutOf(o.Timeout),
			UserAgent: o.UserAgent, Headers: o.HTTPHeaders, HTTPClient: o.client,
		})
		if err != nil {
			return err
		}
		o.targets = append(o.targets, target{base: u, write: httpout.RedactURL(u.JoinPath("write")), query: q,
			queryURL: httpout.RedactURL(u.JoinPath("query"))})
	}
	o.failover.Reset()
	o.ser = influx.New(influx.Options{UintSupport: o.InfluxUintSupport})
	o.dbMu.Lock()
	o.created = map[string]bool{}
	o.warned = map[string]time.Time{}
	o.rps = map[string]*rpInfo{}
	o.rpWarn = throttle.New(time.Minute)
	o.dbMu.Unlock()
	return nil
}

// Close releases idle connections.
func (o *InfluxDB) Close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.client != nil {
		o.client.CloseIdleConnections()
	}
	return nil
}

// timeoutOf converts a config duration.
func timeoutOf(d morse.Duration) time.Duration { return time.Duration(d) }
