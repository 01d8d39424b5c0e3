package influxdb

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/plugins/parsers/influx"
)

// testLineMetrics writes the same entries twice to a real InfluxDB 1.6: as line metrics,
// whose text goes out as it is (with unsigned integers rewritten, which InfluxDB 1.x does
// not take), and expanded, written field by field. The server must store the same points:
// that is the promise that lets a listener skip parsing.
func testLineMetrics(t *testing.T, in *testserver.Influx) {
	data, err := os.ReadFile("testdata/line-metrics.lp")
	require.NoError(t, err)
	p := influx.Parser{LineMetrics: func() bool { return true }}
	var lines, expanded []morse.Metric
	res := p.Parse(data, func(m morse.Metric) {
		_, ok := m.Line()
		require.True(t, ok, "every entry of the corpus is a line metric")
		lines = append(lines, m)
		expanded = append(expanded, m.Expanded())
	})
	require.Zero(t, res.Errors, "%v", res.Err())
	require.Equal(t, 8, res.Metrics)

	o := connected(t, in.URL(), "lines_text")
	require.True(t, o.WritesLines())
	require.NoError(t, o.Write(testutil.Context(t), lines))
	require.NoError(t, connected(t, in.URL(), "lines_expanded").Write(testutil.Context(t), expanded))

	const q = "SELECT * FROM /.*/ GROUP BY *"
	want := in.Query(t, "lines_expanded", q)
	require.Len(t, want[0].Series, 7)
	require.Equal(t, want, in.Query(t, "lines_text", q))

	routed := connected(t, in.URL(), "lines_routed", func(o *InfluxDB) { o.DatabaseTag = "db" })
	require.False(t, routed.WritesLines(), "an output that routes by tag takes metrics expanded")
}
