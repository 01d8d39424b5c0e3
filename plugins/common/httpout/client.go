package httpout

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/morse-agent/morse"
)

// Options shape the transport.
type Options struct {
	// TLS is the client TLS; nil leaves https on Go's verified defaults.
	TLS *tls.Config
	// Proxy is http_proxy (or http_proxy_url), the proxy's URL. Empty takes the proxy from
	// the environment (HTTP_PROXY, HTTPS_PROXY, NO_PROXY), as Go's default transport does,
	// unless NoEnvironmentProxy.
	Proxy string
	// NoEnvironmentProxy, with Proxy empty, connects directly whatever the environment says:
	// Telegraf's plugins/common/http without use_system_proxy.
	NoEnvironmentProxy bool
	// LocalAddress is local_address: the IP address or host name, with or without a port,
	// that connections leave from. Empty lets the system choose.
	LocalAddress string
	// ReadIdleTimeout and PingTimeout, when either is set, turn on Go's HTTP/2 health
	// check: a ping after ReadIdleTimeout of silence, and the connection closed when no
	// answer comes within PingTimeout.
	ReadIdleTimeout, PingTimeout time.Duration
	// IdleConnTimeout, MaxIdleConns and MaxIdleConnsPerHost are idle_conn_timeout,
	// max_idle_conn and max_idle_conn_per_host; zero keeps Go's defaults (90 s, 100, 2).
	IdleConnTimeout                   time.Duration
	MaxIdleConns, MaxIdleConnsPerHost int
	// ResponseHeaderTimeout is response_timeout: how long to wait for an answer's headers
	// once the request is sent. Zero: no bound but the request's own.
	ResponseHeaderTimeout time.Duration
}

// The dialer's bounds, those of Go's default transport.
const (
	dialTimeout = 30 * time.Second
	keepAlive   = 30 * time.Second
)

// Validate checks http_proxy and local_address without dialing, naming the option at fault.
func (o Options) Validate() error {
	var errs []error
	if o.Proxy != "" {
		if _, err := ParseProxy(o.Proxy); err != nil {
			errs = append(errs, morse.Errorf("http_proxy", "%v", err))
		}
	}
	if _, err := ParseLocalAddress(o.LocalAddress); err != nil {
		errs = append(errs, morse.Errorf("local_address", "%v", err))
	}
	if o.IdleConnTimeout < 0 {
		errs = append(errs, morse.Errorf("idle_conn_timeout", "must not be negative, got %s", morse.Duration(o.IdleConnTimeout)))
	}
	if o.MaxIdleConns < 0 {
		errs = append(errs, morse.Errorf("max_idle_conn", "must not be negative, got %d", o.MaxIdleConns))
	}
	if o.MaxIdleConnsPerHost < 0 {
		errs = append(errs, morse.Errorf("max_idle_conn_per_host", "must not be negative, got %d", o.MaxIdleConnsPerHost))
	}
	if o.ResponseHeaderTimeout < 0 {
		errs = append(errs, morse.Errorf("response_timeout", "must not be negative, got %s", morse.Duration(o.ResponseHeaderTimeout)))
	}
	return errors.Join(errs...)
}

// ValidateRequest checks the options that shape each request of Telegraf's HTTP outputs
// (timeout, content_encoding and http_headers), naming the option at fault.
func ValidateRequest(timeout time.Duration, contentEncoding string, headers map[string]string) error {
	var errs []error
	if timeout < 0 {
		errs = append(errs, morse.Errorf("timeout", "must not be negative, got %s", morse.Duration(timeout)))
	}
	switch contentEncoding {
	case "", "identity", "gzip":
	default:
		errs = append(errs, morse.Errorf("content_encoding", "%q: must be \"gzip\" or \"identity\"", contentEncoding))
	}
	for k := range headers {
		if k == "" || strings.ContainsAny(k, " :\r\n") {
			errs = append(errs, morse.Errorf("http_headers", "%q is not a valid header name", k))
		}
	}
	return errors.Join(errs...)
}

// NewTransport returns a copy of Go's default transport with the options applied, whose
// connections write the bodies of NewRequest in one piece. Its errors name the option at
// fault; a negative bound or count, which Validate refuses, is taken as unset.
func NewTransport(o Options) (*http.Transport, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = o.TLS
	if o.Proxy != "" {
		p, err := ParseProxy(o.Proxy)
		if err != nil {
			return nil, morse.Errorf("http_proxy", "%v", err)
		}
		tr.Proxy = http.ProxyURL(p)
	} else if o.NoEnvironmentProxy {
		tr.Proxy = nil
	}
	if o.IdleConnTimeout > 0 {
		tr.IdleConnTimeout = o.IdleConnTimeout
	}
	if o.MaxIdleConns > 0 {
		tr.MaxIdleConns = o.MaxIdleConns
	}
	if o.MaxIdleConnsPerHost > 0 {
		tr.MaxIdleConnsPerHost = o.MaxIdleConnsPerHost
	}
	tr.ResponseHeaderTimeout = o.ResponseHeaderTimeout
	local, err := ParseLocalAddress(o.LocalAddress)
	if err != nil {
		return nil, morse.Errorf("local_address", "%v", err)
	}
	dialer := &net.Dialer{Timeout: dialTimeout, KeepAlive: keepAlive}
	if local != nil {
		dialer.LocalAddr = local
	}
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dialer.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return conn{c}, nil
	}
	if o.ReadIdleTimeout > 0 || o.PingTimeout > 0 {
		tr.HTTP2 = &http.HTTP2Config{SendPingTimeout: o.ReadIdleTimeout, PingTimeout: o.PingTimeout}
	}
	return tr, nil
}

// ParseProxy reads http_proxy: a URL with a host, such as http://proxy.example:3128.
func ParseProxy(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, err
	}
	if u.Host == "" {
		return nil, fmt.Errorf("%q is not a proxy URL", s)
	}
	return u, nil
}

// ParseLocalAddress reads local_address as Telegraf does: an IP address or a host name,
// with or without a port. The empty string gives nil: the system chooses.
func ParseLocalAddress(s string) (*net.TCPAddr, error) {
	if s == "" {
		return nil, nil
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		if !strings.Contains(err.Error(), "missing port") {
			return nil, fmt.Errorf("invalid local address: %w", err)
		}
		host, port = s, ""
	}
	ip, err := net.ResolveIPAddr("ip", host)
	if err != nil {
		return nil, fmt.Errorf("cannot resolve local address: %w", err)
	}
	p := 0
	if port != "" {
		n, err := strconv.ParseUint(port, 10, 16)
		if err != nil {
			return nil, fmt.Errorf("invalid port: %w", err)
		}
		p = int(n)
	}
	return &net.TCPAddr{IP: ip.IP, Port: p, Zone: ip.Zone}, nil
}
