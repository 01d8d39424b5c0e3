// Package iotdb is the outputs.iotdb plugin: it writes metrics to Apache IoTDB through its
// REST API v2, one insertTablet request per device, columnar (one array of values per
// measurement), with Telegraf's option names where Telegraf's output has them. Telegraf's
// output speaks Thrift through apache/iotdb-client-go; morse speaks REST (see
// docs/telegraf-compat.md).
//
// A device is a metric's name, under database unless it starts with "root.", and with
// convert_tags_to = "device_id" one level per tag value. IoTDB answers with a status code
// in JSON, and classify (classify.go) sorts each answer by that code rather than by the HTTP
// status: a type conflict (507) stores the tablet's other measurements, and exactly the
// metrics that carried a refused measurement are counted as dropped.
package iotdb

import (
	"context"
	_ "embed"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/freelist"
	"github.com/morse-agent/morse/plugins/common/httpout"
)

//go:embed sample.conf
var sampleConfig string

// Description is the one-line summary shown by `morse config`.
const Description = "Write metrics to Apache IoTDB over its REST API (insertTablet, columnar)"

func init() {
	morse.RegisterOutput(morse.OutputInfo{
		Name:         "iotdb",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Output { return New() },
	})
}

// Defaults: Telegraf's, and IoTDB's REST port for url.
const (
	DefaultURL      = "http://127.0.0.1:18080"
	DefaultTimeout  = 5 * time.Second
	DefaultDatabase = "root.telegraf"
	restPort        = "18080"
	// defaultConcurrentWrites lets a second batch travel while the first waits for IoTDB.
	defaultConcurrentWrites = 2
	maxKeptScratch          = 8
)

// IoTDB writes batches to IoTDB's REST API. The TOML keys are Telegraf's outputs.iotdb keys
// (host, port, user, password, timeout, uint64_conversion, timestamp_precision,
// convert_tags_to, sanitize_tag), plus url and database, and the HTTP client keys of
// httpout.ClientConfig; sample.conf says what each one does.
type IoTDB struct {
	URL      string       `toml:"url"`
	Host     string       `toml:"host"`
	Port     string       `toml:"port"`
	User     morse.Secret `toml:"user"`
	Password morse.Secret `toml:"password"`
	Database string       `toml:"database"`

	ConvertUint64To string `toml:"uint64_conversion"`
	TimestampUnit   string `toml:"timestamp_precision"`
	TreatTagsAs     string `toml:"convert_tags_to"`
	SanitizeTag     string `toml:"sanitize_tag"`

	httpout.ClientConfig

	log *slog.Logger

	mu       sync.Mutex
	client   *http.Client
	endpoint string // .../rest/v2/insertTablet
	set      settings
	warned   bool

	scratch freelist.List[writeScratch]
}

// New returns an output with Telegraf's defaults.
func New() *IoTDB {
	o := &IoTDB{
		User:            "root",
		Password:        "root",
		Database:        DefaultDatabase,
		ConvertUint64To: "int64_clip",
		TimestampUnit:   "nanosecond",
		TreatTagsAs:     "device_id",
		scratch:         freelist.List[writeScratch]{Max: maxKeptScratch},
	}
	o.Timeout = morse.Duration(DefaultTimeout)
	return o
}

var (
	_ morse.Output           = (*IoTDB)(nil)
	_ morse.Validator        = (*IoTDB)(nil)
	_ morse.Initializer      = (*IoTDB)(nil)
	_ morse.LoggerSetter     = (*IoTDB)(nil)
	_ morse.ConcurrentWriter = (*IoTDB)(nil)
	_ morse.WriteTimeouter   = (*IoTDB)(nil)
	_ morse.LineWriter       = (*IoTDB)(nil)
)

// SetLogger gives the output the engine's logger.
func (o *IoTDB) SetLogger(l *slog.Logger) { o.log = l }

func (o *IoTDB) logger() *slog.Logger {
	if o.log == nil {
		return slog.Default().With("output", "iotdb")
	}
	return o.log
}

