// Package socketlistener is the inputs.socket_listener plugin: it accepts InfluxDB line
// protocol over TCP, UDP, unix stream and unix datagram sockets, with Telegraf's option names,
// so that senders pointed at Telegraf or at InfluxDB's UDP service can point at morse.
//
// A stream connection is parsed as it arrives, line by line, and each datagram is parsed on
// its own. A malformed line is counted and logged (at most once per 30 s, with the number held
// back) and the rest of the stream or datagram goes on. While a healthy output holds a
// backlog, a stream connection stops being read (backpressure), and datagrams wait unparsed
// in the listener's queue and the socket's receive buffer; an output that fails evicts from
// its own buffer and counts it.
//
// UDP is read by several sockets bound to one port with SO_REUSEPORT, where the system has
// it, so that the kernel spreads senders over several goroutines; on Linux each socket reads
// many datagrams per system call (recvmmsg). A pool of workers parses what the sockets read,
// so that even a single sender, whom the kernel always hands to the same socket, is parsed
// on every CPU. On one CPU the reader drains the socket into a ring of datagrams between
// slices of parsing (ring_linux.go), and the receive buffer defaults to the kernel's limit.
package socketlistener

import (
	"context"
	"crypto/tls"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/sockaddr"
	"github.com/morse-agent/morse/internal/throttle"
	"github.com/morse-agent/morse/plugins/common/tlsserver"
	"github.com/morse-agent/morse/plugins/parsers/influx"
	"github.com/morse-agent/morse/selfstat"
)

// Description is the one-line summary that `morse config` prints above the sample.
const Description = "Accept InfluxDB line protocol over TCP, UDP and unix sockets"

//go:embed sample.conf
var sampleConfig string

func init() {
	morse.RegisterInput(morse.InputInfo{
		Name:         "socket_listener",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Input { return New() },
	})
}

// logEvery is how often a listener logs one kind of problem at most; the log line says how
// many it held back since the last one.
const logEvery = 30 * time.Second

// SocketListener is the inputs.socket_listener plugin and its configuration. Build it with
// New, which sets the defaults; the agent calls Init, then Start and Stop.
type SocketListener struct {
	// ServiceAddress is where to listen: "tcp://127.0.0.1:8094", "udp://127.0.0.1:8094",
	// "unix:///run/morse.sock" or "unixgram:///run/morse.sock".
	ServiceAddress string `toml:"service_address"`
	// MaxConnections caps the open stream connections. At the cap a new connection takes
	// the slot of the oldest one that has sent no complete line, else of the one idle
	// longest (counted as evicted); only when every connection is being read is it closed
	// at once (refused). Zero means no cap.
	MaxConnections int `toml:"max_connections"`
	// ReadTimeout closes a stream connection that sends nothing for this long; zero waits
	// forever. See New for why the default is 5 minutes.
	ReadTimeout morse.Duration `toml:"read_timeout"`
	// KeepAlivePeriod is the TCP keep-alive period: unset uses Go's default (15s), zero turns
	// keep-alive probes off.
	KeepAlivePeriod *morse.Duration `toml:"keep_alive_period"`
	// ReadBufferSize sets the socket receive buffer (SO_RCVBUF). Zero keeps the system's for
	// stream sockets and takes the largest the kernel allows for datagram sockets.
	ReadBufferSize morse.Size `toml:"read_buffer_size"`
	// SocketMode is the file mode of a unix socket, in octal such as "0660".
	SocketMode string `toml:"socket_mode"`
	// UDPReceivers is how many sockets share a UDP port, and how many goroutines parse
	// what they read; zero means one per CPU.
	UDPReceivers int `toml:"udp_receivers"`
	// ContentEncoding is "identity" or "gzip": each datagram, or each whole stream, is gzip.
	ContentEncoding string `toml:"content_encoding"`
	// MaxDecompressionSize bounds one gzip datagram after decompression.
	MaxDecompressionSize morse.Size `toml:"max_decompression_size"`
	// dataFormat is data_format ("influx" by default) and the options of each format,
	// such as influx_timestamp_precision.
	dataFormat
	// Backpressure makes a stream connection (TCP, unix) stop reading while an output it
	// feeds keeps up with its sink but holds a backlog past its buffer's high-water mark,
	// so that the kernel's flow control slows the sender instead of the buffer evicting.
	// False never waits. Datagrams cannot be held back and never wait.
	Backpressure bool `toml:"backpressure"`
	// Config, the server TLS keys (tls_cert, tls_key, tls_allowed_cacerts, tls_min_version),
	// turns on TLS for stream sockets.
	tlsserver.Config
	// TelegrafOptions are allowed_sources and the options accepted for Telegraf's configs.
	TelegrafOptions

	log    *slog.Logger
	stats  *selfstat.PluginStats
	addr   sockaddr.Address
	mode   os.FileMode
	tlsCfg *tls.Config
	parser influx.Parser
	// other is set when data_format is not influx: each connection and each datagram
	// receiver builds a parser of its own from it, since a format may keep state.
	other  bool
	c      counters
	errLog *throttle.Throttle // malformed lines
	ioLog  *throttle.Throttle // refused connections, read and handshake errors
	inited bool

	mu  sync.Mutex
	srv server // nil unless started
}

