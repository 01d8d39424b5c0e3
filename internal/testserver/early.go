package testserver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// EarlyTooLarge serves HTTP/1.1 by hand, as a proxy in front of a database may, for the one
// answer no real server here gives on demand: a request of more than maxLen bytes gets 413
// with answer as its JSON body and "Connection: close" as soon as its headers are read, and
// its body is never read while the connection stays open. Its sockets have a small receive
// buffer, so a client's transport is still sending the body when the answer comes. Smaller
// requests are read, handed to stored, and answered 204. It returns the server's URL and
// stops when the test ends.
func EarlyTooLarge(t testing.TB, maxLen int64, answer string, stored func(body []byte)) string {
	t.Helper()
	lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4<<10)
		})
		return errors.Join(err, serr)
	}}
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	var wg sync.WaitGroup
	t.Cleanup(func() {
		close(done)
		_ = ln.Close()
		wg.Wait()
	})
	serve := func(c net.Conn) {
		defer c.Close()
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			if req.ContentLength > maxLen {
				fmt.Fprintf(c, "HTTP/1.1 413 Request Entity Too Large\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(answer), answer)
				<-done
				return
			}
			body, err := io.ReadAll(req.Body)
			if err != nil {
				return
			}
			stored(body)
			_, _ = io.WriteString(c, "HTTP/1.1 204 No Content\r\n\r\n")
		}
	}
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { serve(c) })
		}
	})
	return "http://" + ln.Addr().String()
}
