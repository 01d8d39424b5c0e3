package e2e

import (
	"github.com/morse-agent/morse/internal/testutil"

	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The harness shares the machine with whatever else runs on it, and on a small machine a
// busy neighbour changes every figure. noiseMeter measures, over one scenario, how much CPU
// the whole machine spent beyond what the agent, the load tool, the sink and the harness
// itself used, so that the report can say how far its numbers can be trusted.
type noiseMeter struct {
	start    time.Time
	busy0    time.Duration // the machine's busy CPU time, all cores
	self0    time.Duration // the harness's own CPU time
	sink0    time.Duration
	sinkPID  int
	disabled bool
}

func startNoise(sinkPID int) *noiseMeter {
	m := &noiseMeter{start: time.Now(), sinkPID: sinkPID}
	var err error
	if m.busy0, err = machineBusy(); err != nil {
		m.disabled = true
	}
	m.self0 = selfCPU()
	m.sink0, _ = testutil.ProcCPU(sinkPID)
	return m
}

// foreignPct returns the CPU the rest of the machine used since start, as a percentage of
// all cores' time, given the CPU the agent and the load tool used (the sink's and the
// harness's own are measured here). It returns -1 when /proc/stat cannot be read.
func (m *noiseMeter) foreignPct(agent, load time.Duration, cpus int) float64 {
	busy, err := machineBusy()
	if m.disabled || err != nil || cpus <= 0 {
		return -1
	}
	sink, _ := testutil.ProcCPU(m.sinkPID)
	ours := agent + load + (sink - m.sink0) + (selfCPU() - m.self0)
	wall := time.Since(m.start)
	foreign := (busy - m.busy0) - ours
	// Tick rounding in /proc can make a quiet machine look slightly negative.
	return max(0, 100*foreign.Seconds()/(wall.Seconds()*float64(cpus)))
}

// machineBusy reads the first line of /proc/stat and returns the time all cores spent on
// anything but idle and iowait.
func machineBusy() (time.Duration, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return parseCPULine(line)
}

func parseCPULine(line string) (time.Duration, error) {
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, errors.New("/proc/stat: no cpu line")
	}
	var busy uint64
	// user nice system idle iowait irq softirq steal; guest time is already in user.
	for i, v := range f[1:min(len(f), 9)] {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, err
		}
		if i != 3 && i != 4 {
			busy += n
		}
	}
	return time.Duration(busy) * testutil.ClockTick, nil
}

// selfCPU is the harness's own CPU time.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
