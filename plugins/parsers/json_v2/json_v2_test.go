package json_v2_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/plugins/parsers"
	"github.com/morse-agent/morse/plugins/parsers/json_v2"
)

// fileInput is the part of [[inputs.file]] that Telegraf's test configs use.
type fileInput struct {
	Files      []string `toml:"files"`
	DataFormat string   `toml:"data_format"`
	json_v2.Options
}

// loadConf reads a Telegraf test config: its [[inputs.file]] tables.
func loadConf(t testing.TB, path string) []fileInput {
	t.Helper()
	var conf struct {
		Inputs struct {
			File []fileInput `toml:"file"`
		} `toml:"inputs"`
	}
	md, err := toml.DecodeFile(path, &conf)
	require.NoError(t, err)
	require.Empty(t, md.Undecoded(), "keys json_v2 does not take")
	return conf.Inputs.File
}

// canonical shows a metric with sorted fields, and its time when withTime.
func canonical(m morse.Metric, withTime bool) string {
	fields := slices.Clone(m.Fields())
	slices.SortFunc(fields, func(a, b morse.Field) int { return strings.Compare(a.Key, b.Key) })
	ts := int64(0)
	if withTime {
		ts = m.Time().Truncate(time.Second).UnixNano()
	}
	return testutil.Format([]morse.Metric{morse.NewMetric(m.Name(), m.Tags(), fields, time.Unix(0, ts))})
}

// TestTelegrafCases runs every case of Telegraf 1.39.3's json_v2 testdata (copied as they
// are: telegraf.conf, the input files, expected.out and expected.err) and compares as
// Telegraf's test does: the metrics in order, their times only in the timestamp* cases.
func TestTelegrafCases(t *testing.T) {
	dirs, err := os.ReadDir("testdata")
	require.NoError(t, err)
	for _, d := range dirs {
		dir := filepath.Join("testdata", d.Name())
		if _, err := os.Stat(filepath.Join(dir, "telegraf.conf")); err != nil {
			continue
		}
		t.Run(d.Name(), func(t *testing.T) {
			withTime := strings.HasPrefix(d.Name(), "timestamp")
			var got, errs []string
			for _, in := range loadConf(t, filepath.Join(dir, "telegraf.conf")) {
				require.Equal(t, "json_v2", in.DataFormat)
				p, err := json_v2.New(in.Options, parsers.Settings{MetricName: "file"})
				require.NoError(t, err)
				for _, f := range in.Files {
					data, err := os.ReadFile(f) // the configs name files from the package
					require.NoError(t, err)
					err = p.Parse(data, func(m morse.Metric) { got = append(got, canonical(m, withTime)) })
					if err != nil {
						errs = append(errs, err.Error())
					}
				}
			}
			want := expected(t, dir, withTime)
			require.Equal(t, want, got)
			wantErrs, err := os.ReadFile(filepath.Join(dir, "expected.err"))
			if err != nil {
				require.Empty(t, errs)
				return
			}
			for _, line := range strings.Split(strings.TrimSpace(string(wantErrs)), "\n") {
				found := false
				for _, e := range errs {
					found = found || strings.Contains(e, line)
				}
				require.True(t, found, "an error says %q; got %q", line, errs)
			}
		})
	}
}

// expected reads a case's expected.out.
func expected(t testing.TB, dir string, withTime bool) []string {
	data, err := os.ReadFile(filepath.Join(dir, "expected.out"))
	require.NoError(t, err)
	var out []string
	for _, m := range testutil.Parse(t, string(data), false) {
		out = append(out, canonical(m, withTime))
	}
	return out
}

func TestValidate(t *testing.T) {
	o := json_v2.Options{JSONV2: []json_v2.Config{{
		TimestampPath: "t", TimestampTimezone: "No/Where",
		Fields:  []json_v2.DataSet{{Type: "integer"}},
		Objects: []json_v2.Object{{TimestampKey: "k", Fields: map[string]string{"a": "double"}}},
	}}}
	err := o.Validate()
	require.Error(t, err)
	for _, key := range []string{"json_v2[0].timestamp_timezone", "json_v2[0].field[0].path",
		"json_v2[0].field[0].type", "json_v2[0].object[0].path", "json_v2[0].object[0].fields.a"} {
		require.Contains(t, err.Error(), key+":")
	}
	require.ErrorContains(t, (&json_v2.Options{}).Validate(), "json_v2")
	_, err = json_v2.New(o, parsers.Settings{})
	require.Error(t, err)
}

// TestInvalidJSON refuses the document as one entry placed at the syntax error.
func TestInvalidJSON(t *testing.T) {
	p, err := json_v2.New(json_v2.Options{JSONV2: []json_v2.Config{{Fields: []json_v2.DataSet{{Path: "a"}}}}}, parsers.Settings{MetricName: "file"})
	require.NoError(t, err)
	n := 0
	err = p.Parse([]byte("{\"a\": 1,\n  \"b\": ]}"), func(morse.Metric) { n++ })
	var pe *parsers.Error
	require.ErrorAs(t, err, &pe)
	require.Zero(t, n)
	require.Equal(t, 1, pe.Refused)
	require.Equal(t, fmt.Sprint(2, 8), fmt.Sprint(pe.Entries[0].Line, pe.Entries[0].Column))
}

// TestCounted counts what Telegraf drops without a word: metrics left with tags only, and
// the elements after one that cannot be converted.
func TestCounted(t *testing.T) {
	o := json_v2.Options{JSONV2: []json_v2.Config{
		{Tags: []json_v2.DataSet{{Path: "host"}}},
		{Fields: []json_v2.DataSet{{Path: "list", Type: "int"}}},
	}}
	p, err := json_v2.New(o, parsers.Settings{MetricName: "file"})
	require.NoError(t, err)
	var got []string
	err = p.Parse([]byte(`{"host": "a", "list": ["1", "x", "3"]}`), func(m morse.Metric) { got = append(got, canonical(m, false)) })
	require.Equal(t, []string{"file list=1i 0\n"}, got)
	var pe *parsers.Error
	require.ErrorAs(t, err, &pe)
	require.Equal(t, 2, pe.Refused)
	require.ErrorContains(t, pe.Entries[0].Err, `unable to convert field "list" to type int`)
	require.ErrorIs(t, pe.Entries[1].Err, json_v2.ErrNoFields)
}
