package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/config"
)

// Telegraf's messages for a config that has nothing to gather or nowhere to send
// (cmd/telegraf/telegraf.go, runAgent), so that scripts that look for them find them.
var (
	errNoInputs  = errors.New("no inputs found, probably invalid config file provided")
	errNoOutputs = errors.New("no outputs found, probably invalid config file provided")
)

// runnable refuses a config that cannot do anything, as Telegraf does: one without an
// input, and, unless in test mode, one without an output. The filters count: a filter that
// leaves no input out of a config with inputs leaves none to run.
func runnable(cfg *config.Config, testMode bool) error {
	if len(cfg.Inputs) == 0 {
		return errNoInputs
	}
	if !testMode && len(cfg.Outputs) == 0 {
		return errNoOutputs
	}
	return nil
}

// warnUnmatchedFilters warns about each name of --input-filter and --output-filter that no
// plugin of the config has: a typo (--input-filter cpu:mme) would otherwise just leave a
// plugin out. Telegraf says nothing.
func warnUnmatchedFilters(cfg *config.Config, opts *options, log *slog.Logger) {
	var ins, outs []string
	for _, ic := range cfg.Inputs {
		ins = append(ins, ic.Name)
	}
	for _, oc := range cfg.Outputs {
		outs = append(outs, oc.Name)
	}
	for _, name := range unmatched(opts.inputFilter, ins) {
		log.Warn("--input-filter names an input the config does not have", "name", name)
	}
	for _, name := range unmatched(opts.outputFilter, outs) {
		log.Warn("--output-filter names an output the config does not have", "name", name)
	}
}

// warnUnknownPlugins warns, for `morse config`, about each filter name that is no plugin
// morse has: its sample would silently lack it. "none" is Telegraf's idiom for a section
// with no plugin (`telegraf config --input-filter none`), and is taken as meant.
func warnUnknownPlugins(opts *options, stderr io.Writer) {
	reg := morse.DefaultRegistry()
	for _, name := range unmatched(opts.inputFilter, append(reg.InputNames(), "none")) {
		fmt.Fprintf(stderr, "morse: --input-filter: %s is not an input plugin of morse\n", strconv.Quote(name))
	}
	for _, name := range unmatched(opts.outputFilter, append(reg.OutputNames(), "none")) {
		fmt.Fprintf(stderr, "morse: --output-filter: %s is not an output plugin of morse\n", strconv.Quote(name))
	}
}

// unmatched returns the names of filter that are not in names.
func unmatched(filter, names []string) []string {
	var out []string
	for _, f := range filter {
		if !slices.Contains(names, f) && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// writePidFile writes the process ID to path, as Telegraf's --pidfile does, and returns the
// function that removes the file at exit. The file is created with mode 0640, Telegraf's.
func writePidFile(path string) (remove func() error, err error) {
	if err := os.WriteFile(path, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o640); err != nil {
		return nil, fmt.Errorf("--pidfile: %w", err)
	}
	return func() error { return os.Remove(path) }, nil
}
