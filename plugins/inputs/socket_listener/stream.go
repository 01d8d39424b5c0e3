package socketlistener

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/listener"
	"github.com/morse-agent/morse/internal/sockaddr"
	"github.com/morse-agent/morse/plugins/parsers/influx"
	"github.com/morse-agent/morse/selfstat"
)

// streamServer serves a TCP or unix stream socket: one goroutine accepts, and one goroutine
// per connection parses what it sends.
type streamServer struct {
	sl    *SocketListener
	acc   morse.Accumulator
	raw   net.Listener // the bound socket, for its address
	ln    net.Listener // raw behind the connection cap and TLS
	conns listener.ConnSet
	done  chan struct{} // closed when the accept loop has ended
	// ctx ends when the listener stops, releasing connections that wait for room.
	ctx    context.Context
	cancel context.CancelFunc
}

// listenStream binds the stream socket and starts accepting.
func (s *SocketListener) listenStream(acc morse.Accumulator) (*streamServer, error) {
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
		listener.ConnCounters{Opened: s.c.opened, Closed: s.c.closed, Refused: s.c.refused, Evicted: s.c.evicted},
		s.logFull)
	if s.tlsCfg != nil {
		ln = tls.NewListener(ln, s.tlsCfg)
	}
	srv := &streamServer{sl: s, acc: acc, raw: raw, ln: ln, done: make(chan struct{})}
	srv.ctx, srv.cancel = context.WithCancel(context.Background())
	go srv.serve()
	return srv, nil
}

// logFull logs, throttled, a connection closed because max_connections was reached.
func (s *SocketListener) logFull(from, evicted net.Addr) {
	if evicted == nil {
		s.ioLog.Log(s.log, slog.LevelWarn, "connection refused: max_connections reached and every connection is being read",
			"from", from, "max_connections", s.MaxConnections)
		return
	}
	s.ioLog.Log(s.log, slog.LevelWarn, "max_connections reached: closed the oldest connection without a complete line to make room",
		"from", from, "closed", evicted, "max_connections", s.MaxConnections)
}

// keepAlive maps keep_alive_period onto net.ListenConfig: unset keeps Go's default, zero
// turns probes off.
func (s *SocketListener) keepAlive() time.Duration {
	switch {
	case s.KeepAlivePeriod == nil:
		return 0
	case *s.KeepAlivePeriod == 0:
		return -1
	}
	return time.Duration(*s.KeepAlivePeriod)
}

// chmod applies socket_mode to a unix socket.
func (s *SocketListener) chmod() error {
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
				srv.sl.log.Error("accepting connections failed; the listener stops", "error", err)
			}
			return
		}
		srv.conns.Go(conn, srv.handle)
	}
}

// close stops accepting, closes every connection and waits for every goroutine.
func (srv *streamServer) close() {
	srv.cancel()
	_ = srv.ln.Close()
	<-srv.done
	srv.conns.CloseAndWait()
}

// handle parses one connection until it ends, is idle for read_timeout, or the listener
// stops.
func (srv *streamServer) handle(conn net.Conn) {
	sl := srv.sl
	sl.setReadBuffer(conn)
	cr := &connReader{conn: conn, timeout: time.Duration(sl.ReadTimeout), bytes: sl.c.bytes, lines: sl.c.lines}
	defer cr.flush()
	from := conn.RemoteAddr()
	if !sl.sourceAllowed(from) {
		sl.c.refused.Incr()
		sl.ioLog.Log(sl.log, slog.LevelWarn, "connection refused", "from", from, "error", errNotAllowed)
		return
	}
	var r io.Reader = cr
	if sl.ContentEncoding == "gzip" {
		gz, err := newGzipMembers(cr)
		if err != nil {
			srv.readError(from, "reading the gzip header failed", err)
			return
		}
		defer gz.Close()
		r = gz
	}
	sink := srv.newConnSink()
	cr.beforeRead = sink.flush
	defer sink.flush()
	emit := func(m morse.Metric) {
		cr.pending++
		sink.add(m)
	}
	var err error
	if sl.other {
		err = sl.parseLines(r, emit, from, &cr.pending)
	} else {
		err = sl.parser.ParseReader(r, emit, func(e influx.LineError) {
			cr.pending++
			sl.lineError(e, from)
		})
	}
	if err != nil {
		srv.readError(from, "connection ended", err)
	}
}

