package questdb

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/morse-agent/morse"
)

// ILP over TCP has no answers: QuestDB reads lines until one is bad, then closes the
// connection; it stores the lines before the bad one and drops the rest, including every
// line still in flight. A graceful restart loses what the server had read but not yet
// committed: QuestDB 9.1.0 commits rows read over TCP when line.tcp.commit.interval.default
// has passed since the table's last commit (checked as lines arrive, and for idle
// connections every line.tcp.maintenance.job.interval), or once cairo.max.uncommitted.rows
// are pending. So a write that went out without error proves nothing yet, and QuestDB 9.1.0
// was seen to take from 2 to 250 ms to close a connection after a bad line.
//
// A batch is therefore confirmed only once the server has acknowledged all its bytes,
// tcp_confirm_delay has passed since it was written, and the connection is still open.
// Until then it is kept, and at most tcp_unconfirmed_batches batches (1 by default) are
// kept: a write waits for the oldest to be confirmed before it sends a new one. If the
// connection turns out closed, the sender dials again and sends the kept batches again on
// the new connection, oldest first and each alone: it waits for one to be confirmed before
// it sends the next, and sends nothing new until all are. A write that runs out of time in
// the middle leaves the rest kept, to be sent by the next.
// So nothing is lost to a restart or a dropped connection, and what may be stored twice
// after a close is at most the tcp_unconfirmed_batches batches that were kept, one batch
// by default. The price is throughput: one connection confirms at most
// tcp_unconfirmed_batches batches per tcp_confirm_delay.
//
// A close is blamed on a batch when that batch was the only one unconfirmed on the
// connection, and only once the sender could dial again at once and the new connection
// stayed open, with nothing sent, for tcp_confirm_delay: a server that is down (restarting),
// or a proxy that accepts connections for a server that is down and closes them, is no
// batch's fault. A batch blamed twice holds a line QuestDB refuses (the
// checks in validate.go and schema.go catch most such lines before they are sent): the
// sender gives it up and logs it, having sent it twice, so the lines before the bad one
// are stored at most twice, and the rest of that batch not at all; QuestDB's log names the
// line. Over HTTP such a line is found and dropped alone.

// maxStrikes is how many closes blamed on a batch make the sender give it up.
const maxStrikes = 2

// maxWindowBytes bounds what the kept batches may hold, whatever their number.
const maxWindowBytes = 64 << 20

var errServerClosed = errors.New("QuestDB closed the ILP/TCP connection")

// sent is a batch written over TCP and not yet confirmed.
type sent struct {
	data    []byte
	at      time.Time // when it was written
	end     int64     // the connection's byte count just after it
	live    bool      // whether it was written on the current connection
	cols    []column  // the columns it makes, learned once it is confirmed
	blamed  bool      // a close is blamed on it, once the sender can dial again
	strikes int       // closes blamed on it
}

// tcpSender owns the connection of ILP over TCP and the batches not yet confirmed.
type tcpSender struct {
	set          settings
	tlsCfg       *tls.Config
	confirmDelay time.Duration
	maxBatches   int // tcp_unconfirmed_batches
	log          *slog.Logger

	mu      sync.Mutex
	conn    net.Conn
	tcp     *net.TCPConn // conn itself, or the connection under TLS
	written int64        // bytes written on conn
	window  []*sent      // oldest first
	bytes   int          // the window's data, in bytes
	free    []*sent
	schema  schema // column types learned from what was confirmed
	shut    bool   // close has run: nothing more is sent

	reconnects atomic.Int64
	resends    atomic.Int64 // batches sent again
	givenUp    atomic.Int64 // batches given up as refused by QuestDB
}

func newTCPSender(s settings, tlsCfg *tls.Config, confirmDelay time.Duration, maxBatches int, log *slog.Logger) *tcpSender {
	return &tcpSender{set: s, tlsCfg: tlsCfg, confirmDelay: confirmDelay, maxBatches: max(1, maxBatches), log: log}
}

// writeTCP confirms what it can of the window, then checks and serializes the whole batch
// against what the confirmations taught, and sends it in one write. Every error is
// retryable.
func (o *QuestDB) writeTCP(ctx context.Context, t *tcpSender, s *scratch, batch []morse.Metric) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.ready(ctx, t.deadline(ctx, 0)); err != nil {
		return morse.Retryable(err, 0)
	}
	t.schema.staged = t.schema.staged[:0]
	o.serialize(s, batch, nil, &t.schema)
	if body := s.bodyOf(s.lines); len(body) > 0 {
		if err := t.send(body, t.deadline(ctx, len(body))); err != nil {
			t.disconnect()
			return morse.Retryable(err, 0)
		}
		s.replaceBody(body, t.push(body))
	}
	return result(len(batch), s.dropped)
}

