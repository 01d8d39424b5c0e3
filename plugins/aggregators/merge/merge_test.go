package merge

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

func TestGolden(t *testing.T) {
	testutil.RunAggregators(t, "testdata", func(*testutil.Clock) morse.Aggregator { return New() })
}

func BenchmarkAdd(b *testing.B) {
	a := New()
	require.NoError(b, a.Init())
	testutil.BenchAggregator(b, a, testutil.BenchSeries(b, 64))
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
