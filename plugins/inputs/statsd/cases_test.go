package statsd

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/selfstat"
)

// epoch is the fixed clock of the cases: every gather, event and service check is stamped
// with it, moved on by "# advance".
var epoch = time.Unix(1700000000, 0).UTC()

// TestCases runs the golden cases in testdata/cases, most of them Telegraf 1.39.3's own
// statsd and DogStatsD test inputs (statsd_test.go, datadog_test.go) with what its tests
// expect: the config section is the plugin's options, the in section statsd packets, one a
// line (a "␤" inside a line stands for a newline within one packet), and directives:
// "# gather" reports the aggregates so far, "# advance 1h" moves the clock on. The out
// section shows each gather's metrics, sorted, and then the self-metrics that are not zero,
// so that every refused line is seen counted by its reason.
func TestCases(t *testing.T) {
	for _, c := range testutil.Cases(t, "testdata/cases") {
		t.Run(c.Name, func(t *testing.T) {
			c.Check(t, runCase(t, c))
		})
	}
}

func runCase(t *testing.T, c testutil.Case) string {
	s := New()
	now := epoch
	s.now = func() time.Time { return now }
	s.SetLogger(slog.New(slog.DiscardHandler))
	testutil.Decode(t, c.Config, s)
	reg := selfstat.New()
	s.stats = selfstat.NewPluginStats(reg, "internal_statsd", nil)
	require.NoError(t, s.setup())
	acc := &testutil.Accumulator{}
	lp := s.newLineParser(acc)
	var out strings.Builder
	gathers := 0
	gather := func() {
		gathers++
		require.NoError(t, s.Gather(context.Background(), acc))
		var lines []string
		for _, m := range acc.Metrics() {
			lines = append(lines, testutil.Format([]morse.Metric{m}))
		}
		slices.Sort(lines)
		fmt.Fprintf(&out, "# gather %d\n%s", gathers, strings.Join(lines, ""))
		acc.Clear()
	}
	for _, line := range strings.Split(strings.TrimSuffix(c.In, "\n"), "\n") {
		switch {
		case line == "# gather":
			gather()
		case strings.HasPrefix(line, "# advance "):
			d, err := time.ParseDuration(strings.TrimPrefix(line, "# advance "))
			require.NoError(t, err)
			now = now.Add(d)
		case strings.HasPrefix(line, "# "):
			t.Fatalf("unknown directive %q", line)
		default:
			lp.parsePacket([]byte(strings.ReplaceAll(line, "␤", "\n")), "127.0.0.1")
		}
	}
	gather()
	for _, smp := range reg.Snapshot() {
		for _, f := range smp.Fields {
			if f.Value != 0 && f.Key != "max_pending_messages" && f.Key != "tcp_max_connections" && f.Key != "parse_time_ns" {
				fmt.Fprintf(&out, "# %s %s=%d\n", smp.Measurement, f.Key, f.Value)
			}
		}
	}
	return out.String()
}
