package statsd

import (
	"bytes"
	"errors"
	"log/slog"
	"net"
	"time"

	"github.com/morse-agent/morse/internal/listener"
)

// accept takes connections until the listener is closed and hands each to its own
// goroutine in the connection set.
func (srv *server) accept() {
	s := srv.s
	var pause time.Duration
	for {
		conn, err := srv.tcp.Accept()
		if err != nil {
			if srv.closing() || errors.Is(err, net.ErrClosed) {
				return
			}
			s.c.readErrors.Incr()
			s.ioLog.Log(s.log, slog.LevelWarn, "accepting a connection failed", "error", err)
			pause = min(max(2*pause, 5*time.Millisecond), time.Second)
			if !srv.wait(pause) {
				return
			}
			continue
		}
		pause = 0
		srv.conns.Go(conn, srv.handle)
	}
}

// wait pauses for d; false when the server closes meanwhile.
func (srv *server) wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-srv.done:
		return false
	}
}

// handle reads one connection until it closes, and queues its complete lines a run at a
// time: what one read brought, up to its last newline. A line that does not end within
// 64 KiB is skipped up to its newline and counted. When the queue is full the connection
// waits, which stops reading it, so that TCP's flow control holds the sender back.
func (srv *server) handle(conn net.Conn) {
	s := srv.s
	s.c.curConns.Incr()
	defer s.c.curConns.Add(-1)
	from := conn.RemoteAddr()
	buf := make([]byte, maxPacket)
	fill, skipping := 0, false
	for {
		n, err := conn.Read(buf[fill:])
		s.c.tcpBytes.Add(int64(n))
		fill += n
		if end := bytes.LastIndexByte(buf[:fill], '\n'); end >= 0 {
			run := buf[:end+1]
			if skipping {
				run, skipping = run[bytes.IndexByte(run, '\n')+1:], false
			}
			if len(run) > 0 {
				s.c.tcpPackets.Add(int64(bytes.Count(run, []byte{'\n'})))
				if !srv.put(run, from) {
					return
				}
			}
			fill = copy(buf, buf[end+1:fill])
			listener.SetActivity(conn, listener.Idle)
		} else if fill == len(buf) {
			if !skipping {
				s.lineRefused(reasonTooLong, "", from)
			}
			fill, skipping = 0, true
		}
		if err != nil {
			// The last line may end without a newline when the sender closes.
			if fill > 0 && !skipping && !srv.closing() {
				s.c.tcpPackets.Incr()
				srv.put(buf[:fill], from)
			}
			return
		}
	}
}
