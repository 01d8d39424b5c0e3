// Package syslog is the inputs.syslog plugin: it receives syslog messages, RFC 5424 or
// RFC 3164, over UDP, TCP (octet-counting or non-transparent framing), TLS and unix
// sockets, and turns each into a "syslog" metric with Telegraf's tags, fields and types.
//
// Messages are parsed by github.com/leodido/go-syslog/v4, the library Telegraf 1.39.3 uses
// (same version), so that a message gives the same fields, values and errors in both. The
// stream framing is morse's own (framing.go): go-syslog's framing parsers stop reading a
// connection at the first bad message, and hold the last non-transparent message until the
// next one arrives; here a bad message is counted, reported with its offset in the stream,
// and the messages after it are kept, and a message is handed on as soon as its trailer
// has arrived.
//
// The sockets are served with the listener machinery the other listeners share:
// internal/listener (connection cap with eviction, the connections' goroutines),
// internal/sockaddr (Telegraf's addresses) and plugins/common/tlsserver (TLS options).
package syslog

import (
	"context"
	"crypto/tls"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/sockaddr"
	"github.com/morse-agent/morse/plugins/common/tlsserver"
	"github.com/morse-agent/morse/selfstat"
)

// Description is the one-line summary that `morse config` prints above the sample.
const Description = "Accept syslog messages (RFC 5424 or RFC 3164) over UDP, TCP, TLS and unix sockets"

//go:embed sample.conf
var sampleConfig string

func init() {
	morse.RegisterInput(morse.InputInfo{
		Name:         "syslog",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Input { return New() },
	})
}

// defaultPort is the port of an address without one, as in Telegraf (RFC 5425).
const defaultPort = "6514"

// Syslog is the inputs.syslog plugin and its configuration. Build it with New, which sets
// the defaults; the agent calls Init, then Start and Stop.
type Syslog struct {
	// Server is where to listen: "tcp://127.0.0.1:6514", "udp://:514",
	// "unix:///run/morse-syslog.sock" or "unixgram:///...". Without a port, 6514.
	Server string `toml:"server"`
	// Framing splits a stream into messages: "octet-counting" or "non-transparent".
	Framing string `toml:"framing"`
	// Trailer ends a message under non-transparent framing: "LF" or "NUL".
	Trailer string `toml:"trailer"`
	// BestEffort keeps what can be read of a malformed message, with the error reported.
	BestEffort bool `toml:"best_effort"`
	// SyslogStandard is the message format: "RFC5424" or "RFC3164".
	SyslogStandard string `toml:"syslog_standard"`
	// Separator joins a structured-data ID and a parameter name into a field name.
	Separator string `toml:"sdparam_separator"`
	// MaxMessageLength is the largest message under octet-counting framing; zero means
	// 8KiB, go-syslog's default, which Telegraf keeps.
	MaxMessageLength morse.Size `toml:"max_message_length"`
	// SocketMode is the file mode of a unix socket, in octal such as "0660".
	SocketMode string `toml:"socket_mode"`
	// MaxConnections caps the open stream connections; zero means no cap. At the cap a new
	// connection takes the slot of one that is doing nothing (internal/listener.Limit).
	MaxConnections int `toml:"max_connections"`
	// ReadTimeout closes a stream connection that sends nothing for this long; zero waits
	// forever.
	ReadTimeout morse.Duration `toml:"read_timeout"`
	// KeepAlivePeriod is the TCP keep-alive period: unset keeps Go's default, zero turns
	// keep-alive probes off.
	KeepAlivePeriod *morse.Duration `toml:"keep_alive_period"`
	// ReadBufferSize sets the socket receive buffer (SO_RCVBUF); zero keeps the system's.
	ReadBufferSize morse.Size `toml:"read_buffer_size"`
	// AllowedSources, when not empty, lists the only sender IP addresses that are read.
	AllowedSources []string `toml:"allowed_sources"`
	// ContentEncoding is Telegraf's socket option; only "identity" is taken.
	ContentEncoding string `toml:"content_encoding"`
	// MaxDecompressionSize is accepted for Telegraf's configs; it has no use without gzip.
	MaxDecompressionSize morse.Size `toml:"max_decompression_size"`
	// MulticastSource is accepted with a warning: morse does not join multicast groups.
	MulticastSource string `toml:"multicast_source"`
	// Config, the server TLS keys (tls_cert, tls_key, tls_allowed_cacerts,
	// tls_min_version), turns on TLS for stream sockets.
	tlsserver.Config

	log     *slog.Logger
	stats   *selfstat.PluginStats
	now     func() time.Time // the metrics' time, and the year of RFC 3164 timestamps
	addr    sockaddr.Address
	mode    os.FileMode
	tlsCfg  *tls.Config
	allowed []net.IP
	nul     bool // the trailer is NUL
	c       counters
	inited  bool

	mu  sync.Mutex
	srv server // nil unless started
}

