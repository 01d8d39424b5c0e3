package agent

import (
	"context"
	"sync"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/coarseclock"
)

// coarseTick is the resolution of the coarse clock the agent gives processors that read the
// time per metric (morse.CoarseClockSetter). A quarter of a second is a sixteenth of the
// slots of a cardinality window of 16 s.
const coarseTick = 250 * time.Millisecond

// clockRunner runs the agent's coarse clock, but only once a processor has taken it: an
// agent without one does not wake four times a second for nothing. It is owned by Run's
// goroutine.
type clockRunner struct {
	clock *coarseclock.Clock
	used  bool // a processor of this config or an earlier one took the clock
	stop  context.CancelFunc
	done  sync.WaitGroup
}

func newClockRunner() *clockRunner { return &clockRunner{clock: coarseclock.New(coarseTick)} }

// give hands the clock to p if p takes one.
func (c *clockRunner) give(p any) {
	if s, ok := p.(morse.CoarseClockSetter); ok {
		s.SetCoarseClock(c.clock.Now, c.clock.Resolution())
		c.used = true
	}
}

// start runs the clock if a processor took it and it is not running yet. Until it runs,
// the clock reads the system's.
func (c *clockRunner) start() {
	if !c.used || c.stop != nil {
		return
	}
	ctx, stop := context.WithCancel(context.Background())
	c.stop = stop
	c.done.Go(func() { c.clock.Run(ctx) })
}

// halt stops the clock and waits for its goroutine.
func (c *clockRunner) halt() {
	if c.stop != nil {
		c.stop()
		c.done.Wait()
		c.stop = nil
	}
}
