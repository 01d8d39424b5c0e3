package influx_test

import (
	"fmt"
	"math"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/plugins/serializers/influx"
)

const goldenPath = "testdata/serializer.golden"

// goldenMetrics cover every escaping rule and value type in one file, so that a change to
// the output shows up as a reviewable diff.
func goldenMetrics() []morse.Metric {
	t := time.Unix(1700000000, 123456789)
	return []morse.Metric{
		morse.NewMetric("cpu", tags("cpu", "cpu-total", "host", "web-01"),
			fields("usage_idle", 98.5, "usage_user", 1.0, "count", int64(-7), "free", uint64(math.MaxUint64), "ok", true, "msg", "fine"), t),
		morse.NewMetric("my measurement,with comma=equals", tags("tag key,=", "tag value,= x"), fields("field key,=", "quote \" backslash \\"), t),
		morse.NewMetric("multi", nil, fields("text", "first line\nsecond line\ttab"), t),
		morse.NewMetric("names\nwith\twhitespace", tags("k\r", "v\f"), fields("f\n", 1.0), t),
		morse.NewMetric("controls\x00", tags("k", "\x01\x7f"), fields("bad", "\xff\xfe utf8"), t),
		morse.NewMetric("trailing\\", tags("key\\", "value\\", "empty", ""), fields("f\\", 2.0), t),
		morse.NewMetric("floats", nil, fields("a", 1e6, "b", 1.5e-7, "c", math.Copysign(0, -1), "d", math.MaxFloat64, "e", 0.1, "nan", math.NaN(), "inf", math.Inf(-1)), t),
		morse.NewMetric("unicode", tags("città", "Zürich 東京"), fields("°C", 21.5, "emoji", "🌡"), t),
		morse.NewMetric("no_time", nil, fields("v", int64(1)), time.Time{}),
		morse.NewMetric("long", tags("host", "a"), fields("aa", 1.0, "bb", 2.0, "cc", 3.0), t),
	}
}

func TestGolden(t *testing.T) {
	variants := []struct {
		name string
		opts influx.Options
	}{
		{"defaults", influx.Options{}},
		{"uint_support precision=1s", influx.Options{UintSupport: true, Precision: time.Second}},
		{"precision=1ms max_line_bytes=40", influx.Options{Precision: time.Millisecond, MaxLineBytes: 40}},
	}
	var out []byte
	for _, v := range variants {
		out = fmt.Appendf(out, "# %s\n", v.name)
		s := influx.New(v.opts)
		buf, dropped := s.AppendBatch(nil, goldenMetrics())
		out = append(out, buf...)
		out = fmt.Appendf(out, "# dropped=%d skipped_fields=%d\n", dropped, s.SkippedFields())
	}
	testutil.Golden(t, goldenPath, out)
	want, err := os.ReadFile(goldenPath)
	require.NoError(t, err)

	// The golden file is line protocol: every line of it must parse, comments included.
	_, res := parse(t, want, 0)
	require.Zero(t, res.Errors, "%v", res.Err())
}
