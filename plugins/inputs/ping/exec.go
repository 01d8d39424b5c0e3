package ping

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/morse-agent/morse"
)

// execGrace is what the exec method waits beyond the per-reply timeout for ping to finish,
// as Telegraf waits 60s plus 5.
const execGrace = 65 * time.Second

// timeoutExit is the exit status of iputils' ping when some replies did not come back; the
// output is then still parsed, as Telegraf does on Linux.
const timeoutExit = 1

func (p *Ping) gatherExec(ctx context.Context, acc morse.Accumulator, host string) {
	fields := map[string]any{"result_code": resultSuccess}
	out, err := p.runPing(ctx, host)
	if err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != timeoutExit {
			if msg := strings.TrimSpace(out); msg != "" {
				err = fmt.Errorf("%w - %s", err, msg)
			}
			acc.AddError(errorf(host, err))
			fields["result_code"] = resultError
			add(acc, host, fields)
			return
		}
		// Replies were missing: Telegraf keeps ping's exit status as the result code.
		fields["result_code"] = timeoutExit
	}
	st, err := parseOutput(out)
	if err != nil {
		acc.AddError(errorf(host, err))
		fields["result_code"] = resultError
		add(acc, host, fields)
		return
	}
	fields["packets_transmitted"] = st.transmitted
	fields["packets_received"] = st.received
	fields["percent_packet_loss"] = float64(st.transmitted-st.received) / float64(st.transmitted) * 100
	if st.ttl >= 0 {
		fields["ttl"] = st.ttl
	}
	for name, v := range map[string]float64{"minimum_response_ms": st.min, "average_response_ms": st.avg,
		"maximum_response_ms": st.max, "standard_deviation_ms": st.stddev} {
		if v >= 0 {
			fields[name] = v
		}
	}
	add(acc, host, fields)
}

// runPing runs the ping program on host and returns what it printed, stdout and stderr.
func (p *Ping) runPing(ctx context.Context, host string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(p.Timeout)+execGrace)
	defer cancel()
	cmd := exec.CommandContext(ctx, p.Binary, p.args(host)...)
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return string(out), fmt.Errorf("%s did not finish: %w", p.Binary, ctx.Err())
	}
	return string(out), err
}

// args are iputils-ping's arguments for the options, as Telegraf passes them on Linux.
func (p *Ping) args(host string) []string {
	if len(p.Arguments) > 0 {
		return append(append([]string(nil), p.Arguments...), host)
	}
	args := []string{"-c", strconv.Itoa(p.Count), "-n", "-s", "16"}
	if p.PingInterval > 0 {
		args = append(args, "-i", strconv.FormatFloat(time.Duration(p.PingInterval).Seconds(), 'f', -1, 64))
	}
	if p.Timeout > 0 {
		args = append(args, "-W", strconv.FormatFloat(time.Duration(p.Timeout).Seconds(), 'f', -1, 64))
	}
	if p.Deadline > 0 {
		args = append(args, "-w", strconv.Itoa(int(time.Duration(p.Deadline).Seconds())))
	}
	if p.Interface != "" {
		args = append(args, "-I", p.Interface)
	}
	return append(args, host)
}

// execStats is what ping's summary says; -1 for what it does not say.
type execStats struct {
	transmitted, received, ttl int
	min, avg, max, stddev      float64
}

var ttlRE = regexp.MustCompile(`(?:ttl|hlim)=(\d+)`)

// parseOutput reads the output of iputils', BSD's and BusyBox's ping: the TTL of the first
// reply, the "N packets transmitted, M received" line and the "min/avg/max[/mdev]" line.
// Output without the transmitted line is an error.
func parseOutput(out string) (execStats, error) {
	st := execStats{ttl: -1, min: -1, avg: -1, max: -1, stddev: -1}
	found := false
	for line := range strings.Lines(out) {
		switch {
		case st.ttl < 0 && ttlRE.MatchString(line):
			st.ttl, _ = strconv.Atoi(ttlRE.FindStringSubmatch(line)[1])
		case strings.Contains(line, "transmitted") && strings.Contains(line, "received"):
			var err error
			if st.transmitted, st.received, err = packetCounts(line); err != nil {
				return st, err
			}
			found = true
		case strings.Contains(line, "min/avg/max"):
			if err := st.roundTrips(line); err != nil {
				return st, err
			}
		}
	}
	if !found || st.transmitted == 0 {
		return st, errors.New("fatal error processing ping output: no packets transmitted")
	}
	return st, nil
}

func packetCounts(line string) (trans, recv int, err error) {
	parts := strings.Split(line, ", ")
	if len(parts) < 2 {
		return 0, 0, fmt.Errorf("unexpected ping summary %q", strings.TrimSpace(line))
	}
	if trans, err = strconv.Atoi(strings.Fields(parts[0])[0]); err != nil {
		return 0, 0, fmt.Errorf("packets transmitted in %q: %w", strings.TrimSpace(line), err)
	}
	if recv, err = strconv.Atoi(strings.Fields(parts[1])[0]); err != nil {
		return 0, 0, fmt.Errorf("packets received in %q: %w", strings.TrimSpace(line), err)
	}
	return trans, recv, nil
}

// roundTrips reads "rtt min/avg/max/mdev = 0.037/0.302/0.567/0.265 ms".
func (st *execStats) roundTrips(line string) error {
	_, values, ok := strings.Cut(line, "= ")
	if !ok {
		return fmt.Errorf("unexpected round-trip line %q", strings.TrimSpace(line))
	}
	data := strings.Split(strings.Fields(values)[0], "/")
	dst := []*float64{&st.min, &st.avg, &st.max, &st.stddev}
	if len(data) < 3 || len(data) > 4 {
		return fmt.Errorf("unexpected round-trip line %q", strings.TrimSpace(line))
	}
	for i, s := range data {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("round trip in %q: %w", strings.TrimSpace(line), err)
		}
		*dst[i] = v
	}
	return nil
}
