package influx_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/plugins/parsers/influx"
	serializer "github.com/morse-agent/morse/plugins/serializers/influx"
)

var corpusDir = filepath.Join("..", "..", "..", "testdata", "lineprotocol")

// TestCorpus parses the shared corpus and compares every metric, written back as line
// protocol, and every refused line with the golden file. ParseReader must agree.
func TestCorpus(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(corpusDir, "corpus.lp"))
	require.NoError(t, err)
	p := &influx.Parser{Now: func() time.Time { return time.Unix(1600000000, 0) }}
	s := serializer.New(serializer.Options{UintSupport: true})

	var out []byte
	out = append(out, "# metrics, written back as line protocol\n"...)
	res := p.Parse(data, func(m morse.Metric) {
		var err error
		out, err = s.AppendMetric(out, m)
		require.NoError(t, err)
	})
	out = fmt.Appendf(out, "# lines=%d metrics=%d errors=%d\n", res.Lines, res.Metrics, res.Errors)
	for _, e := range res.Errs {
		out = fmt.Appendf(out, "# line %d: %q\n", e.Line, e.Error())
	}

	testutil.Golden(t, "testdata/corpus.golden", out)

	var streamed []influx.LineError
	n := 0
	err = p.ParseReader(iotest.HalfReader(bytes.NewReader(data)), func(morse.Metric) { n++ },
		func(e influx.LineError) { streamed = append(streamed, e) })
	require.NoError(t, err)
	require.Equal(t, res.Metrics, n)
	require.Equal(t, res.Errs, streamed)
}
