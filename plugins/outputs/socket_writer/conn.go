package socketwriter

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/common/httpout"
)

// ReasonDatagramTooLarge counts metrics whose datagram the socket refused as too large
// (EMSGSIZE): sending the same datagram again can never succeed.
const ReasonDatagramTooLarge = "datagram_too_large"

// asIs is the identity, for httpout.Body's prepare: the serializer applies the format's
// options itself.
func asIs(m morse.Metric) morse.Metric { return m }

// dialTimeout bounds connecting when the agent's context has no earlier deadline.
const dialTimeout = 10 * time.Second

// sender is one connection: a stream or datagrams.
type sender interface {
	// send writes a batch, within the deadline the caller set on the connection. It returns
	// the metrics dropped for good, and an error when the connection failed.
	send(w *SocketWriter, batch []morse.Metric) (drops, error)
	// closedByPeer reports whether the peer has closed a stream, so that a batch is not
	// written into a connection that can no longer deliver it.
	closedByPeer() bool
	// conn is the connection, whose deadlines the caller sets.
	netConn() net.Conn
	close() error
}

// connect dials the address. TLS applies to streams; keep_alive_period to TCP.
func (w *SocketWriter) connect(ctx context.Context) error {
	tlsCfg, err := w.Config.TLSConfig()
	if err != nil {
		return err
	}
	d := &net.Dialer{Timeout: dialTimeout}
	if w.KeepAlivePeriod != nil {
		d.KeepAlive = time.Duration(*w.KeepAlivePeriod)
		if d.KeepAlive == 0 {
			d.KeepAlive = -1 // Go's way to say off
		}
	}
	var c net.Conn
	if tlsCfg != nil {
		c, err = (&tls.Dialer{NetDialer: d, Config: tlsCfg}).DialContext(ctx, w.addr.Network, w.addr.Addr)
	} else {
		c, err = d.DialContext(ctx, w.addr.Network, w.addr.Addr)
	}
	if err != nil {
		return morse.Retryable(fmt.Errorf("socket_writer: connecting to %s: %w", w.Address, err), 0)
	}
	zip := w.ContentEncoding == "gzip"
	if w.addr.Stream() {
		w.conn = newStream(c, zip)
	} else {
		w.conn = &datagram{conn: c, zip: zip}
	}
	return nil
}

// drops counts the metrics of a batch that were dropped for good, by reason, with the
// positions of those it knows and the first error of each reason.
type drops struct {
	byReason []*morse.PartialWriteError // in the order the reasons first came
}

// add counts batch[i] as dropped for err, under err's reason (serialize when it has none).
func (d *drops) add(i int, err error) {
	pe := d.part(err)
	pe.Indices = append(pe.Indices, i)
	pe.Dropped = len(pe.Indices)
}

// addCount counts n metrics, positions unknown, as dropped for err.
func (d *drops) addCount(n int, err error) {
	if n > 0 {
		d.part(err).Dropped += n
	}
}

func (d *drops) part(err error) *morse.PartialWriteError {
	reason := morse.ReasonSerialize
	if pe, ok := errors.AsType[*morse.PermanentError](err); ok {
		reason = pe.Reason
	}
	for _, p := range d.byReason {
		if p.Reason == reason {
			return p
		}
	}
	p := &morse.PartialWriteError{Reason: reason, Err: err}
	d.byReason = append(d.byReason, p)
	return p
}

// err is the partial write of a batch, or nil when nothing was dropped: the first reason,
// with the others in More, so that each is counted under its own.
func (d drops) err() error {
	if len(d.byReason) == 0 {
		return nil
	}
	pe := *d.byReason[0]
	pe.More = d.byReason[1:]
	return &pe
}

// stream is a TCP or unix stream connection. A batch goes out in one write. With gzip, each
// batch is one whole gzip member, as each metric is in Telegraf's socket_writer: a reader
// that decodes ahead (Telegraf's socket_listener uses pgzip, which waits for 1 MiB or the
// end of a member) has every line of a batch as soon as it arrives, where a gzip stream
// that runs on from batch to batch, flushed after each, would hold them back.
type stream struct {
	conn net.Conn
	zip  bool
	body httpout.Body
	zbuf []byte
}

func newStream(c net.Conn, zip bool) *stream { return &stream{conn: c, zip: zip} }

func (s *stream) send(w *SocketWriter, batch []morse.Metric) (drops, error) {
	start := time.Now()
	body, n, first := s.body.Build(batch, w.ser.AppendMetric, asIs, false)
	w.serStats.Serialized(len(batch), len(body), time.Since(start))
	w.serStats.Failed(n)
	var d drops
	d.addCount(n, first)
	if len(body) == 0 {
		return d, nil
	}
	if s.zip {
		s.zbuf = httpout.AppendGzip(s.zbuf[:0], body)
		body = s.zbuf
	}
	_, err := s.conn.Write(body)
	return d, err
}

func (s *stream) closedByPeer() bool { return peerClosed(s.conn) }

func (s *stream) netConn() net.Conn { return s.conn }

func (s *stream) close() error { return s.conn.Close() }

// datagram is a UDP or unixgram socket: one metric a datagram, gzip on its own with gzip.
type datagram struct {
	conn net.Conn
	zip  bool
	buf  []byte
	zbuf []byte
}

func (d *datagram) send(w *SocketWriter, batch []morse.Metric) (drops, error) {
	var dr drops
	var bytes, failed int
	var took time.Duration
	defer func() {
		w.serStats.Serialized(len(batch), bytes, took)
		w.serStats.Failed(failed)
	}()
	for i, m := range batch {
		start := time.Now()
		line, err := w.ser.AppendMetric(d.buf[:0], m)
		took += time.Since(start)
		if err != nil {
			failed++
			dr.add(i, err)
			continue
		}
		bytes += len(line)
		d.buf = line
		payload := line
		if d.zip {
			d.zbuf = httpout.AppendGzip(d.zbuf[:0], line)
			payload = d.zbuf
		}
		if _, err := d.conn.Write(payload); err != nil {
			if errors.Is(err, syscall.EMSGSIZE) {
				dr.add(i, morse.Permanent(ReasonDatagramTooLarge, fmt.Errorf("a datagram of %d bytes is too large for %s: %w", len(payload), w.Address, err)))
				continue
			}
			return dr, err
		}
	}
	return dr, nil
}

func (d *datagram) closedByPeer() bool { return false }

func (d *datagram) netConn() net.Conn { return d.conn }

func (d *datagram) close() error { return d.conn.Close() }

// Compile-time checks that both kinds are senders.
var (
	_ sender = (*stream)(nil)
	_ sender = (*datagram)(nil)
)
