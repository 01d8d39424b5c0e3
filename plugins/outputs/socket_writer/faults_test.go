package socketwriter

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

// The peers here are raw sockets, for what morse's socket_listener cannot be made to do:
// decode gzip member by member as Telegraf's does, stop reading, or send bytes and close.

// acceptOne accepts connections on a fresh loopback listener and hands them over.
func acceptOne(t *testing.T) (address string, conns <-chan net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ch := make(chan net.Conn, 4)
	go func() {
		defer close(ch)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			ch <- c
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		for c := range ch {
			_ = c.Close()
		}
	})
	return "tcp://" + ln.Addr().String(), ch
}

// TestGzipMemberPerBatch: with gzip over a stream, each batch is one whole gzip member, so
// a reader that decodes member by member (Telegraf's socket_listener, with pgzip, holds
// back what it decodes until 1 MiB or a member's end) has every line of a batch before the
// next batch is even written.
func TestGzipMemberPerBatch(t *testing.T) {
	address, conns := acceptOne(t)
	w := writer(t, address, func(w *SocketWriter) { w.ContentEncoding = "gzip" })
	c := <-conns
	t.Cleanup(func() { _ = c.Close() })
	br := bufio.NewReader(c)
	for round, name := range []string{"first", "second"} {
		batch := batchOf(t, name, 50)
		require.NoError(t, w.Write(testutil.Context(t), batch))
		require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
		zr, err := gzip.NewReader(br)
		require.NoError(t, err, "round %d", round)
		zr.Multistream(false)
		text, err := io.ReadAll(zr) // to the member's end, which must come with the batch
		require.NoError(t, err, "round %d: the member ends with its batch", round)
		lines := strings.Split(strings.TrimSuffix(string(text), "\n"), "\n")
		require.Len(t, lines, len(batch))
		for _, l := range lines {
			require.True(t, strings.HasPrefix(l, name+","), "%q", l)
		}
	}
}

// TestCancelledBeforeTheWrite: a context already cancelled when a write to a peer that
// has stopped reading begins ends that write at once, however long serializing took; the
// write's own deadline must not replace the cancel's.
func TestCancelledBeforeTheWrite(t *testing.T) {
	address, conns := acceptOne(t)
	w := writer(t, address)
	c := <-conns // never read
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithCancel(testutil.Context(t))
	cancel()
	batch := batchOf(t, "stall", 20_000) // about 2 MB a batch: the buffers fill at once
	start := time.Now()
	var err error
	for err == nil {
		err = w.Write(ctx, batch)
	}
	require.Equal(t, morse.OutcomeRetry, morse.Classify(err), "%v", err)
	require.Less(t, time.Since(start), writeTimeout/2, "the cancel ended the write")
}

// TestPeerSentBytesThenClosed: a peer that sends something (a listener never does) and then
// closes is still seen closed before the next write, which goes to a new connection.
func TestPeerSentBytesThenClosed(t *testing.T) {
	address, conns := acceptOne(t)
	w := writer(t, address)
	first := <-conns
	_, err := first.Write([]byte("unexpected\n"))
	require.NoError(t, err)
	require.NoError(t, first.Close())
	require.Eventually(t, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.conn.closedByPeer()
	}, 10*time.Second, 5*time.Millisecond, "the close behind the bytes is seen")

	batch := batchOf(t, "after", 5)
	require.NoError(t, w.Write(testutil.Context(t), batch))
	second := <-conns
	t.Cleanup(func() { _ = second.Close() })
	require.NoError(t, second.SetReadDeadline(time.Now().Add(10*time.Second)))
	sc := bufio.NewScanner(second)
	for range batch {
		require.True(t, sc.Scan(), "%v", sc.Err())
		require.True(t, strings.HasPrefix(sc.Text(), "after,"), "%q", sc.Text())
	}
}

// TestDropReasonsCountedApart: a batch whose metrics are dropped for different reasons
// reports each reason with its own metrics, and the rest arrive.
func TestDropReasonsCountedApart(t *testing.T) {
	addr, acc, _ := listen(t, "udp://127.0.0.1:0")
	w := writer(t, addr)
	good := batchOf(t, "d", 3)
	huge := morse.NewMetric("huge", nil, []morse.Field{{Key: "s", Value: morse.String(strings.Repeat("x", 70_000))}}, time.Unix(9, 0))
	late := morse.NewMetric("late", nil, []morse.Field{{Key: "v", Value: morse.Int(1)}}, time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC))
	batch := []morse.Metric{good[0], late, huge, good[1], huge, good[2]}
	err := w.Write(testutil.Context(t), batch)
	var pw *morse.PartialWriteError
	require.True(t, errors.As(err, &pw), "%v", err)
	require.Equal(t, morse.ReasonSerialize, pw.Reason)
	require.Equal(t, []int{1}, pw.Indices)
	require.Len(t, pw.More, 1)
	require.Equal(t, ReasonDatagramTooLarge, pw.More[0].Reason)
	require.Equal(t, []int{2, 4}, pw.More[0].Indices)
	written, dropped := pw.Split(len(batch))
	require.Equal(t, []int{3, 3}, []int{written, dropped})
	waitFor(t, acc, len(good))
	require.Equal(t, testutil.Canon(withoutUints(good)), testutil.Canon(acc.Metrics()))
}
