package logrotate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// clock is a settable time for the writer.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

func contents(t *testing.T, w *Writer) []string {
	t.Helper()
	archives, err := w.Archives()
	require.NoError(t, err)
	var out []string
	for _, a := range archives {
		out = append(out, read(t, a))
	}
	return out
}

func TestRotateBySize(t *testing.T) {
	tests := []struct {
		name        string
		maxArchives int
		want        []string // the archives' contents, oldest first
	}{
		{name: "keep all", maxArchives: -1, want: []string{"aaaa\n", "bbbb\n", "cccc\n"}},
		{name: "keep two", maxArchives: 2, want: []string{"bbbb\n", "cccc\n"}},
		{name: "keep none", maxArchives: 0, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "logs", "morse.log")
			c := &clock{t: time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)}
			w, err := open(path, Options{MaxSize: 5, MaxArchives: tt.maxArchives}, c.now)
			require.NoError(t, err)
			for _, line := range []string{"aaaa\n", "bbbb\n", "cccc\n", "dd\n"} {
				_, err := w.Write([]byte(line))
				require.NoError(t, err)
				c.t = c.t.Add(time.Second) // archive names are unique per second, as in Telegraf
			}
			require.NoError(t, w.Close())
			require.Equal(t, "dd\n", read(t, path), "the live file holds what came after the last rotation")
			require.Equal(t, tt.want, contents(t, w))
		})
	}
}

func TestArchiveNames(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "telegraf.log")
	c := &clock{t: time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)}
	w, err := open(path, Options{MaxSize: 1, MaxArchives: -1}, c.now)
	require.NoError(t, err)
	_, err = w.Write([]byte("x\n"))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	archives, err := w.Archives()
	require.NoError(t, err)
	require.Equal(t, []string{filepath.Join(dir, "telegraf.2026-11-23-1795428000.log")}, archives, "Telegraf's <stem>.<date>-<unix><ext>")
}

func TestRotateByInterval(t *testing.T) {
	path := filepath.Join(t.TempDir(), "morse.log")
	c := &clock{t: time.Now()}
	w, err := open(path, Options{Interval: time.Hour, MaxArchives: 5}, c.now)
	require.NoError(t, err)
	write := func(s string) {
		_, err := w.Write([]byte(s))
		require.NoError(t, err)
	}
	write("first\n")
	c.t = c.t.Add(59 * time.Minute)
	write("second\n")
	require.Empty(t, contents(t, w), "not an hour yet")
	c.t = c.t.Add(2 * time.Minute)
	write("third\n") // the write that finds the hour over rotates after it
	require.Equal(t, []string{"first\nsecond\nthird\n"}, contents(t, w))
	write("fourth\n")
	require.NoError(t, w.Close())
	require.Equal(t, "fourth\n", read(t, path))
}

// TestAnOldFileRotatesOnOpen: a log last changed longer ago than the interval rotates when
// it is opened, so that frequent restarts do not keep it from rotating.
func TestAnOldFileRotatesOnOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "morse.log")
	require.NoError(t, os.WriteFile(path, []byte("from before\n"), 0o644))
	old := time.Now().Add(-2 * time.Hour)
	require.NoError(t, os.Chtimes(path, old, old))
	w, err := Open(path, Options{Interval: time.Hour, MaxArchives: 5})
	require.NoError(t, err)
	_, err = w.Write([]byte("new\n"))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.Equal(t, []string{"from before\n"}, contents(t, w))
	require.Equal(t, "new\n", read(t, path))
}

func TestNoRotationWithoutLimits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "morse.log")
	w, err := Open(path, Options{MaxArchives: 5})
	require.NoError(t, err)
	for range 100 {
		_, err := w.Write([]byte(strings.Repeat("x", 100) + "\n"))
		require.NoError(t, err)
	}
	require.NoError(t, w.Close())
	require.Empty(t, contents(t, w))
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Zero(t, st.Mode().Perm()&^Perm, "no more than Telegraf's mode")
	_, err = w.Write([]byte("late"))
	require.ErrorIs(t, err, os.ErrClosed)
}
