package file

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/BurntSushi/toml"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/plugins/parsers/dataformat"
	"github.com/morse-agent/morse/plugins/parsers/influx"
)

func write(t *testing.T, path, body string) string {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
	return path
}

// parsed is what the parser makes of lines: what the plugin must deliver, no more, no less.
func parsed(t *testing.T, lines string) []morse.Metric {
	t.Helper()
	var out []morse.Metric
	res := (&influx.Parser{}).Parse([]byte(lines), func(m morse.Metric) { out = append(out, m) })
	require.NoError(t, res.Err())
	return out
}

func gather(t *testing.T, f *File) *testutil.Accumulator {
	t.Helper()
	require.NoError(t, f.Validate())
	acc := &testutil.Accumulator{}
	require.NoError(t, f.Gather(context.Background(), acc))
	return acc
}

func TestRegisteredWithTelegrafDefaults(t *testing.T) {
	info, ok := morse.DefaultRegistry().Input("file")
	require.True(t, ok)
	require.Equal(t, Description, info.Description)
	require.True(t, strings.HasPrefix(info.SampleConfig, "# "+Description+"\n[[inputs.file]]\n"))
	f, ok := info.New().(*File)
	require.True(t, ok)
	require.Equal(t, "influx", f.DataFormat)
	option := regexp.MustCompile(`(?m)^\s*# (\w+ = .*)$`)
	body := option.ReplaceAllString(info.SampleConfig[strings.Index(info.SampleConfig, "]]\n")+3:], "$1")
	fresh := New()
	md, err := toml.Decode(body, fresh)
	require.NoError(t, err)
	require.Empty(t, md.Undecoded())
	require.NoError(t, fresh.Validate())
}

func TestValidate(t *testing.T) {
	for _, tt := range []struct {
		f    File
		want string
	}{
		{f: File{Config: dataformat.Config{DataFormat: "collectd"}, Files: []string{"x"}}, want: `data_format: "collectd" is not a data format morse reads`},
		{f: File{}, want: ""}, // no files: nothing to read, as in Telegraf
		{f: File{Files: []string{"x["}}, want: "files: could not compile glob"},
		{f: File{Files: []string{"x"}, CharacterEncoding: "latin1"}, want: `character_encoding: unsupported encoding "latin1"`},
		{f: File{Config: dataformat.Config{DataFormat: "value", Value: dataformat.Value{DataType: "x"}}, CharacterEncoding: "latin1"},
			want: "data_type: unknown data type \"x\": use \"integer\", \"float\", \"string\", \"base64\", \"boolean\", \"auto_integer\" or \"auto_float\"\n" +
				"character_encoding: unsupported encoding \"latin1\""},
	} {
		if tt.want == "" {
			require.NoError(t, tt.f.Validate())
			continue
		}
		require.ErrorContains(t, tt.f.Validate(), tt.want)
	}
}

func TestExactlyTheLinesWritten(t *testing.T) {
	dir := t.TempDir()
	good := "m,host=a v=1i 1700000000000000000\nm,host=b v=2i 1700000000000000001\n"
	write(t, filepath.Join(dir, "a.out"), "m,host=a v=1i 1700000000000000000\nm,host=broken v=\nm,host=b v=2i 1700000000000000001\n")
	f := New()
	f.Files = []string{filepath.Join(dir, "a.out")}
	acc := gather(t, f)
	require.Equal(t, parsed(t, good), acc.Metrics(), "the valid lines around a malformed one, each once")
	require.Len(t, acc.Errors(), 1)
	require.ErrorContains(t, acc.Errors()[0], `a.out", 1 entries refused: line 2: `)

	// The whole file is read again on every gather, as in Telegraf.
	acc.Clear()
	require.NoError(t, f.Gather(context.Background(), acc))
	require.Equal(t, parsed(t, good), acc.Metrics())
}

