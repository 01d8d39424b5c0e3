package socketwriter

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
	socketlistener "github.com/morse-agent/morse/plugins/inputs/socket_listener"
)

// restartable is a socket_listener on a fixed address that a test stops and starts again.
type restartable struct {
	t       *testing.T
	address string
	l       *socketlistener.SocketListener
}

func (r *restartable) start() *testutil.Accumulator {
	r.t.Helper()
	addr, acc, l := listen(r.t, r.address)
	r.address, r.l = addr, l
	return acc
}

func (r *restartable) stop() { r.l.Stop() }

// TestReconnect stops the listener under a connected writer. While it is down, a write
// fails and is retryable; once it is back, the same batch is written again and arrives. A
// listener restarted between two writes is noticed before the second: its batch is not
// written into the dead connection and lost.
func TestReconnect(t *testing.T) {
	dir := testutil.SocketDir(t)
	for _, address := range []string{"tcp://127.0.0.1:0", "unix://" + filepath.Join(dir, "r.sock")} {
		t.Run(strings.Split(address, ":")[0], func(t *testing.T) {
			srv := &restartable{t: t, address: address}
			acc := srv.start()
			w := writer(t, srv.address)
			first := batchOf(t, "first", 5)
			require.NoError(t, w.Write(testutil.Context(t), first))
			waitFor(t, acc, len(first))

			srv.stop()
			second := batchOf(t, "second", 5)
			err := w.Write(testutil.Context(t), second)
			require.Equal(t, morse.OutcomeRetry, morse.Classify(err), "%v", err)

			acc = srv.start()
			require.NoError(t, w.Write(testutil.Context(t), second), "the retried batch")
			waitFor(t, acc, len(second))
			require.Equal(t, testutil.Canon(withoutUints(second)), testutil.Canon(acc.Metrics()))

			// Restarted between two writes: no write fails, and nothing is lost.
			srv.stop()
			acc = srv.start()
			third := batchOf(t, "third", 5)
			require.NoError(t, w.Write(testutil.Context(t), third))
			waitFor(t, acc, len(third))
			require.Equal(t, testutil.Canon(withoutUints(third)), testutil.Canon(acc.Metrics()))
		})
	}
}

// TestNothingListens: connecting and writing fail retryably.
func TestNothingListens(t *testing.T) {
	address := "tcp://" + testutil.FreeAddr(t)
	w := New()
	w.Address = address
	w.SetLogger(testutil.QuietLogger())
	require.NoError(t, w.Init())
	err := w.Connect(testutil.Context(t))
	require.Equal(t, morse.OutcomeRetry, morse.Classify(err), "%v", err)
	err = w.Write(testutil.Context(t), batchOf(t, "m", 1))
	require.Equal(t, morse.OutcomeRetry, morse.Classify(err), "%v", err)
	require.ErrorContains(t, err, "connection refused")
}

// TestStalledPeerInterrupted: a peer that accepts but never reads fills the socket's
// buffers; the agent's context ending makes the write return, retryably.
func TestStalledPeerInterrupted(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
		close(accepted)
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		for c := range accepted {
			_ = c.Close()
		}
	})
	w := writer(t, "tcp://"+ln.Addr().String())
	batch := batchOf(t, "stall", 2000) // about 200 KB a batch
	ctx, cancel := context.WithTimeout(testutil.Context(t), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	for err == nil {
		err = w.Write(ctx, batch)
	}
	require.Equal(t, morse.OutcomeRetry, morse.Classify(err), "%v", err)
	require.Less(t, time.Since(start), 10*time.Second)
}
