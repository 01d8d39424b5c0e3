package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
)

// crashCycles is how many kill -9 cycles TestCrashCyclesLoseNothing runs: 20 in make test,
// MORSE_CRASH_CYCLES (200 for make soak) when set.
func crashCycles(t *testing.T) int {
	if s := os.Getenv("MORSE_CRASH_CYCLES"); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(t, err)
		return n
	}
	return 20
}

// TestCrashCyclesLoseNothing: an agent with an HTTP listener and the disk buffer writes to
// a real InfluxDB 1.6.7 behind a proxy that is cut for part of some cycles. It is killed
// with kill -9 at random points and restarted. Every line the listener answered 204 for is
// in InfluxDB at the end; what was written twice is counted, and bounded by the batches that
// can be in flight at a crash.
func TestCrashCyclesLoseNothing(t *testing.T) {
	in := testserver.StartInfluxDB(t, testserver.InfluxOptions{})
	in.Exec(t, "CREATE DATABASE crash")
	proxy := testserver.StartProxy(t, strings.TrimPrefix(in.URL(), "http://"))
	dir := t.TempDir()
	listen := testutil.FreeAddr(t)
	conf := filepath.Join(dir, "morse.conf")
	require.NoError(t, os.WriteFile(conf, []byte(fmt.Sprintf(`
[agent]
  omit_hostname = true
  flush_interval = "200ms"
  metric_batch_size = 100
  metric_buffer_limit = 1000000
  buffer_strategy = "disk"
  buffer_directory = %q
[[inputs.influxdb_listener]]
  service_address = %q
[[outputs.influxdb]]
  urls = [%q]
  database = "crash"
  skip_database_creation = true
  content_encoding = "identity"
`, filepath.Join(dir, "buffer"), listen, proxy.URL())), 0o644))

	cycles := crashCycles(t)
	r := rand.New(rand.NewPCG(42, uint64(cycles)))
	acked := map[int64]bool{}
	next := int64(0)
	for c := range cycles {
		agent := startAgent(t, conf, listen)
		if r.IntN(2) == 0 {
			proxy.Cut() // the sink is down for this part of the cycle
		}
		for range 3 + r.IntN(8) {
			times := postLines(t, listen, next, 50)
			for _, ts := range times {
				acked[ts] = true
			}
			next += 50
			if r.IntN(4) == 0 {
				proxy.Restore()
			}
		}
		wait(time.Duration(r.IntN(300)) * time.Millisecond)
		require.NoError(t, agent.Process.Kill(), "cycle %d", c) // kill -9
		_ = agent.Wait()
		proxy.Restore()
	}

	agent := startAgent(t, conf, listen)
	require.Eventually(t, func() bool { return storedAll(t, in, acked) }, 90*time.Second, 200*time.Millisecond,
		"every acknowledged line reaches InfluxDB")
	require.NoError(t, agent.Process.Signal(syscall.SIGTERM))
	_ = agent.Wait()

	stored := len(storedSet(t, in))
	dups := proxy.Stored() - int64(stored)
	t.Logf("%d cycles: %d lines acknowledged, %d stored, %d written twice (%.2f%%)",
		cycles, len(acked), stored, dups, 100*float64(dups)/float64(stored))
	require.GreaterOrEqual(t, dups, int64(0))
	// At a crash, at most the batches in flight (4 to InfluxDB, 100 metrics each) may have
	// been stored without the buffer hearing of it.
	require.LessOrEqual(t, dups, int64(cycles*4*100), "duplicates are bounded by what can be in flight")
}

// startAgent runs the built binary on conf and waits until its listener answers.
func startAgent(t *testing.T, conf, listen string) *exec.Cmd {
	t.Helper()
	var logs bytes.Buffer
	return startAgentLogging(t, conf, listen, &logs)
}

// startAgentLogging is startAgent with the agent's output going to logs, which the test may
// read once the agent has exited, or at any time if it is an *os.File.
func startAgentLogging(t *testing.T, conf, listen string, logs io.Writer) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(morseBin, "--config", conf)
	cmd.Stdout, cmd.Stderr = logs, logs
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + listen + "/ping")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusNoContent
	}, 20*time.Second, 20*time.Millisecond, "the listener answers: %s", logs)
	return cmd
}

// postLines sends n lines with timestamps from..from+n to the listener and returns their
// timestamps if it answered 204, none otherwise.
func postLines(t *testing.T, listen string, from int64, n int) []int64 {
	var b strings.Builder
	times := make([]int64, n)
	for i := range n {
		times[i] = 1_700_000_000_000_000_000 + from + int64(i)
		fmt.Fprintf(&b, "m,src=crash v=%di %d\n", from+int64(i), times[i])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+listen+"/write?db=crash", strings.NewReader(b.String()))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return nil
	}
	return times
}

// storedSet is the timestamps of the points InfluxDB holds.
func storedSet(t *testing.T, in *testserver.Influx) map[int64]bool {
	res := in.Query(t, "crash", "SELECT v FROM m")
	out := map[int64]bool{}
	if len(res) == 0 || len(res[0].Series) == 0 {
		return out
	}
	for _, row := range res[0].Series[0].Values {
		out[row[0].(int64)] = true
	}
	return out
}

func storedAll(t *testing.T, in *testserver.Influx, want map[int64]bool) bool {
	got := storedSet(t, in)
	for ts := range want {
		if !got[ts] {
			return false
		}
	}
	return true
}

// wait lets the agent run for d of real time: the kill point is chosen at random on
// purpose; nothing the test asserts depends on when it falls.
func wait(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	<-t.C
}
