// Package http is the outputs.http plugin: it sends each batch, in any data_format of
// plugins/serializers/dataformat, as the body of one HTTP request (POST, PUT or PATCH) to a
// URL, with Telegraf 1.39.3's options. With data_format = "prometheusremotewrite" it is a
// Prometheus remote-write client for Prometheus, VictoriaMetrics, Mimir, Cortex and Thanos,
// and sets the protocol's headers itself.
//
// Answers are classified by the rule of morse's outputs (plugins/common/httpout): 2xx
// stored; 413 written again in halves; 429, 5xx, 401, 403, 404 and 408 retried, after the
// server's Retry-After; any other 4xx refused for good and counted. A remote-write receiver
// refuses a whole request for one out-of-order, duplicate or out-of-bounds sample (400 from
// Prometheus and Mimir, 409 from Thanos), naming one sample in its message: the request is
// then returned as a *morse.RejectedError, so that the agent's batch writer writes the
// batch in halves until it has found the refused metrics, and the rest are stored (see
// classify.go).
package http

import (
	"context"
	_ "embed"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/freelist"
	"github.com/morse-agent/morse/plugins/common/httpout"
	"github.com/morse-agent/morse/plugins/serializers"
	"github.com/morse-agent/morse/plugins/serializers/dataformat"
)

//go:embed sample.conf
var sampleConfig string

// Description is the one-line summary shown by `morse config`.
const Description = "Send metrics over HTTP in any data format, and Prometheus remote write"

func init() {
	morse.RegisterOutput(morse.OutputInfo{
		Name:         "http",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Output { return New() },
	})
}

// Telegraf's defaults.
const (
	DefaultURL     = "http://127.0.0.1:8080/telegraf"
	DefaultTimeout = 5 * time.Second
	// defaultContentType is Telegraf's Content-Type for every format but remote write.
	defaultContentType = "text/plain; charset=utf-8"
	// concurrentWrites lets a second batch travel while the first waits for the server;
	// remote write sends one at a time (see MaxConcurrentWrites).
	concurrentWrites = 2
	maxKeptScratch   = 8
)

// HTTP sends batches to a URL. The TOML keys are Telegraf's outputs.http keys, with the HTTP
// client's (httpout.ClientConfig) and data_format's (dataformat.Config) in the same table;
// sample.conf says what each one does.
type HTTP struct {
	URL                     string                  `toml:"url"`
	Method                  string                  `toml:"method"`
	Username                morse.Secret            `toml:"username"`
	Password                morse.Secret            `toml:"password"`
	Headers                 map[string]morse.Secret `toml:"headers"`
	ContentEncoding         string                  `toml:"content_encoding"`
	UseBatchFormat          bool                    `toml:"use_batch_format"`
	NonRetryableStatusCodes []int                   `toml:"non_retryable_statuscodes"`
	LocalAddress            string                  `toml:"local_address"`

	OAuth2
	Unsupported

	httpout.ClientConfig
	dataformat.Config

	log *slog.Logger

	mu     sync.Mutex
	client *http.Client
	ser    serializers.Serializer
	header http.Header // every request's headers but the credentials
	host   string      // a Host of headers
	target string      // url without credentials, for errors and logs

	scratch freelist.List[writeScratch]
}

// OAuth2 are Telegraf's OAuth2 client-credentials keys: with client_id, client_secret and
// token_url set, each request carries a bearer token fetched from token_url and renewed when
// it expires.
type OAuth2 struct {
	ClientID     string       `toml:"client_id"`
	ClientSecret morse.Secret `toml:"client_secret"`
	TokenURL     string       `toml:"token_url"`
	Audience     string       `toml:"audience"`
	Scopes       []string     `toml:"scopes"`
}

func (o OAuth2) enabled() bool { return o.ClientID != "" && o.ClientSecret != "" && o.TokenURL != "" }

