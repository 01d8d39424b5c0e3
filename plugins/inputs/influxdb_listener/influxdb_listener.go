// Package influxdblistener is the inputs.influxdb_listener plugin: an HTTP server that
// accepts line protocol on InfluxDB's write endpoints and answers the way InfluxDB 1.x does,
// with Telegraf's option names, so that senders pointed at InfluxDB can point at morse.
//
// Endpoints: POST /write (v1: db, rp, precision, u and p), POST /api/v2/write (org, bucket
// as "db" or "db/rp", precision ns/us/ms/s), GET /ping (204, or 200 with ?verbose=true),
// GET /health, and /query, which answers {"results":[]} so that clients that create their
// database on connect carry on. Every response carries X-Influxdb-Version.
//
// A write with only valid lines gets 204. A write with bad lines gets 400 with InfluxDB's
// {"error":"..."} body and X-Influxdb-Error header, and its valid lines are still accepted.
// The message quotes the first bad line in InfluxDB's words and adds what InfluxDB leaves
// out, its line number and how many lines were rejected:
//
//	some lines accepted: partial write: line 3: unable to parse 'cpu value=': missing field value (2 of 10 lines rejected) dropped=2
//	no line accepted:    unable to parse 'cpu value=': missing field value (line 3; 2 of 2 lines rejected)
//
// The two forms keep the prefixes that InfluxDB clients classify by: "partial write:" means
// the rest was stored, and a message that starts with "unable to parse" means nothing was.
// In a partial write the clause follows "line N: ", so the one bad line quoted is not counted
// a second time by clients that add one drop per "unable to parse" line to dropped=N (as
// morse's own InfluxDB output does); dropped=N is the exact number of lines rejected.
//
// Limits apply as InfluxDB's do, only stricter: max_body_size counts the bytes after gzip
// decompression, so a small gzip body that inflates beyond it gets 413, and the
// decompression stops there. Header, read, write and idle timeouts are set, and
// max_connections caps the open connections: at the cap a new connection takes the place of
// one that has sent no complete request (internal/listener.Limit), so connections that send
// nothing cannot lock senders out.
//
// A body is parsed as it arrives, in chunks (body.go), so a request holds a chunk and at
// most one line of max_line_size, not its whole body. The lines parsed before a body
// passes max_body_size are therefore kept, and the 413 says how many:
//
//	http: request body too large: more than max_body_size (33554432 bytes, counted after decompression); 455 lines accepted before the limit
//
// With backpressure on, each chunk first waits for room in the healthy outputs
// (morse.RoomWaiter), and the answer waits until no output's disk buffer holds the write's
// metrics in memory only, its disk full (morse.DiskWaiter); a write that waits longer than
// backpressure_max_wait in all gets 503 with Retry-After, worded the same way. On /api/v2/write, 413 and 503 come in InfluxDB 2's
// shape, {"code":"request too large"|"unavailable","message":"..."}.
package influxdblistener

import (
	"context"
	"crypto/tls"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/listener"
	"github.com/morse-agent/morse/internal/throttle"
	"github.com/morse-agent/morse/plugins/common/tlsserver"
	"github.com/morse-agent/morse/selfstat"
)

// Description is the one-line summary that `morse config` prints above the sample.
const Description = "Accept InfluxDB line protocol over HTTP on InfluxDB's write endpoints"

//go:embed sample.conf
var sampleConfig string

func init() {
	morse.RegisterInput(morse.InputInfo{
		Name:         "influxdb_listener",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Input { return New() },
	})
}

