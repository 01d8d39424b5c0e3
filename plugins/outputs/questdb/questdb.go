// Package questdb is a QuestDB output: it writes metrics as InfluxDB line protocol (ILP) to
// QuestDB over HTTP (/write) or TCP, configured in QuestDB's own client style.
//
// A measurement is a table, tags are SYMBOL columns, and fields are LONG (integers, and
// unsigned integers within the int64 range), DOUBLE, VARCHAR and BOOLEAN columns; the
// metric's time is the designated timestamp. What QuestDB cannot take is refused by the
// rules in validate.go, each metric counted as dropped, never silently changed.
//
// Over HTTP, QuestDB commits a request as one transaction only when it touches one table,
// and refuses the whole request when one line is bad, naming that line. So each batch is
// sent as one request per table, and a refused line is taken out and the rest of its
// request sent again (see httpwrite.go). Over TCP, QuestDB answers nothing and closes the
// connection on an error; the output keeps the last batch it wrote until it knows the
// connection survived it, and sends it again after a reconnect (see tcpwrite.go).
//
// QuestDB's official Go client (github.com/questdb/go-questdb-client) is not used: it
// builds rows column by column through its own buffer and flushes on its own schedule,
// while this output needs the line text of each metric, the metric a refused line came
// from, and the agent's batching and retry rules.
package questdb

import (
	"context"
	_ "embed"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/freelist"
	"github.com/morse-agent/morse/plugins/common/tlsclient"
	"github.com/morse-agent/morse/plugins/serializers/influx"
)

//go:embed sample.conf
var sampleConfig string

// Description is the one-line summary shown by `morse config`.
const Description = "Write metrics to QuestDB over ILP, by HTTP or TCP"

func init() {
	morse.RegisterOutput(morse.OutputInfo{
		Name:         "questdb",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Output { return New() },
	})
}

// DefaultTCPConfirmDelay is how long the connection must outlive a batch written over TCP
// before the output takes the batch as stored; see QuestDB.TCPConfirmDelay. QuestDB 9.1.0
// was seen to take up to 250 ms to close the connection after a bad line, and to lose on a
// graceful restart the rows it had read over TCP in the last 300 to 600 ms, which it had
// not yet committed.
const DefaultTCPConfirmDelay = 2 * time.Second

// QuestDB writes batches of metrics to QuestDB. Build one with New, set fields, then
// Connect; the agent does the same from a config file.
type QuestDB struct {
	// Conf is a QuestDB client configuration string, such as
	// "http::addr=localhost:9000;username=admin;password=quest;". It replaces Addr,
	// Protocol, Username, Password and Token. It is a secret because it may hold a password.
	Conf morse.Secret `toml:"conf"`
	// Addr is host:port; localhost:9000 for HTTP and localhost:9009 for TCP by default.
	Addr string `toml:"addr"`
	// Protocol is "http" (the default) or "tcp"; "https" and "tcps" speak TLS.
	Protocol string `toml:"protocol"`
	// Username and Password are HTTP basic authentication. Over TCP, Username is the key id
	// and Token the private key (base64url) of QuestDB's challenge-response login.
	Username string       `toml:"username"`
	Password morse.Secret `toml:"password"`
	// Token is an HTTP bearer token (QuestDB Enterprise), or the TCP private key.
	Token morse.Secret `toml:"token"`
	// Timeout bounds one request (HTTP) or one write (TCP), plus one second for every
	// MinThroughput bytes of it, as QuestDB's clients do.
	Timeout       morse.Duration `toml:"timeout"`
	MinThroughput morse.Size     `toml:"request_min_throughput"`
	// MaxNameLen is the server's cairo.max.file.name.length: longer names are refused.
	MaxNameLen int `toml:"max_name_len"`
	// TCPConfirmDelay: over TCP a batch counts as stored once the server has acknowledged
	// its bytes and kept the connection open for this long after it; until then it is kept
	// and sent again if the connection turns out closed (see tcpwrite.go). 0 takes a batch
	// as stored once its bytes are acknowledged.
	TCPConfirmDelay morse.Duration `toml:"tcp_confirm_delay"`
	// TCPUnconfirmedBatches is how many batches may be written over TCP before the oldest
	// is confirmed; it is also the most that a reconnect sends again, so the most that
	// QuestDB may store twice. 1 by default.
	TCPUnconfirmedBatches int `toml:"tcp_unconfirmed_batches"`
	// UserAgent is sent with every HTTP request.
	UserAgent string `toml:"user_agent"`
	tlsclient.Config

	log *slog.Logger

	mu     sync.Mutex // guards setup and closed
	set    settings
	ser    *influx.Serializer
	client *http.Client
	url    string
	tcp    *tcpSender
	closed bool

	// scratch keeps the buffers of the writes in flight for the writes after them: one set
	// per write in flight (at most httpConcurrentWrites, freelist.DefaultMax), however many
	// collections pass.
	scratch freelist.List[scratch]
}

// New returns an output with QuestDB's client defaults.
func New() *QuestDB {
	return &QuestDB{
		Timeout:               morse.Duration(DefaultTimeout),
		MinThroughput:         DefaultMinThroughput,
		MaxNameLen:            DefaultMaxNameLen,
		TCPConfirmDelay:       morse.Duration(DefaultTCPConfirmDelay),
		TCPUnconfirmedBatches: 1,
		UserAgent:             "morse",
	}
}

var (
	_ morse.Output           = (*QuestDB)(nil)
	_ morse.Validator        = (*QuestDB)(nil)
	_ morse.Initializer      = (*QuestDB)(nil)
	_ morse.LoggerSetter     = (*QuestDB)(nil)
	_ morse.LineWriter       = (*QuestDB)(nil)
	_ morse.ConcurrentWriter = (*QuestDB)(nil)
)

