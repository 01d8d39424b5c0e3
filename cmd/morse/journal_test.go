package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSyslogPriority(t *testing.T) {
	tests := []struct {
		level slog.Level
		want  string
	}{
		{slog.LevelDebug - 4, "<7>"},
		{slog.LevelDebug, "<7>"},
		{slog.LevelInfo, "<6>"},
		{slog.LevelInfo + 2, "<6>"},
		{slog.LevelWarn, "<4>"},
		{slog.LevelWarn + 2, "<4>"},
		{slog.LevelError, "<3>"},
		{slog.LevelError + 4, "<3>"},
	}
	for _, tt := range tests {
		t.Run(tt.level.String(), func(t *testing.T) {
			require.Equal(t, tt.want, syslogPriority(tt.level))
		})
	}
}

// lockedBuffer is a bytes.Buffer safe for the concurrent test below.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestJournalHandlerLines(t *testing.T) {
	var buf lockedBuffer
	log := slog.New(newJournalHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}, newLogfmtHandler))
	plugin := log.With("plugin", "outputs.file").WithGroup("g")
	log.Debug("d")
	log.Info("started", "inputs", 3)
	plugin.Warn("write failed, will retry", "attempt", 2)
	plugin.Error("gave up")
	require.Equal(t, `<7>level=DEBUG msg=d
<6>level=INFO msg=started inputs=3
<4>level=WARN msg="write failed, will retry" plugin=outputs.file g.attempt=2
<3>level=ERROR msg="gave up" plugin=outputs.file
`, buf.String(), "a priority first, no time, attributes and groups kept")

	var text lockedBuffer
	log = slog.New(newJournalHandler(&text, &slog.HandlerOptions{Level: slog.LevelDebug}, newTelegrafHandler))
	log.With("plugin", "outputs.file").WithGroup("g").Warn("write failed, will retry", "attempt", 2)
	log.Info("started")
	require.Equal(t, "<4>W! [outputs.file] write failed, will retry g.attempt=2\n<6>I! [agent] started\n",
		text.String(), "Telegraf's text lines, with a priority and no time")

	var quiet lockedBuffer
	slog.New(newJournalHandler(&quiet, &slog.HandlerOptions{Level: slog.LevelWarn}, newTelegrafHandler)).Info("hidden")
	require.Empty(t, quiet.String(), "the level still filters")
}

// TestJournalHandlerConcurrent: loggers derived from one handler, used at once, never give
// a line another line's priority.
func TestJournalHandlerConcurrent(t *testing.T) {
	var buf lockedBuffer
	log := slog.New(newJournalHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}, newLogfmtHandler))
	levels := []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError}
	var wg sync.WaitGroup
	for i, l := range levels {
		wg.Add(1)
		go func() {
			defer wg.Done()
			child := log.With("worker", i)
			for range 200 {
				child.Log(context.Background(), l, "x")
			}
		}()
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	require.Len(t, lines, 800)
	for _, line := range lines {
		m := regexp.MustCompile(`^(<\d>)level=(\w+) `).FindStringSubmatch(line)
		require.Len(t, m, 3, line)
		var l slog.Level
		require.NoError(t, l.UnmarshalText([]byte(m[2])))
		require.Equal(t, syslogPriority(l), m[1], line)
	}
}

func statID(t *testing.T, f *os.File) string {
	t.Helper()
	fi, err := f.Stat()
	require.NoError(t, err)
	st := fi.Sys().(*syscall.Stat_t)
	return fmt.Sprintf("%d:%d", st.Dev, st.Ino)
}

func TestIsJournalStream(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "stream"))
	require.NoError(t, err)
	defer f.Close()
	other, err := os.Create(filepath.Join(dir, "other"))
	require.NoError(t, err)
	defer other.Close()
	tests := []struct {
		env  string
		want bool
	}{
		{statID(t, f), true},
		{statID(t, other), false},
		{"", false},
		{"garbage", false},
		{"12:x", false},
		{":", false},
	}
	for _, tt := range tests {
		t.Run(tt.env, func(t *testing.T) {
			require.Equal(t, tt.want, isJournalStream(tt.env, f))
		})
	}
}

// TestJournalFormatFromTheBinary: the real binary, its stderr a file that JOURNAL_STREAM
// names, writes priorities and no times; with JOURNAL_STREAM naming another stream (a
// wrapper redirected stderr) it keeps its timestamps.
func TestJournalFormatFromTheBinary(t *testing.T) {
	dir := t.TempDir()
	conf := writeUnsentConfig(t, dir)
	run := func(journalStream func(stderr *os.File) string) string {
		stderr, err := os.CreateTemp(dir, "stderr")
		require.NoError(t, err)
		defer stderr.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, morseBin, "--once", "--config", conf)
		cmd.Stderr = stderr
		cmd.Env = append(os.Environ(), "JOURNAL_STREAM="+journalStream(stderr))
		require.Error(t, cmd.Run(), "metrics are left unsent")
		out, err := os.ReadFile(stderr.Name())
		require.NoError(t, err)
		return string(out)
	}

	out := run(func(f *os.File) string { return statID(t, f) })
	require.Regexp(t, `(?m)^<4>W! \[outputs.file\] write failed, will retry `, out)
	require.Regexp(t, `(?m)^<3>E! \[agent\] output left metrics unsent output=file`, out)
	require.NotRegexp(t, `\d\dZ `, out)

	out = run(func(*os.File) string { return statID(t, os.Stdin) })
	require.Regexp(t, `(?m)^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ W! \[outputs.file\] write failed, will retry`, out)
	require.NotContains(t, out, "<4>")
}
