package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/morse-agent/morse/internal/sdnotify"
	"github.com/morse-agent/morse/internal/testutil"
)

// notifySocket is a notify socket the test owns, as the service manager owns its own.
type notifySocket struct {
	path      string
	conn      *net.UnixConn
	msgs      chan string
	summaries []string // periodic STATUS summaries that next passed
}

func listenNotify(t *testing.T) *notifySocket {
	t.Helper()
	s := &notifySocket{path: filepath.Join(testutil.SocketDir(t), "notify"), msgs: make(chan string, 1024)}
	var err error
	s.conn, err = net.ListenUnixgram("unixgram", &net.UnixAddr{Name: s.path, Net: "unixgram"})
	require.NoError(t, err)
	go func() {
		defer close(s.msgs)
		buf := make([]byte, 4096)
		for {
			n, err := s.conn.Read(buf)
			if err != nil {
				return
			}
			s.msgs <- string(buf[:n])
		}
	}()
	t.Cleanup(func() { s.conn.Close() })
	return s
}

// next returns the next message that is not a watchdog ping or a periodic status summary,
// counting the pings it passes and keeping the summaries.
func (s *notifySocket) next(t *testing.T, pings *int) string {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case m, ok := <-s.msgs:
			require.True(t, ok, "the socket closed")
			if m == "WATCHDOG=1" {
				*pings++
				continue
			}
			if summaryStatus.MatchString(m) {
				s.summaries = append(s.summaries, m)
				continue
			}
			return m
		case <-deadline:
			t.Fatal("no notification within 30s")
		}
	}
}

// summaryStatus is the periodic one-line summary.
var summaryStatus = regexp.MustCompile(`^STATUS=\d+ inputs, \d+ outputs; \d+ metrics buffered, \d+ written, \d+ dropped$`)

func monotonicUsec(t *testing.T) int64 {
	t.Helper()
	var ts unix.Timespec
	require.NoError(t, unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts))
	return ts.Nano() / 1000
}

// requireReloading checks a RELOADING=1 message and that its MONOTONIC_USEC was read between
// the two clock readings around the SIGHUP that caused it.
func requireReloading(t *testing.T, msg string, before, after int64) {
	t.Helper()
	lines := strings.Split(msg, "\n")
	require.Len(t, lines, 2, msg)
	require.Equal(t, "RELOADING=1", lines[0])
	usec, ok := strings.CutPrefix(lines[1], "MONOTONIC_USEC=")
	require.True(t, ok, msg)
	v, err := strconv.ParseInt(usec, 10, 64)
	require.NoError(t, err)
	require.GreaterOrEqual(t, v, before)
	require.LessOrEqual(t, v, after)
}

// TestNotifyProtocolFromTheBinary: the real binary under a notify socket the test owns sends
// READY, then around each SIGHUP RELOADING with MONOTONIC_USEC, a STATUS, and READY, then
// STOPPING on SIGTERM, and pings the watchdog throughout; the commands it runs do not see
// the socket or the watchdog.
func TestNotifyProtocolFromTheBinary(t *testing.T) {
	dir := t.TempDir()
	outFile := filepath.Join(dir, "out.lp")
	script := writeFile(t, dir, "childenv.sh",
		"#!/bin/sh\necho \"childenv notify=\\\"${NOTIFY_SOCKET:-unset}\\\",watchdog=\\\"${WATCHDOG_USEC:-unset}\\\"\"\n")
	require.NoError(t, os.Chmod(script, 0o755))
	good := `
[agent]
  interval = "1s"
  round_interval = false
  flush_interval = "1s"
  shutdown_timeout = "5s"
[[inputs.exec]]
  commands = ["` + script + `"]
[[outputs.file]]
  files = ["` + outFile + `"]
`
	conf := writeFile(t, dir, "svc.conf", good)
	sock := listenNotify(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, morseBin, "--config", conf)
	// A 200 ms period: pings every 100 ms, several during the test.
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+sock.path, "WATCHDOG_USEC=200000")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	logs := watchLog(stderr)
	pings := 0

	require.Equal(t, "READY=1", sock.next(t, &pings))
	logs.waitFor(t, "agent started")

	writeFile(t, dir, "svc.conf", good+"\n[[inputs.nosuch]]\n")
	before := monotonicUsec(t)
	require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
	requireReloading(t, sock.next(t, &pings), before, monotonicUsec(t))
	status := sock.next(t, &pings)
	require.Equal(t, "STATUS=reload refused; still running the previous config: "+conf+":12: inputs.nosuch: unknown input plugin", status)
	require.Equal(t, "READY=1", sock.next(t, &pings))

	writeFile(t, dir, "svc.conf", good+"\n[[inputs.mem]]\n")
	before = monotonicUsec(t)
	require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
	requireReloading(t, sock.next(t, &pings), before, monotonicUsec(t))
	require.Equal(t, "STATUS=", sock.next(t, &pings), "a reload that worked clears the refusal")
	require.Equal(t, "READY=1", sock.next(t, &pings))
	logs.waitFor(t, "config reloaded")

	require.Eventually(t, func() bool {
		data, _ := os.ReadFile(outFile)
		return strings.Contains(string(data), "childenv")
	}, 20*time.Second, 50*time.Millisecond, "the exec input ran its command")

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, "STOPPING=1", sock.next(t, &pings))
	require.NoError(t, cmd.Wait())
	require.Positive(t, pings, "the watchdog was pinged")

	data, err := os.ReadFile(outFile)
	require.NoError(t, err)
	got := byName(testutil.Parse(t, string(data), false))
	require.NotEmpty(t, got["childenv"])
	for _, m := range got["childenv"] {
		for _, k := range []string{"notify", "watchdog"} {
			v, ok := m.Field(k)
			require.True(t, ok)
			require.Equal(t, "unset", v.Str(), "a command the agent runs does not inherit %s", k)
		}
	}
}

