// Package http is the inputs.http plugin: every interval it requests each URL and parses
// the answer's body in its data_format, with Telegraf 1.39.3's options: urls, method, body,
// content_encoding, headers, basic auth (username, password), a bearer token (token or
// token_file), OAuth2 client credentials, TLS, the proxy and transport options,
// success_status_codes and timeout. Each metric gets a url tag unless the data gave one.
//
// A request that fails, an answer whose status is not a success code and a body that does
// not fully parse are reported through acc.AddError with the URL. Unlike Telegraf, which
// drops the whole body for one malformed entry, morse keeps the valid entries around it and
// counts the refused ones.
package http

import (
	"bytes"
	"compress/gzip"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/common/httpclient"
	"github.com/morse-agent/morse/plugins/parsers"
	"github.com/morse-agent/morse/plugins/parsers/dataformat"
)

// Description is the one-line summary that `morse config` prints above the sample.
const Description = "Read formatted metrics from one or more HTTP endpoints"

//go:embed sample.conf
var sampleConfig string

// HTTP is the inputs.http plugin and its configuration. Build it with New.
type HTTP struct {
	// URLs are the http:// or https:// addresses to request.
	URLs []string `toml:"urls"`
	// Method is the request method, GET by default.
	Method string `toml:"method"`
	// Body is the request's body, sent as it is or gzipped (ContentEncoding).
	Body string `toml:"body"`
	// ContentEncoding is "identity" (or empty) or "gzip", for Body.
	ContentEncoding string `toml:"content_encoding"`
	// Username and Password are HTTP basic auth credentials.
	Username morse.Secret `toml:"username"`
	Password morse.Secret `toml:"password"`
	// Token is a bearer token; TokenFile a file holding one, read at every request.
	Token     morse.Secret `toml:"token"`
	TokenFile string       `toml:"token_file"`
	// Headers are added to every request; "Host" sets the request's host.
	Headers map[string]morse.Secret `toml:"headers"`
	// SuccessStatusCodes are the answers whose body is parsed, [200] by default.
	SuccessStatusCodes []int `toml:"success_status_codes"`
	// HTTPClientConfig is the client's timeout, transport, proxy, TLS, OAuth2 and cookie keys.
	httpclient.HTTPClientConfig
	// Config is data_format ("influx" by default) and the options of each format.
	dataformat.Config

	client *http.Client
	stop   context.CancelFunc
}

// The engine finds these interfaces by type assertion; a typo would go unnoticed.
var (
	_ morse.Input        = (*HTTP)(nil)
	_ morse.Validator    = (*HTTP)(nil)
	_ morse.Initializer  = (*HTTP)(nil)
	_ morse.ServiceInput = (*HTTP)(nil)
)

// New returns the plugin with Telegraf's defaults.
func New() *HTTP {
	return &HTTP{Method: "GET", Config: dataformat.Config{DataFormat: "influx"}}
}

func init() {
	morse.RegisterInput(morse.InputInfo{
		Name:         "http",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Input { return New() },
	})
}

// Validate reports every problem of the options.
func (h *HTTP) Validate() error {
	errs := []error{h.Config.Validate(), h.HTTPClientConfig.Validate()}
	for _, raw := range h.URLs {
		u, err := url.Parse(raw)
		switch {
		case err != nil:
			errs = append(errs, morse.Errorf("urls", "%q: %v", raw, err))
		case strings.HasSuffix(u.Scheme, "+unix"):
			errs = append(errs, morse.Errorf("urls", "%q: unix sockets are not supported; use http or https", raw))
		case u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
			errs = append(errs, morse.Errorf("urls", "%q is not an http:// or https:// URL", raw))
		}
	}
	if h.TokenFile != "" && h.Token.IsSet() {
		errs = append(errs, morse.Errorf("token_file", "either use 'token_file' or 'token' not both"))
	}
	switch h.ContentEncoding {
	case "", "identity", "gzip":
	default:
		errs = append(errs, morse.Errorf("content_encoding", "%q: use \"identity\" or \"gzip\"", h.ContentEncoding))
	}
	for _, code := range h.SuccessStatusCodes {
		if code < 100 || code > 999 {
			errs = append(errs, morse.Errorf("success_status_codes", "%d is not an HTTP status code", code))
		}
	}
	return errors.Join(errs...)
}

