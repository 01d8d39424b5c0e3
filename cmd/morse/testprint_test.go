package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
)

// The golden file holds what `telegraf --test` (Telegraf 1.39.3's agent.Test: influx
// serializer with SortFields and UintSupport, floats in strconv 'f' form) prints for the
// metrics of testdata/testmode.lp.
const testModeGolden = "testdata/testmode.golden"

func TestTestPrinterFormatsAsTelegraf(t *testing.T) {
	ts := time.Unix(0, 1700000000123456789)
	metrics := []morse.Metric{
		morse.NewMetric("disk", []morse.Tag{{Key: "path", Value: "/"}, {Key: "fstype", Value: "ext4"}}, []morse.Field{
			{Key: "used_percent", Value: morse.Float(42.5)}, {Key: "total", Value: morse.Uint(8500000000)},
			{Key: "free", Value: morse.Uint(12)}, {Key: "inodes_used", Value: morse.Int(-3)},
			{Key: "tiny", Value: morse.Float(0.0000015)}, {Key: "big", Value: morse.Float(1e21)},
		}, ts),
		morse.NewMetric("system", nil, []morse.Field{
			{Key: "load1", Value: morse.Float(0.5)}, {Key: "uptime", Value: morse.Uint(123456)},
			{Key: "n_users", Value: morse.Int(2)}, {Key: "uptime_format", Value: morse.String("1 day, 10:17")},
		}, time.Unix(1700000000, 0)),
		// A line metric, as listeners and parsers make them: printed from its parts.
		lineMetric(t, `weird\ name,tag\,key=v\=1,a=b zeta=true,alpha="quote\"d",m=-0.000001`, time.Unix(1700000000, 1)),
		// Line protocol cannot carry a metric without fields: left out, as Telegraf does.
		morse.NewMetric("empty", nil, nil, ts),
	}
	var out bytes.Buffer
	p := newTestPrinter(&out)
	for _, m := range metrics {
		p.print(m)
	}
	require.NoError(t, p.err)
	want, err := os.ReadFile(testModeGolden)
	require.NoError(t, err)
	require.Equal(t, string(want), out.String())
	require.Equal(t, "total", metrics[0].Fields()[1].Key, "the metric's own fields are not reordered")
}

func lineMetric(t *testing.T, text string, tm time.Time) morse.Metric {
	t.Helper()
	m := morse.NewLineMetric(morse.LineText{Text: text}, tm)
	require.NotEmpty(t, m.Expanded().Fields(), "the text decodes")
	return m
}

// failingWriter fails every write.
type failingWriter struct{ n int }

func (w *failingWriter) Write([]byte) (int, error) { w.n++; return 0, errors.New("stdout closed") }

func TestTestPrinterStopsAtTheFirstWriteError(t *testing.T) {
	w := &failingWriter{}
	p := newTestPrinter(w)
	m := morse.NewMetric("m", nil, []morse.Field{{Key: "v", Value: morse.Int(1)}}, time.Unix(1, 0))
	p.print(m)
	p.print(m)
	require.EqualError(t, p.err, "stdout closed")
	require.Equal(t, 1, w.n)
}

// TestTestModeOutputIsTelegrafs runs the binary's --test on line protocol read by
// inputs.file, and compares its whole output with the golden file.
func TestTestModeOutputIsTelegrafs(t *testing.T) {
	lp, err := filepath.Abs("testdata/testmode.lp")
	require.NoError(t, err)
	dir := t.TempDir()
	conf := writeFile(t, dir, "testmode.conf", `
[agent]
  omit_hostname = true
  ## Keep the file's nanoseconds; unset, a gather rounds them to the second, as Telegraf's.
  precision = "1ns"
[[inputs.file]]
  files = ["`+lp+`"]
  data_format = "influx"
[[outputs.file]]
  files = ["stdout"]
`)
	out, stderr, code := runMorse(t, "--config", conf, "--test")
	require.Zero(t, code, stderr)
	want, err := os.ReadFile(testModeGolden)
	require.NoError(t, err)
	require.Equal(t, string(want), out)
}
