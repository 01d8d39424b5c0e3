// Package busy records how long a loop has been inside its current piece of work, so that
// a watchdog can tell a loop that waits (healthy) from one that is wedged in a call that
// never returns.
package busy

import (
	"sync/atomic"
	"time"
)

// Since is the start of the work in progress, or none. Its methods are safe for concurrent
// use and never allocate, so loops may call them on every step.
type Since struct{ ns atomic.Int64 }

// Start marks the start of a piece of work at now.
func (s *Since) Start(now time.Time) { s.ns.Store(now.UnixNano()) }

// Done marks the work finished: the loop is waiting again.
func (s *Since) Done() { s.ns.Store(0) }

// For is how long the work in progress has run at now, and whether there is any.
func (s *Since) For(now time.Time) (time.Duration, bool) {
	ns := s.ns.Load()
	if ns == 0 {
		return 0, false
	}
	return max(0, now.Sub(time.Unix(0, ns))), true
}