// server is a running stream or packet server.
type server interface {
	addr() net.Addr
	close()
}

// counters are the listener's self-metrics, reported as internal_socket_listener.
type counters struct {
	opened, closed, refused, evicted *selfstat.Counter
	bytes, packets, lines, parseErr  *selfstat.Counter
	readErr, decodeErr               *selfstat.Counter
}

// The engine finds these optional interfaces by type assertion; a typo would go unnoticed.
var (
	_ morse.ServiceInput = (*SocketListener)(nil)
	_ morse.Validator    = (*SocketListener)(nil)
	_ morse.Initializer  = (*SocketListener)(nil)
	_ morse.LoggerSetter = (*SocketListener)(nil)
	_ morse.StatsSetter  = (*SocketListener)(nil)
)

// New returns the plugin with its defaults: TCP on localhost port 8094, at most 1024
// connections, idle connections closed after 5 minutes.
//
// The idle timeout is no defence against connections opened to exhaust the cap: with
// eviction, 10,000 connections that send nothing delay a sender's lines by under a
// millisecond (TestIdleConnectionsDoNotLockSendersOut), whatever the timeout, while an
// attacker who reconnects defeats any timeout. What the timeout costs is paid by honest
// senders: one that writes less often than it, such as Telegraf's socket_writer with a long
// flush_interval, finds its connection closed, and its next lines, written into a socket the
// listener has closed, are lost without an error. 5 minutes is longer than any usual
// interval and still frees the slot of a sender that went away without closing; Telegraf's
// default, no timeout, would hold such a slot until eviction takes it.
func New() *SocketListener {
	return &SocketListener{
		ServiceAddress:       "tcp://127.0.0.1:8094",
		MaxConnections:       1024,
		ReadTimeout:          morse.Duration(5 * time.Minute),
		ContentEncoding:      "identity",
		MaxDecompressionSize: defaultMaxDecompressionSize,
		dataFormat:           dataFormat{DataFormat: "influx"},
		Backpressure:         true,
	}
}

// defaultMaxDecompressionSize bounds a gzip datagram after decompression: far above the
// 64 KiB a datagram can carry compressed, far below Telegraf's 500MB.
const defaultMaxDecompressionSize = morse.Size(4 << 20)

// SetLogger gives the plugin the engine's logger, which already names the plugin.
func (s *SocketListener) SetLogger(l *slog.Logger) { s.log = l }

// SetStats gives the plugin its self-metric counters.
func (s *SocketListener) SetStats(st *selfstat.PluginStats) { s.stats = st }

// Validate checks the options without touching the network or any file.
func (s *SocketListener) Validate() error {
	var errs []error
	addr, err := sockaddr.Parse(s.ServiceAddress)
	if err != nil {
		errs = append(errs, morse.Errorf("service_address", "%v", err))
	}
	errs = append(errs, s.dataFormat.Validate())
	if s.MaxConnections < 0 {
		errs = append(errs, morse.Errorf("max_connections", "must not be negative (0 means no cap), got %d", s.MaxConnections))
	}
	if s.ReadTimeout < 0 {
		errs = append(errs, morse.Errorf("read_timeout", "must not be negative (0 waits forever)"))
	}
	if s.KeepAlivePeriod != nil && *s.KeepAlivePeriod < 0 {
		errs = append(errs, morse.Errorf("keep_alive_period", "must not be negative (0 turns keep-alive off)"))
	}
	if s.UDPReceivers < 0 {
		errs = append(errs, morse.Errorf("udp_receivers", "must not be negative (0 means one per CPU), got %d", s.UDPReceivers))
	}
	if s.ContentEncoding != "" && s.ContentEncoding != "identity" && s.ContentEncoding != "gzip" {
		errs = append(errs, morse.Errorf("content_encoding", "%q is not supported: use \"identity\" or \"gzip\"", s.ContentEncoding))
	}
	if s.MaxDecompressionSize < 0 {
		errs = append(errs, morse.Errorf("max_decompression_size", "must not be negative (0 means the default, 4MiB)"))
	}
	if _, err := parseMode(s.SocketMode); err != nil {
		errs = append(errs, morse.Errorf("socket_mode", "%v", err))
	}
	errs = append(errs, s.validateTelegraf()...)
	errs = append(errs, s.ValidateTLS())
	if s.TLSEnabled() && err == nil && !addr.Stream() {
		errs = append(errs, morse.Errorf("tls_cert", "TLS works on stream sockets only (tcp:// or unix://), not on %s://", addr.Network))
	}
	return errors.Join(errs...)
}

// parseMode reads socket_mode; the empty string keeps the mode the system gives.
func parseMode(s string) (os.FileMode, error) {
	if s == "" {
		return 0, nil
	}
	m, err := strconv.ParseUint(s, 8, 32)
	if err != nil || m > 0o777 {
		return 0, fmt.Errorf("%q is not an octal file mode like \"0660\"", s)
	}
	return os.FileMode(m), nil
}

