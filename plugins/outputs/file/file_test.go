package file_test

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/plugins/outputs/file"
)

const goldenPath = "testdata/file_output.golden"

var t0 = time.Unix(1700000000, 123456789)

func metric(name string, fields ...morse.Field) morse.Metric {
	return morse.NewMetric(name, []morse.Tag{{Key: "host", Value: "web 1"}}, fields, t0)
}

func batch() []morse.Metric {
	return []morse.Metric{
		metric("cpu", morse.Field{Key: "usage", Value: morse.Float(12.5)}, morse.Field{Key: "cores", Value: morse.Int(8)}),
		metric("mem", morse.Field{Key: "free", Value: morse.Uint(1 << 40)}, morse.Field{Key: "note", Value: morse.String("a \"quoted\"\nnote")}),
		metric("disk", morse.Field{Key: "ok", Value: morse.Bool(true)}).WithTime(t0.Add(time.Second)),
	}
}

func connect(t *testing.T, f *file.File) {
	t.Helper()
	require.NoError(t, f.Validate())
	require.NoError(t, f.Connect(context.Background()))
	t.Cleanup(func() { require.NoError(t, f.Close()) })
}

func TestWritesToFiles(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.out"), filepath.Join(dir, "b.out")
	require.NoError(t, os.WriteFile(b, []byte("# kept\n"), 0o600))
	f := file.New()
	f.Files = []string{a, b}
	connect(t, f)
	require.NoError(t, f.Write(context.Background(), batch()))
	require.NoError(t, f.Write(context.Background(), batch()[:1]))

	got, err := os.ReadFile(a)
	require.NoError(t, err)
	testutil.Golden(t, goldenPath, got)
	want := got

	appended, err := os.ReadFile(b)
	require.NoError(t, err)
	require.Equal(t, "# kept\n"+string(want), string(appended), "an existing file is appended to")

	info, err := os.Stat(a)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o644)&^currentUmask(), info.Mode().Perm())
}

// currentUmask reads the process umask without changing it for long.
func currentUmask() os.FileMode {
	dir, err := os.MkdirTemp("", "umask")
	if err != nil {
		return 0
	}
	defer os.RemoveAll(dir)
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, nil, 0o777); err != nil {
		return 0
	}
	info, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return 0o777 &^ info.Mode().Perm()
}

func TestStandardStreams(t *testing.T) {
	var stdout, stderr bytes.Buffer
	f := file.New()
	f.Files = []string{"stdout", "stderr"}
	f.Stdout, f.Stderr = &stdout, &stderr
	connect(t, f)
	require.NoError(t, f.Write(context.Background(), batch()[:1]))
	want := "cpu,host=web\\ 1 usage=12.5,cores=8i 1700000000123456789\n"
	require.Equal(t, want, stdout.String())
	require.Equal(t, want, stderr.String())
}

// countingWriter counts write calls, to show that each file gets one per batch.
type countingWriter struct {
	bytes.Buffer
	calls int
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.calls++
	return w.Buffer.Write(p)
}

func TestOneWritePerBatch(t *testing.T) {
	var w countingWriter
	f := file.New()
	f.Stdout = &w
	connect(t, f)
	require.NoError(t, f.Write(context.Background(), batch()))
	require.Equal(t, 1, w.calls)
	require.Equal(t, 3, strings.Count(w.String(), " 17000000"))
}

func TestInfluxOptions(t *testing.T) {
	m := morse.NewMetric("m", nil, []morse.Field{
		{Key: "b", Value: morse.Uint(math.MaxUint64)},
		{Key: "a", Value: morse.Float(1)},
		{Key: "c", Value: morse.String("xxxxxxxxxx")},
	}, t0)
	cases := []struct {
		name string
		set  func(*file.File)
		want string
	}{
		{"defaults", func(*file.File) {}, `m b=9223372036854775807i,a=1,c="xxxxxxxxxx" 1700000000123456789` + "\n"},
		{"uint support", func(f *file.File) { f.InfluxUintSupport = true }, `m b=18446744073709551615u,a=1,c="xxxxxxxxxx" 1700000000123456789` + "\n"},
		{"sort fields", func(f *file.File) { f.InfluxSortFields = true }, `m a=1,b=9223372036854775807i,c="xxxxxxxxxx" 1700000000123456789` + "\n"},
		{"omit timestamp", func(f *file.File) { f.InfluxOmitTimestamp = true }, `m b=9223372036854775807i,a=1,c="xxxxxxxxxx"` + "\n"},
		{"agent precision truncates, still in nanoseconds", func(f *file.File) { f.SetPrecision(time.Second) }, `m b=9223372036854775807i,a=1,c="xxxxxxxxxx" 1700000000000000000` + "\n"},
		{"max line bytes", func(f *file.File) { f.InfluxMaxLineBytes = 60 },
			"m b=9223372036854775807i,a=1 1700000000123456789\n" + `m c="xxxxxxxxxx" 1700000000123456789` + "\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			f := file.New()
			f.Stdout = &out
			tc.set(f)
			connect(t, f)
			require.NoError(t, f.Write(context.Background(), []morse.Metric{m}))
			require.Equal(t, tc.want, out.String())
			require.Equal(t, "b", m.Fields()[0].Key, "the metric itself is never changed")
		})
	}
}

