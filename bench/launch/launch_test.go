package launch

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestStartWaitStop runs a shell that says it is ready in its log and then waits for a
// signal, as the agent does: WaitFor sees the log line, Stop ends it with SIGTERM, which is
// no error, and reports the CPU time and peak RSS of its life.
func TestStartWaitStop(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "child.log")
	p, err := Start("child", logPath, nil, []string{"/bin/sh", "-c", "echo ready >&2; echo out; exec sleep 60"})
	require.NoError(t, err)
	require.Positive(t, p.PID())
	require.Equal(t, logPath, p.LogPath())
	err = p.WaitFor(context.Background(), 10*time.Second, "ready", func() bool {
		b, _ := os.ReadFile(logPath)
		return strings.Contains(string(b), "ready\n") && strings.Contains(string(b), "out\n")
	})
	require.NoError(t, err, "stderr and, with no stdout given, stdout go to the log")
	_, maxRSS, err := p.Stop(10 * time.Second)
	require.NoError(t, err, "an exit by SIGTERM is the expected one")
	require.Positive(t, maxRSS)
	select {
	case <-p.Exited():
	default:
		t.Fatal("Stop returned before the process was waited for")
	}
}

// TestWaitForAProcessThatExits ends the wait with the exit and the log's last lines, and
// Stop then reports the exit status.
func TestWaitForAProcessThatExits(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "child.log")
	p, err := Start("child", logPath, nil, []string{"/bin/sh", "-c", "echo bad config >&2; exit 3"})
	require.NoError(t, err)
	err = p.WaitFor(context.Background(), time.Minute, "a port", func() bool { return false })
	require.ErrorContains(t, err, "child exited while waiting for a port")
	require.ErrorContains(t, err, "bad config")
	_, _, err = p.Stop(time.Second)
	require.ErrorContains(t, err, "exit status 3")
}

// TestWaitForEndsWithItsTimeoutAndContext stops waiting on a condition that never holds.
func TestWaitForEndsWithItsTimeoutAndContext(t *testing.T) {
	p, err := Start("child", filepath.Join(t.TempDir(), "child.log"), nil, []string{"/bin/sh", "-c", "exec sleep 60"})
	require.NoError(t, err)
	t.Cleanup(func() { _, _, _ = p.Stop(10 * time.Second) })
	err = p.WaitFor(context.Background(), 50*time.Millisecond, "nothing", func() bool { return false })
	require.ErrorContains(t, err, "child: no nothing within 50ms")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, p.WaitFor(ctx, time.Minute, "nothing", func() bool { return false }), context.Canceled)
}

func TestStartFails(t *testing.T) {
	_, err := Start("ghost", filepath.Join(t.TempDir(), "ghost.log"), nil, []string{"/nonexistent/ghost"})
	require.ErrorContains(t, err, "ghost:")
}

func TestPinnedAndTail(t *testing.T) {
	require.Equal(t, []string{"a", "b"}, Pinned(-1, "a", "b"))
	want := []string{"taskset", "-c", "0", "a"}
	if _, err := exec.LookPath("taskset"); err != nil {
		want = []string{"a"} // without taskset, unpinned
	}
	require.Equal(t, want, Pinned(0, "a"))
	path := filepath.Join(t.TempDir(), "log")
	require.NoError(t, os.WriteFile(path, []byte("1\n2\n3\n"), 0o600))
	require.Equal(t, "2\n3", Tail(path, 2))
	require.Empty(t, Tail(filepath.Join(t.TempDir(), "none"), 2))
}
