package linux_sysctl_fs //nolint:revive // the package is named as the plugin

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

func gather(t *testing.T, hostProc string) (map[string]any, error) {
	t.Helper()
	t.Setenv("HOST_PROC", hostProc)
	acc := &testutil.Accumulator{}
	err := (&SysctlFS{}).Gather(context.Background(), acc)
	if err != nil || acc.NMetrics() == 0 {
		return nil, err
	}
	ms := acc.MetricsNamed("linux_sysctl_fs")
	require.Len(t, ms, 1)
	require.Empty(t, ms[0].Tags())
	return testutil.FieldsOf(ms[0]), nil
}

func TestFixtures(t *testing.T) {
	got, err := gather(t, filepath.Join("testdata", "telegraf", "proc"))
	require.NoError(t, err)
	require.Equal(t, map[string]any{
		"aio-nr": uint64(100), "aio-max-nr": uint64(101), "super-nr": uint64(102), "super-max": uint64(103),
		"file-nr": uint64(104), "file-max": uint64(106),
		"inode-nr": uint64(107), "inode-free-nr": uint64(108), "inode-preshrink-nr": uint64(109),
	}, got, "Telegraf's own test")

	got, err = gather(t, filepath.Join("testdata", "host", "proc"))
	require.NoError(t, err)
	require.Equal(t, map[string]any{
		"aio-nr": uint64(0), "aio-max-nr": uint64(65536), "file-nr": uint64(1458), "file-max": uint64(2466170),
		"inode-nr": uint64(433976), "inode-free-nr": uint64(0), "inode-preshrink-nr": uint64(0),
		"dentry-nr": uint64(545920), "dentry-unused-nr": uint64(543677), "dentry-age-limit": uint64(45),
		"dentry-want-pages": uint64(0),
	}, got, "a real kernel's files, without quota and super-*")
}

func TestMalformedAndMissing(t *testing.T) {
	got, err := gather(t, t.TempDir())
	require.NoError(t, err, "a kernel without the files is not an error")
	require.Nil(t, got, "and gives no metric")

	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "sys", "fs"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sys", "fs", "file-nr"), []byte("12\t0\tlots\n"), 0o644))
	_, err = gather(t, dir)
	require.ErrorContains(t, err, "parsing file-max")
}

func TestGoldenShape(t *testing.T) {
	t.Setenv("HOST_PROC", "")
	testutil.CheckGolden(t, filepath.Join("testdata", "linux_sysctl_fs.golden"),
		func() morse.Input { return &SysctlFS{} }, 1)
}

func TestRegistered(t *testing.T) {
	info, ok := morse.DefaultRegistry().Input("linux_sysctl_fs")
	require.True(t, ok)
	require.Equal(t, "# "+Description+"\n[[inputs.linux_sysctl_fs]]\n  # no configuration\n", info.SampleConfig)
}
