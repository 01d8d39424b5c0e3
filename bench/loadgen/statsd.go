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
