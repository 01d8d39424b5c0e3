package globpath

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMatch(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"a.log", "b.log", "c.txt", "log1", "log2", "log3", "sub/d.log", "sub/deeper/e.log", "sub/f.txt"} {
		path := filepath.Join(dir, f)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, nil, 0o644))
	}
	rel := func(paths []string) []string {
		var out []string
		for _, p := range paths {
			r, err := filepath.Rel(dir, p)
			require.NoError(t, err)
			out = append(out, r)
		}
		return out
	}
	tests := []struct {
		pattern string
		want    []string
	}{
		{pattern: "a.log", want: []string{"a.log"}},
		{pattern: "missing.log"},
		{pattern: "sub", want: nil}, // a directory is not a file to read
		{pattern: "*.log", want: []string{"a.log", "b.log"}},
		{pattern: "**.log", want: []string{"a.log", "b.log", "sub/d.log", "sub/deeper/e.log"}},
		{pattern: "sub/**.log", want: []string{"sub/d.log", "sub/deeper/e.log"}},
		{pattern: "*/*.log", want: []string{"sub/d.log"}},
		{pattern: "log[!1-2]*", want: []string{"log3"}},
		{pattern: "log[1-2]", want: []string{"log1", "log2"}},
		{pattern: "log?", want: []string{"log1", "log2", "log3"}},
		{pattern: "*.{txt,log}", want: []string{"a.log", "b.log", "c.txt"}},
		{pattern: "nodir/*.log"},
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			g, err := Compile(filepath.Join(dir, tt.pattern))
			require.NoError(t, err)
			require.Equal(t, tt.want, rel(g.Match()))
		})
	}
	for _, bad := range []string{"x[ab", "x{a,b"} {
		_, err := Compile(bad)
		require.Error(t, err, bad)
	}
}

// TestMatchAnyFindsSockets: Match finds regular files only, MatchAny a unix socket too (and
// still no directory).
func TestMatchAnyFindsSockets(t *testing.T) {
	dir := t.TempDir()
	l, err := net.Listen("unix", filepath.Join(dir, "php.sock"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	require.NoError(t, os.WriteFile(filepath.Join(dir, "php.log"), nil, 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "php.d"), 0o755))
	g, err := Compile(filepath.Join(dir, "php*"))
	require.NoError(t, err)
	require.Equal(t, []string{filepath.Join(dir, "php.log")}, g.Match())
	require.Equal(t, []string{filepath.Join(dir, "php.log"), filepath.Join(dir, "php.sock")}, g.MatchAny())
}
