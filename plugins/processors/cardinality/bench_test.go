package cardinality

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/morse-agent/morse/internal/coarseclock"
	"github.com/morse-agent/morse/internal/testutil"
)

// steadyInput is 64 series of a typical system metric with four tags; all their values
// have been seen, which is the guard's steady path.
func steadyInput(b *testing.B, lines bool) []byte {
	var sb strings.Builder
	for i := range 64 {
		fmt.Fprintf(&sb, "cpu,cpu=cpu%d,host=web-%d,region=eu-west,dc=fra usage_user=1.5,usage_system=0.5 1704067200000000000\n", i%8, i/8)
	}
	return []byte(sb.String())
}

func BenchmarkGuard(b *testing.B) {
	for _, tt := range []struct {
		name   string
		lines  bool
		singly bool
	}{
		{"steady/one-per-call", false, true},
		{"steady/batch-64", false, false},
		{"steady/line-metrics/one-per-call", true, true},
		{"steady/line-metrics/batch-64", true, false},
	} {
		b.Run(tt.name, func(b *testing.B) {
			g, _, _ := newGuard(b, func(g *Guard) { g.Now = nil })
			agentsClock(b, g)
			ms := testutil.Parse(b, string(steadyInput(b, tt.lines)), tt.lines)
			g.Apply(append(ms[:0:0], ms...)) // every value seen once
			if tt.singly {
				testutil.BenchProcessorSingly(b, g, ms)
			} else {
				testutil.BenchProcessor(b, g, ms)
			}
		})
	}
	// New values all the time: a key under max_values that keeps growing, then one past it
	// whose tag becomes a field in every metric.
	for _, tt := range []struct {
		name      string
		maxValues int
		lines     bool
	}{
		{"churn/counting", 1 << 30, false},
		{"churn/converting", 10, false},
		{"churn/converting/line-metrics", 10, true},
	} {
		b.Run(tt.name, func(b *testing.B) {
			g, _, _ := newGuard(b, func(g *Guard) { g.MaxValues, g.Now = tt.maxValues, time.Now })
			var sb strings.Builder
			for i := range 4096 {
				fmt.Fprintf(&sb, "req,host=web-1,request_id=%08x latency=12 1704067200000000000\n", i*2654435761)
			}
			ms := testutil.Parse(b, sb.String(), tt.lines)
			testutil.BenchProcessorSingly(b, g, ms)
		})
	}
}

// agentsClock gives g the clock the agent runs it with: a coarse clock that ticks every
// quarter of a second (agent.coarseTick), running.
func agentsClock(b *testing.B, g *Guard) {
	c := coarseclock.New(250 * time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { c.Run(ctx) })
	b.Cleanup(func() { cancel(); wg.Wait() })
	g.SetCoarseClock(c.Now, c.Resolution())
}
