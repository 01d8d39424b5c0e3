package minmax

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