// SetLogger gives the output the engine's logger.
func (o *QuestDB) SetLogger(l *slog.Logger) { o.log = l }

func (o *QuestDB) logger() *slog.Logger {
	if o.log == nil {
		return slog.Default().With("output", "questdb")
	}
	return o.log
}

// WritesLines tells the agent that line metrics may arrive as their text: the output
// checks and writes the text without expanding it.
func (o *QuestDB) WritesLines() bool { return true }

// httpConcurrentWrites is how many writes may be in flight over HTTP.
const httpConcurrentWrites = 4

// MaxConcurrentWrites is 4 over HTTP, where each write has its own buffers and requests, and
// 1 over TCP, where batches share one connection and must go in order.
func (o *QuestDB) MaxConcurrentWrites() int {
	if s, err := o.resolve(); err == nil && !s.http {
		return 1
	}
	return httpConcurrentWrites
}

// Validate checks the options after decoding.
func (o *QuestDB) Validate() error {
	var errs []error
	if s, err := o.resolve(); err != nil {
		errs = append(errs, err)
	} else {
		if !s.tls && o.Config.Configured() {
			errs = append(errs, morse.Errorf("protocol", "tls_* options need protocol \"https\" or \"tcps\""))
		}
		// A write over TCP waits for the batch before it to be confirmed, within the timeout.
		if !s.http && s.timeout > 0 && time.Duration(o.TCPConfirmDelay) >= s.timeout {
			errs = append(errs, morse.Errorf("tcp_confirm_delay", "must be shorter than the timeout (%s), within which a write over TCP waits for it", s.timeout))
		}
	}
	if o.Timeout < 0 {
		errs = append(errs, morse.Errorf("timeout", "must not be negative, got %s", o.Timeout))
	}
	if o.MinThroughput < 0 {
		errs = append(errs, morse.Errorf("request_min_throughput", "must not be negative"))
	}
	if o.MaxNameLen < 0 {
		errs = append(errs, morse.Errorf("max_name_len", "must not be negative"))
	}
	if o.TCPConfirmDelay < 0 {
		errs = append(errs, morse.Errorf("tcp_confirm_delay", "must not be negative"))
	}
	if o.TCPUnconfirmedBatches < 0 {
		errs = append(errs, morse.Errorf("tcp_unconfirmed_batches", "must not be negative (0 means 1)"))
	}
	errs = append(errs, o.Config.Validate())
	return errors.Join(errs...)
}

// Init builds the clients, so that a TLS file that cannot be read stops the agent at start.
func (o *QuestDB) Init() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.setup()
}

// Connect prepares the output. Over TCP it also dials, so that a wrong address shows at
// start; a server that is down is not an error here, the first write dials again.
func (o *QuestDB) Connect(ctx context.Context) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.setup(); err != nil {
		return err
	}
	if o.tcp != nil {
		if err := o.tcp.connect(ctx); err != nil {
			o.logger().Warn("QuestDB is not reachable yet; the first write will dial again", "addr", o.set.addr, "error", err)
		}
	}
	return nil
}

// setup resolves the settings and builds the sender; o.mu is held.
func (o *QuestDB) setup() error {
	if err := o.Validate(); err != nil {
		return err
	}
	s, _ := o.resolve() // Validate has checked it
	if s.timeout <= 0 {
		s.timeout = DefaultTimeout
	}
	if s.maxNameLen <= 0 {
		s.maxNameLen = DefaultMaxNameLen
	}
	if err := o.closeSenders(); err != nil {
		o.logger().Error("questdb: connecting again lost what the last connection kept", "error", err)
	}
	o.set, o.closed = s, false
	// QuestDB takes every backslash as an escape, where InfluxDB does not.
	o.ser = influx.New(influx.Options{BackslashEscapes: true})
	tlsCfg, err := o.tlsConfig(s)
	if err != nil {
		return err
	}
	if s.http {
		return o.setupHTTP(s, tlsCfg)
	}
	o.tcp = newTCPSender(s, tlsCfg, time.Duration(o.TCPConfirmDelay), o.TCPUnconfirmedBatches, o.logger())
	return nil
}

// Write sends the batch. It returns nil when every metric was stored, a
// *morse.PartialWriteError when some were refused for good, an error wrapping a
// *morse.PermanentError when all were, and a retryable error otherwise. The metrics refused
// are listed, by their index in batch, in a LineErrors inside the error.
func (o *QuestDB) Write(ctx context.Context, batch []morse.Metric) error {
	o.mu.Lock()
	if o.ser == nil {
		if err := o.setup(); err != nil {
			o.mu.Unlock()
			return err
		}
	}
	closed, tcp := o.closed, o.tcp
	o.mu.Unlock()
	if closed {
		return errClosed
	}
	if len(batch) == 0 {
		return nil
	}
	s := o.getScratch()
	defer o.putScratch(s)
	s.reset()
	if tcp != nil {
		return o.writeTCP(ctx, tcp, s, batch)
	}
	return o.writeHTTP(ctx, s, batch)
}

// Close sends what TCP still holds unconfirmed and releases the connections.
func (o *QuestDB) Close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closed = true
	return o.closeSenders()
}

func (o *QuestDB) closeSenders() error {
	var err error
	if o.tcp != nil {
		err = o.tcp.close()
		o.tcp = nil
	}
	if o.client != nil {
		o.client.CloseIdleConnections()
	}
	return err
}
