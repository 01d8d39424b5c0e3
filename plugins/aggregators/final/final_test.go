package final

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

func TestGolden(t *testing.T) {
	testutil.RunAggregators(t, "testdata", func(clock *testutil.Clock) morse.Aggregator {
		f := New()
		f.Now = clock.Now
		return f
	})
}

func BenchmarkAdd(b *testing.B) {
	a := New()
	require.NoError(b, a.Init())
	testutil.BenchAggregator(b, a, testutil.BenchSeries(b, 64))
}

func TestValidate(t *testing.T) {
	f := New()
	require.NoError(t, f.Validate())
	require.Equal(t, StrategyTimeout, f.OutputStrategy, "empty means timeout")
	f.OutputStrategy = "often"
	require.ErrorContains(t, f.Validate(), `output_strategy: must be "timeout" or "periodic", got "often"`)
	f = New()
	f.SeriesTimeout = -1
	require.ErrorContains(t, f.Validate(), "series_timeout: must not be negative")
}
