package main

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
)

// TestShutdownExitsWithinTheTimeout: outputs with a backlog and writes in flight, whose InfluxDB has
// stopped answering (docker pause: its port still takes connections) do not stretch the
// stop. The process exits within shutdown_timeout + 1 s of SIGTERM, with 1 output or 50.
func TestShutdownExitsWithinTheTimeout(t *testing.T) {
	in := testserver.StartInfluxDB(t, testserver.InfluxOptions{})
	in.Exec(t, "CREATE DATABASE shut")
	cases := []struct {
		outputs int
		timeout time.Duration
	}{{1, 2 * time.Second}, {10, 2 * time.Second}, {50, 2 * time.Second}, {50, 10 * time.Second}}
	worst := time.Duration(0)
	for _, tc := range cases {
		listen := testutil.FreeAddr(t)
		var conf strings.Builder
		fmt.Fprintf(&conf, "[agent]\n  interval = \"1s\"\n  flush_interval = \"200ms\"\n  shutdown_timeout = %q\n"+
			"[[inputs.influxdb_listener]]\n  service_address = %q\n  backpressure_max_wait = \"100ms\"\n", tc.timeout, listen)
		for range tc.outputs {
			fmt.Fprintf(&conf, "[[outputs.influxdb]]\n  urls = [%q]\n  database = \"shut\"\n  skip_database_creation = true\n"+
				"  metric_batch_size = 500\n  metric_buffer_limit = 1000\n", in.URL())
		}
		path := writeFile(t, t.TempDir(), "shut.conf", conf.String())
		cmd := startAgent(t, path, listen)
		in.Pause(t)
		// Batches of these leave and hang. They stay below the buffer's high-water mark
		// (0.8 of 1000), so the listener takes them all without waiting for room, however
		// long the outputs take to pick up their first batch: from 800 on it would wait
		// backpressure_max_wait for each of the outputs, and then refuse the rest.
		require.Len(t, postLines(t, listen, 0, 799), 799, "the listener takes the lines")
		// These fill the buffer up to the mark, where the listener holds back and then
		// refuses the rest.
		postLines(t, listen, 799, 2000)
		start := time.Now()
		require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
		_ = cmd.Wait()
		took := time.Since(start)
		in.Unpause(t)
		t.Logf("%d outputs, shutdown_timeout %s: exited %s after SIGTERM", tc.outputs, tc.timeout, took)
		require.LessOrEqual(t, took, tc.timeout+time.Second, "%d outputs, shutdown_timeout %s", tc.outputs, tc.timeout)
		worst = max(worst, took-tc.timeout)
	}
	t.Logf("worst: %s past shutdown_timeout", worst)
}