// TestValueFormat reads files in data_format "value": each file is one metric named
// "file", and a file whose value is not of data_type is reported with its position
// while the others are kept.
func TestValueFormat(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.val"), "12.5\n")
	write(t, filepath.Join(dir, "b.val"), "1\n2\nwarm\n")
	write(t, filepath.Join(dir, "c.val"), "  7 8\n")
	f := New()
	f.Files = []string{filepath.Join(dir, "*.val")}
	f.DataFormat, f.Value = "value", dataformat.Value{DataType: "float", ValueFieldName: "temp"}
	f.FileTag = "file"
	require.NoError(t, f.Validate())
	acc := gather(t, f)
	require.Equal(t, []string{"file,file=a.val temp=float:12.5 0", "file,file=c.val temp=float:8 0"}, testutil.Canon(zeroTime(acc.Metrics())))
	require.Len(t, acc.Errors(), 1)
	require.ErrorContains(t, acc.Errors()[0], `b.val", 1 entries refused: line 3, column 1: not a float (invalid syntax): "warm"`)
}

// zeroTime sets each metric's time to zero: a format without timestamps takes the clock's.
func zeroTime(ms []morse.Metric) []morse.Metric {
	out := make([]morse.Metric, len(ms))
	for i, m := range ms {
		out[i] = m.WithTime(time.Unix(0, 0))
	}
	return out
}

func TestGlobsTagsAndMissingFiles(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "x", "one.out"), "m v=1i 1\n")
	write(t, filepath.Join(dir, "x", "y", "two.out"), "m v=2i 2\n")
	f := New()
	f.Files = []string{filepath.Join(dir, "**.out"), filepath.Join(dir, "nothing-*.out")}
	f.FileTag, f.FilePathTag = "file", "path"
	acc := gather(t, f)
	var got []string
	for _, m := range acc.Metrics() {
		file, _ := m.Tag("file")
		path, _ := m.Tag("path")
		got = append(got, fmt.Sprintf("%s %s", file, path))
	}
	require.Equal(t, []string{"one.out " + filepath.Join(dir, "x", "one.out"), "two.out " + filepath.Join(dir, "x", "y", "two.out")}, got)
	require.Len(t, acc.Errors(), 1)
	require.ErrorContains(t, acc.Errors()[0], "could not find file(s)")
}

func TestEncodings(t *testing.T) {
	utf16le := func(s string, bom bool) string {
		var b []byte
		if bom {
			b = append(b, 0xff, 0xfe)
		}
		for _, u := range utf16.Encode([]rune(s)) {
			b = append(b, byte(u), byte(u>>8))
		}
		return string(b)
	}
	utf16be := func(s string) string {
		var b []byte
		for _, u := range utf16.Encode([]rune(s)) {
			b = append(b, byte(u>>8), byte(u))
		}
		return string(b)
	}
	line := "m,city=Zürich v=1i 1\n"
	for enc, data := range map[string]string{
		"":         line,
		"utf-8":    "\xef\xbb\xbf" + line,
		"utf-16le": utf16le(line, true),
		"utf-16be": utf16be(line),
	} {
		t.Run(enc, func(t *testing.T) {
			f := New()
			f.Files = []string{write(t, filepath.Join(t.TempDir(), "enc.out"), data)}
			f.CharacterEncoding = enc
			acc := gather(t, f)
			require.Empty(t, acc.Errors())
			require.Equal(t, parsed(t, line), acc.Metrics())
		})
	}
	require.Equal(t, "a\uFFFDb", string(Decode("utf-8", []byte("a\xffb"))))
}

func TestGoldenRealGather(t *testing.T) {
	shapes := testutil.LoadGolden(t, "testdata/file.golden")
	f := New()
	md, err := toml.Decode(shapes.Config, f)
	require.NoError(t, err)
	require.Empty(t, md.Undecoded(), "the golden config uses Telegraf's option names")
	var body strings.Builder
	for i := range 7 {
		fmt.Fprintf(&body, "cpu,cpu=cpu%d,host=foo,datacenter=us-east usage_idle=99,usage_busy=1\n", i)
	}
	body.WriteString("cpu,cpu=cpu7 usage_idle\n")
	f.Files = []string{write(t, filepath.Join(t.TempDir(), "metrics.out"), body.String())}
	acc := gather(t, f)
	ms := acc.Metrics()
	require.Len(t, ms, 7)
	require.Len(t, acc.Errors(), 1)
	require.Empty(t, shapes.Check(ms))
	require.Equal(t, []string{"cpu: tag filename: missing"}, shapes.Check([]morse.Metric{ms[0].WithoutTag("filename")}))
	v, _ := ms[0].Tag("filename")
	require.Equal(t, "metrics.out", v)
}
