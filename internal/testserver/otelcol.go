package testserver

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/morse-agent/morse/internal/testutil"
)

// The OpenTelemetry Collector's OTLP receiver (go.opentelemetry.io/collector/receiver/
// otlpreceiver) is built from its published modules by scripts/ensure-otelcol.sh into the
// user's cache (testdata/otelcol is its source): the real OTLP server, gRPC and HTTP, that
// outputs.opentelemetry is tested against. The harness runs it as a child process on free
// ports of 127.0.0.1; it appends every request it receives to a file, as OTLP JSON. With
// -send, the same binary is a client instead: the collector's otlphttp exporter, the
// OTLP/HTTP client that inputs.opentelemetry is tested against (SendOtelcolHTTP).

// OtelcolVersion is the collector release the receiver is built from.
const OtelcolVersion = "0.165.0"

// OtelcolBinary returns the path of the receiver's binary: $MORSE_OTELCOL, or the one that
// scripts/ensure-otelcol.sh built into the cache.
func OtelcolBinary() (string, error) {
	if p := os.Getenv("MORSE_OTELCOL"); p != "" {
		return p, nil
	}
	p := filepath.Join(cacheDir(), "otelcol", OtelcolVersion, "otelcol")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%w: run scripts/ensure-otelcol.sh (make test-deps) to build the collector's OTLP receiver %s", err, OtelcolVersion)
	}
	return p, nil
}

// cacheDir is ${MORSE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/morse}, as the scripts have it.
func cacheDir() string {
	if c := os.Getenv("MORSE_CACHE"); c != "" {
		return c
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "morse")
	}
	return filepath.Join(base, "morse")
}

// OtelcolOptions configures one receiver.
type OtelcolOptions struct {
	// Fail makes the collector's pipeline refuse requests: "permanent" or "retryable".
	Fail string
	// FailCount refuses only the first FailCount requests (0: all of them).
	FailCount int
}

// Otelcol is a running OTLP receiver, stopped when the test that started it ends.
type Otelcol struct {
	// GRPC is host:port of OTLP over gRPC; HTTP is http://host:port of OTLP over HTTP.
	GRPC, HTTP string
	out        string
	cmd        *exec.Cmd
	log        bytes.Buffer
	done       chan struct{}
}

// StartOtelcol starts the receiver on free ports and waits until it is ready.
func StartOtelcol(t testing.TB, opts OtelcolOptions) *Otelcol {
	t.Helper()
	bin, err := OtelcolBinary()
	require.NoError(t, err, "testserver: no OTLP receiver")
	for attempt := 1; ; attempt++ {
		c, err := startOtelcol(t, bin, opts)
		if err == nil {
			return c
		}
		if !errors.Is(err, errPortTaken) || attempt == 3 {
			require.NoError(t, err, "testserver: the OTLP receiver did not start")
		}
	}
}

func startOtelcol(t testing.TB, bin string, opts OtelcolOptions) (*Otelcol, error) {
	ports, err := testutil.FreePorts("tcp", 2)
	if err != nil {
		return nil, err
	}
	c := &Otelcol{GRPC: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0])),
		HTTP: "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1])),
		out:  filepath.Join(t.TempDir(), "metrics.jsonl"), done: make(chan struct{})}
	c.cmd = exec.Command(bin, "-grpc", c.GRPC, "-http", strings.TrimPrefix(c.HTTP, "http://"), "-out", c.out,
		"-fail", opts.Fail, "-fail-count", strconv.Itoa(opts.FailCount))
	c.cmd.Stderr = &c.log
	c.cmd.SysProcAttr = childAttr()
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		ready <- sc.Scan() && sc.Text() == "ready"
		_ = c.cmd.Wait()
		close(c.done)
	}()
	t.Cleanup(func() { c.stop(t) })
	select {
	case ok := <-ready:
		if ok {
			return c, nil
		}
	case <-time.After(30 * time.Second):
	}
	c.stop(t)
	if strings.Contains(c.log.String(), "address already in use") {
		return nil, fmt.Errorf("%w: %s", errPortTaken, c.GRPC)
	}
	return nil, fmt.Errorf("the OTLP receiver did not start: %s", c.log.String())
}

func (c *Otelcol) stop(t testing.TB) {
	select {
	case <-c.done:
	default:
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.done:
		case <-time.After(10 * time.Second):
			_ = c.cmd.Process.Kill()
			<-c.done
		}
	}
	if t.Failed() {
		t.Logf("testserver: the OTLP receiver's log:\n%s", c.log.String())
	}
}

// Requests returns the requests the receiver's pipeline took so far, in order.
func (c *Otelcol) Requests(t testing.TB) []*colmetricspb.ExportMetricsServiceRequest {
	t.Helper()
	b, err := os.ReadFile(c.out)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	var out []*colmetricspb.ExportMetricsServiceRequest
	for _, line := range bytes.Split(b, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var req colmetricspb.ExportMetricsServiceRequest
		require.NoError(t, protojson.Unmarshal(line, &req), "testserver: a line of the receiver's file")
		out = append(out, &req)
	}
	return out
}

// StopOtelcol stops the receiver before the test ends, as an outage.
func StopOtelcol(t testing.TB, c *Otelcol) { c.stop(t) }

// SendOtelcolHTTP runs the collector's binary as a client: its otlphttp exporter sends one
// request of a few metrics (testdata/otelcol/send.go) to url, an OTLP/HTTP receiver's
// metrics path, in encoding "proto" or "json", gzipped as the exporter does by default. It
// fails the test unless the exporter reports the request taken, within a minute.
func SendOtelcolHTTP(t testing.TB, url, encoding string) {
	t.Helper()
	bin, err := OtelcolBinary()
	require.NoError(t, err, "testserver: no collector")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "-send", url, "-encoding", encoding).CombinedOutput()
	require.NoError(t, err, "testserver: the collector's otlphttp exporter: %s", out)
	require.True(t, strings.HasSuffix(strings.TrimSpace(string(out)), "ok"), "testserver: the collector's otlphttp exporter: %s", out)
}
