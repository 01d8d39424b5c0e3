package httpout

import (
	"crypto/tls"
	"errors"
	"net/http"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/common/tlsclient"
)

// ClientConfig is Telegraf's HTTPClientConfig (its plugins/common/http) with the same TOML
// keys, for an output to embed so that they sit in the plugin's own table, as they do in
// Telegraf's outputs.http: timeout, idle_conn_timeout, max_idle_conn,
// max_idle_conn_per_host, response_timeout, use_system_proxy, http_proxy_url and the tls_*
// keys of tlsclient.Config. Telegraf's OAuth2 and cookie keys are not among them.
//
// Keys that Telegraf gives each plugin on its own (headers or http_headers,
// content_encoding, username and password, a token) stay in the output's struct; see
// ValidateRequest, SetHeaders and Auth.
type ClientConfig struct {
	// Timeout bounds one request, from sending it to reading its answer's body.
	Timeout morse.Duration `toml:"timeout"`
	// IdleConnTimeout, MaxIdleConns and MaxIdleConnsPerHost bound the connections kept
	// open between requests; zero keeps Go's defaults (90 s, 100, 2).
	IdleConnTimeout     morse.Duration `toml:"idle_conn_timeout"`
	MaxIdleConns        int            `toml:"max_idle_conn"`
	MaxIdleConnsPerHost int            `toml:"max_idle_conn_per_host"`
	// ResponseHeaderTimeout bounds the wait for an answer's headers once the request is sent.
	ResponseHeaderTimeout morse.Duration `toml:"response_timeout"`
	// UseSystemProxy takes the proxy from the environment (HTTP_PROXY, HTTPS_PROXY,
	// NO_PROXY); otherwise HTTPProxyURL is the proxy, and with neither set there is none.
	// As in Telegraf, UseSystemProxy wins when both are set.
	UseSystemProxy bool   `toml:"use_system_proxy"`
	HTTPProxyURL   string `toml:"http_proxy_url"`
	tlsclient.Config
}

// Validate checks the keys without reading any file or dialing, naming the key at fault.
func (c *ClientConfig) Validate() error {
	var errs []error
	if c.Timeout < 0 {
		errs = append(errs, morse.Errorf("timeout", "must not be negative, got %s", c.Timeout))
	}
	o := c.options(nil)
	if o.Proxy != "" {
		if _, err := ParseProxy(o.Proxy); err != nil {
			errs = append(errs, morse.Errorf("http_proxy_url", "%v", err))
		}
		o.Proxy = "" // checked under its own name here, not as http_proxy
	}
	errs = append(errs, o.Validate(), c.Config.Validate())
	return errors.Join(errs...)
}

// options are the transport's options of the keys, with tlsCfg as the TLS.
func (c *ClientConfig) options(tlsCfg *tls.Config) Options {
	o := Options{
		TLS:                   tlsCfg,
		NoEnvironmentProxy:    !c.UseSystemProxy,
		IdleConnTimeout:       time.Duration(c.IdleConnTimeout),
		MaxIdleConns:          c.MaxIdleConns,
		MaxIdleConnsPerHost:   c.MaxIdleConnsPerHost,
		ResponseHeaderTimeout: time.Duration(c.ResponseHeaderTimeout),
	}
	if !c.UseSystemProxy {
		o.Proxy = c.HTTPProxyURL
	}
	return o
}

// Client checks the keys and builds a client of NewTransport, TLS read from its files,
// each request bounded by timeout. Its errors name the key at fault.
func (c *ClientConfig) Client() (*http.Client, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	tlsCfg, err := c.TLSConfig()
	if err != nil {
		return nil, err
	}
	tr, err := NewTransport(c.options(tlsCfg))
	if err != nil {
		return nil, err
	}
	return &http.Client{Transport: tr, Timeout: time.Duration(c.Timeout)}, nil
}
