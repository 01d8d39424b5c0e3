package e2e

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// target is one of issue #4's goals and whether this run met it.
type target struct {
	Goal     string  `json:"goal"`
	Scenario string  `json:"scenario"`
	Value    float64 `json:"value"`
	Limit    float64 `json:"limit"`
	Met      bool    `json:"met"`
}

// evaluate checks the results against the targets: at most 2.5 CPU-µs per line from HTTP or
// TCP through to the output's wire (1 µs per row into IoTDB, issue 39), at least 99% delivery from one load tool flat out over
// HTTP or TCP, and 100% UDP capture at the rate one sender reaches.
func evaluate(results []result) []target {
	var out []target
	for _, r := range results {
		if r.Error != "" || r.Scenario.Input == "" {
			continue
		}
		flatOut := r.Scenario.Rate == 0
		switch r.Scenario.Transport {
		case "http", "tcp":
			// CPU per line counts for flat-out and paced runs alike; delivery is stated
			// for one load tool flat out.
			goal, limit := "agent CPU-µs per line <= 2.5", 2.5
			if r.Scenario.Sink == sinkIoTDB {
				goal, limit = "agent CPU-µs per row <= 1 (IoTDB)", 1 // issue 39
			}
			out = append(out, target{Goal: goal, Scenario: r.Scenario.Name,
				Value: r.CPUMicrosLine, Limit: limit, Met: r.CPUMicrosLine <= limit})
			if flatOut {
				out = append(out, target{Goal: "delivery % >= 99", Scenario: r.Scenario.Name,
					Value: r.DeliveryPct, Limit: 99, Met: r.DeliveryPct >= 99})
			}
		case "udp":
			if !flatOut {
				continue
			}
			out = append(out, target{Goal: "UDP capture % = 100", Scenario: r.Scenario.Name,
				Value: r.UDPCapturePct, Limit: 100, Met: r.UDPCapturePct >= 100})
		}
	}
	return out
}

// printTable writes the results for people.
func printTable(w io.Writer, rep *report) {
	pin := "pinned: agent and load tool on separate cores"
	if !rep.Pinned {
		pin = "NOT pinned (no taskset)"
	}
	fmt.Fprintf(w, "morse end-to-end benchmark: %s, %s, %d CPUs (%s), %s, %s per scenario\n\n",
		rep.Morse, rep.GoVersion, rep.CPUs, rep.CPUModel, pin, rep.Duration)
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\trate asked\tlines sent\tsent lines/s\tdelivered lines/s\tdelivery %\tCPU µs/line\tpeak RSS MiB\tUDP capture %\tother CPU %\t")
	for _, r := range rep.Results {
		if r.Error != "" {
			fmt.Fprintf(tw, "%s\t\tfailed\t\t\t\t\t\t\t\t\n", r.Scenario.Name)
			continue
		}
		agent := func(f string, v float64) string {
			if r.Scenario.Input == "" {
				return "-"
			}
			return fmt.Sprintf(f, v)
		}
		udp := "-"
		if r.Scenario.Transport == "udp" {
			udp = fmt.Sprintf("%.2f", r.UDPCapturePct)
		}
		rate := "flat out"
		if r.Scenario.Rate > 0 {
			rate = fmt.Sprintf("%.0f/s", r.Scenario.Rate)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\t%.0f\t%.2f\t%s\t%s\t%s\t%.1f\t\n", r.Scenario.Name, rate, r.LinesSent,
			r.SentPerSec, r.DeliveredPerSec, r.DeliveryPct,
			agent("%.2f", r.CPUMicrosLine), agent("%.1f", r.PeakRSSMiB), udp, r.ForeignCPUPct)
	}
	_ = tw.Flush()
	printNotes(w, rep)
}

// commonNotes are the notes every table prints under a result: its error, a neighbour's CPU
// and lines that failed to send.
func (r *result) commonNotes() []string {
	var notes []string
	if r.Error != "" {
		notes = append(notes, "error: "+r.Error)
	}
	if r.ForeignCPUPct > 5 {
		notes = append(notes, fmt.Sprintf("other processes used %.0f%% of the machine's CPU during this run: its figures are skewed", r.ForeignCPUPct))
	}
	if r.LinesFailed > 0 && r.Load != nil {
		notes = append(notes, fmt.Sprintf("%d lines failed to send: %s", r.LinesFailed, strings.Join(r.Load.ErrorSamples, "; ")))
	}
	return notes
}

func printNotes(w io.Writer, rep *report) {
	for _, r := range rep.Results {
		notes := r.commonNotes()
		if r.UDPKernelDrops > 0 {
			notes = append(notes, fmt.Sprintf("the kernel dropped %d datagrams (receive buffer full)", r.UDPKernelDrops))
		}
		notes = append(notes, dropCounters(r.AgentCounters)...)
		if len(notes) > 0 {
			fmt.Fprintf(w, "\n%s:\n  %s\n", r.Scenario.Name, strings.Join(notes, "\n  "))
		}
	}
	for _, s := range rep.Skipped {
		fmt.Fprintf(w, "\nskipped %s\n", s)
	}
	if len(rep.Targets) > 0 {
		fmt.Fprintln(w, "\ntargets:")
	}
	for _, t := range rep.Targets {
		state := "MISSED"
		if t.Met {
			state = "met"
		}
		fmt.Fprintf(w, "  %-6s %-30s %-11s %.2f (limit %.4g)\n", state, t.Goal, t.Scenario, t.Value, t.Limit)
	}
}
