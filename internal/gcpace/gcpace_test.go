package gcpace

import (
	"context"
	"runtime"
	"runtime/debug"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPercentFor: the GOGC that reaches a goal from what is live, never below Go's 100.
func TestPercentFor(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name       string
		goal, live uint64
		want       int
	}{
		{"three times", 21 * mib, 7 * mib, 200},
		{"a goal held while less is live", 24 * mib, 2 * mib, 1100},
		{"twice, as Go's default", 40 * mib, 20 * mib, 100},
		{"never below Go's default", 24 * mib, 20 * mib, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, percentFor(tc.goal, tc.live))
		})
	}
}

// fakeRuntime records what the pacer sets, for a live heap that the test changes.
type fakeRuntime struct {
	mu   sync.Mutex
	live uint64
	gogc int
	sets []int
}

func (f *fakeRuntime) hooks() runtimeHooks {
	return runtimeHooks{
		live: func() uint64 { f.mu.Lock(); defer f.mu.Unlock(); return f.live },
		set: func(p int) int {
			f.mu.Lock()
			defer f.mu.Unlock()
			prev := f.gogc
			f.gogc = p
			f.sets = append(f.sets, p)
			return prev
		},
	}
}

func (f *fakeRuntime) setLive(n uint64) { f.mu.Lock(); f.live = n; f.mu.Unlock() }

func TestGoal(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name       string
		live, want uint64
	}{
		{"nothing read yet: the minimum", 0, 32 * mib},
		{"little live: capped at three times", 4 * mib, 12 * mib},
		{"the minimum", 12 * mib, 32 * mib},
		{"much live: twice, as Go's default", 40 * mib, 80 * mib},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, Goal(tc.live, 32*mib, 200))
		})
	}
}

// goal is the heap goal the GOGC set makes for the live heap now.
func (f *fakeRuntime) goal() float64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return float64(f.live) * (1 + float64(f.gogc)/100)
}

// TestRunHoldsTheGoalSteady: a live heap that swings by a sixth either way from one
// collection to the next gets one goal, three times its high, which GOGC reaches each second
// from whatever is live, to within a whole GOGC percent; the goal rises at once with a
// higher live heap, never goes below twice what is live, falls once the live heap has
// stayed a quarter lower, and the GOGC found at the start is restored at the end.
func TestRunHoldsTheGoalSteady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const mib = 1 << 20
		f := &fakeRuntime{live: 7 * mib, gogc: 100}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { run(ctx, Options{}, f.hooks()); close(done) }()
		synctest.Wait()
		require.InDelta(t, 21*mib, f.goal(), 0.02*21*mib, "three times the live heap at first")

		swing := []uint64{6 * mib, 8 * mib, 7 * mib, 8*mib + mib/2, 6*mib + mib/2, 7*mib + mib/2}
		for i := range 180 {
			f.setLive(swing[i%len(swing)])
			time.Sleep(time.Second + time.Millisecond)
			if i >= 1 { // the second reading, 8 MiB, is the first high that moves it
				require.InDelta(t, 24*mib, f.goal(), 0.005*24*mib, "second %d: the goal holds whatever is live, within GOGC's whole percents", i)
			}
		}

		// A live heap that moves by a hundredth still gets the goal: a goal left to move with
		// it wanders by as much as the RSS may grow in the churn soak.
		for i := range 10 {
			f.setLive(8*mib + uint64(i%2)*mib/10)
			time.Sleep(time.Second + time.Millisecond)
			require.InDelta(t, 24*mib, f.goal(), 0.005*24*mib, "small swing %d", i)
		}

		f.setLive(10 * mib)
		time.Sleep(time.Second + time.Millisecond)
		require.InDelta(t, 30*mib, f.goal(), 0.02*30*mib, "a higher live heap raises the goal at once")

		f.setLive(25 * mib) // more than half the goal: twice what is live, as Go's default
		time.Sleep(time.Second + time.Millisecond)
		require.InDelta(t, 50*mib, f.goal(), 0.02*50*mib)

		f.setLive(2 * mib) // the high decays to it over a few minutes
		time.Sleep(5 * time.Minute)
		require.InDelta(t, 6*mib, f.goal(), 0.13*6*mib, "the goal falls with the live heap")

		cancel()
		<-done
		require.Equal(t, 100, f.gogc, "restored at the end")
	})
}

// TestRunOnTheRealRuntime: the real hooks read a live heap, and Run leaves GOGC as it found
// it.
func TestRunOnTheRealRuntime(t *testing.T) {
	keep := make([]byte, 1<<20)
	runtime.GC()
	require.Positive(t, realHooks().live(), "the live heap is read")
	runtime.KeepAlive(keep)

	prev := debug.SetGCPercent(123)
	defer debug.SetGCPercent(prev)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	Run(ctx, Options{})
	require.Equal(t, 123, debug.SetGCPercent(123), "Run restores the GOGC it found")
}
