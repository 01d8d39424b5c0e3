package influxquery_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/influxquery"
	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
)

// TestQueryRequests checks what the client puts on the wire, through a recorder in front of a
// real InfluxDB 1.6.7, which must answer every request.
func TestQueryRequests(t *testing.T) {
	t.Parallel()
	in := testserver.StartInfluxDB(t, testserver.InfluxOptions{})
	in.Exec(t, "CREATE DATABASE reqdb")
	rec := testserver.StartRecorder(t, in.URL())
	c, err := influxquery.NewClient(influxquery.ClientOptions{
		URL: rec.URL(), Username: "u", Password: "p-secret", UserAgent: "morse-test/2",
		Headers: map[string]string{"X-Special": "yes", "Host": "db.example", "Content-Type": "text/plain"},
	})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	for _, tc := range []struct {
		name     string
		opts     []influxquery.QueryOption
		wantForm url.Values
		accept   string
	}{
		{"defaults", nil, url.Values{"q": {"SHOW DATABASES"}}, "application/x-msgpack"},
		{"database, retention policy, epoch and chunks", []influxquery.QueryOption{
			influxquery.WithDatabase("reqdb"), influxquery.WithRetentionPolicy("autogen"),
			influxquery.WithEpoch("ms"), influxquery.WithChunked(100),
		}, url.Values{"q": {"SHOW DATABASES"}, "db": {"reqdb"}, "rp": {"autogen"}, "epoch": {"ms"},
			"chunked": {"true"}, "chunk_size": {"100"}}, "application/x-msgpack"},
		{"JSON", []influxquery.QueryOption{influxquery.WithFormat(influxquery.FormatJSON)},
			url.Values{"q": {"SHOW DATABASES"}}, "application/json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(rec.Requests())
			resp, err := c.Query(testutil.Context(t), "SHOW DATABASES", tc.opts...)
			require.NoError(t, err)
			require.Equal(t, "databases", resp.Results[0].Series[0].Name)
			reqs := rec.Requests()
			require.Len(t, reqs, before+1)
			r := reqs[before]
			require.Equal(t, http.MethodPost, r.Method, "POST runs any statement and keeps it out of URLs")
			require.Equal(t, "/query", r.URL.Path)
			require.Empty(t, r.URL.RawQuery)
			require.Equal(t, "application/x-www-form-urlencoded", r.Header.Get("Content-Type"))
			require.NoError(t, r.ParseForm())
			require.Equal(t, tc.wantForm, r.PostForm)
			require.Equal(t, tc.accept, r.Header.Get("Accept"))
			require.Equal(t, "morse-test/2", r.Header.Get("User-Agent"))
			require.Equal(t, "yes", r.Header.Get("X-Special"))
			require.Equal(t, "db.example", r.Host)
			user, pass, ok := r.BasicAuth()
			require.True(t, ok)
			require.Equal(t, "u", user)
			require.Equal(t, "p-secret", pass)
		})
	}
}

// TestRefusalKeepsTheText covers answers that no InfluxDB gives but a proxy in front of one
// does: an error page, or nothing at all. The server's own error documents are checked
// against the real server in TestQueryClient.
func TestRefusalKeepsTheText(t *testing.T) {
	for _, tc := range []struct {
		name        string
		status      int
		contentType string
		body        string
		want        string
	}{
		{"an HTML page", http.StatusBadGateway, "text/html", "<html>bad gateway</html>\n", "<html>bad gateway</html>"},
		{"plain text", http.StatusTooManyRequests, "text/plain", "slow down", "slow down"},
		{"no body", http.StatusServiceUnavailable, "", "", "503 Service Unavailable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", tc.contentType)
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}))
			t.Cleanup(srv.Close)
			c, err := influxquery.NewClient(influxquery.ClientOptions{URL: srv.URL})
			require.NoError(t, err)
			t.Cleanup(c.Close)
			resp, err := c.Query(testutil.Context(t), "SHOW DATABASES")
			require.Nil(t, resp)
			var qe *influxquery.QueryError
			require.ErrorAs(t, err, &qe)
			require.Equal(t, &influxquery.QueryError{StatusCode: tc.status, Message: tc.want}, qe)
			require.EqualError(t, err, "influxdb query: "+tc.want)
		})
	}
}

// TestNewClientRefusesBadURLs checks the URL before any request, and never echoes a password.
func TestNewClientRefusesBadURLs(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"udp://127.0.0.1:8089", "the scheme must be http or https"},
		{"http://", "no host"},
		{"http://admin:hunter2@127.0.0.1:8086", "put credentials in Username and Password"},
		{"https://admin:hunter2@", "put credentials in Username and Password"},
		{"http://[::1", "missing ']'"},
	} {
		_, err := influxquery.NewClient(influxquery.ClientOptions{URL: tc.url})
		require.ErrorContains(t, err, tc.want, tc.url)
		require.NotContains(t, err.Error(), "hunter2")
	}
}
