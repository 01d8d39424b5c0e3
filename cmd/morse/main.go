// Command morse is the metrics agent: it reads a Telegraf-style TOML config, gathers metrics
// and writes them to outputs. This package holds only the command line, signals and service
// readiness; everything else is in the morse package.
package main

import (
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/morse-agent/morse/config"
	_ "github.com/morse-agent/morse/plugins/all" // every plugin morse ships
)

//go:embed default.conf
var defaultConfig []byte

// Exit statuses: 2 for a command line or config that cannot run; 1 for a run that failed,
// which includes an agent that could not start (a port in use, a buffer directory locked or
// read-only), or --once that left metrics unsent. A service stopped by a signal exits 0,
// whatever its final flush left unsent, which it reports per output.
const (
	exitOK      = 0
	exitFailed  = 1
	exitBadArgs = 2
)

// options are the command line's settings.
type options struct {
	configs      []string
	configDirs   []string
	test         bool
	once         bool
	debug        bool
	inputFilter  []string
	outputFilter []string
	pprofAddr    string
	version      bool
	pidFile      string
	testWait     int // seconds; not zero is test mode, as in Telegraf
	watchConfig  string
	watchEvery   time.Duration
	// watchDebounce (--watch-debounce-interval) is how long no change must come before a
	// change is reloaded; 0 reloads at once.
	watchDebounce time.Duration
}

// testMode reports whether the flags ask for Telegraf's test mode: --test, or --test-wait
// without --once.
func (o *options) testMode() bool { return !o.once && (o.test || o.testWait != 0) }

// listFlag collects a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// filterFlag reads Telegraf's colon-separated plugin lists, as in --input-filter cpu:mem.
type filterFlag []string

func (f *filterFlag) String() string { return strings.Join(*f, ":") }
func (f *filterFlag) Set(v string) error {
	for _, name := range strings.Split(v, ":") {
		if name = strings.TrimSpace(name); name != "" {
			*f = append(*f, name)
		}
	}
	return nil
}

func main() {
	withoutAsyncPreemption(reexec)
	ensureTwoProcs()
	os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr))
}

// reexec replaces the process with a new start of its binary, with the same arguments and
// env; the process keeps its ID, so a service manager that watches it sees no change.
// /proc/self/exe is the file that was started, even when a package upgrade has replaced it
// on disk since.
func reexec(env []string) error {
	return syscall.Exec("/proc/self/exe", os.Args, env)
}

// ensureTwoProcs gives the Go scheduler at least two Ps, unless GOMAXPROCS says otherwise.
// On a single core (a small VM, or an agent pinned with taskset) Go runs one P, and a
// listener that always has data to parse never blocks, so the network poller runs only from
// the runtime's monitor, about every 10 ms: each answer an output waits for then waits that
// long too, and a flooded agent evicts what its output could have sent. A second P sits
// blocked in the poller and handles those completions at once; it costs nothing while idle.
func ensureTwoProcs() {
	if os.Getenv("GOMAXPROCS") == "" && runtime.GOMAXPROCS(0) < 2 {
		runtime.GOMAXPROCS(2)
	}
}

func realMain(args []string, stdout, stderr io.Writer) int {
	cmd := ""
	if len(args) > 0 && args[0] == "replay" {
		return replay(args[1:], stdout, stderr)
	}
	if len(args) > 1 && args[0] == "config" && args[1] == "check" {
		return configCheck(args[2:], stdout, stderr)
	}
	if len(args) > 0 && (args[0] == "config" || args[0] == "version") {
		cmd, args = args[0], args[1:]
	}
	opts, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return exitBadArgs
	}
	switch {
	case cmd == "version" || opts.version:
		fmt.Fprintf(stdout, "morse %s\n", versionString())
		return exitOK
	case cmd == "config":
		warnUnknownPlugins(opts, stderr)
		fmt.Fprint(stdout, config.DefaultSampleConfig(nil, opts.inputFilter, opts.outputFilter))
		return exitOK
	}
	return run(opts, stdout, stderr)
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	opts := &options{}
	fs := flag.NewFlagSet("morse", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Var((*listFlag)(&opts.configs), "config", "config `file` (repeatable); without any, the built-in config runs")
	fs.Var((*listFlag)(&opts.configDirs), "config-directory", "`directory` whose *.conf files are merged (repeatable)")
	fs.BoolVar(&opts.test, "test", false, "gather once, print the metrics as line protocol and exit")
	fs.BoolVar(&opts.once, "once", false, "gather once, flush every output and exit; non-zero if anything is left unsent")
	fs.BoolVar(&opts.debug, "debug", false, "log at debug level")
	fs.Var((*filterFlag)(&opts.inputFilter), "input-filter", "only these inputs, as `cpu:mem`")
	fs.Var((*filterFlag)(&opts.outputFilter), "output-filter", "only these outputs, as `file:influxdb`")
	fs.StringVar(&opts.pprofAddr, "pprof-addr", "", "serve Go's profiler on this `address`, such as 127.0.0.1:6060 (as Telegraf's flag)")
	fs.BoolVar(&opts.version, "version", false, "print the version and exit, as `morse version`")
	fs.StringVar(&opts.pidFile, "pidfile", "", "write the process ID to this `file` while the agent runs")
	fs.IntVar(&opts.testWait, "test-wait", 0, "test mode that lets service inputs run this many `seconds` after the gather")
	fs.StringVar(&opts.watchConfig, "watch-config", "", "reload when a --config file or --config-directory changes: `notify` (inotify) or poll")
	fs.DurationVar(&opts.watchEvery, "watch-interval", 0, "how often --watch-config poll looks (`duration`, 250ms by default)")
	fs.DurationVar(&opts.watchDebounce, "watch-debounce-interval", 0, "with --watch-config, reload once the config has not changed for this `duration` (0: at once)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: morse [flags]          run the agent\n"+
			"       morse config [filters]  print a sample config: Telegraf's default plugins, or those the filters name\n"+
			"       morse version           print the version\n"+
			"       morse replay --config FILE --output NAME DEADLETTERFILE\n"+
			"                               send a dead-letter file's metrics through that output again\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if opts.testWait < 0 {
		fmt.Fprintf(stderr, "morse: --test-wait must not be negative, got %d\n", opts.testWait)
		return nil, errors.New("bad --test-wait")
	}
	if opts.watchDebounce < 0 {
		fmt.Fprintf(stderr, "morse: --watch-debounce-interval must not be negative, got %s\n", opts.watchDebounce)
		return nil, errors.New("bad --watch-debounce-interval")
	}
	switch opts.watchConfig {
	case "", watchNotify, watchInotify, watchPoll:
	default:
		fmt.Fprintf(stderr, "morse: --watch-config %q: must be %q (or %q) or %q\n", opts.watchConfig, watchNotify, watchInotify, watchPoll)
		return nil, errors.New("bad --watch-config")
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "morse: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return nil, errors.New("unexpected argument")
	}
	return opts, nil
}

// loadOptions says where the config comes from: the files and directories given, or the
// built-in default when none are.
func (o *options) loadOptions() config.Options {
	lo := config.Options{
		Files: o.configs, Dirs: o.configDirs,
		InputFilter: o.inputFilter, OutputFilter: o.outputFilter,
	}
	if len(o.configs) == 0 && len(o.configDirs) == 0 {
		lo.Sources = []config.Source{{Name: "built-in default config", Data: defaultConfig}}
	}
	return lo
}
