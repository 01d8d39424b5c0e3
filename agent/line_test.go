package agent

import (
	"context"
	"testing"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/config"
	"github.com/morse-agent/morse/filter"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/stretchr/testify/require"
)

var lineTime = time.Unix(1700000000, 0).UTC() // whole seconds: a gather rounds to the second

func mustFilter(t *testing.T, c filter.Config) *filter.Filter {
	f, err := filter.New(c)
	require.NoError(t, err)
	return f
}

// lineInput emits line metrics and records whether its accumulator prefers them.
type lineInput struct {
	prefers bool
	text    string
}

func (in *lineInput) Gather(_ context.Context, acc morse.Accumulator) error {
	in.prefers = acc.(morse.LineAccumulator).PrefersLines()
	text := in.text
	if text == "" {
		text = "m,t=a v=1i,u=2u"
	}
	acc.AddMetric(morse.NewLineMetric(morse.LineText{Text: text, Uints: true}, lineTime))
	return nil
}

// lineSink is an output that takes line metrics as they are.
type lineSink struct{ testutil.ScriptOutput }

func (o *lineSink) WritesLines() bool { return true }

// TestPrefersLinesFollowsTheConfig: an accumulator asks for line metrics when they would
// reach the outputs as they are, or be expanded only where an output selects them by name.
func TestPrefersLinesFollowsTheConfig(t *testing.T) {
	newFilter := func(c filter.Config) func(*testing.T) *filter.Filter {
		return func(t *testing.T) *filter.Filter { return mustFilter(t, c) }
	}
	names := newFilter(filter.Config{NamePass: []string{"internal*"}})
	drop := newFilter(filter.Config{NameDrop: []string{"internal*"}})
	tags := newFilter(filter.Config{TagPass: map[string][]string{"t": {"a"}}})
	cases := []struct {
		name    string
		outs    []morse.Output
		filters []func(*testing.T) *filter.Filter // per output, nil for none
		edit    func(cfg *config.Config, in *config.InputConfig)
		want    bool
	}{
		{"a line output", []morse.Output{&lineSink{}}, nil, nil, true},
		{"two line outputs", []morse.Output{&lineSink{}, &lineSink{}}, nil, nil, true},
		{"an output that takes everything expanded", []morse.Output{&lineSink{}, &testutil.ScriptOutput{}}, nil, nil, false},
		{"an output that selects names", []morse.Output{&lineSink{}, &testutil.ScriptOutput{}}, []func(*testing.T) *filter.Filter{drop, names}, nil, true},
		{"an output that selects tags", []morse.Output{&lineSink{}, &testutil.ScriptOutput{}}, []func(*testing.T) *filter.Filter{nil, tags}, nil, false},
		{"no line output", []morse.Output{&testutil.ScriptOutput{}}, []func(*testing.T) *filter.Filter{names}, nil, false},
		{"a line output filtering tags", []morse.Output{&lineSink{}}, []func(*testing.T) *filter.Filter{tags}, nil, false},
		{"global and host tags", []morse.Output{&lineSink{}}, nil, func(cfg *config.Config, _ *config.InputConfig) {
			cfg.GlobalTags = map[string]string{"dc": "eu"}
			cfg.Agent.OmitHostname, cfg.Agent.Hostname = false, "h"
		}, true},
		{"input tags", []morse.Output{&lineSink{}}, nil, func(_ *config.Config, in *config.InputConfig) { in.Common.Tags = map[string]string{"k": "v"} }, true},
		{"input name filter", []morse.Output{&lineSink{}}, nil, func(_ *config.Config, in *config.InputConfig) { in.Filter = drop(t) }, true},
		{"input tag filter", []morse.Output{&lineSink{}}, nil, func(_ *config.Config, in *config.InputConfig) { in.Filter = tags(t) }, false},
		{"name prefix", []morse.Output{&lineSink{}}, nil, func(_ *config.Config, in *config.InputConfig) { in.Common.NamePrefix = "p_" }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.DefaultConfig()
			cfg.Agent.OmitHostname = true
			in := &lineInput{}
			ic := cfg.AddInput("lines", in)
			for i, o := range tc.outs {
				oc := cfg.AddOutput("sink", o)
				if i < len(tc.filters) && tc.filters[i] != nil {
					oc.Filter = tc.filters[i](t)
				}
			}
			if tc.edit != nil {
				tc.edit(cfg, ic)
			}
			a, err := NewAgent(cfg, AgentOptions{Logger: testutil.QuietLogger()})
			require.NoError(t, err)
			require.NoError(t, a.Once(context.Background()))
			require.Equal(t, tc.want, in.prefers)
		})
	}
}

