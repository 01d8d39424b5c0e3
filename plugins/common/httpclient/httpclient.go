// Package httpclient holds Telegraf's common HTTP client options (its plugins/common/http:
// timeout, the transport's options, the proxy, TLS, OAuth2 client credentials and cookie
// authentication) and its http+unix:// and https+unix:// URLs (unix.go), for inputs that poll HTTP
// servers: a plugin embeds HTTPClientConfig, so that the
// keys sit in the plugin's own table, as they do in Telegraf.
//
// It lives under plugins/common rather than internal/ because plugin structs embed it and so
// export it.
package httpclient

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/common/tlsclient"
)

// HTTPClientConfig holds the keys. The zero value is Telegraf's default: a 5s timeout, no proxy,
// verified TLS.
type HTTPClientConfig struct {
	// Timeout bounds a whole request, the body included; 5s when zero.
	Timeout morse.Duration `toml:"timeout"`
	// IdleConnTimeout, MaxIdleConns and MaxIdleConnsPerHost are net/http's; zero is Go's default.
	IdleConnTimeout     morse.Duration `toml:"idle_conn_timeout"`
	MaxIdleConns        int            `toml:"max_idle_conn"`
	MaxIdleConnsPerHost int            `toml:"max_idle_conn_per_host"`
	// ResponseHeaderTimeout bounds the wait for the answer's headers; zero is no bound
	// but Timeout.
	ResponseHeaderTimeout morse.Duration `toml:"response_timeout"`
	// LocalAddress is the address to connect from, "host" or "host:port".
	LocalAddress string `toml:"local_address"`
	// UseSystemProxy takes the proxy from the environment; HTTPProxyURL names one.
	UseSystemProxy bool   `toml:"use_system_proxy"`
	HTTPProxyURL   string `toml:"http_proxy_url"`
	tlsclient.Config
	OAuth2
	CookieAuth
}

// OAuth2 is Telegraf's OAuth2 client-credentials grant: with client_id, client_secret and
// token_url set, every request carries a bearer token fetched from token_url and renewed
// when it expires.
type OAuth2 struct {
	ClientID     string       `toml:"client_id"`
	ClientSecret morse.Secret `toml:"client_secret"`
	TokenURL     string       `toml:"token_url"`
	// Audience is sent as the token request's audience parameter when set.
	Audience string   `toml:"audience"`
	Scopes   []string `toml:"scopes"`
}

// CookieAuth is Telegraf's cookie authentication. morse does not implement it: the keys are
// accepted while cookie_auth_url is empty, and refused otherwise.
type CookieAuth struct {
	URL      string            `toml:"cookie_auth_url"`
	Method   string            `toml:"cookie_auth_method"`
	Username string            `toml:"cookie_auth_username"`
	Password morse.Secret      `toml:"cookie_auth_password"`
	Headers  map[string]string `toml:"cookie_auth_headers"`
	Body     string            `toml:"cookie_auth_body"`
	Renewal  morse.Duration    `toml:"cookie_auth_renewal"`
}

// Validate reports every problem of the keys, naming each.
func (c *HTTPClientConfig) Validate() error {
	errs := []error{c.Config.Validate()}
	if c.Timeout < 0 || c.IdleConnTimeout < 0 || c.ResponseHeaderTimeout < 0 {
		errs = append(errs, morse.Errorf("timeout", "timeout, idle_conn_timeout and response_timeout must not be negative"))
	}
	if c.HTTPProxyURL != "" {
		if _, err := url.Parse(c.HTTPProxyURL); err != nil {
			errs = append(errs, morse.Errorf("http_proxy_url", "%v", err))
		}
	}
	if c.LocalAddress != "" {
		if _, err := localAddr(c.LocalAddress); err != nil {
			errs = append(errs, morse.Errorf("local_address", "%v", err))
		}
	}
	if c.TokenURL != "" {
		if u, err := url.Parse(c.TokenURL); err != nil || u.Host == "" {
			errs = append(errs, morse.Errorf("token_url", "%q is not an http:// or https:// URL", c.TokenURL))
		}
	}
	if c.CookieAuth.URL != "" {
		errs = append(errs, morse.Errorf("cookie_auth_url", "cookie authentication is not supported: use basic auth, a bearer token or OAuth2"))
	}
	return errors.Join(errs...)
}

// localAddr reads local_address: an IP, with or without a port.
func localAddr(s string) (*net.TCPAddr, error) {
	if ip := net.ParseIP(s); ip != nil {
		return &net.TCPAddr{IP: ip}, nil
	}
	return net.ResolveTCPAddr("tcp", s)
}

// Client builds the client. ctx bounds the OAuth2 token requests' lifetime: cancel it to
// stop them.
func (c *HTTPClientConfig) Client(ctx context.Context) (*http.Client, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	tlsCfg, err := c.TLSConfig()
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsCfg
	tr.Proxy = nil
	if c.UseSystemProxy {
		tr.Proxy = http.ProxyFromEnvironment
	} else if c.HTTPProxyURL != "" {
		u, _ := url.Parse(c.HTTPProxyURL)
		tr.Proxy = http.ProxyURL(u)
	}
	tr.IdleConnTimeout = time.Duration(c.IdleConnTimeout)
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = c.MaxIdleConns, c.MaxIdleConnsPerHost
	tr.ResponseHeaderTimeout = time.Duration(c.ResponseHeaderTimeout)
	if c.LocalAddress != "" {
		addr, _ := localAddr(c.LocalAddress)
		tr.DialContext = (&net.Dialer{LocalAddr: addr, Timeout: 30 * time.Second}).DialContext
	}
	registerUnix(tr)
	timeout := time.Duration(c.Timeout)
	if timeout == 0 {
		timeout = 5 * time.Second
	}
	// The token requests get the timeout of their own: the outer client's does not reach
	// into the token source.
	client := &http.Client{Transport: tr, Timeout: timeout}
	if c.ClientID != "" && c.ClientSecret.IsSet() && c.TokenURL != "" {
		cc := clientcredentials.Config{ClientID: c.ClientID, ClientSecret: string(c.ClientSecret),
			TokenURL: c.TokenURL, Scopes: c.Scopes, EndpointParams: url.Values{}}
		if c.Audience != "" {
			cc.EndpointParams.Set("audience", c.Audience)
		}
		client = cc.Client(context.WithValue(ctx, oauth2.HTTPClient, client))
	}
	client.Timeout = timeout
	return client, nil
}
