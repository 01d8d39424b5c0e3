package testserver

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The OpenTelemetry Python SDK and its OTLP exporter, from PyPI, are installed by
// scripts/ensure-otel-python.sh into a virtual environment in the user's cache: a real OTLP
// client, over gRPC and HTTP/protobuf, for inputs.opentelemetry. testdata/otel-python/send.py
// sends a few metrics with it.

// OtelPythonVersion is the SDK's version.
const OtelPythonVersion = "1.45.2"

// OtelPython returns the virtual environment's python: $MORSE_OTEL_PYTHON, or the one that
// scripts/ensure-otel-python.sh made in the cache.
func OtelPython() (string, error) {
	if p := os.Getenv("MORSE_OTEL_PYTHON"); p != "" {
		return p, nil
	}
	p := filepath.Join(cacheDir(), "otel-python", OtelPythonVersion, "bin", "python")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%w: run scripts/ensure-otel-python.sh (make test-deps) to install the OpenTelemetry Python SDK %s", err, OtelPythonVersion)
	}
	return p, nil
}

// SendOtelPython runs send.py against the OTLP/gRPC receiver at endpoint (host:port) and
// fails the test unless the SDK reports the export done, within a minute.
func SendOtelPython(t testing.TB, endpoint string) {
	t.Helper()
	runSendPy(t, endpoint, "grpc", "none")
}

// SendOtelPythonHTTP runs send.py with the SDK's OTLP/HTTP (protobuf) exporter against url,
// the receiver's metrics path (http://host:port/v1/metrics), gzipping the bodies when gzip
// is set, and fails the test unless the SDK reports the export done, within a minute.
func SendOtelPythonHTTP(t testing.TB, url string, gzip bool) {
	t.Helper()
	compression := "none"
	if gzip {
		compression = "gzip"
	}
	runSendPy(t, url, "http", compression)
}

func runSendPy(t testing.TB, endpoint, protocol, compression string) {
	t.Helper()
	py, err := OtelPython()
	require.NoError(t, err, "testserver: no OpenTelemetry Python SDK")
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "..", "testdata", "otel-python", "send.py")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, py, script, endpoint, protocol, compression).CombinedOutput()
	require.NoError(t, err, "testserver: send.py: %s", out)
	require.True(t, strings.HasSuffix(strings.TrimSpace(string(out)), "ok"), "testserver: send.py: %s", out)
}
