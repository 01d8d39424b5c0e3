package influxdbv2

import (
	"bytes"
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

func TestRegistered(t *testing.T) {
	info, ok := morse.DefaultRegistry().Output("influxdb_v2")
	require.True(t, ok)
	require.Equal(t, Description, info.Description)
	require.Contains(t, info.SampleConfig, "\n[[outputs.influxdb_v2]]\n")
	out, ok := info.New().(*InfluxDBv2)
	require.True(t, ok)
	require.Equal(t, New(), out)
}

func TestDefaults(t *testing.T) {
	o := New()
	require.Equal(t, 5*time.Second, time.Duration(o.Timeout))
	require.Equal(t, "gzip", o.ContentEncoding, "gzip by default, as in Telegraf")
	require.Equal(t, []string{DefaultURL}, o.urls())
	require.Equal(t, 4, o.MaxConcurrentWrites())
	require.True(t, o.WritesLines())
	o.ConcurrentWrites = 1
	require.Equal(t, 1, o.MaxConcurrentWrites())
	require.NoError(t, o.Validate(), "the defaults are valid: VictoriaMetrics needs no bucket")
}

// decode reads a config text into an output, refusing unknown keys as morse's loader does.
func decode(t *testing.T, text string) *InfluxDBv2 {
	t.Helper()
	return testutil.DecodeTable(t, text, "outputs", "influxdb_v2", New())
}

// TestSampleConfig decodes the sample, then the sample with every option uncommented.
func TestSampleConfig(t *testing.T) {
	o := decode(t, sampleConfig)
	require.Equal(t, []string{DefaultURL}, o.URLs)
	require.Equal(t, "gzip", o.ContentEncoding)

	option := regexp.MustCompile(`(?m)^  # ([a-z_]+ = .*)$`)
	all := option.ReplaceAllString(sampleConfig, "  $1")
	o = decode(t, all)
	require.Equal(t, map[string]string{"X-Special-Header": "Special-Value"}, o.HTTPHeaders)
	require.Equal(t, "/etc/morse/ca.pem", o.CA)
	require.Equal(t, "influxdb.example.com", o.ServerName)
	require.Equal(t, RateLimit(0), o.RateLimit, `"unlimited"`)
	require.NoError(t, o.Validate())
}

// TestTelegrafConfig decodes a Telegraf [[outputs.influxdb_v2]] table, every key Telegraf's.
func TestTelegrafConfig(t *testing.T) {
	o := decode(t, `
[[outputs.influxdb_v2]]
  urls = ["https://eu-central-1-1.aws.cloud2.influxdata.com", "unix:///run/influxdb.sock"]
  local_address = "127.0.0.1"
  token = "tok"
  organization = "acme"
  bucket = "metrics"
  bucket_tag = "bucket"
  exclude_bucket_tag = true
  timeout = "10s"
  http_headers = {"X-Tenant" = "a"}
  http_proxy = "http://proxy.example:3128"
  user_agent = "telegraf"
  content_encoding = "identity"
  influx_uint_support = true
  influx_omit_timestamp = true
  ping_timeout = "15s"
  read_idle_timeout = "30s"
  tls_ca = "/etc/telegraf/ca.pem"
  tls_server_name = "db.example"
  tls_min_version = "TLS13"
  tls_renegotiation_method = "never"
  insecure_skip_verify = false
  rate_limit = "5MB"
  rate_limit_period = "5m"
  concurrent_writes = 2
`)
	require.NoError(t, o.Validate())
	require.Equal(t, morse.Secret("tok"), o.Token)
	require.Equal(t, RateLimit(5_000_000), o.RateLimit)
	require.Equal(t, 2, o.MaxConcurrentWrites())
	require.True(t, o.omitTimestamp())
	require.False(t, o.WritesLines())
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*InfluxDBv2)
		key  string // the key the error names; "" for none
	}{
		{"ok", func(*InfluxDBv2) {}, ""},
		{"bucket_tag alone", func(o *InfluxDBv2) { o.Bucket = ""; o.BucketTag = "b" }, ""},
		{"no bucket", func(o *InfluxDBv2) { o.Bucket = "" }, ""},
		{"udp url", func(o *InfluxDBv2) { o.URLs = []string{"udp://127.0.0.1:8089"} }, "urls"},
		{"no host", func(o *InfluxDBv2) { o.URLs = []string{"http://"} }, "urls"},
		{"credentials in url", func(o *InfluxDBv2) { o.URLs = []string{"http://u:p@h:8086"} }, "urls"},
		{"unix without path", func(o *InfluxDBv2) { o.URLs = []string{"unix://"} }, "urls"},
		{"encoding", func(o *InfluxDBv2) { o.ContentEncoding = "br" }, "content_encoding"},
		{"timeout", func(o *InfluxDBv2) { o.Timeout = -1 }, "timeout"},
		{"proxy", func(o *InfluxDBv2) { o.HTTPProxy = "::" }, "http_proxy"},
		{"header", func(o *InfluxDBv2) { o.HTTPHeaders = map[string]string{"a b": "c"} }, "http_headers"},
		{"local address", func(o *InfluxDBv2) { o.LocalAddress = "not an ip:x" }, "local_address"},
		{"ping", func(o *InfluxDBv2) { o.PingTimeout = -1 }, "ping_timeout"},
		{"concurrency", func(o *InfluxDBv2) { o.ConcurrentWrites = -1 }, "concurrent_writes"},
		{"tls pair", func(o *InfluxDBv2) { o.Cert = "c.pem" }, "tls_cert"},
		{"tls key password", func(o *InfluxDBv2) { o.Cert, o.Key, o.KeyPassword = "c", "k", "pw" }, "tls_key_pwd"},
		{"tls version", func(o *InfluxDBv2) { o.MinVersion = "TLS11" }, "tls_min_version"},
		{"tls suites", func(o *InfluxDBv2) { o.CipherSuites = []string{"TLS_RSA_WITH_RC4_128_SHA"} }, "tls_cipher_suites"},
		{"tls renegotiation", func(o *InfluxDBv2) { o.RenegotiationMethod = "always" }, "tls_renegotiation_method"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := New()
			o.Bucket = "b"
			tc.mod(o)
			err := o.Validate()
			if tc.key == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.key+":")
		})
	}
}

