// Package flood is the StatsD flood benchmark (morse-bench flood, make bench-statsd): morse's
// side of docs/bench/statsd.md, where morse's inputs.statsd and Telegraf's stand side by
// side, and the same flood of inputs.syslog. For each scenario it starts the built agent with
// the input on a port chosen free at run time and outputs.file, pinned to one core, floods
// it flat out from the load tool (morse-bench load --format statsd or syslog) pinned to
// another, for a bounded time, and counts exactly what the agent captured: every StatsD line
// is a counter increment of 1, so the sum of the counters the agent wrote is the number of
// lines it took in, and every syslog message is one metric. It reports the lines sent and
// captured, the capture rate, the agent's CPU seconds over the flood (from /proc) and the
// lines captured per CPU second, as JSON and as a Markdown table.
//
// Usage:
//
//	morse-bench flood --morse bin/morse [--duration 5s] [--only NAMES] [--out docs/bench/statsd-latest]
package flood

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/morse-agent/morse/bench/loadgen"
)

// options are the command line's settings.
type options struct {
	morseBin, loadBin   string
	duration            time.Duration
	hosts               int
	only                []string
	out                 string
	agentCore, loadCore int
	keep                bool
}

// scenario is one flood: an input, a transport, how the load tool packs lines, over how many
// connections.
type scenario struct {
	Name            string `json:"name"`
	Input           string `json:"input"`    // statsd or syslog, the input and the load's --format
	Protocol        string `json:"protocol"` // udp or tcp
	Connections     int    `json:"connections"`
	LinesPerRequest int    `json:"lines_per_request"`
	UDPPayload      int    `json:"udp_payload,omitempty"`
}

// scenarios are the floods of docs/bench/statsd.md: one line a datagram (most StatsD
// clients unbuffered), 16 lines in datagrams of at most 512 bytes (the buffered clients'
// usual packing), and TCP over a few connections, where nothing may be lost; then syslog
// messages, octet-counted over TCP as rsyslog forwards them, into inputs.syslog.
func scenarios() []scenario {
	return []scenario{
		{Name: "statsd-udp-1", Input: "statsd", Protocol: "udp", Connections: 1, LinesPerRequest: 1, UDPPayload: 64},
		{Name: "statsd-udp-16", Input: "statsd", Protocol: "udp", Connections: 1, LinesPerRequest: 16, UDPPayload: 512},
		{Name: "statsd-tcp-4", Input: "statsd", Protocol: "tcp", Connections: 4, LinesPerRequest: 100},
		{Name: "syslog-tcp-4", Input: "syslog", Protocol: "tcp", Connections: 4, LinesPerRequest: 100},
	}
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	// On two cores or more the agent and the load tool each get one; on one, neither is
	// pinned.
	agentCore, loadCore := 1, 0
	if runtime.NumCPU() < 2 {
		agentCore, loadCore = -1, -1
	}
	var only string
	fs := flag.NewFlagSet("morse-bench flood", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.morseBin, "morse", "bin/morse", "the agent binary")
	fs.StringVar(&o.loadBin, "load", "", "the morse-bench binary that sends the flood; default: this one")
	fs.DurationVar(&o.duration, "duration", 5*time.Second, "how long each scenario floods")
	fs.IntVar(&o.hosts, "hosts", 1000, "distinct host tags of the flood's counters (50 names each)")
	fs.StringVar(&only, "only", "", "comma-separated scenario names to run; empty runs all")
	fs.StringVar(&o.out, "out", "", "write the figures to OUT.json and OUT.md")
	fs.IntVar(&o.agentCore, "agent-core", agentCore, "CPU core for the agent; -1 does not pin")
	fs.IntVar(&o.loadCore, "load-core", loadCore, "CPU core for the load tool; -1 does not pin")
	fs.BoolVar(&o.keep, "keep", false, "keep the temporary directory with configs, logs and the agent's output")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if o.loadBin == "" {
		self, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("--load: %w", err)
		}
		o.loadBin = self
	}
	var errs []error
	if o.duration <= 0 || o.duration > loadgen.MaxDuration {
		errs = append(errs, fmt.Errorf("--duration %s: must be between 0 and %s", o.duration, loadgen.MaxDuration))
	}
	if o.hosts < 1 {
		errs = append(errs, fmt.Errorf("--hosts %d: must be at least 1", o.hosts))
	}
	if ncpu := runtime.NumCPU(); o.agentCore >= ncpu || o.loadCore >= ncpu {
		errs = append(errs, fmt.Errorf("cores %d and %d: this machine has %d", o.agentCore, o.loadCore, ncpu))
	}
	known := scenarios()
	for name := range strings.SplitSeq(only, ",") {
		if name = strings.TrimSpace(name); name == "" {
			continue
		}
		if !slices.ContainsFunc(known, func(s scenario) bool { return s.Name == name }) {
			errs = append(errs, fmt.Errorf("--only: no scenario %q", name))
		}
		o.only = append(o.only, name)
	}
	return o, errors.Join(errs...)
}

// selected is the scenarios --only picks, all when it is empty.
func (o *options) selected() []scenario {
	all := scenarios()
	if len(o.only) == 0 {
		return all
	}
	return slices.DeleteFunc(all, func(s scenario) bool { return !slices.Contains(o.only, s.Name) })
}

// Main runs the flood benchmark with the flags in args and returns the exit status: 2 for
// flags that cannot run, 1 when a scenario could not be measured.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "morse-bench flood:", err)
		return 2
	}
	rep, err := o.run(ctx, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "morse-bench flood:", err)
		return 1
	}
	if o.out != "" {
		if err := rep.write(o.out); err != nil {
			fmt.Fprintln(stderr, "morse-bench flood:", err)
			return 1
		}
	}
	fmt.Fprint(stdout, rep.markdown())
	for _, r := range rep.Results {
		if r.Error != "" {
			return 1
		}
	}
	return 0
}
