package testutil

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// ClockTick is the unit of utime and stime in /proc/PID/stat and of the times in /proc/stat.
// Linux reports them in USER_HZ, which is 100 on every architecture whatever the kernel's
// own HZ.
const ClockTick = 10 * time.Millisecond

// ProcCPU returns the user plus system CPU time process pid has used so far, all threads
// included, from /proc/PID/stat. It is the one reader of that file for the tests and the
// benchmark harnesses in bench/, which watch the agent from outside; unlike getrusage it
// can be read while the process runs, so that a harness measures one phase of its life.
func ProcCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	utime, stime, err := parseStat(string(b))
	if err != nil {
		return 0, err
	}
	return time.Duration(utime+stime) * ClockTick, nil
}

// parseStat reads utime and stime (fields 14 and 15) from a /proc/PID/stat line. The command
// name in field 2 is in parentheses and may itself hold spaces and parentheses, so the
// fields are counted from the last ')'.
func parseStat(s string) (utime, stime uint64, err error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, errors.New("stat: no command name")
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state), so field n is f[n-3].
	if len(f) < 13 {
		return 0, 0, fmt.Errorf("stat: %d fields after the command name", len(f))
	}
	if utime, err = strconv.ParseUint(f[11], 10, 64); err != nil {
		return 0, 0, fmt.Errorf("stat: utime: %w", err)
	}
	if stime, err = strconv.ParseUint(f[12], 10, 64); err != nil {
		return 0, 0, fmt.Errorf("stat: stime: %w", err)
	}
	return utime, stime, nil
}

// UDPPort sums the UDP sockets bound to one local port: there are several when the
// listener uses SO_REUSEPORT.
type UDPPort struct {
	Sockets int   // sockets bound to the port
	Queued  int64 // bytes waiting to be read
	Drops   int64 // datagrams the kernel dropped because a receive buffer was full
}

// ReadUDPPort reads /proc/net/udp and /proc/net/udp6 for the sockets bound to port: whether
// a listener has bound it yet, what waits in its buffers, and what the kernel dropped
// because they were full, which the listener itself can never count.
func ReadUDPPort(port int) (UDPPort, error) {
	var sum UDPPort
	for _, path := range []string{"/proc/net/udp", "/proc/net/udp6"} {
		b, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return sum, err
		}
		s, err := parseNetUDP(string(b), port)
		if err != nil {
			return sum, fmt.Errorf("%s: %w", path, err)
		}
		sum.Sockets += s.Sockets
		sum.Queued += s.Queued
		sum.Drops += s.Drops
	}
	return sum, nil
}

// parseNetUDP reads the table of /proc/net/udp: after a header, one socket per line, with
// the local address as HEXIP:HEXPORT in field 2, tx_queue:rx_queue in field 5 and the drop
// count last.
func parseNetUDP(table string, port int) (UDPPort, error) {
	var s UDPPort
	lines := strings.Split(table, "\n")
	for _, line := range lines[min(1, len(lines)):] {
		f := strings.Fields(line)
		if len(f) < 13 {
			continue
		}
		_, hexPort, ok := strings.Cut(f[1], ":")
		p, err := strconv.ParseUint(hexPort, 16, 16)
		if !ok || err != nil || int(p) != port {
			continue
		}
		_, rx, _ := strings.Cut(f[4], ":")
		queued, err := strconv.ParseInt(rx, 16, 64)
		if err != nil {
			return s, fmt.Errorf("rx_queue %q: %w", f[4], err)
		}
		drops, err := strconv.ParseInt(f[len(f)-1], 10, 64)
		if err != nil {
			return s, fmt.Errorf("drops %q: %w", f[len(f)-1], err)
		}
		s.Sockets++
		s.Queued += queued
		s.Drops += drops
	}
	return s, nil
}