// TestInitWarnsOnce: rate_limit is accepted and said, once, to have no effect; an empty
// bucket, which only servers that ignore it accept, is said once too.
func TestInitWarnsOnce(t *testing.T) {
	var logs bytes.Buffer
	o := New()
	o.RateLimit, o.RateLimitPeriod = 1000, morse.Duration(time.Minute)
	o.SetLogger(slog.New(slog.NewTextHandler(&logs, nil)))
	require.NoError(t, o.Init())
	require.NoError(t, o.Init())
	require.Equal(t, 1, strings.Count(logs.String(), "rate_limit and rate_limit_period have no effect"))
	require.Equal(t, 1, strings.Count(logs.String(), "bucket is empty"))

	logs.Reset()
	quietOne := New()
	quietOne.Bucket = "b"
	quietOne.SetLogger(slog.New(slog.NewTextHandler(&logs, nil)))
	require.NoError(t, quietOne.Init())
	require.Empty(t, logs.String(), "nothing to say about the defaults with a bucket")
}

// TestTLS writes over https to a server whose certificate the test CA signed, with mutual
// TLS; without the CA the certificate is refused (verified by default), which is retryable.
func TestTLS(t *testing.T) {
	certs := testutil.NewCerts(t)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	cert, err := tls.LoadX509KeyPair(certs.ServerCert, certs.ServerKey)
	require.NoError(t, err)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequestClientCert, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	t.Cleanup(srv.Close)

	o := connected(t, srv.URL, func(o *InfluxDBv2) { o.CA, o.Cert, o.Key = certs.CA, certs.ClientCert, certs.ClientKey })
	require.NoError(t, o.Write(testutil.Context(t), numbered(t, 3)))

	untrusted := connected(t, srv.URL)
	err = untrusted.Write(testutil.Context(t), numbered(t, 3))
	require.Equal(t, morse.OutcomeRetry, morse.Classify(err))
	require.ErrorContains(t, err, "certificate")

	o2 := New()
	o2.Bucket, o2.URLs, o2.CA = "b", []string{srv.URL}, filepath.Join(t.TempDir(), "missing.pem")
	require.ErrorContains(t, o2.Init(), "tls_ca", "a TLS file that cannot be read stops the start")
}

