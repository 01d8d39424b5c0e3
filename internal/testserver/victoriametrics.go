package testserver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testutil"
)

// VictoriaMetrics 1.79.5 comes from Debian's victoria-metrics package, which
// scripts/ensure-victoriametrics.sh unpacks into the user's cache (see
// VictoriaMetricsBinary). The harness runs it as a child process of the test
// rather than in a FROM scratch image: the binary needs only libc and libzstd
// of the host, it starts in a fraction of a second, and it needs no Docker
// daemon. It listens on a free port of 127.0.0.1 and keeps its data in the
// test's temporary directory; the test's cleanup stops it, and on Linux the
// kernel kills it if the test process dies first.
//
// What VictoriaMetrics 1.79.5 does with line protocol on /api/v2/write, as
// TestVictoriaMetricsQuirks shows: it answers 204 to everything, even lines it
// cannot read (it logs and skips them); it stores field F of measurement M as
// the series M_F with the tags as labels, timestamps in milliseconds; a string
// field becomes the value 0; it ignores org and bucket; and it drops samples
// older than its retention (a month) without a word. Tests therefore write
// numeric fields with current timestamps and check what was stored through
// /api/v1/export.

// VictoriaMetricsVersion is the version the harness runs.
const VictoriaMetricsVersion = "1.79.5"

// VictoriaMetricsBinary returns the path of the victoria-metrics binary:
// $MORSE_VICTORIA_METRICS, or the one that scripts/ensure-victoriametrics.sh
// put in the cache (${MORSE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/morse}).
func VictoriaMetricsBinary() (string, error) {
	return testutil.CachedBinary("MORSE_VICTORIA_METRICS", "victoria-metrics", VictoriaMetricsVersion, "victoria-metrics",
		"scripts/ensure-victoriametrics.sh")
}

// VictoriaMetricsOptions configures one server.
type VictoriaMetricsOptions struct {
	// Args are extra flags, such as "-maxInsertRequestSize=4096".
	Args []string
	// StartupTimeout bounds start and readiness; 30s if 0.
	StartupTimeout time.Duration
}

// VictoriaMetrics is a running victoria-metrics process, stopped when the test
// that started it ends.
type VictoriaMetrics struct {
	addr string
	cmd  *exec.Cmd
	log  string        // the process's output
	done chan struct{} // closed once the process has exited and been reaped
	// start runs the process again, on the same address and data (Restart).
	start func() error
}

// URL is the base URL, http://127.0.0.1:PORT.
func (v *VictoriaMetrics) URL() string { return "http://" + v.addr }

// Addr is 127.0.0.1:PORT.
func (v *VictoriaMetrics) Addr() string { return v.addr }

// errPortTaken means the free port found was taken before the server bound it.
var errPortTaken = errors.New("port taken")

// StartVictoriaMetrics starts VictoriaMetrics on a free port of 127.0.0.1,
// waits until /health answers 200 and registers a cleanup that stops it. It
// fails the test when the binary is missing or the server does not come up.
func StartVictoriaMetrics(t testing.TB, opts VictoriaMetricsOptions) *VictoriaMetrics {
	t.Helper()
	bin, err := VictoriaMetricsBinary()
	require.NoError(t, err, "testserver: no VictoriaMetrics binary")
	timeout := opts.StartupTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	dir := t.TempDir()
	// The port is found free and then bound by the child: another process may
	// take it in between, so a bind failure is tried again with a new port.
	for attempt := 1; ; attempt++ {
		v, err := startVM(t, bin, dir, opts.Args, timeout)
		if err == nil {
			return v
		}
		if !errors.Is(err, errPortTaken) || attempt == 3 {
			require.NoError(t, err, "testserver: VictoriaMetrics did not start")
		}
	}
}

func startVM(t testing.TB, bin, dir string, extra []string, timeout time.Duration) (*VictoriaMetrics, error) {
	ports, err := testutil.FreePorts("tcp", 1)
	if err != nil {
		return nil, err
	}
	v := &VictoriaMetrics{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))}
	v.log = filepath.Join(dir, fmt.Sprintf("victoria-metrics-%d.log", ports[0]))
	args := append([]string{
		"-httpListenAddr=" + v.addr,
		"-storageDataPath=" + filepath.Join(dir, "data"),
		"-retentionPeriod=1", // one month, the default, stated because tests depend on it
		"-loggerLevel=WARN",  // what the log shows on failure is then what went wrong
	}, extra...)
	v.start = func() error { return v.spawn(t, bin, args, timeout) }
	t.Cleanup(func() { v.stop(t) })
	if err := v.start(); err != nil {
		if strings.Contains(v.logTail(40), "address already in use") {
			return nil, fmt.Errorf("%w: %s", errPortTaken, v.addr)
		}
		return nil, fmt.Errorf("%w\n%s", err, v.logTail(40))
	}
	return v, nil
}

// spawn runs the process, appending to its log, and waits until it answers.
func (v *VictoriaMetrics) spawn(t testing.TB, bin string, args []string, timeout time.Duration) error {
	logFile, err := os.OpenFile(v.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close() // the child has its own descriptor
	done := make(chan struct{})
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", bin, err)
	}
	v.cmd, v.done = cmd, done
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	if err := v.waitHealthy(timeout); err != nil {
		v.stop(t)
		return err
	}
	return nil
}

