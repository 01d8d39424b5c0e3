package main

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/agent"
	"github.com/morse-agent/morse/config"
	"github.com/morse-agent/morse/internal/gcpace"
)

// run loads the config and runs the agent in the mode the flags ask for.
func run(opts *options, stdout, stderr io.Writer) int {
	sampleAllocations(opts.pprofAddr != "")
	cfg, err := config.Load(opts.loadOptions())
	if err != nil {
		fmt.Fprintf(stderr, "morse: the config has problems:\n%v\n", err)
		return exitBadArgs
	}
	if err := runnable(cfg, opts.testMode()); err != nil {
		fmt.Fprintf(stderr, "morse: %v\n", err)
		return exitBadArgs
	}
	logger, closeLog, err := newLogger(cfg.Agent, opts.debug, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "morse: %v\n", err)
		return exitBadArgs
	}
	defer closeLog()
	warnUnmatchedFilters(cfg, opts, logger)
	if opts.pprofAddr != "" {
		stopProfiler, err := serveProfiler(opts.pprofAddr, logger)
		if err != nil {
			fmt.Fprintf(stderr, "morse: --pprof-addr: %v\n", err)
			return exitBadArgs
		}
		defer stopProfiler()
	}
	agent, err := agent.NewAgent(cfg, agent.AgentOptions{Logger: logger, Version: versionString()})
	if err != nil {
		fmt.Fprintf(stderr, "morse: %v\n", err)
		return exitBadArgs
	}
	defer paceGC()()
	switch {
	case opts.testMode():
		return runTest(agent, time.Duration(opts.testWait)*time.Second, stdout, stderr)
	case opts.once:
		err := agent.Once(context.Background())
		reportUnsent(agent, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "morse: %v\n", err)
			return exitFailed
		}
		return exitOK
	}
	if opts.pidFile != "" {
		remove, err := writePidFile(opts.pidFile)
		if err != nil {
			fmt.Fprintf(stderr, "morse: %v\n", err)
			return exitFailed
		}
		defer func() {
			if err := remove(); err != nil {
				logger.Error("cannot remove the pidfile", "error", err)
			}
		}()
	}
	return runService(agent, opts, time.Duration(cfg.Agent.ShutdownTimeout), logger, stderr)
}

// sampleAllocations turns the runtime's sampling of allocations for heap profiles off unless
// the profiler is served. The sampling hashes each sampled call stack into a table of 1.4 MB
// that the runtime allocates at the first sample, and a long-running agent keeps meeting new
// stacks: each touches a new page of that table, and reads the binary's unwinding tables,
// so an agent that serves no profiles grows its RSS by tens of KiB a minute for nothing.
// It runs before the agent allocates anything of note, as runtime.MemProfileRate asks.
func sampleAllocations(profiled bool) {
	if !profiled {
		runtime.MemProfileRate = 0
	}
}

// paceGC runs the collector's pacer (internal/gcpace) unless GOGC says how to pace it, and
// returns the function that stops it.
func paceGC() (stop func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		gcpace.Run(ctx, gcpace.Options{})
	}()
	return func() {
		cancel()
		<-done
	}
}

// runTest prints one gather of every input as `telegraf --test` does (testprint.go), and
// what service inputs add during wait, as --test-wait does.
func runTest(agent *agent.Agent, wait time.Duration, stdout, stderr io.Writer) int {
	w := bufio.NewWriter(stdout)
	p := newTestPrinter(w)
	err := agent.TestWait(context.Background(), wait, p.print)
	err = cmp.Or(err, p.err, w.Flush())
	if err != nil {
		fmt.Fprintf(stderr, "morse: %v\n", err)
		return exitFailed
	}
	return exitOK
}

