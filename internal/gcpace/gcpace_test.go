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

func TestPercent(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name string
		live uint64
		want int
	}{
		{"nothing read yet", 0, 400},
		{"an idle agent: capped", 2 * mib, 400},
		{"the default buffers under load", 12 * mib, 300},
		{"larger buffers: the goal is the minimum", 16 * mib, 200},
		{"half the goal live: Go's default", 24 * mib, 100},
		{"more live than the goal: Go's default", 200 * mib, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, Percent(tc.live, 48*mib, 400))
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

// TestRunFollowsTheLiveHeapAndRestores: the pace follows the live heap each second, small
// changes are not applied, and the GOGC found at the start is restored at the end.
func TestRunFollowsTheLiveHeapAndRestores(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const mib = 1 << 20
		f := &fakeRuntime{live: 2 * mib, gogc: 100}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { run(ctx, Options{}, f.hooks()); close(done) }()
		synctest.Wait()
		f.setLive(12 * mib) // 166
		time.Sleep(1500 * time.Millisecond)
		f.setLive(12*mib + mib/2) // 156: less than a tenth off, kept at 166
		time.Sleep(time.Second)
		f.setLive(40 * mib) // 100
		time.Sleep(time.Second)
		cancel()
		<-done
		require.Equal(t, []int{200, 166, 100, 100}, f.sets, "set at start, on two changes, restored at the end")
		require.Equal(t, 100, f.gogc)
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
