// Package socketwriter is the outputs.socket_writer plugin: it sends metrics to a TCP, UDP
// or unix socket in any data_format that morse serializes, line protocol by default, for
// anything that reads from a socket (morse's and Telegraf's socket_listener, InfluxDB's UDP
// service, QuestDB over TCP, Graphite and Carbon 2.0 receivers). Its options are Telegraf's.
//
// A stream (tcp, unix) carries each batch in one write; a datagram (udp, unixgram) carries
// one metric, as in Telegraf, so a lost datagram loses one metric. A failed write closes the
// connection and is retryable: the next write connects again and sends the whole batch, so
// lines that had gone out before the failure are sent twice, which line-protocol databases
// store once.
package socketwriter

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/sockaddr"
	"github.com/morse-agent/morse/plugins/common/tlsclient"
	"github.com/morse-agent/morse/plugins/serializers"
	"github.com/morse-agent/morse/plugins/serializers/dataformat"
	"github.com/morse-agent/morse/selfstat"
)

//go:embed sample.conf
var sampleConfig string

// Description is the one-line summary shown by `morse config`.
const Description = "Send metrics to a TCP, UDP or unix socket"

func init() {
	morse.RegisterOutput(morse.OutputInfo{
		Name:         "socket_writer",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Output { return New() },
	})
}

// Format is the serializer registry's config under a name of its own: the output embeds
// tlsclient.Config too, and a struct cannot embed two types called Config.
type Format = dataformat.Config

// DefaultAddress is Telegraf's example address.
const DefaultAddress = "tcp://127.0.0.1:8094"

// SocketWriter sends batches to a socket. The TOML keys are Telegraf's, so a Telegraf
// [[outputs.socket_writer]] table decodes unchanged; sample.conf says what each one does.
type SocketWriter struct {
	// Address is where to connect, such as "tcp://127.0.0.1:8094" or "unixgram:///run/x.sock".
	Address string `toml:"address"`
	// KeepAlivePeriod is the TCP keep-alive period: unset keeps Go's default, zero turns
	// keep-alive probes off.
	KeepAlivePeriod *morse.Duration `toml:"keep_alive_period"`
	// ContentEncoding is "identity" or "gzip".
	ContentEncoding string `toml:"content_encoding"`
	// Format is data_format and the options of each format, with Telegraf's keys. Each
	// metric is serialized on its own, as Telegraf's socket_writer does.
	Format
	tlsclient.Config

	log *slog.Logger

	// mu serialises writes, connects and Close: one connection carries one stream.
	mu   sync.Mutex
	addr sockaddr.Address
	ser  serializers.Serializer
	conn sender // nil when not connected

	serStats *selfstat.SerializerStats // internal_serializer; nil without an agent
}

// SetSelfStats implements morse.SelfStatsSetter: the agent hands over its registry, where
// the output counts what it serializes (internal_serializer, tagged with the data_format),
// as Telegraf's outputs with a data_format do.
func (w *SocketWriter) SetSelfStats(r *selfstat.Registry) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.serStats = selfstat.NewSerializerStats(r, w.FormatName())
}

// New returns an output with Telegraf's defaults.
func New() *SocketWriter {
	return &SocketWriter{Address: DefaultAddress, ContentEncoding: "identity", Format: Format{DataFormat: "influx"}}
}

var (
	_ morse.Output       = (*SocketWriter)(nil)
	_ morse.Validator    = (*SocketWriter)(nil)
	_ morse.Initializer  = (*SocketWriter)(nil)
	_ morse.LoggerSetter = (*SocketWriter)(nil)
	_ morse.LineWriter   = (*SocketWriter)(nil)
)

// SetLogger gives the output the engine's logger.
func (w *SocketWriter) SetLogger(l *slog.Logger) { w.log = l }

func (w *SocketWriter) logger() *slog.Logger {
	if w.log == nil {
		return slog.Default().With("output", "socket_writer")
	}
	return w.log
}

