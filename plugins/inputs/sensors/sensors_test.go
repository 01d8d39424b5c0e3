package sensors

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

// fakeSensors puts a sensors script first in PATH that prints the fixture when called as
// `sensors -A -u`, and otherwise runs body.
func fakeSensors(t *testing.T, body string) {
	t.Helper()
	dir := t.TempDir()
	fixture, err := filepath.Abs(filepath.Join("testdata", "telegraf.out"))
	require.NoError(t, err)
	script := "#!/bin/sh\n" + body + "\n[ \"$*\" = \"-A -u\" ] || { echo \"unexpected arguments: $*\" >&2; exit 2; }\ncat " + fixture + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sensors"), []byte(script), 0o755))
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// byFeature returns the fields of each metric by "chip/feature".
func byFeature(t *testing.T, acc *testutil.Accumulator) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, m := range acc.MetricsNamed("sensors") {
		tags := testutil.TagsOf(m)
		require.Len(t, tags, 2)
		key := tags["chip"] + "/" + tags["feature"]
		require.NotContains(t, out, key)
		out[key] = testutil.FieldsOf(m)
	}
	return out
}

func TestTelegrafsOutput(t *testing.T) {
	fakeSensors(t, "")
	acc := &testutil.Accumulator{}
	require.NoError(t, New().Gather(context.Background(), acc))
	got := byFeature(t, acc)
	require.Len(t, got, 10)
	require.Equal(t, map[string]any{"temp_input": 8.3, "temp_crit": 31.3}, got["acpitz-virtual-0/temp1"])
	require.Equal(t, map[string]any{"power_average": 0.0, "power_average_interval": 300.0}, got["power_meter-acpi-0/power1"])
	require.Equal(t, map[string]any{"temp_input": 77.0, "temp_max": 82.0, "temp_crit": 92.0, "temp_crit_alarm": 0.0},
		got["coretemp-isa-0000/physical_id_0"])
	require.Equal(t, map[string]any{"temp_input": 66.0, "temp_max": 82.0, "temp_crit": 92.0, "temp_crit_alarm": 0.0},
		got["coretemp-isa-0001/core_0"])
	require.Equal(t, map[string]any{"in_input": 1.136, "in_min": 0.8, "in_max": 1.6}, got["atk0110-acpi-0/vcore_voltage"])
	require.Equal(t, map[string]any{"in_input": 3.36, "in_min": 2.97, "in_max": 3.63}, got["atk0110-acpi-0/+3.3_voltage"])

	s := New()
	s.RemoveNumbers = false
	acc = &testutil.Accumulator{}
	require.NoError(t, s.Gather(context.Background(), acc))
	got = byFeature(t, acc)
	require.Equal(t, map[string]any{"temp3_input": 70.0, "temp3_max": 82.0, "temp3_crit": 92.0, "temp3_crit_alarm": 0.0},
		got["coretemp-isa-0001/core_1"])
	require.Equal(t, map[string]any{"in1_input": 3.36, "in1_min": 2.97, "in1_max": 3.63}, got["atk0110-acpi-0/+3.3_voltage"])
}

func TestFailures(t *testing.T) {
	t.Run("not installed", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		err := New().Gather(context.Background(), &testutil.Accumulator{})
		require.ErrorContains(t, err, "sensors not found")
	})

	fakeSensors(t, "echo 'No sensors found!' >&2; exit 1")
	err := New().Gather(context.Background(), &testutil.Accumulator{})
	require.ErrorContains(t, err, `failed to run command`)
	require.ErrorContains(t, err, "No sensors found!")

	fakeSensors(t, "exec sleep 30")
	s := New()
	s.Timeout = morse.Duration(100 * time.Millisecond)
	start := time.Now()
	err = s.Gather(context.Background(), &testutil.Accumulator{})
	require.ErrorContains(t, err, "deadline exceeded (timeout 100ms)")
	require.Less(t, time.Since(start), 5*time.Second)

	acc := &testutil.Accumulator{}
	err = New().parse([]byte("chip-0\ntemp1:\n  temp1_input: hot\n"), acc, time.Now())
	require.ErrorContains(t, err, `parsing "  temp1_input: hot" of chip "chip-0"`)
	require.Zero(t, acc.NMetrics())
}

func TestSample(t *testing.T) {
	info, ok := morse.DefaultRegistry().Input("sensors")
	require.True(t, ok)
	require.True(t, strings.HasPrefix(info.SampleConfig, "# "+Description+"\n"))
	s, ok := info.New().(*Sensors)
	require.True(t, ok)
	require.Equal(t, New(), s)
}