func TestUnwritableMetrics(t *testing.T) {
	var out bytes.Buffer
	f := file.New()
	f.Stdout = &out
	connect(t, f)
	nan := metric("bad", morse.Field{Key: "v", Value: morse.Float(math.NaN())})

	err := f.Write(context.Background(), []morse.Metric{batch()[0], nan, batch()[2]})
	var pw *morse.PartialWriteError
	require.ErrorAs(t, err, &pw)
	require.Equal(t, 1, pw.Dropped)
	require.Equal(t, morse.ReasonSerialize, pw.Reason)
	require.Equal(t, morse.OutcomePartial, morse.Classify(err))
	require.Equal(t, 2, strings.Count(out.String(), "\n"), "the writable metrics are written")

	err = f.Write(context.Background(), []morse.Metric{nan, nan})
	require.Equal(t, morse.OutcomeDropped, morse.Classify(err))
	var pe *morse.PermanentError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, morse.ReasonSerialize, pe.Reason)
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteErrorsAreRetried(t *testing.T) {
	var ok bytes.Buffer
	f := file.New()
	f.Files = []string{"stdout", "stderr"}
	f.Stdout, f.Stderr = &ok, failingWriter{}
	connect(t, f)
	err := f.Write(context.Background(), batch())
	require.ErrorContains(t, err, "file: write stderr: disk full")
	require.Equal(t, morse.OutcomeRetry, morse.Classify(err))
	require.NotEmpty(t, ok.String(), "the other file still gets the batch")
}

func TestConnectFailureNamesTheFile(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "missing", "x.out")
	f := file.New()
	f.Files = []string{filepath.Join(dir, "ok.out"), bad}
	err := f.Connect(context.Background())
	require.ErrorContains(t, err, bad)
	require.ErrorIs(t, err, os.ErrNotExist)
	require.NoError(t, f.Close())

	require.ErrorContains(t, file.New().Write(context.Background(), batch()), "before Connect")

	f = file.New()
	f.Stdout = io.Discard
	require.NoError(t, f.Connect(context.Background()))
	require.NoError(t, f.Close())
	require.ErrorContains(t, f.Write(context.Background(), batch()), "after Close")
}

func TestWriteDoesNotAllocate(t *testing.T) {
	f := file.New()
	f.Stdout = io.Discard
	f.InfluxSortFields = true
	connect(t, f)
	b := batch()
	ctx := context.Background()
	require.NoError(t, f.Write(ctx, b))
	allocs := testing.AllocsPerRun(100, func() {
		if err := f.Write(ctx, b); err != nil {
			panic(err)
		}
	})
	require.Zero(t, allocs)
}

func fieldErrorKeys(err error) []string {
	var keys []string
	var walk func(error)
	walk = func(err error) {
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		var fe *morse.FieldError
		if errors.As(err, &fe) {
			keys = append(keys, fe.Key)
		}
	}
	walk(err)
	return keys
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name string
		set  func(*file.File)
		keys []string
		msg  string
	}{
		{"defaults", func(*file.File) {}, nil, ""},
		{"empty data_format means influx", func(f *file.File) { f.DataFormat = "" }, nil, ""},
		{"no files", func(f *file.File) { f.Files = nil }, []string{"files"}, "at least one file"},
		{"empty file name", func(f *file.File) { f.Files = []string{"stdout", " "} }, []string{"files"}, "entry 2 is empty"},
		{"file twice", func(f *file.File) { f.Files = []string{"/tmp/x", "/tmp/x"} }, []string{"files"}, `"/tmp/x" is listed twice`},
		{"unknown format", func(f *file.File) { f.DataFormat = "nope" }, []string{"data_format"}, `"nope" is not supported`},
		{"negative max line", func(f *file.File) { f.InfluxMaxLineBytes = -1 }, []string{"influx_max_line_bytes"}, "must not be negative"},
		{"rotation", func(f *file.File) {
			f.RotationInterval = morse.Duration(time.Hour)
			f.RotationMaxSize = 1 << 20
		}, []string{"rotation_interval", "rotation_max_size"}, "rotation is not supported"},
		{"archives", func(f *file.File) { f.RotationMaxArchives = -2 }, []string{"rotation_max_archives"}, "must be -1"},
		{"gzip", func(f *file.File) { f.CompressionAlgorithm = "gzip" }, nil, ""},
		{"zstd level", func(f *file.File) { f.CompressionAlgorithm, f.CompressionLevel = "zstd", 7 }, nil, ""},
		{"unknown algorithm", func(f *file.File) { f.CompressionAlgorithm = "lz4" }, []string{"compression_algorithm"}, `"lz4" is not supported`},
		{"gzip level", func(f *file.File) { f.CompressionAlgorithm, f.CompressionLevel = "gzip", 5 }, []string{"compression_level"}, "only 0, 1 and 9"},
		{"zstd bad level", func(f *file.File) { f.CompressionAlgorithm, f.CompressionLevel = "zstd", 9 }, []string{"compression_level"}, "only 1, 3, 7 and 11"},
		{"level without algorithm", func(f *file.File) { f.CompressionLevel = 1 }, []string{"compression_level"}, "needs a compression_algorithm"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := file.New()
			tc.set(f)
			err := f.Validate()
			if tc.keys == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.msg)
			require.Equal(t, tc.keys, fieldErrorKeys(err))
		})
	}
}

