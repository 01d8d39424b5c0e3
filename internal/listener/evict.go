package listener

import (
	"net"
	"net/http"
	"time"
)

// Activity is what a connection accepted by a Limit listener is doing, as far as choosing
// one to close when the cap is reached goes.
type Activity int32

const (
	// Fresh is a connection that has not sent a complete request (or line) yet: it costs a
	// slot and has given nothing, so it is closed first, the oldest first. Every connection
	// starts Fresh.
	Fresh Activity = iota
	// Idle is a connection that waits for its next request after a complete one, such as an
	// HTTP keep-alive connection: closed when no connection is Fresh, idle longest first.
	Idle
	// Busy is a connection serving a request: never closed to make room.
	Busy
)

// SetActivity tells the Limit listener that accepted c, directly or under TLS, what c is
// doing; for any other connection it does nothing. Idle starts c's idle time now; Fresh
// keeps its place among the fresh ones as of when it was accepted. It costs two atomic
// stores, so a stream reader may call it around each read.
func SetActivity(c net.Conn, a Activity) {
	lc := find(c)
	if lc == nil {
		return
	}
	if a == Idle {
		lc.since.Store(time.Now().UnixNano())
	}
	lc.activity.Store(int32(a))
}

// HTTPConnState is SetActivity for an http.Server's ConnState hook: a new connection is
// Fresh, one reading or answering a request Busy, and a keep-alive connection between
// requests Idle. net/http reports Active only once a request's header is read whole, so a
// client that sends half a header stays Fresh.
func HTTPConnState(c net.Conn, s http.ConnState) {
	switch s {
	case http.StateActive:
		SetActivity(c, Busy)
	case http.StateIdle:
		SetActivity(c, Idle)
	}
}

// find returns the limitConn under c, looking through TLS.
func find(c net.Conn) *limitConn {
	for range 4 {
		switch v := c.(type) {
		case *limitConn:
			return v
		case interface{ NetConn() net.Conn }: // *tls.Conn
			c = v.NetConn()
		default:
			return nil
		}
	}
	return nil
}

// admit gives c a slot, taking it from the connection that eviction chooses when the cap is
// reached; it returns that connection, to be closed, or false when every slot is busy.
func (l *limitListener) admit(c *limitConn) (victim *limitConn, ok bool) {
	if l.max <= 0 {
		return nil, true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.open) >= l.max {
		if victim = l.victim(); victim == nil {
			return nil, false
		}
		l.remove(victim)
	}
	c.idx = len(l.open)
	l.open = append(l.open, c)
	return victim, true
}

// victim chooses the connection to close: the oldest Fresh one, else the one Idle longest,
// else none. It looks at every connection, which costs a few microseconds for a thousand
// and happens only when the cap is reached; keeping the connections ordered instead would
// cost a lock on every read and every request.
func (l *limitListener) victim() *limitConn {
	var fresh, idle *limitConn
	var freshSince, idleSince int64
	for _, c := range l.open {
		since := c.since.Load()
		switch Activity(c.activity.Load()) {
		case Fresh:
			if fresh == nil || since < freshSince {
				fresh, freshSince = c, since
			}
		case Idle:
			if idle == nil || since < idleSince {
				idle, idleSince = c, since
			}
		}
	}
	if fresh != nil {
		return fresh
	}
	return idle
}

// release gives c's slot back, unless eviction took it already.
func (l *limitListener) release(c *limitConn) {
	if l.max <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.idx >= 0 {
		l.remove(c)
	}
}

// remove takes c out of l.open; l.mu is held.
func (l *limitListener) remove(c *limitConn) {
	last := len(l.open) - 1
	moved := l.open[last]
	l.open[c.idx], moved.idx = moved, c.idx
	l.open[last] = nil
	l.open = l.open[:last]
	c.idx = -1
}
