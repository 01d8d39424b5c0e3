package httpout

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
)

// TestClientConfigKeys: Telegraf's keys decode into an output that embeds ClientConfig, and
// reach the transport.
func TestClientConfigKeys(t *testing.T) {
	var out struct {
		URL string `toml:"url"`
		ClientConfig
	}
	_, err := toml.Decode(`
url = "http://127.0.0.1:8080/telegraf"
timeout = "7s"
idle_conn_timeout = "45s"
max_idle_conn = 10
max_idle_conn_per_host = 4
response_timeout = "3s"
http_proxy_url = "http://proxy.example:3128"
insecure_skip_verify = true
`, &out)
	require.NoError(t, err)
	require.NoError(t, out.Validate())
	c, err := out.Client()
	require.NoError(t, err)
	require.Equal(t, 7*time.Second, c.Timeout)
	tr := c.Transport.(*http.Transport)
	require.Equal(t, 45*time.Second, tr.IdleConnTimeout)
	require.Equal(t, 10, tr.MaxIdleConns)
	require.Equal(t, 4, tr.MaxIdleConnsPerHost)
	require.Equal(t, 3*time.Second, tr.ResponseHeaderTimeout)
	require.True(t, tr.TLSClientConfig.InsecureSkipVerify)
	req := httptest.NewRequest(http.MethodPost, "http://db.example/write", nil)
	p, err := tr.Proxy(req)
	require.NoError(t, err)
	require.Equal(t, "proxy.example:3128", p.Host)
}

// TestClientConfigProxy: as in Telegraf, no proxy unless use_system_proxy (the environment's,
// which wins) or http_proxy_url. The environment's proxy is told by its function, since
// net/http reads the environment once per process.
func TestClientConfigProxy(t *testing.T) {
	req := httptest.NewRequest(http.MethodPost, "http://db.example/write", nil)
	fromEnv := reflect.ValueOf(http.ProxyFromEnvironment).Pointer()
	proxyOf := func(tr *http.Transport) string {
		switch {
		case tr.Proxy == nil:
			return ""
		case reflect.ValueOf(tr.Proxy).Pointer() == fromEnv:
			return "environment"
		}
		p, err := tr.Proxy(req)
		require.NoError(t, err)
		return p.Host
	}
	of := func(c ClientConfig) string {
		client, err := c.Client()
		require.NoError(t, err)
		return proxyOf(client.Transport.(*http.Transport))
	}
	require.Empty(t, of(ClientConfig{}), "neither: direct, whatever the environment says")
	require.Equal(t, "environment", of(ClientConfig{UseSystemProxy: true}))
	require.Equal(t, "proxy.example:3128", of(ClientConfig{HTTPProxyURL: "http://proxy.example:3128"}))
	require.Equal(t, "environment", of(ClientConfig{UseSystemProxy: true, HTTPProxyURL: "http://proxy.example:3128"}))

	tr, err := NewTransport(Options{})
	require.NoError(t, err)
	require.Equal(t, "environment", proxyOf(tr), "Options without NoEnvironmentProxy: Go's default, as http_proxy has it")
}

// TestClientConfigValidate: each bad key is named.
func TestClientConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    ClientConfig
		key  string
	}{
		{"timeout", ClientConfig{Timeout: morse.Duration(-time.Second)}, "timeout"},
		{"idle_conn_timeout", ClientConfig{IdleConnTimeout: morse.Duration(-time.Second)}, "idle_conn_timeout"},
		{"max_idle_conn", ClientConfig{MaxIdleConns: -1}, "max_idle_conn"},
		{"max_idle_conn_per_host", ClientConfig{MaxIdleConnsPerHost: -1}, "max_idle_conn_per_host"},
		{"response_timeout", ClientConfig{ResponseHeaderTimeout: morse.Duration(-time.Second)}, "response_timeout"},
		{"http_proxy_url", ClientConfig{HTTPProxyURL: "proxy.example"}, "http_proxy_url"},
		{"tls", ClientConfig{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.key == "" {
				tc.c.Cert = "cert.pem" // without tls_key
				tc.key = "tls_cert"
			}
			require.ErrorContains(t, tc.c.Validate(), tc.key+":")
			_, err := tc.c.Client()
			require.ErrorContains(t, err, tc.key+":", "Client checks the same")
		})
	}
	require.NoError(t, (&ClientConfig{}).Validate())
}
