package influxdblistener

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
)

// batch builds n lines with every field type and the metrics they must become, with the
// tags that the listener adds.
func batch(endpoint string, n int, extra ...morse.Tag) (body []byte, want []morse.Metric) {
	const base = int64(1700000000) // seconds: the writes say precision=s
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "lp,endpoint=%s,seq=%d v=%di,f=%d.25,s=\"x %d\",b=false,u=%du %d\n", endpoint, i, i, i, i, i, base+int64(i))
		tags := append([]morse.Tag{{Key: "endpoint", Value: endpoint}, {Key: "seq", Value: fmt.Sprint(i)}}, extra...)
		want = append(want, morse.NewMetric("lp", tags, []morse.Field{
			{Key: "v", Value: morse.Int(int64(i))}, {Key: "f", Value: morse.Float(float64(i) + 0.25)},
			{Key: "s", Value: morse.String(fmt.Sprintf("x %d", i))}, {Key: "b", Value: morse.Bool(false)},
			{Key: "u", Value: morse.Uint(uint64(i))},
		}, time.Unix(base+int64(i), 0).UTC()))
	}
	return []byte(b.String()), want
}

// TestEachEndpointDeliversExactlyTheLinesSent writes through v1 and v2 into a whole agent,
// and compares what the output received, after the agent stopped and flushed, with what was
// sent: the database and retention policy become tags, and precision=s is applied.
func TestEachEndpointDeliversExactlyTheLinesSent(t *testing.T) {
	cases := []struct {
		name, path string
		gzip       bool
		// lines runs the agent with an output that takes line metrics, and without the
		// database and retention policy tags, which would make the listener parse.
		lines bool
	}{
		{"v1", "/write?db=telegraf&rp=weekly&precision=s", false, false},
		{"v2", "/api/v2/write?org=o&bucket=telegraf/weekly&precision=s", true, false},
		{"v1/line-metrics", "/write?db=telegraf&rp=weekly&precision=s", false, true},
		{"v2/line-metrics", "/api/v2/write?org=o&bucket=telegraf/weekly&precision=s", true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := newListener(t, func(l *InfluxDBListener) { l.DatabaseTag, l.RetentionPolicyTag = "database", "rp" })
			tags := []morse.Tag{{Key: "database", Value: "telegraf"}, {Key: "rp", Value: "weekly"}}
			run := testserver.RunListener
			if tc.lines {
				in = newListener(t)
				tags, run = nil, testserver.RunLineListener
			}
			agent := run(t, "influxdb_listener", in)
			c := newClient(t, agent.Addr, nil)
			var want []morse.Metric
			for part := range 3 {
				body, w := batch(fmt.Sprintf("%s-%d", tc.name, part), 100, tags...)
				var hdr []string
				if tc.gzip {
					body, hdr = gzipped(body), []string{"Content-Encoding", "gzip"}
				}
				a := c.must("POST", tc.path, body, hdr...)
				require.Equal(t, http.StatusNoContent, a.status, a.body)
				require.Empty(t, a.body)
				want = append(want, w...)
			}
			agent.Out.Wait(t, len(want), waitFor)
			agent.Stop(t)
			require.Equal(t, testutil.Canon(want), testutil.Canon(agent.Out.Metrics()))
			if tc.lines {
				require.Equal(t, len(want), agent.Out.LineMetrics(), "every line arrives as a line metric")
			} else {
				require.Zero(t, agent.Out.LineMetrics())
			}
		})
	}
}

