package loadgen

import (
	"fmt"
	"math/rand/v2"
)

// GenerateStatsd builds a pool of opts.Lines StatsD counter lines for inputs.statsd's flood:
// "bench.<metric>,host=<host>:1|c", over 50 metric names and opts.Hosts hosts, so that every
// line is an increment of 1 and the sum of the counters a StatsD server reports is the
// number of lines it captured. The pool's lines carry no timestamp (StatsD has none), and
// they are sent as they are.
func GenerateStatsd(opts GenOptions) (*Pool, error) {
	if opts.Lines <= 0 || opts.Lines > maxPoolLines {
		return nil, fmt.Errorf("pool size %d: must be between 1 and %d", opts.Lines, maxPoolLines)
	}
	if opts.Hosts <= 0 {
		return nil, fmt.Errorf("hosts %d: must be at least 1", opts.Hosts)
	}
	rng := rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15))
	p := &Pool{ends: make([]int, 0, opts.Lines), buf: make([]byte, 0, opts.Lines*40), raw: true}
	for range opts.Lines {
		p.buf = fmt.Appendf(p.buf, "bench.m%02d,host=host-%05d:1|c", rng.IntN(50), rng.IntN(opts.Hosts))
		p.ends = append(p.ends, len(p.buf))
	}
	return p, nil
}

// GenerateSyslog builds a pool of opts.Lines RFC 5424 messages for inputs.syslog's flood,
// each framed by octet counting (RFC 6587, the framing Telegraf's syslog input expects by
// default) when sent, so they go over TCP only: a newline would be part of the next frame.
// Every message is one metric to a syslog server, so the metrics it reports are the
// messages it captured.
func GenerateSyslog(opts GenOptions) (*Pool, error) {
	if opts.Lines <= 0 || opts.Lines > maxPoolLines {
		return nil, fmt.Errorf("pool size %d: must be between 1 and %d", opts.Lines, maxPoolLines)
	}
	if opts.Hosts <= 0 {
		return nil, fmt.Errorf("hosts %d: must be at least 1", opts.Hosts)
	}
	rng := rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15))
	p := &Pool{ends: make([]int, 0, opts.Lines), buf: make([]byte, 0, opts.Lines*100), raw: true, octets: true}
	for i := range opts.Lines {
		// Facility and severity vary, structured data is absent, as in most application logs.
		p.buf = fmt.Appendf(p.buf, "<%d>1 2024-05-01T12:00:%02d.%06dZ host-%05d app-%d %d ID%d - request %d served in %d ms",
			rng.IntN(24)*8+rng.IntN(8), i%60, rng.IntN(1_000_000), rng.IntN(opts.Hosts), rng.IntN(8),
			1000+rng.IntN(30000), rng.IntN(100), i, rng.IntN(1000))
		p.ends = append(p.ends, len(p.buf))
	}
	return p, nil
}
