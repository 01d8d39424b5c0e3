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
	"net"
	"time"
)

// authCheck is how long the sender waits after logging in over TCP for QuestDB to close the
// connection, which is how it refuses a key; it says nothing when it accepts one. QuestDB
// 9.1.0 was seen to take 750 ms to refuse a key on a fresh server. Without the wait, data
// sent on a connection about to be refused would be taken for a batch that QuestDB refuses.
const authCheck = 1500 * time.Millisecond

// closedWithin waits until the given time, or until ctx is done, for the peer to close conn
// (or send anything, which QuestDB never does on ILP).
func closedWithin(ctx context.Context, conn net.Conn, until time.Time) bool {
	if err := conn.SetReadDeadline(until); err != nil {
		return true
	}
	// Set after the deadline above, so that a context done already cuts the wait short too.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetReadDeadline(time.Now()) })
	defer stop()
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
	t.written += int64(len(b))
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
	t.conn, t.written = c, 0
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
		if err := t.login(ctx, deadline); err != nil {
			t.disconnect()
			return fmt.Errorf("questdb %s: login as %q: %w", t.set.addr, t.set.username, err)
		}
	}
	return nil
}

// login runs QuestDB's challenge-response: the key id, then the challenge signed with the
// private key (ECDSA P-256 over its SHA-256, ASN.1, base64). QuestDB refuses a wrong key
// by closing the connection.
func (t *tcpSender) login(ctx context.Context, deadline time.Time) error {
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
	if closedWithin(ctx, t.conn, earliest(time.Now().Add(authCheck), deadline)) {
		return errors.New("QuestDB refused the key and closed the connection")
	}
	return ctx.Err()
}

// probe waits tcp_confirm_delay (at least minProbe) on a connection just dialled, with
// nothing sent, for it to be closed. A close that came after a batch is blamed on that batch
// only if the next connection stays open: a proxy in front of a server that is down accepts
// connections and closes them whatever is sent, which is no batch's fault. Unless probe
// returns nil, it leaves no connection; the blame stays when the wait was cut short.
func (t *tcpSender) probe(ctx context.Context, deadline time.Time) error {
	until := time.Now().Add(max(t.confirmDelay, minProbe))
	if until.After(deadline) {
		t.disconnect()
		return fmt.Errorf("questdb %s: no time left to watch a new ILP/TCP connection before sending again", t.set.addr)
	}
	if closedWithin(ctx, t.conn, until) {
		t.window[0].blamed = false
		t.disconnect()
		return fmt.Errorf("questdb %s: the ILP/TCP connection was closed before anything was sent on it", t.set.addr)
	}
	if err := ctx.Err(); err != nil {
		t.disconnect()
		return err
	}
	return nil
}

// minProbe is the shortest wait of probe, for a tcp_confirm_delay of 0.
const minProbe = 100 * time.Millisecond

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func sign(key *ecdsa.PrivateKey, challenge []byte) (string, error) {
	h := sha256.Sum256(challenge)
	sig, err := ecdsa.SignASN1(rand.Reader, key, h[:])
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(sig), nil
}

// disconnect closes the connection; what the window holds is no longer on one.
func (t *tcpSender) disconnect() {
	if t.conn != nil {
		_ = t.conn.Close()
	}
	t.conn, t.tcp = nil, nil
	for _, b := range t.window {
		b.live = false
	}
}
