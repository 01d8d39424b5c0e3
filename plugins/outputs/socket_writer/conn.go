package socketwriter

import (
	"bufio"
	"compress/gzip"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/httpwrite"
)

// ReasonDatagramTooLarge counts metrics whose datagram the socket refused as too large
// (EMSGSIZE): sending the same datagram again can never succeed.
const ReasonDatagramTooLarge = "datagram_too_large"

// dialTimeout bounds connecting when the agent's context has no earlier deadline.
const dialTimeout = 10 * time.Second

// sender is one connection: a stream or datagrams.
type sender interface {
	// send writes a batch before deadline. It returns the metrics dropped for good, and an
	// error when the connection failed.
	send(w *SocketWriter, batch []morse.Metric, deadline time.Time) (drops, error)
	// closedByPeer reports whether the peer has closed a stream, so that a batch is not
	// written into a connection that can no longer deliver it.
	closedByPeer() bool
	// interrupt makes a send in progress return, when the agent's context ends.
	interrupt()
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

// drops counts the metrics of a batch that were dropped for good, and keeps the first reason.
type drops struct {
	n     int
	first error
}

func (d *drops) add(err error) {
	d.n++
	if d.first == nil {
		d.first = err
	}
}

// err is the partial write of a batch, or nil when nothing was dropped.
func (d drops) err() error {
	if d.n == 0 {
		return nil
	}
	reason := morse.ReasonSerialize
	if pe, ok := errors.AsType[*morse.PermanentError](d.first); ok {
		reason = pe.Reason
	}
	return &morse.PartialWriteError{Dropped: d.n, Reason: reason, Err: d.first}
}

// stream is a TCP or unix stream connection. A batch goes out in one write. With gzip, the
// connection carries one gzip stream, flushed after every batch so that the reader can
// decode it at once; it compresses across metrics, where Telegraf's socket_writer starts a
// gzip member per metric. Both read back the same with a multistream gzip reader.
type stream struct {
	conn net.Conn
	bw   *bufio.Writer // the gzip stream's output, so that it reaches the socket in few writes
	zw   *gzip.Writer  // nil without gzip
	body httpwrite.Body
}

func newStream(c net.Conn, zip bool) *stream {
	s := &stream{conn: c}
	if zip {
		s.bw = bufio.NewWriterSize(c, 64<<10)
		s.zw, _ = gzip.NewWriterLevel(s.bw, gzip.BestSpeed)
	}
	return s
}

func (s *stream) send(w *SocketWriter, batch []morse.Metric, deadline time.Time) (drops, error) {
	start := time.Now()
	body, n, first := s.body.Build(batch, w.ser.AppendMetric, w.prepare, false)
	w.serStats.Serialized(len(batch), len(body), time.Since(start))
	w.serStats.Failed(n)
	d := drops{n: n, first: first}
	if len(body) == 0 {
		return d, nil
	}
	if err := s.conn.SetWriteDeadline(deadline); err != nil {
		return d, err
	}
	if s.zw == nil {
		_, err := s.conn.Write(body)
		return d, err
	}
	if _, err := s.zw.Write(body); err != nil {
		return d, err
	}
	if err := s.zw.Flush(); err != nil {
		return d, err
	}
	return d, s.bw.Flush()
}

func (s *stream) closedByPeer() bool { return peerClosed(s.conn) }

func (s *stream) interrupt() { _ = s.conn.SetDeadline(time.Now()) }

func (s *stream) close() error {
	var errs []error
	if s.zw != nil {
		// End the gzip stream, so that the reader sees a whole one rather than a cut.
		_ = s.conn.SetWriteDeadline(time.Now().Add(time.Second))
		errs = append(errs, s.zw.Close(), s.bw.Flush())
	}
	errs = append(errs, s.conn.Close())
	return errors.Join(errs...)
}

// datagram is a UDP or unixgram socket: one metric a datagram, gzip on its own with gzip.
type datagram struct {
	conn net.Conn
	zip  bool
	buf  []byte
	zbuf []byte
}

func (d *datagram) send(w *SocketWriter, batch []morse.Metric, deadline time.Time) (drops, error) {
	var dr drops
	if err := d.conn.SetWriteDeadline(deadline); err != nil {
		return dr, err
	}
	var bytes, failed int
	var took time.Duration
	defer func() {
		w.serStats.Serialized(len(batch), bytes, took)
		w.serStats.Failed(failed)
	}()
	for _, m := range batch {
		start := time.Now()
		line, err := w.ser.AppendMetric(d.buf[:0], w.prepare(m))
		took += time.Since(start)
		if err != nil {
			failed++
			dr.add(err)
			continue
		}
		bytes += len(line)
		d.buf = line
		payload := line
		if d.zip {
			d.zbuf = httpwrite.AppendGzip(d.zbuf[:0], line)
			payload = d.zbuf
		}
		if _, err := d.conn.Write(payload); err != nil {
			if errors.Is(err, syscall.EMSGSIZE) {
				dr.add(morse.Permanent(ReasonDatagramTooLarge, fmt.Errorf("a datagram of %d bytes is too large for %s: %w", len(payload), w.Address, err)))
				continue
			}
			return dr, err
		}
	}
	return dr, nil
}

func (d *datagram) closedByPeer() bool { return false }

func (d *datagram) interrupt() { _ = d.conn.SetDeadline(time.Now()) }

func (d *datagram) close() error { return d.conn.Close() }

// Compile-time checks that both kinds are senders.
var (
	_ sender = (*stream)(nil)
	_ sender = (*datagram)(nil)
)
