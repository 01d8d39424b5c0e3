package listener

import (
	"net"
	"sync"
)

// ConnSet runs one handler goroutine per connection and remembers the connections, so that
// a listener's Stop can close every one of them and wait until every handler has returned.
// Whoever starts a goroutine stops it: nothing a ConnSet started outlives CloseAndWait.
type ConnSet struct {
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// Go runs handle(c) in a new goroutine and closes c when handle returns. After
// CloseAndWait has begun it closes c at once instead and reports false.
func (s *ConnSet) Go(c net.Conn, handle func(net.Conn)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = c.Close()
		return false
	}
	if s.conns == nil {
		s.conns = map[net.Conn]struct{}{}
	}
	s.conns[c] = struct{}{}
	s.wg.Go(func() {
		defer s.forget(c)
		handle(c)
	})
	return true
}

func (s *ConnSet) forget(c net.Conn) {
	_ = c.Close()
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// Len is the number of connections being handled.
func (s *ConnSet) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// CloseAndWait closes every connection, which ends the handlers' reads, and waits for
// every handler to return. Connections offered to Go afterwards are closed at once.
func (s *ConnSet) CloseAndWait() {
	s.mu.Lock()
	s.closed = true
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}
