package e2e

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// The matrix of issue 13 (flow control): every load shape a flat-out sender can take, each
// cell short and bounded, so that the worst cell is found and named rather than one shape
// that happens to work. The groups:
//
//   - flat: HTTP over 1, 4 and 16 connections × bodies of 100, 1000 and 5000 lines, and TCP
//     over 1, 4 and 16 connections, flat out into a sink that answers at once;
//   - slow: the same with the sink answering no faster than slowSinkRate lines a second;
//   - capacity: the CPU per line at the highest rate found lossless, HTTP and TCP;
//   - udp: a flood of 8-line datagrams, and the highest paced rate that loses nothing;
//   - the gzip bomb: the agent's RSS growth while it refuses a body that inflates to 400 MiB.
const (
	matrixLines  = 300_000 // lines per flat-out cell
	slowLines    = 40_000  // lines per slowed cell: four times what the buffer holds
	slowSinkRate = 5000    // lines a second, the slowed sink's pace
	// slowSocketBudget is the socket buffer a slowed TCP cell's connections share on each
	// side (SO_SNDBUF at the load tool, read_buffer_size at the listener), at most
	// slowSocketMax each. With the kernel's autotuning a connection holds megabytes before a
	// write blocks, so 40,000 lines fit in the sockets and the cell ends before the listener's
	// pushback reaches the sender; a running sender meets it after those megabytes. Measured:
	// at 16 KiB a single connection stalled on TCP's small windows (1,202-1,603 lines/s, a
	// quarter of the sink's pace), and at 64 KiB 16 connections held the whole cell in one
	// run of two (145,336 lines/s).
	slowSocketBudget = 256 << 10
	slowSocketMax    = 64 << 10
	// slowedFactor bounds a slowed cell's sender: its mean rate is at most this times the
	// sink's, what the buffers absorb at the start included.
	slowedFactor = 2
	// cellTimeout bounds every cell's load; a cell that reaches it is short of its lines.
	cellTimeout = 60 * time.Second
	udpFloodFor = 3 * time.Second
	udpProbeFor = 2 * time.Second
	udpProbes   = 6
	capProbes   = 3
	// lossless is the delivery share a cell must reach, in percent.
	lossless = 99.9
)

// capacityCells are the flat cells whose CPU per line is measured at lossless capacity.
var capacityCells = []string{"http-c4-b1000", "tcp-c4"}

// matrixCells lists the flat and slowed cells.
func matrixCells() []scenario {
	var out []scenario
	for _, slow := range []bool{false, true} {
		for _, c := range []int{1, 4, 16} {
			for _, b := range []int{100, 1000, 5000} {
				out = append(out, cell("http", c, b, slow))
			}
		}
		for _, c := range []int{1, 4, 16} {
			out = append(out, cell("tcp", c, 1000, slow))
		}
	}
	return out
}

// cell is one flat or slowed cell: HTTP with body lines per request, or TCP written
// body lines at a time.
func cell(transport string, conns, body int, slow bool) scenario {
	sc := scenario{Name: fmt.Sprintf("%s-c%d", transport, conns), Transport: transport, Input: "socket_listener",
		Connections: conns, LinesPerRequest: body, Lines: matrixLines, Duration: cellTimeout, Group: "flat"}
	if transport == "http" {
		sc.Name += fmt.Sprintf("-b%d", body)
		sc.Input = "influxdb_listener"
	}
	if slow {
		sc.Name += "-slow"
		sc.Lines, sc.SinkRate, sc.Group = slowLines, slowSinkRate, "slow"
		if transport == "tcp" {
			buf := min(slowSocketMax, slowSocketBudget/conns)
			sc.SendBuffer, sc.ReadBufferSize = buf, fmt.Sprintf("%dKiB", buf>>10)
		}
	}
	return sc
}

// matrixReport is what the matrix measured, as written to its JSON file.
type matrixReport struct {
	runInfo
	Cells []result `json:"cells"`
	// Capacity holds, for each of capacityCells, the runs that looked for a lossless rate.
	Capacity []capacity `json:"cpu_at_capacity"`
	UDPFlood *result    `json:"udp_flood,omitempty"`
	// UDPProbes are paced UDP runs from fast to slow, until one lost nothing.
	UDPProbes       []result    `json:"udp_probes,omitempty"`
	UDPLosslessRate float64     `json:"udp_lossless_lines_per_sec"`
	Bomb            *bombResult `json:"gzip_bomb,omitempty"`
	Worst           string      `json:"worst_cell"`
	Targets         []target    `json:"targets"`
}

// capacity is the CPU per line of one cell's load at the highest rate found lossless.
type capacity struct {
	Cell          string   `json:"cell"`
	Lossless      bool     `json:"lossless"`
	RatePerSec    float64  `json:"lines_per_sec"`
	CPUMicrosLine float64  `json:"agent_cpu_us_per_line"`
	Runs          []result `json:"paced_runs,omitempty"`
}