// TestMixedGoodAndBadLines answers a write with good and bad lines with InfluxDB's 400 and
// the exact body, and delivers the good lines exactly once.
func TestMixedGoodAndBadLines(t *testing.T) {
	body, err := os.ReadFile("testdata/mixed.lp")
	require.NoError(t, err)
	wantBody, err := os.ReadFile("testdata/mixed.response.json")
	require.NoError(t, err)

	in := newListener(t)
	agent := testserver.RunListener(t, "influxdb_listener", in)
	c := newClient(t, agent.Addr, nil)
	a := c.must("POST", "/write?db=x", body)
	require.Equal(t, http.StatusBadRequest, a.status)
	require.Equal(t, string(wantBody), a.body)
	require.Equal(t, "application/json", a.header.Get("Content-Type"))
	require.Equal(t, strings.TrimSuffix(strings.TrimPrefix(string(wantBody), `{"error":"`), "\"}\n"),
		a.header.Get("X-Influxdb-Error"))

	only := c.must("POST", "/write", []byte("a v=1 x\nb\n"))
	require.Equal(t, http.StatusBadRequest, only.status)
	require.Equal(t, errorBody("unable to parse 'a v=1 x': bad timestamp (line 1; 2 of 2 lines rejected)"), only.body)

	// mixed.lp has 2 bad lines of 6, and the second write 2 of 2.
	require.Equal(t, int64(2+2), in.c.parseErr.Get(), "every bad line is counted in parse_errors")

	agent.Out.Wait(t, 4, waitFor)
	agent.Stop(t)
	ns := func(i int64) time.Time { return time.Unix(0, 1700000000000000000+i).UTC() }
	host := []morse.Tag{{Key: "host", Value: "a"}}
	want := []morse.Metric{
		morse.NewMetric("cpu", host, []morse.Field{{Key: "usage", Value: morse.Float(1.5)}}, ns(0)),
		morse.NewMetric("mem", host, []morse.Field{{Key: "used", Value: morse.Int(10)}}, ns(2)),
		morse.NewMetric("disk", host, []morse.Field{{Key: "free", Value: morse.Uint(1)}, {Key: "total", Value: morse.Uint(2)}}, ns(3)),
		morse.NewMetric("net", host, []morse.Field{{Key: "bytes", Value: morse.Int(3)}, {Key: "up", Value: morse.Bool(true)},
			{Key: "name", Value: morse.String("eth0")}}, ns(5)),
	}
	require.Equal(t, testutil.Canon(want), testutil.Canon(agent.Out.Metrics()))
}

// TestParametersAndMethods checks the answers to bad parameters, methods and paths.
func TestParametersAndMethods(t *testing.T) {
	l := newListener(t)
	acc, st := start(t, l)
	c := newClient(t, l.Addr(), nil)
	cases := []struct {
		method, path string
		status       int
		body         string
	}{
		{"POST", "/write?precision=d", 400, errorBody(`invalid precision \"d\" (use n, u, ms, s, m or h)`)},
		{"POST", "/api/v2/write?bucket=b&precision=n", 400, errorBody(`invalid precision \"n\" (use ns, us, ms or s)`)},
		{"POST", "/api/v2/write?bucket=/rp", 404, errorBody(`bucket name \"/rp\" is in db/rp form but has an empty database`)},
		{"GET", "/write", 405, errorBody("http: method not allowed")},
		{"PUT", "/api/v2/write", 405, errorBody("http: method not allowed")},
		{"POST", "/ping", 405, errorBody("http: method not allowed")},
		{"GET", "/nowhere", 404, "404 page not found\n"},
	}
	for _, tc := range cases {
		a := c.must(tc.method, tc.path, []byte("m v=1\n"))
		require.Equal(t, tc.status, a.status, tc.path)
		require.Equal(t, tc.body, a.body, tc.path)
		require.Equal(t, version, a.header.Get("X-Influxdb-Version"))
	}
	a := c.must("POST", "/write", []byte("m v=1\n"), "Content-Encoding", "br")
	require.Equal(t, http.StatusUnsupportedMediaType, a.status)
	require.Equal(t, 0, acc.NMetrics(), "no refused write delivered anything")
	require.Equal(t, int64(len(cases)+1), st.Counter("requests_received").Get())
}