// server is a running stream or packet server.
type server interface {
	addr() net.Addr
	close()
}

// counters are the plugin's self-metrics, reported as internal_syslog.
type counters struct {
	opened, closed, refused, evicted *selfstat.Counter
	bytes, messages, readErr         *selfstat.Counter
	// malformed counts messages refused (strict mode), partial those kept in part
	// (best_effort), framing the stream bytes that could not be split into messages.
	malformed, partial, framing *selfstat.Counter
}

// The engine finds these optional interfaces by type assertion; a typo would go unnoticed.
var (
	_ morse.ServiceInput = (*Syslog)(nil)
	_ morse.Validator    = (*Syslog)(nil)
	_ morse.Initializer  = (*Syslog)(nil)
	_ morse.LoggerSetter = (*Syslog)(nil)
	_ morse.StatsSetter  = (*Syslog)(nil)
)

// New returns the plugin with Telegraf's defaults: TCP on localhost port 6514, RFC 5424
// with octet-counting framing, LF trailer, "_" as the separator, no connection cap and no
// read timeout.
func New() *Syslog {
	return &Syslog{
		Server:         "tcp://127.0.0.1:6514",
		Framing:        "octet-counting",
		Trailer:        "LF",
		SyslogStandard: "RFC5424",
		Separator:      "_",
	}
}

// SetLogger gives the plugin the engine's logger, which already names the plugin.
func (s *Syslog) SetLogger(l *slog.Logger) { s.log = l }

// SetStats gives the plugin its self-metric counters.
func (s *Syslog) SetStats(st *selfstat.PluginStats) { s.stats = st }

// address reads server, with the default port for an IP address without one.
func (s *Syslog) address() (sockaddr.Address, error) {
	network, rest, ok := strings.Cut(s.Server, "://")
	if ok && !strings.HasPrefix(network, "unix") && rest != "" {
		// Telegraf adds 6514 to "tcp://host" and "udp://:" alike.
		if host, port, err := net.SplitHostPort(rest); err != nil {
			return sockaddr.Parse(network + "://" + net.JoinHostPort(strings.Trim(rest, "[]"), defaultPort))
		} else if port == "" {
			return sockaddr.Parse(network + "://" + net.JoinHostPort(host, defaultPort))
		}
	}
	return sockaddr.Parse(s.Server)
}

// Validate checks the options without touching the network or any file, reporting every
// problem at once.
func (s *Syslog) Validate() error {
	var errs []error
	addr, err := s.address()
	if err != nil {
		errs = append(errs, morse.Errorf("server", "%v", err))
	}
	switch s.Framing {
	case "", "octet-counting", "non-transparent":
	default:
		errs = append(errs, morse.Errorf("framing", "%q is not supported: use \"octet-counting\" or \"non-transparent\"", s.Framing))
	}
	switch strings.ToUpper(s.Trailer) {
	case "", "LF", "NUL":
	default:
		errs = append(errs, morse.Errorf("trailer", "%q is not supported: use \"LF\" or \"NUL\"", s.Trailer))
	}
	switch s.SyslogStandard {
	case "", "RFC5424", "RFC3164":
	default:
		errs = append(errs, morse.Errorf("syslog_standard", "%q is not supported: use \"RFC5424\" or \"RFC3164\"", s.SyslogStandard))
	}
	errs = append(errs, s.validateSocket()...)
	errs = append(errs, s.ValidateTLS())
	if s.TLSEnabled() && err == nil && !addr.Stream() {
		errs = append(errs, morse.Errorf("tls_cert", "TLS works on stream sockets only (tcp:// or unix://), not on %s://", addr.Network))
	}
	return errors.Join(errs...)
}

// validateSocket checks the socket options and parses allowed_sources.
func (s *Syslog) validateSocket() []error {
	var errs []error
	if s.MaxMessageLength < 0 {
		errs = append(errs, morse.Errorf("max_message_length", "must not be negative (0 means 8KiB)"))
	}
	if s.MaxConnections < 0 {
		errs = append(errs, morse.Errorf("max_connections", "must not be negative (0 means no cap), got %d", s.MaxConnections))
	}
	if s.ReadTimeout < 0 {
		errs = append(errs, morse.Errorf("read_timeout", "must not be negative (0 waits forever)"))
	}
	if s.KeepAlivePeriod != nil && *s.KeepAlivePeriod < 0 {
		errs = append(errs, morse.Errorf("keep_alive_period", "must not be negative (0 turns keep-alive off)"))
	}
	if s.ReadBufferSize < 0 {
		errs = append(errs, morse.Errorf("read_buffer_size", "must not be negative"))
	}
	if s.ContentEncoding != "" && s.ContentEncoding != "identity" {
		errs = append(errs, morse.Errorf("content_encoding", "%q is not supported by inputs.syslog: only \"identity\"", s.ContentEncoding))
	}
	if _, err := parseMode(s.SocketMode); err != nil {
		errs = append(errs, morse.Errorf("socket_mode", "%v", err))
	}
	s.allowed = s.allowed[:0]
	for _, a := range s.AllowedSources {
		ip := net.ParseIP(a)
		if ip == nil {
			errs = append(errs, morse.Errorf("allowed_sources", "%q is not an IP address", a))
			continue
		}
		s.allowed = append(s.allowed, ip)
	}
	return errs
}

