package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testserver"
)

// TestDiskFullAcknowledgesOnlyWhatIsOnDisk: an agent with the disk buffer on a small tmpfs
// that a ballast file half fills, and its sink down. Several senders post bodies of varying
// sizes to the HTTP listener until the full disk makes it push back (503), and the agent is
// killed with kill -9. Restarted with room on the disk and the sink up, it delivers every
// line it answered 204 for: what the full disk made it hold in memory it never acknowledged.
func TestDiskFullAcknowledgesOnlyWhatIsOnDisk(t *testing.T) {
	in := testserver.StartInfluxDB(t, testserver.InfluxOptions{})
	in.Exec(t, "CREATE DATABASE crash")
	proxy := testserver.StartProxy(t, strings.TrimPrefix(in.URL(), "http://"))
	proxy.Cut() // the sink is down until the restart
	dir := t.TempDir()
	bufDir := mountTmpfs(t, filepath.Join(dir, "buffer"), 8<<20)
	ballast := filepath.Join(bufDir, "ballast")
	require.NoError(t, os.WriteFile(ballast, make([]byte, 6<<20), 0o644))
	listen := freeAddr(t)
	conf := filepath.Join(dir, "morse.conf")
	require.NoError(t, os.WriteFile(conf, []byte(fmt.Sprintf(`
[agent]
  omit_hostname = true
  flush_interval = "200ms"
  metric_batch_size = 1000
  metric_buffer_limit = 100000
  buffer_strategy = "disk"
  buffer_directory = %q
[[inputs.influxdb_listener]]
  service_address = %q
  backpressure_max_wait = "1s"
[[outputs.influxdb]]
  urls = [%q]
  database = "crash"
  skip_database_creation = true
  content_encoding = "identity"
`, bufDir, listen, proxy.URL())), 0o644))

	logPath := filepath.Join(dir, "agent.log")
	logs, err := os.Create(logPath)
	require.NoError(t, err)
	defer logs.Close()
	agent := startAgentLogging(t, conf, listen, logs)
	s := floodUntilRefused(t, listen, 60_000, 60*time.Second)
	require.NoError(t, agent.Process.Kill()) // kill -9
	_ = agent.Wait()
	out, err := os.ReadFile(logPath)
	require.NoError(t, err)
	t.Logf("sent %d lines in %d writes: %d acknowledged (204), %d writes refused (503), %d failed otherwise",
		s.sent, s.writes, len(s.acked), s.refused, s.failed)
	require.Positive(t, s.refused, "the listener pushed back on the full disk: %s", out)
	require.Equal(t, 1, strings.Count(string(out), "the disk refuses writes"), "one warning: %s", out)

	require.NoError(t, os.Remove(ballast)) // room on the disk again
	proxy.Restore()
	agent = startAgent(t, conf, listen)
	var got map[int64]bool
	arrived := 0
	require.Eventually(t, func() bool {
		got, arrived = storedSet(t, in), 0
		for ts := range s.acked {
			if got[ts] {
				arrived++
			}
		}
		return arrived == len(s.acked)
	}, 60*time.Second, 200*time.Millisecond, "every acknowledged line reaches InfluxDB")
	require.NoError(t, agent.Process.Signal(syscall.SIGTERM))
	_ = agent.Wait()
	t.Logf("after kill -9 and a restart: %d of %d acknowledged lines arrived; %d lines stored in all",
		arrived, len(s.acked), len(got))
}

// mountTmpfs mounts a tmpfs of size bytes on dir, created if need be, until the test ends.
func mountTmpfs(t *testing.T, dir string, size int) string {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)), "mount a tmpfs (needs root)")
	t.Cleanup(func() { require.NoError(t, syscall.Unmount(dir, syscall.MNT_DETACH)) })
	return dir
}

// flood is what floodUntilRefused sent and what the listener answered.
type flood struct {
	sent, writes, refused, failed int
	acked                         map[int64]bool // the timestamps of the lines answered 204
}

// floodUntilRefused posts bodies of 1 to 400 numbered lines from four connections until the
// listener has refused 20 writes, max lines are sent, or d passes.
func floodUntilRefused(t *testing.T, listen string, max int, d time.Duration) flood {
	var (
		mu      sync.Mutex
		f       = flood{acked: map[int64]bool{}}
		next    atomic.Int64
		refused atomic.Int64
		wg      sync.WaitGroup
	)
	deadline := time.Now().Add(d)
	for w := range 4 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 33))
			for refused.Load() < 20 && time.Now().Before(deadline) {
				n := 1 + r.IntN(400)
				from := next.Add(int64(n)) - int64(n)
				if from >= int64(max) {
					return
				}
				code, times := postPadded(listen, from, n)
				mu.Lock()
				f.sent += n
				f.writes++
				switch code {
				case http.StatusNoContent:
					for _, ts := range times {
						f.acked[ts] = true
					}
				case http.StatusServiceUnavailable:
					f.refused++
					refused.Add(1)
				default:
					f.failed++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return f
}

// postPadded posts n lines numbered from..from+n, each with a string field that makes it
// about 150 bytes, and returns the answer's status (0 if there was none) and the lines'
// timestamps.
func postPadded(listen string, from int64, n int) (int, []int64) {
	var b strings.Builder
	times := make([]int64, n)
	pad := strings.Repeat("x", 80)
	for i := range n {
		times[i] = 1_700_000_000_000_000_000 + from + int64(i)
		fmt.Fprintf(&b, "m,src=diskfull v=%di,pad=%q %d\n", from+int64(i), pad, times[i])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+listen+"/write?db=crash", strings.NewReader(b.String()))
	if err != nil {
		return 0, nil
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil
	}
	resp.Body.Close()
	return resp.StatusCode, times
}
