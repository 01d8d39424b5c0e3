// Package http_response is the inputs.http_response plugin: every interval it requests
// each URL once and reports whether and how the server answered, with Telegraf 1.39.3's
// options, measurement, tags (server, method, status_code, result and the
// http_header_tags) and fields (response_time, http_response_code, content_length,
// response_string_match, response_status_code_match, result_type, result_code). A failed
// request is a metric with its result, not an error.
//
// Telegraf's http_response reports no certificate expiry; its x509_cert input does.
package http_response

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/common/httpclient"
	"github.com/morse-agent/morse/plugins/common/tlsclient"
)

// Description is the one-line summary that `morse config` prints above the sample.
const Description = "HTTP/HTTPS request given an address a method and a timeout"

//go:embed sample.conf
var sampleConfig string

// defaultBodyMax is Telegraf's limit of the body read, 32 MiB.
const defaultBodyMax = 32 << 20

// HTTPResponse is the inputs.http_response plugin and its configuration. Build it with New.
type HTTPResponse struct {
	// URLs are the http:// or https:// addresses, ["http://localhost"] when empty.
	URLs []string `toml:"urls"`
	// HTTPProxy is the proxy's URL; empty takes the proxy from the environment.
	HTTPProxy string `toml:"http_proxy"`
	// Body is the request's body; BodyForm, used when Body is empty, is sent URL-encoded.
	Body     string              `toml:"body"`
	BodyForm map[string][]string `toml:"body_form"`
	// Method is the request method, GET by default.
	Method string `toml:"method"`
	// ResponseTimeout bounds the whole request, the body included; below 1s it is 5s, as
	// in Telegraf.
	ResponseTimeout morse.Duration `toml:"response_timeout"`
	// HTTPHeaderTags maps answer headers to the tags that get their first value.
	HTTPHeaderTags map[string]string `toml:"http_header_tags"`
	// Headers are added to every request; "Host" sets the request's host.
	Headers map[string]string `toml:"headers"`
	// FollowRedirects follows redirects; otherwise the redirect itself is the answer.
	FollowRedirects bool `toml:"follow_redirects"`
	// BearerToken is a file holding a bearer token (deprecated in Telegraf for Token).
	BearerToken string `toml:"bearer_token"`
	// Token is a bearer token.
	Token morse.Secret `toml:"token"`
	// ResponseBodyField, when set, names a field that gets the body (valid UTF-8 only).
	ResponseBodyField string `toml:"response_body_field"`
	// ResponseBodyMaxSize limits the body read, 32 MiB when zero.
	ResponseBodyMaxSize morse.Size `toml:"response_body_max_size"`
	// ResponseStringMatch is a regular expression looked for in the body.
	ResponseStringMatch string `toml:"response_string_match"`
	// ResponseStatusCode, when set, is the status the answer must have.
	ResponseStatusCode int `toml:"response_status_code"`
	// Interface is the network interface to connect from.
	Interface string `toml:"interface"`
	// Username and Password are HTTP basic auth credentials, sent when both are set.
	Username morse.Secret `toml:"username"`
	Password morse.Secret `toml:"password"`
	tlsclient.Config
	httpclient.CookieAuth

	match   *regexp.Regexp
	clients []*http.Client
}

// The engine finds these interfaces by type assertion; a typo would go unnoticed.
var (
	_ morse.Input       = (*HTTPResponse)(nil)
	_ morse.Validator   = (*HTTPResponse)(nil)
	_ morse.Initializer = (*HTTPResponse)(nil)
)

// New returns the plugin with Telegraf's defaults.
func New() *HTTPResponse {
	return &HTTPResponse{Method: "GET", ResponseTimeout: morse.Duration(5 * time.Second)}
}

func init() {
	morse.RegisterInput(morse.InputInfo{
		Name:         "http_response",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Input { return New() },
	})
}

