package cardinality

import (
	"runtime/debug"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

// Fed ten million distinct series, the guard stays within max_memory. 49 metrics in 50 go to
// four measurements whose id never repeats (their sketches turn dense and trip); the 50th
// spreads over 100 000 measurements, far more keys than 16 MiB can hold, so the guard must
// forget keys to stay within its bound.
func TestBoundedMemory(t *testing.T) {
	const total, batch, spread = 10_000_000, 1000, 100_000
	// drop_metric acts without allocating, so the test's time goes to counting and
	// evicting, which is what it is about.
	g, _, reg := newGuard(t, func(g *Guard) { g.Action = ActionDropMetric })
	// Fewer collections while feeding: the bound is on the live heap, which HeapAlloc
	// measures after collecting, not on how much garbage waits for the collector.
	defer debug.SetGCPercent(debug.SetGCPercent(800))
	base := testutil.HeapAlloc()
	start := time.Now()
	in := make([]morse.Metric, batch)
	var text []byte
	for i := 0; i < total; i += batch {
		// The metrics are held as line-protocol text, as a listener hands them over,
		// cut from one string per batch: building them costs little, and the guard must
		// not keep the batch's text alive through the names and keys it remembers.
		text = text[:0]
		ends := make([]int, batch)
		for j := range batch {
			if j%50 == 49 {
				text = append(text, 'm')
				text = strconv.AppendInt(text, int64((i+j)/50%spread), 10)
			} else {
				text = append(text, "hot"...)
				text = strconv.AppendInt(text, int64(j%4), 10)
			}
			text = append(text, ",host=h,id="...)
			text = strconv.AppendInt(text, int64(i+j), 10)
			text = append(text, " v=1i"...)
			ends[j] = len(text)
		}
		all := string(text)
		from := 0
		for j := range in {
			in[j] = morse.NewLineMetric(morse.LineText{Text: all[from:ends[j]]}, t0)
			from = ends[j]
		}
		g.Apply(in)
	}
	elapsed := time.Since(start)
	heap := testutil.HeapAlloc()
	grown := int64(heap) - int64(base)
	g.mu.Lock()
	charged, keys := g.t.bytes, g.t.keys
	g.mu.Unlock()
	t.Logf("%d series in %s: heap grew %d bytes for max_memory %d; charged %d for %d keys; %d keys evicted, %d tripped",
		total, elapsed, grown, int64(g.MaxMemory), charged, keys, stat(reg, "keys_evicted"), stat(reg, "trips"))
	require.LessOrEqual(t, charged, int(g.MaxMemory))
	require.Positive(t, stat(reg, "keys_evicted"), "the spread measurements need more than max_memory")
	require.GreaterOrEqual(t, stat(reg, "trips"), int64(4), "the hot keys tripped")
	// The charge is an estimate of what maps and structs take, a little above what the
	// heap shows; the slack covers what it cannot see, such as allocator rounding.
	require.Less(t, grown, int64(g.MaxMemory)*9/8, "heap growth within max_memory and an eighth")
}
