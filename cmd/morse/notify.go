package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/morse-agent/morse/agent"
	"github.com/morse-agent/morse/internal/sdnotify"
)

// serviceManager tells a Type=notify service manager what the agent is doing. A failed
// notification is logged, once until one succeeds again, and never stops the agent: the
// metrics matter more than the manager's view of them.
type serviceManager struct {
	n       *sdnotify.Notifier
	log     *slog.Logger
	failing atomic.Bool
}

// newServiceManager reads the notify socket and watchdog period from the environment, then
// removes them from it, so that the commands the exec input runs cannot pose as the agent
// to the manager or inherit a watchdog meant for it (sd_notify(3) advises the same).
func newServiceManager(log *slog.Logger) *serviceManager {
	n, err := sdnotify.FromEnvironment()
	if err != nil {
		log.Warn("service manager notification: ignoring a malformed setting", "error", err)
	}
	for _, k := range []string{"NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"} {
		_ = os.Unsetenv(k)
	}
	return &serviceManager{n: n, log: log}
}

// report logs the first failure of a run of failures and the recovery after it.
func (s *serviceManager) report(err error) {
	switch {
	case err != nil && !s.failing.Swap(true):
		s.log.Warn("cannot notify the service manager", "error", err)
	case err == nil && s.failing.Swap(false):
		s.log.Info("notifying the service manager again")
	}
}

func (s *serviceManager) ready()     { s.report(s.n.Ready()) }
func (s *serviceManager) reloading() { s.report(s.n.Reloading()) }
func (s *serviceManager) stopping()  { s.report(s.n.Stopping()) }

// reloaded ends a reload. A refused one leaves its reason in the status line, where
// `systemctl status` and `systemctl reload`'s caller look; READY=1 follows either way,
// because the manager holds the unit in "reloading" until it comes.
func (s *serviceManager) reloaded(err error) {
	status := ""
	if err != nil {
		status = refusedStatus(err)
	}
	s.report(s.n.Status(status))
	s.ready()
}

// refusedStatus says in one line why a reload was refused: the first problem, and how many
// more the journal holds.
func refusedStatus(err error) string {
	lines := strings.FieldsFunc(err.Error(), func(r rune) bool { return r == '\n' })
	if len(lines) == 0 {
		return "reload refused; still running the previous config"
	}
	s := "reload refused; still running the previous config: " + strings.TrimSpace(lines[0])
	if len(lines) > 1 {
		s += fmt.Sprintf(" (and %d more problems, see the journal)", len(lines)-1)
	}
	return s
}

// startWatchdog pings the manager's watchdog, if it asks for one, for as long as the check
// that check makes for the manager's period finds the agent healthy, and returns the
// function that stops the pinging.
func (s *serviceManager) startWatchdog(check func(period time.Duration) healthCheck) (stop func()) {
	period, ok := s.n.WatchdogInterval()
	if !ok {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		w := watchdog{ping: s.n, period: period, check: check(period), log: s.log, report: s.report}
		w.run(ctx)
	}()
	return func() {
		cancel()
		wg.Wait()
	}
}

// healthCheck says whether the agent made progress recently enough to be called alive,
// and if not, what is stuck.
type healthCheck func(now time.Time) error

// agentHealthy is the watchdog's health check: the agent is healthy while no gather and no
// write is wedged past its own bound (its interval, or its output's timeout) by more than
// grace. Waiting and backing off from a sink that is down are healthy: only a plugin that
// ignores its context stops the pings, and systemd then restarts the agent.
func agentHealthy(a *agent.Agent, grace time.Duration) healthCheck {
	return func(now time.Time) error {
		if stuck := a.Stuck(now, grace); len(stuck) > 0 {
			return fmt.Errorf("wedged: %s", strings.Join(stuck, ", "))
		}
		return nil
	}
}

// statusEvery is how often STATUS= is refreshed: often enough to read, seldom enough to cost
// nothing.
const statusEvery = 5 * time.Second

// extendEvery is how often, during the final flush, the stop timeout is extended.
const extendEvery = 2 * time.Second

// status sets the one-line status that systemctl status shows.
func (s *serviceManager) status(line string) { s.report(s.n.Status(line)) }

// extendTimeout asks systemd, while the final flush is still within shutdown_timeout (which
// ends at stopAt), for time until then plus a margin, so that it never kills a flush that
// is still inside its deadline even under a short TimeoutStopSec.
func (s *serviceManager) extendTimeout(stopAt time.Time) {
	if left := time.Until(stopAt); left > 0 {
		s.report(s.n.ExtendTimeout(left + extendEvery + time.Second))
	}
}

// pinger is what the watchdog needs of the notifier.
type pinger interface {
	Watchdog() error
	Status(string) error
}

// watchdog pings at half the manager's period, as sd_watchdog_enabled(3) advises, so that
// one late tick does not cost a restart. When the check fails it stops pinging and says
// why, once, in the log and the status line: the manager then restarts the agent at the
// end of its period, and that line is what the operator finds next to the restart.
type watchdog struct {
	ping   pinger
	period time.Duration
	check  healthCheck
	log    *slog.Logger
	report func(error)
}

func (w *watchdog) run(ctx context.Context) {
	t := time.NewTicker(w.period / 2)
	defer t.Stop()
	unhealthy := false
	for {
		if err := w.check(time.Now()); err != nil {
			if !unhealthy {
				w.log.Error("watchdog: not pinging the service manager; it will restart the agent", "reason", err)
				w.report(w.ping.Status("unhealthy, awaiting watchdog restart: " + err.Error()))
			}
			unhealthy = true
		} else {
			if unhealthy {
				w.log.Info("watchdog: healthy again; pinging the service manager")
				w.report(w.ping.Status(""))
			}
			unhealthy = false
			w.report(w.ping.Watchdog())
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
