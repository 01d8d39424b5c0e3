package memlimit

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// tree writes files under a temporary root, as the paths of /proc and /sys they stand for.
func tree(t *testing.T, files map[string]string) string {
	root := t.TempDir()
	for path, content := range files {
		full := filepath.Join(root, path)
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(content), 0o644))
	}
	return root
}

const meminfo = "MemTotal:       8000000 kB\nMemFree:        1000 kB\n"

// TestLimit: the cgroup's limit wins when it is below the host's memory, from v2 or v1, at
// the mount's root or under the path /proc/self/cgroup names; "max" and v1's huge number
// mean no limit.
func TestLimit(t *testing.T) {
	host := int64(8000000) << 10
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  int64
		from  string
	}{
		{"host alone", map[string]string{"proc/meminfo": meminfo}, host, "/proc/meminfo"},
		{"v2 max", map[string]string{"proc/meminfo": meminfo, "sys/fs/cgroup/memory.max": "max\n"}, host, "/proc/meminfo"},
		{"v2 at the root", map[string]string{"proc/meminfo": meminfo, "sys/fs/cgroup/memory.max": "536870912\n"},
			512 << 20, "/sys/fs/cgroup/memory.max"},
		{"v2 under the process's path", map[string]string{"proc/meminfo": meminfo, "proc/self/cgroup": "0::/system.slice/morse.service\n",
			"sys/fs/cgroup/system.slice/morse.service/memory.max": "268435456\n"},
			256 << 20, "/sys/fs/cgroup/system.slice/morse.service/memory.max"},
		{"v1 unlimited", map[string]string{"proc/meminfo": meminfo, "proc/self/cgroup": "4:memory:/docker/abc\n",
			"sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes": "9223372036854771712\n"}, host, "/proc/meminfo"},
		{"v1 limited", map[string]string{"proc/meminfo": meminfo, "proc/self/cgroup": "5:cpu:/\n4:memory:/docker/abc\n",
			"sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes": "1073741824\n"},
			1 << 30, "/sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes"},
		{"above the host", map[string]string{"proc/meminfo": meminfo, "sys/fs/cgroup/memory.max": "99999999999999\n"}, host, "/proc/meminfo"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, from, err := limit(tree(t, tc.files))
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.from, from)
		})
	}
	_, _, err := limit(tree(t, map[string]string{"proc/meminfo": "MemFree: 1 kB\n"}))
	require.ErrorContains(t, err, "no MemTotal")
}

// TestLimitOfThisProcess reads the real files: some memory, and no more than the host's.
func TestLimitOfThisProcess(t *testing.T) {
	n, from, err := Limit()
	require.NoError(t, err)
	host, err := memTotal("/proc/meminfo")
	require.NoError(t, err)
	require.Positive(t, n)
	require.LessOrEqual(t, n, host)
	require.NotEmpty(t, from)
}