// deadline bounds one write of n bytes, as the HTTP timeout bounds a request.
func (t *tcpSender) deadline(ctx context.Context, n int) time.Time {
	d := t.set.timeout
	if t.set.minThroughput > 0 {
		d += time.Duration(n) * time.Second / time.Duration(t.set.minThroughput)
	}
	dl := time.Now().Add(d)
	if cd, ok := ctx.Deadline(); ok && cd.Before(dl) {
		dl = cd
	}
	return dl
}

// push adds the batch just written to the window, with the columns it stages. The window
// keeps body itself rather than a copy, which saves a pass over every batch (about 100 ns
// a line, with the window's buffers cold); push returns the buffer of a batch confirmed
// earlier, emptied, for the caller to serialize into next.
func (t *tcpSender) push(body []byte) (spare []byte) {
	var b *sent
	if n := len(t.free); n > 0 {
		b, t.free = t.free[n-1], t.free[:n-1]
	} else {
		b = &sent{}
	}
	spare, b.data = b.data[:0], body
	b.cols = append(b.cols[:0], t.schema.staged...)
	b.at, b.end, b.live, b.blamed, b.strikes = time.Now(), t.written, true, false, 0
	t.window = append(t.window, b)
	t.bytes += len(b.data)
	return spare
}

// pop removes the oldest batch of the window; it learns its columns when it was confirmed.
func (t *tcpSender) pop(confirmed bool) {
	b := t.window[0]
	if confirmed {
		t.schema.learn(b.cols)
	}
	t.window[0] = nil
	t.window = t.window[1:]
	t.bytes -= len(b.data)
	t.free = append(t.free, b)
}

// ready leaves an open connection with room in the window: it confirms what it can, waits
// while the window is full, and reconnects and sends the window again if the connection
// was closed. t.mu is held.
func (t *tcpSender) ready(ctx context.Context, deadline time.Time) error {
	for {
		if t.shut {
			return errClosed
		}
		if t.conn == nil || t.stale() {
			if err := t.recover(ctx, deadline); err != nil {
				return err
			}
		}
		err := t.confirm()
		if err == nil && len(t.window) < t.maxBatches && t.bytes < maxWindowBytes {
			return nil
		}
		if err == nil {
			err = t.waitOldest(ctx, deadline)
		}
		switch {
		case errors.Is(err, errServerClosed):
			t.closed()
		case err != nil:
			return err
		}
	}
}

// closed handles a connection found closed: it blames the oldest batch if it was the only
// one unconfirmed on it, and disconnects.
func (t *tcpSender) closed() {
	if len(t.window) > 0 {
		t.log.Warn("QuestDB closed the ILP/TCP connection; reconnecting to send the unconfirmed batches again",
			"addr", t.set.addr, "batches", len(t.window))
		t.window[0].blamed = t.window[0].live && (len(t.window) == 1 || !t.window[1].live)
	}
	t.disconnect()
}

// confirm takes out of the window every batch that is confirmed now.
func (t *tcpSender) confirm() error {
	if t.conn == nil {
		return errServerClosed
	}
	readable, queued, err := connState(t.tcp)
	switch {
	case err != nil:
		return err
	case readable && closedWithin(context.Background(), t.conn, time.Now().Add(time.Millisecond)):
		// Read through the connection rather than the socket under it: over TLS what is
		// waiting may be a record of TLS itself, such as a session ticket, and not a close.
		return errServerClosed
	}
	acked := t.written - int64(queued)
	now := time.Now()
	for len(t.window) > 0 {
		b := t.window[0]
		if !b.live || now.Sub(b.at) < t.confirmDelay || b.end > acked {
			break
		}
		t.pop(true)
	}
	return nil
}

