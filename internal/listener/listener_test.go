package listener_test

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/listener"
	"github.com/morse-agent/morse/selfstat"
)

// capped is a Limit listener of cap 2 on a loopback port, whose accepted connections arrive
// on a channel, with the test's side of each connection dialled by dial.
type capped struct {
	t                                *testing.T
	ln                               net.Listener
	accepted                         chan net.Conn
	full                             chan [2]net.Addr // from, evicted
	opened, closed, refused, evicted selfstat.Counter
}

func newCapped(t *testing.T, max int) *capped {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	c := &capped{t: t, accepted: make(chan net.Conn), full: make(chan [2]net.Addr, 1)}
	c.ln = listener.Limit(raw, max,
		listener.ConnCounters{Opened: &c.opened, Closed: &c.closed, Refused: &c.refused, Evicted: &c.evicted},
		func(from, evicted net.Addr) { c.full <- [2]net.Addr{from, evicted} })
	t.Cleanup(func() { _ = c.ln.Close() })
	go func() {
		for {
			conn, err := c.ln.Accept()
			if err != nil {
				close(c.accepted)
				return
			}
			c.accepted <- conn
		}
	}()
	return c
}

func (c *capped) dial() net.Conn {
	conn, err := net.Dial("tcp", c.ln.Addr().String())
	require.NoError(c.t, err)
	c.t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// requireClosed checks that the listener closed the other end of conn.
func requireClosed(t *testing.T, conn net.Conn) {
	t.Helper()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err := conn.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF, "the listener closed the connection")
}

// TestLimitEvictsFreshThenIdleAndRefusesWhenAllBusy checks the order in which the cap makes
// room: the oldest connection that has sent nothing complete, then the one idle longest,
// and nothing when every connection is busy, in which case the new one is refused.
func TestLimitEvictsFreshThenIdleAndRefusesWhenAllBusy(t *testing.T) {
	c := newCapped(t, 2)
	a1, b1 := c.dial(), c.dial()
	a, b := <-c.accepted, <-c.accepted

	// Both fresh: the oldest, a, makes room for the third.
	d1 := c.dial()
	d := <-c.accepted
	require.Equal(t, [2]net.Addr{d.RemoteAddr(), a.RemoteAddr()}, <-c.full)
	requireClosed(t, a1)
	_ = a.Close() // the owner closes the evicted connection as usual; its socket is already closed
	_ = a.Close()

	// b idle, d fresh: the fresh one goes first even though b is older.
	listener.SetActivity(b, listener.Idle)
	e1 := c.dial()
	e := <-c.accepted
	require.Equal(t, d.RemoteAddr(), (<-c.full)[1])
	requireClosed(t, d1)
	_ = d.Close()

	// b and e idle: b has been idle longest.
	listener.SetActivity(e, listener.Idle)
	f1 := c.dial()
	f := <-c.accepted
	require.Equal(t, b.RemoteAddr(), (<-c.full)[1])
	requireClosed(t, b1)
	_ = b.Close()

	// e and f busy: nothing to evict, so the new connection is refused.
	listener.SetActivity(e, listener.Busy)
	listener.SetActivity(f, listener.Busy)
	over := c.dial()
	from := <-c.full
	require.Equal(t, over.LocalAddr().String(), from[0].String())
	require.Nil(t, from[1])
	requireClosed(t, over)
	require.NoError(t, e1.SetReadDeadline(time.Now().Add(50*time.Millisecond)))
	_, err := e1.Read(make([]byte, 1))
	require.ErrorIs(t, err, os.ErrDeadlineExceeded, "a busy connection stays open")

	// Closing frees a slot, once however often Close is called.
	require.NoError(t, e.Close())
	_ = e.Close()
	c.dial()
	g := <-c.accepted
	require.Equal(t, int64(6), c.opened.Get())
	require.Equal(t, int64(3), c.evicted.Get())
	require.Equal(t, int64(1), c.refused.Get())
	require.Equal(t, int64(4), c.closed.Get(), "a, d, b and e")
	_ = f1
	require.NoError(t, f.Close())
	require.NoError(t, g.Close())
	require.NoError(t, c.ln.Close())
	_, open := <-c.accepted
	require.False(t, open, "Accept ends when the listener closes")
	require.Equal(t, int64(6), c.closed.Get())
}

// TestSetActivityLooksThroughTLS: the connection an http.Server or a stream reader holds is
// the *tls.Conn around the one Limit accepted, and marking it marks that one.
func TestSetActivityLooksThroughTLS(t *testing.T) {
	c := newCapped(t, 1)
	c.dial()
	busy := tls.Server(<-c.accepted, &tls.Config{})
	listener.HTTPConnState(busy, http.StateActive)
	over := c.dial()
	requireClosed(t, over)
	require.Nil(t, (<-c.full)[1], "refused: the only connection is busy")
	listener.HTTPConnState(busy, http.StateIdle)
	c.dial()
	<-c.accepted
	require.Equal(t, int64(1), c.evicted.Get(), "the idle one made room")
}

// TestLimitWithoutCapTracksNothing checks that max <= 0 accepts everything and that
// SetActivity on its connections, or on connections of no Limit listener, does nothing.
func TestLimitWithoutCapTracksNothing(t *testing.T) {
	c := newCapped(t, 0)
	for range 3 {
		c.dial()
		conn := <-c.accepted
		listener.SetActivity(conn, listener.Idle)
		listener.HTTPConnState(conn, http.StateActive)
	}
	server, client := net.Pipe()
	defer client.Close()
	listener.SetActivity(server, listener.Busy)
	require.Equal(t, int64(3), c.opened.Get())
	require.Zero(t, c.evicted.Get()+c.refused.Get())
}

func TestConnSetClosesAndWaits(t *testing.T) {
	var set listener.ConnSet
	started := make(chan struct{}, 3)
	for range 3 {
		server, client := net.Pipe()
		t.Cleanup(func() { _ = client.Close() })
		require.True(t, set.Go(server, func(c net.Conn) {
			started <- struct{}{}
			_, _ = io.Copy(io.Discard, c) // returns when CloseAndWait closes c
		}))
	}
	for range 3 {
		<-started
	}
	require.Equal(t, 3, set.Len())
	set.CloseAndWait()
	require.Equal(t, 0, set.Len())
	server, client := net.Pipe()
	defer client.Close()
	require.False(t, set.Go(server, func(net.Conn) { t.Error("must not run after CloseAndWait") }))
}
