// Package prometheus is the prometheus input: it scrapes Prometheus exporters' endpoints
// (urls), in the text exposition format or delimited protobuf, gzipped or not, and turns
// their families into metrics as Telegraf 1.39.3's input does (metric_version 1, the
// default, or 2; see plugins/parsers/prometheus.Mapping, which the text format's parser
// shares). Kubernetes, Consul and HTTP service discovery are refused.
package prometheus

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/common/tlsclient"
	"github.com/morse-agent/morse/plugins/parsers"
	promparser "github.com/morse-agent/morse/plugins/parsers/prometheus"
	"github.com/morse-agent/morse/selfstat"
)

//go:embed sample.conf
var sampleConfig string

// Description is the one-line summary shown by `morse config`.
const Description = "Read metrics from one or many prometheus clients"

// acceptHeader is Telegraf's: delimited protobuf preferred, the text format accepted.
const acceptHeader = `application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7,text/plain;version=0.0.4;q=0.3`

func init() {
	morse.RegisterInput(morse.InputInfo{
		Name:         "prometheus",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Input { return New() },
	})
}

// Prometheus is the prometheus input. Its TOML keys are Telegraf's.
type Prometheus struct {
	// URLs are the endpoints scraped at every gather, at the same time.
	URLs []string `toml:"urls"`
	// MetricVersion is 1 (the default) or 2, the shape of the metrics.
	MetricVersion int `toml:"metric_version"`
	// URLTag is the tag that holds the scraped URL (without its user and password); empty
	// leaves it out.
	URLTag string `toml:"url_tag"`
	// IgnoreTimestamp gives every metric the gather's time, not the exposition's.
	IgnoreTimestamp bool `toml:"ignore_timestamp"`
	// ContentTypeOverride reads every answer as "text" or "protobuf-delimiter" whatever
	// its Content-Type says.
	ContentTypeOverride string `toml:"content_type_override"`
	// ContentLengthLimit skips an answer longer than this (logged); 0 means no limit.
	ContentLengthLimit morse.Size `toml:"content_length_limit"`
	// BearerToken is a file whose content is sent as a bearer token, read at every scrape
	// so that a rotated token is picked up; BearerTokenString is the token itself.
	BearerToken       string       `toml:"bearer_token"`
	BearerTokenString morse.Secret `toml:"bearer_token_string"`
	// Username and Password are sent as basic auth, unless a bearer token is set.
	Username morse.Secret `toml:"username"`
	Password morse.Secret `toml:"password"`
	// HTTPHeaders are sent with every request; "Host" sets the request's host.
	HTTPHeaders map[string]string `toml:"http_headers"`
	// Timeout bounds a whole scrape (5 s); ResponseTimeout, when set, the wait for the
	// answer's headers, as in Telegraf since 1.30.2.
	Timeout         morse.Duration `toml:"timeout"`
	ResponseTimeout morse.Duration `toml:"response_timeout"`
	// UseSystemProxy takes the proxy from the environment; HTTPProxyURL names one.
	UseSystemProxy bool   `toml:"use_system_proxy"`
	HTTPProxyURL   string `toml:"http_proxy_url"`
	// EnableRequestMetrics adds a prometheus_request metric per scrape: response_time
	// (seconds) and content_length.
	EnableRequestMetrics bool `toml:"enable_request_metrics"`

	Kubernetes
	Consul               Consul               `toml:"consul"`
	HTTPServiceDiscovery HTTPServiceDiscovery `toml:"http_service_discovery"`
	tlsclient.Config

	// Now is the clock of samples without a timestamp; time.Now when nil.
	Now func() time.Time `toml:"-"`

	log     *slog.Logger
	client  *http.Client
	mapping promparser.Mapping
	text    *promparser.Parser
	reg     *selfstat.Registry
	statsMu sync.Mutex
	stats   map[string]*urlStats
}

// New returns the input with Telegraf's defaults.
func New() *Prometheus {
	return &Prometheus{URLTag: "url", MetricVersion: 1, Timeout: morse.Duration(5 * time.Second)}
}

