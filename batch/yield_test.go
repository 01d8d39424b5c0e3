package batch

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/busy"
)

// TestYieldsAsOftenForABatchAsForItsMetrics: metrics added in batches of any size make the
// writer's caller give up the processor as often as the same metrics added one by one, once
// per yieldEvery, so that a listener that hands over a thousand at a time leaves its output
// the same share of the CPU.
func TestYieldsAsOftenForABatchAsForItsMetrics(t *testing.T) {
	const added = 10 * yieldEvery
	for _, batch := range []int{1, 7, yieldEvery, 1000, added} {
		var writing busy.Since
		writing.Start(time.Now())
		y := newYielder(10, &writing)
		yields := 0
		y.yield = func() { yields++ }
		var total int64
		for total < added {
			n := min(batch, added-int(total))
			total += int64(n)
			y.afterAdd(total, n, 100)
		}
		require.Equal(t, added/yieldEvery, yields, "batches of %d", batch)
	}
}
