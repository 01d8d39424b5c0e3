// Command morse-bench is the load and benchmark tool of the repository, one binary with a
// subcommand each:
//
//	morse-bench load   realistic InfluxDB line protocol sent over HTTP, TCP or UDP to a
//	                   listener on this machine, at a set rate or flat out, for a bounded
//	                   count and time; --verify counts in an InfluxDB how many lines arrived
//	morse-bench sink   a discarding InfluxDB-compatible server that counts what it receives
//	morse-bench e2e    the end-to-end benchmark of make bench: the built agent between the
//	                   load and the sink, each pinned to its own core (bench/e2e)
//	morse-bench matrix issue 13's flow-control matrix (make bench-matrix, bench/e2e)
//	morse-bench churn  the churn soak (make soak-churn, bench/churn)
//	morse-bench vmagent issue 36's benchmarks against vmagent 1.79.5, remote write to
//	                   VictoriaMetrics (make bench-vmagent, bench/e2e)
//	morse-bench expose the scrape targets of morse-bench vmagent: one exposition on many ports
//	morse-bench flood  the StatsD flood: the agent's inputs.statsd flooded over UDP and TCP,
//	                   capture and lines per CPU second (make bench-statsd, bench/flood)
//
// It is for benchmarks and for sizing a deployment, never part of the agent; nothing it
// starts talks to anything but a loopback address.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/morse-agent/morse/bench/churn"
	"github.com/morse-agent/morse/bench/e2e"
	"github.com/morse-agent/morse/bench/flood"
)

// Exit statuses: 2 for a command line that cannot run, 1 when lines failed to send or fewer
// arrived than were sent (load), or a benchmark could not be measured.
const (
	exitOK      = 0
	exitShort   = 1
	exitBadArgs = 2
)

const usage = `usage: morse-bench COMMAND [flags]

commands:
  load     send line protocol to a listener on this machine (morse-bench load -h)
  sink     a discarding InfluxDB-compatible server that counts what it receives
  e2e      the end-to-end benchmark: the agent between load and sink (make bench)
  matrix   the flow-control matrix (make bench-matrix)
  churn    the churn soak: the agent's RSS under a day of churning tags (make soak-churn)
  vmagent  morse against vmagent, line protocol pushed and targets scraped, remote write
           to VictoriaMetrics, CPU per sample (make bench-vmagent)
  expose   serve one Prometheus exposition on many loopback ports (the scrape targets)
  flood    the StatsD flood: inputs.statsd's capture and lines per CPU second (make bench-statsd)
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := realMain(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func realMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitBadArgs
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "load":
		return runLoad(ctx, rest, stdout, stderr)
	case "sink":
		return runSink(ctx, rest, stdout, stderr)
	case "e2e", "matrix":
		return e2e.Main(ctx, cmd, rest, stdout, stderr)
	case "churn":
		return churn.Main(ctx, rest, stdout, stderr)
	case "vmagent":
		return e2e.VMAgentMain(ctx, rest, stdout, stderr)
	case "expose":
		return e2e.ExposeMain(ctx, rest, stdout, stderr)
	case "flood":
		return flood.Main(ctx, rest, stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	fmt.Fprintf(stderr, "morse-bench: unknown command %q\n\n%s", cmd, usage)
	return exitBadArgs
}
