package flood

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	"github.com/morse-agent/morse/bench/loadgen"
)

// result is what one scenario measured.
type result struct {
	Scenario scenario `json:"scenario"`
	// LinesSent counts the lines written to the socket; Requests the datagrams or TCP writes
	// that carried them.
	LinesSent  int64   `json:"lines_sent"`
	Requests   int64   `json:"requests"`
	LoadSec    float64 `json:"load_sec"`
	SentPerSec float64 `json:"sent_lines_per_sec"`
	LoadCPUSec float64 `json:"load_cpu_sec"`
	// Captured is the sum of the counters the agent wrote: the lines its input aggregated.
	Captured   int64   `json:"captured"`
	CapturePct float64 `json:"capture_pct"`
	// AgentCPUSec is the agent's CPU time from the start of the flood until its count
	// settled, all of it: the input, the accumulator and outputs.file.
	AgentCPUSec    float64 `json:"agent_cpu_sec"`
	LinesPerCPUSec float64 `json:"lines_per_cpu_sec"`
	// KernelDrops are the datagrams the kernel dropped at the agent's full socket buffer
	// (/proc/net/udp), which no server can count itself.
	KernelDrops int64 `json:"udp_kernel_drops,omitempty"`
	// InputDrops are the datagrams the input dropped at allowed_pending_messages
	// (internal_statsd's udp_packets_dropped), ParseErrors the lines it refused
	// (internal_syslog's malformed_messages and framing_errors for syslog), and
	// OutputDrops what the output dropped (internal_write's metrics_dropped), which the
	// count would then miss.
	InputDrops  int64 `json:"input_drops"`
	ParseErrors int64 `json:"parse_errors"`
	OutputDrops int64 `json:"output_drops"`
	// Unaccounted is the lines sent that were neither captured nor in a counted drop: for
	// UDP, the datagrams the kernel or the input dropped, at the flood's lines per datagram
	// (on average). It is 0 when every loss was counted by someone.
	Unaccounted int64 `json:"unaccounted,omitempty"`
	// FileErrors counts lines of the agent's output that did not parse.
	FileErrors int64 `json:"file_errors,omitempty"`
	// LoadAvg1 is the machine's one-minute load average when the count settled.
	LoadAvg1 float64 `json:"loadavg_1m"`
	Error    string  `json:"error,omitempty"`
}

func (r *result) setLoad(rep *loadgen.Report, cpu time.Duration) {
	r.LinesSent, r.Requests = rep.Lines, rep.Requests
	r.LoadSec, r.SentPerSec, r.LoadCPUSec = rep.ElapsedSec, rep.LinesPerSec, cpu.Seconds()
}

func (r *result) setCaptured(t *tally, agentCPU time.Duration) {
	r.Captured, r.FileErrors = t.Captured, t.Refused
	if r.LinesSent > 0 {
		r.CapturePct = 100 * float64(r.Captured) / float64(r.LinesSent)
	}
	r.AgentCPUSec = agentCPU.Seconds()
	if r.AgentCPUSec > 0 {
		r.LinesPerCPUSec = float64(r.Captured) / r.AgentCPUSec
	}
	if r.Scenario.Input == "syslog" {
		r.ParseErrors = t.Internal["internal_syslog malformed_messages"] + t.Internal["internal_syslog framing_errors"]
	} else {
		r.InputDrops = t.Internal["internal_statsd udp_packets_dropped"]
		r.ParseErrors = t.Internal["internal_statsd parse_errors"]
	}
	r.OutputDrops = t.Internal["internal_write metrics_dropped"]
	if r.Scenario.Protocol == "udp" && r.Requests > 0 {
		perDatagram := float64(r.LinesSent) / float64(r.Requests)
		r.Unaccounted = r.LinesSent - r.Captured - int64(math.Round(float64(r.KernelDrops+r.InputDrops)*perDatagram))
	} else {
		r.Unaccounted = r.LinesSent - r.Captured
	}
}

// report is a whole run's figures.
type report struct {
	Started       time.Time `json:"started"`
	CPUs          int       `json:"cpus"`
	AgentCore     int       `json:"agent_core"`
	LoadCore      int       `json:"load_core"`
	DurationSec   float64   `json:"duration_sec"`
	Hosts         int       `json:"hosts"`
	LoadAvgBefore float64   `json:"loadavg_1m_before"`
	LoadAvgAfter  float64   `json:"loadavg_1m_after"`
	Results       []result  `json:"results"`
}

func newReport(o *options) *report {
	return &report{Started: time.Now().UTC().Truncate(time.Second), CPUs: cpus(), AgentCore: o.agentCore,
		LoadCore: o.loadCore, DurationSec: o.duration.Seconds(), Hosts: o.hosts, LoadAvgBefore: loadAvg()}
}

// write writes the report to out.json and out.md.
func (r *report) write(out string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(out+".json", append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(out+".md", []byte(r.markdown()), 0o644)
}

// markdown is the report as the table of docs/bench/statsd.md, with the drops that explain
// the capture rate and the machine's load.
func (r *report) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "morse's inputs.statsd and inputs.syslog under a %gs flood (%s, %d CPUs, agent on core %d, load on core %d, "+
		"load average %.1f before and %.1f after)\n\n", r.DurationSec, r.Started.Format(time.RFC3339), r.CPUs,
		r.AgentCore, r.LoadCore, r.LoadAvgBefore, r.LoadAvgAfter)
	b.WriteString("| scenario | lines per request | lines sent | lines captured | capture | agent CPU s | lines per CPU second | kernel drops | input drops | unaccounted | load avg |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, x := range r.Results {
		if x.Error != "" {
			fmt.Fprintf(&b, "| %s | %d | failed: %s ||||||||\n", x.Scenario.Name, x.Scenario.LinesPerRequest,
				strings.ReplaceAll(x.Error, "\n", " "))
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %.2f | %s | %s | %s | %s | %.1f |\n", x.Scenario.Name, perRequest(x.Scenario),
			group(x.LinesSent), group(x.Captured), pct(x.CapturePct), x.AgentCPUSec, group(int64(x.LinesPerCPUSec)),
			group(x.KernelDrops), group(x.InputDrops), group(x.Unaccounted), x.LoadAvg1)
	}
	for _, x := range r.Results {
		if x.OutputDrops > 0 || x.FileErrors > 0 || x.ParseErrors > 0 {
			fmt.Fprintf(&b, "\n%s: the output dropped %d metrics, the input refused %d lines and %d lines of the output "+
				"did not parse: the count misses what they held.\n", x.Scenario.Name, x.OutputDrops, x.ParseErrors, x.FileErrors)
		}
	}
	return b.String()
}

func perRequest(s scenario) string {
	if s.Protocol == "tcp" {
		return fmt.Sprintf("%d a TCP write, %d connections", s.LinesPerRequest, s.Connections)
	}
	return fmt.Sprintf("%d (datagrams of at most %d bytes)", s.LinesPerRequest, s.UDPPayload)
}

// pct writes a share with two significant digits below 10% and whole percents above.
func pct(p float64) string {
	if p < 10 {
		return fmt.Sprintf("%.1f%%", p)
	}
	return fmt.Sprintf("%.0f%%", p)
}

// group writes n with thousands separated by commas, as the docs' tables do.
func group(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + group(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
