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
// committed (QuestDB 9.1.0 commits rows read over TCP within about 300 to 600 ms when idle,
// later under load). So a write that went out without error proves nothing yet, and QuestDB
// 9.1.0 was seen to take from 2 to 250 ms to close a connection after a bad line.
//
// The sender therefore keeps every batch it wrote in a window until it knows the connection
// survived it: the server has acknowledged all its bytes, tcp_confirm_delay has passed since
// it was written, and the connection is still open. The check is made before each write.
// If the connection turns out closed, the sender dials again and sends the window again,
// oldest first, before anything new. So nothing is lost to a restart or a dropped
// connection, and what is stored twice is at most what was written in the last
// tcp_confirm_delay before the close (when batches come further apart than that, at most
// the last batch). The window is bounded (maxWindowBatches, maxWindowBytes): a write waits
// for the oldest batch to be confirmed rather than grow it further.
//
// If the connection closes again after the window was sent anew, the sender sends it batch
// by batch, confirming each before the next, to find the batch that QuestDB refuses. A batch
// that makes QuestDB close a fresh connection maxPoisonResends times holds a line QuestDB
// refuses (the checks in validate.go and schema.go catch most such lines before they are
// sent): the sender gives it up and logs it. The lines before the bad one are stored, the
// rest of that batch is not; QuestDB's log names the line. Over HTTP such a line is found
// and dropped alone.

// maxPoisonResends is how often a batch is sent again on a fresh connection that QuestDB
// then closes, before the batch is taken to hold a line QuestDB refuses.
const maxPoisonResends = 2

// The window's bounds.
const (
	maxWindowBatches = 256
	maxWindowBytes   = 64 << 20
)

var errServerClosed = errors.New("QuestDB closed the ILP/TCP connection")

// sent is a batch written over TCP and not yet confirmed.
type sent struct {
	data  []byte
	at    time.Time // when it was written
	end   int64     // the connection's byte count just after it
	cols  []column  // the columns it makes, learned once it is confirmed
	tries int       // how often it was sent again and the connection closed after it
}

// tcpSender owns the connection of ILP over TCP and the batches not yet confirmed.
type tcpSender struct {
	set          settings
	tlsCfg       *tls.Config
	confirmDelay time.Duration
	log          *slog.Logger

	mu      sync.Mutex
	conn    net.Conn
	tcp     *net.TCPConn // conn itself, or the connection under TLS
	written int64        // bytes written on conn
	window  []*sent      // oldest first
	bytes   int          // the window's data, in bytes
	free    []*sent
	schema  schema // column types learned from what was confirmed

	reconnects atomic.Int64
	resends    atomic.Int64 // batches sent again
	givenUp    atomic.Int64 // batches given up as refused by QuestDB
}

func newTCPSender(s settings, tlsCfg *tls.Config, confirmDelay time.Duration, log *slog.Logger) *tcpSender {
	return &tcpSender{set: s, tlsCfg: tlsCfg, confirmDelay: confirmDelay, log: log}
}

