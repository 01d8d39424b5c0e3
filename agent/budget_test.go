package agent

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/batch"
	"github.com/morse-agent/morse/config"
	"github.com/morse-agent/morse/internal/testutil"
)

// budgetWarnings are the warnings about the memory budget among logs.
func budgetWarnings(logs *testutil.Logs) []string {
	var out []string
	for _, w := range logs.Warnings() {
		if strings.Contains(w, "buffer_max_bytes") {
			out = append(out, w)
		}
	}
	return out
}

// TestBufferBudgetWarnsOnceAtLoad: when the byte bounds of the outputs' memory buffers add
// up to more than the budget they share, one warning at load says by how much; disk buffers
// are not counted, and a config within the budget gets none.
func TestBufferBudgetWarnsOnceAtLoad(t *testing.T) {
	cfg := config.DefaultConfig()
	cfg.Agent.BufferMemoryLimit = 64 << 20
	cfg.AddOutput("discard", &testutil.DiscardOutput{}) // the default, 32 MiB
	cfg.AddOutput("discard", &testutil.DiscardOutput{})
	cfg.Outputs[1].Common.BufferConfig.MaxBytes = 48 << 20
	cfg.AddOutput("discard", &testutil.DiscardOutput{})
	cfg.Outputs[2].Common.BufferConfig = config.BufferConfig{Strategy: config.BufferDisk, Directory: t.TempDir(), MaxBytes: 1 << 30}
	logs := &testutil.Logs{}
	a, err := NewAgent(cfg, AgentOptions{Logger: logs.Logger()})
	require.NoError(t, err)
	require.Equal(t, []string{"[agent] the buffer_max_bytes of the 2 outputs with a memory buffer add up to 80.0 MiB, " +
		"16.0 MiB more than the budget of 64.0 MiB that they share (buffer_memory_limit); " +
		"past it the largest buffer loses its oldest metrics, counted as buffer_bytes"}, budgetWarnings(logs))
	require.Equal(t, int64(64<<20), a.budget.Limit())

	cfg.Agent.BufferMemoryLimit = 80 << 20
	logs = &testutil.Logs{}
	_, err = NewAgent(cfg, AgentOptions{Logger: logs.Logger()})
	require.NoError(t, err)
	require.Empty(t, budgetWarnings(logs), "exactly the budget is within it")
}

// TestBufferBudgetWarnsOfRaisedLimits: issue 33's 50 outputs at metric_buffer_limit =
// 100000 set no byte bound, and each default follows its limit (3 KiB a metric): their
// bounds add up far past a budget of 4 GiB, and the one warning says so.
func TestBufferBudgetWarnsOfRaisedLimits(t *testing.T) {
	cfg := config.DefaultConfig()
	cfg.Agent.BufferMemoryLimit = 4 << 30
	cfg.Agent.MetricBufferLimit = 100_000
	for range 50 {
		cfg.AddOutput("discard", &testutil.DiscardOutput{})
	}
	logs := &testutil.Logs{}
	_, err := NewAgent(cfg, AgentOptions{Logger: logs.Logger()})
	require.NoError(t, err)
	require.Equal(t, []string{"[agent] the buffer_max_bytes of the 50 outputs with a memory buffer add up to 14648.4 MiB, " +
		"10552.4 MiB more than the budget of 4096.0 MiB that they share (buffer_memory_limit); " +
		"past it the largest buffer loses its oldest metrics, counted as buffer_bytes"}, budgetWarnings(logs))
}

// TestBufferBudgetDefaultsToAQuarterOfTheMemoryLimit: without buffer_memory_limit the
// budget is a quarter of what the process may use, and a fixed gigabyte if that cannot be
// read.
func TestBufferBudgetDefaultsToAQuarterOfTheMemoryLimit(t *testing.T) {
	orig := memoryLimit
	t.Cleanup(func() { memoryLimit = orig })
	memoryLimit = func() (int64, string, error) { return 512 << 20, "/sys/fs/cgroup/memory.max", nil }
	cfg := config.DefaultConfig()
	for range 5 {
		cfg.AddOutput("discard", &testutil.DiscardOutput{})
	}
	logs := &testutil.Logs{}
	a, err := NewAgent(cfg, AgentOptions{Logger: logs.Logger()})
	require.NoError(t, err)
	require.Equal(t, int64(128<<20), a.budget.Limit())
	require.Len(t, budgetWarnings(logs), 1)
	require.Contains(t, budgetWarnings(logs)[0], "add up to 160.0 MiB, 32.0 MiB more than the budget of 128.0 MiB "+
		"that they share (a quarter of 512.0 MiB from /sys/fs/cgroup/memory.max)")

	memoryLimit = func() (int64, string, error) { return 0, "", errors.New("memory limit: no /proc") }
	limit, from := bufferBudget(cfg.Agent)
	require.Equal(t, int64(fallbackBufferMemory), limit)
	require.Equal(t, "1 GiB, the memory limit unknown: memory limit: no /proc", from)
}

// TestBufferMemoryLimitMustNotBeNegative: validation names the key.
func TestBufferMemoryLimitMustNotBeNegative(t *testing.T) {
	ac := config.DefaultAgentConfig()
	ac.BufferMemoryLimit = morse.Size(-1)
	require.ErrorContains(t, ac.Validate(), "buffer_memory_limit")
	require.Equal(t, int64(32<<20), int64(batch.DefaultBufferMaxBytes))
}
