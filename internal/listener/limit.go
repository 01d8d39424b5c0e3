package listener

import (
	"errors"
	"net"
	"sync"
	"time"

	"github.com/morse-agent/morse/selfstat"
)

// ConnCounters count what a Limit listener does with connections. Nil counters are skipped.
type ConnCounters struct {
	Opened  *selfstat.Counter // accepted and handed on
	Closed  *selfstat.Counter // handed on and since closed
	Refused *selfstat.Counter // closed at once because the cap was reached
}

func incr(c *selfstat.Counter) {
	if c != nil {
		c.Incr()
	}
}

// Limit wraps l so that at most max connections are open at once; max <= 0 means no cap.
//
// A connection over the cap is closed as soon as it is accepted, and counted, instead of
// being left in the kernel's backlog: a client that is refused learns it at once and can try
// another agent, and a flood of connections cannot make Accept wait forever while the
// connections already open keep being served. onRefuse, when not nil, is told the address of
// each refused client, for a throttled log.
func Limit(l net.Listener, max int, c ConnCounters, onRefuse func(net.Addr)) net.Listener {
	ll := &limitListener{Listener: l, c: c, onRefuse: onRefuse, done: make(chan struct{})}
	if max > 0 {
		ll.slots = make(chan struct{}, max)
	}
	return ll
}

type limitListener struct {
	net.Listener
	slots    chan struct{} // one element per open connection; nil when there is no cap
	c        ConnCounters
	onRefuse func(net.Addr)
	once     sync.Once
	done     chan struct{} // closed by Close, to end a backoff wait in Accept
}

// Accept returns the next connection within the cap. Connections over the cap are refused
// here and never returned. A temporary accept error, such as running out of file
// descriptors, is retried after a short, growing pause instead of spinning.
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
		if !l.acquire() {
			incr(l.c.Refused)
			if l.onRefuse != nil {
				l.onRefuse(conn.RemoteAddr())
			}
			_ = conn.Close()
			continue
		}
		incr(l.c.Opened)
		return &limitConn{Conn: conn, l: l}, nil
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

func (l *limitListener) acquire() bool {
	if l.slots == nil {
		return true
	}
	select {
	case l.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

func (l *limitListener) release() {
	if l.slots != nil {
		<-l.slots
	}
	incr(l.c.Closed)
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
}

// Close closes the connection and gives its slot back.
func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.l.release)
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
