package testutil

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
)

// BenchAppend measures a serializer's AppendMetric on BenchMetric into a reused buffer, as
// an output encodes one message: ns and allocations per metric.
func BenchAppend(b *testing.B, appendMetric func([]byte, morse.Metric) ([]byte, error)) {
	m := BenchMetric()
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = appendMetric(buf[:0], m); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(buf)))
}

// BenchParse measures a parser reading back BenchMetric as appendMetric wrote it, one metric
// per call, as a consumer reads one message.
func BenchParse(b *testing.B, appendMetric func([]byte, morse.Metric) ([]byte, error), parse func([]byte, func(morse.Metric)) (int, error)) {
	data, err := appendMetric(nil, BenchMetric())
	require.NoError(b, err)
	n := 0
	emit := func(morse.Metric) { n++ }
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := parse(data, emit); err != nil {
			b.Fatal(err)
		}
	}
	require.Equal(b, b.N, n)
}
