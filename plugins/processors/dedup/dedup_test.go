package dedup

import (
	"runtime/debug"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

func TestGolden(t *testing.T) {
	testutil.RunProcessors(t, "testdata", func(clock *testutil.Clock) morse.Processor {
		d := New()
		d.Now = clock.Now
		return d
	})
}

func TestValidate(t *testing.T) {
	require.NoError(t, New().Validate())
	require.ErrorContains(t, (&Dedup{MaxSeries: 1}).Validate(), "dedup_interval: must be positive")
	require.ErrorContains(t, (&Dedup{DedupInterval: 1}).Validate(), "max_series: must be at least 1")
}

func BenchmarkDedup(b *testing.B) {
	d := New()
	require.NoError(b, d.Init())
	ms := testutil.Parse(b, "cpu,cpu=cpu0,host=a time_idle=42i,time_guest=1i,usage=0.5 1704067200000000000\n", false)
	d.Now = func() time.Time { return time.Unix(1704067200, 0) }
	testutil.BenchProcessor(b, d, ms)
}

// Fed ten million distinct series, dedup remembers max_series of them and its heap stays
// within a budget per remembered series; without the bound it would hold every one.
func TestBoundedMemory(t *testing.T) {
	const maxSeries, total, batch = 10_000, 10_000_000, 1000
	const perSeries = 1024 // bytes: a remembered metric of this shape takes about 300
	d := New()
	d.MaxSeries = maxSeries
	d.Now = func() time.Time { return time.Unix(1704067200, 0) }
	require.NoError(t, d.Init())
	fields := []morse.Field{{Key: "v", Value: morse.Int(1)}}
	tm := time.Unix(1704067200, 0)
	// Fewer collections while feeding: the bound is on the live heap, which HeapAlloc
	// measures after collecting, not on how much garbage waits for the collector.
	defer debug.SetGCPercent(debug.SetGCPercent(800))
	base := testutil.HeapAlloc()
	in := make([]morse.Metric, batch)
	start := time.Now()
	for i := 0; i < total; i += batch {
		for j, tag := range testutil.DistinctTags(i, batch, "id") {
			in[j] = morse.NewMetric("m", tag, fields, tm)
		}
		require.Len(t, d.Apply(in), batch, "every series is new, so every metric passes")
	}
	elapsed := time.Since(start)
	heap := testutil.HeapAlloc()
	require.Equal(t, maxSeries, d.Len())
	grown := int64(heap) - int64(base)
	t.Logf("%d series in %s; heap grew %d bytes (%d per remembered series)", total, elapsed, grown, grown/maxSeries)
	require.Less(t, grown, int64(maxSeries*perSeries))
}
