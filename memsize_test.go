package morse

import (
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMemSizeHoldsForTheHeap builds metrics that share nothing, parsed ones with tags and
// string fields of many lengths and line metrics of many lengths, and checks that MemSize
// summed over them is what the heap grew by: never less, so that a bound in MemSize bytes
// holds for the heap, and not far more, so that a bound does not throw away half of what it
// could hold.
func TestMemSizeHoldsForTheHeap(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(i int) Metric
	}{
		{"parsed", func(i int) Metric {
			s := strconv.Itoa(i)
			tags := []Tag{{Key: "host" + s, Value: "web-" + s}, {Key: "region", Value: strings.Repeat("r", i%40) + s}}
			fields := []Field{{Key: "v", Value: Int(int64(i))}, {Key: "msg" + s, Value: String(strings.Repeat("x", i%300) + s)}}
			return NewMetric("cpu"+s, tags, fields, time.Unix(0, int64(i)))
		}},
		{"line", func(i int) Metric {
			return NewLineMetric(LineText{Text: "m,host=a v=\"" + strings.Repeat("x", i%3000) + strconv.Itoa(i) + "\""}, time.Unix(0, int64(i)))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const n = 20_000
			ms := make([]Metric, n)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			var sized int64
			for i := range ms {
				ms[i] = tc.make(i)
				sized += MemSize(&ms[i])
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			heap := int64(after.HeapAlloc) - int64(before.HeapAlloc)
			t.Logf("MemSize %d B, heap %d B: %.3f", sized, heap, float64(sized)/float64(heap))
			require.GreaterOrEqual(t, sized, heap, "MemSize errs high")
			require.Less(t, float64(sized), 1.2*float64(heap), "and not by much")
			runtime.KeepAlive(ms)
		})
	}
}

var memSizeSink int64

// BenchmarkMemSize sizes a metric with one tag and one field, as a memory buffer does every
// metric it adds.
func BenchmarkMemSize(b *testing.B) {
	m := NewMetric("m", []Tag{{Key: "seq", Value: "1"}}, []Field{{Key: "v", Value: Int(1)}}, time.Unix(0, 1))
	for b.Loop() {
		memSizeSink += MemSize(&m)
	}
}

// TestAllocSizeLooksUpWhatItComputes: the table of small sizes gives, for every size up to
// past its end, what the computation does.
func TestAllocSizeLooksUpWhatItComputes(t *testing.T) {
	for n := int64(-1); n <= 2<<10; n++ {
		if got, want := allocSize(n), blockSize(n); got != want {
			t.Fatalf("allocSize(%d) = %d, blockSize %d", n, got, want)
		}
	}
}
