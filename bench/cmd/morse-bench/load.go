package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"time"

	"github.com/morse-agent/morse/bench/loadgen"
)

// sendOptions are the send command's flags.
type sendOptions struct {
	cfg        loadgen.Config
	gen        loadgen.GenOptions
	json       bool
	verifyURL  string
	db         string
	verifyWait time.Duration
	format     string
}

func parseSendFlags(args []string, stderr io.Writer) (*sendOptions, error) {
	o := &sendOptions{gen: loadgen.DefaultGenOptions}
	fs := flag.NewFlagSet("morse-bench load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: morse-bench load --addr 127.0.0.1:PORT (--lines N | --duration D) [flags]\n\nflags:\n")
		fs.PrintDefaults()
	}
	c := &o.cfg
	fs.StringVar(&c.Transport, "transport", "http", "how to send: http, tcp or udp")
	fs.StringVar(&c.Addr, "addr", "", "where to send, host:port; loopback addresses and localhost only")
	fs.StringVar(&c.Path, "path", "/write?db=morse", "HTTP path and query, such as /write?db=x or /api/v2/write?bucket=x")
	fs.BoolVar(&c.Gzip, "gzip", false, "gzip HTTP bodies")
	fs.Float64Var(&c.Rate, "rate", 0, "lines per second over all connections; 0 sends flat out")
	fs.IntVar(&c.Connections, "connections", 1, "concurrent connections")
	fs.IntVar(&c.LinesPerRequest, "lines-per-request", 1000, "lines per HTTP body or TCP write; for UDP, per batch of datagrams of at most --udp-payload bytes")
	fs.IntVar(&c.UDPPayload, "udp-payload", loadgen.MaxDatagram, "largest UDP datagram in bytes, filled with whole lines (Telegraf's InfluxDB output sends 512)")
	fs.DurationVar(&c.Duration, "duration", 0, fmt.Sprintf("stop after this long (at most %s)", loadgen.MaxDuration))
	fs.Int64Var(&c.Lines, "lines", 0, "stop after this many lines")
	fs.DurationVar(&c.Timeout, "timeout", 10*time.Second, "timeout of one request, dial or write")
	fs.IntVar(&c.SendBuffer, "sndbuf", 0, "SO_SNDBUF of each TCP connection in bytes; 0 leaves the kernel's autotuning")
	fs.IntVar(&o.gen.Hosts, "hosts", o.gen.Hosts, "distinct host tag values")
	fs.Uint64Var(&o.gen.Seed, "seed", o.gen.Seed, "seed of the generated lines")
	fs.IntVar(&o.gen.Lines, "pool", o.gen.Lines, "distinct lines generated before sending; sending cycles through them")
	fs.BoolVar(&o.gen.NoUint, "no-uint", false, "write unsigned fields as integers (for InfluxDB 1.x)")
	fs.StringVar(&o.format, "format", "influx", "what to send: influx (line protocol), statsd (counter increments of 1, for inputs.statsd) or syslog (RFC 5424, octet-counted, over tcp)")
	fs.BoolVar(&o.json, "json", false, "print the report as JSON")
	fs.StringVar(&o.verifyURL, "verify", "", "after sending, count the lines that arrived in the InfluxDB at this URL")
	fs.StringVar(&o.db, "db", "", "the database to verify; default: the db parameter of --path")
	fs.DurationVar(&o.verifyWait, "verify-wait", 30*time.Second, "how long --verify waits for the count to settle")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return nil, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	return o, o.validate()
}

func (o *sendOptions) validate() error {
	err := o.cfg.Validate()
	switch o.format {
	case "influx", "statsd":
	case "syslog":
		if o.cfg.Transport != loadgen.TransportTCP {
			err = errors.Join(err, fmt.Errorf("--format syslog: octet-counted frames go over tcp only, not %s", o.cfg.Transport))
		}
	default:
		err = errors.Join(err, fmt.Errorf("--format %q: use influx, statsd or syslog", o.format))
	}
	if o.verifyURL == "" {
		return err
	}
	if _, uerr := loadgen.LoopbackURL(o.verifyURL); uerr != nil {
		err = errors.Join(err, uerr)
	}
	if o.db == "" {
		if u, perr := url.Parse(o.cfg.Path); perr == nil {
			o.db = u.Query().Get("db")
		}
	}
	if o.db == "" {
		err = errors.Join(err, errors.New("--verify needs --db (or a db parameter in --path)"))
	}
	if o.verifyWait <= 0 || o.verifyWait > loadgen.MaxDuration {
		err = errors.Join(err, fmt.Errorf("--verify-wait %s: must be between 0 and %s", o.verifyWait, loadgen.MaxDuration))
	}
	return err
}

// runLoad sends the load the flags in args describe and reports it.
func runLoad(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseSendFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "morse-bench load: %v\n", err)
		return exitBadArgs
	}
	generate := loadgen.Generate
	switch o.format {
	case "statsd":
		generate = loadgen.GenerateStatsd
	case "syslog":
		generate = loadgen.GenerateSyslog
	}
	pool, err := generate(o.gen)
	if err != nil {
		fmt.Fprintf(stderr, "morse-bench load: %v\n", err)
		return exitBadArgs
	}
	rep, err := loadgen.Run(ctx, o.cfg, pool)
	if err != nil {
		fmt.Fprintf(stderr, "morse-bench load: %v\n", err)
		return exitShort
	}
	code := exitOK
	if rep.FailedLines > 0 {
		code = exitShort
	}
	if o.verifyURL != "" {
		vc := loadgen.VerifyConfig{URL: o.verifyURL, DB: o.db, Wait: o.verifyWait}
		// Lines in failed requests count as sent: a server that refuses a request may
		// still have stored part of it (InfluxDB's partial writes).
		sent := rep.Lines + rep.FailedLines
		res, err := loadgen.Verify(ctx, vc, pool.Measurements(), rep.FirstTS, rep.LastTS, sent)
		if err != nil {
			fmt.Fprintf(stderr, "morse-bench load: verify: %v\n", err)
			code = exitShort
		} else {
			rep.Verify = &res
			if res.Arrived != res.Sent {
				code = exitShort
			}
		}
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
	} else {
		printReport(stdout, &rep)
	}
	return code
}