// parseMode reads socket_mode; the empty string keeps the mode the system gives.
func parseMode(m string) (os.FileMode, error) {
	if m == "" {
		return 0, nil
	}
	v, err := strconv.ParseUint(m, 8, 32)
	if err != nil || v > 0o777 {
		return 0, fmt.Errorf("%q is not an octal file mode like \"0660\"", m)
	}
	return os.FileMode(v), nil
}

// Init checks the options, sets the defaults Telegraf sets for empty ones and loads the
// TLS files, so that a bad certificate stops the agent at startup.
func (s *Syslog) Init() error {
	if err := s.Validate(); err != nil {
		return err
	}
	s.addr, _ = s.address()
	s.mode, _ = parseMode(s.SocketMode)
	if s.Framing == "" {
		s.Framing = "octet-counting"
	}
	if s.SyslogStandard == "" {
		s.SyslogStandard = "RFC5424"
	}
	if s.Separator == "" {
		s.Separator = "_"
	}
	if s.MaxMessageLength == 0 {
		s.MaxMessageLength = 8192
	}
	s.nul = strings.EqualFold(s.Trailer, "NUL")
	cfg, err := s.TLSConfig()
	if err != nil {
		return err
	}
	s.tlsCfg = cfg
	if s.now == nil {
		s.now = time.Now
	}
	s.inited = true
	return nil
}

// setup prepares what Start needs when the plugin was built in code without the agent.
func (s *Syslog) setup() error {
	if !s.inited {
		if err := s.Init(); err != nil {
			return err
		}
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.MulticastSource != "" {
		s.log.Warn("multicast_source has no effect in morse: the listener does not join multicast groups")
	}
	if s.stats == nil {
		s.stats = selfstat.NewPluginStats(nil, "internal_syslog", nil)
	}
	c := s.stats.Counter
	s.c = counters{
		opened: c("connections_opened"), closed: c("connections_closed"), refused: c("connections_refused"),
		evicted: c("connections_evicted"), bytes: c("bytes_received"), messages: c("messages_received"),
		readErr: c("read_errors"), malformed: c("malformed_messages"), partial: c("partial_messages"),
		framing: c("framing_errors"),
	}
	return nil
}

// Start binds the address and serves it until Stop. It returns once the socket is bound.
func (s *Syslog) Start(_ context.Context, acc morse.Accumulator) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		return errors.New("syslog: already started")
	}
	if err := s.setup(); err != nil {
		return err
	}
	var err error
	if s.addr.Stream() {
		s.srv, err = s.listenStream(acc)
	} else {
		s.srv, err = s.listenPacket(acc)
	}
	if err != nil {
		s.srv = nil
		return fmt.Errorf("listening on %s: %w", s.Server, err)
	}
	s.log.Info("listening", "address", s.srv.addr().String(), "network", s.addr.Network, "tls", s.tlsCfg != nil)
	return nil
}

// Stop closes the socket and every connection, and returns once every goroutine that the
// plugin started has ended.
func (s *Syslog) Stop() {
	s.mu.Lock()
	srv := s.srv
	s.srv = nil
	s.mu.Unlock()
	if srv != nil {
		srv.close()
	}
}

// Addr is the address the plugin is bound to, with the port the system chose for port 0;
// nil when it is not running.
func (s *Syslog) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv == nil {
		return nil
	}
	return s.srv.addr()
}

// Gather does nothing: messages arrive when senders send them.
func (s *Syslog) Gather(context.Context, morse.Accumulator) error { return nil }

// sourceAllowed says whether a sender may be read: with allowed_sources, only a sender with
// one of its IP addresses.
func (s *Syslog) sourceAllowed(addr net.Addr) bool {
	if len(s.allowed) == 0 {
		return true
	}
	var ip net.IP
	switch a := addr.(type) {
	case *net.TCPAddr:
		ip = a.IP
	case *net.UDPAddr:
		ip = a.IP
	default:
		return false
	}
	for _, a := range s.allowed {
		if a.Equal(ip) {
			return true
		}
	}
	return false
}
