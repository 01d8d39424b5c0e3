package loadgen

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// MaxDuration caps every run, so that a forgotten load tool stops by itself.
const MaxDuration = 10 * time.Minute

// Transports are the ways the sender can deliver lines.
const (
	TransportHTTP = "http"
	TransportTCP  = "tcp"
	TransportUDP  = "udp"
)

// Config says where, how fast and how much to send.
type Config struct {
	Transport       string        // http, tcp or udp
	Addr            string        // host:port, a loopback address or localhost
	Path            string        // the HTTP path and query, such as /write?db=morse
	Gzip            bool          // compress HTTP bodies
	Rate            float64       // lines per second over all connections; 0 is flat out
	Connections     int           // concurrent connections, each with its own goroutine
	LinesPerRequest int           // lines per HTTP body or TCP write, or per batch of UDP datagrams
	Duration        time.Duration // stop after this long; 0 means MaxDuration
	Lines           int64         // stop after this many lines; 0 means no count limit
	Timeout         time.Duration // one request, dial or write; 0 means 10s
	// BaseTime is the timestamp of sequence number 0; line k is stamped BaseTime+k ns.
	// The zero value means the time the run starts.
	BaseTime time.Time
	// Clock paces the run; nil means the wall clock.
	Clock Clock
	// UDPPayload caps a UDP datagram's size in bytes; a datagram carries whole lines, and a
	// longer line goes alone. 0 means MaxDatagram. Telegraf's InfluxDB output sends 512.
	UDPPayload int
	// SendBuffer sets SO_SNDBUF of each TCP connection (the kernel doubles it); 0 leaves the
	// kernel's autotuning, which lets a connection hold megabytes before a write blocks.
	SendBuffer int
}

// Validate checks the config and fills in defaults. It refuses any address that is not on
// this machine.
func (c *Config) Validate() error {
	var errs []error
	switch c.Transport {
	case TransportHTTP, TransportTCP, TransportUDP:
	default:
		errs = append(errs, fmt.Errorf("transport %q: must be http, tcp or udp", c.Transport))
	}
	addr, err := LoopbackAddr(c.Addr, false)
	if err != nil {
		errs = append(errs, err)
	}
	c.Addr = addr
	if c.Transport == TransportHTTP && !strings.HasPrefix(c.Path, "/") {
		errs = append(errs, fmt.Errorf("path %q: must start with /", c.Path))
	}
	if c.Duration == 0 && c.Lines == 0 {
		errs = append(errs, errors.New("give --duration or --lines (or both): every run is bounded"))
	}
	if c.Duration < 0 || c.Duration > MaxDuration {
		errs = append(errs, fmt.Errorf("duration %s: must be between 0 and %s", c.Duration, MaxDuration))
	}
	if c.Duration == 0 {
		c.Duration = MaxDuration
	}
	if c.Lines < 0 || c.Rate < 0 {
		errs = append(errs, errors.New("lines and rate must not be negative"))
	}
	if c.Connections <= 0 || c.Connections > 1024 {
		errs = append(errs, fmt.Errorf("connections %d: must be between 1 and 1024", c.Connections))
	}
	if c.LinesPerRequest <= 0 || c.LinesPerRequest > 1_000_000 {
		errs = append(errs, fmt.Errorf("lines per request %d: must be between 1 and 1000000", c.LinesPerRequest))
	}
	if c.SendBuffer < 0 {
		errs = append(errs, fmt.Errorf("send buffer %d: must not be negative", c.SendBuffer))
	}
	if c.UDPPayload < 0 || c.UDPPayload > MaxDatagram {
		errs = append(errs, fmt.Errorf("udp payload %d: must be between 1 and %d bytes", c.UDPPayload, MaxDatagram))
	}
	if c.UDPPayload == 0 {
		c.UDPPayload = MaxDatagram
	}
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
	if c.Clock == nil {
		c.Clock = realClock{}
	}
	return errors.Join(errs...)
}

