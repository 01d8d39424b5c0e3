package listener

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/morse-agent/morse/selfstat"
)

// ConnCounters count what a Limit listener does with connections. Nil counters are skipped.
type ConnCounters struct {
	Opened  *selfstat.Counter // accepted and handed on
	Closed  *selfstat.Counter // handed on and since closed, evicted ones included
	Refused *selfstat.Counter // closed at once: the cap was reached and every connection was busy
	Evicted *selfstat.Counter // closed by the listener to make room for a new connection
}

func incr(c *selfstat.Counter) {
	if c != nil {
		c.Incr()
	}
}

// Limit wraps l so that at most max connections are open at once; max <= 0 means no cap.
//
// When the cap is reached, a new connection takes the place of one that is doing nothing,
// rather than being turned away: otherwise a client that opens max connections and sends
// nothing on them locks every legitimate sender out until the timeouts close them. The
// connection closed to make room is, first, the oldest of those that have not sent a
// complete request yet (Fresh), and, when there is none, the one idle longest between
// requests (Idle). A connection serving a request (Busy) is never closed; the owner says
// which is which with SetActivity, or HTTPConnState for an http.Server. Only when every
// connection is busy is the new one closed as soon as it is accepted, and counted, instead
// of being left in the kernel's backlog, so that the client learns it at once and can try
// another agent.
//
// onFull, when not nil, is told about each connection closed because of the cap, for a
// throttled log: evicted is the address of the connection closed to make room for from, or
// nil when from itself was refused.
func Limit(l net.Listener, max int, c ConnCounters, onFull func(from, evicted net.Addr)) net.Listener {
	return &limitListener{Listener: l, max: max, c: c, onFull: onFull, done: make(chan struct{})}
}

type limitListener struct {
	net.Listener
	max    int // <= 0: no cap, and open stays empty
	c      ConnCounters
	onFull func(from, evicted net.Addr)
	once   sync.Once
	done   chan struct{} // closed by Close, to end a backoff wait in Accept

	mu   sync.Mutex
	open []*limitConn // the connections that hold a slot, in no order; only with a cap
}

// Accept returns the next connection within the cap, after closing an idle one to make room
// when the cap is reached. Connections that find every slot busy are refused here and never
// returned. A temporary accept error, such as running out of file descriptors, is retried
// after a short, growing pause instead of spinning.
func (l *limitListener) Accept() (net.Conn, error) {
	var pause time.Duration
	for {
		conn, err := l.Listener.Accept()
		if err != nil {
			if isTemporary(err) {
				pause = min(max(2*pause, 5*time.Millisecond), time.Second)
				if !l.wait(pause) {
					return nil, net.ErrClosed
				}
				continue
			}
			return nil, err
		}
		pause = 0
		c := &limitConn{Conn: conn, l: l, idx: -1}
		c.since.Store(time.Now().UnixNano())
		victim, ok := l.admit(c)
		if !ok {
			incr(l.c.Refused)
			l.full(conn.RemoteAddr(), nil)
			_ = conn.Close()
			continue
		}
		if victim != nil {
			// The victim's owner still holds it and closes it once its read fails; closing
			// the socket underneath is what makes that read fail, and frees the descriptor.
			incr(l.c.Evicted)
			l.full(conn.RemoteAddr(), victim.RemoteAddr())
			_ = victim.Conn.Close()
		}
		incr(l.c.Opened)
		return c, nil
	}
}

func (l *limitListener) full(from, evicted net.Addr) {
	if l.onFull != nil {
		l.onFull(from, evicted)
	}
}

// isTemporary reports the accept errors that pass by themselves, such as EMFILE. The
// Temporary method is deprecated for most errors but still the way the net package marks
// these ones.
func isTemporary(err error) bool {
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}

// wait pauses for d, or reports false at once when the listener is closed.
func (l *limitListener) wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-l.done:
		return false
	}
}

// Close closes the listener; open connections stay open until their owners close them.
func (l *limitListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitConn gives its slot back when it is closed, once however often Close is called.
type limitConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
	idx  int // index in l.open, -1 once the slot is given back; guarded by l.mu
	// activity and since are what eviction looks at: since is when the connection was
	// accepted while it is Fresh, and when it went Idle after that.
	activity atomic.Int32
	since    atomic.Int64 // unix nanoseconds
}

// Close closes the connection and gives its slot back.
func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.release(c)
		incr(c.l.c.Closed)
	})
	return err
}

// CloseWrite half-closes the connection where the underlying one can; net/http uses it to
// end a response cleanly before it closes a connection.
func (c *limitConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// Unwrap returns the connection that was accepted, for code that needs its concrete type,
// such as *net.TCPConn to set socket options.
func (c *limitConn) Unwrap() net.Conn { return c.Conn }
