package loadgen

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// startSink serves a Sink on a free loopback port for the rest of the test.
func startSink(t testing.TB, s *Sink) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- ServeSink(ctx, "127.0.0.1:0", s, func(a net.Addr) { addrc <- a.String() })
	}()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	select {
	case a := <-addrc:
		return a
	case err := <-done:
		t.Fatalf("sink: %v", err)
		return ""
	}
}

// tcpCounter is a TCP server that counts the lines it reads.
type tcpCounter struct {
	ln    net.Listener
	wg    sync.WaitGroup
	lines atomic.Int64
	ended chan struct{} // one per connection read to its end
}

func startTCPCounter(t testing.TB) *tcpCounter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &tcpCounter{ln: ln, ended: make(chan struct{}, 64)}
	s.wg.Go(s.accept)
	t.Cleanup(func() { s.stop() })
	return s
}

func (s *tcpCounter) accept() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Go(func() {
			defer c.Close()
			var lc lineCounter
			buf := make([]byte, 64<<10)
			for {
				n, err := c.Read(buf)
				lc.write(buf[:n])
				if err != nil {
					break
				}
			}
			lc.end()
			s.lines.Add(lc.lines)
			select {
			case s.ended <- struct{}{}:
			default:
			}
		})
	}
}

// count waits until the connections have brought want lines (for at most 10 s), then stops
// and returns the lines counted. A connection that the sender has already written and
// closed may still wait in the listen backlog when Run returns; closing the listener at
// once would reset it with its lines unread.
func (s *tcpCounter) count(want int64) int64 {
	timeout := time.After(10 * time.Second)
	for s.lines.Load() < want {
		select {
		case <-s.ended:
		case <-timeout:
			return s.stop()
		}
	}
	return s.stop()
}

// stop closes the listener and waits for every accepted connection to reach its end. The
// sender closes its connections before Run returns, so after stop the count of the
// connections accepted is final.
func (s *tcpCounter) stop() int64 {
	_ = s.ln.Close()
	s.wg.Wait()
	return s.lines.Load()
}

// udpCounter is a UDP server that counts the lines of the datagrams it receives.
type udpCounter struct {
	pc       net.PacketConn
	done     chan struct{}
	lines    atomic.Int64
	datagram atomic.Int64
	maxSize  atomic.Int64
	changed  chan struct{}
}

func startUDPCounter(t testing.TB) *udpCounter {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	_ = pc.(*net.UDPConn).SetReadBuffer(8 << 20)
	s := &udpCounter{pc: pc, done: make(chan struct{}), changed: make(chan struct{}, 1)}
	go s.read()
	t.Cleanup(func() {
		_ = pc.Close()
		<-s.done
	})
	return s
}

func (s *udpCounter) read() {
	defer close(s.done)
	buf := make([]byte, 65536)
	for {
		n, _, err := s.pc.ReadFrom(buf)
		if err != nil {
			return
		}
		var lc lineCounter
		lc.write(buf[:n])
		lc.end()
		s.lines.Add(lc.lines)
		s.datagram.Add(1)
		if int64(n) > s.maxSize.Load() {
			s.maxSize.Store(int64(n))
		}
		select {
		case s.changed <- struct{}{}:
		default:
		}
	}
}

// waitFor waits until want lines have arrived, or fails the test after a generous bound.
func (s *udpCounter) waitFor(t testing.TB, want int64) {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for s.lines.Load() < want {
		select {
		case <-s.changed:
		case <-deadline.C:
			t.Fatalf("UDP: %d of %d lines arrived", s.lines.Load(), want)
		}
	}
}

// fixedStatusServer answers every request with one status, counting requests.
func fixedStatusServer(t testing.TB, status int, body string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}), ReadHeaderTimeout: 5 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		_ = srv.Close()
		require.True(t, errors.Is(<-done, http.ErrServerClosed))
	})
	return ln.Addr().String()
}
