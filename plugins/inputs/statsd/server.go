package statsd

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/listener"
)

const (
	// maxPacket holds the largest UDP payload, and is the longest TCP line.
	maxPacket = 64 << 10
	// maxPendingBytes bounds the bytes the queue holds besides its count of packets, so
	// that 10,000 pending datagrams of 64 KiB cannot take 640 MiB.
	maxPendingBytes = 64 << 20
	// smallPacket is the size of the pooled buffers; a larger packet gets its own.
	smallPacket = 2048
)

// packet is what a reader hands to the workers: one UDP datagram, or the complete lines
// a TCP connection sent, with the sender's address for DogStatsD events.
type packet struct {
	data []byte
	from string
	buf  *[]byte // the pooled buffer data is in, nil for one of its own
}

// server is a running UDP socket or TCP listener, its queue and its workers.
type server struct {
	s       *Statsd
	acc     morse.Accumulator
	udp     net.PacketConn
	tcp     net.Listener // behind the connection cap
	conns   listener.ConnSet
	queue   chan packet
	bytes   atomic.Int64 // the bytes in queue
	pool    sync.Pool
	done    chan struct{}
	readers sync.WaitGroup
	workers sync.WaitGroup
}

// listen binds the socket and starts the readers and the workers.
func (s *Statsd) listen(acc morse.Accumulator) (*server, error) {
	srv := &server{s: s, acc: acc, queue: make(chan packet, s.AllowedPendingMessages), done: make(chan struct{})}
	srv.pool.New = func() any { b := make([]byte, smallPacket); return &b }
	var err error
	if s.udpProtocol() {
		err = srv.listenUDP()
	} else {
		err = srv.listenTCP()
	}
	if err != nil {
		return nil, err
	}
	for range s.NumberWorkerThreads {
		srv.workers.Go(srv.work)
	}
	return srv, nil
}

func (s *Statsd) udpProtocol() bool { return s.Protocol[:3] == "udp" }

func (srv *server) listenUDP() error {
	c, err := net.ListenPacket(srv.s.Protocol, srv.s.ServiceAddress)
	if err != nil {
		return err
	}
	if n := srv.s.ReadBufferSize; n > 0 {
		if err := c.(*net.UDPConn).SetReadBuffer(int(n)); err != nil {
			_ = c.Close()
			return err
		}
	}
	srv.udp = c
	srv.readers.Go(srv.readUDP)
	return nil
}

func (srv *server) listenTCP() error {
	s := srv.s
	lc := net.ListenConfig{KeepAlive: -1}
	if s.TCPKeepAlive {
		lc.KeepAlive = 0 // the system's period
		if s.TCPKeepAlivePeriod != nil && *s.TCPKeepAlivePeriod > 0 {
			lc.KeepAlive = time.Duration(*s.TCPKeepAlivePeriod)
		}
	}
	raw, err := lc.Listen(context.Background(), s.Protocol, s.ServiceAddress)
	if err != nil {
		return err
	}
	srv.tcp = listener.Limit(raw, s.MaxTCPConnections,
		listener.ConnCounters{Opened: s.c.totalConns, Refused: s.c.refused, Evicted: s.c.evicted}, s.logFull)
	srv.readers.Go(srv.accept)
	return nil
}

// logFull logs, throttled, a connection closed because max_tcp_connections was reached.
func (s *Statsd) logFull(from, evicted net.Addr) {
	if evicted == nil {
		s.ioLog.Log(s.log, slog.LevelWarn, "connection refused: max_tcp_connections reached and every connection is being read",
			"from", from, "max_tcp_connections", s.MaxTCPConnections)
		return
	}
	s.ioLog.Log(s.log, slog.LevelWarn, "max_tcp_connections reached: closed an idle connection to make room",
		"from", from, "closed", evicted, "max_tcp_connections", s.MaxTCPConnections)
}

func (srv *server) addr() net.Addr {
	if srv.udp != nil {
		return srv.udp.LocalAddr()
	}
	return srv.tcp.Addr()
}

