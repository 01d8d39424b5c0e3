package syslog

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/listener"
	"github.com/morse-agent/morse/internal/sockaddr"
)

// addEvery is how many metrics a connection gathers before it hands them on in one call;
// it also hands on what it holds before every read that may block, so no message waits.
const addEvery = 32

// streamServer serves a TCP or unix stream socket: one goroutine accepts, and one goroutine
// per connection reads it.
type streamServer struct {
	s     *Syslog
	acc   morse.Accumulator
	raw   net.Listener // the bound socket, for its address
	ln    net.Listener // raw behind the connection cap and TLS
	conns listener.ConnSet
	done  chan struct{} // closed when the accept loop has ended
}

// listenStream binds the stream socket and starts accepting.
func (s *Syslog) listenStream(acc morse.Accumulator) (*streamServer, error) {
	lc := net.ListenConfig{KeepAlive: s.keepAlive()}
	if s.addr.Network == "unix" {
		if err := sockaddr.RemoveStale(s.addr.Network, s.addr.Addr); err != nil {
			return nil, err
		}
	}
	raw, err := lc.Listen(context.Background(), s.addr.Network, s.addr.Addr)
	if err != nil {
		return nil, err
	}
	if err := s.chmod(); err != nil {
		_ = raw.Close()
		return nil, err
	}
	ln := listener.Limit(raw, s.MaxConnections,
		listener.ConnCounters{Opened: s.c.opened, Closed: s.c.closed, Refused: s.c.refused, Evicted: s.c.evicted}, nil)
	if s.tlsCfg != nil {
		ln = tls.NewListener(ln, s.tlsCfg)
	}
	srv := &streamServer{s: s, acc: acc, raw: raw, ln: ln, done: make(chan struct{})}
	go srv.serve()
	return srv, nil
}

// keepAlive maps keep_alive_period onto net.ListenConfig: unset keeps Go's default, zero
// turns probes off.
func (s *Syslog) keepAlive() time.Duration {
	switch {
	case s.KeepAlivePeriod == nil:
		return 0
	case *s.KeepAlivePeriod == 0:
		return -1
	}
	return time.Duration(*s.KeepAlivePeriod)
}

// chmod applies socket_mode to a unix socket.
func (s *Syslog) chmod() error {
	if !s.addr.Unix() || s.mode == 0 {
		return nil
	}
	if err := os.Chmod(s.addr.Addr, s.mode); err != nil {
		return fmt.Errorf("socket_mode: %w", err)
	}
	return nil
}

func (srv *streamServer) addr() net.Addr { return srv.raw.Addr() }

// serve accepts connections until the listener is closed.
func (srv *streamServer) serve() {
	defer close(srv.done)
	for {
		conn, err := srv.ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				srv.s.log.Error("accepting connections failed; the listener stops", "error", err)
			}
			return
		}
		srv.conns.Go(conn, srv.handle)
	}
}

// close stops accepting, closes every connection and waits for every goroutine.
func (srv *streamServer) close() {
	_ = srv.ln.Close()
	<-srv.done
	srv.conns.CloseAndWait()
}

// handle reads one connection until it ends, is idle for read_timeout, or the listener
// stops.
func (srv *streamServer) handle(conn net.Conn) {
	s := srv.s
	from := conn.RemoteAddr()
	if !s.sourceAllowed(from) {
		s.c.refused.Incr()
		srv.acc.AddError(fmt.Errorf("syslog: connection from %v refused: not in allowed_sources", from))
		return
	}
	setReadBuffer(conn, int(s.ReadBufferSize))
	batch := morse.NewMetricBatch(srv.acc, addEvery)
	cr := &connReader{conn: conn, timeout: time.Duration(s.ReadTimeout), s: s, beforeRead: batch.Flush}
	defer batch.Flush()
	st := s.newStream(s.newDecoder(sourceOf(from)), cr, func(m morse.Metric) { cr.sawMessage = true; batch.Add(m) },
		func(err error) { srv.acc.AddError(fmt.Errorf("syslog: connection from %v: %w", from, err)) })
	var err error
	if s.Framing == "non-transparent" {
		trailer := byte('\n')
		if s.nul {
			trailer = 0
		}
		err = st.nonTransparent(trailer)
	} else {
		err = st.octetCounting(int(s.MaxMessageLength))
	}
	var ne net.Error
	switch {
	case err == nil, errors.Is(err, net.ErrClosed):
	case errors.As(err, &ne) && ne.Timeout():
		s.log.Debug("closing idle connection", "from", from, "read_timeout", s.ReadTimeout)
	default:
		s.c.readErr.Incr()
		srv.acc.AddError(fmt.Errorf("syslog: reading the connection from %v: %w", from, err))
	}
}

