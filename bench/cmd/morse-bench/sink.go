package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/morse-agent/morse/bench/loadgen"
)

// maxSinkLifetime caps how long a sink runs, so that one a script forgot still stops.
const maxSinkLifetime = 24 * time.Hour

// runSink serves a discarding sink. It prints the bound address as the first line of stdout,
// so that a script can start it on port 0 and read where it listens, and prints its final
// counters as JSON when it stops.
func runSink(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("morse-bench sink", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:0", "where to listen; loopback only, port 0 picks a free port")
	parse := fs.Bool("parse", false, "parse every body and count metrics and refused lines, instead of counting newlines")
	distinct := fs.Bool("distinct", false, "count distinct lines and duplicates by their timestamps, which morse-bench load makes unique")
	pace := fs.Float64("lines-per-sec", 0, "answer no faster than this many lines a second, as a slow database does; 0 answers at once")
	lifetime := fs.Duration("lifetime", time.Hour, fmt.Sprintf("stop after this long (at most %s)", maxSinkLifetime))
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitBadArgs
	}
	if fs.NArg() > 0 || *lifetime <= 0 || *lifetime > maxSinkLifetime || *pace < 0 {
		fmt.Fprintf(stderr, "morse-bench sink: give no arguments, a --lifetime between 0 and %s and a --lines-per-sec of at least 0\n", maxSinkLifetime)
		return exitBadArgs
	}
	ctx, cancel := context.WithTimeout(ctx, *lifetime)
	defer cancel()
	s := &loadgen.Sink{Parse: *parse, Distinct: *distinct, LinesPerSec: *pace}
	// os.Stdout is unbuffered, so the address reaches a reading script at once.
	err := loadgen.ServeSink(ctx, *addr, s, func(a net.Addr) { fmt.Fprintln(stdout, a.String()) })
	if err != nil {
		fmt.Fprintf(stderr, "morse-bench sink: %v\n", err)
		return exitBadArgs
	}
	_ = json.NewEncoder(stdout).Encode(s.Stats())
	return exitOK
}
