package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
)

// TestBufferDirectoryRemovedLosesNothing: an output's disk buffer directory is removed
// (rm -rf) while it holds 10,000 metrics the sink, cut off, could not take. The agent
// notices within a sync, logs it naming the directory, and writes back what it holds from
// the files it has open; after SIGTERM and a restart with the sink back, all 10,000 reach a
// real InfluxDB 1.6.7.
func TestBufferDirectoryRemovedLosesNothing(t *testing.T) {
	in := testserver.StartInfluxDB(t, testserver.InfluxOptions{})
	in.Exec(t, "CREATE DATABASE crash")
	proxy := testserver.StartProxy(t, strings.TrimPrefix(in.URL(), "http://"))
	proxy.Cut()
	dir := t.TempDir()
	listen := testutil.FreeAddr(t)
	buffer := filepath.Join(dir, "buffer")
	conf := writeFile(t, dir, "morse.conf", fmt.Sprintf(`
[agent]
  omit_hostname = true
  flush_interval = "200ms"
  metric_batch_size = 1000
  metric_buffer_limit = 100000
  buffer_strategy = "disk"
  buffer_directory = %q
  shutdown_timeout = "2s"
[[inputs.influxdb_listener]]
  service_address = %q
[[outputs.influxdb]]
  urls = [%q]
  database = "crash"
  skip_database_creation = true
  content_encoding = "identity"
`, buffer, listen, proxy.URL()))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, morseBin, "--config", conf)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	logs := watchLog(stderr)
	logs.waitFor(t, "agent started")
	acked := map[int64]bool{}
	for i := range 10 {
		require.Eventually(t, func() bool { // the first posts may come before the listener is up
			times := postLines(t, listen, int64(i*1000), 1000)
			for _, ts := range times {
				acked[ts] = true
			}
			return len(times) > 0
		}, 20*time.Second, 20*time.Millisecond)
	}
	require.Len(t, acked, 10000)

	out := filepath.Join(buffer, "influxdb-1")
	require.NoError(t, os.RemoveAll(out))
	require.Eventually(t, func() bool {
		segs, err := filepath.Glob(filepath.Join(out, "*.seg"))
		return err == nil && len(segs) > 0
	}, 20*time.Second, 20*time.Millisecond, "the agent makes the directory again")
	line := logs.waitFor(t, "its directory was removed")
	require.Contains(t, line, out)
	require.Contains(t, line, " E! [")

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	_ = cmd.Wait() // metrics left unsent: a non-zero exit
	proxy.Restore()
	agent := startAgent(t, conf, listen)
	require.Eventually(t, func() bool { return storedAll(t, in, acked) }, 60*time.Second, 200*time.Millisecond,
		"every metric the listener took reaches InfluxDB")
	require.NoError(t, agent.Process.Signal(syscall.SIGTERM))
	_ = agent.Wait()
	require.Len(t, storedSet(t, in), 10000)
}