// sourceOf is the source tag of a sender: its IP address, or nothing for a unix socket.
func sourceOf(a net.Addr) string {
	switch a := a.(type) {
	case *net.TCPAddr:
		return a.IP.String()
	case *net.UDPAddr:
		return a.IP.String()
	}
	return ""
}

// setReadBuffer sets SO_RCVBUF on conn, or on the socket under TLS or the connection cap.
func setReadBuffer(conn any, size int) {
	for size > 0 {
		switch c := conn.(type) {
		case *tls.Conn:
			conn = c.NetConn()
			continue
		case interface{ Unwrap() net.Conn }:
			conn = c.Unwrap()
			continue
		case interface{ SetReadBuffer(int) error }:
			_ = c.SetReadBuffer(size) // the system's size stays; the kernel caps it anyway
		}
		return
	}
}

// connReader reads a connection for the framing. Before each read it hands on the metrics
// parsed so far and moves the idle deadline on; it counts the bytes and tells
// max_connections whether the connection is doing something (listener.SetActivity).
type connReader struct {
	conn       net.Conn
	timeout    time.Duration
	s          *Syslog
	beforeRead func()
	sawMessage bool // a complete message has been read: the connection is no longer Fresh
}

// Read reads from the connection within the idle timeout.
func (r *connReader) Read(p []byte) (int, error) {
	if r.sawMessage {
		listener.SetActivity(r.conn, listener.Idle)
	} else {
		listener.SetActivity(r.conn, listener.Fresh)
	}
	r.beforeRead()
	if r.timeout > 0 {
		if err := r.conn.SetReadDeadline(time.Now().Add(r.timeout)); err != nil {
			return 0, err
		}
	}
	n, err := r.conn.Read(p)
	if n > 0 {
		listener.SetActivity(r.conn, listener.Busy)
		r.s.c.bytes.Add(int64(n))
	}
	return n, err
}

// maxDatagram holds the largest UDP payload, and any unix datagram a syslog sender writes.
const maxDatagram = 64 << 10

// packetServer serves a UDP or unix datagram socket with one goroutine: each datagram is
// one message (RFC 5426), parsed as it is read.
type packetServer struct {
	s    *Syslog
	acc  morse.Accumulator
	pc   net.PacketConn
	path string // a unixgram socket file to remove on close
	wg   sync.WaitGroup
}

// listenPacket binds the datagram socket and starts reading it.
func (s *Syslog) listenPacket(acc morse.Accumulator) (*packetServer, error) {
	if s.addr.Network == "unixgram" {
		if err := sockaddr.RemoveStale(s.addr.Network, s.addr.Addr); err != nil {
			return nil, err
		}
	}
	pc, err := net.ListenPacket(s.addr.Network, s.addr.Addr)
	if err != nil {
		return nil, err
	}
	if err := s.chmod(); err != nil {
		_ = pc.Close()
		return nil, err
	}
	setReadBuffer(pc, int(s.ReadBufferSize))
	srv := &packetServer{s: s, acc: acc, pc: pc}
	if s.addr.Network == "unixgram" {
		srv.path = s.addr.Addr
	}
	srv.wg.Add(1)
	go srv.serve()
	return srv, nil
}

func (srv *packetServer) addr() net.Addr { return srv.pc.LocalAddr() }

func (srv *packetServer) close() {
	_ = srv.pc.Close()
	srv.wg.Wait()
	if srv.path != "" {
		_ = os.Remove(srv.path)
	}
}

// serve reads datagrams until the socket is closed.
func (srv *packetServer) serve() {
	defer srv.wg.Done()
	s := srv.s
	buf := make([]byte, maxDatagram)
	d := s.newDecoder("")
	for {
		n, from, err := srv.pc.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			s.c.readErr.Incr()
			srv.acc.AddError(fmt.Errorf("syslog: reading datagrams: %w", err))
			continue
		}
		s.c.bytes.Add(int64(n))
		if !s.sourceAllowed(from) {
			s.c.refused.Incr()
			continue
		}
		d.source = sourceOf(from)
		m, ok, err := d.decode(buf[:n])
		if ok {
			srv.acc.AddMetric(m)
		}
		if err != nil {
			srv.acc.AddError(fmt.Errorf("syslog: datagram from %v: %w", from, err))
		}
	}
}
