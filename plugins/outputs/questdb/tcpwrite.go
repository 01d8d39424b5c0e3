package questdb

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
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
// line still in flight. So a write that went out without error proves nothing yet. The
// sender keeps the last batch it wrote ("pending") until it knows the connection survived
// it: the server acknowledged every byte, at least tcp_confirm_delay has passed since the
// write, and the connection is still open. That check runs before the next batch is sent.
// If the connection turns out closed, the sender dials again and sends the pending batch
// once more before the new one. So nothing is lost to a restart or a dropped connection,
// and at most that one batch is stored twice.
//
// A batch that makes QuestDB close a fresh connection again and again holds a line that
// QuestDB refuses (the checks in validate.go catch most such lines before they are sent,
// but not a type that differs from the column's). After maxPoisonResends the sender gives
// it up and logs it: the lines before the bad one are stored, the rest are not, and
// QuestDB's log names the line. Over HTTP such a line is found and dropped alone.

// maxPoisonResends is how often a pending batch is sent again on a fresh connection that
// QuestDB then closes, before the batch is taken to hold a line QuestDB refuses.
const maxPoisonResends = 2

// authCheck is how long the sender waits after logging in over TCP for QuestDB to close the
// connection, which is how it refuses a key.
const authCheck = 100 * time.Millisecond

var errServerClosed = errors.New("QuestDB closed the ILP/TCP connection")

// tcpSender owns the connection of ILP over TCP and the batch not yet confirmed.
type tcpSender struct {
	set          settings
	tlsCfg       *tls.Config
	confirmDelay time.Duration
	log          *slog.Logger

	mu        sync.Mutex
	conn      net.Conn
	tcp       *net.TCPConn // conn itself, or the connection under TLS
	pending   []byte       // the last batch written, until it is confirmed
	spare     []byte       // the buffer pending had before, reused
	writtenAt time.Time

	schema schema // column types learned from what was sent

	reconnects atomic.Int64
	resends    atomic.Int64
	givenUp    atomic.Int64
}

func newTCPSender(s settings, tlsCfg *tls.Config, confirmDelay time.Duration, log *slog.Logger) *tcpSender {
	return &tcpSender{set: s, tlsCfg: tlsCfg, confirmDelay: confirmDelay, log: log}
}

