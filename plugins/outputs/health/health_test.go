package health

import (
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

// clock is the tests' injected time.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.t = c.t.Add(d) }

// fakeEngine answers as the agent would, from what the test sets, and records what it was
// asked. It stands for the agent in these unit tests; TestAgentTurnsEndpointUnhealthy and
// the end-to-end test ask the real one.
type fakeEngine struct {
	mu                      sync.Mutex
	stuck, failing, filling []string
	grace, longer           time.Duration
	fill                    float64
	at                      time.Time
}

func (e *fakeEngine) Stuck(now time.Time, grace time.Duration) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.at, e.grace = now, grace
	return e.stuck
}

func (e *fakeEngine) Failing(now time.Time, longer time.Duration) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.at, e.longer = now, longer
	return e.failing
}

func (e *fakeEngine) Filling(fill float64) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.fill = fill
	return e.filling
}

func (e *fakeEngine) set(f func(e *fakeEngine)) { e.mu.Lock(); defer e.mu.Unlock(); f(e) }

// started initialises and connects h on a free loopback port with the test's clock and
// logs, and closes it when the test ends.
func started(t *testing.T, h *Health, c *clock, logs *testutil.Logs) *Health {
	t.Helper()
	if h.ServiceAddress == defaultServiceAddress {
		h.ServiceAddress = "tcp://127.0.0.1:0"
	}
	if logs != nil {
		h.SetLogger(logs.Logger())
	} else {
		h.SetLogger(testutil.QuietLogger())
	}
	require.NoError(t, h.Init())
	h.now = c.now
	require.NoError(t, h.Connect(testutil.Context(t)))
	t.Cleanup(func() { require.NoError(t, h.Close()) })
	return h
}

// get asks the endpoint and returns the status and body.
func get(t *testing.T, client *http.Client, url string, edit ...func(*http.Request)) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(testutil.Context(t), http.MethodGet, url, nil)
	require.NoError(t, err)
	for _, e := range edit {
		e(req)
	}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

func urlOf(h *Health) string { return "http://" + h.Addr().String() + "/" }

// TestTelegrafHealthCases: Telegraf 1.39.3's TestHealth cases, over HTTP: healthy on
// startup, a check that passes, one that fails, and a failing compares beside a contains.
func TestTelegrafHealthCases(t *testing.T) {
	metrics := []morse.Metric{idle(morse.Int(42))}
	for _, tc := range []struct {
		name     string
		compares []*Compares
		contains []*Contains
		batch    []morse.Metric
		want     int
	}{
		{"healthy on startup", nil, nil, nil, http.StatusOK},
		{"check passes", []*Compares{{Field: "time_idle", GT: bound(0)}}, nil, metrics, http.StatusOK},
		{"check fails", []*Compares{{Field: "time_idle", LT: bound(0)}}, nil, metrics, http.StatusServiceUnavailable},
		{"mixed check fails", []*Compares{{Field: "time_idle", LT: bound(0)}}, []*Contains{{Field: "foo"}}, metrics,
			http.StatusServiceUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := New()
			h.Compares, h.Contains = tc.compares, tc.contains
			started(t, h, &clock{t: time.Unix(1700000000, 0)}, nil)
			if tc.batch != nil {
				require.NoError(t, h.Write(testutil.Context(t), tc.batch))
			}
			status, _ := get(t, http.DefaultClient, urlOf(h))
			require.Equal(t, tc.want, status)
		})
	}
}

// TestLastBatchDecides: the endpoint answers by the checks of the last batch written, with
// the failed check after the status text, and recovers with the next batch that passes.
func TestLastBatchDecides(t *testing.T) {
	h := New()
	h.Compares = []*Compares{{Field: "buffer_size", LT: bound(5000)}}
	h.Contains = []*Contains{{Field: "buffer_size"}}
	var logs testutil.Logs
	started(t, h, &clock{t: time.Unix(1700000000, 0)}, &logs)
	size := func(n int64) []morse.Metric {
		return []morse.Metric{morse.NewMetric("internal_write", nil, []morse.Field{{Key: "buffer_size", Value: morse.Int(n)}}, time.Time{})}
	}
	require.NoError(t, h.Write(context.Background(), size(4999)))
	status, body := get(t, http.DefaultClient, urlOf(h))
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "OK\n", body)
	require.NoError(t, h.Write(context.Background(), size(5000)))
	status, body = get(t, http.DefaultClient, urlOf(h)+"any/path")
	require.Equal(t, http.StatusServiceUnavailable, status)
	require.Equal(t, "Service Unavailable\ncheck failed on the last batch: internal_write: field buffer_size = 5000 is not < 5000\n", body)
	get(t, http.DefaultClient, urlOf(h)) // still unhealthy: logged once
	require.NoError(t, h.Write(context.Background(), []morse.Metric{cpu()}))
	status, body = get(t, http.DefaultClient, urlOf(h))
	require.Equal(t, http.StatusServiceUnavailable, status, "contains fails on a batch without the field")
	require.Contains(t, body, "no metric holds field buffer_size")
	require.NoError(t, h.Write(context.Background(), size(1)))
	status, _ = get(t, http.DefaultClient, urlOf(h))
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, []string{"health endpoint turns unhealthy status=503 reasons=check failed on the last batch: internal_write: field buffer_size = 5000 is not < 5000"},
		logs.Warnings(), "logged once, at the turn")
	require.Contains(t, logs.String(), "health endpoint is healthy again status=200")
}