var precisions = map[string]time.Duration{
	"second": time.Second, "millisecond": time.Millisecond, "microsecond": time.Microsecond, "nanosecond": time.Nanosecond,
}

// baseURL is url, or http://host:18080 from Telegraf's host.
func (o *IoTDB) baseURL() string {
	switch {
	case o.URL != "":
		return o.URL
	case o.Host != "":
		return "http://" + o.Host + ":" + restPort
	}
	return DefaultURL
}

// Validate checks every option and reports every problem at once.
func (o *IoTDB) Validate() error {
	var errs []error
	if u, err := url.Parse(o.baseURL()); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, morse.Errorf("url", "%q: want http(s)://host:port", o.baseURL()))
	} else if u.User != nil {
		errs = append(errs, morse.Errorf("url", "put credentials in user and password, not in the URL, so that they are never logged"))
	}
	if !slices.Contains([]string{"int64", "int64_clip", "text"}, o.ConvertUint64To) {
		errs = append(errs, morse.Errorf("uint64_conversion", "unknown method %q: want int64, int64_clip or text", o.ConvertUint64To))
	}
	if _, ok := precisions[o.TimestampUnit]; !ok {
		errs = append(errs, morse.Errorf("timestamp_precision", "unknown unit %q: want second, millisecond, microsecond or nanosecond", o.TimestampUnit))
	}
	if o.TreatTagsAs != "fields" && o.TreatTagsAs != "device_id" {
		errs = append(errs, morse.Errorf("convert_tags_to", "unknown method %q: want fields or device_id", o.TreatTagsAs))
	}
	if !slices.Contains([]string{"", "0.13", "1.0", "1.1", "1.2", "1.3"}, o.SanitizeTag) {
		errs = append(errs, morse.Errorf("sanitize_tag", "unknown version %q: want 0.13, 1.0, 1.1, 1.2 or 1.3", o.SanitizeTag))
	}
	if o.Database != "" && o.Database != "root" && !strings.HasPrefix(o.Database, "root.") {
		errs = append(errs, morse.Errorf("database", "%q: an IoTDB path starts with root.", o.Database))
	}
	errs = append(errs, o.ClientConfig.Validate())
	return errors.Join(errs...)
}

// Init checks the options and builds the client, so that a TLS file that cannot be read
// stops the agent at start.
func (o *IoTDB) Init() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.setup()
}

// Connect builds the client unless Init has. It does not contact IoTDB: a server that is
// down at start is retried by the writes, like any other outage.
func (o *IoTDB) Connect(context.Context) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.client != nil {
		return nil
	}
	return o.setup()
}

func (o *IoTDB) setup() error {
	if err := o.Validate(); err != nil {
		return err
	}
	if !o.warned && o.Port != "" {
		o.logger().Warn("port is Telegraf's Thrift port and has no effect: morse writes to IoTDB's REST service at url", "url", o.baseURL())
	}
	o.warned = true
	client, err := o.ClientConfig.Client()
	if err != nil {
		return err
	}
	o.client = client
	o.endpoint = strings.TrimSuffix(o.baseURL(), "/") + "/rest/v2/insertTablet"
	sanitize := o.SanitizeTag
	if sanitize != "" && sanitize != "0.13" {
		sanitize = "1.x"
	}
	o.set = settings{database: o.Database, precision: precisions[o.TimestampUnit],
		tagsAsFields: o.TreatTagsAs == "fields", uint64To: o.ConvertUint64To, sanitize: sanitize}
	if o.set.database == "" {
		o.set.database = DefaultDatabase
	}
	return nil
}

// Close releases idle connections.
func (o *IoTDB) Close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.client != nil {
		o.client.CloseIdleConnections()
	}
	return nil
}

// MaxConcurrentWrites tells the agent that Write is safe for concurrent use: each write has
// buffers of its own.
func (o *IoTDB) MaxConcurrentWrites() int { return defaultConcurrentWrites }

// WriteTimeout bounds a write of several requests (one per device), each bounded by
// timeout: see httpout.WriteTimeout.
func (o *IoTDB) WriteTimeout() time.Duration { return httpout.WriteTimeout(time.Duration(o.Timeout)) }
