package conntrack

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testutil"
)

func gather(t *testing.T, hostProc string, c *Conntrack) (*testutil.Accumulator, error) {
	t.Helper()
	t.Setenv("HOST_PROC", hostProc)
	require.NoError(t, c.Validate())
	require.NoError(t, c.Init())
	acc := &testutil.Accumulator{}
	return acc, c.Gather(context.Background(), acc)
}

// byCPU returns the fields of the conntrack metrics by their cpu tag ("" for the table's).
func byCPU(acc *testutil.Accumulator) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, m := range acc.MetricsNamed("conntrack") {
		cpu, _ := m.Tag("cpu")
		out[cpu] = testutil.FieldsOf(m)
	}
	return out
}

func stats(v ...uint64) map[string]any {
	out := map[string]any{}
	for i, name := range statNames {
		out[name] = v[i]
	}
	return out
}

func TestThisMachinesFiles(t *testing.T) {
	acc, err := gather(t, filepath.Join("testdata", "host", "proc"), &Conntrack{Collect: []string{"all", "percpu"},
		Files: []string{"nf_conntrack_count", "nf_conntrack_max", "nf_conntrack_buckets", "nf_conntrack_acct"}})
	require.NoError(t, err)
	require.Empty(t, acc.Errors())
	require.Equal(t, map[string]map[string]any{
		"":     {"ip_conntrack_count": 1234321.0, "ip_conntrack_max": 9999999.0, "ip_conntrack_buckets": 262144.0},
		"all":  stats(2*0x66e4, 0, 0, 0, 0x4ee+0x46c, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
		"cpu0": stats(0x66e4, 0, 0, 0, 0x4ee, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
		"cpu1": stats(0x66e4, 0, 0, 0, 0x46c, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
	}, byCPU(acc), "the default dirs are under HOST_PROC; entries is the table's, repeated on each CPU's row and summed as Telegraf does")
}

func TestTelegrafsPerCPURows(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ip_conntrack_count"), []byte("1234321"), 0o644))
	acc, err := gather(t, filepath.Join("testdata", "telegraf", "proc"), &Conntrack{Collect: []string{"percpu", "all"},
		Dirs: []string{dir}})
	require.NoError(t, err)
	require.Equal(t, map[string]map[string]any{
		"":     {"ip_conntrack_count": 1234321.0},
		"cpu0": stats(59, 10, 1, 5, 43, 13, 3, 5, 9, 20, 49, 7, 21, 12, 44, 53, 31),
		"cpu1": stats(79, 10, 1, 5, 43, 13, 3, 5, 9, 10, 49, 7, 21, 12, 44, 53, 31),
		"all":  stats(138, 20, 2, 10, 86, 26, 6, 10, 18, 30, 98, 14, 42, 24, 88, 106, 62),
	}, byCPU(acc))
}

func TestFailures(t *testing.T) {
	require.ErrorContains(t, (&Conntrack{Collect: []string{"all", "cpu"}}).Validate(), `collect: unknown choice "cpu"`)

	acc, err := gather(t, t.TempDir(), &Conntrack{Collect: []string{"all"}})
	require.EqualError(t, err, "conntrack input failed to collect metrics, make sure that the kernel module is loaded")
	require.Len(t, acc.Errors(), 2, "the statistics file missing, and so no statistics")
	require.Zero(t, acc.NMetrics())

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "nf_conntrack_count"), []byte("many\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "nf_conntrack_max"), []byte("65536\n"), 0o644))
	acc, err = gather(t, t.TempDir(), &Conntrack{Dirs: []string{dir}})
	require.NoError(t, err)
	require.Len(t, acc.Errors(), 1)
	require.ErrorContains(t, acc.Errors()[0], "failed to parse")
	require.Equal(t, map[string]map[string]any{"": {"ip_conntrack_max": 65536.0}}, byCPU(acc), "the bad value is left out")
}

func TestGoldenShape(t *testing.T) {
	t.Setenv("HOST_PROC", "")
	shapes := testutil.LoadGolden(t, filepath.Join("testdata", "conntrack.golden"))
	ms := testutil.GatherReal(t, &Conntrack{}, shapes.Config, 1)
	require.Empty(t, shapes.Check(ms))
	cpus := map[string]bool{}
	for _, m := range ms {
		cpu, _ := m.Tag("cpu")
		cpus[cpu] = true
	}
	require.Subset(t, cpus, map[string]bool{"": true, "all": true, "cpu0": true}, "the table's, the sum and the first CPU's")
}
