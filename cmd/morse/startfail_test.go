package main

import (
	"net"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/diskq"
	"github.com/morse-agent/morse/internal/testutil"
)

// diskBufferConfig is a config whose only output keeps its disk buffer under dir: the
// output's own directory is dir/file-1.
func diskBufferConfig(t *testing.T, dir string) string {
	return writeFile(t, t.TempDir(), "disk.conf", `
[agent]
  interval = "10s"
  buffer_strategy = "disk"
  buffer_directory = "`+dir+`"
[[inputs.mem]]
[[outputs.file]]
  files = ["`+filepath.Join(t.TempDir(), "out.lp")+`"]
`)
}

// TestFailedStartExitsOne: an agent that cannot start exits 1, so that a service manager
// restarts it (Restart=on-failure), and the last line it logs says why.
func TestFailedStartExitsOne(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T) (conf, cause string)
	}{
		{"listener port in use", func(t *testing.T) (string, string) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			t.Cleanup(func() { ln.Close() })
			conf := writeFile(t, t.TempDir(), "port.conf", `
[[inputs.influxdb_listener]]
  service_address = "`+ln.Addr().String()+`"
[[outputs.file]]
  files = ["stdout"]
`)
			return conf, "address already in use"
		}},
		{"buffer directory locked by another process", func(t *testing.T) (string, string) {
			dir := t.TempDir()
			q, _, err := diskq.Open(filepath.Join(dir, "file-1"), diskq.Options{})
			require.NoError(t, err)
			t.Cleanup(func() { q.Close() })
			return diskBufferConfig(t, dir), "in use by another process"
		}},
		{"read-only buffer directory", func(t *testing.T) (string, string) {
			// A read-only tmpfs: chmod does not stop root, which the tests run as, from
			// writing; a read-only file system does.
			ro := testutil.MountTmpfs(t, t.TempDir(), 64<<10, syscall.MS_RDONLY)
			return diskBufferConfig(t, ro), "read-only file system"
		}},
		{"buffer directory under a file", func(t *testing.T) (string, string) {
			file := writeFile(t, t.TempDir(), "plain", "")
			return diskBufferConfig(t, filepath.Join(file, "buffer")), "not a directory"
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			conf, cause := tc.setup(t)
			_, stderr, code := runMorse(t, "--config", conf)
			require.Equal(t, exitFailed, code, stderr)
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			last := lines[len(lines)-1]
			require.Contains(t, last, "agent failed to start", stderr)
			require.Contains(t, last, cause, stderr)
		})
	}
}