// InfluxDBListener is the inputs.influxdb_listener plugin and its configuration. Build it
// with New, which sets the defaults; the agent calls Init, then Start and Stop.
type InfluxDBListener struct {
	// ServiceAddress is the host:port to listen on.
	ServiceAddress string `toml:"service_address"`
	// ReadTimeout bounds reading a request's headers and its body, and how long an idle
	// keep-alive connection stays open.
	ReadTimeout morse.Duration `toml:"read_timeout"`
	// WriteTimeout bounds handling a request and writing the answer.
	WriteTimeout morse.Duration `toml:"write_timeout"`
	// MaxBodySize is the largest body accepted, counted after decompression.
	MaxBodySize morse.Size `toml:"max_body_size"`
	// MaxLineSize is the longest line accepted; zero means the default, 1 MiB. It bounds the
	// memory of a request: a body is parsed in chunks, and a line longer than a chunk is the
	// only thing that makes the chunk grow.
	MaxLineSize morse.Size `toml:"max_line_size"`
	// MaxConnections caps the open connections. At the cap a new connection takes the slot
	// of the oldest one that has sent no complete request, else of the one idle longest
	// between requests (counted as evicted); only when every connection is serving a
	// request is it closed at once (refused). Zero means no cap.
	MaxConnections int `toml:"max_connections"`
	// DatabaseTag, when set, names a tag that receives the write's database (db, or the
	// database part of bucket).
	DatabaseTag string `toml:"database_tag"`
	// RetentionPolicyTag, when set, names a tag that receives the write's retention policy.
	RetentionPolicyTag string `toml:"retention_policy_tag"`
	// BasicUsername and BasicPassword require HTTP basic auth (or u and p in the query).
	BasicUsername string       `toml:"basic_username"`
	BasicPassword morse.Secret `toml:"basic_password"`
	// Token requires "Authorization: Token <token>".
	Token morse.Secret `toml:"token"`
	// TokenSharedSecret and TokenUsername require a JSON Web Token signed with the secret
	// (HMAC) whose username claim is TokenUsername, as in Telegraf; see checkJWT.
	TokenSharedSecret morse.Secret `toml:"token_shared_secret"`
	TokenUsername     string       `toml:"token_username"`
	// TokenAllowNoExpiration accepts a token without an "exp" claim, as Telegraf does;
	// false, the default, refuses it as InfluxDB 1.x does ("token expiration required").
	TokenAllowNoExpiration bool `toml:"token_allow_no_expiration"`
	// ParserType picks one of Telegraf's two line protocol parsers; morse has one, so it is
	// accepted with a warning.
	ParserType string `toml:"parser_type"`
	// Backpressure makes a write wait, without reading more of its body, while the healthy
	// outputs that the listener feeds are full (morse.RoomWaiter); false never waits.
	Backpressure bool `toml:"backpressure"`
	// BackpressureMaxWait bounds the total wait of one write; past it the answer is 503 with
	// Retry-After. Zero means the default, 4s.
	BackpressureMaxWait morse.Duration `toml:"backpressure_max_wait"`
	// Config, the server TLS keys (tls_cert, tls_key, tls_allowed_cacerts, tls_min_version),
	// turns on HTTPS.
	tlsserver.Config

	log    *slog.Logger
	stats  *selfstat.PluginStats
	tlsCfg *tls.Config
	c      counters
	errLog *throttle.Throttle // rejected lines
	ioLog  *throttle.Throttle // refused connections
	inited bool

	mu    sync.Mutex
	srv   *http.Server
	raw   net.Listener  // the bound socket, for its address
	done  chan struct{} // closed when Serve has returned
	fresh *freshConns
}

// counters are the listener's self-metrics, reported as internal_influxdb_listener. The
// names that Telegraf's listener has are Telegraf's.
type counters struct {
	requests, writes, pings, queries, bytes, lines *selfstat.Counter
	parseErr, tooLarge, tooLong, authFail          *selfstat.Counter
	busy, waitNs                                   *selfstat.Counter
	opened, closed, refused, evicted               *selfstat.Counter
}

// The engine finds these optional interfaces by type assertion; a typo would go unnoticed.
var (
	_ morse.ServiceInput = (*InfluxDBListener)(nil)
	_ morse.Validator    = (*InfluxDBListener)(nil)
	_ morse.Initializer  = (*InfluxDBListener)(nil)
	_ morse.LoggerSetter = (*InfluxDBListener)(nil)
	_ morse.StatsSetter  = (*InfluxDBListener)(nil)
)

// New returns the plugin with its defaults: localhost port 8186, 10 s timeouts, 32 MiB
// bodies, 1 MiB lines, at most 1024 connections, and backpressure for at most 4 s a write.
func New() *InfluxDBListener {
	return &InfluxDBListener{
		ServiceAddress:      "127.0.0.1:8186",
		ReadTimeout:         defaultTimeout,
		WriteTimeout:        defaultTimeout,
		MaxBodySize:         defaultMaxBodySize,
		MaxLineSize:         defaultMaxLineSize,
		MaxConnections:      1024,
		Backpressure:        true,
		BackpressureMaxWait: defaultMaxWait,
	}
}

// SetLogger gives the plugin the engine's logger, which already names the plugin.
func (l *InfluxDBListener) SetLogger(lg *slog.Logger) { l.log = lg }

// SetStats gives the plugin its self-metric counters.
func (l *InfluxDBListener) SetStats(st *selfstat.PluginStats) { l.stats = st }

