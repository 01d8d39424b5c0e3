// Package health is the outputs.health plugin: an HTTP endpoint that answers 200 while the
// agent is healthy and 503 while it is not, for a container's liveness and readiness probes
// and for load balancers. It has Telegraf 1.39.3's options and meaning: the checks of
// [[outputs.health.compares]] and [[outputs.health.contains]] run on each batch written to
// it, and the endpoint is unhealthy while the last batch failed one of them, or while no
// batch came for max_time_between_metrics. Before the first batch it answers default_status.
//
// It also asks the agent what only the agent knows (morse.EngineWatcher), so that the
// endpoint turns unhealthy while an output has been backing off from its sink for longer
// than unhealthy_after_failing, while an output's buffer holds more than
// unhealthy_above_buffer_fill of its limit, or while a gather or a write is wedged past its
// bound by more than wedged_grace (unhealthy_when_wedged: the check that feeds systemd's
// watchdog). A 503 lists every reason, one a line, after the status text.
package health

import (
	"context"
	"crypto/tls"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/common/tlsserver"
)

//go:embed sample.conf
var sampleConfig string

// Description is the one-line summary shown by `morse config`.
const Description = "Serve an HTTP health endpoint: 503 while checks on the metrics written to it, or the agent's own state, say unhealthy"

func init() {
	morse.RegisterOutput(morse.OutputInfo{
		Name:         "health",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Output { return New() },
	})
}

// Engine is what the health output asks the agent that runs it; the agent hands itself over
// through morse.EngineWatcher, and its methods of these names answer. Each returns one
// line per output or plugin at fault, and nothing while all is well.
type Engine interface {
	// Stuck names the gathers and writes running past their bound plus grace.
	Stuck(now time.Time, grace time.Duration) []string
	// Failing names the outputs whose writes have failed, and been retried, for longer
	// than longer.
	Failing(now time.Time, longer time.Duration) []string
	// Filling names the outputs whose buffers hold more than fill of their limit.
	Filling(fill float64) []string
}

// Health is the outputs.health plugin and its configuration. Build it with New, which sets
// Telegraf's defaults.
type Health struct {
	// ServiceAddress is where to listen: tcp://host:port (tcp4, tcp6), http://host:port,
	// https://host:port (TLS still comes from tls_cert and tls_key, as in Telegraf) or
	// unix:///path/to/socket. Telegraf's default is tcp://:8080.
	ServiceAddress string `toml:"service_address"`
	// ReadTimeout bounds reading a request; WriteTimeout bounds answering it. 5s each.
	ReadTimeout  morse.Duration `toml:"read_timeout"`
	WriteTimeout morse.Duration `toml:"write_timeout"`
	// BasicUsername and BasicPassword, when either is set, require HTTP basic auth (or
	// "Authorization: Token user:password", as Telegraf takes too) with both.
	BasicUsername string       `toml:"basic_username"`
	BasicPassword morse.Secret `toml:"basic_password"`
	// Config, the server TLS keys (tls_cert, tls_key, tls_allowed_cacerts,
	// tls_min_version), turns on HTTPS.
	tlsserver.Config
	// DefaultStatus is the status answered before the first batch is written; 200.
	DefaultStatus int `toml:"default_status"`
	// MaxTimeBetweenMetrics, when positive, makes the endpoint unhealthy once that long has
	// passed since the last batch was written to it (or since it started listening).
	MaxTimeBetweenMetrics morse.Duration `toml:"max_time_between_metrics"`

	// UnhealthyAfterFailing, when positive, makes the endpoint unhealthy while any output's
	// writes have failed, and been retried, for longer than that: its sink is down or
	// refuses it, and the output is backing off. morse's own; 0 (off) by default.
	UnhealthyAfterFailing morse.Duration `toml:"unhealthy_after_failing"`
	// UnhealthyAboveBufferFill, when positive, makes the endpoint unhealthy while any
	// output's buffer holds more than that fraction of its metric_buffer_limit (0.9 is
	// 90%): it is near evicting. morse's own; 0 (off) by default.
	UnhealthyAboveBufferFill float64 `toml:"unhealthy_above_buffer_fill"`
	// UnhealthyWhenWedged makes the endpoint unhealthy while a gather runs past its
	// interval, or a write past its output's timeout, by more than WedgedGrace: the plugin
	// ignores its context and the agent needs a restart. It is the check that feeds
	// systemd's watchdog. morse's own; true by default.
	UnhealthyWhenWedged bool `toml:"unhealthy_when_wedged"`
	// WedgedGrace is how far past its bound a gather or write may run; 30s.
	WedgedGrace morse.Duration `toml:"wedged_grace"`

	// Compares and Contains are the checks run on each batch, Telegraf's tables. TOML puts
	// them at the end of the plugin's table.
	Compares []*Compares `toml:"compares"`
	Contains []*Contains `toml:"contains"`

	now              func() time.Time // the clock; time.Now unless a test sets it
	log              *slog.Logger
	network, address string
	tlsCfg           *tls.Config

	srvMu sync.Mutex // orders Connect and Close
	srv   *http.Server
	ln    net.Listener
	done  chan struct{} // closed when Serve has returned

	mu        sync.Mutex
	engine    Engine
	lastWrite time.Time // of the last batch, or of Connect before the first
	written   bool      // a batch has been written
	failed    error     // the first check the last batch failed; nil if it passed them all
	unhealthy bool      // the last answer was unhealthy: only a change is logged
}

