package dataformat_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/golang/snappy"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
	parser "github.com/morse-agent/morse/plugins/parsers/influx"
	"github.com/morse-agent/morse/plugins/serializers"
	"github.com/morse-agent/morse/plugins/serializers/dataformat"
)

// goldenCase is one file testdata/FORMAT/NAME.conf: the input metrics as "# in: LINE"
// lines, "# mode: each" or "# mode: batch" when only one of the two ways of writing a
// batch gives the expected bytes (both must, without it), "# dropped: N" for the metrics
// the serializer must leave out, and the format's options as TOML. NAME.out holds the
// bytes Telegraf 1.39.3's serializer writes for it, taken from its tests.
type goldenCase struct {
	format  string
	in      []morse.Metric
	modes   []bool // use_batch_format values to run
	dropped int
	options string
}

func readCase(t *testing.T, path string) goldenCase {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	c := goldenCase{format: filepath.Base(filepath.Dir(path)), modes: []bool{false, true}}
	var lines bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "# in: "):
			lines.WriteString(strings.TrimPrefix(l, "# in: ") + "\n")
		case l == "# mode: each":
			c.modes = []bool{false}
		case l == "# mode: batch":
			c.modes = []bool{true}
		case strings.HasPrefix(l, "# dropped: "):
			c.dropped, err = strconv.Atoi(strings.TrimPrefix(l, "# dropped: "))
			require.NoError(t, err)
		case !strings.HasPrefix(l, "#"):
			c.options += l + "\n"
		}
	}
	p := &parser.Parser{}
	res := p.Parse(lines.Bytes(), func(m morse.Metric) { c.in = append(c.in, m) })
	require.Zero(t, res.Errors, "%s: %v", path, res.Err())
	return c
}

// TestGolden writes each case's metrics with the format's serializer, built from its
// options by the registry, per metric and as a batch, and compares the bytes with
// Telegraf's.
func TestGolden(t *testing.T) {
	paths, err := filepath.Glob("testdata/*/*.conf")
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	for _, path := range paths {
		c := readCase(t, path)
		for _, batch := range c.modes {
			t.Run(fmt.Sprintf("%s/batch=%v", strings.TrimSuffix(path[len("testdata/"):], ".conf"), batch), func(t *testing.T) {
				cfg := dataformat.Config{DataFormat: c.format}
				md, err := toml.Decode(c.options, &cfg)
				require.NoError(t, err)
				require.Empty(t, md.Undecoded(), "the case uses Telegraf's option names")
				ser, err := cfg.New()
				require.NoError(t, err)
				got, err := serializers.Append(ser, nil, c.in, batch)
				require.Equal(t, c.dropped, serializers.Dropped(err), "%v", err)
				golden(t, c.format, strings.TrimSuffix(path, ".conf")+".out", got)
			})
		}
	}
}

// golden compares got with the golden file. A remote-write request is compared once
// decoded: morse compresses with s2's snappy-compatible encoder, whose block differs from
// the one Telegraf's github.com/golang/snappy writes, while the protobuf message inside
// must be Telegraf's byte for byte. golang/snappy, the decoder of Telegraf's and Prometheus'
// tests, must read morse's block.
func golden(t *testing.T, format, path string, got []byte) {
	t.Helper()
	if format != "prometheusremotewrite" || *testutil.Update {
		testutil.Golden(t, path, got)
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	wantPB, err := snappy.Decode(nil, want)
	require.NoError(t, err, "%s: Telegraf's snappy block", path)
	gotPB, err := snappy.Decode(nil, got)
	require.NoError(t, err, "golang/snappy reads morse's block")
	require.Equal(t, wantPB, gotPB, "%s: the protobuf message Telegraf writes", path)
}
