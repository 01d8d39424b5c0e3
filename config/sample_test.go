package config

import (
	"reflect"
	"strings"
	"testing"

	"github.com/morse-agent/morse"
	"github.com/stretchr/testify/require"
)

func TestSampleConfigRoundTrip(t *testing.T) {
	reg := cfgTestRegistry(t)
	tests := []struct {
		name                      string
		inputFilter, outputFilter []string
		wantInputs, wantOutputs   []string
		wantAbsent                []string
	}{
		{name: "everything", wantInputs: []string{"fake", "quiet"}, wantOutputs: []string{"fakeout", "nullout"}},
		{
			name: "narrowed", inputFilter: []string{"quiet"}, outputFilter: []string{"fakeout", "unknown"},
			wantInputs: []string{"quiet"}, wantOutputs: []string{"fakeout"},
			wantAbsent: []string{"[[inputs.fake]]", "[[outputs.nullout]]"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sample := SampleConfig(reg, tt.inputFilter, tt.outputFilter)
			for _, s := range tt.wantAbsent {
				require.NotContains(t, sample, s)
			}
			cfg, err := Load(Options{
				Sources: []Source{{Name: "sample.conf", Data: []byte(sample)}}, Registry: reg,
				LookupEnv: func(string) (string, bool) { return "", false },
			})
			require.NoError(t, err, sample)
			require.Equal(t, DefaultAgentConfig(), cfg.Agent, "the sample's [agent] must hold the defaults")
			require.Empty(t, cfg.GlobalTags)
			var ins, outs []string
			for _, in := range cfg.Inputs {
				ins = append(ins, in.Name)
			}
			for _, o := range cfg.Outputs {
				outs = append(outs, o.Name)
			}
			require.Equal(t, tt.wantInputs, ins)
			require.Equal(t, tt.wantOutputs, outs)
		})
	}
}

// TestSampleConfigHasEveryAgentKey keeps the sample in step with AgentConfig: a key added to
// the struct must be documented in the sample too.
func TestSampleConfigHasEveryAgentKey(t *testing.T) {
	sample := SampleConfig(morse.NewRegistry(), nil, nil)
	for _, f := range reflect.VisibleFields(reflect.TypeFor[AgentConfig]()) {
		if f.Anonymous {
			continue // its own fields are visited
		}
		key := f.Tag.Get("toml")
		require.Contains(t, sample, "\n  "+key+" = ", "agent key %s is missing from the sample", key)
	}
}

func TestSampleConfigAddsMissingHeaders(t *testing.T) {
	sample := SampleConfig(cfgTestRegistry(t), nil, nil)
	// quiet's sample has no header, fake's has one: each header must appear exactly once.
	require.Equal(t, 1, strings.Count(sample, "[[inputs.quiet]]"))
	require.Equal(t, 1, strings.Count(sample, "[[inputs.fake]]"))
	require.Equal(t, 1, strings.Count(sample, "[[outputs.nullout]]"))
	require.Contains(t, sample, "# An input without options\n[[inputs.quiet]]\n")
	require.Less(t, strings.Index(sample, "[[outputs.fakeout]]"), strings.Index(sample, "[[inputs.fake]]"),
		"outputs come first, as in Telegraf's sample")
}
