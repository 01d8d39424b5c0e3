// Package flowgate holds producers back while a consumer that keeps up works through a
// backlog, with two water marks so that the gate does not flap at one level, and while its
// owner cannot keep what it is given as it promised (Hold). It knows nothing of metrics,
// buffers or outputs: its owner tells it the backlog's size, whether the consumer is
// healthy and whether to hold, and producers wait on it.
package flowgate

import (
	"context"
	"sync"
	"sync/atomic"
)

// Gate is open while the backlog is below the high-water mark, or the consumer is not
// healthy, and the owner does not hold it. It closes when a healthy consumer's backlog
// reaches the high-water mark and opens again when the backlog falls to the low-water mark,
// the consumer stops being healthy, or the gate is disabled. A hold (Hold) closes it
// whatever the backlog and the consumer's health, until it is released or the gate
// disabled. Its methods are safe for concurrent use; Observe and Wait cost two atomic loads
// while nothing changes, so they may be called for every few metrics.
type Gate struct {
	high, low int
	level     func() int // the backlog's size now, read under mu on a change
	onClose   func()     // told when the gate closes, outside mu

	closed   atomic.Bool
	healthy  atomic.Bool
	disabled atomic.Bool
	held     atomic.Bool // written under mu, so that a closed gate that is held stays closed

	mu     sync.Mutex
	opened chan struct{} // closed when the gate opens; a new one each time it closes
	// unheld is closed when a hold ends (released or the gate disabled); a new one each
	// time a hold begins. It is apart from opened because a released gate may stay closed
	// on its backlog, and WaitReleased must not wait for that.
	unheld chan struct{}
}

// New returns an open gate that closes at high and opens again at low (low < high). level
// returns the backlog's current size; Observe's argument is only a hint, since sizes seen by
// concurrent callers may arrive out of order. onClose, if not nil, is called each time the
// gate closes, so that the owner can start working through the backlog at once. The
// consumer starts healthy: until an attempt fails it is taken to keep up, so that a sender
// that outruns a slow sink from the first moment is held back too.
func New(high, low int, level func() int, onClose func()) *Gate {
	g := &Gate{high: high, low: low, level: level, onClose: onClose,
		opened: make(chan struct{}), unheld: make(chan struct{})}
	g.healthy.Store(true)
	close(g.opened)
	close(g.unheld)
	return g
}

// Observe is told the backlog's size after it changed.
func (g *Gate) Observe(size int) {
	if g.closed.Load() {
		if size <= g.low && !g.held.Load() {
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

// Hold closes the gate, whatever the backlog and the consumer's health, while on is true:
// for an owner that cannot keep what producers give it as it promised, such as a disk
// buffer whose disk refuses writes. A failing sink must not keep producers waiting, but a
// buffer that can hold their data only in memory must, so the two are told apart.
func (g *Gate) Hold(on bool) {
	g.mu.Lock()
	if g.held.Swap(on) == on {
		g.mu.Unlock()
		return
	}
	if on {
		g.unheld = make(chan struct{})
	} else if !g.disabled.Load() {
		close(g.unheld)
	}
	closedNow := g.decide()
	g.mu.Unlock()
	if closedNow && g.onClose != nil {
		g.onClose()
	}
}

// Held reports whether a hold keeps the gate closed now.
func (g *Gate) Held() bool { return g.held.Load() && !g.disabled.Load() }

// WaitReleased returns at once unless a hold keeps the gate closed; otherwise it blocks
// until the hold is released, the gate is disabled or ctx ends, and then returns ctx's error.
// Unlike Wait it does not wait for the backlog.
func (g *Gate) WaitReleased(ctx context.Context) error {
	if !g.Held() {
		return nil
	}
	g.mu.Lock()
	ch := g.unheld
	g.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Disable opens the gate for good, for a consumer that is shutting down.
func (g *Gate) Disable() {
	g.mu.Lock()
	if !g.disabled.Swap(true) && g.held.Load() {
		close(g.unheld) // a held gate's waiters are let go; a later release must not close it again
	}
	g.mu.Unlock()
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
	closedNow := g.decide()
	g.mu.Unlock()
	if closedNow && g.onClose != nil {
		g.onClose()
	}
}

// decide opens or closes the gate, under mu, and reports whether it has just closed it.
func (g *Gate) decide() bool {
	was := g.closed.Load()
	held := g.held.Load() && !g.disabled.Load()
	hold := held || g.healthy.Load() && !g.disabled.Load()
	if hold && !held {
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
		if !held && g.level() <= g.low {
			g.closed.Store(false)
			return false
		}
		g.opened = make(chan struct{}) // Wait reads it under mu, so never the old one
		return true
	case !hold && was:
		g.closed.Store(false)
		close(g.opened)
	}
	return false
}
