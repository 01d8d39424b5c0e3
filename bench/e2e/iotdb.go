package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
)

// sinkIoTDB is the Sink of the scenarios that write into a real IoTDB (issue 39): the
// agent's influxdb_listener takes the load tool's line protocol and outputs.iotdb writes it
// to IoTDB 2.0.1-beta, the tests' server (internal/testserver), in a container of its own
// with only its REST port published on 127.0.0.1. Delivered rows are what IoTDB answered
// with success, by the agent's own counters (internal_write metrics_written); CPU per row
// is the agent's alone. IoTDB's own CPU shows in "other CPU %".
const sinkIoTDB = "iotdb"

// iotdbSink is the IoTDB of a run, started by its first IoTDB scenario and removed with the
// other sinks; each run of a scenario writes under a database of its own.
type iotdbSink struct {
	srv  *testserver.IoTDB
	runs int
}

func (e *env) iotdbServer() (*iotdbSink, error) {
	if e.iotdb == nil {
		srv, err := testserver.LaunchIoTDB(testserver.IoTDBOptions{}, func(string, ...any) {})
		if err != nil {
			return nil, fmt.Errorf("IoTDB: %w", err)
		}
		e.iotdb = &iotdbSink{srv: srv}
	}
	return e.iotdb, nil
}

// runIoTDB is runAgent with outputs.iotdb into IoTDB.
func (e *env) runIoTDB(ctx context.Context, res *result) error {
	sc := res.Scenario
	sink, err := e.iotdbServer()
	if err != nil {
		return err
	}
	sink.runs++
	conf := agentConfig{IoTDBURL: sink.srv.URL(), IoTDBDatabase: fmt.Sprintf("root.bench.r%d", sink.runs),
		IoTDBTagsAs: sc.IoTDBTagsAs}
	if sc.BufferStrategy == "disk" {
		conf.BufferDir = filepath.Join(e.dir, sc.Name+"-buffer")
	}
	a, err := e.startAgentWith(ctx, sc, conf)
	if err != nil {
		return err
	}
	stopped := false
	defer func() {
		if !stopped {
			_, _, _ = a.proc.Stop(10 * time.Second)
		}
	}()
	cpu0, err := testutil.ProcCPU(a.proc.PID())
	if err != nil {
		return err
	}
	noise := startNoise(0)
	rep, loadCPU, err := e.load(ctx, sc, a.addr, "/write?db=bench")
	if err != nil {
		return err
	}
	res.setLoad(rep, loadCPU)
	res.AgentCounters = waitSettled(ctx, a, rep.Lines)
	hwm, _ := statusKiB(a.proc.PID(), "VmHWM")
	cpu, maxRSS, err := a.proc.Stop(time.Minute)
	stopped = true
	if err != nil {
		return err
	}
	written, dropped := outputCounter(res.AgentCounters, "metrics_written"), outputDrops(res.AgentCounters)
	if w, d, ok := finalCounts(filepath.Join(e.dir, sc.Name+"-morse.log")); ok {
		written, dropped = w, d // the shutdown flush's too
	}
	res.setWritten(written)
	res.OutputDrops = dropped
	res.AgentCPUSec = (cpu - cpu0).Seconds()
	if res.LinesSent > 0 {
		res.CPUMicrosLine = 1e6 * res.AgentCPUSec / float64(res.LinesSent)
	}
	res.PeakRSSMiB = float64(max(hwm, maxRSS)) / 1024
	res.ForeignCPUPct = noise.foreignPct(cpu-cpu0, loadCPU, runtime.NumCPU())
	return nil
}

// waitSettled waits until the agent's output has written or dropped want metrics, or its
// counts have stood still for settleFor, at most a minute, and returns the agent's counters.
func waitSettled(ctx context.Context, a *agentRun, want int64) map[string]int64 {
	var c map[string]int64
	last, changed := int64(-1), time.Now()
	_ = a.proc.WaitFor(ctx, time.Minute, "delivery", func() bool {
		c = readCounters(a.internalFile)
		done := outputCounter(c, "metrics_written") + outputDrops(c)
		if done != last {
			last, changed = done, time.Now()
		}
		return done >= want || time.Since(changed) >= settleFor
	})
	return c
}

// outputCounter sums a counter of the agent's outputs (internal_write) other than the
// internal counters' own file output.
func outputCounter(c map[string]int64, field string) int64 {
	var n int64
	for k, v := range c {
		if strings.HasPrefix(k, "internal_write,") && !strings.Contains(k, "output=file") && strings.HasSuffix(k, " "+field) {
			n += v
		}
	}
	return n
}

// finalLine is what the agent says of outputs.iotdb as it stops.
var finalLine = regexp.MustCompile(`outputs\.iotdb: \d+ metrics left unsent \(written (\d+), dropped (\d+)\)`)

// finalCounts reads from the agent's log what outputs.iotdb wrote and dropped in its life.
func finalCounts(logPath string) (written, dropped int64, ok bool) {
	b, err := os.ReadFile(logPath)
	if err != nil {
		return 0, 0, false
	}
	m := finalLine.FindSubmatch(b)
	if m == nil {
		return 0, 0, false
	}
	written, _ = strconv.ParseInt(string(m[1]), 10, 64)
	dropped, _ = strconv.ParseInt(string(m[2]), 10, 64)
	return written, dropped, true
}

// setWritten takes the metrics the output wrote as delivered, as setDelivered takes the
// sink's distinct lines. A write that timed out and was sent again counts twice, though IoTDB
// keeps a row once: what passes the lines sent is counted as duplicates.
func (r *result) setWritten(n int64) {
	if tried := r.LinesSent + r.LinesFailed; n > tried {
		r.Duplicates, n = n-tried, tried
	}
	r.LinesDelivered = n
	if r.LoadSec > 0 {
		r.DeliveredPerSec = float64(n) / r.LoadSec
	}
	if tried := r.LinesSent + r.LinesFailed; tried > 0 {
		r.DeliveryPct = 100 * float64(n) / float64(tried)
	}
}