// TestDefaultStatusAndMaxTimeBetweenMetrics: default_status is answered until the first
// batch; max_time_between_metrics counts from Connect, then from each batch, on the
// injected clock.
func TestDefaultStatusAndMaxTimeBetweenMetrics(t *testing.T) {
	c := &clock{t: time.Unix(1700000000, 0)}
	h := New()
	h.DefaultStatus = http.StatusServiceUnavailable
	h.MaxTimeBetweenMetrics = morse.Duration(time.Minute)
	started(t, h, c, nil)
	status, body := get(t, http.DefaultClient, urlOf(h))
	require.Equal(t, http.StatusServiceUnavailable, status)
	require.Equal(t, "Service Unavailable\n", body, "default_status, with no reason")
	require.NoError(t, h.Write(context.Background(), []morse.Metric{cpu()}))
	c.add(time.Minute - time.Millisecond)
	status, _ = get(t, http.DefaultClient, urlOf(h))
	require.Equal(t, http.StatusOK, status)
	c.add(time.Millisecond)
	status, body = get(t, http.DefaultClient, urlOf(h))
	require.Equal(t, http.StatusServiceUnavailable, status)
	require.Equal(t, "Service Unavailable\nno metrics written for 1m0s (max_time_between_metrics = 1m0s)\n", body)
	require.NoError(t, h.Write(context.Background(), []morse.Metric{cpu()}))
	status, _ = get(t, http.DefaultClient, urlOf(h))
	require.Equal(t, http.StatusOK, status)

	fresh := New()
	fresh.MaxTimeBetweenMetrics = morse.Duration(time.Minute)
	started(t, fresh, c, nil)
	c.add(time.Minute)
	status, _ = get(t, http.DefaultClient, urlOf(fresh))
	require.Equal(t, http.StatusServiceUnavailable, status, "no batch since Connect")
}

// TestAgentChecks: the agent's own checks turn the endpoint unhealthy, each with its
// reasons, whatever the metrics say; each asks with its own option's value and the
// injected time, and an option left off asks nothing.
func TestAgentChecks(t *testing.T) {
	c := &clock{t: time.Unix(1700000000, 0)}
	eng := &fakeEngine{}
	h := New()
	h.UnhealthyAfterFailing = morse.Duration(time.Minute)
	h.UnhealthyAboveBufferFill = 0.9
	h.WedgedGrace = morse.Duration(15 * time.Second)
	h.WatchEngine(eng)
	started(t, h, c, nil)
	require.NoError(t, h.Write(context.Background(), []morse.Metric{cpu()}))
	status, _ := get(t, http.DefaultClient, urlOf(h))
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, c.now(), eng.at)
	require.Equal(t, 15*time.Second, eng.grace)
	require.Equal(t, time.Minute, eng.longer)
	require.Equal(t, 0.9, eng.fill)

	for _, tc := range []struct {
		name string
		set  func(e *fakeEngine)
		want string
	}{
		{"wedged", func(e *fakeEngine) { e.stuck = []string{"inputs.exec (gathering for 1m40s)"} },
			"wedged: inputs.exec (gathering for 1m40s)\n"},
		{"backing off", func(e *fakeEngine) { e.failing = []string{"outputs.influxdb (failing for 2m0s)"} },
			"backing off: outputs.influxdb (failing for 2m0s)\n"},
		{"buffer filling", func(e *fakeEngine) {
			e.filling = []string{"outputs.influxdb (buffer holds 9500 of 10000 metrics)", "outputs.kafka (buffer holds 10000 of 10000 metrics)"}
		}, "buffer filling: outputs.influxdb (buffer holds 9500 of 10000 metrics)\nbuffer filling: outputs.kafka (buffer holds 10000 of 10000 metrics)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eng.set(tc.set)
			status, body := get(t, http.DefaultClient, urlOf(h))
			require.Equal(t, http.StatusServiceUnavailable, status)
			require.Equal(t, "Service Unavailable\n"+tc.want, body)
			eng.set(func(e *fakeEngine) { e.stuck, e.failing, e.filling = nil, nil, nil })
			status, _ = get(t, http.DefaultClient, urlOf(h))
			require.Equal(t, http.StatusOK, status)
		})
	}

	off := New()
	off.UnhealthyWhenWedged = false
	quiet := &fakeEngine{stuck: []string{"x"}, failing: []string{"y"}, filling: []string{"z"}}
	off.WatchEngine(quiet)
	started(t, off, c, nil)
	status, _ = get(t, http.DefaultClient, urlOf(off))
	require.Equal(t, http.StatusOK, status, "every agent check off")
	require.True(t, quiet.at.IsZero(), "nothing asked")
	require.Zero(t, quiet.fill)
}

