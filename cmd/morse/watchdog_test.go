package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testutil"
)

// TestWatchdogStopsPingingAWedgedAgent: a binary with plugins that ignore their contexts
// (-tags wedgetest) pings the watchdog until a gather or a flush loop is wedged past its
// bound plus half the watchdog period, then says why in STATUS and pings no more, so that
// systemd restarts it.
func TestWatchdogStopsPingingAWedgedAgent(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "morse-wedged")
	require.NoError(t, testutil.BuildMorse(t.Context(), bin, "-tags", "wedgetest"))

	for _, tc := range []struct{ name, plugins, want string }{
		{"gather", "[[inputs.wedged]]\n[[outputs.file]]\n  files = [\"" + filepath.Join(t.TempDir(), "o.lp") + "\"]\n",
			"STATUS=unhealthy, awaiting watchdog restart: wedged: inputs.wedged (gathering for"},
		{"flush", "[[inputs.mem]]\n[[outputs.wedged]]\n",
			"STATUS=unhealthy, awaiting watchdog restart: wedged: outputs.wedged (writing for"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conf := writeFile(t, t.TempDir(), "w.conf", "[agent]\n  interval = \"1s\"\n  round_interval = false\n  flush_interval = \"1s\"\n"+tc.plugins)
			sock := listenNotify(t)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "--config", conf)
			cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+sock.path, "WATCHDOG_USEC=1000000") // a 1s period
			require.NoError(t, cmd.Start())
			defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()

			pings := 0
			require.Equal(t, "READY=1", sock.next(t, &pings))
			status := sock.next(t, &pings)
			require.True(t, strings.HasPrefix(status, tc.want), status)
			require.Positive(t, pings, "healthy at first: pinged")
			// No ping for two periods: systemd would restart the agent.
			quiet := time.After(2 * time.Second)
			for {
				select {
				case m := <-sock.msgs:
					require.NotEqual(t, "WATCHDOG=1", m, "no ping once wedged")
					continue
				case <-quiet:
				}
				break
			}
		})
	}
}

// TestStatusSummaryAndExtendTimeout: the running agent keeps a one-line STATUS summary, and
// on SIGTERM, while its final flush to a sink that is down is still within
// shutdown_timeout, it extends systemd's stop timeout until the flush gives up.
func TestStatusSummaryAndExtendTimeout(t *testing.T) {
	conf := writeFile(t, t.TempDir(), "s.conf", `
[agent]
  interval = "1s"
  round_interval = false
  flush_interval = "1s"
  shutdown_timeout = "5s"
[[inputs.mem]]
[[outputs.influxdb]]
  urls = ["http://`+testutil.FreeAddr(t)+`"]
`)
	sock := listenNotify(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, morseBin, "--config", conf)
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+sock.path)
	require.NoError(t, cmd.Start())
	pings := 0
	require.Equal(t, "READY=1", sock.next(t, &pings))
	require.Eventually(t, func() bool {
		select {
		case m := <-sock.msgs:
			if summaryStatus.MatchString(m) {
				sock.summaries = append(sock.summaries, m)
			}
		default:
		}
		return len(sock.summaries) > 0
	}, 20*time.Second, 10*time.Millisecond, "a STATUS summary within its period")
	require.Contains(t, sock.summaries[0], "STATUS=1 inputs, 1 outputs; ")

	start := time.Now()
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, "STOPPING=1", sock.next(t, &pings))
	var extends []time.Duration
	for {
		m := sock.next(t, &pings)
		v, ok := strings.CutPrefix(m, "EXTEND_TIMEOUT_USEC=")
		require.True(t, ok, "only extensions until the exit: %q", m)
		usec, err := strconv.ParseInt(v, 10, 64)
		require.NoError(t, err)
		extends = append(extends, time.Duration(usec)*time.Microsecond)
		if time.Since(start) > 3*time.Second {
			break
		}
	}
	require.NoError(t, cmd.Wait())
	require.GreaterOrEqual(t, len(extends), 2, "extended while the flush ran: %v", extends)
	require.LessOrEqual(t, extends[0], 5*time.Second+3*time.Second+100*time.Millisecond, "shutdown_timeout plus a margin")
	require.Greater(t, extends[0], 5*time.Second)
}
