package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
)

// TestDiskFullAcknowledgesOnlyWhatIsOnDisk: an agent with the disk buffer on a small tmpfs
// that a ballast file half fills, and its sink down. Several senders post bodies of varying
// sizes to the HTTP listener until the full disk makes it push back (503), and the agent is
// killed with kill -9. Restarted with room on the disk and the sink up, it delivers every
// line it answered 204 for: what the full disk made it hold in memory it never acknowledged.
func TestDiskFullAcknowledgesOnlyWhatIsOnDisk(t *testing.T) {
	e := startDiskFull(t, "")
	s := floodUntilRefused(t, e.listen, 60_000, 60*time.Second)
	out := e.kill(t)
	t.Logf("sent %d lines in %d writes: %d acknowledged (204), %d writes refused (503), %d failed otherwise",
		s.sent, s.writes, len(s.acked), s.refused, s.failed)
	require.Positive(t, s.refused, "the listener pushed back on the full disk: %s", out)
	require.Equal(t, 1, strings.Count(out, "the disk refuses writes"), "one warning: %s", out)

	agent := e.restart(t)
	in := e.in
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

// TestDiskFullStopsReadingTCP: with the disk buffer's disk full and its sink down, a TCP
// socket_listener stops reading, so a sender's writes stall, rather than the agent taking
// everything into memory. Restarted with room and the sink up, the agent delivers what it
// had on disk; TCP acknowledges nothing, so what the kill -9 took from the socket buffers
// and memory is only reported.
func TestDiskFullStopsReadingTCP(t *testing.T) {
	tcp := testutil.FreeAddr(t)
	// Small socket buffers, so that what the kernel takes while the listener does not read
	// is small beside what the disk holds.
	e := startDiskFull(t, fmt.Sprintf("[[inputs.socket_listener]]\n  service_address = \"tcp://%s\"\n  read_buffer_size = \"64KiB\"\n", tcp))
	conn, err := net.Dial("tcp", tcp)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.(*net.TCPConn).SetWriteBuffer(64<<10))
	const total, chunk = 60_000, 200
	written, stalled := 0, false
	for written < total && !stalled {
		var b strings.Builder
		for i := written; i < written+chunk; i++ {
			fmt.Fprintf(&b, "m,src=diskfull v=%di,pad=%q %d\n", i, strings.Repeat("x", 80), 1_700_000_000_000_000_000+int64(i))
		}
		require.NoError(t, conn.SetWriteDeadline(time.Now().Add(2*time.Second)))
		if _, err := conn.Write([]byte(b.String())); err != nil {
			require.ErrorIs(t, err, os.ErrDeadlineExceeded)
			stalled = true
			break
		}
		written += chunk
	}
	out := e.kill(t)
	t.Logf("TCP: %d lines written before the listener stopped reading", written)
	require.True(t, stalled, "the listener stops reading while the disk is full: %s", out)
	require.Equal(t, 1, strings.Count(out, "the disk refuses writes"), "one warning: %s", out)

	agent := e.restart(t)
	var stored, last int
	require.Eventually(t, func() bool { // the count settles: the buffer is written
		last, stored = stored, len(storedSet(t, e.in))
		return stored > 0 && stored == last
	}, 60*time.Second, time.Second)
	require.NoError(t, agent.Process.Signal(syscall.SIGTERM))
	_ = agent.Wait()
	require.LessOrEqual(t, stored, written)
	t.Logf("TCP: after kill -9 and a restart %d of the %d lines written arrived", stored, written)
}

// diskFull is an agent whose disk buffer is on a full disk and whose sink is down.
type diskFull struct {
	in                    *testserver.Influx
	proxy                 *testserver.Proxy
	conf, listen, ballast string
	logPath               string
	agent                 *exec.Cmd
}

// startDiskFull starts an agent with the disk buffer on an 8 MiB tmpfs that a 6 MiB ballast
// file fills in part, an HTTP listener and the inputs of extra, writing to a real InfluxDB
// behind a proxy that is cut.
func startDiskFull(t *testing.T, extra string) *diskFull {
	e := &diskFull{in: testserver.StartInfluxDB(t, testserver.InfluxOptions{})}
	e.in.Exec(t, "CREATE DATABASE crash")
	e.proxy = testserver.StartProxy(t, strings.TrimPrefix(e.in.URL(), "http://"))
	e.proxy.Cut() // the sink is down until the restart
	dir := t.TempDir()
	bufDir := testutil.MountTmpfs(t, filepath.Join(dir, "buffer"), 8<<20, 0)
	e.ballast = filepath.Join(bufDir, "ballast")
	require.NoError(t, os.WriteFile(e.ballast, make([]byte, 6<<20), 0o644))
	e.listen = testutil.FreeAddr(t)
	e.conf = filepath.Join(dir, "morse.conf")
	require.NoError(t, os.WriteFile(e.conf, []byte(fmt.Sprintf(`
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
%s
[[outputs.influxdb]]
  urls = [%q]
  database = "crash"
  skip_database_creation = true
  content_encoding = "identity"
`, bufDir, e.listen, extra, e.proxy.URL())), 0o644))
	e.logPath = filepath.Join(dir, "agent.log")
	logs, err := os.Create(e.logPath)
	require.NoError(t, err)
	t.Cleanup(func() { logs.Close() })
	e.agent = startAgentLogging(t, e.conf, e.listen, logs)
	return e
}

// kill kills the agent with kill -9 and returns what it logged.
func (e *diskFull) kill(t *testing.T) string {
	require.NoError(t, e.agent.Process.Kill())
	_ = e.agent.Wait()
	out, err := os.ReadFile(e.logPath)
	require.NoError(t, err)
	return string(out)
}

// restart frees the disk, restores the sink and starts the agent again.
func (e *diskFull) restart(t *testing.T) *exec.Cmd {
	require.NoError(t, os.Remove(e.ballast))
	e.proxy.Restore()
	return startAgent(t, e.conf, e.listen)
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
