package minmax

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
