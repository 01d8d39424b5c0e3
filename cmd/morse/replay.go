package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/batch"
	"github.com/morse-agent/morse/config"
	"github.com/morse-agent/morse/plugins/parsers/influx"
)

// replay is `morse replay --config FILE --output NAME DEADLETTERFILE`: it sends the metrics
// of a dead-letter file again through that output's full pipeline (batching, retries,
// classification, isolation of bad metrics) and reports how many were written, dropped
// again (with their reasons) or left unsent. It does not dead-letter what is dropped again:
// the file it reads stays as it was.
func replay(args []string, stdout, stderr io.Writer) int {
	var configs, dirs []string
	var output string
	var timeout time.Duration
	fs := flag.NewFlagSet("morse replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Var((*listFlag)(&configs), "config", "config `file` (repeatable)")
	fs.Var((*listFlag)(&dirs), "config-directory", "`directory` whose *.conf files are merged (repeatable)")
	fs.StringVar(&output, "output", "", "the output, by its alias or plugin `name`")
	fs.DurationVar(&timeout, "timeout", time.Minute, "how long to keep retrying what the sink does not take")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: morse replay --config FILE --output NAME DEADLETTERFILE\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return exitBadArgs
	}
	if fs.NArg() != 1 || output == "" {
		fs.Usage()
		return exitBadArgs
	}
	cfg, err := config.Load(config.Options{Files: configs, Dirs: dirs})
	if err != nil {
		fmt.Fprintf(stderr, "morse: the config has problems:\n%v\n", err)
		return exitBadArgs
	}
	oc, err := findOutput(cfg, output)
	if err != nil {
		fmt.Fprintf(stderr, "morse replay: %v\n", err)
		return exitBadArgs
	}
	logger, closeLog, err := newLogger(cfg.Agent, false, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "morse: %v\n", err)
		return exitBadArgs
	}
	defer closeLog()
	st, err := replayFile(fs.Arg(0), oc, timeout, logger)
	if err != nil {
		fmt.Fprintf(stderr, "morse replay: %v\n", err)
	}
	fmt.Fprintf(stdout, "replayed %d metrics to outputs.%s: %d written, %d dropped again %v, %d left unsent\n",
		st.Added, oc.Name, st.Written, st.Dropped-unsent(st.DroppedByReason), withoutShutdown(st.DroppedByReason),
		unsent(st.DroppedByReason))
	if err != nil || st.Dropped > 0 {
		return exitFailed
	}
	return exitOK
}

// findOutput picks the output named by alias first, then by plugin name, refusing a name
// that several outputs share.
func findOutput(cfg *config.Config, name string) (*config.OutputConfig, error) {
	var byName []*config.OutputConfig
	for _, oc := range cfg.Outputs {
		if oc.Common.Alias == name {
			return oc, nil
		}
		if oc.Name == name {
			byName = append(byName, oc)
		}
	}
	switch len(byName) {
	case 0:
		return nil, fmt.Errorf("no output %q in the config", name)
	case 1:
		return byName[0], nil
	}
	return nil, fmt.Errorf("%d outputs are named %q: give the alias of one", len(byName), name)
}

// replayFile writes the metrics of the dead-letter file at path through oc's pipeline.
func replayFile(path string, oc *config.OutputConfig, timeout time.Duration, logger *slog.Logger) (batch.Stats, error) {
	f, err := os.Open(path)
	if err != nil {
		return batch.Stats{}, err
	}
	defer f.Close()
	// A dead-letter file is bounded (dead_letter_max_size), so it is read whole: the buffer
	// then holds all of it and evicts nothing.
	var ms []morse.Metric
	var parseErrs error
	p := &influx.Parser{}
	readErr := p.ParseReader(f, func(m morse.Metric) { ms = append(ms, m) }, func(le influx.LineError) {
		parseErrs = errors.Join(parseErrs, fmt.Errorf("line %d: %w", le.Line, le))
	})
	w, err := batch.NewWriter(oc.Plugin, batch.Options{
		BatchSize: oc.Settings().BatchSize, BufferLimit: max(len(ms), 1), FlushInterval: time.Second,
		Name: oc.Name, Alias: oc.Common.Alias, Logger: logger,
	})
	if err != nil {
		return batch.Stats{}, err
	}
	_ = w.WriteBatch(ms)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	closeErr := w.Close(ctx)
	var unsent *batch.UnsentError
	if errors.As(closeErr, &unsent) {
		closeErr = nil // reported as left unsent
	}
	return w.Stats(), errors.Join(readErr, parseErrs, closeErr)
}

// unsent is what the writer left at shutdown: never sent, or sent with no answer.
func unsent(byReason map[string]int64) int64 {
	return byReason[morse.ReasonShutdown] + byReason[morse.ReasonUnknown]
}

func withoutShutdown(byReason map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for r, n := range byReason {
		if r != morse.ReasonShutdown && r != morse.ReasonUnknown {
			out[r] = n
		}
	}
	return out
}