// writeTCP confirms what it can of the window, then checks and serializes the whole batch
// against what the confirmations taught, and sends it in one write. Every error is
// retryable.
func (o *QuestDB) writeTCP(ctx context.Context, s *scratch, batch []morse.Metric) error {
	t := o.tcp
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
		t.push(body)
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

// push adds the batch just written to the window, with the columns it stages.
func (t *tcpSender) push(body []byte) {
	var b *sent
	if n := len(t.free); n > 0 {
		b, t.free = t.free[n-1], t.free[:n-1]
	} else {
		b = &sent{}
	}
	b.data = append(b.data[:0], body...)
	b.cols = append(b.cols[:0], t.schema.staged...)
	b.at, b.end, b.tries = time.Now(), t.written, 0
	t.window = append(t.window, b)
	t.bytes += len(b.data)
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

// ready leaves an open connection with a window under its bounds: it confirms what it can,
// waits while the window is full, and reconnects and sends the window again if the
// connection was closed. t.mu is held.
func (t *tcpSender) ready(ctx context.Context, deadline time.Time) error {
	for {
		if t.conn == nil {
			if err := t.recover(ctx, deadline); err != nil {
				return err
			}
		}
		err := t.confirm()
		if err == nil && len(t.window) < maxWindowBatches && t.bytes < maxWindowBytes {
			return nil
		}
		if err == nil {
			err = t.waitOldest(ctx, deadline)
		}
		switch {
		case errors.Is(err, errServerClosed):
			t.log.Warn("QuestDB closed the ILP/TCP connection; reconnecting to send the unconfirmed batches again",
				"addr", t.set.addr, "batches", len(t.window))
			t.disconnect()
		case err != nil:
			return err
		}
	}
}

// confirm takes out of the window every batch that is confirmed now.
func (t *tcpSender) confirm() error {
	closed, queued, err := connState(t.tcp)
	switch {
	case err != nil:
		return err
	case closed:
		return errServerClosed
	}
	acked := t.written - int64(queued)
	now := time.Now()
	for len(t.window) > 0 {
		b := t.window[0]
		if now.Sub(b.at) < t.confirmDelay || b.end > acked {
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
	if err := ctx.Err(); err != nil {
		return err
	}
	if closedWithin(t.conn, until) {
		return errServerClosed
	}
	return nil
}

// recover dials and sends the window again. When the connection closes again after that,
// it sends the window batch by batch to find the one QuestDB refuses; see the top of this
// file.
func (t *tcpSender) recover(ctx context.Context, deadline time.Time) error {
	if err := t.dial(ctx, deadline); err != nil {
		return err
	}
	if len(t.window) == 0 {
		return nil
	}
	if err := t.resend(t.window, deadline); err != nil {
		return err
	}
	err := t.drain(ctx, deadline)
	if !errors.Is(err, errServerClosed) {
		return err
	}
	for len(t.window) > 0 {
		if err := t.dial(ctx, deadline); err != nil {
			return err
		}
		if err := t.resend(t.window[:1], deadline); err != nil {
			return err
		}
		if err := t.drainOne(ctx, deadline); err != nil {
			return err
		}
	}
	return nil
}

// resend writes batches again on the fresh connection, as new.
func (t *tcpSender) resend(batches []*sent, deadline time.Time) error {
	for _, b := range batches {
		t.resends.Add(1)
		if err := t.send(b.data, deadline); err != nil {
			t.disconnect()
			return err
		}
		b.at, b.end = time.Now(), t.written
	}
	return nil
}

// drain waits until the whole window is confirmed or the connection closes.
func (t *tcpSender) drain(ctx context.Context, deadline time.Time) error {
	for len(t.window) > 0 {
		if err := t.confirm(); err != nil {
			return err
		}
		if err := t.waitOldest(ctx, deadline); err != nil {
			return err
		}
	}
	return nil
}

// drainOne confirms the oldest batch, alone on a fresh connection, or counts a close against
// it and gives it up after maxPoisonResends.
func (t *tcpSender) drainOne(ctx context.Context, deadline time.Time) error {
	n := len(t.window)
	for len(t.window) == n {
		err := t.confirm()
		if err == nil {
			err = t.waitOldest(ctx, deadline)
		}
		if err == nil {
			continue
		}
		if !errors.Is(err, errServerClosed) {
			return err
		}
		t.disconnect()
		b := t.window[0]
		if b.tries++; b.tries <= maxPoisonResends {
			return nil
		}
		t.givenUp.Add(1)
		t.schema.reset()
		t.log.Error("QuestDB closes the ILP/TCP connection every time a batch is sent again: it holds a line that QuestDB refuses. "+
			"The lines before it are stored, the rest of the batch is lost; QuestDB's log names the line. "+
			"protocol = \"http\" finds such lines and drops them alone.",
			"addr", t.set.addr, "bytes", len(b.data), "attempts", b.tries+1)
		t.pop(false)
	}
	return nil
}

// close confirms the window, sending it again on a fresh connection if needed, and closes
// the connection.
func (t *tcpSender) close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	defer t.disconnect()
	if len(t.window) == 0 {
		return nil
	}
	ctx := context.Background()
	deadline := t.deadline(ctx, t.bytes)
	for len(t.window) > 0 {
		if t.conn == nil {
			if err := t.recover(ctx, deadline); err != nil {
				return fmt.Errorf("questdb: %d batches sent over TCP may not be stored: %w", len(t.window), err)
			}
			continue
		}
		if err := t.drain(ctx, deadline); err != nil {
			if !errors.Is(err, errServerClosed) {
				return fmt.Errorf("questdb: %d batches sent over TCP may not be stored: %w", len(t.window), err)
			}
			t.disconnect()
		}
	}
	return nil
}