// Stop stops the server, as an outage of the sink: SIGTERM, and SIGKILL after ten
// seconds. Restart brings it back.
func (v *VictoriaMetrics) Stop(t testing.TB) {
	t.Helper()
	v.stop(t)
}

// Restart starts a stopped server again on the same address with the same data, and waits
// until it answers; a running one is stopped first.
func (v *VictoriaMetrics) Restart(t testing.TB) {
	t.Helper()
	v.stop(t)
	require.NoError(t, v.start(), "testserver: VictoriaMetrics did not start again on %s\n%s", v.addr, v.logTail(40))
}

// waitHealthy polls /health until it answers 200, the process exits, or the
// timeout passes.
func (v *VictoriaMetrics) waitHealthy(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	hc := &http.Client{Timeout: time.Second}
	for {
		resp, err := hc.Get(v.URL() + "/health")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-v.done:
			return fmt.Errorf("victoria-metrics exited before answering on %s", v.addr)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("victoria-metrics did not answer /health on %s within %s", v.addr, timeout)
		}
	}
}

// stop ends the process: SIGTERM, then SIGKILL after ten seconds. It prints
// the server's log when the test failed.
func (v *VictoriaMetrics) stop(t testing.TB) {
	select {
	case <-v.done:
	default:
		_ = v.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-v.done:
		case <-time.After(10 * time.Second):
			_ = v.cmd.Process.Kill()
			<-v.done
		}
	}
	if t.Failed() {
		t.Logf("testserver: last lines of VictoriaMetrics' log:\n%s", v.logTail(60))
	}
}

// logTail returns the last n lines of the server's output.
func (v *VictoriaMetrics) logTail(n int) string {
	b, err := os.ReadFile(v.log)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// VMSeries is one series of /api/v1/export: its labels (the metric name under
// "__name__"), values and timestamps in milliseconds.
type VMSeries struct {
	Metric     map[string]string `json:"metric"`
	Values     []float64         `json:"values"`
	Timestamps []int64           `json:"timestamps"`
}

// Flush makes everything written so far visible to queries and exports.
func (v *VictoriaMetrics) Flush(t testing.TB) {
	t.Helper()
	resp, err := httpClient.Get(v.URL() + "/internal/force_flush")
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode, "testserver: force_flush")
}

// Export flushes and returns every series that match selects, such as
// `{__name__=~"cpu_.*"}`.
func (v *VictoriaMetrics) Export(t testing.TB, match string) []VMSeries {
	t.Helper()
	v.Flush(t)
	resp, err := httpClient.PostForm(v.URL()+"/api/v1/export", url.Values{"match[]": {match}})
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "testserver: export %s", match)
	var out []VMSeries
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for sc.Scan() {
		var s VMSeries
		require.NoError(t, json.Unmarshal(sc.Bytes(), &s), "testserver: export line %q", sc.Text())
		out = append(out, s)
	}
	require.NoError(t, sc.Err())
	return out
}

// ExportSamples waits until the series that match select hold at least n
// samples in all (VictoriaMetrics makes fresh samples visible within about a
// second, even after a flush), and returns them. It fails the test, showing
// what it found, when they do not within timeout.
func (v *VictoriaMetrics) ExportSamples(t testing.TB, match string, n int, timeout time.Duration) []VMSeries {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		got := v.Export(t, match)
		if samples(got) >= n {
			return got
		}
		select {
		case <-ctx.Done():
			require.FailNowf(t, "testserver: too few samples", "%s: want %d samples, have %d in %d series after %s",
				match, n, samples(got), len(got), timeout)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// VMSamples renders series as sorted lines `name{k=v,...} value@ms`, labels
// sorted, so that a test compares what was stored with one require.Equal.
func VMSamples(series []VMSeries) []string {
	var out []string
	for _, s := range series {
		var labels []string
		for k, v := range s.Metric {
			if k != "__name__" {
				labels = append(labels, k+"="+v)
			}
		}
		sort.Strings(labels)
		for i, val := range s.Values {
			out = append(out, fmt.Sprintf("%s{%s} %s@%d", s.Metric["__name__"], strings.Join(labels, ","),
				strconv.FormatFloat(val, 'g', -1, 64), s.Timestamps[i]))
		}
	}
	sort.Strings(out)
	return out
}

func samples(series []VMSeries) int {
	n := 0
	for _, s := range series {
		n += len(s.Values)
	}
	return n
}

// Counter returns the value of one line of /metrics, named exactly as the
// server writes it, such as `vm_http_requests_total{path="/influx/write", protocol="influx"}`;
// zero when there is no such line. VictoriaMetrics renders /metrics at most
// once a second, so a counter may lag a request by that much: wait for it with
// require.Eventually.
func (v *VictoriaMetrics) Counter(t testing.TB, series string) float64 {
	t.Helper()
	resp, err := httpClient.Get(v.URL() + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			require.NoError(t, err)
			return f
		}
	}
	require.NoError(t, sc.Err())
	return 0
}
