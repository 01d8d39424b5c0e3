package loadgen

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeClock is a clock whose Sleep advances it at once, so that paced runs finish at
// machine speed while the pacer sees the time its schedule asks for.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d > 0 {
		c.t = c.t.Add(d)
	}
	return ctx.Err()
}

// claimAll claims batches of want until the pacer stops and returns the claims and the
// fake time each was handed out at.
func claimAll(t *testing.T, p *pacer, c *fakeClock, want int) (seqs []int64, counts []int, at []time.Duration) {
	t.Helper()
	start := c.Now()
	for {
		seq, n := p.claim(context.Background(), want)
		if n == 0 {
			return seqs, counts, at
		}
		seqs, counts, at = append(seqs, seq), append(counts, n), append(at, c.Now().Sub(start))
	}
}

func TestPacerHoldsTheRate(t *testing.T) {
	c := newFakeClock()
	p := newPacer(c, 1000, 5000, time.Minute)
	seqs, counts, at := claimAll(t, p, c, 100)
	require.Len(t, counts, 50)
	for i := range counts {
		require.Equal(t, int64(i*100), seqs[i])
		require.Equal(t, 100, counts[i])
		// Batch i starts with line 100*i, due at 100*i/1000 s.
		require.Equal(t, time.Duration(i)*100*time.Millisecond, at[i])
	}
}

func TestPacerStopsAtTheDeadline(t *testing.T) {
	c := newFakeClock()
	p := newPacer(c, 1000, 0, 2*time.Second)
	_, counts, at := claimAll(t, p, c, 100)
	total := 0
	for _, n := range counts {
		total += n
	}
	require.Equal(t, 2000, total, "2 s at 1000 lines/s")
	require.Less(t, at[len(at)-1], 2*time.Second)
}

func TestPacerClampsTheLastBatchToTheLimit(t *testing.T) {
	c := newFakeClock()
	p := newPacer(c, 0, 250, time.Minute)
	_, counts, at := claimAll(t, p, c, 100)
	require.Equal(t, []int{100, 100, 50}, counts)
	require.Equal(t, []time.Duration{0, 0, 0}, at, "flat out never waits")
}

func TestPacerStopsWhenTheContextEnds(t *testing.T) {
	c := newFakeClock()
	p := newPacer(c, 0, 0, time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	_, n := p.claim(ctx, 10)
	require.Equal(t, 10, n)
	cancel()
	_, n = p.claim(ctx, 10)
	require.Zero(t, n)
}

// TestPacerSharesTheRateAmongConnections checks that concurrent claimers together get
// exactly the limit, each line once.
func TestPacerSharesTheRateAmongConnections(t *testing.T) {
	p := newPacer(realClock{}, 0, 100000, time.Minute)
	var mu sync.Mutex
	seen := make([]bool, 100000)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				seq, n := p.claim(context.Background(), 7)
				if n == 0 {
					return
				}
				mu.Lock()
				for i := range n {
					require.False(t, seen[seq+int64(i)])
					seen[seq+int64(i)] = true
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for i, s := range seen {
		require.True(t, s, "line %d", i)
	}
}
