package nginx

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/plugins/inputs/internal/gathertest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testserver.StopSharedNginx()
	os.Exit(code)
}

// build decodes config (Telegraf's keys) into the plugin, validates and initialises it.
func build(t *testing.T, config string) *Nginx {
	t.Helper()
	n := New()
	md, err := toml.Decode(config, n)
	require.NoError(t, err)
	require.Empty(t, md.Undecoded())
	require.NoError(t, n.Validate())
	require.NoError(t, n.Init())
	return n
}

func gather(t *testing.T, config string) *testutil.Accumulator {
	t.Helper()
	acc := &testutil.Accumulator{}
	require.NoError(t, build(t, config).Gather(testutil.Context(t), acc))
	return acc
}

// TestStubStatusOverTCPAndUnixSocket reads a real nginx's stub_status page over TCP and over
// its unix socket: Telegraf's tags, fields and types (the golden list), and counts that
// nginx's own arithmetic holds.
func TestStubStatusOverTCPAndUnixSocket(t *testing.T) {
	ngx := testserver.SharedNginx(t)
	tcp := ngx.URL("/server_status")
	unix := "http+unix://" + ngx.Socket() + ":/server_status"
	acc := gather(t, `urls = ["`+tcp+`", "`+unix+`"]`)
	require.Empty(t, acc.Errors())
	require.Equal(t, 2, acc.NMetrics())
	require.Empty(t, testutil.LoadGolden(t, filepath.Join("testdata", "nginx.golden")).Check(acc.Metrics()))
	host, port := "127.0.0.1", ngx.Addr[len("127.0.0.1:"):]
	var viaTCP, viaUnix int
	for _, m := range acc.Metrics() {
		f := testutil.FieldsOf(m)
		require.GreaterOrEqual(t, f["accepts"].(uint64), f["handled"].(uint64))
		require.GreaterOrEqual(t, f["writing"].(uint64), uint64(1), "the status request itself is being written")
		require.GreaterOrEqual(t, f["active"].(uint64), f["writing"].(uint64))
		if s, ok := m.Tag("server"); ok {
			p, _ := m.Tag("port")
			require.Equal(t, []string{host, port}, []string{s, p})
			viaTCP++
		} else {
			_, ok := m.Tag("port")
			require.False(t, ok, "a unix socket has no port")
			viaUnix++
		}
	}
	require.Equal(t, []int{1, 1}, []int{viaTCP, viaUnix})
}

// TestRequestsCount: the requests counter grows by at least the one request of each gather.
func TestRequestsCount(t *testing.T) {
	ngx := testserver.SharedNginx(t)
	n := build(t, `urls = ["`+ngx.URL("/server_status")+`"]`)
	var last uint64
	for i := range 3 {
		acc := &testutil.Accumulator{}
		require.NoError(t, n.Gather(testutil.Context(t), acc))
		require.Empty(t, acc.Errors())
		got := testutil.FieldsOf(acc.Metrics()[0])["requests"].(uint64)
		if i > 0 {
			require.Greater(t, got, last)
		}
		last = got
	}
}

// TestErrorsPerURL: a URL with nothing listening, a 404, a page that is not stub_status and
// an upstream that never answers each give their own error; the good URL is still gathered.
func TestErrorsPerURL(t *testing.T) {
	ngx := testserver.SharedNginx(t)
	down := "http://" + testutil.FreeAddr(t) + "/server_status"
	acc := gather(t, `timeout = "500ms"
urls = ["`+ngx.URL("/server_status")+`", "`+down+`", "`+ngx.URL("/status/404")+`", "`+ngx.URL("/index.html")+`", "`+ngx.URL("/slow")+`"]`)
	require.Equal(t, 1, acc.NMetrics(), "the good URL is gathered")
	var msgs []string
	for _, err := range acc.Errors() {
		msgs = append(msgs, err.Error())
	}
	require.Len(t, msgs, 4, "%q", msgs)
	require.Contains(t, msgs, ngx.URL("/status/404")+" returned HTTP status 404 Not Found")
	joined := ""
	for _, m := range msgs {
		joined += m + "\n"
	}
	require.Contains(t, joined, `error making HTTP request to "`+down+`"`)
	require.Contains(t, joined, "connection refused")
	require.Contains(t, joined, ngx.URL("/index.html")+": not a stub_status page")
	require.Contains(t, joined, `error making HTTP request to "`+ngx.URL("/slow")+`"`)
	require.Contains(t, joined, "Client.Timeout exceeded")
}

// TestDownServerCountedInInternalGather: inside an agent, a server that is down is an
// error of the gather, counted in internal_gather.
func TestDownServerCountedInInternalGather(t *testing.T) {
	n := build(t, `urls = ["http://`+testutil.FreeAddr(t)+`/server_status"]`)
	c := gathertest.Counters(t, "nginx", n)
	require.Equal(t, int64(1), c["errors"])
	require.Equal(t, int64(0), c["metrics_gathered"])
}

func TestParseRefusesOtherPages(t *testing.T) {
	for _, page := range []string{"", "Active connections: 1\n", "Active connections: x\nserver accepts handled requests\n 1 1 1\nReading: 0 Writing: 1 Waiting: 0\n",
		"Active connections: 1\nserver accepts handled requests\n 1 1\nReading: 0 Writing: 1 Waiting: 0\n"} {
		_, err := parseStubStatus(strings.NewReader(page))
		require.Error(t, err, "%q", page)
	}
}
