// Package churn is the churn soak of `make bench` (make soak-churn, morse-bench churn): the built agent,
// with an InfluxDB listener as its input, processors.cardinality and the InfluxDB output
// writing to a discarding sink, is fed a day's worth of churning identifiers in a few
// minutes of wall time. Time is compressed: the simulated clock runs `equivalent/duration`
// times faster than the wall clock, the metrics carry simulated timestamps, and the guard's
// window is shrunk by the same factor, so that the guard sees what a day of the workload
// would show it. The harness samples the agent's RSS every second and checks that it grows
// by less than 1% between the second and the last tenth of the run, then writes the figures
// as JSON and Markdown and plots them as a PNG.
//
// Usage:
//
//	morse-bench churn --morse bin/morse [--duration 10m] [--equivalent 24h] [--out docs/bench/churn-soak]
package churn

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"
)

// options are the command line's settings.
type options struct {
	morseBin   string
	duration   time.Duration
	equivalent time.Duration
	out        string
	strict     bool
	rewrite    bool
	work       workload
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("morse-bench churn", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.morseBin, "morse", "bin/morse", "the agent binary")
	fs.DurationVar(&o.duration, "duration", 10*time.Minute, "wall time of the run")
	fs.DurationVar(&o.equivalent, "equivalent", 24*time.Hour, "the simulated time the run stands for")
	fs.StringVar(&o.out, "out", "docs/bench/churn-soak", "figures go to OUT.json, OUT.md and OUT.png")
	fs.BoolVar(&o.strict, "strict", false, "exit 1 when the RSS target is missed")
	fs.BoolVar(&o.rewrite, "rewrite", false, "rewrite OUT.md and OUT.png from OUT.json, without running")
	fs.IntVar(&o.work.measurements, "measurements", 4, "measurements")
	fs.IntVar(&o.work.fixed, "fixed", 100, "fixed identifiers per measurement")
	fs.IntVar(&o.work.rotating, "rotating", 100, "rotating identifiers per measurement live at a time")
	fs.IntVar(&o.work.newPerInterval, "new", 50, "new rotating identifiers per measurement and simulated interval")
	fs.DurationVar(&o.work.interval, "interval", 10*time.Second, "simulated time between two rounds of metrics")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if o.duration < 10*time.Second || o.equivalent < o.duration {
		return nil, fmt.Errorf("duration must be at least 10s and at most equivalent")
	}
	return o, nil
}

// Main runs the churn soak with the flags in args and returns the exit status: 2 for flags
// that cannot run, 1 when the soak failed (or, with --strict, missed its RSS target).
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "morse-bench churn:", err)
		return 2
	}
	run := o.run
	if o.rewrite {
		run = func(context.Context, io.Writer) (*report, error) { return readReport(o.out + ".json") }
	}
	rep, err := run(ctx, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "morse-bench churn:", err)
		return 1
	}
	if err := rep.write(o.out); err != nil {
		fmt.Fprintln(stderr, "morse-bench churn:", err)
		return 1
	}
	fmt.Fprint(stdout, rep.markdown())
	if o.strict && !rep.Pass {
		return 1
	}
	return 0
}
