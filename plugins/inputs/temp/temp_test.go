package temp

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

// lines writes the metrics as Telegraf's expected_*.out files do: line protocol without
// the time, sorted.
func lines(t *testing.T, ms []morse.Metric) []string {
	t.Helper()
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		var b strings.Builder
		b.WriteString(m.Name())
		for _, tg := range m.Tags() {
			b.WriteString("," + tg.Key + "=" + tg.Value)
		}
		require.Len(t, m.Fields(), 1)
		f := m.Fields()[0]
		require.Equal(t, "temp", f.Key)
		v, ok := f.Value.Interface().(float64)
		require.True(t, ok, "temp is a float")
		b.WriteString(" temp=" + strconv.FormatFloat(v, 'f', -1, 64))
		out = append(out, b.String())
	}
	slices.Sort(out)
	return out
}

func readExpected(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			out = append(out, l)
		}
	}
	slices.Sort(out)
	return out
}

func gather(t *testing.T, hostSys, config string) (*testutil.Accumulator, error) {
	t.Helper()
	t.Setenv("HOST_SYS", hostSys)
	tp := &Temperature{}
	_, err := toml.Decode(config, tp)
	require.NoError(t, err)
	require.NoError(t, tp.Validate())
	acc := &testutil.Accumulator{}
	return acc, tp.Gather(context.Background(), acc)
}

// TestTelegrafsCases runs Telegraf's test cases: each directory's telegraf.conf in both
// metric formats, compared with Telegraf's expected output.
func TestTelegrafsCases(t *testing.T) {
	for _, name := range []string{"general", "with_device_tag", "with_name"} {
		dir := filepath.Join("testdata", "testcases", name)
		conf, err := os.ReadFile(filepath.Join(dir, "telegraf.conf"))
		require.NoError(t, err)
		body := strings.TrimPrefix(string(conf), "[[inputs.temp]]")
		for _, format := range []string{"v1", "v2"} {
			t.Run(name+"/"+format, func(t *testing.T) {
				acc, err := gather(t, filepath.Join(dir, "sys"), body+"\nmetric_format = \""+format+"\"\n")
				require.NoError(t, err)
				require.Empty(t, acc.Errors())
				require.Equal(t, readExpected(t, filepath.Join(dir, "expected_"+format+".out")), lines(t, acc.Metrics()))
			})
		}
	}
}

func TestDefaultFormatIsV2(t *testing.T) {
	acc, err := gather(t, filepath.Join("testdata", "testcases", "general", "sys"), "")
	require.NoError(t, err)
	require.Equal(t, readExpected(t, filepath.Join("testdata", "testcases", "general", "expected_v2.out")), lines(t, acc.Metrics()))
	require.ErrorContains(t, (&Temperature{MetricFormat: "v3"}).Validate(), `metric_format: invalid "v3"`)
}

func TestThermalZones(t *testing.T) {
	zonesOnly := t.TempDir()
	thermal, err := filepath.Abs(filepath.Join("testdata", "zones", "sys", "class", "thermal"))
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(zonesOnly, "class"), 0o755))
	require.NoError(t, os.Symlink(thermal, filepath.Join(zonesOnly, "class", "thermal")))
	acc, err := gather(t, zonesOnly, "add_device_tag = true")
	require.NoError(t, err)
	require.Equal(t, []string{"temp,sensor=acpitz temp=27.8", "temp,sensor=x86_pkg_temp temp=45"}, lines(t, acc.Metrics()),
		"without hwmon the zones are read; a zone has no device")

	both := filepath.Join("testdata", "zones", "sys")
	acc, err = gather(t, both, "")
	require.NoError(t, err)
	require.Equal(t, []string{"temp,sensor=k10temp_tccd1 temp=33.25", "temp,sensor=k10temp_tctl temp=33.25"}, lines(t, acc.Metrics()))
	acc, err = gather(t, both, "always_gather_zones = true")
	require.NoError(t, err)
	require.Len(t, acc.Metrics(), 4)
}

// TestZoneTryAgain: a zone whose hardware cannot answer now (EAGAIN on a non-blocking read,
// here a FIFO with a writer and no data) is left out without an error and without blocking.
func TestZoneTryAgain(t *testing.T) {
	sys := t.TempDir()
	zone := filepath.Join(sys, "class", "thermal", "thermal_zone0")
	require.NoError(t, os.MkdirAll(zone, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(zone, "type"), []byte("slow\n"), 0o644))
	require.NoError(t, syscall.Mkfifo(filepath.Join(zone, "temp"), 0o644))
	w, err := os.OpenFile(filepath.Join(zone, "temp"), os.O_RDWR, 0)
	require.NoError(t, err)
	defer w.Close()
	other := filepath.Join(sys, "class", "thermal", "thermal_zone1")
	require.NoError(t, os.MkdirAll(other, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(other, "type"), []byte("fine\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(other, "temp"), []byte("hot\n"), 0o644))
	acc, err := gather(t, sys, "")
	require.NoError(t, err)
	require.Empty(t, acc.Metrics())
	require.Len(t, acc.Errors(), 1, "the unparsable zone is an error, the busy one is not")
	require.ErrorContains(t, acc.Errors()[0], "parsing the temperature of zone")
}

func TestNoSensors(t *testing.T) {
	acc, err := gather(t, t.TempDir(), "")
	require.NoError(t, err)
	require.Zero(t, acc.NMetrics())
}