// SetLogger gives the input the engine's logger.
func (p *Prometheus) SetLogger(l *slog.Logger) { p.log = l }

// SetSelfStats gives the input the registry where it counts its scrapes per URL, as
// Telegraf's internal_prometheus: gathers_total by status, connection_status.
func (p *Prometheus) SetSelfStats(r *selfstat.Registry) {
	p.statsMu.Lock()
	defer p.statsMu.Unlock()
	p.reg = r
}

// Init builds the HTTP client and the parser.
func (p *Prometheus) Init() error {
	if err := p.Validate(); err != nil {
		return err
	}
	if p.log == nil {
		p.log = slog.Default()
	}
	tlsCfg, err := p.TLSConfig()
	if err != nil {
		return err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsCfg
	tr.ResponseHeaderTimeout = time.Duration(p.ResponseTimeout)
	tr.Proxy = nil
	if p.UseSystemProxy {
		tr.Proxy = http.ProxyFromEnvironment
	}
	if p.HTTPProxyURL != "" {
		u, _ := url.Parse(p.HTTPProxyURL)
		tr.Proxy = http.ProxyURL(u)
	}
	timeout := time.Duration(p.Timeout)
	if timeout == 0 {
		timeout = 5 * time.Second
	}
	p.client = &http.Client{Transport: tr, Timeout: timeout}
	version := max(p.MetricVersion, 1)
	p.mapping = promparser.Mapping{MetricVersion: version, IgnoreTimestamp: p.IgnoreTimestamp}
	p.text, err = promparser.New(promparser.Options{MetricVersion: version, IgnoreTimestamp: p.IgnoreTimestamp},
		parsers.Settings{Now: p.now})
	p.stats = map[string]*urlStats{}
	return err
}

func (p *Prometheus) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// Gather scrapes every URL at once and waits for all. A failed scrape is reported with
// AddError and does not stop the others.
func (p *Prometheus) Gather(ctx context.Context, acc morse.Accumulator) error {
	var wg sync.WaitGroup
	for _, raw := range p.URLs {
		wg.Go(func() {
			st := p.urlStats(raw)
			start := time.Now()
			n, err := p.scrape(ctx, raw, acc)
			if err != nil {
				st.failure.Incr()
				st.connected.Set(0)
				acc.AddError(err)
			} else {
				st.success.Incr()
				st.connected.Set(1)
			}
			if p.EnableRequestMetrics && n >= 0 {
				acc.AddMetric(morse.NewMetric("prometheus_request", p.urlTags(raw), []morse.Field{
					{Key: "response_time", Value: morse.Float(time.Since(start).Seconds())},
					{Key: "content_length", Value: morse.Int(int64(n))}}, time.Now()))
			}
		})
	}
	wg.Wait()
	return nil
}

// urlStats are the counters of one URL.
type urlStats struct{ success, failure, connected *selfstat.Counter }

func (p *Prometheus) urlStats(raw string) *urlStats {
	p.statsMu.Lock()
	defer p.statsMu.Unlock()
	if st := p.stats[raw]; st != nil {
		return st
	}
	reg := p.reg
	if reg == nil {
		reg = selfstat.New() // counted, but nowhere reported: no agent
	}
	u := stripUser(raw)
	st := &urlStats{
		success:   reg.Counter("internal_prometheus", map[string]string{"url": u, "status": "success"}, "gathers_total"),
		failure:   reg.Counter("internal_prometheus", map[string]string{"url": u, "status": "failure"}, "gathers_total"),
		connected: reg.Counter("internal_prometheus", map[string]string{"url": u}, "connection_status"),
	}
	p.stats[raw] = st
	return st
}

// stripUser is the URL without user and password, as the url tag shows it.
func stripUser(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	u.User = nil
	return u.String()
}

func (p *Prometheus) urlTags(raw string) []morse.Tag {
	if p.URLTag == "" {
		return nil
	}
	return []morse.Tag{{Key: p.URLTag, Value: stripUser(raw)}}
}

// gzipReaders are the gunzip readers of scrapes, reused: each holds a window and tables.
var gzipReaders sync.Pool // *gzip.Reader

// gunzip returns a pooled reader of the gzip stream r; the caller puts it back.
func gunzip(r io.Reader) (*gzip.Reader, error) {
	if zr, ok := gzipReaders.Get().(*gzip.Reader); ok {
		if err := zr.Reset(r); err != nil {
			gzipReaders.Put(zr)
			return nil, err
		}
		return zr, nil
	}
	return gzip.NewReader(r)
}

// scrape reads one URL and adds its metrics; it returns the body's length, -1 when no
// answer came.
func (p *Prometheus) scrape(ctx context.Context, raw string, acc morse.Accumulator) (int, error) {
	req, err := p.request(ctx, raw)
	if err != nil {
		return -1, err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return -1, fmt.Errorf("error making HTTP request to %q: %w", stripUser(raw), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return 0, fmt.Errorf("%q returned HTTP status %q", stripUser(raw), resp.Status)
	}
	var in io.Reader = resp.Body
	if strings.EqualFold(resp.Header.Get("Content-Encoding"), "gzip") {
		zr, err := gunzip(resp.Body)
		if err != nil {
			return 0, fmt.Errorf("error reading gzipped body of %q: %w", stripUser(raw), err)
		}
		defer gzipReaders.Put(zr)
		in = zr
	}
	var body []byte
	if limit := int64(p.ContentLengthLimit); limit > 0 {
		body, err = io.ReadAll(io.LimitReader(in, limit+1))
		if err == nil && int64(len(body)) > limit {
			p.log.Info("skipping: content length exceeded maximum body size", "url", stripUser(raw), "limit", limit)
			return len(body), nil
		}
	} else {
		body, err = io.ReadAll(in)
	}
	if err != nil {
		return len(body), fmt.Errorf("error reading body of %q: %w", stripUser(raw), err)
	}
	tags := p.urlTags(raw)
	emit := func(m morse.Metric) {
		if len(tags) > 0 {
			m = m.WithTag(tags[0].Key, tags[0].Value)
		}
		acc.AddMetric(m)
	}
	if p.isProtobuf(resp.Header.Get("Content-Type")) {
		err = p.decodeProtobuf(body, emit)
	} else {
		err = p.text.Parse(body, emit)
	}
	if err != nil {
		return len(body), fmt.Errorf("error reading metrics for %q: %w", stripUser(raw), err)
	}
	return len(body), nil
}

// request builds the GET of one URL with Telegraf's headers and credentials.
func (p *Prometheus) request(ctx context.Context, raw string) (*http.Request, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	if u.Path == "" {
		u.Path = "/metrics"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("unable to create new request %q: %w", stripUser(raw), err)
	}
	req.Header.Set("User-Agent", "morse")
	req.Header.Set("Accept", acceptHeader)
	// Asked for here, not by the transport, so that scrape decompresses with
	// klauspost/compress (faster than compress/gzip, and its readers reused), and also
	// when http_headers asks for gzip itself.
	req.Header.Set("Accept-Encoding", "gzip")
	switch {
	case p.BearerToken != "":
		token, err := os.ReadFile(p.BearerToken)
		if err != nil {
			return nil, fmt.Errorf("reading bearer_token: %w", err)
		}
		req.Header.Set("Authorization", "Bearer "+string(bytes.TrimSpace(token)))
	case p.BearerTokenString.IsSet():
		req.Header.Set("Authorization", "Bearer "+string(p.BearerTokenString))
	case p.Username.IsSet() || p.Password.IsSet():
		req.SetBasicAuth(string(p.Username), string(p.Password))
	}
	for k, v := range p.HTTPHeaders {
		if strings.EqualFold(k, "host") {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	return req, nil
}

// isProtobuf reports whether an answer is delimited protobuf, by content_type_override or
// its Content-Type.
func (p *Prometheus) isProtobuf(ct string) bool {
	switch p.ContentTypeOverride {
	case "text":
		return false
	case "protobuf-delimiter":
		return true
	}
	mt, params, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/vnd.google.protobuf" &&
		params["proto"] == "io.prometheus.client.MetricFamily" && params["encoding"] == "delimited"
}

var errNoFamily = errors.New("a metric family without a name")
