package morse

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var lineTime = time.Unix(1700000000, 5).UTC()

// TestLineMetricExpands: a line metric reads like the metric its text stands for, and any
// change gives a plain metric.
func TestLineMetricExpands(t *testing.T) {
	m := NewLineMetric(LineText{Text: `app\ events,z=1,a=x\,y s="q\"\\",i=-3i,u=4u,f=1.5e3,b=T`, Uints: true}, lineTime)
	want := NewMetric("app events", []Tag{{"a", "x,y"}, {"z", "1"}}, []Field{
		{"s", String(`q"\`)}, {"i", Int(-3)}, {"u", Uint(4)}, {"f", Float(1500)}, {"b", Bool(true)},
	}, lineTime)

	lt, ok := m.Line()
	require.True(t, ok)
	require.Equal(t, `app\ events,z=1,a=x\,y s="q\"\\",i=-3i,u=4u,f=1.5e3,b=T`, lt.Text)
	require.True(t, lt.Uints)
	head, fields := lt.Split()
	require.Equal(t, `app\ events,z=1,a=x\,y`, head)
	require.Equal(t, `s="q\"\\",i=-3i,u=4u,f=1.5e3,b=T`, fields)
	require.Equal(t, "app events", lineName(lt.Text))
	require.Equal(t, want, m.Expanded())
	require.Equal(t, want.Name(), m.Name())
	require.Equal(t, want.Tags(), m.Tags())
	require.Equal(t, want.Fields(), m.Fields())
	require.Equal(t, want.HashID(), m.HashID())
	v, ok := m.Tag("a")
	require.True(t, ok)
	require.Equal(t, "x,y", v)
	f, ok := m.Field("u")
	require.True(t, ok)
	require.Equal(t, Uint(4), f)

	moved := m.WithTime(lineTime.Add(time.Second))
	_, ok = moved.Line()
	require.True(t, ok, "a new time keeps the text: the time is not part of it")

	for _, changed := range []Metric{
		m.WithName("n"), m.WithTag("k", "v"), m.WithoutTag("z"), m.WithTags(nil),
		m.WithField("g", Int(1)), m.WithFields(nil),
	} {
		_, ok := changed.Line()
		require.False(t, ok, "a changed metric is held as name, tags and fields")
	}
	require.Equal(t, want.WithTag("k", "v"), m.WithTag("k", "v"))

	plain := NewMetric("m", nil, []Field{{"v", Int(1)}}, lineTime)
	_, ok = plain.Line()
	require.False(t, ok)
	require.Equal(t, plain, plain.Expanded())

	broken := NewLineMetric(LineText{Text: "m v="}, lineTime).Expanded()
	require.Equal(t, "m", broken.Name())
	require.Empty(t, broken.Fields(), "text that does not decode has no fields, which outputs refuse")
}

func mustFilter(t *testing.T, c FilterConfig) *Filter {
	f, err := NewFilter(c)
	require.NoError(t, err)
	return f
}

// lineInput emits line metrics and records whether its accumulator prefers them.
type lineInput struct {
	prefers bool
	text    string
}

func (in *lineInput) Gather(_ context.Context, acc Accumulator) error {
	in.prefers = acc.(LineAccumulator).PrefersLines()
	text := in.text
	if text == "" {
		text = "m,t=a v=1i,u=2u"
	}
	acc.AddMetric(NewLineMetric(LineText{Text: text, Uints: true}, lineTime))
	return nil
}

// lineSink is an output that takes line metrics as they are.
type lineSink struct{ scriptOutput }

func (o *lineSink) WritesLines() bool { return true }

// TestPrefersLinesFollowsTheConfig: an accumulator asks for line metrics when they would
// reach the outputs as they are, or be expanded only where an output selects them by name.
func TestPrefersLinesFollowsTheConfig(t *testing.T) {
	filter := func(c FilterConfig) func(*testing.T) *Filter {
		return func(t *testing.T) *Filter { return mustFilter(t, c) }
	}
	names := filter(FilterConfig{NamePass: []string{"internal*"}})
	drop := filter(FilterConfig{NameDrop: []string{"internal*"}})
	tags := filter(FilterConfig{TagPass: map[string][]string{"t": {"a"}}})
	cases := []struct {
		name    string
		outs    []Output
		filters []func(*testing.T) *Filter // per output, nil for none
		edit    func(cfg *Config, in *InputConfig)
		want    bool
	}{
		{"a line output", []Output{&lineSink{}}, nil, nil, true},
		{"two line outputs", []Output{&lineSink{}, &lineSink{}}, nil, nil, true},
		{"an output that takes everything expanded", []Output{&lineSink{}, &scriptOutput{}}, nil, nil, false},
		{"an output that selects names", []Output{&lineSink{}, &scriptOutput{}}, []func(*testing.T) *Filter{drop, names}, nil, true},
		{"an output that selects tags", []Output{&lineSink{}, &scriptOutput{}}, []func(*testing.T) *Filter{nil, tags}, nil, false},
		{"no line output", []Output{&scriptOutput{}}, []func(*testing.T) *Filter{names}, nil, false},
		{"a line output filtering tags", []Output{&lineSink{}}, []func(*testing.T) *Filter{tags}, nil, false},
		{"global and host tags", []Output{&lineSink{}}, nil, func(cfg *Config, _ *InputConfig) {
			cfg.GlobalTags = map[string]string{"dc": "eu"}
			cfg.Agent.OmitHostname, cfg.Agent.Hostname = false, "h"
		}, true},
		{"input tags", []Output{&lineSink{}}, nil, func(_ *Config, in *InputConfig) { in.Common.Tags = map[string]string{"k": "v"} }, true},
		{"input name filter", []Output{&lineSink{}}, nil, func(_ *Config, in *InputConfig) { in.Filter = drop(t) }, true},
		{"input tag filter", []Output{&lineSink{}}, nil, func(_ *Config, in *InputConfig) { in.Filter = tags(t) }, false},
		{"name prefix", []Output{&lineSink{}}, nil, func(_ *Config, in *InputConfig) { in.Common.NamePrefix = "p_" }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
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
			a, err := NewAgent(cfg, AgentOptions{Logger: quietLogger()})
			require.NoError(t, err)
			require.NoError(t, a.Once(context.Background()))
			require.Equal(t, tc.want, in.prefers)
		})
	}
}

// gatherIntoTwoOutputs runs one gather of in, with edit applied to the config, into two
// outputs: one that writes lines and one that does not. It returns what each got.
func gatherIntoTwoOutputs(t *testing.T, in Input, edit func(cfg *Config)) (lines, plain []Metric, a *Agent) {
	cfg := DefaultConfig()
	cfg.Agent.OmitHostname = true
	cfg.AddInput("lines", in)
	ls, so := &lineSink{}, &scriptOutput{}
	cfg.AddOutput("lines", ls)
	cfg.AddOutput("plain", so)
	if edit != nil {
		edit(cfg)
	}
	a, err := NewAgent(cfg, AgentOptions{Logger: quietLogger()})
	require.NoError(t, err)
	require.NoError(t, a.Once(context.Background()))
	_, lines = ls.snapshot()
	_, plain = so.snapshot()
	return lines, plain, a
}

// TestLineMetricsReachOutputs: a line metric stays text on its way to an output that writes
// lines, with the tags the agent adds written into it; it is expanded for an output that
// does not write lines, and one that a name filter rejects is never expanded.
func TestLineMetricsReachOutputs(t *testing.T) {
	run := func(t *testing.T, text string, edit func(cfg *Config)) (lines, plain []Metric, filtered int64) {
		lines, plain, a := gatherIntoTwoOutputs(t, &lineInput{text: text}, edit)
		return lines, plain, a.Outputs()[1].Stats.Filtered
	}
	line := func(text string) Metric { return NewLineMetric(LineText{Text: text, Uints: true}, lineTime) }
	want := NewMetric("m", []Tag{{"t", "a"}}, []Field{{"v", Int(1)}, {"u", Uint(2)}}, lineTime)

	lines, plain, _ := run(t, "", nil)
	require.Equal(t, []Metric{line("m,t=a v=1i,u=2u")}, lines)
	require.Equal(t, []Metric{want}, plain)

	// Global and host tags go into the text, unless the line has the key already.
	tagged := func(cfg *Config) {
		cfg.GlobalTags = map[string]string{"dc": "eu west", "t": "ignored"}
		cfg.Agent.OmitHostname, cfg.Agent.Hostname = false, "h,1"
	}
	lines, plain, _ = run(t, "", tagged)
	require.Equal(t, []Metric{line(`m,dc=eu\ west,host=h\,1,t=a v=1i,u=2u`)}, lines)
	require.Equal(t, []Metric{want.WithTag("dc", "eu west").WithTag("host", "h,1")}, plain)
	require.Equal(t, lines[0].Expanded(), plain[0])

	// A tag that the text cannot carry as it is makes the agent expand the metric.
	lines, _, _ = run(t, "", func(cfg *Config) { cfg.GlobalTags = map[string]string{"dc": "tab\there"} })
	_, ok := lines[0].Line()
	require.False(t, ok)
	require.Equal(t, want.WithTag("dc", "tab\there"), lines[0])

	// An output that selects other names rejects the line metric by its name alone.
	lines, plain, filtered := run(t, `app\ events v=1i`, func(cfg *Config) {
		cfg.Outputs[1].Filter = mustFilter(t, FilterConfig{NamePass: []string{"m"}})
		cfg.Outputs[0].Filter = mustFilter(t, FilterConfig{NamePass: []string{"app events"}})
	})
	require.Equal(t, []Metric{line(`app\ events v=1i`)}, lines)
	require.Empty(t, plain)
	require.Equal(t, int64(1), filtered)
}

// TestMergeMissingLineTags: tags a line lacks are added after the measurement, escaped; keys
// it has, escaped or not, are left alone.
func TestMergeMissingLineTags(t *testing.T) {
	for _, tc := range []struct {
		text  string
		extra []Tag
		want  string
	}{
		{"m v=1", []Tag{{"host", "h"}}, "m,host=h v=1"},
		{"m,host=x v=1", []Tag{{"host", "h"}}, "m,host=x v=1"},
		{`m\,n,a\ b=1 v=1`, []Tag{{"a b", "2"}, {"c=d", "é"}}, `m\,n,c\=d=é,a\ b=1 v=1`},
		{`m,k=a\ host=b v=1`, []Tag{{"host", "h"}}, `m,host=h,k=a\ host=b v=1`},
		{`m,k=v s="host=x"`, []Tag{{"host", "h"}}, `m,host=h,k=v s="host=x"`},
	} {
		m, ok := mergeMissingLineTags(NewLineMetric(LineText{Text: tc.text}, lineTime), tc.extra)
		require.True(t, ok)
		lt, _ := m.Line()
		require.Equal(t, tc.want, lt.Text, "text %q", tc.text)
	}
	for _, bad := range []Tag{{"", "v"}, {"k", ""}, {"k", "a\\"}, {"k", "\xff"}, {"k\n", "v"}} {
		_, ok := mergeMissingLineTags(NewLineMetric(LineText{Text: "m v=1"}, lineTime), []Tag{bad})
		require.False(t, ok, "%q", bad)
	}
}
