package cardinality

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
)

// TestGuardPicksItsClock: a clock set in Now wins; the agent's coarse clock is taken when a
// tick is at most a sixteenth of a slot (window/4), whether it comes before Init or after;
// otherwise the guard reads the system clock.
func TestGuardPicksItsClock(t *testing.T) {
	coarseAt := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC) // far from both t0 and now
	coarse := func() time.Time { return coarseAt }
	for _, tc := range []struct {
		name       string
		window     time.Duration
		resolution time.Duration
		ownClock   bool
		beforeInit bool
		want       string // "own", "coarse" or "system"
	}{
		{"own clock wins", time.Hour, time.Millisecond, true, false, "own"},
		{"coarse, slot of 15m", time.Hour, 250 * time.Millisecond, false, false, "coarse"},
		{"coarse, given before Init", time.Hour, 250 * time.Millisecond, false, true, "coarse"},
		{"coarse, tick just a sixteenth of the slot", 16 * time.Second, 250 * time.Millisecond, false, false, "coarse"},
		{"system, tick above a sixteenth of the slot", 15 * time.Second, 250 * time.Millisecond, false, false, "system"},
		{"system, no coarse clock", time.Hour, 0, false, false, "system"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := New()
			g.Window = morse.Duration(tc.window)
			if tc.ownClock {
				g.Now = func() time.Time { return t0 }
			}
			give := func() {
				if tc.resolution > 0 {
					g.SetCoarseClock(coarse, tc.resolution)
				}
			}
			if tc.beforeInit {
				give()
			}
			require.NoError(t, g.Init())
			if !tc.beforeInit {
				give()
			}
			got := g.clock()
			switch tc.want {
			case "own":
				require.Equal(t, t0.UnixNano(), got)
			case "coarse":
				require.Equal(t, coarseAt.UnixNano(), got)
			case "system":
				require.InDelta(t, time.Now().UnixNano(), got, float64(time.Second))
			}
		})
	}
}