// waitOldest waits, watching for a close, until the oldest batch can be confirmed.
func (t *tcpSender) waitOldest(ctx context.Context, deadline time.Time) error {
	if len(t.window) == 0 {
		return nil
	}
	until := t.window[0].at.Add(t.confirmDelay)
	if now := time.Now(); !until.After(now) {
		// Only the acknowledgement is missing: look again shortly.
		until = now.Add(max(t.confirmDelay/8, time.Millisecond))
	}
	if until.After(deadline) {
		return fmt.Errorf("questdb %s: %d bytes written over TCP are not confirmed in time", t.set.addr, t.bytes)
	}
	if closedWithin(ctx, t.conn, until) {
		return errServerClosed
	}
	return ctx.Err()
}

// recover dials if there is no connection, then sends the kept batches not yet sent on it,
// oldest first, each alone on the connection and confirmed before the next. It returns with
// every kept batch on the open connection, or with an error, leaving what it has not sent
// for the next call. See the top of this file.
func (t *tcpSender) recover(ctx context.Context, deadline time.Time) error {
	for {
		if t.conn == nil {
			if err := t.redial(ctx, deadline); err != nil {
				return err
			}
		}
		if !t.stale() {
			return nil
		}
		if b := t.window[0]; !b.live {
			t.resends.Add(1)
			if err := t.send(b.data, deadline); err != nil {
				t.disconnect()
				return err
			}
			b.at, b.end, b.live = time.Now(), t.written, true
		}
		err := t.drainOldest(ctx, deadline)
		switch {
		case errors.Is(err, errServerClosed):
			t.closed()
		case err != nil:
			return err
		}
	}
}

// stale reports whether a kept batch has not been sent on the current connection. Such
// batches are always the newest ones: all are after a disconnect, and recover sends them
// again from the oldest.
func (t *tcpSender) stale() bool {
	return len(t.window) > 0 && !t.window[len(t.window)-1].live
}

// redial dials, and then counts a close blamed on the oldest batch, giving it up at the
// last strike. A dial that fails clears the blame: the server is down, which is no batch's
// fault.
func (t *tcpSender) redial(ctx context.Context, deadline time.Time) error {
	if err := t.dial(ctx, deadline); err != nil {
		for _, b := range t.window {
			b.blamed = false
		}
		return err
	}
	for len(t.window) > 0 && t.window[0].blamed {
		b := t.window[0]
		if err := t.probe(ctx, deadline); err != nil {
			return err
		}
		b.blamed = false
		if b.strikes++; b.strikes < maxStrikes {
			return nil
		}
		t.givenUp.Add(1)
		t.schema.reset()
		t.log.Error("QuestDB closed the ILP/TCP connection after a batch each time it was sent: it holds a line that QuestDB refuses. "+
			"The lines before it may be stored twice, the rest of the batch is lost; QuestDB's log names the line. "+
			"protocol = \"http\" finds such lines and drops them alone.",
			"addr", t.set.addr, "bytes", len(b.data), "attempts", b.strikes)
		t.pop(false)
	}
	return nil
}

// drainOldest waits until the oldest batch is confirmed or the connection closes.
func (t *tcpSender) drainOldest(ctx context.Context, deadline time.Time) error {
	for n := len(t.window); len(t.window) == n && n > 0; {
		if err := t.confirm(); err != nil {
			return err
		}
		if len(t.window) < n {
			return nil
		}
		if err := t.waitOldest(ctx, deadline); err != nil {
			return err
		}
	}
	return nil
}

// drain waits until the whole window is confirmed, sending it again if the connection
// closes.
func (t *tcpSender) drain(ctx context.Context, deadline time.Time) error {
	for len(t.window) > 0 {
		if t.conn == nil || t.stale() {
			if err := t.recover(ctx, deadline); err != nil {
				return err
			}
			continue
		}
		err := t.drainOldest(ctx, deadline)
		switch {
		case errors.Is(err, errServerClosed):
			t.closed()
		case err != nil:
			return err
		}
	}
	return nil
}

// close confirms the window, sending it again on a fresh connection if needed, and closes
// the connection.
func (t *tcpSender) close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	defer t.disconnect()
	t.shut = true
	if len(t.window) == 0 {
		return nil
	}
	ctx := context.Background()
	// After a reconnect the kept batches go again one at a time, each confirmed first.
	deadline := t.deadline(ctx, t.bytes).Add(time.Duration(len(t.window)) * t.confirmDelay)
	if err := t.drain(ctx, deadline); err != nil {
		return fmt.Errorf("questdb: %d batches sent over TCP may not be stored: %w", len(t.window), err)
	}
	return nil
}
