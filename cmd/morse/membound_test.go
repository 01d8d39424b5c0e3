package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

// floodLines, floodConns and floodRSS are issue 33's case: 400 lines of 1 MiB (the
// listener's default max_line_size, which takes them as they are) posted over a few
// connections to an agent whose one output's sink is down. Before the memory buffer had a
// byte bound the agent grew to 1.8-2.6 GB; with the defaults it must stay under 256 MiB.
const (
	floodLines = 400
	floodConns = 4
	floodRSS   = 256 << 20
)

// TestListenerFloodStaysInBoundedMemory: the built agent, defaults but for short
// intervals, takes the flood into an output whose sink is down. Its peak resident size
// stays under 256 MiB, its buffer under the default byte bound, and the self-metrics show
// the buffer's bytes and its oldest metric's age, and every metric it let go as buffer_bytes.
func TestListenerFloodStaysInBoundedMemory(t *testing.T) {
	dir := t.TempDir()
	listen, stats := testutil.FreeAddr(t), filepath.Join(dir, "internal.out")
	conf := writeFile(t, dir, "morse.conf", fmt.Sprintf(`
[agent]
  omit_hostname = true
  interval = "1s"
  flush_interval = "1s"
[[inputs.influxdb_listener]]
  service_address = %q
[[inputs.internal]]
[[outputs.influxdb]]
  urls = ["http://%s"]
  database = "flood"
  skip_database_creation = true
  namedrop = ["internal*"]
[[outputs.file]]
  files = [%q]
  namepass = ["internal_write*"]
`, listen, testutil.FreeAddr(t), stats))
	agent := startAgent(t, conf, listen)

	postFlood(t, listen)
	var last map[string]int64
	require.Eventually(t, func() bool {
		last = influxWriteStats(t, stats)
		// Three failed writes after the last line came in: each built its request bodies.
		return last["metrics_added"] == floodLines && last["write_errors"] >= 3
	}, time.Minute, 50*time.Millisecond, "the output took every line and retried: %v", last)

	kib, err := testutil.StatusKiB(agent.Process.Pid, "VmHWM", "VmRSS")
	require.NoError(t, err)
	hwm, rss := kib[0]<<10, kib[1]<<10
	t.Logf("agent VmHWM %.1f MiB, VmRSS %.1f MiB; output: %v", mib(hwm), mib(rss), last)
	require.Less(t, hwm, int64(floodRSS), "peak resident size")
	require.Positive(t, last["buffer_bytes"])
	require.LessOrEqual(t, last["buffer_bytes"], int64(32<<20), "the default buffer_max_bytes")
	require.Positive(t, last["buffer_oldest_age_ns"])
	require.Equal(t, last["metrics_dropped"], last["dropped_buffer_bytes"], "every loss is a buffer_bytes eviction")
	require.GreaterOrEqual(t, last["metrics_dropped"], int64(floodLines-32), "no more than 32 MiB of 1 MiB lines stay")
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// postFlood posts floodLines lines of 1 MiB, one per request, over floodConns connections,
// and requires each to be taken (204).
func postFlood(t *testing.T, listen string) {
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: floodConns, MaxIdleConnsPerHost: floodConns}}
	t.Cleanup(client.CloseIdleConnections)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, floodLines)
	for c := range floodConns {
		wg.Go(func() {
			for i := c; i < floodLines; i += floodConns {
				errs <- postLine(ctx, client, listen, i)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// postLine posts line i: a string field that makes the entry exactly 1 MiB, newline apart.
func postLine(ctx context.Context, client *http.Client, listen string, i int) error {
	head, tail := fmt.Sprintf("flood,line=%d v=\"", i), fmt.Sprintf("\" %d", 1_700_000_000_000_000_000+i)
	line := head + strings.Repeat("x", 1<<20-len(head)-len(tail)) + tail + "\n"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+listen+"/write?db=flood", strings.NewReader(line))
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("line %d: %s", i, resp.Status)
	}
	return nil
}

// influxWriteStats reads the last internal_write of the influxdb output, and its
// buffer_bytes drops as dropped_buffer_bytes, from what the file output wrote so far.
func influxWriteStats(t *testing.T, path string) map[string]int64 {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	data = data[:bytes.LastIndexByte(data, '\n')+1] // a line being written is left for later
	out := map[string]int64{}
	for _, m := range testutil.Parse(t, string(data), false) {
		if v, _ := m.Tag("output"); v != "influxdb" {
			continue
		}
		switch r, _ := m.Tag("reason"); {
		case m.Name() == "internal_write":
			for _, f := range m.Fields() {
				out[f.Key] = f.Value.Int()
			}
		case m.Name() == "internal_write_dropped" && r == morse.ReasonBufferBytes:
			out["dropped_buffer_bytes"] = m.Fields()[0].Value.Int()
		}
	}
	return out
}
