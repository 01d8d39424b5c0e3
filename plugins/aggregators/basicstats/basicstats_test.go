package basicstats

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/selfstat"
)

func TestGolden(t *testing.T) {
	testutil.RunAggregators(t, "testdata", func(*testutil.Clock) morse.Aggregator { return New() })
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		stats   []string
		max     int
		wantErr string
	}{
		{"defaults", nil, 10, ""},
		{"all", known, 10, ""},
		{"variance is ignored, as in Telegraf", []string{"count", "variance"}, 10, ""},
		{"unknown", []string{"median"}, 10, `stats: unknown stat "median"`},
		{"max_series", nil, 0, "max_series: must be at least 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := New()
			b.Stats, b.MaxSeries = tt.stats, tt.max
			err := b.Validate()
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

// Metrics refused at max_series are counted and logged once per period at most.
func TestRefusedAreCountedAndLogged(t *testing.T) {
	var logs bytes.Buffer
	b := New()
	b.MaxSeries = 1
	b.SetLogger(slog.New(slog.NewTextHandler(&logs, nil)))
	reg := selfstat.New()
	b.SetStats(selfstat.NewPluginStats(reg, "internal_basicstats", nil))
	require.NoError(t, b.Init())
	for _, m := range testutil.Parse(t, "m,id=a v=1 1\nm,id=b v=1 1\nm,id=c v=1 1\n", false) {
		b.Add(m)
	}
	acc := &testutil.Accumulator{}
	b.Push(acc)
	require.Len(t, acc.Metrics(), 1)
	require.Contains(t, logs.String(), "basicstats: max_series reached")
	require.Contains(t, logs.String(), "max_series=1 metrics=2")
	require.Equal(t, int64(2), reg.Snapshot()[0].Fields[0].Value)
}

func BenchmarkAdd(b *testing.B) {
	a := New()
	a.Stats = known
	require.NoError(b, a.Init())
	testutil.BenchAggregator(b, a, testutil.BenchSeries(b, 64))
}

// TestVarianceWarnsOnce: "variance", which Telegraf's sample lists, is ignored with one
// warning at start and enables nothing; the variance is "s2".
func TestVarianceWarnsOnce(t *testing.T) {
	logs := &testutil.Logs{}
	b := New()
	b.Stats = []string{"count", "variance"}
	b.SetLogger(logs.Logger())
	require.NoError(t, b.Validate())
	require.NoError(t, b.Init())
	require.Len(t, logs.Warnings(), 1)
	require.Contains(t, logs.Warnings()[0], `"variance" is not a stat`)
	require.Equal(t, map[string]bool{"count": true}, b.enabled)
}
