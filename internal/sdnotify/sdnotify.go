// Package sdnotify speaks the service manager's notification protocol (sd_notify(3)): each
// message is one datagram of newline-separated VAR=value assignments, sent to the unix
// socket that NOTIFY_SOCKET names. Outside a Type=notify service NOTIFY_SOCKET is unset and
// every method does nothing, so callers need no "am I under systemd" checks of their own.
//
// It is written by hand rather than taken from github.com/coreos/go-systemd/v22/daemon
// (v22.7.0 read for comparison). That package gives SdNotify(unset, state), which reads
// NOTIFY_SOCKET from the process environment on every call, so a test cannot hand it a
// socket of its own without mutating the environment, and dials and writes with no deadline,
// so a stuck manager would stick the caller; SdWatchdogEnabled; and SdNotifyMonotonicUsec,
// which turns a clock error into an empty string. The messages themselves would still be
// ours to write. What is left after those is the socket dial below, and one more module
// dependency is not worth saving it.
package sdnotify

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// sendTimeout bounds one datagram. The manager reads its socket at once, so a send that
// waits this long means the manager is stuck; an agent must not get stuck with it.
const sendTimeout = time.Second

// Notifier sends state changes to the service manager. The zero value and a Notifier built
// without NOTIFY_SOCKET are disabled: every method returns nil without sending anything.
// A Notifier is safe for concurrent use: it holds no connection, each message dials anew,
// as sd_notify does, so a manager that re-executes itself is still reached.
type Notifier struct {
	addr     *net.UnixAddr // nil when disabled
	watchdog time.Duration // 0 when the manager expects no watchdog pings
	timeout  time.Duration // for one send; tests shorten it
	// monotonic reads CLOCK_MONOTONIC, the clock the manager compares MONOTONIC_USEC with.
	monotonic func() (time.Duration, error)
}

// FromEnvironment builds a Notifier from this process's environment.
func FromEnvironment() (*Notifier, error) {
	return New(os.Getenv, os.Getpid())
}

// New builds a Notifier from the environment getenv reads: NOTIFY_SOCKET names the socket (a
// path, or an abstract socket written @name), WATCHDOG_USEC the watchdog period and
// WATCHDOG_PID the process it is meant for, which must be pid when set. A malformed value is
// an error; the Notifier returned alongside it is still usable for what was well-formed.
func New(getenv func(string) string, pid int) (*Notifier, error) {
	n := &Notifier{timeout: sendTimeout, monotonic: clockMonotonic}
	var errs []error
	switch sock := getenv("NOTIFY_SOCKET"); {
	case sock == "":
	case sock[0] == '/':
		n.addr = &net.UnixAddr{Name: sock, Net: "unixgram"}
	case sock[0] == '@' && len(sock) > 1:
		// Go writes a leading '@' as the abstract namespace's NUL byte itself.
		n.addr = &net.UnixAddr{Name: sock, Net: "unixgram"}
	default:
		errs = append(errs, fmt.Errorf("NOTIFY_SOCKET %q: not a unix socket path or @abstract name", sock))
	}
	wd, err := watchdogFromEnv(getenv, pid)
	if err != nil {
		errs = append(errs, err)
	}
	n.watchdog = wd
	return n, errors.Join(errs...)
}

// watchdogFromEnv reads the watchdog period as sd_watchdog_enabled(3) does: WATCHDOG_USEC
// must be a positive count of microseconds, and a WATCHDOG_PID naming another process (a
// parent that left it in the environment) means the period is not ours.
func watchdogFromEnv(getenv func(string) string, pid int) (time.Duration, error) {
	usec := getenv("WATCHDOG_USEC")
	if usec == "" {
		return 0, nil
	}
	u, err := strconv.ParseUint(usec, 10, 63)
	if err != nil || u == 0 || u > uint64(time.Duration(1<<63-1)/time.Microsecond) {
		return 0, fmt.Errorf("WATCHDOG_USEC %q: not a positive count of microseconds", usec)
	}
	if p := getenv("WATCHDOG_PID"); p != "" {
		wpid, err := strconv.Atoi(p)
		if err != nil || wpid <= 0 {
			return 0, fmt.Errorf("WATCHDOG_PID %q: not a process ID", p)
		}
		if wpid != pid {
			return 0, nil
		}
	}
	return time.Duration(u) * time.Microsecond, nil
}

// Enabled reports whether a service manager is listening.
func (n *Notifier) Enabled() bool { return n != nil && n.addr != nil }

// WatchdogInterval is the period within which the manager expects a Watchdog ping, and
// whether it expects any. Ping at half of it or more often, as sd_watchdog_enabled(3) advises.
func (n *Notifier) WatchdogInterval() (time.Duration, bool) {
	if n == nil || n.watchdog == 0 {
		return 0, false
	}
	return n.watchdog, true
}

// Ready says the service finished starting, or finished a reload.
func (n *Notifier) Ready() error { return n.send("READY=1") }

// Reloading says a reload began. MONOTONIC_USEC lets a manager that waits for the reload
// (Type=notify-reload, systemd 253 and later) tell this reload from an earlier one.
func (n *Notifier) Reloading() error {
	if !n.Enabled() {
		return nil
	}
	now, err := n.monotonic()
	if err != nil {
		return fmt.Errorf("sd_notify RELOADING: reading CLOCK_MONOTONIC: %w", err)
	}
	return n.send("RELOADING=1", "MONOTONIC_USEC="+strconv.FormatInt(now.Microseconds(), 10))
}

// Stopping says the service began shutting down.
func (n *Notifier) Stopping() error { return n.send("STOPPING=1") }

// ExtendTimeout asks for d more time for the start, reload or stop in progress; the
// manager counts d from when it receives the message, so send it again before d runs out.
func (n *Notifier) ExtendTimeout(d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("sd_notify EXTEND_TIMEOUT_USEC: %v is not a positive duration", d)
	}
	return n.send("EXTEND_TIMEOUT_USEC=" + strconv.FormatInt(d.Microseconds(), 10))
}

// Status sets the one-line status `systemctl status` shows. A newline would end the
// assignment early and start a bogus one, so line breaks become spaces.
func (n *Notifier) Status(s string) error {
	return n.send("STATUS=" + strings.Join(strings.Fields(s), " "))
}

// Watchdog tells the manager the service is alive.
func (n *Notifier) Watchdog() error { return n.send("WATCHDOG=1") }

// send writes the assignments as one datagram.
func (n *Notifier) send(assignments ...string) error {
	if !n.Enabled() {
		return nil
	}
	conn, err := net.DialUnix("unixgram", nil, n.addr)
	if err != nil {
		return fmt.Errorf("sd_notify: %w", err)
	}
	defer conn.Close()
	if err := conn.SetWriteDeadline(time.Now().Add(n.timeout)); err != nil {
		return fmt.Errorf("sd_notify: %w", err)
	}
	if _, err := conn.Write([]byte(strings.Join(assignments, "\n"))); err != nil {
		return fmt.Errorf("sd_notify %s: %w", assignments[0], err)
	}
	return nil
}

// clockMonotonic reads CLOCK_MONOTONIC. Go's own monotonic readings are relative to an
// unexported origin, so they cannot be compared with the manager's clock.
func clockMonotonic() (time.Duration, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0, err
	}
	return time.Duration(ts.Nano()), nil
}
