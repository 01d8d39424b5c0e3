package e2e

import (
	"github.com/morse-agent/morse/internal/testutil"

	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/bench/launch"
	"github.com/morse-agent/morse/bench/loadgen"
	"github.com/morse-agent/morse/plugins/parsers/influx"
)

// settleFor is how long the sink's count must stand still before the agent counts as done
// delivering: three flush intervals, so that one slow flush is not taken for the end.
const settleFor = 3 * time.Second

// sinkStats reads the counters of the sink at addr.
func (e *env) sinkStats(addr string) (loadgen.SinkStats, error) {
	var st loadgen.SinkStats
	resp, err := e.http.Get("http://" + addr + "/stats")
	if err != nil {
		return st, fmt.Errorf("sink stats: %w", err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return st, fmt.Errorf("sink stats: %w", err)
	}
	return st, nil
}

// resetSink zeroes the counters of the sink at addr, so that a scenario counts from zero.
func (e *env) resetSink(addr string) error {
	resp, err := e.http.Post("http://"+addr+"/reset", "", nil)
	if err != nil {
		return fmt.Errorf("sink reset: %w", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("sink reset: HTTP %d", resp.StatusCode)
	}
	return nil
}

// waitDelivered waits until the sink at addr has received want distinct lines, or its count
// has stood still for settleFor, at most a minute. The agent's shutdown flush delivers
// whatever is left after that.
func (e *env) waitDelivered(ctx context.Context, p *launch.Process, addr string, want int64) {
	last, changed := int64(-1), time.Now()
	_ = p.WaitFor(ctx, time.Minute, "delivery", func() bool {
		st, err := e.sinkStats(addr)
		if err != nil {
			return true
		}
		if st.Distinct != last {
			last, changed = st.Distinct, time.Now()
		}
		return st.Distinct >= want || time.Since(changed) >= settleFor
	})
}

// measureUDP waits for the agent to read what is queued on its UDP sockets, then reads how
// many datagrams the kernel dropped because the sockets' buffers were full. Lines in dropped
// datagrams were never captured: capture is the share of lines that were not dropped,
// taking each dropped datagram as an average one.
func (e *env) measureUDP(ctx context.Context, a *agentRun, res *result) {
	var s testutil.UDPPort
	_ = a.proc.WaitFor(ctx, 10*time.Second, "UDP queue to drain", func() bool {
		var err error
		s, err = testutil.ReadUDPPort(a.port)
		return err != nil || s.Queued == 0
	})
	res.UDPKernelDrops = s.Drops
	rep := res.Load
	if rep == nil || rep.Requests == 0 || rep.Lines == 0 {
		return
	}
	linesPerDatagram := float64(rep.Lines) / float64(rep.Requests)
	lost := float64(s.Drops) * linesPerDatagram
	res.UDPCapturePct = 100 * (1 - lost/float64(rep.Lines))
}

// readCounters reads the agent's own counters from the file inputs.internal wrote to, and
// keeps the last value of each series and field, keyed "measurement,tags field".
func readCounters(path string) map[string]int64 {
	data, err := os.ReadFile(path)
	if err != nil || len(data) == 0 {
		return nil
	}
	out := map[string]int64{}
	var p influx.Parser
	p.Parse(data, func(m morse.Metric) {
		if m.Name() == "internal_memstats" {
			return
		}
		var key strings.Builder
		key.WriteString(m.Name())
		for _, t := range m.Tags() {
			key.WriteString("," + t.Key + "=" + t.Value)
		}
		for _, f := range m.Fields() {
			switch f.Value.Type() {
			case morse.TypeInt:
				out[key.String()+" "+f.Key] = f.Value.Int()
			case morse.TypeUint:
				out[key.String()+" "+f.Key] = int64(f.Value.Uint())
			case morse.TypeFloat:
				out[key.String()+" "+f.Key] = int64(f.Value.Float())
			}
		}
	})
	return out
}

// outputDrops sums what the outputs dropped, evictions included, from the agent's counters.
func outputDrops(c map[string]int64) int64 {
	var n int64
	for k, v := range c {
		if strings.HasPrefix(k, "internal_write,") && strings.HasSuffix(k, " metrics_dropped") {
			n += v
		}
	}
	return n
}

// dropCounters picks from the agent's counters the ones that say a metric was lost, with
// a non-zero value, for the table's notes.
func dropCounters(c map[string]int64) []string {
	var out []string
	for k, v := range c {
		if v != 0 && (strings.Contains(k, "dropped") || strings.Contains(k, "error")) {
			out = append(out, fmt.Sprintf("%s=%d", k, v))
		}
	}
	sort.Strings(out)
	return out
}

// newHTTPClient talks to the sink only, never through a proxy.
func newHTTPClient() *http.Client {
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil}}
}
