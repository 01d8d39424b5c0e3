package http

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testserver.StopSharedNginx()
	os.Exit(code)
}

// gather decodes config (Telegraf's keys) into the plugin, validates, initialises and
// gathers once, then stops it.
func gather(t *testing.T, config string) *testutil.Accumulator {
	t.Helper()
	h := New()
	md, err := toml.Decode(config, h)
	require.NoError(t, err)
	require.Empty(t, md.Undecoded())
	require.NoError(t, h.Validate())
	require.NoError(t, h.Init())
	defer h.Stop()
	acc := &testutil.Accumulator{}
	require.NoError(t, h.Gather(testutil.Context(t), acc))
	return acc
}

// want are the metrics of nginx's metrics.influx with the url tag.
func want(u string) []string {
	return []string{
		"nginx_test,source=file,url=" + u + " value=integer:1,ok=boolean:true",
		"nginx_test,source=file,url=" + u + " value=integer:2",
	}
}

// lines writes metrics as Canon does, without the time.
func lines(acc *testutil.Accumulator) []string {
	out := testutil.Canon(acc.Metrics())
	for i, l := range out {
		out[i] = l[:strings.LastIndexByte(l, ' ')]
	}
	return out
}

func TestGetsAndParsesFromNginx(t *testing.T) {
	ngx := testserver.SharedNginx(t)
	u := ngx.URL("/metrics.influx")
	acc := gather(t, `urls = ["`+u+`"]`)
	require.Empty(t, acc.Errors())
	require.Equal(t, want(u), lines(acc))
}

func TestAuthAgainstNginx(t *testing.T) {
	ngx := testserver.SharedNginx(t)
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(testserver.NginxBearerToken+"\n"), 0o600))
	basic, bearer, oauth := ngx.URL("/auth/basic/metrics.influx"), ngx.URL("/auth/bearer/metrics.influx"), ngx.URL("/auth/oauth/metrics.influx")
	for name, tc := range map[string]struct{ url, config string }{
		"basic":      {basic, `username = "` + testserver.NginxUser + `"` + "\n" + `password = "` + testserver.NginxPassword + `"`},
		"token":      {bearer, `token = "` + testserver.NginxBearerToken + `"`},
		"token_file": {bearer, `token_file = "` + tokenFile + `"`},
		"oauth2": {oauth, `client_id = "` + testserver.NginxClientID + `"` + "\n" + `client_secret = "` + testserver.NginxClientSecret +
			`"` + "\n" + `token_url = "` + ngx.URL("/oauth/token") + `"` + "\n" + `scopes = ["metrics"]`},
	} {
		t.Run(name, func(t *testing.T) {
			acc := gather(t, `urls = ["`+tc.url+`"]`+"\n"+tc.config)
			require.Empty(t, acc.Errors())
			require.Equal(t, want(tc.url), lines(acc))
		})
	}
	t.Run("refused", func(t *testing.T) {
		acc := gather(t, `urls = ["`+basic+`", "`+bearer+`"]`+"\n"+`username = "morse"`+"\n"+`password = "wrong"`)
		require.Zero(t, acc.NMetrics())
		require.Len(t, acc.Errors(), 2)
		for _, err := range acc.Errors() {
			require.ErrorContains(t, err, "received status code 401 (Unauthorized), expected any value out of [200]")
		}
	})
}

func TestTLSAgainstNginx(t *testing.T) {
	ngx := testserver.SharedNginx(t)
	c := ngx.Certs
	u := ngx.HTTPSURL("/mtls")
	acc := gather(t, `urls = ["`+u+`"]`+"\n"+`tls_ca = "`+c.CA+`"`+"\n"+`tls_cert = "`+c.ClientCert+`"`+"\n"+`tls_key = "`+c.ClientKey+`"`)
	require.Empty(t, acc.Errors())
	require.Equal(t, []string{"mtls_test,url=" + u + " value=integer:1"}, lines(acc))

	acc = gather(t, `urls = ["`+u+`"]`+"\n"+`tls_ca = "`+c.CA+`"`)
	require.Len(t, acc.Errors(), 1)
	require.ErrorContains(t, acc.Errors()[0], "received status code 403")

	acc = gather(t, `urls = ["`+ngx.HTTPSURL("/metrics.influx")+`"]`) // the system's CAs do not know the test CA
	require.Len(t, acc.Errors(), 1)
	require.ErrorContains(t, acc.Errors()[0], "certificate signed by unknown authority")
}

