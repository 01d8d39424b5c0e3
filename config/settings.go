package config

import (
	"time"

	"github.com/morse-agent/morse"
)

// The effective settings of a plugin are computed by the functions of this file from its
// Common options over the [agent] table, and only there: the file loader calls them to
// place each problem on its line, and Config.Resolve calls them for every config, a file's
// or one built in code, so that a setting means the same wherever it was written.

// inputInterval is an input's effective gather interval under a, with the problems of its
// interval, jitter, offset and precision options, each keyed by the option's name.
func inputInterval(c InputCommon, a AgentConfig) (time.Duration, []problem) {
	var probs []problem
	interval := time.Duration(a.Interval)
	jitter, jitterKey := a.CollectionJitter, ", from [agent]"
	if c.CollectionJitter != nil {
		jitter, jitterKey = *c.CollectionJitter, ""
	}
	if c.Interval > 0 {
		interval = time.Duration(c.Interval)
	}
	switch {
	case c.Interval < 0:
		probs = append(probs, problem{"interval", "must not be negative, got " + c.Interval.String()})
	case jitter < 0:
		probs = append(probs, problem{"collection_jitter", "must not be negative, got " + jitter.String()})
	case c.Interval > 0 && jitter >= c.Interval:
		probs = append(probs, problem{"interval", c.Interval.String() +
			" must be greater than collection_jitter (" + jitter.String() + jitterKey + ")"})
	case c.Interval <= 0 && c.CollectionJitter != nil && jitter >= a.Interval:
		probs = append(probs, problem{"collection_jitter", jitter.String() +
			" must be smaller than interval (" + a.Interval.String() + ", from [agent])"})
	}
	for _, d := range []struct {
		key string
		v   morse.Duration
	}{{"collection_offset", c.CollectionOffset}, {"precision", c.Precision}} {
		if d.v < 0 {
			probs = append(probs, problem{d.key, "must not be negative, got " + d.v.String()})
		}
	}
	return interval, probs
}

// outputSettings are an output's effective flush and buffer settings under a, with the
// problems of its options. A problem between two options is placed on the one the output
// sets, and says when the other comes from [agent].
func outputSettings(c OutputCommon, a AgentConfig) (OutputSettings, []problem) {
	probs := negativeOutputOptions(c)
	probs = append(probs, c.BufferConfig.Over(a.BufferConfig).problems()...)
	bad := func(key, msg string) { probs = append(probs, problem{key, msg}) }
	s := OutputSettings{
		FlushInterval: time.Duration(a.FlushInterval), FlushJitter: time.Duration(a.FlushJitter),
		BatchSize: a.MetricBatchSize, BufferLimit: a.MetricBufferLimit,
	}
	hasInterval, hasJitter := c.FlushInterval > 0, c.FlushJitter != nil && *c.FlushJitter >= 0
	hasBatch, hasBuffer := c.MetricBatchSize > 0, c.MetricBufferLimit > 0
	if hasInterval {
		s.FlushInterval = time.Duration(c.FlushInterval)
	}
	if hasJitter {
		s.FlushJitter = time.Duration(*c.FlushJitter)
	}
	if hasBatch {
		s.BatchSize = c.MetricBatchSize
	}
	if hasBuffer {
		s.BufferLimit = c.MetricBufferLimit
	}
	if (hasInterval || hasJitter) && s.FlushJitter >= s.FlushInterval {
		if hasJitter {
			bad("flush_jitter", s.FlushJitter.String()+" must be smaller than flush_interval ("+
				s.FlushInterval.String()+fromAgent(!hasInterval)+")")
		} else {
			bad("flush_interval", s.FlushInterval.String()+" must be greater than flush_jitter ("+
				s.FlushJitter.String()+fromAgent(true)+")")
		}
	}
	if (hasBatch || hasBuffer) && s.BufferLimit < s.BatchSize {
		if hasBuffer {
			bad("metric_buffer_limit", itoa(s.BufferLimit)+" must be at least metric_batch_size ("+
				itoa(s.BatchSize)+fromAgent(!hasBatch)+")")
		} else {
			bad("metric_batch_size", itoa(s.BatchSize)+" must not exceed metric_buffer_limit ("+
				itoa(s.BufferLimit)+fromAgent(true)+")")
		}
	}
	return s, probs
}

// negativeOutputOptions reports the options that must not be negative. A negative value then
// inherits the agent's, so that the checks between options do not repeat the problem.
func negativeOutputOptions(c OutputCommon) []problem {
	var probs []problem
	jitter := morse.Duration(0)
	if c.FlushJitter != nil {
		jitter = *c.FlushJitter
	}
	for _, d := range []struct {
		key string
		v   morse.Duration
	}{{"flush_interval", c.FlushInterval}, {"flush_jitter", jitter}, {"retry_max_age", c.RetryMaxAge},
		{"unauthorized_retry_max_age", c.UnauthorizedRetryMaxAge}} {
		if d.v < 0 {
			probs = append(probs, problem{d.key, "must not be negative, got " + d.v.String()})
		}
	}
	for _, n := range []struct {
		key string
		v   int
	}{{"metric_batch_size", c.MetricBatchSize}, {"metric_buffer_limit", c.MetricBufferLimit}, {"dead_letter_max_size", int(c.DeadLetterMaxSize)}} {
		if n.v < 0 {
			probs = append(probs, problem{n.key, "must not be negative, got " + itoa(n.v)})
		}
	}
	return probs
}

// aggregatorWindow reports the problems of an aggregator's window options, each keyed by
// the option's name: a period that is not positive would push without end, a negative delay
// would push a window before it ends, and a negative grace would refuse the window's start.
func aggregatorWindow(c AggregatorCommon) []problem {
	var probs []problem
	if c.Period <= 0 {
		probs = append(probs, problem{"period", "must be positive, got " + c.Period.String()})
	}
	for _, d := range []struct {
		key string
		v   morse.Duration
	}{{"delay", c.Delay}, {"grace", c.Grace}} {
		if d.v < 0 {
			probs = append(probs, problem{d.key, "must not be negative, got " + d.v.String()})
		}
	}
	return probs
}

// resolveInput computes the effective gather interval and checks it against [agent].
func (p *Plugin) resolveInput(a AgentConfig) []problem {
	var probs []problem
	p.Interval, probs = inputInterval(p.Input, a)
	return probs
}

// resolveOutput computes the effective flush and buffer settings and checks the rules between
// them, placing each problem on a key that the output's table sets.
func (p *Plugin) resolveOutput(a AgentConfig) []problem {
	var probs []problem
	p.Settings, probs = outputSettings(p.Output, a)
	return probs
}
