package hostfs

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEnvironmentNamesTheRoot(t *testing.T) {
	t.Setenv("HOST_PROC", "")
	t.Setenv("HOST_SYS", "")
	require.Equal(t, "/proc/net/stat/nf_conntrack", Proc("net", "stat", "nf_conntrack"))
	require.Equal(t, "/sys/class/hwmon", Sys("class/hwmon"))
	require.Equal(t, "/proc", Proc())
	t.Setenv("HOST_PROC", "/hostfs/proc")
	t.Setenv("HOST_SYS", "testdata/sys")
	require.Equal(t, "/hostfs/proc/sys/fs", Proc("sys", "fs"))
	require.Equal(t, "testdata/sys/class/thermal", Sys("class", "thermal"))
}