// Validate checks the options without touching the network or any file.
func (l *InfluxDBListener) Validate() error {
	var errs []error
	if _, _, err := net.SplitHostPort(l.ServiceAddress); err != nil {
		errs = append(errs, morse.Errorf("service_address", "%q is not host:port, like \"127.0.0.1:8186\"", l.ServiceAddress))
	}
	if l.ReadTimeout < 0 {
		errs = append(errs, morse.Errorf("read_timeout", "must not be negative (0 means the default, 10s)"))
	}
	if l.WriteTimeout < 0 {
		errs = append(errs, morse.Errorf("write_timeout", "must not be negative (0 means the default, 10s)"))
	}
	if l.MaxBodySize < 0 {
		errs = append(errs, morse.Errorf("max_body_size", "must not be negative (0 means the default, 32MiB)"))
	}
	if l.MaxLineSize < 0 {
		errs = append(errs, morse.Errorf("max_line_size", "must not be negative (0 means the default, 1MiB)"))
	}
	if l.BackpressureMaxWait < 0 {
		errs = append(errs, morse.Errorf("backpressure_max_wait", "must not be negative (0 means the default, 4s)"))
	}
	if l.MaxConnections < 0 {
		errs = append(errs, morse.Errorf("max_connections", "must not be negative (0 means no cap), got %d", l.MaxConnections))
	}
	if (l.BasicUsername == "") != !l.BasicPassword.IsSet() {
		errs = append(errs, morse.Errorf("basic_username", "basic_username and basic_password must be set together"))
	}
	errs = append(errs, l.validateTokens()...)
	errs = append(errs, l.ValidateTLS())
	return errors.Join(errs...)
}

// The defaults that Telegraf's zero values stand for, and morse's own.
const (
	defaultMaxBodySize = morse.Size(32 << 20)
	defaultTimeout     = morse.Duration(10 * time.Second)
	// defaultMaxLineSize is far above any line a metrics sender writes (a few hundred
	// bytes), and low enough that a thousand connections sending such lines at once hold a
	// gigabyte at most. InfluxDB has no line limit, only its body limit.
	defaultMaxLineSize = morse.Size(1 << 20)
	// defaultMaxWait is below the 5 s timeout of Telegraf's InfluxDB outputs and of most
	// InfluxDB clients, so that a held write gets its 503 and Retry-After before the
	// sender gives up on it and resends it blind; the second left covers sending the body.
	defaultMaxWait = morse.Duration(4 * time.Second)
)

// applyDefaults gives zero values Telegraf's meaning: max_body_size = 0 is 32MiB, and a
// zero read or write timeout is 10s. Telegraf also raises a timeout below one second to
// 10s; morse keeps such a timeout as written. max_line_size and backpressure_max_wait are
// morse's; their zero is their default too.
func (l *InfluxDBListener) applyDefaults() {
	if l.MaxBodySize == 0 {
		l.MaxBodySize = defaultMaxBodySize
	}
	if l.MaxLineSize == 0 {
		l.MaxLineSize = defaultMaxLineSize
	}
	if l.BackpressureMaxWait == 0 {
		l.BackpressureMaxWait = defaultMaxWait
	}
	if l.ReadTimeout == 0 {
		l.ReadTimeout = defaultTimeout
	}
	if l.WriteTimeout == 0 {
		l.WriteTimeout = defaultTimeout
	}
}

// Init checks the options and loads the TLS files, so that a bad certificate stops the
// agent at startup rather than at the first request.
func (l *InfluxDBListener) Init() error {
	if err := l.Validate(); err != nil {
		return err
	}
	l.applyDefaults()
	if l.ParserType != "" {
		lg := l.log
		if lg == nil {
			lg = slog.Default()
		}
		lg.Warn("parser_type has no effect in morse: it has one line protocol parser for what either of Telegraf's parsers reads")
	}
	cfg, err := l.TLSConfig()
	if err != nil {
		return err
	}
	l.tlsCfg = cfg
	l.errLog, l.ioLog = throttle.New(30*time.Second), throttle.New(30*time.Second)
	l.inited = true
	return nil
}

// setup prepares what Start needs when the plugin was built in code without the agent.
func (l *InfluxDBListener) setup() error {
	if !l.inited {
		if err := l.Init(); err != nil {
			return err
		}
	}
	if l.log == nil {
		l.log = slog.Default()
	}
	if l.stats == nil {
		l.stats = selfstat.NewPluginStats(nil, "internal_influxdb_listener", nil)
	}
	c := l.stats.Counter
	l.c = counters{
		requests: c("requests_received"), writes: c("writes_served"), pings: c("pings_served"),
		queries: c("queries_served"), bytes: c("bytes_received"), lines: c("lines_received"),
		parseErr: c("parse_errors"), tooLarge: c("body_too_large"), tooLong: c("lines_too_long"),
		authFail: c("authentication_failures"),
		busy:     c("backpressure_timeouts"), waitNs: c("backpressure_wait_ns"),
		opened: c("connections_opened"), closed: c("connections_closed"), refused: c("connections_refused"),
		evicted: c("connections_evicted"),
	}
	return nil
}

