package http_response

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

var golden = filepath.Join("testdata", "http_response.golden")

// probe runs the plugin once on u with the golden config plus config, and returns the
// metric's tags and fields after checking it against the golden list.
func probe(t *testing.T, u, config string) (map[string]string, map[string]any) {
	t.Helper()
	h := New()
	// The golden config, less the keys that config sets again.
	var base []string
	for line := range strings.Lines(testutil.LoadGolden(t, golden).Config) {
		key, _, _ := strings.Cut(line, "=")
		if !strings.Contains(config, strings.TrimSpace(key)+" =") {
			base = append(base, line)
		}
	}
	md, err := toml.Decode(strings.Join(base, "")+"\nurls = [\""+u+"\"]\n"+config, h)
	require.NoError(t, err)
	require.Empty(t, md.Undecoded())
	require.NoError(t, h.Validate())
	require.NoError(t, h.Init())
	acc := &testutil.Accumulator{}
	require.NoError(t, h.Gather(testutil.Context(t), acc))
	require.Empty(t, acc.Errors())
	require.Equal(t, 1, acc.NMetrics())
	require.Empty(t, testutil.LoadGolden(t, golden).Check(acc.Metrics()))
	m := acc.Metrics()[0]
	return testutil.TagsOf(m), testutil.FieldsOf(m)
}

func requireResult(t *testing.T, fields map[string]any, tags map[string]string, result string, code int64) {
	t.Helper()
	require.Equal(t, result, tags["result"])
	require.Equal(t, result, fields["result_type"])
	require.Equal(t, code, fields["result_code"])
}

func TestSuccessAndMismatches(t *testing.T) {
	ngx := testserver.SharedNginx(t)
	u := ngx.URL("/index.html")
	tags, fields := probe(t, u, "")
	require.Equal(t, map[string]string{"server": u, "method": "GET", "status_code": "200", "result": "success",
		"content_type": "text/html"}, tags)
	requireResult(t, fields, tags, "success", 0)
	require.Equal(t, int64(200), fields["http_response_code"])
	require.Equal(t, int64(len(testserver.NginxFiles["index.html"])), fields["content_length"])
	require.Equal(t, int64(1), fields["response_string_match"])
	require.Equal(t, int64(1), fields["response_status_code_match"])
	require.Greater(t, fields["response_time"].(float64), 0.0)

	tags, fields = probe(t, u, `response_body_field = "body"`)
	require.Equal(t, testserver.NginxFiles["index.html"], fields["body"])

	tags, fields = probe(t, ngx.URL("/metrics.json"), "")
	requireResult(t, fields, tags, "response_string_mismatch", 1)
	require.Equal(t, int64(0), fields["response_string_match"])

	tags, fields = probe(t, ngx.URL("/status/404"), `response_string_match = "not here"`)
	requireResult(t, fields, tags, "response_status_code_mismatch", 6)
	require.Equal(t, "404", tags["status_code"])
	require.Equal(t, int64(0), fields["response_status_code_match"])

	tags, fields = probe(t, u, `response_body_max_size = "8B"`)
	requireResult(t, fields, tags, "body_read_error", 2)
	require.Equal(t, int64(9), fields["content_length"], "the limit and one byte are read")
}

func TestRedirects(t *testing.T) {
	ngx := testserver.SharedNginx(t)
	tags, _ := probe(t, ngx.URL("/redirect"), `response_status_code = 302`+"\n"+`response_string_match = ""`)
	require.Equal(t, "302", tags["status_code"])
	tags, fields := probe(t, ngx.URL("/redirect"), "follow_redirects = true")
	requireResult(t, fields, tags, "success", 0)
	require.Equal(t, "200", tags["status_code"])
}

func TestFailures(t *testing.T) {
	ngx := testserver.SharedNginx(t)
	tags, fields := probe(t, ngx.URL("/slow"), `response_timeout = "1s"`)
	requireResult(t, fields, tags, "timeout", 4)
	require.NotContains(t, fields, "response_time")

	tags, fields = probe(t, "http://"+testutil.FreeAddr(t)+"/", "")
	requireResult(t, fields, tags, "connection_failed", 3)
	require.Len(t, fields, 2)

	// The system's CAs do not know the test CA.
	tags, fields = probe(t, ngx.HTTPSURL("/index.html"), "")
	requireResult(t, fields, tags, "connection_failed", 3)
}

func TestTLSAuthAndBody(t *testing.T) {
	ngx := testserver.SharedNginx(t)
	tags, fields := probe(t, ngx.HTTPSURL("/index.html"), `tls_ca = "`+ngx.Certs.CA+`"`)
	requireResult(t, fields, tags, "success", 0)

	bearer := ngx.URL("/auth/bearer/index.html")
	tags, _ = probe(t, bearer, "")
	require.Equal(t, "401", tags["status_code"])
	tags, _ = probe(t, bearer, `token = "`+testserver.NginxBearerToken+`"`)
	require.Equal(t, "200", tags["status_code"])
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(testserver.NginxBearerToken+"\n"), 0o600))
	tags, _ = probe(t, bearer, `bearer_token = "`+tokenFile+`"`)
	require.Equal(t, "200", tags["status_code"])
	tags, _ = probe(t, ngx.URL("/auth/basic/index.html"), `username = "`+testserver.NginxUser+`"`+"\n"+`password = "`+testserver.NginxPassword+`"`)
	require.Equal(t, "200", tags["status_code"])

	tags, _ = probe(t, ngx.URL("/post"), `method = "POST"
body_form = {"a" = ["1", "2"]}
headers = {"X-Special" = "probe"}
response_string_match = "posted"`)
	require.Equal(t, "POST", tags["method"])
	require.Equal(t, "success", tags["result"])
	// nginx logs a request once it has answered it, so the line may come a moment later.
	require.Eventually(t, func() bool { return slices.Contains(ngx.AccessLog(t), "POST /post auth=- special=probe body=a=1&a=2") },
		10*time.Second, 10*time.Millisecond, "nginx logged the request with its body and header")
}

func TestValidateReportsEveryProblem(t *testing.T) {
	h := New()
	h.URLs = []string{"ftp://host/"}
	h.BearerToken, h.Token, h.ResponseStringMatch = "/f", "t", "("
	h.CookieAuth.URL = "http://127.0.0.1/auth"
	err := h.Validate()
	for _, s := range []string{"urls:", "token:", "response_string_match:", "cookie_auth_url:"} {
		require.ErrorContains(t, err, s)
	}
}
