// Package gathertest runs an input inside a real agent, once, beside inputs.internal, and
// reads back the input's internal_gather counters: what an operator sees of a gather that
// failed. It sits under plugins/inputs/internal so that the inputs' tests may import it.
package gathertest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/agent"
	"github.com/morse-agent/morse/config"
	"github.com/morse-agent/morse/internal/testutil"
	self "github.com/morse-agent/morse/plugins/inputs/internal"
)

// Counters runs an agent once with in registered as name, beside inputs.internal and a
// discarding output, and returns internal_gather's fields of name's series ("errors",
// "gather_errors", "metrics_gathered"...) as integers.
func Counters(t testing.TB, name string, in morse.Input) map[string]int64 {
	t.Helper()
	cfg := config.DefaultConfig()
	cfg.Agent.OmitHostname = true
	s := self.New()
	cfg.AddInput("internal", s)
	cfg.AddInput(name, in)
	cfg.AddOutput("sink", &testutil.ScriptOutput{})
	a, err := agent.NewAgent(cfg, agent.AgentOptions{Logger: testutil.QuietLogger()})
	require.NoError(t, err)
	require.NoError(t, a.Once(context.Background()))
	acc := &testutil.Accumulator{}
	require.NoError(t, s.Gather(context.Background(), acc))
	for _, m := range acc.Metrics() {
		if v, _ := m.Tag("input"); m.Name() != "internal_gather" || v != name {
			continue
		}
		out := map[string]int64{}
		for _, f := range m.Fields() {
			if f.Value.Type() == morse.TypeUint {
				out[f.Key] = int64(f.Value.Uint())
			} else {
				out[f.Key] = f.Value.Int()
			}
		}
		return out
	}
	require.Fail(t, "no internal_gather series", "for input %q", name)
	return nil
}
