package phpfpm

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/plugins/inputs/internal/gathertest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testserver.StopSharedPHPFPM()
	os.Exit(code)
}

// build decodes config (Telegraf's keys) into the plugin, validates and initialises it.
func build(t *testing.T, config string) *Phpfpm {
	t.Helper()
	p := New()
	md, err := toml.Decode(config, p)
	require.NoError(t, err)
	require.Empty(t, md.Undecoded())
	require.NoError(t, p.Validate())
	require.NoError(t, p.Init())
	return p
}

func gather(t *testing.T, config string) *testutil.Accumulator {
	t.Helper()
	acc := &testutil.Accumulator{}
	require.NoError(t, build(t, config).Gather(testutil.Context(t), acc))
	return acc
}

// urls is a TOML array of the addresses.
func urls(addrs ...string) string { return `urls = ["` + strings.Join(addrs, `", "`) + `"]` + "\n" }

// byURL indexes metrics of one measurement by their url tag.
func byURL(t *testing.T, ms []morse.Metric) map[string][]morse.Metric {
	t.Helper()
	out := map[string][]morse.Metric{}
	for _, m := range ms {
		u, ok := m.Tag("url")
		require.True(t, ok, "%v has a url tag", m)
		out[u] = append(out[u], m)
	}
	return out
}

func tag(m morse.Metric, key string) string { v, _ := m.Tag(key); return v }

// TestStatusPageEveryWay reads the text status pages of a real PHP-FPM's two pools over
// FastCGI on TCP, on the unix socket (with and without a status path) and through nginx over
// HTTP and HTTPS: Telegraf's tags, fields and types (the golden list), each page's own pool,
// and counts that the pools' settings fix.
func TestStatusPageEveryWay(t *testing.T) {
	f := testserver.SharedPHPFPM(t)
	pools := map[string]string{ // url -> pool
		"fcgi://" + f.Addr + "/status":     "www",
		"cgi://" + f.Addr:                  "www", // no path: "status"
		f.Socket:                           "sock",
		f.Socket + ":/status":              "sock",
		f.Nginx.URL("/fpm/www"):            "www",
		f.Nginx.HTTPSURL("/fpm/sock?full"): "sock", // the workers' blocks are not the pool's
	}
	var addrs []string
	for u := range pools {
		addrs = append(addrs, u)
	}
	acc := gather(t, urls(addrs...)+`tls_ca = "`+f.Nginx.Certs.CA+`"`)
	require.Empty(t, acc.Errors())
	require.Empty(t, testutil.LoadGolden(t, filepath.Join("testdata", "phpfpm.golden")).Check(acc.Metrics()))
	got := byURL(t, acc.Metrics())
	require.Len(t, got, len(pools))
	workers := map[string]int64{"www": 2, "sock": 1} // pm.max_children of static pools
	for u, pool := range pools {
		require.Len(t, got[u], 1, u)
		m := got[u][0]
		require.Equal(t, pool, tag(m, "pool"), u)
		fields := testutil.FieldsOf(m)
		require.Len(t, fields, 11, "%s: every field of the pool's lines", u)
		require.Equal(t, workers[pool], fields["total_processes"], u)
		require.GreaterOrEqual(t, fields["active_processes"], int64(1), "%s: the worker that answers is active", u)
		require.Equal(t, workers[pool], fields["active_processes"].(int64)+fields["idle_processes"].(int64), u)
		require.GreaterOrEqual(t, fields["accepted_conn"], int64(1), u)
	}
}

// TestAcceptedConnCounts: each gather is one more connection the pool accepted.
func TestAcceptedConnCounts(t *testing.T) {
	f := testserver.SharedPHPFPM(t)
	p := build(t, urls(f.Socket))
	var last int64
	for i := range 3 {
		acc := &testutil.Accumulator{}
		require.NoError(t, p.Gather(testutil.Context(t), acc))
		require.Empty(t, acc.Errors())
		got := testutil.FieldsOf(acc.Metrics()[0])["accepted_conn"].(int64)
		if i > 0 {
			require.Greater(t, got, last)
		}
		last = got
	}
}

// TestJSONFullEveryWay reads ?json&full over FastCGI on TCP and the socket (the query passed
// on, which Telegraf drops) and over HTTP: phpfpm and one phpfpm_process per worker, with
// Telegraf's tags, fields and types (the golden list).
func TestJSONFullEveryWay(t *testing.T) {
	f := testserver.SharedPHPFPM(t)
	pools := map[string]string{
		"fcgi://" + f.Addr + "/status?json&full": "www",
		f.Socket + ":status?json&full":           "sock",
		f.Nginx.URL("/fpm/www?json&full"):        "www",
	}
	var addrs []string
	for u := range pools {
		addrs = append(addrs, u)
	}
	acc := gather(t, urls(addrs...)+`format = "json"`)
	require.Empty(t, acc.Errors())
	require.Empty(t, testutil.LoadGolden(t, filepath.Join("testdata", "phpfpm_json.golden")).Check(acc.Metrics()))
	pool, procs := byURL(t, acc.MetricsNamed("phpfpm")), byURL(t, acc.MetricsNamed("phpfpm_process"))
	for u, name := range pools {
		require.Len(t, pool[u], 1, u)
		require.Equal(t, name, tag(pool[u][0], "pool"))
		total := testutil.FieldsOf(pool[u][0])["total_processes"].(int64)
		require.Len(t, procs[u], int(total), "%s: one phpfpm_process per worker", u)
		running := 0
		for _, m := range procs[u] {
			require.Equal(t, name, tag(m, "pool"))
			fields := testutil.FieldsOf(m)
			if fields["state"] == "Running" {
				running++
				require.Equal(t, "GET", tag(m, "request_method"))
				require.Equal(t, "/status?json&full", tag(m, "request_uri"), "the worker serving this very request")
			}
			require.Positive(t, fields["pid"])
		}
		require.Equal(t, 1, running, u)
	}
}

