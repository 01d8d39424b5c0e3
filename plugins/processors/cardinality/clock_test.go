package cardinality

import (
	"runtime"
	"testing"
	"testing/synctest"
	"time"
	"weak"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
)

func TestClockTick(t *testing.T) {
	for _, tc := range []struct {
		window time.Duration
		want   time.Duration
	}{
		{time.Hour, time.Second},                      // slots of 15 minutes: a second
		{25 * time.Second, 390625 * time.Microsecond}, // the churn soak's: a sixteenth of a slot
	} {
		require.Equal(t, tc.want, clockTick(int64(tc.window)/(slots-1)), tc.window)
	}
}

// TestTickClockFollowsTime: the clock reads the time of its last tick.
func TestTickClockFollowsTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := startTickClock(time.Second)
		start := c.Now()
		time.Sleep(2500 * time.Millisecond)
		require.Equal(t, int64(2*time.Second), c.Now()-start)
		time.Sleep(time.Second)
		require.Equal(t, int64(3*time.Second), c.Now()-start)
	})
}

// TestTickClockIsNotKeptByItsTimer: once nothing but its timer refers to a clock, the
// collector takes it, and the timer, finding it gone, stops.
func TestTickClockIsNotKeptByItsTimer(t *testing.T) {
	c := startTickClock(time.Millisecond)
	gone := weak.Make(c)
	c = nil
	runtime.GC()
	require.Nil(t, gone.Value())
}

// TestResetAfterOnTheAgentsClock is TestTripFromServer's reset on the clock the agent runs
// the guard with: the key is back to normal reset_after after the refusal, give or take a tick.
func TestResetAfterOnTheAgentsClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, _, reg := newGuard(t, func(g *Guard) {
			g.Now = nil
			g.ResetAfter = morse.Duration(10 * time.Minute)
		})
		tagged := func() bool {
			out := g.Apply([]morse.Metric{metric("req", "id", "1")})
			_, ok := out[0].Tag("id")
			return ok
		}
		require.True(t, tagged())
		g.Trip("req", "id")
		require.False(t, tagged(), "converted after the refusal")
		// Half a tick off each side: a tick and a sleeper that wake at the same instant
		// run in no set order.
		time.Sleep(10*time.Minute - 1500*time.Millisecond)
		require.False(t, tagged(), "still converted a tick and a half before reset_after")
		time.Sleep(2 * time.Second)
		require.True(t, tagged(), "back to normal reset_after after the refusal")
		require.Equal(t, int64(1), stat(reg, "resets"))
	})
}
