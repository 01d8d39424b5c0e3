package e2e

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// The targets of issue 13 that the matrix checks.
const (
	cpuHTTPLimit    = 1.5 // CPU-µs per line at lossless capacity, as the agent did before
	cpuTCPLimit     = 2.4
	udpLosslessGoal = 600_000
	bombGrowthLimit = 16 // MiB of RSS growth
)

// evaluateMatrix checks every cell against its target.
func evaluateMatrix(rep *matrixReport) []target {
	var out []target
	for _, r := range rep.Cells {
		limit := lossless
		goal := "delivery % >= 99.9"
		if r.Scenario.Group == "slow" {
			limit, goal = 100, "delivery % = 100, slowed sink"
		}
		out = append(out, target{Goal: goal, Scenario: r.Scenario.Name, Value: r.DeliveryPct, Limit: limit,
			Met: r.Error == "" && r.DeliveryPct >= limit})
		if r.Scenario.Group == "slow" {
			bound := slowedFactor * r.Scenario.SinkRate
			out = append(out, target{Goal: fmt.Sprintf("sender slowed: lines/s <= %d x the sink's", slowedFactor), Scenario: r.Scenario.Name,
				Value: r.SentPerSec, Limit: bound, Met: r.Error == "" && r.SentPerSec <= bound})
		}
		if r.Scenario.Transport == "http" && r.Scenario.Group == "flat" {
			out = append(out, target{Goal: "no eviction, healthy sink", Scenario: r.Scenario.Name,
				Value: float64(r.OutputDrops), Limit: 0, Met: r.Error == "" && r.OutputDrops == 0})
		}
	}
	for _, c := range rep.Capacity {
		limit := cpuTCPLimit
		if strings.HasPrefix(c.Cell, "http") {
			limit = cpuHTTPLimit
		}
		out = append(out, target{Goal: "CPU-µs per line at lossless capacity", Scenario: c.Cell,
			Value: c.CPUMicrosLine, Limit: limit, Met: c.Lossless && c.CPUMicrosLine <= limit})
	}
	if rep.UDPFlood != nil {
		out = append(out, target{Goal: "UDP 8-line lossless lines/s", Scenario: "udp-paced",
			Value: rep.UDPLosslessRate, Limit: udpLosslessGoal, Met: rep.UDPLosslessRate >= udpLosslessGoal})
	}
	if b := rep.Bomb; b != nil {
		out = append(out, target{Goal: "gzip bomb RSS growth MiB", Scenario: "gzip-bomb",
			Value: b.GrowthMiB, Limit: bombGrowthLimit, Met: b.Error == "" && b.GrowthMiB < bombGrowthLimit})
	}
	return out
}

// printMatrix writes every cell, the capacity runs, UDP, the gzip bomb, the targets and the
// worst cell.
func printMatrix(w io.Writer, rep *matrixReport) {
	pin := "agent pinned to one core, load tool and sink to another"
	if !rep.Pinned {
		pin = "NOT pinned (no taskset)"
	}
	fmt.Fprintf(w, "morse flow-control matrix (issue 13): %s, %s, %d CPUs (%s), %s\n"+
		"defaults: buffer 10000, batch 1000, flush 1s; flat cells %d lines, slowed cells %d lines into a sink at %d lines/s\n\n",
		rep.Morse, rep.GoVersion, rep.CPUs, rep.CPUModel, pin, matrixLines, slowLines, slowSinkRate)
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "cell\tsink\tlines sent\tsent lines/s\tdelivered %\tduplicates\tretries\toutput drops\tCPU µs/line\tother CPU %\t")
	rows := append(append([]result(nil), rep.Cells...), capacityRuns(rep)...)
	if rep.UDPFlood != nil {
		rows = append(rows, *rep.UDPFlood)
	}
	rows = append(rows, rep.UDPProbes...)
	for _, r := range rows {
		if r.Error != "" {
			fmt.Fprintf(tw, "%s\t\tfailed\t\t\t\t\t\t\t\t\n", r.Scenario.Name)
			continue
		}
		sink := "at once"
		if r.Scenario.SinkRate > 0 {
			sink = fmt.Sprintf("%.0f/s", r.Scenario.SinkRate)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\t%.2f\t%d\t%d\t%d\t%.2f\t%.1f\t\n", r.Scenario.Name, sink,
			r.LinesSent+r.LinesFailed, r.SentPerSec, r.DeliveryPct, r.Duplicates, r.Retries, r.OutputDrops,
			r.CPUMicrosLine, r.ForeignCPUPct)
	}
	_ = tw.Flush()
	fmt.Fprintln(w)
	for _, c := range rep.Capacity {
		if c.Lossless {
			fmt.Fprintf(w, "CPU at lossless capacity, %s: %.2f µs/line at %.0f lines/s\n", c.Cell, c.CPUMicrosLine, c.RatePerSec)
		} else {
			fmt.Fprintf(w, "CPU at lossless capacity, %s: no lossless rate found\n", c.Cell)
		}
	}
	if f := rep.UDPFlood; f != nil && f.Error == "" {
		fmt.Fprintf(w, "UDP flood, 8-line datagrams: sent %.0f lines/s, captured %.2f%% (%d datagrams dropped by the kernel), delivered %.2f%%\n",
			f.SentPerSec, f.UDPCapturePct, f.UDPKernelDrops, f.DeliveryPct)
	}
	if rep.UDPFlood != nil {
		fmt.Fprintf(w, "UDP lossless rate, 8-line datagrams: %.0f lines/s\n", rep.UDPLosslessRate)
	}
	if b := rep.Bomb; b != nil {
		if b.Error != "" {
			fmt.Fprintf(w, "gzip bomb: failed: %s\n", b.Error)
		} else {
			fmt.Fprintf(w, "gzip bomb (%.0f KiB inflating to %d MiB): HTTP %d in %.2fs, RSS %.1f MiB idle, peak %.1f MiB: growth %.1f MiB\n",
				float64(b.BodyBytes)/1024, b.InflatedMiB, b.Status, b.AnswerSec, b.IdleRSSMiB, b.PeakRSSMiB, b.GrowthMiB)
		}
	}
	printMatrixNotes(w, rep, rows)
}

func capacityRuns(rep *matrixReport) []result {
	var out []result
	for _, c := range rep.Capacity {
		out = append(out, c.Runs...)
	}
	return out
}

func printMatrixNotes(w io.Writer, rep *matrixReport, rows []result) {
	for _, r := range rows {
		notes := r.commonNotes()
		if r.Scenario.SinkRate > 0 {
			notes = append(notes, fmt.Sprintf("sender achieved %.0f lines/s against a sink at %.0f lines/s", r.SentPerSec, r.Scenario.SinkRate))
		}
		if len(notes) > 0 {
			fmt.Fprintf(w, "\n%s:\n  %s", r.Scenario.Name, strings.Join(notes, "\n  "))
		}
	}
	fmt.Fprintln(w, "\n\ntargets:")
	missed := 0
	for _, t := range rep.Targets {
		state := "MISSED"
		if t.Met {
			state = "met"
		} else {
			missed++
		}
		fmt.Fprintf(w, "  %-6s %-38s %-20s %.2f (limit %.4g)\n", state, t.Goal, t.Scenario, t.Value, t.Limit)
	}
	fmt.Fprintf(w, "\n%d of %d targets missed\nworst cell: %s\n", missed, len(rep.Targets), rep.Worst)
}
