package e2e

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// printVMReport writes the cells of `morse-bench vmagent` for people, as a Markdown table
// that docs/bench/ takes as it is, then the worst cell of each group against its target.
func printVMReport(w io.Writer, rep *vmReport) {
	pin := "agent pinned to its core, load and VictoriaMetrics on the other"
	if !rep.Pinned {
		pin = "NOT pinned (no taskset)"
	}
	fmt.Fprintf(w, "%s against vmagent %s, remote write to VictoriaMetrics %s: %s, %d CPUs (%s), %s\n\n",
		rep.Morse, rep.VMAgent, rep.VMAgent, rep.GoVersion, rep.CPUs, rep.CPUModel, pin)
	tw := tabwriter.NewWriter(w, 2, 8, 1, ' ', 0)
	fmt.Fprintln(tw, "| cell\t| morse µs/sample\t| vmagent µs/sample\t| ratio\t| target\t| morse samples/s\t| vmagent samples/s\t| morse µs/line\t| vmagent µs/line\t| morse RSS MiB\t| vmagent RSS MiB\t| load avg\t| other CPU %\t|")
	fmt.Fprintln(tw, "|---\t|---\t|---\t|---\t|---\t|---\t|---\t|---\t|---\t|---\t|---\t|---\t|---\t|")
	for _, c := range rep.Cells {
		m, v := c.Morse, c.VMAgent
		fmt.Fprintf(tw, "| %s\t| %.3f\t| %.3f\t| %.2f\t| ≤ %.1f %s\t| %.0f\t| %.0f\t| %s\t| %s\t| %.0f\t| %.0f\t| %.1f / %.1f\t| %.0f / %.0f\t|\n",
			c.Name, m.CPUMicrosSample, v.CPUMicrosSample, c.Ratio, c.Limit, metWord(c.Met), m.SamplesPerSec, v.SamplesPerSec,
			perLine(m), perLine(v), m.PeakRSSMiB, v.PeakRSSMiB, m.LoadAvg1, v.LoadAvg1, m.ForeignCPUPct, v.ForeignCPUPct)
	}
	_ = tw.Flush()
	for _, c := range rep.Cells {
		var notes []string
		for _, a := range []struct {
			name string
			f    agentRunFigures
		}{{"morse", c.Morse}, {"vmagent", c.VMAgent}} {
			if a.f.Error != "" {
				notes = append(notes, a.name+": error: "+a.f.Error)
			}
			if a.f.Failed > 0 {
				notes = append(notes, fmt.Sprintf("%s: %d lines failed to send", a.name, a.f.Failed))
			}
			if len(a.f.OtherRuns) > 0 {
				notes = append(notes, fmt.Sprintf("%s: other runs %v µs/sample", a.name, a.f.OtherRuns))
			}
		}
		if len(notes) > 0 {
			fmt.Fprintf(w, "\n%s:\n  %s\n", c.Name, strings.Join(notes, "\n  "))
		}
	}
	fmt.Fprintln(w, "\nworst cells:")
	for _, x := range rep.Worst {
		fmt.Fprintf(w, "  %-6s %-6s %-16s morse/vmagent CPU per sample %.2f (target ≤ %.1f)\n", metWord(x.Met), x.Group, x.Cell, x.Ratio, x.Limit)
	}
	fmt.Fprintf(w, "load average (1 min) at the end: %.1f\n", rep.LoadAvgAtFinish)
}

func metWord(met bool) string {
	if met {
		return "met"
	}
	return "MISSED"
}

func perLine(f agentRunFigures) string {
	if f.CPUMicrosLine == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", f.CPUMicrosLine)
}
