package influxdbv2

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
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/batch"
)

// TestWriteTimeoutBoundsTheWriter: the batch writer bounds each write by the timeout option
// when it is longer than its default of 30 s, which would cut it short, and by 30 s when it
// is shorter, leaving room for a write of several requests.
func TestWriteTimeoutBoundsTheWriter(t *testing.T) {
	for _, tc := range []struct {
		timeout, want time.Duration
	}{
		{45 * time.Second, 45 * time.Second},
		{2 * time.Second, batch.DefaultWriteTimeout},
		{0, batch.DefaultWriteTimeout}, // no timeout option: the writer's own bound
	} {
		t.Run(tc.timeout.String(), func(t *testing.T) {
			o := connected(t, DefaultURL, func(o *InfluxDBv2) { o.Timeout = morse.Duration(tc.timeout) })
			w, err := batch.NewWriter(o, batch.Options{FlushInterval: time.Hour, Logger: quiet(), Initialized: true})
			require.NoError(t, err)
			require.Equal(t, tc.want, w.WriteTimeout())
			require.NoError(t, w.Close(ctxT(t)))
		})
	}
}

// earlyTooLarge serves HTTP/1.1 by hand, as a proxy in front of InfluxDB may: a request of
// more than maxLen bytes gets 413 and "Connection: close" as soon as its headers are read,
// and its body is never read while the connection stays open. Its sockets have a small
// receive buffer, so Go's transport is still sending the body when the answer comes.
// Smaller requests are read and stored. It returns the server's URL.
func earlyTooLarge(t *testing.T, st *store, maxLen int64) string {
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
		defer wg.Done()
		defer c.Close()
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			if req.ContentLength > maxLen {
				fmt.Fprintf(c, "HTTP/1.1 413 Request Entity Too Large\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(v2TooLarge), v2TooLarge)
				<-done
				return
			}
			body, err := io.ReadAll(req.Body)
			if err != nil {
				return
			}
			st.add(splitLines(body)...)
			_, _ = io.WriteString(c, "HTTP/1.1 204 No Content\r\n\r\n")
		}
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go serve(c)
		}
	}()
	return "http://" + ln.Addr().String()
}

// TestEarly413 writes to a server that answers 413 before it reads the body. The halves are
// built while the transport may still be sending the refused body: they must go in buffers
// it no longer reads (the race detector checks), and every line must arrive intact.
func TestEarly413(t *testing.T) {
	var st store
	url := earlyTooLarge(t, &st, 32<<10)
	o := connected(t, url, func(o *InfluxDBv2) { o.ContentEncoding = "identity" })
	batch := numbered(t, 40_000) // about 0.9 MB of line protocol: 413 five times over
	err := o.Write(ctxT(t), batch)
	require.NoError(t, err)
	require.Equal(t, linesOf(t, batch), st.distinct())
	require.False(t, errors.Is(err, errTooLarge))
}
