// Package exec is the inputs.exec plugin. Every interval it runs the configured commands,
// all at once, and parses what each prints on stdout in its data_format, with Telegraf's
// options: commands (each an array of strings, or one string split as a shell would; the
// program may be a glob), environment, timeout, ignore_error, log_stderr, data_format and
// its options.
//
// As in Telegraf, a command that exits non-zero or times out is reported as an error that
// quotes the first line of its stderr, and its output is not parsed unless ignore_error is
// set. Unlike Telegraf, whose parser drops a command's whole output for one malformed line,
// morse keeps the valid lines around a malformed one and reports the malformed ones.
package exec

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/parsers"
	"github.com/morse-agent/morse/plugins/parsers/dataformat"
)

// Description is the one-line summary that `morse config` prints above the sample.
const Description = "Read metrics from one or more commands that can output to stdout"

//go:embed sample.conf
var sampleConfig string

// Exec is the inputs.exec plugin and its configuration. Build it with New.
type Exec struct {
	// Commands are the commands to run.
	Commands []Command `toml:"commands"`
	// Command is Telegraf's deprecated single command; it runs before Commands.
	Command string `toml:"command"`
	// Environment holds "KEY=value" pairs added to the agent's environment.
	Environment []string `toml:"environment"`
	// Timeout bounds each command; it is then terminated, and killed after a grace period.
	Timeout morse.Duration `toml:"timeout"`
	// IgnoreError parses the output of a command that failed as if it had succeeded.
	IgnoreError bool `toml:"ignore_error"`
	// LogStdErr logs every line a command writes to stderr, see logStderr.
	LogStdErr bool `toml:"log_stderr"`
	// Config is data_format and the options of each format. Its default is "influx", where
	// Telegraf's is "json" for exec alone (a legacy of its exec plugin): morse keeps the
	// format every other input defaults to, and docs/data-formats.md says so.
	dataformat.Config

	// killGrace is the time between SIGTERM and SIGKILL after a timeout; tests shorten it.
	killGrace time.Duration
	log       *slog.Logger
}

// The engine finds these interfaces by type assertion; a typo would go unnoticed.
var (
	_ morse.Input        = (*Exec)(nil)
	_ morse.Validator    = (*Exec)(nil)
	_ morse.LoggerSetter = (*Exec)(nil)
)

// New returns the plugin with Telegraf's defaults.
func New() *Exec {
	return &Exec{Timeout: morse.Duration(5 * time.Second), Config: dataformat.Config{DataFormat: "influx"}, killGrace: 5 * time.Second}
}

func init() {
	morse.RegisterInput(morse.InputInfo{
		Name:         "exec",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Input { return New() },
	})
}

// SetLogger gives the plugin the engine's logger, which already names the plugin.
func (e *Exec) SetLogger(l *slog.Logger) { e.log = l }

func (e *Exec) logger() *slog.Logger {
	if e.log == nil {
		return slog.Default()
	}
	return e.log
}

// Validate checks the options that can be wrong before anything runs.
func (e *Exec) Validate() error {
	errs := []error{e.Config.Validate()}
	if e.Timeout <= 0 {
		errs = append(errs, morse.Errorf("timeout", "must be positive, got %s", e.Timeout))
	}
	for _, kv := range e.Environment {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			errs = append(errs, morse.Errorf("environment", "%q is not of the form KEY=value", kv))
		}
	}
	if e.Command != "" {
		var c Command
		if err := c.UnmarshalTOML(e.Command); err != nil {
			errs = append(errs, morse.Errorf("command", "%v", err))
		}
	}
	for _, c := range e.Commands {
		if len(c) == 0 {
			errs = append(errs, morse.Errorf("commands", "command cannot be empty"))
			break
		}
	}
	return errors.Join(errs...)
}

// commands are the configured commands, the deprecated single one first.
func (e *Exec) commands() []Command {
	if e.Command == "" {
		return e.Commands
	}
	var c Command
	if err := c.UnmarshalTOML(e.Command); err != nil {
		return e.Commands // Validate refuses it
	}
	return append([]Command{c}, e.Commands...)
}

// expand turns the configured commands into the commands to run: a command whose program
// is a glob runs once per match, with the same arguments; a glob without matches runs as
// written, so that programs found through PATH work.
func (e *Exec) expand(acc morse.Accumulator) []Command {
	var out []Command
	for _, c := range e.commands() {
		matches, err := filepath.Glob(c[0])
		if err != nil {
			acc.AddError(fmt.Errorf("exec: command %q: %w", c.String(), err))
			continue
		}
		if len(matches) == 0 {
			out = append(out, c)
			continue
		}
		for _, m := range matches {
			out = append(out, append(Command{m}, c[1:]...))
		}
	}
	return out
}

// Gather runs every command at once and waits for all of them. Failures are reported
// through acc.AddError, one per command, so that one broken script does not hide others.
func (e *Exec) Gather(ctx context.Context, acc morse.Accumulator) error {
	var wg sync.WaitGroup
	for _, c := range e.expand(acc) {
		wg.Go(func() { e.process(ctx, c, acc) })
	}
	wg.Wait()
	return nil
}

func (e *Exec) process(ctx context.Context, command Command, acc morse.Accumulator) {
	out, stderr, err := e.run(ctx, command)
	if err != nil && !e.IgnoreError {
		msg := fmt.Errorf("exec: %w for command %q", err, command.String())
		if first := firstLine(stderr); len(first) > 0 {
			msg = fmt.Errorf("%w: %s", msg, first)
		}
		acc.AddError(msg)
		return
	}
	if e.LogStdErr && len(stderr) > 0 {
		logStderr(e.logger(), command, stderr)
	}
	// A parser per run: commands run at once, and a format may keep state while it parses.
	p, err := e.NewParser(parsers.Settings{MetricName: "exec"})
	if err != nil {
		acc.AddError(fmt.Errorf("exec: %w", err))
		return
	}
	if perr := p.Parse(out, acc.AddMetric); perr != nil {
		acc.AddError(fmt.Errorf("exec: %d entries of the output of %q could not be parsed: %w",
			parsers.Refused(perr), command, perr))
	}
}

// ErrTimeout reports a command that did not finish within the timeout.
var ErrTimeout = errors.New("command timed out")
