package prometheus

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
)

// gather builds an input from a TOML table, scrapes once, and returns what it added and
// the errors it reported.
func gather(t *testing.T, toml string) ([]morse.Metric, []error) {
	t.Helper()
	p := New()
	testutil.Decode(t, toml, p)
	require.NoError(t, p.Init())
	acc := &testutil.Accumulator{}
	require.NoError(t, p.Gather(context.Background(), acc))
	return acc.Metrics(), acc.Errors()
}

// TestBasicAuthAndTLS scrapes a real node_exporter that serves HTTPS only and asks for
// basic auth: with the right credentials and its CA (tls_ca) the families arrive, tagged
// with the URL; a wrong password is the exporter's 401, a CA not given is the handshake's
// refusal, insecure_skip_verify takes the certificate unchecked, and a bearer token, which
// takes precedence over basic auth as in Telegraf, sends no basic auth.
func TestBasicAuthAndTLS(t *testing.T) {
	node := testserver.StartSecureNodeExporter(t)
	base := `urls = ["` + node.URL() + `"]
username = "` + node.User + `"
`
	ms, errs := gather(t, base+`password = "`+node.Password+`"
tls_ca = "`+node.Certs.CA+`"`)
	require.Empty(t, errs)
	require.NotEmpty(t, ms)
	names := map[string]bool{}
	for _, m := range ms {
		names[m.Name()] = true
		u, _ := m.Tag("url")
		require.Equal(t, node.URL(), u)
	}
	require.True(t, names["node_load1"], "node_exporter's loadavg collector: %v", names)

	for _, c := range []struct{ name, toml, err string }{
		{"wrong password", base + `password = "wrong"
tls_ca = "` + node.Certs.CA + `"`, `returned HTTP status "401 Unauthorized"`},
		{"no CA", base + `password = "` + node.Password + `"`, "certificate signed by unknown authority"},
		{"bearer first", base + `password = "` + node.Password + `"
bearer_token_string = "tok"
tls_ca = "` + node.Certs.CA + `"`, `returned HTTP status "401 Unauthorized"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			ms, errs := gather(t, c.toml)
			require.Empty(t, ms)
			require.Len(t, errs, 1)
			require.ErrorContains(t, errs[0], c.err)
		})
	}
	t.Run("insecure_skip_verify", func(t *testing.T) {
		ms, errs := gather(t, base+`password = "`+node.Password+`"
insecure_skip_verify = true`)
		require.Empty(t, errs)
		require.NotEmpty(t, ms)
	})
}

// TestBearerToken: bearer_token_string is sent as is; bearer_token is a file, read at every
// scrape (a rotated token is used at the next one) and trimmed of its newline. node_exporter
// takes no bearer token, so the server here is the text exposition behind a check of the
// Authorization header, nothing more.
func TestBearerToken(t *testing.T) {
	want := "Bearer tok-1"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != want {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte("# TYPE up gauge\nup 1\n"))
	}))
	t.Cleanup(srv.Close)
	url := `urls = ["` + srv.URL + `/metrics"]` + "\n"

	ms, errs := gather(t, url+`bearer_token_string = "tok-1"`)
	require.Empty(t, errs)
	require.Len(t, ms, 1)
	_, errs = gather(t, url+`bearer_token_string = "tok-2"`)
	require.Len(t, errs, 1)
	require.ErrorContains(t, errs[0], "401")

	file := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(file, []byte("tok-1\n"), 0o600))
	p := New()
	testutil.Decode(t, url+`bearer_token = "`+file+`"`, p)
	require.NoError(t, p.Init())
	acc := &testutil.Accumulator{}
	require.NoError(t, p.Gather(context.Background(), acc))
	require.Empty(t, acc.Errors())
	require.Len(t, acc.Metrics(), 1)

	want = "Bearer tok-2" // the server rotates the token, and so does the file
	require.NoError(t, p.Gather(context.Background(), acc))
	require.Len(t, acc.Errors(), 1, "the old token is refused")
	require.NoError(t, os.WriteFile(file, []byte("tok-2\n"), 0o600))
	require.NoError(t, p.Gather(context.Background(), acc))
	require.Len(t, acc.Errors(), 1, "the file is read again at the next scrape")
	require.Len(t, acc.Metrics(), 2)

	require.NoError(t, os.Remove(file))
	require.NoError(t, p.Gather(context.Background(), acc))
	require.Len(t, acc.Errors(), 2)
	require.ErrorContains(t, acc.Errors()[1], "reading bearer_token")
}