// Report is the outcome of a run.
type Report struct {
	Transport   string  `json:"transport"`
	Addr        string  `json:"addr"`
	Connections int     `json:"connections"`
	Rate        float64 `json:"rate"` // the rate asked for; 0 is flat out
	Stats
	ElapsedSec  float64 `json:"elapsed_sec"`
	LinesPerSec float64 `json:"lines_per_sec"`
	BytesPerSec float64 `json:"bytes_per_sec"`
	// FirstTS and LastTS bound the timestamps of the lines sent, in ns since the epoch.
	FirstTS int64         `json:"first_ts"`
	LastTS  int64         `json:"last_ts"`
	Verify  *VerifyResult `json:"verify,omitempty"`
}

// Run sends lines from pool as cfg says and returns what it sent. It returns when the line
// count or the duration is reached, or ctx ends; it never runs longer than cfg.Duration
// plus one request timeout. cfg must have passed Validate.
func Run(ctx context.Context, cfg Config, pool *Pool) (Report, error) {
	conns, err := dialAll(cfg)
	if err != nil {
		return Report{}, err
	}
	base := cfg.BaseTime
	if base.IsZero() {
		base = time.Now()
	}
	p := newPacer(cfg.Clock, cfg.Rate, cfg.Lines, cfg.Duration)
	stats := make([]Stats, len(conns))
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Go(func() {
			defer c.close()
			sendLoop(ctx, cfg, p, pool, base.UnixNano(), c, &stats[i])
		})
	}
	wg.Wait()
	elapsed := cfg.Clock.Now().Sub(p.start)
	if cfg.Rate > 0 {
		// A paced run lasts until the next line would have been due: the last batch goes
		// out at the start of its slot, and the rate is an average over whole slots.
		elapsed = max(elapsed, time.Duration(float64(p.next)*float64(time.Second)/cfg.Rate))
	}

	rep := Report{Transport: cfg.Transport, Addr: cfg.Addr, Connections: cfg.Connections, Rate: cfg.Rate,
		ElapsedSec: elapsed.Seconds(), FirstTS: base.UnixNano(), LastTS: base.UnixNano() + p.next - 1}
	for i := range stats {
		rep.merge(&stats[i])
	}
	if secs := elapsed.Seconds(); secs > 0 {
		rep.LinesPerSec = float64(rep.Lines) / secs
		rep.BytesPerSec = float64(rep.Bytes) / secs
	}
	return rep, nil
}

// dialAll prepares one conn per connection. TCP dials lazily in send, so that a listener
// that is down shows up as counted errors; UDP "dials" here, which only binds a socket.
func dialAll(cfg Config) ([]conn, error) {
	conns := make([]conn, cfg.Connections)
	tr := newHTTPTransport(cfg.Connections, cfg.Timeout)
	for i := range conns {
		switch cfg.Transport {
		case TransportHTTP:
			conns[i] = newHTTPConn(tr, "http://"+cfg.Addr+cfg.Path, cfg.Timeout, cfg.Gzip, cfg.Clock)
		case TransportTCP:
			conns[i] = &streamConn{addr: cfg.Addr, timeout: cfg.Timeout, sndbuf: cfg.SendBuffer}
		case TransportUDP:
			c, err := newDatagramConn(cfg.Addr, cfg.UDPPayload)
			if err != nil {
				for _, d := range conns[:i] {
					d.close()
				}
				return nil, err
			}
			conns[i] = c
		}
	}
	return conns, nil
}

// sendLoop claims batches from the pacer and sends them until the pacer says the run is over.
func sendLoop(ctx context.Context, cfg Config, p *pacer, pool *Pool, base int64, c conn, st *Stats) {
	var buf []byte
	for {
		seq, n := p.claim(ctx, cfg.LinesPerRequest)
		if n == 0 {
			return
		}
		buf = pool.AppendLines(buf[:0], seq, n, base)
		c.send(ctx, buf, n, st)
	}
}