// Unsupported are keys of Telegraf's outputs.http that morse refuses with a message, rather
// than as unknown keys: AWS Signature v4 (aws_service and the credential keys), Google's ID
// tokens (google_application_credentials), and cookie authentication.
type Unsupported struct {
	AwsService           string                  `toml:"aws_service"`
	Region               string                  `toml:"region"`
	AccessKey            string                  `toml:"access_key"`
	SecretKey            string                  `toml:"secret_key"`
	Token                string                  `toml:"token"`
	RoleARN              string                  `toml:"role_arn"`
	WebIdentityTokenFile string                  `toml:"web_identity_token_file"`
	RoleSessionName      string                  `toml:"role_session_name"`
	Profile              string                  `toml:"profile"`
	SharedCredentialFile string                  `toml:"shared_credential_file"`
	EndpointURL          string                  `toml:"endpoint_url"`
	GoogleCredentials    string                  `toml:"google_application_credentials"`
	CookieAuthURL        string                  `toml:"cookie_auth_url"`
	CookieAuthMethod     string                  `toml:"cookie_auth_method"`
	CookieAuthUsername   string                  `toml:"cookie_auth_username"`
	CookieAuthPassword   string                  `toml:"cookie_auth_password"`
	CookieAuthHeaders    map[string]morse.Secret `toml:"cookie_auth_headers"`
	CookieAuthBody       string                  `toml:"cookie_auth_body"`
	CookieAuthRenewal    morse.Duration          `toml:"cookie_auth_renewal"`
}

// validate names each key that is set.
func (u *Unsupported) validate() error {
	var errs []error
	for key, set := range map[string]bool{
		"aws_service": u.AwsService != "", "region": u.Region != "", "access_key": u.AccessKey != "",
		"secret_key": u.SecretKey != "", "token": u.Token != "", "role_arn": u.RoleARN != "",
		"web_identity_token_file": u.WebIdentityTokenFile != "", "role_session_name": u.RoleSessionName != "",
		"profile": u.Profile != "", "shared_credential_file": u.SharedCredentialFile != "", "endpoint_url": u.EndpointURL != "",
	} {
		if set {
			errs = append(errs, morse.Errorf(key, "AWS Signature v4 signing is not supported by morse's outputs.http; sign through a proxy (aws-sigv4-proxy) or use basic auth, OAuth2 or headers"))
		}
	}
	if u.GoogleCredentials != "" {
		errs = append(errs, morse.Errorf("google_application_credentials", "Google ID tokens are not supported by morse's outputs.http; use OAuth2 client credentials or a token in headers"))
	}
	if u.CookieAuthURL != "" || u.CookieAuthMethod != "" || u.CookieAuthUsername != "" || u.CookieAuthPassword != "" ||
		len(u.CookieAuthHeaders) > 0 || u.CookieAuthBody != "" || u.CookieAuthRenewal != 0 {
		errs = append(errs, morse.Errorf("cookie_auth_url", "cookie authentication is not supported by morse's outputs.http; use basic auth, OAuth2 or headers"))
	}
	return errors.Join(errs...)
}

// New returns an output with Telegraf's defaults.
func New() *HTTP {
	o := &HTTP{
		URL:            DefaultURL,
		Method:         http.MethodPost,
		UseBatchFormat: true,
		Config:         dataformat.Config{DataFormat: "influx"},
		scratch:        freelist.List[writeScratch]{Max: maxKeptScratch},
	}
	o.Timeout = morse.Duration(DefaultTimeout)
	return o
}

var (
	_ morse.Output           = (*HTTP)(nil)
	_ morse.Validator        = (*HTTP)(nil)
	_ morse.Initializer      = (*HTTP)(nil)
	_ morse.LoggerSetter     = (*HTTP)(nil)
	_ morse.ConcurrentWriter = (*HTTP)(nil)
	_ morse.WriteTimeouter   = (*HTTP)(nil)
)

// SetLogger gives the output the engine's logger.
func (o *HTTP) SetLogger(l *slog.Logger) { o.log = l }

func (o *HTTP) logger() *slog.Logger {
	if o.log == nil {
		return slog.Default().With("output", "http")
	}
	return o.log
}

// remoteWrite reports whether the body is a Prometheus remote-write request.
func (o *HTTP) remoteWrite() bool { return o.FormatName() == "prometheusremotewrite" }