// Start binds the address and serves it until Stop. It returns once the socket is bound.
func (l *InfluxDBListener) Start(_ context.Context, acc morse.Accumulator) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.srv != nil {
		return errors.New("influxdb_listener: already started")
	}
	if err := l.setup(); err != nil {
		return err
	}
	raw, err := net.Listen("tcp", l.ServiceAddress)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", l.ServiceAddress, err)
	}
	ln := listener.Limit(raw, l.MaxConnections,
		listener.ConnCounters{Opened: l.c.opened, Closed: l.c.closed, Refused: l.c.refused, Evicted: l.c.evicted},
		l.logFull)
	if l.tlsCfg != nil {
		// Wrapping the listener, as InfluxDB does, rather than ServeTLS keeps the server on
		// HTTP/1.1, where max_connections bounds the requests in flight.
		ln = tls.NewListener(ln, l.tlsCfg)
	}
	rt := time.Duration(l.ReadTimeout)
	l.fresh = &freshConns{conns: map[net.Conn]struct{}{}}
	l.srv = &http.Server{
		ConnState:         l.fresh.track,
		Handler:           newHandler(l, acc),
		ReadHeaderTimeout: rt,
		ReadTimeout:       rt,
		WriteTimeout:      time.Duration(l.WriteTimeout),
		IdleTimeout:       rt,
		MaxHeaderBytes:    64 << 10,
		// TLS handshake failures and the like are the client's problem: debug level.
		ErrorLog: slog.NewLogLogger(l.log.Handler(), slog.LevelDebug),
	}
	l.raw, l.done = raw, make(chan struct{})
	go l.serve(l.srv, ln, l.done)
	l.log.Info("listening", "address", raw.Addr().String(), "tls", l.tlsCfg != nil)
	return nil
}

// logFull logs, throttled, a connection closed because max_connections was reached.
func (l *InfluxDBListener) logFull(from, evicted net.Addr) {
	if evicted == nil {
		l.ioLog.Log(l.log, slog.LevelWarn, "connection refused: max_connections reached and every connection is serving a request",
			"from", from, "max_connections", l.MaxConnections)
		return
	}
	l.ioLog.Log(l.log, slog.LevelWarn, "max_connections reached: closed the oldest connection without a request to make room",
		"from", from, "closed", evicted, "max_connections", l.MaxConnections)
}

func (l *InfluxDBListener) serve(srv *http.Server, ln net.Listener, done chan struct{}) {
	defer close(done)
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		l.log.Error("serving HTTP failed; the listener stops", "error", err)
	}
}

// shutdownGrace is how long Stop lets requests in flight finish before it closes them.
const shutdownGrace = 5 * time.Second

// Stop stops accepting, lets requests in flight finish for a few seconds, closes every
// connection and returns once the server's goroutines have ended.
func (l *InfluxDBListener) Stop() {
	l.mu.Lock()
	srv, done, fresh := l.srv, l.done, l.fresh
	l.srv, l.raw = nil, nil
	l.mu.Unlock()
	if srv == nil {
		return
	}
	fresh.stop()
	ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		_ = srv.Close()
	}
	<-done
}

// freshConns tracks the connections that have not sent a request yet. http.Server's
// Shutdown waits up to five seconds for such a connection, in case a request is on its way;
// a client that connects and sends nothing would delay every stop by that much. No request
// of theirs has begun, so Stop closes them at once, and any that arrive while it stops.
type freshConns struct {
	mu       sync.Mutex
	conns    map[net.Conn]struct{}
	stopping bool
}

// track is the server's ConnState hook. It also tells max_connections which connections
// may be closed to make room for a new one (listener.HTTPConnState).
func (f *freshConns) track(c net.Conn, state http.ConnState) {
	listener.HTTPConnState(c, state)
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case state != http.StateNew:
		delete(f.conns, c)
	case f.stopping:
		_ = c.Close()
	default:
		f.conns[c] = struct{}{}
	}
}

// stop closes the connections that have not sent a request, and those accepted from now on.
func (f *freshConns) stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopping = true
	for c := range f.conns {
		_ = c.Close()
	}
	clear(f.conns)
}

// Addr is the address the listener is bound to, with the port the system chose for port 0;
// nil when it is not running.
func (l *InfluxDBListener) Addr() net.Addr {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.raw == nil {
		return nil
	}
	return l.raw.Addr()
}

// Gather does nothing: metrics arrive when clients write them.
func (l *InfluxDBListener) Gather(context.Context, morse.Accumulator) error { return nil }