// runMatrix runs every group of the matrix in turn.
func (o *options) runMatrix(ctx context.Context, stderr io.Writer) (*matrixReport, error) {
	e, plugins, version, cleanup, err := o.setup(stderr)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	for _, p := range []string{"inputs.influxdb_listener", "inputs.socket_listener", "outputs.influxdb", "inputs.internal", "outputs.file"} {
		if !plugins[p] {
			return nil, fmt.Errorf("the matrix needs %s, which %s lacks", p, o.morseBin)
		}
	}
	rep := &matrixReport{runInfo: o.runInfo(version)}
	step := func(sc scenario) result {
		fmt.Fprintf(stderr, "morse-bench: matrix %s ...\n", sc.Name)
		return e.run(ctx, sc)
	}
	for _, sc := range matrixCells() {
		if !o.picked(sc.Name) {
			continue
		}
		rep.Cells = append(rep.Cells, step(sc))
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	for _, name := range capacityCells {
		if o.picked("capacity") && ran(rep.Cells, name) {
			rep.Capacity = append(rep.Capacity, findCapacity(rep.Cells, name, step))
		}
	}
	if o.picked("udp") {
		flood := step(scenario{Name: "udp-flood", Transport: "udp", Input: "socket_listener", Connections: 1,
			LinesPerRequest: 8, Duration: udpFloodFor, Group: "udp"})
		rep.UDPFlood = &flood
		rep.UDPProbes, rep.UDPLosslessRate = findUDPLossless(flood, step)
	}
	if o.picked("gzip-bomb") {
		bomb := e.runBomb(ctx, stderr)
		rep.Bomb = &bomb
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	rep.Worst = worstCell(rep.Cells)
	rep.Targets = evaluateMatrix(rep)
	return rep, nil
}

// picked reports whether --only names a cell or group ("capacity", "udp", "gzip-bomb"), or
// is empty.
func (o *options) picked(name string) bool {
	return o.only == "" || contains(strings.Split(o.only, ","), name)
}

// isLossless reports whether a run delivered the lossless share, with no drop in the
// agent's outputs and, for UDP, none in the kernel.
func isLossless(r result) bool {
	return r.Error == "" && r.LinesSent > 0 && r.DeliveryPct >= lossless && r.OutputDrops == 0 && r.UDPKernelDrops == 0
}

// findCapacity takes the named flat cell's CPU per line if it lost nothing; otherwise it
// paces the same load at 80% of the rate the agent delivered, then 80% of that, until a run
// loses nothing.
func findCapacity(cells []result, name string, step func(scenario) result) capacity {
	out := capacity{Cell: name}
	var flat *result
	for i := range cells {
		if cells[i].Scenario.Name == name {
			flat = &cells[i]
		}
	}
	if flat == nil || flat.Error != "" {
		return out
	}
	if isLossless(*flat) {
		out.Lossless, out.RatePerSec, out.CPUMicrosLine = true, flat.DeliveredPerSec, flat.CPUMicrosLine
		return out
	}
	rate := flat.DeliveredPerSec
	for range capProbes {
		rate = max(1000, math.Floor(0.8*rate/1000)*1000)
		sc := flat.Scenario
		sc.Name, sc.Group, sc.Rate = fmt.Sprintf("%s-paced-%.0fk", name, rate/1000), "capacity", rate
		sc.Lines = min(matrixLines, int64(rate*4))
		r := step(sc)
		out.Runs = append(out.Runs, r)
		if isLossless(r) {
			out.Lossless, out.RatePerSec, out.CPUMicrosLine = true, rate, r.CPUMicrosLine
			break
		}
	}
	return out
}

// findUDPLossless searches the highest rate of 8-line datagrams that loses nothing: the
// first probe is at the target, then each probe goes up by a quarter from a lossless rate
// with no lossy one above it, down by 30% from a lossy one with no lossless one below it,
// and halfway between the two otherwise. It returns the probes and the highest lossless
// rate (0 if none), in at most udpProbes probes.
func findUDPLossless(flood result, step func(scenario) result) ([]result, float64) {
	if flood.Error != "" {
		return nil, 0
	}
	var probes []result
	lo, hi := 0.0, math.Inf(1) // the highest lossless rate probed, the lowest lossy one
	rate := float64(udpLosslessGoal)
	for range udpProbes {
		sc := flood.Scenario
		sc.Name, sc.Rate, sc.Duration = fmt.Sprintf("udp-paced-%.0fk", rate/1000), rate, udpProbeFor
		r := step(sc)
		probes = append(probes, r)
		if isLossless(r) && r.DeliveryPct >= 100 {
			lo = rate
		} else {
			hi = rate
		}
		switch {
		case math.IsInf(hi, 1):
			rate = roundRate(1.25 * lo)
		case lo == 0:
			rate = roundRate(0.7 * hi)
		default:
			rate = roundRate((lo + hi) / 2)
		}
		if rate == lo || rate == hi {
			break
		}
	}
	return probes, lo
}

// roundRate rounds a rate down to 10,000 lines a second, at least 10,000.
func roundRate(r float64) float64 { return math.Max(10_000, math.Floor(r/10_000)*10_000) }

// ran reports whether the named cell is among the results.
func ran(cells []result, name string) bool {
	for _, c := range cells {
		if c.Scenario.Name == name {
			return true
		}
	}
	return false
}

// worstCell names the flat or slowed cell that delivered the smallest share; among equals,
// the one with the most drops, then the most duplicates.
func worstCell(cells []result) string {
	var worst *result
	for i := range cells {
		r := &cells[i]
		switch {
		case r.Error != "":
			return r.Scenario.Name + " (failed: " + r.Error + ")"
		case worst == nil || worse(r, worst):
			worst = r
		}
	}
	if worst == nil {
		return ""
	}
	return fmt.Sprintf("%s (%.2f%% delivered, %d dropped by the output, %d duplicates)",
		worst.Scenario.Name, worst.DeliveryPct, worst.OutputDrops, worst.Duplicates)
}

// worse orders cells from the worst: less delivered, then more dropped, then more duplicated.
func worse(a, b *result) bool {
	if a.DeliveryPct != b.DeliveryPct {
		return a.DeliveryPct < b.DeliveryPct
	}
	if a.OutputDrops != b.OutputDrops {
		return a.OutputDrops > b.OutputDrops
	}
	return a.Duplicates > b.Duplicates
}