// addEvery is how many metrics a connection gathers before it hands them to the outputs in
// one call, and, with backpressure, waits for room first. A disk buffer writes one record
// per call, so metric by metric it would make a system call per line. Between two waits
// each connection may add this many past the high-water mark, so with the default marks
// about 60 connections sending at once still fit below the buffer's limit. A wait costs a
// few atomic loads while there is room, against a microsecond or so to parse a line.
const addEvery = 32

// connSink takes the metrics the parser finds on one connection and adds them in batches.
// It is flushed before every read of the connection, so no metric waits for the sender's
// next line; with backpressure it waits for room before each batch, and the connection is
// not read while it waits, so the kernel's flow control slows the sender.
type connSink struct {
	batch *morse.MetricBatch
	rw    morse.RoomWaiter // nil without backpressure
	ctx   context.Context  // ends when the listener stops
	n     int
}

func (srv *streamServer) newConnSink() *connSink {
	cs := &connSink{batch: morse.NewMetricBatch(srv.acc, addEvery), ctx: srv.ctx}
	if rw, ok := srv.acc.(morse.RoomWaiter); ok && srv.sl.Backpressure {
		cs.rw = rw
	}
	return cs
}

func (cs *connSink) add(m morse.Metric) {
	if cs.rw != nil && cs.n == 0 {
		// An error means the listener is stopping; the metrics are still added.
		_ = cs.rw.WaitForRoom(cs.ctx)
	}
	cs.batch.Add(m)
	if cs.n++; cs.n == addEvery {
		cs.n = 0 // the batch flushed itself
	}
}

// flush adds what the sink holds.
func (cs *connSink) flush() {
	cs.batch.Flush()
	cs.n = 0
}

// readError logs why a connection ended, unless the listener closed it or the sender closed
// it cleanly. An idle connection that read_timeout closed is normal and logged at debug
// level only.
func (srv *streamServer) readError(from net.Addr, msg string, err error) {
	sl := srv.sl
	var ne net.Error
	switch {
	case errors.Is(err, net.ErrClosed), errors.Is(err, io.EOF):
		return // closed by the listener, or by a sender that sent nothing
	case errors.As(err, &ne) && ne.Timeout():
		sl.log.Debug("closing idle connection", "from", from, "read_timeout", sl.ReadTimeout)
		return
	}
	sl.c.readErr.Incr()
	sl.ioLog.Log(sl.log, slog.LevelWarn, msg, "from", from, "error", err)
}

// connReader reads a connection for the parser. Before each read it moves the idle deadline
// on, and after it counts the bytes and the lines parsed since the previous read. Counting
// per read rather than per line keeps shared counters out of the per-line path.
//
// It also tells max_connections what the connection is doing (listener.SetActivity): Fresh
// until a first complete line, Idle while it waits for bytes after that, Busy while what it
// read is parsed and handed over. At the cap, a new connection takes the place of the
// oldest Fresh one, else of the one Idle longest, so connections that send nothing cannot
// lock a sender out.
type connReader struct {
	conn    net.Conn
	timeout time.Duration
	bytes   *selfstat.Counter
	lines   *selfstat.Counter
	pending int64 // lines parsed since the last flush; touched by the parsing goroutine only
	sawLine bool  // a complete line, good or bad, has been parsed
	// beforeRead hands over the metrics parsed so far, before a read that may block.
	beforeRead func()
}

// Read reads from the connection within the idle timeout, counting what it read.
func (r *connReader) Read(p []byte) (int, error) {
	// The activity is set before the metrics are handed over, so that whoever sees them
	// sees the connection Idle already.
	r.sawLine = r.sawLine || r.pending > 0
	if r.sawLine {
		listener.SetActivity(r.conn, listener.Idle)
	} else {
		listener.SetActivity(r.conn, listener.Fresh)
	}
	if r.beforeRead != nil {
		r.beforeRead()
	}
	r.flush()
	if r.timeout > 0 {
		if err := r.conn.SetReadDeadline(time.Now().Add(r.timeout)); err != nil {
			return 0, err
		}
	}
	n, err := r.conn.Read(p)
	if n > 0 {
		listener.SetActivity(r.conn, listener.Busy)
	}
	r.bytes.Add(int64(n))
	return n, err
}

// flush adds the lines parsed since the last read to the shared counter.
func (r *connReader) flush() {
	if r.pending > 0 {
		r.lines.Add(r.pending)
		r.pending = 0
	}
}