// Validate reports every problem of the options.
func (h *HTTPResponse) Validate() error {
	errs := []error{h.Config.Validate()}
	for _, raw := range h.URLs {
		if u, err := url.Parse(raw); err != nil || (u.Scheme != "http" && u.Scheme != "https") {
			errs = append(errs, morse.Errorf("urls", "%q is not a valid address: only http and https types are supported", raw))
		}
	}
	if h.BearerToken != "" && h.Token.IsSet() {
		errs = append(errs, morse.Errorf("token", "either use 'bearer_token' or 'token' not both"))
	}
	if _, err := regexp.Compile(h.ResponseStringMatch); err != nil {
		errs = append(errs, morse.Errorf("response_string_match", "%v", err))
	}
	if h.HTTPProxy != "" {
		if _, err := url.Parse(h.HTTPProxy); err != nil {
			errs = append(errs, morse.Errorf("http_proxy", "%v", err))
		}
	}
	if h.ResponseBodyMaxSize < 0 {
		errs = append(errs, morse.Errorf("response_body_max_size", "must not be negative"))
	}
	if h.CookieAuth.URL != "" {
		errs = append(errs, morse.Errorf("cookie_auth_url", "cookie authentication is not supported: use basic auth or a bearer token"))
	}
	return errors.Join(errs...)
}

// Init applies Telegraf's defaults and builds a client per URL.
func (h *HTTPResponse) Init() error {
	if err := h.Validate(); err != nil {
		return err
	}
	if h.ResponseTimeout < morse.Duration(time.Second) {
		h.ResponseTimeout = morse.Duration(5 * time.Second)
	}
	if h.Method == "" {
		h.Method = "GET"
	}
	if len(h.URLs) == 0 {
		h.URLs = []string{"http://localhost"}
	}
	if h.ResponseBodyMaxSize == 0 {
		h.ResponseBodyMaxSize = defaultBodyMax
	}
	h.match = regexp.MustCompile(h.ResponseStringMatch) // Validate compiled it
	h.clients = h.clients[:0]
	for _, raw := range h.URLs {
		u, _ := url.Parse(raw)
		c, err := h.client(u)
		if err != nil {
			return err
		}
		h.clients = append(h.clients, c)
	}
	return nil
}

// client is Telegraf's client of one URL: no keep-alive, the timeout over the whole
// request, redirects followed only on request.
func (h *HTTPResponse) client(u *url.URL) (*http.Client, error) {
	tlsCfg, err := h.TLSConfig()
	if err != nil {
		return nil, err
	}
	dialer := &net.Dialer{}
	if h.Interface != "" {
		if dialer.LocalAddr, err = localAddress(h.Interface, u); err != nil {
			return nil, morse.Errorf("interface", "%v", err)
		}
	}
	proxy := http.ProxyFromEnvironment
	if h.HTTPProxy != "" {
		p, _ := url.Parse(h.HTTPProxy)
		proxy = http.ProxyURL(p)
	}
	c := &http.Client{
		Transport: &http.Transport{Proxy: proxy, DialContext: dialer.DialContext,
			DisableKeepAlives: true, TLSClientConfig: tlsCfg},
		Timeout: time.Duration(h.ResponseTimeout),
	}
	if !h.FollowRedirects {
		c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	}
	return c, nil
}

// localAddress is an address of the interface in the URL host's family.
func localAddress(name string, u *url.URL) (net.Addr, error) {
	iface, err := net.InterfaceByName(name)
	if err != nil {
		return nil, err
	}
	addrs, err := iface.Addrs()
	if err != nil {
		return nil, err
	}
	ip := net.ParseIP(u.Hostname())
	wantV6 := ip != nil && ip.To4() == nil
	for _, a := range addrs {
		if ipnet, ok := a.(*net.IPNet); ok && (ipnet.IP.To4() == nil) == wantV6 {
			return &net.TCPAddr{IP: ipnet.IP}, nil
		}
	}
	return nil, fmt.Errorf("cannot create local address for interface %q and server address %q", name, u)
}

// Gather requests every URL in turn, as Telegraf does.
func (h *HTTPResponse) Gather(ctx context.Context, acc morse.Accumulator) error {
	if h.match == nil {
		if err := h.Init(); err != nil {
			return err
		}
	}
	for i, raw := range h.URLs {
		fields, tags, err := h.probe(ctx, h.clients[i], raw)
		if err != nil {
			acc.AddError(fmt.Errorf("%s: %w", raw, err))
			continue
		}
		acc.AddFields("http_response", fields, tags)
	}
	return nil
}
