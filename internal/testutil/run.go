package testutil

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
)

// Clock is the time that a case's plugins see. It starts at Start and moves only by the
// case's directives, so that cases with time in them are deterministic.
type Clock struct{ t time.Time }

// Start is where every case's clock starts: 2024-01-01T00:00:00Z.
var Start = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// Now returns the clock's time; plugins take it as their clock function.
func (c *Clock) Now() time.Time { return c.t }

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) { c.t = t }

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) { c.t = c.t.Add(d) }

// The directives of an in section. Each one also ends the batch of lines before it, so that
// in the batch mode the lines between two directives reach a processor in one Apply call.
//
//	# now 2024-01-01T00:10:00Z   sets the clock
//	# advance 10m                moves the clock on
//	# batch                      only ends the batch
//	# push                       (aggregators) Push, then Reset; the output shows "# push"
const (
	dirNow     = "now"
	dirAdvance = "advance"
	dirBatch   = "batch"
	dirPush    = "push"
)

// step is a batch of lines followed by the directive that ended it ("" at the end).
type step struct {
	lines     string
	directive string
	arg       string
}

func steps(t testing.TB, in string) []step {
	t.Helper()
	var out []step
	var b strings.Builder
	for line := range strings.Lines(in) {
		if d, ok := strings.CutPrefix(line, "# "); ok {
			name, arg, _ := strings.Cut(strings.TrimSpace(d), " ")
			switch name {
			case dirNow, dirAdvance, dirBatch, dirPush:
				out = append(out, step{lines: b.String(), directive: name, arg: arg})
				b.Reset()
				continue
			}
		}
		b.WriteString(line)
	}
	return append(out, step{lines: b.String()})
}

// apply carries out a clock directive.
func (s step) apply(t testing.TB, clock *Clock) {
	t.Helper()
	switch s.directive {
	case dirNow:
		tm, err := time.Parse(time.RFC3339Nano, s.arg)
		require.NoError(t, err, "# now needs an RFC 3339 time")
		clock.Set(tm)
	case dirAdvance:
		d, err := time.ParseDuration(s.arg)
		require.NoError(t, err, "# advance needs a duration")
		clock.Advance(d)
	}
}

// processorMode is one way of handing a case's metrics to a processor.
type processorMode struct {
	name   string
	lines  bool // metrics held as their line-protocol text
	single bool // one metric per Apply call
}

var processorModes = []processorMode{
	{name: "batch"},
	{name: "single", single: true},
	{name: "lines", lines: true},
}

// NewProcessor returns a processor with its defaults set, taking its time from clock if it
// needs any. The harness decodes the case's config into it (see Decode).
type NewProcessor func(clock *Clock) morse.Processor

// RunProcessors checks every case in dir. Each case runs three times with a new processor:
// the lines between two directives in one Apply call, one metric per Apply call, and as
// metrics held as line-protocol text. All three must give the out section, so a processor
// cannot depend on how the engine batches metrics or on how they are held.
func RunProcessors(t *testing.T, dir string, newProc NewProcessor) {
	for _, c := range Cases(t, dir) {
		t.Run(c.Name, func(t *testing.T) {
			got := runProcessor(t, c, newProc, processorModes[0])
			c.Check(t, got)
			for _, mode := range processorModes[1:] {
				require.Equal(t, got, runProcessor(t, c, newProc, mode),
					"%s: mode %s gives what the batch mode gives", c.Path, mode.name)
			}
		})
	}
}

func runProcessor(t *testing.T, c Case, newProc NewProcessor, mode processorMode) string {
	clock := &Clock{t: Start}
	p := newProc(clock)
	Decode(t, c.Config, p)
	var out []morse.Metric
	for _, s := range steps(t, c.In) {
		in := Parse(t, s.lines, mode.lines)
		// Metrics are values that share their slices: a processor must never write into
		// the tags or fields it was given. Copies of the input, formatted again after
		// Apply, show whether it did.
		orig := slices.Clone(in)
		before := Format(orig)
		defer func() { require.Equal(t, before, Format(orig), "%s: the input metrics were changed in place", c.Path) }()
		if mode.single {
			for _, m := range in {
				out = append(out, p.Apply([]morse.Metric{m})...)
			}
		} else if len(in) > 0 {
			out = append(out, p.Apply(in)...)
		}
		s.apply(t, clock)
	}
	return Format(out)
}

// NewAggregator returns an aggregator with its defaults set, taking its time from clock if it
// needs any. The harness decodes the case's config into it.
type NewAggregator func(clock *Clock) morse.Aggregator

// RunAggregators checks every case in dir, once with plain metrics and once with metrics
// held as line-protocol text. The metrics go to Add one by one; at each "# push" the
// aggregator pushes to an accumulator that stamps metrics without a time with the clock's
// time, and is reset. The output is what every push added, each push headed by "# push".
func RunAggregators(t *testing.T, dir string, newAgg NewAggregator) {
	for _, c := range Cases(t, dir) {
		t.Run(c.Name, func(t *testing.T) {
			got := runAggregator(t, c, newAgg, false)
			c.Check(t, got)
			require.Equal(t, got, runAggregator(t, c, newAgg, true), "%s: line metrics give what plain ones give", c.Path)
		})
	}
}

func runAggregator(t *testing.T, c Case, newAgg NewAggregator, lines bool) string {
	clock := &Clock{t: Start}
	a := newAgg(clock)
	Decode(t, c.Config, a)
	var b strings.Builder
	for _, s := range steps(t, c.In) {
		in := Parse(t, s.lines, lines)
		orig := slices.Clone(in)
		before := Format(orig)
		for _, m := range in {
			a.Add(m)
		}
		defer func() { require.Equal(t, before, Format(orig), "%s: the input metrics were changed in place", c.Path) }()
		if s.directive == dirPush {
			acc := &Accumulator{Now: clock.Now}
			a.Push(acc)
			a.Reset()
			require.Empty(t, acc.Errors())
			b.WriteString("# push\n")
			b.WriteString(Format(acc.Metrics()))
		}
		s.apply(t, clock)
	}
	return b.String()
}