// close stops reading, lets the workers parse what is queued, and waits for every
// goroutine.
func (srv *server) close() {
	close(srv.done)
	if srv.udp != nil {
		_ = srv.udp.Close()
	} else {
		_ = srv.tcp.Close()
	}
	srv.readers.Wait()
	srv.conns.CloseAndWait()
	close(srv.queue)
	srv.workers.Wait()
}

// closing reports whether close has begun.
func (srv *server) closing() bool {
	select {
	case <-srv.done:
		return true
	default:
		return false
	}
}

// readUDP reads datagrams until the socket is closed, and queues each, or drops and counts
// it when the queue is full.
func (srv *server) readUDP() {
	s := srv.s
	buf := make([]byte, maxPacket)
	for {
		n, from, err := srv.udp.ReadFrom(buf)
		if err != nil {
			if srv.closing() || errors.Is(err, net.ErrClosed) {
				return
			}
			s.c.readErrors.Incr()
			s.ioLog.Log(s.log, slog.LevelWarn, "reading a datagram failed", "error", err)
			continue
		}
		s.c.udpPackets.Incr()
		s.c.udpBytes.Add(int64(n))
		if !srv.offer(buf[:n], from) {
			s.c.udpDropped.Incr()
			s.ioLog.Log(s.log, slog.LevelWarn, "dropped a datagram: the queue is full; raise allowed_pending_messages or number_workers_threads",
				"allowed_pending_messages", s.AllowedPendingMessages, "dropped_so_far", s.c.udpDropped.Get())
		}
	}
}

// fill copies data into a packet, in a pooled buffer when it is small.
func (srv *server) fill(data []byte, from net.Addr) packet {
	p := packet{}
	if len(data) <= smallPacket {
		p.buf = srv.pool.Get().(*[]byte)
		p.data = (*p.buf)[:copy(*p.buf, data)]
	} else {
		p.data = bytes.Clone(data)
	}
	if srv.s.DataDogExtensions && from != nil {
		p.from = hostOf(from)
	}
	return p
}

// hostOf is the sender's IP, which DogStatsD events take as their source tag.
func hostOf(a net.Addr) string {
	switch a := a.(type) {
	case *net.UDPAddr:
		return a.IP.String()
	case *net.TCPAddr:
		return a.IP.String()
	}
	return ""
}

// offer queues a copy of data without waiting; false when the queue is full.
func (srv *server) offer(data []byte, from net.Addr) bool {
	if srv.bytes.Load()+int64(len(data)) > maxPendingBytes {
		return false
	}
	p := srv.fill(data, from)
	select {
	case srv.queue <- p:
		srv.bytes.Add(int64(len(p.data)))
		srv.s.c.pending.Set(int64(len(srv.queue)))
		return true
	default:
		srv.recycle(p)
		return false
	}
}

// put queues a copy of data, waiting while the queue is full; false when the server
// closes meanwhile.
func (srv *server) put(data []byte, from net.Addr) bool {
	p := srv.fill(data, from)
	for srv.bytes.Load()+int64(len(data)) > maxPendingBytes {
		if !srv.pause() {
			srv.recycle(p)
			return false
		}
	}
	select {
	case srv.queue <- p:
		srv.bytes.Add(int64(len(p.data)))
		srv.s.c.pending.Set(int64(len(srv.queue)))
		return true
	case <-srv.done:
		srv.recycle(p)
		return false
	}
}

// pause waits a little for the queue's bytes to go down; false when the server closes.
func (srv *server) pause() bool {
	t := time.NewTimer(time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-srv.done:
		return false
	}
}

func (srv *server) recycle(p packet) {
	if p.buf != nil {
		srv.pool.Put(p.buf)
	}
}

// work parses queued packets until the queue is closed and empty.
func (srv *server) work() {
	s := srv.s
	lp := s.newLineParser(srv.acc)
	for p := range srv.queue {
		srv.bytes.Add(-int64(len(p.data)))
		s.c.pending.Set(int64(len(srv.queue)))
		start := time.Now()
		lp.parsePacket(p.data, p.from)
		srv.recycle(p)
		s.c.parseTime.Set(time.Since(start).Nanoseconds())
	}
}