// gatherIntoTwoOutputs runs one gather of in, with edit applied to the config, into two
// outputs: one that writes lines and one that does not. It returns what each got.
func gatherIntoTwoOutputs(t *testing.T, in morse.Input, edit func(cfg *config.Config)) (lines, plain []morse.Metric, a *Agent) {
	cfg := config.DefaultConfig()
	cfg.Agent.OmitHostname = true
	cfg.AddInput("lines", in)
	ls, so := &lineSink{}, &testutil.ScriptOutput{}
	cfg.AddOutput("lines", ls)
	cfg.AddOutput("plain", so)
	if edit != nil {
		edit(cfg)
	}
	a, err := NewAgent(cfg, AgentOptions{Logger: testutil.QuietLogger()})
	require.NoError(t, err)
	require.NoError(t, a.Once(context.Background()))
	_, lines = ls.Snapshot()
	_, plain = so.Snapshot()
	return lines, plain, a
}

// TestLineMetricsReachOutputs: a line metric stays text on its way to an output that writes
// lines, with the tags the agent adds written into it; it is expanded for an output that
// does not write lines, and one that a name filter rejects is never expanded.
func TestLineMetricsReachOutputs(t *testing.T) {
	run := func(t *testing.T, text string, edit func(cfg *config.Config)) (lines, plain []morse.Metric, filtered int64) {
		lines, plain, a := gatherIntoTwoOutputs(t, &lineInput{text: text}, edit)
		return lines, plain, a.Outputs()[1].Stats.Filtered
	}
	line := func(text string) morse.Metric {
		return morse.NewLineMetric(morse.LineText{Text: text, Uints: true}, lineTime)
	}
	want := morse.NewMetric("m", []morse.Tag{{Key: "t", Value: "a"}}, []morse.Field{{Key: "v", Value: morse.Int(1)}, {Key: "u", Value: morse.Uint(2)}}, lineTime)

	lines, plain, _ := run(t, "", nil)
	require.Equal(t, []morse.Metric{line("m,t=a v=1i,u=2u")}, lines)
	require.Equal(t, []morse.Metric{want}, plain)

	// Global and host tags go into the text, unless the line has the key already.
	tagged := func(cfg *config.Config) {
		cfg.GlobalTags = map[string]string{"dc": "eu west", "t": "ignored"}
		cfg.Agent.OmitHostname, cfg.Agent.Hostname = false, "h,1"
	}
	lines, plain, _ = run(t, "", tagged)
	require.Equal(t, []morse.Metric{line(`m,dc=eu\ west,host=h\,1,t=a v=1i,u=2u`)}, lines)
	require.Equal(t, []morse.Metric{want.WithTag("dc", "eu west").WithTag("host", "h,1")}, plain)
	require.Equal(t, lines[0].Expanded(), plain[0])

	// A tag that the text cannot carry as it is makes the agent expand the metric.
	lines, _, _ = run(t, "", func(cfg *config.Config) { cfg.GlobalTags = map[string]string{"dc": "tab\there"} })
	_, ok := lines[0].Line()
	require.False(t, ok)
	require.Equal(t, want.WithTag("dc", "tab\there"), lines[0])

	// An output that selects other names rejects the line metric by its name alone.
	lines, plain, filtered := run(t, `app\ events v=1i`, func(cfg *config.Config) {
		cfg.Outputs[1].Filter = mustFilter(t, filter.Config{NamePass: []string{"m"}})
		cfg.Outputs[0].Filter = mustFilter(t, filter.Config{NamePass: []string{"app events"}})
	})
	require.Equal(t, []morse.Metric{line(`app\ events v=1i`)}, lines)
	require.Empty(t, plain)
	require.Equal(t, int64(1), filtered)
}