// TestPostBodyAndHeaders: the body and the headers reach nginx, which logs them.
func TestPostBodyAndHeaders(t *testing.T) {
	ngx := testserver.SharedNginx(t)
	u := ngx.URL("/post")
	acc := gather(t, `urls = ["`+u+`"]
method = "POST"
body = "probe=1"
headers = {"X-Special" = "from-morse"}`)
	require.Empty(t, acc.Errors())
	require.Equal(t, []string{"posted,url=" + u + " value=integer:1"}, lines(acc))
	// nginx logs a request once it has answered it, so the line may come a moment later.
	require.Eventually(t, func() bool {
		return slices.Contains(ngx.AccessLog(t), "POST /post auth=- special=from-morse body=probe=1")
	},
		10*time.Second, 10*time.Millisecond, "nginx logged the request with its body and header")
}

func TestStatusCodesAndTimeout(t *testing.T) {
	ngx := testserver.SharedNginx(t)
	acc := gather(t, `urls = ["`+ngx.URL("/status/404")+`"]`)
	require.Len(t, acc.Errors(), 1)
	require.ErrorContains(t, acc.Errors()[0], "received status code 404 (Not Found), expected any value out of [200]")

	// nginx answers 500 with a body that is not line protocol: accepted as a success
	// code, its body is parsed and refused.
	acc = gather(t, `urls = ["`+ngx.URL("/status/500")+`"]`+"\nsuccess_status_codes = [200, 500]")
	require.Len(t, acc.Errors(), 1)
	require.ErrorContains(t, acc.Errors()[0], "parsing metrics failed, 1 entries refused")

	acc = gather(t, `urls = ["`+ngx.URL("/slow")+`"]`+"\ntimeout = \"300ms\"")
	require.Len(t, acc.Errors(), 1)
	require.ErrorContains(t, acc.Errors()[0], "Client.Timeout exceeded")
}

// TestMalformedEntriesKeepTheRest: a body with a malformed line gives the valid lines and
// one error that counts the refused one.
func TestMalformedEntriesKeepTheRest(t *testing.T) {
	ngx := testserver.SharedNginx(t)
	u := ngx.URL("/bad.influx")
	acc := gather(t, `urls = ["`+u+`"]`)
	require.Len(t, acc.Errors(), 1)
	require.ErrorContains(t, acc.Errors()[0], "[url="+u+"]: parsing metrics failed, 1 entries refused")
	require.Equal(t, []string{"nginx_test,url=" + u + " value=integer:1", "nginx_test,url=" + u + " value=integer:3"}, lines(acc))
}

func TestJSONFormat(t *testing.T) {
	ngx := testserver.SharedNginx(t)
	u := ngx.URL("/metrics.json")
	acc := gather(t, `urls = ["`+u+`"]
data_format = "json"
tag_keys = ["name"]`)
	require.Empty(t, acc.Errors())
	require.Equal(t, []string{"http,name=from json,url=" + u + " value=float:42"}, lines(acc))
}

func TestValidateReportsEveryProblem(t *testing.T) {
	h := New()
	h.URLs = []string{"http+unix:///run/podman.sock:/x", "ftp://host/"}
	h.Token, h.TokenFile, h.ContentEncoding = "t", "/f", "br"
	h.CookieAuth.URL = "http://127.0.0.1/auth"
	h.DataFormat = "nope"
	err := h.Validate()
	for _, s := range []string{"unix sockets are not supported", "is not an http:// or https:// URL", "token_file:",
		"content_encoding:", "cookie_auth_url:", "data_format"} {
		require.ErrorContains(t, err, s)
	}
}