// Validate checks every option and reports every problem at once.
func (o *HTTP) Validate() error {
	var errs []error
	if u, err := url.Parse(o.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, morse.Errorf("url", "%q: want http(s)://host[:port]/path", o.URL))
	}
	switch strings.ToUpper(o.Method) {
	case "", http.MethodPost, http.MethodPut, http.MethodPatch:
	default:
		errs = append(errs, morse.Errorf("method", "%q: must be POST, PUT or PATCH", o.Method))
	}
	switch o.ContentEncoding {
	case "", "identity", "gzip":
	default:
		errs = append(errs, morse.Errorf("content_encoding", "%q: must be \"gzip\" or \"identity\"", o.ContentEncoding))
	}
	for k := range o.Headers {
		if k == "" || strings.ContainsAny(k, " :\r\n") {
			errs = append(errs, morse.Errorf("headers", "%q is not a valid header name", k))
		}
	}
	if o.remoteWrite() && o.ContentEncoding == "gzip" {
		errs = append(errs, morse.Errorf("content_encoding", "must not be gzip with data_format \"prometheusremotewrite\": the request is snappy-compressed, and receivers read no other encoding"))
	}
	for _, code := range o.NonRetryableStatusCodes {
		if code < 100 || code > 599 || code/100 == 2 {
			errs = append(errs, morse.Errorf("non_retryable_statuscodes", "%d is not an HTTP status of a failed request", code))
		}
	}
	if _, err := httpout.ParseLocalAddress(o.LocalAddress); err != nil {
		errs = append(errs, morse.Errorf("local_address", "%v", err))
	}
	if o.ClientID != "" || o.ClientSecret != "" || o.TokenURL != "" || o.Audience != "" || len(o.Scopes) > 0 {
		if !o.OAuth2.enabled() {
			errs = append(errs, morse.Errorf("client_id", "OAuth2 needs client_id, client_secret and token_url together"))
		} else if u, err := url.Parse(o.TokenURL); err != nil || u.Host == "" {
			errs = append(errs, morse.Errorf("token_url", "%q is not a URL", o.TokenURL))
		}
	}
	errs = append(errs, o.Unsupported.validate(), o.ClientConfig.Validate(), o.Config.Validate())
	return errors.Join(errs...)
}

// Init checks the options and builds the client and the serializer, so that a TLS file
// that cannot be read stops the agent at start.
func (o *HTTP) Init() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.setup()
}

// Connect builds the client unless Init has. It does not contact the server: a server that
// is down at start is retried by the writes, like any other outage.
func (o *HTTP) Connect(context.Context) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.client != nil {
		return nil
	}
	return o.setup()
}

func (o *HTTP) setup() error {
	if err := o.Validate(); err != nil {
		return err
	}
	ser, err := o.Config.New()
	if err != nil {
		return err
	}
	client, err := o.newClient()
	if err != nil {
		return err
	}
	u, _ := url.Parse(o.URL) // Validate has checked it
	o.target = httpout.RedactURL(u)
	o.header, o.host = o.headers()
	o.ser, o.client = ser, client
	return nil
}

// headers are what every request carries but its credentials: Telegraf's User-Agent and
// Content-Type, the body's encoding, the remote-write headers for that format, and then
// headers, which may override any of them. A Host among headers is returned apart.
func (o *HTTP) headers() (http.Header, string) {
	h := http.Header{}
	h.Set("User-Agent", "morse")
	h.Set("Content-Type", defaultContentType)
	if o.ContentEncoding == "gzip" {
		h.Set("Content-Encoding", "gzip")
	}
	if o.remoteWrite() {
		h.Set("Content-Type", "application/x-protobuf")
		h.Set("Content-Encoding", "snappy")
		h.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	}
	host := ""
	for k, v := range o.Headers {
		if strings.EqualFold(k, "Host") {
			host = string(v)
			continue
		}
		h.Set(k, string(v))
	}
	return h, host
}

// Close releases idle connections.
func (o *HTTP) Close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.client != nil {
		o.client.CloseIdleConnections()
	}
	return nil
}

// MaxConcurrentWrites lets two batches be in flight, but one for remote write: Prometheus
// refuses a sample older than one it has of the series, so batches must land in order.
func (o *HTTP) MaxConcurrentWrites() int {
	if o.remoteWrite() {
		return 1
	}
	return concurrentWrites
}

// WriteTimeout bounds a write of several requests (halves of a 413, one per metric without
// use_batch_format), each bounded by timeout: see httpout.WriteTimeout.
func (o *HTTP) WriteTimeout() time.Duration { return httpout.WriteTimeout(time.Duration(o.Timeout)) }

func (o *HTTP) method() string {
	if o.Method == "" {
		return http.MethodPost
	}
	return strings.ToUpper(o.Method)
}