type outputsTable struct {
	Outputs struct {
		File []*file.File `toml:"file"`
	} `toml:"outputs"`
}

func decode(t *testing.T, conf string) *file.File {
	t.Helper()
	var cfg outputsTable
	cfg.Outputs.File = []*file.File{file.New()}
	md, err := toml.Decode(conf, &cfg)
	require.NoError(t, err)
	require.Empty(t, md.Undecoded(), "every key must be known")
	require.Len(t, cfg.Outputs.File, 1)
	return cfg.Outputs.File[0]
}

func TestSampleConfig(t *testing.T) {
	info, ok := morse.DefaultRegistry().Output("file")
	require.True(t, ok)
	require.Equal(t, file.Description, info.Description)
	require.True(t, strings.HasPrefix(info.SampleConfig, "# "), "a one-line description comes first")
	require.Contains(t, info.SampleConfig, "\n[[outputs.file]]\n")

	f := decode(t, info.SampleConfig)
	require.NoError(t, f.Validate())
	require.Equal(t, []string{"stdout"}, f.Files)
	require.Equal(t, "influx", f.DataFormat)

	// Uncommenting every option gives their defaults, which must be valid too.
	var uncommented []string
	for _, l := range strings.Split(info.SampleConfig, "\n") {
		uncommented = append(uncommented, strings.Replace(l, "  # ", "  ", 1))
	}
	f = decode(t, strings.Join(uncommented, "\n"))
	require.NoError(t, f.Validate())

	out, ok := info.New().(*file.File)
	require.True(t, ok)
	require.Equal(t, file.New(), out)
}

func TestTelegrafConfigDecodes(t *testing.T) {
	f := decode(t, `
[[outputs.file]]
  files = ["stdout", "/tmp/metrics.out"]
  use_batch_format = false
  rotation_interval = "0h"
  rotation_max_size = "0MB"
  rotation_max_archives = 5
  data_format = "influx"
  influx_max_line_bytes = 0
  influx_sort_fields = false
  influx_uint_support = false
`)
	require.NoError(t, f.Validate())
	require.Equal(t, []string{"stdout", "/tmp/metrics.out"}, f.Files)
}

// TestCompression writes two batches with each of Telegraf's algorithms and reads the file
// back with the standard decompressors: the content is the uncompressed output, byte for byte.
func TestCompression(t *testing.T) {
	want, err := os.ReadFile(goldenPath)
	require.NoError(t, err)
	read := map[string]func(io.Reader) (io.Reader, error){
		"gzip": func(r io.Reader) (io.Reader, error) { return gzip.NewReader(r) },
		"zstd": func(r io.Reader) (io.Reader, error) { return zstd.NewReader(r) },
		"zlib": func(r io.Reader) (io.Reader, error) { return zlib.NewReader(r) },
	}
	for _, tc := range []struct {
		algorithm string
		level     int
	}{{"gzip", -1}, {"gzip", 9}, {"zstd", -1}, {"zstd", 11}, {"zlib", 1}} {
		t.Run(fmt.Sprintf("%s/%d", tc.algorithm, tc.level), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "m.out")
			f := file.New()
			f.Files, f.CompressionAlgorithm, f.CompressionLevel = []string{path}, tc.algorithm, tc.level
			connect(t, f)
			require.NoError(t, f.Write(context.Background(), batch()))
			require.NoError(t, f.Write(context.Background(), batch()[:1]))
			raw, err := os.ReadFile(path)
			require.NoError(t, err)
			require.False(t, strings.HasPrefix(string(raw), "cpu,host"), "the file is compressed")
			var got bytes.Buffer
			rest := bytes.NewReader(raw)
			// zlib streams follow each other; gzip members and zstd frames read as one stream.
			for rest.Len() > 0 {
				r, err := read[tc.algorithm](rest)
				require.NoError(t, err)
				_, err = io.Copy(&got, r)
				require.NoError(t, err)
				if tc.algorithm != "zlib" {
					break
				}
			}
			require.Equal(t, string(want), got.String())
		})
	}
}
