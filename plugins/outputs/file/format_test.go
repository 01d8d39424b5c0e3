package file_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/config"
	"github.com/morse-agent/morse/internal/testserver"
	_ "github.com/morse-agent/morse/plugins/inputs/file" // the input of the agent below
	"github.com/morse-agent/morse/plugins/outputs/file"
)

// TestAgentWritesCSV runs an agent whose inputs.file reads line protocol and whose
// outputs.file writes CSV, from a config as a Telegraf user writes it: the loader decodes
// data_format and the csv_* keys into the output's embedded serializer config, and the
// file holds Telegraf's header and rows (its csv testcase header.csv).
func TestAgentWritesCSV(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.influx"), filepath.Join(dir, "out.csv")
	require.NoError(t, os.WriteFile(in, []byte(
		"impression,flagname=F5,host=1cbbb3796fc2,key=12345,platform=Java,sdkver=4.9.1,value=false count_sum=5i 1653643420000000000\n"), 0o644))
	conf := fmt.Sprintf(`
[agent]
  interval = "100ms"
  flush_interval = "100ms"
  omit_hostname = true
[[inputs.file]]
  files = [%q]
[[outputs.file]]
  files = [%q]
  data_format = "csv"
  csv_header = true
`, in, out)
	cfg, err := config.Load(config.Options{Sources: []config.Source{{Name: "test.conf", Data: []byte(conf)}}})
	require.NoError(t, err)
	f := cfg.Outputs[0].Plugin.(*file.File)
	require.Equal(t, "csv", f.DataFormat)
	require.True(t, f.CSV.Header, "csv_header decoded into the embedded options")
	testserver.RunAgent(t, cfg)

	const header = "timestamp,measurement,flagname,host,key,platform,sdkver,value,count_sum\n"
	const row = "1653643420,impression,F5,1cbbb3796fc2,12345,Java,4.9.1,false,5\n"
	var got string
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(out)
		got = string(b)
		return strings.Count(got, "\n") >= 3 // the header and two gathers' rows
	}, 30*time.Second, 20*time.Millisecond)
	require.Equal(t, header+row+row, got[:len(header)+2*len(row)], "one header, then a row a gather")
	require.Equal(t, 1, strings.Count(got, "timestamp,"), "the header is written once")
}

// TestAgentWritesGraphite: outputs.file with data_format "graphite" and a Telegraf template
// writes Telegraf's graphite lines, one per field.
func TestAgentWritesGraphite(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.influx"), filepath.Join(dir, "out.graphite")
	require.NoError(t, os.WriteFile(in, []byte("cpu,cpu=cpu0,host=h1 usage_idle=91.5,usage_user=2i 1700000000000000000\n"), 0o644))
	conf := fmt.Sprintf(`
[agent]
  interval = "100ms"
  flush_interval = "100ms"
  omit_hostname = true
[[inputs.file]]
  files = [%q]
[[outputs.file]]
  files = [%q]
  data_format = "graphite"
  prefix = "morse"
  template = "host.tags.measurement.field"
`, in, out)
	cfg, err := config.Load(config.Options{Sources: []config.Source{{Name: "test.conf", Data: []byte(conf)}}})
	require.NoError(t, err)
	f := cfg.Outputs[0].Plugin.(*file.File)
	require.Equal(t, "morse", f.Graphite.Prefix, "prefix decoded into the embedded graphite options")
	testserver.RunAgent(t, cfg)

	want := "morse.h1.cpu0.cpu.usage_idle 91.5 1700000000\nmorse.h1.cpu0.cpu.usage_user 2 1700000000\n"
	var got string
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(out)
		got = string(b)
		return len(got) >= len(want)
	}, 30*time.Second, 20*time.Millisecond)
	require.Equal(t, want, got[:len(want)])
}