// Init builds the client.
func (h *HTTP) Init() error {
	if h.Method == "" {
		h.Method = "GET"
	}
	if len(h.SuccessStatusCodes) == 0 {
		h.SuccessStatusCodes = []int{http.StatusOK}
	}
	ctx, cancel := context.WithCancel(context.Background())
	client, err := h.HTTPClientConfig.Client(ctx)
	if err != nil {
		cancel()
		return err
	}
	h.client, h.stop = client, cancel
	return nil
}

// Start does nothing: the plugin is a service input only so that Stop can end the OAuth2
// token source and close idle connections, as Telegraf's does.
func (h *HTTP) Start(context.Context, morse.Accumulator) error { return nil }

// Stop closes the client's idle connections.
func (h *HTTP) Stop() {
	if h.client != nil {
		h.client.CloseIdleConnections()
	}
	if h.stop != nil {
		h.stop()
	}
}

// Gather requests every URL at once and waits for all of them.
func (h *HTTP) Gather(ctx context.Context, acc morse.Accumulator) error {
	if h.client == nil {
		if err := h.Init(); err != nil {
			return err
		}
	}
	var wg sync.WaitGroup
	for _, u := range h.URLs {
		wg.Go(func() {
			if err := h.gatherURL(ctx, acc, u); err != nil {
				acc.AddError(fmt.Errorf("[url=%s]: %w", u, err))
			}
		})
	}
	wg.Wait()
	return nil
}

func (h *HTTP) gatherURL(ctx context.Context, acc morse.Accumulator, u string) error {
	req, err := h.request(ctx, u)
	if err != nil {
		return err
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if !slices.Contains(h.SuccessStatusCodes, resp.StatusCode) {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
		return fmt.Errorf("received status code %d (%s), expected any value out of %v",
			resp.StatusCode, http.StatusText(resp.StatusCode), h.SuccessStatusCodes)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("reading body failed: %w", err)
	}
	// A parser per request: formats may keep state while they parse (csv's header rows).
	parser, err := h.NewParser(parsers.Settings{MetricName: "http"})
	if err != nil {
		return fmt.Errorf("instantiating parser failed: %w", err)
	}
	perr := parser.Parse(body, func(m morse.Metric) {
		if _, ok := m.Tag("url"); !ok {
			m = m.WithTag("url", u)
		}
		acc.AddMetric(m)
	})
	if perr != nil {
		return fmt.Errorf("parsing metrics failed, %d entries refused: %w", parsers.Refused(perr), perr)
	}
	return nil
}

// request builds the request of one URL with the body, the credentials and the headers.
func (h *HTTP) request(ctx context.Context, u string) (*http.Request, error) {
	var body io.Reader
	if h.Body != "" {
		b := []byte(h.Body)
		if h.ContentEncoding == "gzip" {
			var buf bytes.Buffer
			zw := gzip.NewWriter(&buf)
			_, _ = zw.Write(b) // a bytes.Buffer does not fail
			_ = zw.Close()
			b = buf.Bytes()
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, h.Method, u, body)
	if err != nil {
		return nil, err
	}
	if h.ContentEncoding == "gzip" && body != nil {
		req.Header.Set("Content-Encoding", "gzip")
	}
	switch {
	case h.Token.IsSet():
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(h.Token)))
	case h.TokenFile != "":
		token, err := os.ReadFile(h.TokenFile)
		if err != nil {
			return nil, fmt.Errorf("reading token_file: %w", err)
		}
		req.Header.Set("Authorization", "Bearer "+strings.Trim(string(token), "\n"))
	}
	for k, v := range h.Headers {
		if strings.EqualFold(k, "host") {
			req.Host = string(v)
		} else {
			req.Header.Add(k, string(v))
		}
	}
	if h.Username.IsSet() || h.Password.IsSet() {
		req.SetBasicAuth(string(h.Username), string(h.Password))
	}
	return req, nil
}