// TestPingHealthQuery checks the answers that clients probe before they write.
func TestPingHealthQuery(t *testing.T) {
	l := newListener(t)
	_, st := start(t, l)
	c := newClient(t, l.Addr(), nil)

	a := c.must("GET", "/ping", nil)
	require.Equal(t, http.StatusNoContent, a.status)
	require.Equal(t, version, a.header.Get("X-Influxdb-Version"))
	require.Equal(t, "OSS", a.header.Get("X-Influxdb-Build"))
	require.Empty(t, a.body)
	require.Equal(t, http.StatusNoContent, c.must("HEAD", "/ping", nil).status)

	a = c.must("GET", "/ping?verbose=true", nil)
	require.Equal(t, http.StatusOK, a.status)
	require.Equal(t, `{"version":"1.8.10"}`, a.body)

	a = c.must("GET", "/health", nil)
	require.Equal(t, http.StatusOK, a.status)
	require.Equal(t, `{"checks":[],"message":"ready for queries and writes","name":"influxdb","status":"pass","version":"1.8.10"}`, a.body)

	a = c.must("POST", "/query?q=CREATE+DATABASE+telegraf", nil)
	require.Equal(t, http.StatusOK, a.status)
	require.Equal(t, `{"results":[]}`, a.body)
	require.Equal(t, int64(3), st.Counter("pings_served").Get())
	require.Equal(t, int64(1), st.Counter("queries_served").Get())
}

// TestMaxLineSize rejects a line longer than max_line_size like a malformed one.
func TestMaxLineSize(t *testing.T) {
	l := newListener(t, func(l *InfluxDBListener) { l.MaxLineSize = 64 })
	acc, st := start(t, l)
	c := newClient(t, l.Addr(), nil)
	long := "m,t=" + strings.Repeat("x", 100) + " v=1 1"
	a := c.must("POST", "/write", []byte("m v=1 1\n"+long+"\nm v=2 2\n"))
	require.Equal(t, http.StatusBadRequest, a.status)
	require.Contains(t, a.body, `"partial write: line 2: unable to parse 'm,t=xxx`)
	require.Contains(t, a.body, `': line too long (more than 64 bytes) (1 of 3 lines rejected) dropped=1"}`)
	require.Equal(t, 2, acc.NMetrics())
	require.Equal(t, int64(1), st.Counter("lines_too_long").Get())
	require.Equal(t, int64(1), st.Counter("parse_errors").Get())
	require.Equal(t, morse.Size(1<<20), New().MaxLineSize, "the default bounds a line at 1 MiB")
}

// TestValidateNamesTheKey checks that each bad option is refused under its own key.
func TestValidateNamesTheKey(t *testing.T) {
	cases := []struct {
		key string
		set func(*InfluxDBListener)
	}{
		{"service_address", func(l *InfluxDBListener) { l.ServiceAddress = "localhost" }},
		{"read_timeout", func(l *InfluxDBListener) { l.ReadTimeout = -1 }},
		{"write_timeout", func(l *InfluxDBListener) { l.WriteTimeout = -1 }},
		{"max_body_size", func(l *InfluxDBListener) { l.MaxBodySize = -1 }},
		{"token_shared_secret", func(l *InfluxDBListener) { l.TokenSharedSecret = "s" }},
		{"token_shared_secret", func(l *InfluxDBListener) { l.TokenUsername = "u" }},
		{"token_shared_secret", func(l *InfluxDBListener) {
			l.TokenSharedSecret, l.TokenUsername, l.BasicUsername, l.BasicPassword = "s", "u", "bu", "bp"
		}},
		{"parser_type", func(l *InfluxDBListener) { l.ParserType = "fast" }},
		{"max_line_size", func(l *InfluxDBListener) { l.MaxLineSize = -1 }},
		{"max_connections", func(l *InfluxDBListener) { l.MaxConnections = -1 }},
		{"backpressure_max_wait", func(l *InfluxDBListener) { l.BackpressureMaxWait = -1 }},
		{"basic_username", func(l *InfluxDBListener) { l.BasicUsername = "u" }},
		{"basic_username", func(l *InfluxDBListener) { l.BasicPassword = "p" }},
		{"tls_cert", func(l *InfluxDBListener) { l.Key = "key.pem" }},
		{"tls_allowed_cacerts", func(l *InfluxDBListener) { l.AllowedCACerts = []string{"ca.pem"} }},
	}
	for _, tc := range cases {
		l := New()
		tc.set(l)
		err := l.Validate()
		require.Error(t, err)
		require.Contains(t, err.Error(), tc.key+": ")
	}
	require.NoError(t, New().Validate(), "the defaults are valid")
}
