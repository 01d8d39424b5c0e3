package kafka

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testserver"
)

// socks5 is a minimal SOCKS5 proxy (RFC 1928, with the user/password method of RFC 1929)
// on 127.0.0.1, for the socks5_* options: no proxy server is packaged for the tests, and
// the protocol is small. It counts the connections it relayed and the logins it refused.
type socks5 struct {
	ln       net.Listener
	user     string
	pass     string
	connects atomic.Int64
	refusals atomic.Int64
	wg       sync.WaitGroup
}

func startSocks5(t *testing.T, user, pass string) *socks5 {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &socks5{ln: ln, user: user, pass: pass}
	s.wg.Add(1)
	go s.serve()
	t.Cleanup(func() {
		_ = s.ln.Close()
		s.wg.Wait()
	})
	return s
}

func (s *socks5) serve() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer c.Close()
			target, err := s.handshake(c)
			if err != nil {
				return
			}
			defer target.Close()
			s.connects.Add(1)
			// Relay until either side closes; closing both ends stops the other copy.
			done := make(chan struct{})
			go func() {
				_, _ = io.Copy(target, c)
				_ = target.Close()
				close(done)
			}()
			_, _ = io.Copy(c, target)
			_ = c.Close()
			<-done
		}()
	}
}

// handshake reads the greeting, the user and password, and the CONNECT request, and dials
// the target.
func (s *socks5) handshake(c net.Conn) (net.Conn, error) {
	if err := s.authenticate(c); err != nil {
		return nil, err
	}
	addr, err := readConnect(c)
	if err != nil {
		return nil, err
	}
	target, err := net.Dial("tcp", addr)
	if err != nil {
		_, _ = c.Write([]byte{5, 5, 0, 1, 0, 0, 0, 0, 0, 0})
		return nil, err
	}
	if _, err := c.Write([]byte{5, 0, 0, 1, 0, 0, 0, 0, 0, 0}); err != nil {
		_ = target.Close()
		return nil, err
	}
	return target, nil
}

// readBytes reads a one-byte length and that many bytes.
func readBytes(r io.Reader) ([]byte, error) {
	var n [1]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	b := make([]byte, n[0])
	_, err := io.ReadFull(r, b)
	return b, err
}

// authenticate answers the greeting with the user/password method and checks them.
func (s *socks5) authenticate(c net.Conn) error {
	var ver [1]byte
	if _, err := io.ReadFull(c, ver[:]); err != nil || ver[0] != 5 {
		return errors.New("not SOCKS5")
	}
	if _, err := readBytes(c); err != nil { // the methods offered
		return err
	}
	if _, err := c.Write([]byte{5, 2}); err != nil {
		return err
	}
	if _, err := io.ReadFull(c, ver[:]); err != nil {
		return err
	}
	user, err := readBytes(c)
	if err != nil {
		return err
	}
	pass, err := readBytes(c)
	if err != nil {
		return err
	}
	if string(user) != s.user || string(pass) != s.pass {
		// Counted before the client is told, which may end its test at once.
		s.refusals.Add(1)
		_, _ = c.Write([]byte{1, 1})
		return errors.New("bad credentials")
	}
	_, err = c.Write([]byte{1, 0})
	return err
}

// readConnect reads a CONNECT request and returns its host:port.
func readConnect(c net.Conn) (string, error) {
	var req [4]byte
	if _, err := io.ReadFull(c, req[:]); err != nil || req[1] != 1 {
		return "", errors.New("not CONNECT")
	}
	var host string
	switch req[3] {
	case 1, 4:
		ip := make(net.IP, map[byte]int{1: 4, 4: 16}[req[3]])
		if _, err := io.ReadFull(c, ip); err != nil {
			return "", err
		}
		host = ip.String()
	case 3:
		name, err := readBytes(c)
		if err != nil {
			return "", err
		}
		host = string(name)
	default:
		return "", errors.New("bad address type")
	}
	var port [2]byte
	if _, err := io.ReadFull(c, port[:]); err != nil {
		return "", err
	}
	return net.JoinHostPort(host, strconv.Itoa(int(binary.BigEndian.Uint16(port[:])))), nil
}

// testSocks5 writes through the proxy, and is refused with a wrong password.
func testSocks5(t *testing.T, srv *testserver.Kafka) {
	proxy := startSocks5(t, "alice", "pass123")
	k := connect(t, srv.Addr(), func(k *Kafka) {
		k.Topic = "via-socks5"
		k.Socks5Enabled, k.Socks5Address, k.Socks5Username, k.Socks5Password = true, proxy.ln.Addr().String(), "alice", "pass123"
	})
	require.NoError(t, write(t, k, []morse.Metric{metric("m", nil, map[string]any{"v": 1.0})}))
	require.Len(t, srv.WaitRecords(t, "via-socks5", 1), 1)
	require.Positive(t, proxy.connects.Load(), "the client went through the proxy")

	bad := New()
	bad.Brokers = []string{srv.Addr()}
	bad.Socks5Enabled, bad.Socks5Address, bad.Socks5Username, bad.Socks5Password = true, proxy.ln.Addr().String(), "alice", "wrong"
	bad.Timeout = morse.Duration(2 * time.Second)
	require.NoError(t, bad.Validate())
	require.NoError(t, bad.Init())
	require.Error(t, bad.Connect(t.Context()))
	require.Positive(t, proxy.refusals.Load())
}