var (
	_ morse.Output         = (*Health)(nil)
	_ morse.Validator      = (*Health)(nil)
	_ morse.Initializer    = (*Health)(nil)
	_ morse.LoggerSetter   = (*Health)(nil)
	_ morse.StartConnector = (*Health)(nil)
	_ morse.EngineWatcher  = (*Health)(nil)
)

// Telegraf's defaults, and morse's for its own options.
const (
	defaultServiceAddress = "tcp://:8080"
	defaultTimeout        = morse.Duration(5 * time.Second)
	defaultWedgedGrace    = morse.Duration(30 * time.Second)
	// shutdownGrace is how long Close lets an answer in flight finish.
	shutdownGrace = 5 * time.Second
)

// New returns the plugin with its defaults.
func New() *Health {
	return &Health{
		ServiceAddress: defaultServiceAddress,
		ReadTimeout:    defaultTimeout, WriteTimeout: defaultTimeout,
		DefaultStatus:       http.StatusOK,
		UnhealthyWhenWedged: true, WedgedGrace: defaultWedgedGrace,
	}
}

// SetLogger gives the plugin its logger.
func (h *Health) SetLogger(l *slog.Logger) { h.log = l }

// WatchEngine takes the agent, which the engine's own checks ask.
func (h *Health) WatchEngine(engine any) {
	e, _ := engine.(Engine)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.engine = e
}

// ConnectsAtStart reports true: the endpoint listens from the start, whether or not
// metrics come.
func (h *Health) ConnectsAtStart() bool { return true }

// Validate checks the options without touching the network or any file, and reports
// every problem.
func (h *Health) Validate() error {
	var errs []error
	if _, _, err := parseAddress(h.ServiceAddress); err != nil {
		errs = append(errs, morse.Errorf("service_address", "%v", err))
	}
	for key, d := range map[string]morse.Duration{"read_timeout": h.ReadTimeout, "write_timeout": h.WriteTimeout,
		"max_time_between_metrics": h.MaxTimeBetweenMetrics, "unhealthy_after_failing": h.UnhealthyAfterFailing,
		"wedged_grace": h.WedgedGrace} {
		if d < 0 {
			errs = append(errs, morse.Errorf(key, "must not be negative, got %s", d))
		}
	}
	if h.DefaultStatus != 0 && http.StatusText(h.DefaultStatus) == "" {
		errs = append(errs, morse.Errorf("default_status", "%d is not an HTTP status code", h.DefaultStatus))
	}
	if f := h.UnhealthyAboveBufferFill; f < 0 || f > 1 {
		errs = append(errs, morse.Errorf("unhealthy_above_buffer_fill", "is a fraction of the buffer limit, from 0 (off) to 1, got %g", f))
	}
	for i, c := range h.Compares {
		errs = append(errs, c.validate(i))
	}
	for i, c := range h.Contains {
		errs = append(errs, c.validate(i))
	}
	errs = append(errs, h.ValidateTLS())
	return errors.Join(errs...)
}

