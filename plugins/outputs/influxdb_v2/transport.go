package influxdbv2

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/common/httpout"
)

// transportOptions are the options of the HTTP transport to every URL.
func (o *InfluxDBv2) transportOptions(tlsCfg *tls.Config) httpout.Options {
	return httpout.Options{
		TLS: tlsCfg, Proxy: o.HTTPProxy, LocalAddress: o.LocalAddress,
		ReadIdleTimeout: time.Duration(o.ReadIdleTimeout), PingTimeout: time.Duration(o.PingTimeout),
	}
}

// target is one configured URL with the client that reaches it.
type target struct {
	client *http.Client
	// prefix is the write URL up to the bucket's value, such as
	// http://127.0.0.1:8086/api/v2/write?org=o&bucket= (for a unix socket the host is a
	// placeholder), so that a request only appends the escaped bucket.
	prefix string
	// name is the write endpoint without query or credentials, for errors and logs.
	name string
}

// newTarget builds the client of one URL. Timeouts are set per attempt with a context, so
// that failover to the next URL gets a fresh one.
func (o *InfluxDBv2) newTarget(u *url.URL, tlsCfg *tls.Config) (*target, error) {
	if o.Config.Disabled() && u.Scheme == "https" {
		return nil, morse.Errorf("tls_enable", "is false, but %s asks for https", httpout.RedactURL(u))
	}
	tr, err := httpout.NewTransport(o.transportOptions(tlsCfg))
	if err != nil {
		return nil, err
	}
	t := &target{client: &http.Client{Transport: tr}}
	endpoint := u.JoinPath("api", "v2", "write")
	if u.Scheme == "unix" {
		// Every connection goes to the socket; the URL's host is only a placeholder.
		path := u.Path
		tr.Proxy = nil
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		}
		endpoint = &url.URL{Scheme: "http", Host: "localhost", Path: "/api/v2/write", RawQuery: u.RawQuery}
	}
	q := endpoint.Query()
	if o.Organization != "" {
		q.Set("org", o.Organization)
	}
	q.Del("bucket") // each request names its own
	endpoint.RawQuery = ""
	t.name = httpout.RedactURL(endpoint)
	if u.Scheme == "unix" {
		t.name = "unix://" + u.Path
	}
	t.prefix = endpoint.String() + "?"
	if enc := q.Encode(); enc != "" {
		t.prefix += enc + "&"
	}
	t.prefix += "bucket="
	return t, nil
}

// RateLimit is Telegraf's rate_limit: a size such as "5MB", or "unlimited" (zero).
type RateLimit int64

// UnmarshalText reads "unlimited" or a size.
func (r *RateLimit) UnmarshalText(b []byte) error {
	if strings.EqualFold(strings.TrimSpace(string(b)), "unlimited") {
		*r = 0
		return nil
	}
	var s morse.Size
	if err := s.UnmarshalText(b); err != nil {
		return fmt.Errorf("%w, or \"unlimited\"", err)
	}
	*r = RateLimit(s)
	return nil
}

// UnmarshalTOML accepts a string or a bare number of bytes.
func (r *RateLimit) UnmarshalTOML(v any) error {
	if s, ok := v.(string); ok {
		return r.UnmarshalText([]byte(s))
	}
	var s morse.Size
	if err := s.UnmarshalTOML(v); err != nil {
		return err
	}
	*r = RateLimit(s)
	return nil
}