// TestUnixSocket writes to a server on a unix socket (unix:///path), as Telegraf can.
func TestUnixSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "influx.sock")
	ln, err := net.Listen("unix", path)
	require.NoError(t, err)
	var st store
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.Equal(t, "/api/v2/write", r.URL.Path)
		require.Equal(t, "b", r.URL.Query().Get("bucket"))
		st.add(bodyLines(t, r)...)
		w.WriteHeader(http.StatusNoContent)
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	o := connected(t, "unix://"+path)
	batch := numbered(t, 5)
	require.NoError(t, o.Write(testutil.Context(t), batch))
	require.Equal(t, linesOf(t, batch), st.distinct())
}

// TestHeadersAndPath: the URL's path prefix, the configured headers (Host included), the user
// agent and the organization reach the server.
func TestHeadersAndPath(t *testing.T) {
	seen := make(chan *http.Request, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Clone(r.Context())
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	o := connected(t, srv.URL+"/influx", func(o *InfluxDBv2) {
		o.Organization, o.Bucket = "my org", "my/bucket"
		o.HTTPHeaders = map[string]string{"X-Tenant": "t1", "Host": "db.example"}
		o.UserAgent = "agent/1"
	})
	require.NoError(t, o.Write(testutil.Context(t), numbered(t, 1)))
	r := <-seen
	require.Equal(t, "/influx/api/v2/write", r.URL.Path)
	require.Equal(t, "my org", r.URL.Query().Get("org"))
	require.Equal(t, "my/bucket", r.URL.Query().Get("bucket"))
	require.Equal(t, "t1", r.Header.Get("X-Tenant"))
	require.Equal(t, "db.example", r.Host)
	require.Equal(t, "agent/1", r.UserAgent())
	require.Equal(t, "text/plain; charset=utf-8", r.Header.Get("Content-Type"))
	require.Equal(t, "gzip", r.Header.Get("Content-Encoding"))
	require.Empty(t, r.Header.Get("Authorization"), "no token, no header")
}

// TestHTTP2HealthCheck: ping_timeout and read_idle_timeout configure Go's HTTP/2 pings.
func TestHTTP2HealthCheck(t *testing.T) {
	o := connected(t, "https://127.0.0.1:1", func(o *InfluxDBv2) {
		o.PingTimeout, o.ReadIdleTimeout = morse.Duration(15*time.Second), morse.Duration(30*time.Second)
	})
	tr := o.targets[0].client.Transport.(*http.Transport)
	require.Equal(t, 30*time.Second, tr.HTTP2.SendPingTimeout)
	require.Equal(t, 15*time.Second, tr.HTTP2.PingTimeout)
	require.Nil(t, connected(t, "http://127.0.0.1:1").targets[0].client.Transport.(*http.Transport).HTTP2)
}

// TestLocalAddress: connections leave from local_address.
func TestLocalAddress(t *testing.T) {
	from := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		from <- r.RemoteAddr
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	o := connected(t, srv.URL, func(o *InfluxDBv2) { o.LocalAddress = "127.0.0.1" })
	require.NoError(t, o.Write(testutil.Context(t), numbered(t, 1)))
	host, _, err := net.SplitHostPort(<-from)
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1", host)
}