// runService runs until SIGINT or SIGTERM, reloading on SIGHUP.
func runService(agent *agent.Agent, opts *options, shutdownTimeout time.Duration, logger *slog.Logger, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

	sm := newServiceManager(logger)
	watcher, err := watchConfigFiles(opts, logger)
	if err != nil {
		fmt.Fprintf(stderr, "morse: %v\n", err)
		return exitBadArgs
	}
	defer watcher.Close()
	done := make(chan error, 1)
	go func() { done <- agent.Run(ctx) }()
	ready := agent.Ready()
	stopping := ctx.Done()
	status := time.NewTicker(statusEvery)
	defer status.Stop()
	var extend <-chan time.Time // ticks while the final flush may still run
	var stopAt time.Time
	var overrun <-chan time.Time // the process's own bound on the shutdown
	for {
		select {
		case <-ready:
			ready = nil
			sm.ready() // every input and output has started
			// A gather or write may run half the watchdog's period past its own bound.
			defer sm.startWatchdog(func(period time.Duration) healthCheck { return agentHealthy(agent, period/2) })()
		case <-status.C:
			sm.status(agent.Status())
		case <-hup:
			reload(agent, opts, logger, sm)
		case <-watcher.Changed():
			reload(agent, opts, logger, sm)
		case <-stopping:
			sm.stopping()
			stopping = nil
			stopAt = time.Now().Add(shutdownTimeout)
			sm.extendTimeout(stopAt)
			t := time.NewTicker(extendEvery)
			defer t.Stop()
			extend = t.C
			hard := time.NewTimer(shutdownTimeout + exitGrace)
			defer hard.Stop()
			overrun = hard.C
		case <-extend:
			sm.extendTimeout(stopAt)
		case err := <-done:
			return stopped(agent, err, logger, stderr)
		case <-overrun:
			// The agent bounds its shutdown itself (agent.hardGrace); this is the last resort.
			logger.Error("shutdown overran shutdown_timeout; exiting without waiting for the agent", "grace", exitGrace)
			return exitFailed
		}
	}
}

// exitGrace is how long past shutdown_timeout the process waits for the agent's Run before
// it exits regardless, so that it always exits within shutdown_timeout + 1 s.
const exitGrace = 900 * time.Millisecond

// stopped reports how Run ended and returns the exit status. A Run that ended before the
// agent was ready failed to start (a port in use, a buffer directory locked or read-only):
// that is a failure, so that a service manager restarts it (Restart=on-failure), and its
// cause is the last line logged. After a start, metrics left unsent at shutdown are
// reported per output, and the exit status is 0: the stop was asked for.
func stopped(agent *agent.Agent, err error, logger *slog.Logger, stderr io.Writer) int {
	select {
	case <-agent.Ready():
	default:
		logger.Error("agent failed to start", "error", err)
		return exitFailed
	}
	reportUnsent(agent, stderr)
	if err != nil {
		logger.Error("agent stopped with metrics unsent", "error", err)
	}
	return exitOK
}

// reload applies a changed config. A config with problems is refused as a whole and the
// running agent carries on unchanged.
func reload(agent *agent.Agent, opts *options, logger *slog.Logger, sm *serviceManager) {
	sm.reloading()
	cfg, err := config.Load(opts.loadOptions())
	if err == nil {
		err = runnable(cfg, false)
	}
	if err != nil {
		logger.Error("reload refused: the new config has problems; still running the old one", "problems", err.Error())
		sm.reloaded(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = agent.Reload(ctx, cfg)
	if err != nil {
		logger.Error("reload refused; still running the old config", "error", err)
	}
	sm.reloaded(err)
}

// reportUnsent prints, per output, what the final flush could not send: what the writer
// dropped under the shutdown and unknown reasons, which the drop count includes. Unknown
// ones were sent and had no answer, so the sink may hold them.
func reportUnsent(agent *agent.Agent, stderr io.Writer) {
	for _, o := range agent.Outputs() {
		name := "outputs." + o.Name
		if o.Alias != "" {
			name += " (" + o.Alias + ")"
		}
		unknown := o.Stats.DroppedByReason[morse.ReasonUnknown]
		left := o.Stats.DroppedByReason[morse.ReasonShutdown] + unknown
		doubt := ""
		if unknown > 0 {
			doubt = fmt.Sprintf("; %d of them sent with no answer: lost or stored", unknown)
		}
		fmt.Fprintf(stderr, "morse: %s: %d metrics left unsent (written %d, dropped %d%s)\n",
			name, left, o.Stats.Written, o.Stats.Dropped, doubt)
	}
}