func TestRefusedStatus(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{errors.New("a.conf:3: inputs.cpu.percpu: expected a boolean"),
			"reload refused; still running the previous config: a.conf:3: inputs.cpu.percpu: expected a boolean"},
		{errors.New("a.conf:3: x\na.conf:5: y\n\na.conf:9: z\n"),
			"reload refused; still running the previous config: a.conf:3: x (and 2 more problems, see the journal)"},
		{errors.New(""), "reload refused; still running the previous config"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, refusedStatus(tt.err))
	}
}

// TestNotificationFailuresAreLoggedOnce: a manager that cannot be reached costs one warning,
// not one per message, and reaching it again is said once.
func TestNotificationFailuresAreLoggedOnce(t *testing.T) {
	path := filepath.Join(testutil.SocketDir(t), "notify")
	n, err := sdnotify.New(func(k string) string {
		if k == "NOTIFY_SOCKET" {
			return path
		}
		return ""
	}, os.Getpid())
	require.NoError(t, err)
	var buf lockedBuffer
	sm := &serviceManager{n: n, log: slog.New(slog.NewTextHandler(&buf, nil))}
	for range 3 {
		sm.ready()
	}
	require.Equal(t, 1, strings.Count(buf.String(), "cannot notify the service manager"), buf.String())

	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	require.NoError(t, err)
	defer conn.Close()
	sm.ready()
	sm.ready()
	require.Equal(t, 1, strings.Count(buf.String(), "notifying the service manager again"), buf.String())
}

// recordingPinger records what the watchdog sends.
type recordingPinger struct {
	mu       sync.Mutex
	pings    int
	statuses []string
}

func (r *recordingPinger) Watchdog() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pings++
	return nil
}

func (r *recordingPinger) Status(s string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.statuses = append(r.statuses, s)
	return nil
}

func (r *recordingPinger) snapshot() (int, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pings, append([]string(nil), r.statuses...)
}

// TestWatchdogPingsOnlyWhileHealthy: pings every half period while the check passes, none
// while it fails, with the reason said once, and pings again once it passes.
func TestWatchdogPingsOnlyWhileHealthy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var health error
		setHealth := func(err error) { mu.Lock(); health = err; mu.Unlock() }
		rec := &recordingPinger{}
		var logs lockedBuffer
		w := watchdog{
			ping: rec, period: 10 * time.Second, log: slog.New(slog.NewTextHandler(&logs, nil)),
			check:  func(time.Time) error { mu.Lock(); defer mu.Unlock(); return health },
			report: func(err error) { require.NoError(t, err) },
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); w.run(ctx) }()

		step := func(d time.Duration) (int, []string) {
			time.Sleep(d)
			synctest.Wait()
			return rec.snapshot()
		}
		pings, statuses := step(0)
		require.Equal(t, 1, pings, "a ping at once")
		pings, _ = step(5 * time.Second)
		require.Equal(t, 2, pings, "and every half period")

		setHealth(errors.New("outputs.file flush loop made no progress for 40s"))
		pings, statuses = step(5 * time.Second)
		require.Equal(t, 2, pings, "no ping while unhealthy")
		require.Equal(t, []string{"unhealthy, awaiting watchdog restart: outputs.file flush loop made no progress for 40s"}, statuses)
		pings, statuses = step(15 * time.Second)
		require.Equal(t, 2, pings)
		require.Len(t, statuses, 1, "the reason is said once")
		require.Equal(t, 1, strings.Count(logs.String(), "watchdog: not pinging"), logs.String())

		setHealth(nil)
		pings, statuses = step(5 * time.Second)
		require.Equal(t, 3, pings, "healthy again: pinging again")
		require.Equal(t, "", statuses[len(statuses)-1], "and the status is cleared")

		cancel()
		<-done
	})
}