// TestSocketGlob: a glob finds the pool's socket, with or without a status path, and the url
// tag is the socket found; a glob that finds nothing is an error.
func TestSocketGlob(t *testing.T) {
	f := testserver.SharedPHPFPM(t)
	dir := filepath.Dir(f.Socket)
	acc := gather(t, urls(dir+"/*.sock", dir+"/php-*.sock:status", dir+"/none-*.sock"))
	require.Equal(t, 2, acc.NMetrics())
	got := byURL(t, acc.Metrics())
	require.Contains(t, got, f.Socket)
	require.Contains(t, got, f.Socket+":status")
	require.Len(t, acc.Errors(), 1)
	require.EqualError(t, acc.Errors()[0], `socket doesn't exist "`+dir+`/none-*.sock"`)
}

// TestErrorsPerURL: a port where nothing listens, a socket nobody listens on, a FastCGI and
// an HTTP server that never answer, a status path the pool does not serve, nginx with its pool down, an HTTP
// server asked by FastCGI and a text page read as JSON each give their own error with the
// address; the good URL is still gathered.
func TestErrorsPerURL(t *testing.T) {
	f := testserver.SharedPHPFPM(t)
	stale := filepath.Join(t.TempDir(), "stale.sock")
	l, err := net.Listen("unix", stale)
	require.NoError(t, err)
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	require.NoError(t, l.Close()) // the file stays, as after a crash
	down := "fcgi://" + testutil.FreeAddr(t) + "/status"
	hung := "fcgi://" + f.Nginx.BlackholeAddr() + "/status"
	notFPM := "fcgi://" + f.Nginx.Addr + "/status"
	acc := gather(t, `timeout = "300ms"
format = "json"
`+urls(f.Socket+":status?json", down, stale, hung, "fcgi://"+f.Addr+"/nope", f.Nginx.URL("/fpm/down?json"), notFPM, f.Socket, f.Nginx.URL("/slow")))
	require.Equal(t, 1, acc.NMetrics(), "the good URL is gathered")
	msgs := map[string]string{}
	for _, err := range acc.Errors() {
		msgs[err.Error()] = ""
	}
	require.Len(t, msgs, 8, "%q", msgs)
	joined := ""
	for m := range msgs {
		joined += m + "\n"
	}
	for _, want := range []string{
		`unable to connect to phpfpm "` + down + `": dial tcp ` + strings.TrimPrefix(down[:len(down)-len("/status")], "fcgi://") + `: connect: connection refused`,
		`unable to connect to phpfpm "` + stale + `": dial unix ` + stale + `: connect: connection refused`,
		`phpfpm "` + hung + `": context deadline exceeded`,
		`unable to connect to phpfpm status page "` + f.Nginx.URL("/slow") + `"`,
		`phpfpm "fcgi://` + f.Addr + `/nope" answered 404 Not Found: Primary script unknown`,
		`unable to get valid stat result from "` + f.Nginx.URL("/fpm/down?json") + `": HTTP status 502 Bad Gateway`,
		`phpfpm "` + notFPM + `": reading the FastCGI answer: version 72, want 1 (not a FastCGI server?)`,
		`unable to parse the phpfpm status of "` + f.Socket + `": invalid character 'p' looking for beginning of value`,
	} {
		require.Contains(t, joined, want)
	}
}

// TestDownPoolCountedInInternalGather: inside an agent, a pool that is down is an error of
// the gather, counted in internal_gather.
func TestDownPoolCountedInInternalGather(t *testing.T) {
	p := build(t, urls("fcgi://"+testutil.FreeAddr(t)+"/status"))
	c := gathertest.Counters(t, "phpfpm", p)
	require.Equal(t, int64(1), c["errors"])
	require.Equal(t, int64(0), c["metrics_gathered"])
}

// TestLongParamThroughRealPool: a query over 127 bytes takes FastCGI's four-byte length,
// which the real pool must read back.
func TestLongParamThroughRealPool(t *testing.T) {
	f := testserver.SharedPHPFPM(t)
	long := "fcgi://" + f.Addr + "/status?json&full&pad=" + strings.Repeat("x", 300)
	acc := gather(t, urls(long)+`format = "json"`)
	require.Empty(t, acc.Errors())
	for _, m := range acc.MetricsNamed("phpfpm_process") {
		if testutil.FieldsOf(m)["state"] == "Running" {
			require.Equal(t, "/status?json&full&pad="+strings.Repeat("x", 300), tag(m, "request_uri"))
			return
		}
	}
	require.Fail(t, "no running worker")
}

func TestValidateReportsEveryProblem(t *testing.T) {
	p := New()
	p.Format = "xml"
	p.Timeout = -1
	p.URLs = []string{"fcgi://127.0.0.1/status", "/run/php[.sock", "http://127.0.0.1/status"}
	err := p.Validate()
	require.Error(t, err)
	for _, want := range []string{`format: invalid format "xml"`, "timeout: must not be negative",
		"url does not follow required 'address:port' format: 127.0.0.1", "could not compile glob"} {
		require.Contains(t, err.Error(), want)
	}
	require.NoError(t, New().Validate(), "the defaults")
}

// TestDefaults: Telegraf's URL and format.
func TestDefaults(t *testing.T) {
	p := build(t, "")
	require.Equal(t, []string{DefaultURL}, p.URLs)
	require.Equal(t, "status", p.Format)
}
