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

// The `statsd` client from PyPI (jsocol/pystatsd), installed by scripts/ensure-statsd-python.sh
// into a virtual environment in the user's cache: a real StatsD client over UDP and TCP, for
// inputs.statsd. testdata/statsd-python/send.py sends counters, gauges, timers and sets with it.

// StatsdPythonVersion is the client's version.
const StatsdPythonVersion = "4.0.1"

// StatsdPython returns the virtual environment's python: $MORSE_STATSD_PYTHON, or the one
// that scripts/ensure-statsd-python.sh made in the cache.
func StatsdPython() (string, error) {
	if p := os.Getenv("MORSE_STATSD_PYTHON"); p != "" {
		return p, nil
	}
	p := filepath.Join(cacheDir(), "statsd-python", StatsdPythonVersion, "bin", "python")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%w: run scripts/ensure-statsd-python.sh (make test-deps) to install the statsd client %s", err, StatsdPythonVersion)
	}
	return p, nil
}

// SendStatsdPython runs send.py against the StatsD server at addr (host:port) over proto
// ("udp" or "tcp"), and fails the test unless it reports every call done, within a minute.
func SendStatsdPython(t testing.TB, proto, addr string) {
	t.Helper()
	py, err := StatsdPython()
	require.NoError(t, err, "testserver: no statsd Python client")
	host, port, ok := strings.Cut(addr, ":")
	require.True(t, ok, "testserver: %q is not host:port", addr)
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "..", "testdata", "statsd-python", "send.py")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, py, script, proto, host, port).CombinedOutput()
	require.NoError(t, err, "testserver: send.py: %s", out)
	require.True(t, strings.HasSuffix(strings.TrimSpace(string(out)), "ok"), "testserver: send.py: %s", out)
}