// parseAddress reads service_address as Telegraf does: the scheme picks the network.
func parseAddress(addr string) (network, address string, err error) {
	u, err := url.Parse(addr)
	if err != nil {
		return "", "", fmt.Errorf("%q is not an address like \"tcp://:8080\": %w", addr, err)
	}
	switch u.Scheme {
	case "http", "https", "tcp", "tcp4", "tcp6":
		network = u.Scheme
		if network == "http" || network == "https" {
			network = "tcp"
		}
		if _, _, err := net.SplitHostPort(u.Host); err != nil {
			return "", "", fmt.Errorf("%q has no host:port, like \"tcp://:8080\"", addr)
		}
		return network, u.Host, nil
	case "unix":
		if u.Path == "" {
			return "", "", fmt.Errorf("%q has no socket path, like \"unix:///run/morse-health.sock\"", addr)
		}
		return "unix", u.Path, nil
	}
	return "", "", fmt.Errorf("%q: the scheme must be tcp, tcp4, tcp6, http, https or unix", addr)
}

// Init checks the options and loads the TLS files, so that a bad certificate stops the
// agent at startup.
func (h *Health) Init() error {
	if err := h.Validate(); err != nil {
		return err
	}
	h.network, h.address, _ = parseAddress(h.ServiceAddress)
	if h.DefaultStatus == 0 {
		h.DefaultStatus = http.StatusOK
	}
	cfg, err := h.TLSConfig()
	if err != nil {
		return err
	}
	h.tlsCfg = cfg
	if h.now == nil {
		h.now = time.Now
	}
	if h.log == nil {
		h.log = slog.Default()
	}
	return nil
}

// Connect starts listening, unless it already does. A cancelled context starts nothing.
func (h *Health) Connect(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if h.now == nil {
		if err := h.Init(); err != nil {
			return err
		}
	}
	h.srvMu.Lock()
	defer h.srvMu.Unlock()
	if h.srv != nil {
		return nil
	}
	ln, err := net.Listen(h.network, h.address)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", h.ServiceAddress, err)
	}
	h.ln = ln
	if h.tlsCfg != nil {
		ln = tls.NewListener(ln, h.tlsCfg)
	}
	rt := time.Duration(h.ReadTimeout)
	h.srv = &http.Server{
		Handler:           h.authorize(http.HandlerFunc(h.serveHTTP)),
		ReadHeaderTimeout: rt, ReadTimeout: rt, IdleTimeout: rt,
		WriteTimeout:   time.Duration(h.WriteTimeout),
		MaxHeaderBytes: 16 << 10,
		// TLS handshake failures and the like are the client's problem: debug level.
		ErrorLog: slog.NewLogLogger(h.log.Handler(), slog.LevelDebug),
	}
	h.mu.Lock()
	h.lastWrite = h.now() // max_time_between_metrics counts from here until a batch comes
	if h.engine == nil && (h.UnhealthyAfterFailing > 0 || h.UnhealthyAboveBufferFill > 0) {
		h.log.Warn("unhealthy_after_failing and unhealthy_above_buffer_fill have no effect: this output runs outside an agent")
	}
	h.mu.Unlock()
	h.done = make(chan struct{})
	go h.serve(h.srv, ln, h.done)
	h.log.Info("listening", "address", h.ln.Addr().String(), "tls", h.tlsCfg != nil)
	return nil
}

func (h *Health) serve(srv *http.Server, ln net.Listener, done chan struct{}) {
	defer close(done)
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		h.log.Error("serving the health endpoint failed; it stops", "error", err)
	}
}

// Addr is the address the endpoint listens on, with the port the system chose for port 0;
// nil when it does not listen.
func (h *Health) Addr() net.Addr {
	h.srvMu.Lock()
	defer h.srvMu.Unlock()
	if h.srv == nil {
		return nil
	}
	return h.ln.Addr()
}

// Write runs the checks on batch; the endpoint answers by their result until the next.
func (h *Health) Write(_ context.Context, batch []morse.Metric) error {
	var failed error
	for _, c := range h.Compares {
		if failed = c.check(batch); failed != nil {
			break
		}
	}
	for _, c := range h.Contains {
		if failed != nil {
			break
		}
		failed = c.check(batch)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lastWrite, h.written, h.failed = h.now(), true, failed
	return nil
}

// Close stops listening, letting an answer in flight finish.
func (h *Health) Close() error {
	h.srvMu.Lock()
	defer h.srvMu.Unlock()
	if h.srv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	err := h.srv.Shutdown(ctx)
	if err != nil {
		err = errors.Join(err, h.srv.Close())
	}
	<-h.done
	h.srv, h.ln = nil, nil
	return err
}
