package agent

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/config"
	"github.com/morse-agent/morse/internal/testutil"
)

// BenchmarkAgentCPUNoProcessors is BenchmarkAccumulatorAdd reporting the process's CPU time
// per metric (user and system, every goroutine: the input's, the accumulator's, the
// output's drain), which a busy machine disturbs far less than wall time. It has no
// processor and no aggregator, and builds on code that every revision has, so that it can
// compare the agent before the processing stage existed with the agent whose stage is
// empty (see docs/processors.md).
func BenchmarkAgentCPUNoProcessors(b *testing.B) {
	for _, batch := range []bool{false, true} {
		name := map[bool]string{false: "one_by_one", true: "batch_256"}[batch]
		b.Run(name, func(b *testing.B) {
			cfg := config.DefaultConfig()
			cfg.Agent.OmitHostname = true
			cfg.AddInput("loop", &loopInput{n: b.N, batch: batch})
			cfg.AddOutput("lines", &discardLines{})
			a, err := NewAgent(cfg, AgentOptions{Logger: testutil.QuietLogger()})
			require.NoError(b, err)
			b.ReportAllocs()
			cpu0 := processCPU()
			b.ResetTimer()
			require.NoError(b, a.Once(context.Background()))
			b.StopTimer()
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/metric")
		})
	}
}

// processCPU is the CPU time the process used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