// TestBasicAuth: with basic_username and basic_password, a request needs both, by basic
// auth or Telegraf's "Token user:password"; without, 401 and a challenge.
func TestBasicAuth(t *testing.T) {
	h := New()
	h.BasicUsername, h.BasicPassword = "user1", "secret"
	started(t, h, &clock{t: time.Unix(1700000000, 0)}, nil)
	status, _ := get(t, http.DefaultClient, urlOf(h))
	require.Equal(t, http.StatusUnauthorized, status)
	status, _ = get(t, http.DefaultClient, urlOf(h), func(r *http.Request) { r.SetBasicAuth("user1", "wrong") })
	require.Equal(t, http.StatusUnauthorized, status)
	status, _ = get(t, http.DefaultClient, urlOf(h), func(r *http.Request) { r.SetBasicAuth("user1", "secret") })
	require.Equal(t, http.StatusOK, status)
	status, _ = get(t, http.DefaultClient, urlOf(h), func(r *http.Request) { r.Header.Set("Authorization", "Token user1:secret") })
	require.Equal(t, http.StatusOK, status)
}

// TestTLSAndUnixSocket: with tls_cert and tls_key the endpoint speaks HTTPS, and with
// tls_allowed_cacerts only to clients with a certificate; unix:// listens on a socket.
func TestTLSAndUnixSocket(t *testing.T) {
	certs := testutil.NewCerts(t)
	h := New()
	h.Cert, h.Key, h.AllowedCACerts = certs.ServerCert, certs.ServerKey, []string{certs.CA}
	started(t, h, &clock{t: time.Unix(1700000000, 0)}, nil)
	url := "https://" + h.Addr().String() + "/"
	withCert := &http.Client{Transport: &http.Transport{TLSClientConfig: certs.ClientTLS(true)}}
	status, _ := get(t, withCert, url)
	require.Equal(t, http.StatusOK, status)
	without := &http.Client{Transport: &http.Transport{TLSClientConfig: certs.ClientTLS(false)}}
	req, err := http.NewRequestWithContext(testutil.Context(t), http.MethodGet, url, nil)
	require.NoError(t, err)
	_, err = without.Do(req)
	require.Error(t, err, "mutual TLS refuses a client without a certificate")

	sock := filepath.Join(testutil.SocketDir(t), "health.sock")
	u := New()
	u.ServiceAddress = "unix://" + sock
	started(t, u, &clock{t: time.Unix(1700000000, 0)}, nil)
	overUnix := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	status, _ = get(t, overUnix, "http://health/")
	require.Equal(t, http.StatusOK, status)
}

// TestConnectAfterClose: a reload hands the instance to a new writer, which connects it
// again after the old one closed it; a Connect while listening changes nothing, and one
// with a cancelled context starts nothing.
func TestConnectAfterClose(t *testing.T) {
	h := New()
	h.ServiceAddress = "tcp://127.0.0.1:0"
	h.SetLogger(testutil.QuietLogger())
	require.NoError(t, h.Init())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, h.Connect(ctx), context.Canceled)
	require.Nil(t, h.Addr())
	require.NoError(t, h.Close(), "Close without a server")
	for range 2 {
		require.NoError(t, h.Connect(context.Background()))
		addr := h.Addr()
		require.NoError(t, h.Connect(context.Background()))
		require.Equal(t, addr, h.Addr())
		status, _ := get(t, http.DefaultClient, urlOf(h))
		require.Equal(t, http.StatusOK, status)
		require.NoError(t, h.Close())
		require.Nil(t, h.Addr())
	}
}

// TestValidateReportsEveryProblem: one run names every bad option by its key.
func TestValidateReportsEveryProblem(t *testing.T) {
	h := New()
	h.ServiceAddress = "ftp://:8080"
	h.ReadTimeout = morse.Duration(-time.Second)
	h.DefaultStatus = 999
	h.UnhealthyAfterFailing = morse.Duration(-time.Second)
	h.UnhealthyAboveBufferFill = 1.5
	h.WedgedGrace = morse.Duration(-time.Second)
	h.Compares = []*Compares{{LT: bound(1)}}
	h.Contains = []*Contains{{}}
	h.Cert = "/cert.pem"
	err := h.Validate()
	require.Error(t, err)
	for _, key := range []string{"service_address", "read_timeout", "default_status", "unhealthy_after_failing",
		"unhealthy_above_buffer_fill", "wedged_grace", "compares[0].field", "contains[0].field", "tls_cert"} {
		require.Contains(t, err.Error(), key)
	}
	for _, addr := range []string{"tcp://:8080", "http://localhost:8080", "https://[::1]:0", "tcp4://127.0.0.1:1", "unix:///run/h.sock"} {
		h := New()
		h.ServiceAddress = addr
		require.NoError(t, h.Validate(), addr)
	}
	for _, addr := range []string{":8080", "tcp://localhost", "unix://"} {
		h := New()
		h.ServiceAddress = addr
		require.ErrorContains(t, h.Validate(), "service_address", addr)
	}
	require.True(t, strings.HasPrefix(sampleConfig, "# "+Description))
}