// Init checks the options and loads the TLS files, so that a bad certificate stops the
// agent at startup rather than at the first connection.
func (s *SocketListener) Init() error {
	if err := s.Validate(); err != nil {
		return err
	}
	s.addr, _ = sockaddr.Parse(s.ServiceAddress)
	s.mode, _ = parseMode(s.SocketMode)
	cfg, err := s.TLSConfig()
	if err != nil {
		return err
	}
	s.tlsCfg = cfg
	p, err := s.NewParser(s.settings())
	if err != nil {
		return err
	}
	if e, ok := p.(influx.Entries); ok {
		s.parser = *e.Parser // its own paths: ParseReader on streams, LineMetrics
	} else {
		s.other = true
	}
	// Zero means the default, as in Telegraf (whose default is 500MB; morse's is 4MiB,
	// see New).
	if s.MaxDecompressionSize == 0 {
		s.MaxDecompressionSize = defaultMaxDecompressionSize
	}
	s.errLog, s.ioLog = throttle.New(logEvery), throttle.New(logEvery)
	l := s.log
	if l == nil {
		l = slog.Default()
	}
	s.warnTelegraf(l)
	s.inited = true
	return nil
}

// setup prepares what Start needs when the plugin was built in code without the agent.
func (s *SocketListener) setup() error {
	if !s.inited {
		if err := s.Init(); err != nil {
			return err
		}
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.stats == nil {
		s.stats = selfstat.NewPluginStats(nil, "internal_socket_listener", nil)
	}
	c := s.stats.Counter
	s.c = counters{
		opened: c("connections_opened"), closed: c("connections_closed"), refused: c("connections_refused"),
		evicted: c("connections_evicted"),
		bytes:   c("bytes_received"), packets: c("packets_received"), lines: c("lines_received"),
		parseErr: c("parse_errors"), readErr: c("read_errors"), decodeErr: c("decode_errors"),
	}
	return nil
}

// Start binds the address and serves it until Stop. It returns once the socket is bound,
// so that a sender may connect as soon as Start has returned.
func (s *SocketListener) Start(_ context.Context, acc morse.Accumulator) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		return errors.New("socket_listener: already started")
	}
	if err := s.setup(); err != nil {
		return err
	}
	// Lines that go unchanged to outputs that write line protocol need not be taken apart.
	s.parser.LineMetrics = nil
	if la, ok := acc.(morse.LineAccumulator); ok {
		s.parser.LineMetrics = la.PrefersLines
	}
	var err error
	if s.addr.Stream() {
		s.srv, err = s.listenStream(acc)
	} else {
		s.srv, err = s.listenPacket(acc)
	}
	if err != nil {
		s.srv = nil
		return fmt.Errorf("listening on %s: %w", s.ServiceAddress, err)
	}
	s.log.Info("listening", "address", s.srv.addr().String(), "network", s.addr.Network, "tls", s.tlsCfg != nil)
	return nil
}

// Stop closes the socket and every connection, and returns once every goroutine that the
// listener started has ended.
func (s *SocketListener) Stop() {
	s.mu.Lock()
	srv := s.srv
	s.srv = nil
	s.mu.Unlock()
	if srv != nil {
		srv.close()
	}
}

// Addr is the address the listener is bound to, with the port the system chose for port 0;
// nil when it is not running.
func (s *SocketListener) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv == nil {
		return nil
	}
	return s.srv.addr()
}

// Gather does nothing: metrics arrive when senders send them.
func (s *SocketListener) Gather(context.Context, morse.Accumulator) error { return nil }

// receivers is the number of UDP sockets to bind.
func (s *SocketListener) receivers() int {
	if !canReusePort {
		return 1
	}
	if s.UDPReceivers > 0 {
		return s.UDPReceivers
	}
	return runtime.NumCPU()
}

// lineError counts and logs a malformed line; from names the sender.
func (s *SocketListener) lineError(e influx.LineError, from any) {
	s.c.parseErr.Incr()
	s.errLog.Log(s.log, slog.LevelWarn, "malformed line protocol", "from", from, "line", e.Line, "error", e.Error())
}

// setReadBuffer sets SO_RCVBUF on conn, or on the socket under a TLS or limited connection.
func (s *SocketListener) setReadBuffer(conn any) {
	if s.ReadBufferSize <= 0 {
		return
	}
	for {
		switch c := conn.(type) {
		case *tls.Conn:
			conn = c.NetConn()
			continue
		case interface{ Unwrap() net.Conn }:
			conn = c.Unwrap()
			continue
		case interface{ SetReadBuffer(int) error }:
			if err := c.SetReadBuffer(int(s.ReadBufferSize)); err != nil {
				s.ioLog.Log(s.log, slog.LevelWarn, "cannot set read_buffer_size", "error", err)
			}
		}
		return
	}
}
