package influxdblistener

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/selfstat"
)

const waitFor = 10 * time.Second

// newListener returns an initialised listener on a free loopback port, changed by opts.
func newListener(t testing.TB, opts ...func(*InfluxDBListener)) *InfluxDBListener {
	t.Helper()
	l := New()
	l.ServiceAddress = "127.0.0.1:0"
	for _, o := range opts {
		o(l)
	}
	l.SetLogger(testutil.QuietLogger())
	require.NoError(t, l.Init())
	return l
}

// start runs l with a test accumulator and its own stats, and stops it when the test ends.
func start(t testing.TB, l *InfluxDBListener) (*testutil.Accumulator, *selfstat.PluginStats) {
	t.Helper()
	st := selfstat.NewPluginStats(selfstat.New(), "internal_influxdb_listener", nil)
	l.SetStats(st)
	acc := &testutil.Accumulator{}
	require.NoError(t, l.Start(context.Background(), acc))
	t.Cleanup(l.Stop)
	return acc, st
}

// answer is a response read whole.
type answer struct {
	status int
	header http.Header
	body   string
}

// client is an HTTP client of one listener.
type client struct {
	t    testing.TB
	base string
	hc   *http.Client
}

func newClient(t testing.TB, addr net.Addr, tlsCfg *tls.Config) *client {
	scheme := "http"
	if tlsCfg != nil {
		scheme = "https"
	}
	tr := &http.Transport{TLSClientConfig: tlsCfg}
	t.Cleanup(tr.CloseIdleConnections)
	return &client{t: t, base: scheme + "://" + addr.String(), hc: &http.Client{Transport: tr, Timeout: waitFor}}
}

// do sends a request and reads the whole answer; header pairs are "Key", "value", ...
func (c *client) do(method, path string, body []byte, header ...string) (answer, error) {
	req, err := http.NewRequest(method, c.base+path, bytes.NewReader(body))
	require.NoError(c.t, err)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: string(b)}, err
}

// must is do that fails the test on a transport error.
func (c *client) must(method, path string, body []byte, header ...string) answer {
	c.t.Helper()
	a, err := c.do(method, path, body, header...)
	require.NoError(c.t, err)
	return a
}

// healthy checks that the listener still serves a normal write.
func (c *client) healthy() {
	c.t.Helper()
	a := c.must("POST", "/write?db=x", []byte("health v=1\n"))
	require.Equal(c.t, http.StatusNoContent, a.status, a.body)
}

func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(b)
	_ = zw.Close()
	return buf.Bytes()
}

// errorBody is InfluxDB's error body for msg.
func errorBody(msg string) string { return `{"error":"` + msg + `"}` + "\n" }

// readUntilClosed reads conn until the server closes it, failing the test if that takes
// longer than the deadline.
func readUntilClosed(t testing.TB, conn net.Conn) string {
	t.Helper()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(waitFor)))
	var b strings.Builder
	_, err := io.Copy(&b, conn)
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "the server did not close the connection")
	return b.String()
}

func loadGolden(t *testing.T) testutil.Shapes {
	t.Helper()
	return testutil.LoadGolden(t, "testdata/influxdb_listener.golden")
}
