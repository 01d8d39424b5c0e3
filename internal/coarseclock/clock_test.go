package coarseclock

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// TestClock: the system's time before Run and after it, the last tick's while it runs.
func TestClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New(time.Second)
		require.Equal(t, time.Second, c.Resolution())
		time.Sleep(300 * time.Millisecond)
		require.Equal(t, time.Now().UnixNano(), c.UnixNano(), "not running: the system's time")

		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() { c.Run(ctx) })
		synctest.Wait()
		start := time.Now()
		require.Equal(t, start.UnixNano(), c.UnixNano(), "the time Run started")
		for _, tc := range []struct {
			sleep time.Duration
			want  time.Duration // after start
		}{
			{500 * time.Millisecond, 0},
			{time.Second, time.Second},
			{2 * time.Second, 3 * time.Second},
		} {
			time.Sleep(tc.sleep)
			require.Equal(t, start.Add(tc.want).UnixNano(), c.UnixNano(), "%s in", time.Since(start))
			require.True(t, start.Add(tc.want).Equal(c.Now()))
		}

		cancel()
		wg.Wait()
		time.Sleep(300 * time.Millisecond)
		require.Equal(t, time.Now().UnixNano(), c.UnixNano(), "stopped: the system's time again")
	})
}

// TestClockIsMonotonic: setting the wall clock does not move the clock; it counts from the
// wall time at New with the monotonic clock.
func TestClockIsMonotonic(t *testing.T) {
	c := New(time.Second)
	before := c.UnixNano()
	require.InDelta(t, time.Now().UnixNano(), before, float64(time.Second))
	require.GreaterOrEqual(t, c.UnixNano(), before)
	require.Equal(t, c.baseNano, c.base.UnixNano())
	require.NotEqual(t, c.base, c.base.Round(0), "base keeps its monotonic reading")
}
