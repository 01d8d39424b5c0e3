package socketwriter

import (
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

func TestRegistered(t *testing.T) {
	info, ok := morse.DefaultRegistry().Output("socket_writer")
	require.True(t, ok)
	require.Equal(t, Description, info.Description)
	require.Contains(t, info.SampleConfig, "\n[[outputs.socket_writer]]\n")
	out, ok := info.New().(*SocketWriter)
	require.True(t, ok)
	require.Equal(t, New(), out)
	require.NoError(t, New().Validate(), "the defaults are valid")
}

// decode reads a config text into an output, refusing unknown keys as morse's loader does.
func decode(t *testing.T, text string) *SocketWriter {
	t.Helper()
	return testutil.DecodeTable(t, text, "outputs", "socket_writer", New())
}

// TestSampleConfig decodes the sample, then the sample with every option uncommented (the
// last address of the examples wins).
func TestSampleConfig(t *testing.T) {
	require.Equal(t, New(), decode(t, sampleConfig))
	option := regexp.MustCompile(`(?m)^  # ([a-z_]+ = .*)$`)
	all := option.ReplaceAllStringFunc(sampleConfig, func(s string) string {
		if regexp.MustCompile(`# (address|tls_[a-z]+|insecure_skip_verify) =`).MatchString(s) {
			return s // examples of one key, and TLS, which unixgram cannot take
		}
		return "  " + s[4:]
	})
	w := decode(t, all)
	require.Equal(t, morse.Duration(5*time.Minute), *w.KeepAlivePeriod)
	require.NoError(t, w.Validate())
}

// TestTelegrafConfig decodes a Telegraf [[outputs.socket_writer]] table.
func TestTelegrafConfig(t *testing.T) {
	w := decode(t, `
[[outputs.socket_writer]]
  address = "tcp4://127.0.0.1:8094"
  tls_ca = "/etc/telegraf/ca.pem"
  insecure_skip_verify = false
  keep_alive_period = "5m"
  content_encoding = "gzip"
  data_format = "influx"
  influx_uint_support = true
`)
	require.NoError(t, w.Validate())
	require.Equal(t, "gzip", w.ContentEncoding)
	require.Equal(t, "/etc/telegraf/ca.pem", w.CA)
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*SocketWriter)
		key  string
	}{
		{"defaults", func(*SocketWriter) {}, ""},
		{"unixgram", func(w *SocketWriter) { w.Address = "unixgram:///run/x.sock" }, ""},
		{"no scheme", func(w *SocketWriter) { w.Address = "127.0.0.1:8094" }, "address"},
		{"vsock", func(w *SocketWriter) { w.Address = "vsock://3:1024" }, "address"},
		{"tls on udp", func(w *SocketWriter) { w.Address = "udp://127.0.0.1:1"; w.CA = "ca.pem" }, "tls_ca"},
		{"encoding", func(w *SocketWriter) { w.ContentEncoding = "zstd" }, "content_encoding"},
		{"format", func(w *SocketWriter) { w.DataFormat = "nope" }, "data_format"},
		{"option of another format", func(w *SocketWriter) { w.CSV.Separator = ";" }, "csv_separator"},
		{"keep alive", func(w *SocketWriter) { p := morse.Duration(-1); w.KeepAlivePeriod = &p }, "keep_alive_period"},
		{"line bytes", func(w *SocketWriter) { w.InfluxMaxLineBytes = -1 }, "influx_max_line_bytes"},
		{"tls pair", func(w *SocketWriter) { w.Cert = "c.pem" }, "tls_cert"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := New()
			tc.mod(w)
			err := w.Validate()
			if tc.key == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.key+":")
		})
	}
}

// TestInfluxOptions: the influx serializer options change the line as in Telegraf, without a
// connection: fields in order of their keys with influx_sort_fields, no timestamp with
// influx_omit_timestamp.
func TestInfluxOptions(t *testing.T) {
	m, _ := morse.NewMetricFromMaps("m", map[string]string{"h": "x"},
		map[string]any{"c": int64(3), "a": 1.5, "b": "s"}, time.Unix(1_700_000_000, 5))
	m = m.WithFields([]morse.Field{m.Fields()[2], m.Fields()[0], m.Fields()[1]}) // c, a, b
	for _, tc := range []struct {
		name string
		mod  func(*SocketWriter)
		want string
	}{
		{"as given", func(*SocketWriter) {}, `m,h=x c=3i,a=1.5,b="s" 1700000000000000005` + "\n"},
		{"sort fields", func(w *SocketWriter) { w.InfluxSortFields = true }, `m,h=x a=1.5,b="s",c=3i 1700000000000000005` + "\n"},
		{"sort, no time", func(w *SocketWriter) { w.InfluxSortFields, w.InfluxOmitTimestamp = true, true }, `m,h=x a=1.5,b="s",c=3i` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := New()
			tc.mod(w)
			require.NoError(t, w.Init())
			line, err := w.ser.AppendMetric(nil, m)
			require.NoError(t, err)
			require.Equal(t, tc.want, string(line))
			require.Equal(t, !w.InfluxSortFields, w.WritesLines())
			require.Equal(t, "c", m.Fields()[0].Key, "the metric itself is unchanged")
		})
	}
}
