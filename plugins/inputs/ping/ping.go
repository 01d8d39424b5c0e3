// Package ping is the inputs.ping plugin: it sends ICMP echo requests to each configured
// host every interval and reports the round trips, with Telegraf 1.39.3's options,
// measurement, tag and fields.
//
// method = "exec" (Telegraf's default) runs the system's ping (iputils-ping on Debian) and
// parses what it prints; method = "native" sends the echo requests itself through
// github.com/prometheus-community/pro-bing, the library Telegraf uses. The native method
// first opens a raw ICMP socket, which needs CAP_NET_RAW, and falls back to the kernel's
// unprivileged ICMP datagram socket when that is refused, which works when the process's
// group is in net.ipv4.ping_group_range; Telegraf tries the raw socket only.
package ping

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/morse-agent/morse"
)

// Description is the one-line summary that `morse config` prints above the sample.
const Description = "Ping given url(s) and return statistics"

//go:embed sample.conf
var sampleConfig string

// Ping is the inputs.ping plugin and its configuration. Build it with New.
type Ping struct {
	// URLs are the hosts to ping: names or addresses.
	URLs []string `toml:"urls"`
	// Method is "exec" (the default: run the system's ping) or "native".
	Method string `toml:"method"`
	// Count is the number of echo requests per host and gather (ping -c), 1 by default.
	Count int `toml:"count"`
	// PingInterval is the wait between two requests (ping -i). The native method waits at
	// least 200ms, as ping does for a user other than root.
	PingInterval morse.Duration `toml:"ping_interval"`
	// Timeout is the wait for each reply (ping -W), exec method only.
	Timeout morse.Duration `toml:"timeout"`
	// Deadline bounds one host's whole run (ping -w); zero means no bound but the gather's.
	Deadline morse.Duration `toml:"deadline"`
	// Interface is the interface name or source address to send from (ping -I).
	Interface string `toml:"interface"`
	// Percentiles are the percentiles of the round trips to report, native method only.
	Percentiles []int `toml:"percentiles"`
	// Binary is the ping program of the exec method, "ping" by default.
	Binary string `toml:"binary"`
	// Arguments, when set, are passed to Binary as they are, with the host last, in place
	// of the arguments that the other options make.
	Arguments []string `toml:"arguments"`
	// IPv4 and IPv6 restrict the native method's name resolution to one family.
	IPv4 bool `toml:"ipv4"`
	IPv6 bool `toml:"ipv6"`
	// Size is the payload size of the native method's requests, 56 bytes by default.
	Size morse.Size `toml:"size"`

	log *slog.Logger
	// raw records whether the native method's raw socket was refused, so that later
	// gathers go straight to the datagram socket: 0 unknown, 1 raw works, 2 refused.
	raw atomic.Int32
	// forceDatagram makes the native method use the datagram socket only; tests set it.
	forceDatagram bool
	warnOnce      sync.Once
}

// The engine finds these interfaces by type assertion; a typo would go unnoticed.
var (
	_ morse.Input        = (*Ping)(nil)
	_ morse.Validator    = (*Ping)(nil)
	_ morse.LoggerSetter = (*Ping)(nil)
)

// New returns the plugin with Telegraf's defaults.
func New() *Ping {
	return &Ping{
		Method:       "exec",
		Count:        1,
		PingInterval: morse.Duration(time.Second),
		Deadline:     morse.Duration(10 * time.Second),
		Binary:       "ping",
		Size:         56,
	}
}

func init() {
	morse.RegisterInput(morse.InputInfo{
		Name:         "ping",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Input { return New() },
	})
}

// SetLogger gives the plugin the engine's logger, which already names the plugin.
func (p *Ping) SetLogger(l *slog.Logger) { p.log = l }

func (p *Ping) logger() *slog.Logger {
	if p.log == nil {
		return slog.Default()
	}
	return p.log
}

// Validate reports every problem of the options. Telegraf takes a count or size of zero
// or less for its default; so does morse.
func (p *Ping) Validate() error {
	var errs []error
	switch p.Method {
	case "", "exec", "native":
	default:
		errs = append(errs, morse.Errorf("method", "invalid %q: use \"exec\" or \"native\"", p.Method))
	}
	if p.PingInterval < 0 || p.Timeout < 0 || p.Deadline < 0 {
		errs = append(errs, morse.Errorf("ping_interval", "ping_interval, timeout and deadline must not be negative"))
	}
	for _, v := range p.Percentiles {
		if v < 0 || v > 100 {
			errs = append(errs, morse.Errorf("percentiles", "%d is not between 0 and 100", v))
		}
	}
	if p.Size < 0 || p.Size > 65507 {
		errs = append(errs, morse.Errorf("size", "%d bytes is not a valid ICMP payload size", p.Size))
	}
	return errors.Join(errs...)
}

// Init applies Telegraf's defaults to options left at zero, and warns once of an option
// that the chosen method ignores.
func (p *Ping) Init() error {
	if p.Count <= 0 {
		p.Count = 1
	}
	if p.Size <= 0 {
		p.Size = 56
	}
	if p.Method == "" {
		p.Method = "exec"
	}
	if p.Binary == "" {
		p.Binary = "ping"
	}
	if p.Method == "native" && p.Timeout > 0 {
		p.logger().Warn(`"timeout" is ignored when method = "native"; use "deadline" to bound the run`)
	}
	return p.Validate()
}

// Gather pings every host at once and waits for all of them. Each host gives one metric,
// also when it fails: result_code then says why.
func (p *Ping) Gather(ctx context.Context, acc morse.Accumulator) error {
	var wg sync.WaitGroup
	for _, host := range p.URLs {
		wg.Go(func() {
			if p.Method == "native" {
				p.gatherNative(ctx, acc, host)
			} else {
				p.gatherExec(ctx, acc, host)
			}
		})
	}
	wg.Wait()
	return nil
}

// Telegraf's result codes.
const (
	resultSuccess = 0
	resultNoHost  = 1 // also: no reply at all (native)
	resultError   = 2
)

// add reports one host's metric; ping's fields are Telegraf's ints and floats.
func add(acc morse.Accumulator, host string, fields map[string]any) {
	acc.AddFields("ping", fields, map[string]string{"url": host})
}

func msFloat(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// errorf makes the error of one host, as Telegraf words it.
func errorf(host string, err error) error { return fmt.Errorf("host %q: %w", host, err) }