// writeTCP checks and serializes the whole batch and sends it in one write.
func (o *QuestDB) writeTCP(ctx context.Context, s *scratch, batch []morse.Metric) error {
	o.serialize(s, batch, nil, &o.tcp.schema)
	if body := s.bodyOf(s.lines); len(body) > 0 {
		if err := o.tcp.write(ctx, body); err != nil {
			return err
		}
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

// write confirms the pending batch, reconnecting and sending it again if needed, then
// sends body, which becomes the pending batch. Every error is retryable.
func (t *tcpSender) write(ctx context.Context, body []byte) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	deadline := t.deadline(ctx, len(body)+len(t.pending))
	if t.conn != nil {
		if err := t.confirm(ctx, deadline); err != nil {
			if !errors.Is(err, errServerClosed) {
				return morse.Retryable(err, 0)
			}
			t.log.Warn("QuestDB closed the ILP/TCP connection; reconnecting to send the last batch again", "addr", t.set.addr)
			t.disconnect()
		}
	}
	if t.conn == nil {
		if err := t.reconnect(ctx, deadline); err != nil {
			return morse.Retryable(err, 0)
		}
	}
	if err := t.send(body, deadline); err != nil {
		t.disconnect()
		return morse.Retryable(err, 0)
	}
	t.pending, t.spare = append(t.spare[:0], body...), t.pending
	t.writtenAt = time.Now()
	return nil
}

// reconnect dials and sends the pending batch again, checking that QuestDB keeps the new
// connection open after it; see maxPoisonResends.
func (t *tcpSender) reconnect(ctx context.Context, deadline time.Time) error {
	for attempt := 0; ; attempt++ {
		if err := t.dial(ctx, deadline); err != nil {
			return err
		}
		if len(t.pending) == 0 {
			return nil
		}
		t.resends.Add(1)
		if err := t.send(t.pending, deadline); err != nil {
			t.disconnect()
			return err
		}
		t.writtenAt = time.Now()
		err := t.confirm(ctx, deadline)
		switch {
		case err == nil:
			return nil
		case !errors.Is(err, errServerClosed):
			return err
		case attempt >= maxPoisonResends:
			t.givenUp.Add(1)
			t.schema.reset()
			t.log.Error("QuestDB closes the ILP/TCP connection every time a batch is sent again: it holds a line that QuestDB refuses. "+
				"The lines before it are stored, the rest of the batch is lost; QuestDB's log names the line. "+
				"protocol = \"http\" finds such lines and drops them alone.",
				"addr", t.set.addr, "bytes", len(t.pending), "attempts", attempt+2)
			t.pending = t.pending[:0]
			return nil
		}
		t.disconnect()
	}
}

// confirm waits until the pending batch is known to have been taken: see the top of this
// file. It returns errServerClosed when the connection was closed.
func (t *tcpSender) confirm(ctx context.Context, deadline time.Time) error {
	until := t.writtenAt.Add(t.confirmDelay)
	for {
		wait := until
		if now := time.Now(); !wait.After(now) {
			closed, queued, err := connState(t.tcp)
			switch {
			case err != nil:
				return err
			case closed:
				return errServerClosed
			case queued == 0 || t.confirmDelay == 0:
				t.pending = t.pending[:0]
				return nil
			case now.After(deadline):
				return fmt.Errorf("questdb %s: the server has not taken %d bytes written over TCP", t.set.addr, queued)
			}
			wait = now.Add(max(t.confirmDelay/4, time.Millisecond))
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if closedWithin(t.conn, wait) {
			return errServerClosed
		}
	}
}

// closedWithin waits until the given time for the peer to close conn (or send anything,
// which QuestDB never does on ILP).
func closedWithin(conn net.Conn, until time.Time) bool {
	if err := conn.SetReadDeadline(until); err != nil {
		return true
	}
	var b [1]byte
	_, err := conn.Read(b[:])
	var ne net.Error
	timedOut := errors.As(err, &ne) && ne.Timeout()
	_ = conn.SetReadDeadline(time.Time{})
	return !timedOut
}

// send writes b with the deadline.
func (t *tcpSender) send(b []byte, deadline time.Time) error {
	if err := t.conn.SetWriteDeadline(deadline); err != nil {
		return err
	}
	if _, err := t.conn.Write(b); err != nil {
		return fmt.Errorf("questdb %s: write: %w", t.set.addr, err)
	}
	return nil
}

// connect dials if there is no connection yet; for Connect.
func (t *tcpSender) connect(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.conn != nil {
		return nil
	}
	return t.dial(ctx, t.deadline(ctx, 0))
}

// dial opens the connection, with TLS and the login when configured.
func (t *tcpSender) dial(ctx context.Context, deadline time.Time) error {
	t.disconnect()
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	d := net.Dialer{KeepAlive: 30 * time.Second}
	c, err := d.DialContext(ctx, "tcp", t.set.addr)
	if err != nil {
		return fmt.Errorf("questdb %s: %w", t.set.addr, err)
	}
	t.reconnects.Add(1)
	t.tcp, _ = c.(*net.TCPConn)
	t.conn = c
	if t.tlsCfg != nil {
		cfg := t.tlsCfg.Clone()
		if cfg.ServerName == "" {
			cfg.ServerName, _, _ = net.SplitHostPort(t.set.addr)
		}
		tc := tls.Client(c, cfg)
		t.conn = tc
		if err := tc.HandshakeContext(ctx); err != nil {
			t.disconnect()
			return fmt.Errorf("questdb %s: TLS: %w", t.set.addr, err)
		}
	}
	if t.set.username != "" {
		if err := t.login(deadline); err != nil {
			t.disconnect()
			return fmt.Errorf("questdb %s: login as %q: %w", t.set.addr, t.set.username, err)
		}
	}
	return nil
}

// login runs QuestDB's challenge-response: the key id, then the challenge signed with the
// private key (ECDSA P-256 over its SHA-256, ASN.1, base64). QuestDB refuses a wrong key
// by closing the connection.
func (t *tcpSender) login(deadline time.Time) error {
	key, err := tcpKey(t.set.token)
	if err != nil {
		return err
	}
	_ = t.conn.SetDeadline(deadline)
	defer func() { _ = t.conn.SetDeadline(time.Time{}) }()
	if _, err := t.conn.Write([]byte(t.set.username + "\n")); err != nil {
		return err
	}
	challenge, err := bufio.NewReaderSize(t.conn, 512).ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("read challenge: %w", err)
	}
	sig, err := sign(key, challenge[:len(challenge)-1])
	if err != nil {
		return err
	}
	if _, err := t.conn.Write([]byte(sig + "\n")); err != nil {
		return err
	}
	if closedWithin(t.conn, time.Now().Add(authCheck)) {
		return errors.New("QuestDB refused the key and closed the connection")
	}
	return nil
}

func sign(key *ecdsa.PrivateKey, challenge []byte) (string, error) {
	h := sha256.Sum256(challenge)
	sig, err := ecdsa.SignASN1(rand.Reader, key, h[:])
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(sig), nil
}

func (t *tcpSender) disconnect() {
	if t.conn != nil {
		_ = t.conn.Close()
	}
	t.conn, t.tcp = nil, nil
}

// close confirms the pending batch, sending it again on a fresh connection if needed, and
// closes the connection.
func (t *tcpSender) close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	defer t.disconnect()
	if len(t.pending) == 0 {
		return nil
	}
	ctx := context.Background()
	deadline := t.deadline(ctx, len(t.pending))
	if t.conn != nil && t.confirm(ctx, deadline) == nil {
		return nil
	}
	if err := t.reconnect(ctx, deadline); err != nil {
		return fmt.Errorf("questdb: the last batch sent over TCP may not be stored: %w", err)
	}
	return nil
}