// Validate checks the options after decoding, without reading any file.
func (w *SocketWriter) Validate() error {
	var errs []error
	addr, err := sockaddr.Parse(w.Address)
	if err != nil {
		errs = append(errs, morse.Errorf("address", "%v", err))
	}
	if err == nil && !addr.Stream() && w.Config.Configured() {
		errs = append(errs, morse.Errorf("tls_ca", "TLS works on stream sockets only (tcp:// or unix://), not on %s://", addr.Network))
	}
	switch w.ContentEncoding {
	case "", "identity", "gzip":
	default:
		errs = append(errs, morse.Errorf("content_encoding", "%q: must be \"gzip\" or \"identity\"", w.ContentEncoding))
	}
	errs = append(errs, w.Format.Validate())
	if w.KeepAlivePeriod != nil && *w.KeepAlivePeriod < 0 {
		errs = append(errs, morse.Errorf("keep_alive_period", "must not be negative"))
	}
	if err := w.Config.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Init checks the options and reads the TLS files, so that one that cannot be read stops
// the agent at start.
func (w *SocketWriter) Init() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.setup()
}

func (w *SocketWriter) setup() error {
	if err := w.Validate(); err != nil {
		return err
	}
	if _, err := w.Config.TLSConfig(); err != nil {
		return err
	}
	w.addr, _ = sockaddr.Parse(w.Address)
	ser, err := w.Format.New()
	if err != nil {
		return err
	}
	w.ser = ser
	return nil
}

// Connect connects to the address. An error is retried by the agent, as a write's is.
func (w *SocketWriter) Connect(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ser == nil {
		if err := w.setup(); err != nil {
			return err
		}
	}
	if w.conn != nil {
		return nil
	}
	return w.connect(ctx)
}

// Write sends the batch. A metric that cannot be serialized, or a datagram too large for the
// socket, is dropped and counted (a *morse.PartialWriteError); any other failure closes the
// connection and is retryable.
func (w *SocketWriter) Write(ctx context.Context, batch []morse.Metric) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ser == nil {
		if err := w.setup(); err != nil {
			return err
		}
	}
	if len(batch) == 0 {
		return nil
	}
	if w.conn != nil && w.conn.closedByPeer() {
		w.logger().Debug("the peer closed the connection; connecting again", "address", w.Address)
		w.disconnect()
	}
	if w.conn == nil {
		if err := w.connect(ctx); err != nil {
			return err
		}
	}
	dropped, err := w.send(ctx, batch)
	if err != nil {
		w.disconnect()
		return morse.Retryable(fmt.Errorf("socket_writer %s: %w", w.Address, err), 0)
	}
	return dropped.err()
}

// send writes the batch within the agent's context and writeTimeout: a peer that stops
// reading must not hold the output for ever. The deadline is set before the context is
// watched, so that a cancel cannot be overwritten by it; and after a cancel that came too
// late to matter, the connection's deadlines are cleared, so that the next write does not
// take them for a failure.
func (w *SocketWriter) send(ctx context.Context, batch []morse.Metric) (drops, error) {
	deadline := time.Now().Add(writeTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	c := w.conn.netConn()
	if err := c.SetWriteDeadline(deadline); err != nil {
		return drops{}, err
	}
	interrupted := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(interrupted)
		_ = c.SetDeadline(time.Now())
	})
	dropped, err := w.conn.send(w, batch)
	if !stop() {
		<-interrupted
		if err == nil {
			err = c.SetDeadline(time.Time{})
		}
	}
	return dropped, err
}

// writeTimeout bounds one batch's write when the agent's context has no earlier deadline.
// Telegraf has no such bound; without one a peer that stops reading would stall the output.
const writeTimeout = 30 * time.Second

// WritesLines tells the agent that line metrics (morse.NewLineMetric) may come as they are:
// the influx serializer writes their text. With influx_sort_fields, or another format, the
// serializer reads the fields of every metric, which would only expand each one, so the
// output takes them expanded.
func (w *SocketWriter) WritesLines() bool { return w.Format.WritesLines() }

// Close ends the connection; a stream's gzip is finished first, so that the reader sees a
// whole stream.
func (w *SocketWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.conn == nil {
		return nil
	}
	err := w.conn.close()
	w.conn = nil
	return err
}

// disconnect drops a connection that failed; its errors say nothing new.
func (w *SocketWriter) disconnect() {
	if w.conn != nil {
		_ = w.conn.close()
		w.conn = nil
	}
}
