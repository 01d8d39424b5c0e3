// Package flowgate holds producers back while a consumer that keeps up works through a
// backlog, with two water marks so that the gate does not flap at one level. It knows
// nothing of metrics, buffers or outputs: its owner tells it the backlog's size and whether
// the consumer is healthy, and producers wait on it.
package flowgate

import (
	"context"
	"sync"
	"sync/atomic"
)

// Gate is open while the backlog is below the high-water mark, or the consumer is not
// healthy. It closes when a healthy consumer's backlog reaches the high-water mark and opens
// again when the backlog falls to the low-water mark, the consumer stops being healthy, or
// the gate is disabled. Its methods are safe for concurrent use; Observe and Wait cost two
// atomic loads while nothing changes, so they may be called for every few metrics.
type Gate struct {
	high, low int
	level     func() int // the backlog's size now, read under mu on a change
	onClose   func()     // told when the gate closes, outside mu

	closed   atomic.Bool
	healthy  atomic.Bool
	disabled atomic.Bool

	mu     sync.Mutex
	opened chan struct{} // closed when the gate opens; a new one each time it closes
}

// New returns an open gate that closes at high and opens again at low (low < high). level
// returns the backlog's current size; Observe's argument is only a hint, since sizes seen by
// concurrent callers may arrive out of order. onClose, if not nil, is called each time the
// gate closes, so that the owner can start working through the backlog at once. The
// consumer starts healthy: until an attempt fails it is taken to keep up, so that a sender
// that outruns a slow sink from the first moment is held back too.
func New(high, low int, level func() int, onClose func()) *Gate {
	g := &Gate{high: high, low: low, level: level, onClose: onClose, opened: make(chan struct{})}
	g.healthy.Store(true)
	close(g.opened)
	return g
}

// Observe is told the backlog's size after it changed.
func (g *Gate) Observe(size int) {
	if g.closed.Load() {
		if size <= g.low {
			g.update()
		}
		return
	}
	if size >= g.high && g.healthy.Load() && !g.disabled.Load() {
		g.update()
	}
}

// SetHealthy says whether the consumer is keeping up: its last attempt succeeded and it is
// not backing off. An unhealthy consumer never holds producers back.
func (g *Gate) SetHealthy(ok bool) {
	if g.healthy.Swap(ok) != ok {
		g.update()
	}
}

// Disable opens the gate for good, for a consumer that is shutting down.
func (g *Gate) Disable() {
	g.disabled.Store(true)
	g.update()
}

// Closed reports whether producers are held back now.
func (g *Gate) Closed() bool { return g.closed.Load() }

// Wait returns at once while the gate is open; otherwise it blocks until the gate opens or
// ctx ends, and then returns ctx's error.
func (g *Gate) Wait(ctx context.Context) error {
	for g.closed.Load() {
		g.mu.Lock()
		ch := g.opened
		g.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// update decides, from the backlog's actual size, whether the gate is open or closed.
func (g *Gate) update() {
	g.mu.Lock()
	was := g.closed.Load()
	hold := g.healthy.Load() && !g.disabled.Load()
	if hold {
		n := g.level()
		if was {
			hold = n > g.low
		} else {
			hold = n >= g.high
		}
	}
	switch {
	case hold && !was:
		g.closed.Store(true)
		// The backlog may have drained between reading it and closing, with each Observe
		// of the draining still seeing the gate open: read it again now that the gate
		// is closed, or nobody might ever open it.
		if g.level() <= g.low {
			g.closed.Store(false)
			hold = false
			break
		}
		g.opened = make(chan struct{}) // Wait reads it under mu, so never the old one
	case !hold && was:
		g.closed.Store(false)
		close(g.opened)
	}
	g.mu.Unlock()
	if hold && !was && g.onClose != nil {
		g.onClose()
	}
}
