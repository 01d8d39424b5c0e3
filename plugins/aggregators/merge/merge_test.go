package merge

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/plugintest"
)

func TestGolden(t *testing.T) {
	plugintest.RunAggregators(t, "testdata", func(*plugintest.Clock) morse.Aggregator { return New() })
}

func BenchmarkAdd(b *testing.B) {
	a := New()
	require.NoError(b, a.Init())
	plugintest.BenchAggregator(b, a, plugintest.BenchSeries(b, 64))
}

func TestValidate(t *testing.T) {
	m := New()
	require.NoError(t, m.Validate())
	m.RoundTimestamp = -1
	require.ErrorContains(t, m.Validate(), "round_timestamp_to: must not be negative")
	m = New()
	m.MaxSeries = 0
	require.ErrorContains(t, m.Validate(), "max_series: must be at least 1")
}
