package httpout

import (
	"crypto/tls"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		err  string // empty: valid
	}{
		{"nothing", Options{}, ""},
		{"proxy", Options{Proxy: "http://proxy.example:3128"}, ""},
		{"proxy without host", Options{Proxy: "proxy.example"}, "http_proxy"},
		{"proxy unparsable", Options{Proxy: "::"}, "http_proxy"},
		{"local ip", Options{LocalAddress: "127.0.0.1"}, ""},
		{"local ip and port", Options{LocalAddress: "[::1]:1234"}, ""},
		{"local bad port", Options{LocalAddress: "127.0.0.1:port"}, "local_address: invalid port"},
		{"local unresolvable", Options{LocalAddress: "not an ip:x"}, "local_address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.Validate()
			if tt.err == "" {
				require.NoError(t, err)
				_, err = NewTransport(tt.opts)
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.err)
			_, err = NewTransport(tt.opts)
			require.ErrorContains(t, err, tt.err, "NewTransport checks the same")
		})
	}
}

func TestNewTransport(t *testing.T) {
	cfg := &tls.Config{ServerName: "db.example", MinVersion: tls.VersionTLS12}
	tr, err := NewTransport(Options{TLS: cfg, Proxy: "http://proxy.example:3128", ReadIdleTimeout: time.Second, PingTimeout: 2 * time.Second})
	require.NoError(t, err)
	require.Same(t, cfg, tr.TLSClientConfig)
	req, err := http.NewRequest(http.MethodGet, "http://db.example/write", nil)
	require.NoError(t, err)
	p, err := tr.Proxy(req)
	require.NoError(t, err)
	require.Equal(t, "proxy.example:3128", p.Host)
	require.Equal(t, &http.HTTP2Config{SendPingTimeout: time.Second, PingTimeout: 2 * time.Second}, tr.HTTP2)

	tr, err = NewTransport(Options{})
	require.NoError(t, err)
	require.Nil(t, tr.TLSClientConfig, "Go's verified defaults")
	require.Nil(t, tr.HTTP2)
	require.NotSame(t, http.DefaultTransport, tr, "a copy: the default transport is not changed")
}

func TestValidateRequest(t *testing.T) {
	tests := []struct {
		name     string
		timeout  time.Duration
		encoding string
		headers  map[string]string
		err      string // empty: valid
	}{
		{"defaults", 0, "", nil, ""},
		{"gzip and a header", 5 * time.Second, "gzip", map[string]string{"X-Special": "v"}, ""},
		{"negative timeout", -time.Second, "", nil, "timeout: must not be negative"},
		{"unknown encoding", 0, "br", nil, "content_encoding"},
		{"bad header name", 0, "identity", map[string]string{"X Bad": "v"}, "http_headers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateRequest(tt.timeout, tt.encoding, tt.headers)
			if tt.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.err)
		})
	}
}
