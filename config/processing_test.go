package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
)

// tagProcessor adds Tag=Value to every metric; a test processor.
type tagProcessor struct {
	Tag   string `toml:"tag"`
	Value string `toml:"value"`
}

func (p *tagProcessor) Apply(in []morse.Metric) []morse.Metric {
	for i, m := range in {
		in[i] = m.WithTag(p.Tag, p.Value)
	}
	return in
}

func (p *tagProcessor) Validate() error {
	if p.Tag == "" {
		return morse.Errorf("tag", "is required")
	}
	return nil
}

// countAggregator counts the metrics of a period; a test aggregator.
type countAggregator struct{ n int }

func (a *countAggregator) Add(morse.Metric)           { a.n++ }
func (a *countAggregator) Push(acc morse.Accumulator) {}
func (a *countAggregator) Reset()                     { a.n = 0 }

func processingRegistry(t *testing.T) *morse.Registry {
	reg := cfgTestRegistry(t)
	require.NoError(t, reg.AddProcessor(morse.ProcessorInfo{Name: "tag", New: func() morse.Processor { return &tagProcessor{} }}))
	require.NoError(t, reg.AddAggregator(morse.AggregatorInfo{Name: "count", New: func() morse.Aggregator { return &countAggregator{} }}))
	return reg
}

func TestLoadProcessorsAndAggregators(t *testing.T) {
	cfg, err := Load(Options{Registry: processingRegistry(t), Sources: []Source{{Name: "p.conf", Data: []byte(`
[agent]
  skip_processors_after_aggregators = true
[[processors.tag]]
  order = 2
  tag = "b"
  namepass = ["cpu*"]
[[processors.tag]]
  alias = "first"
  order = 1
  tag = "a"
[[aggregators.count]]
  period = "1m"
  grace = "5s"
  drop_original = true
  name_suffix = "_count"
  [aggregators.count.tags]
    agg = "yes"
`)}}})
	require.NoError(t, err)
	require.True(t, cfg.Agent.SkipProcessorsAfterAggregators)
	require.Len(t, cfg.Processors, 2)
	p := cfg.Processors[0]
	require.Equal(t, int64(2), p.Common.Order)
	require.NotNil(t, p.Filter)
	require.Equal(t, &tagProcessor{Tag: "b"}, p.Plugin)
	require.Equal(t, &tagProcessor{Tag: "b"}, p.AfterAggregators)
	require.NotSame(t, p.Plugin, p.AfterAggregators, "two instances keep the two streams apart")
	require.Equal(t, "first", cfg.Processors[1].Common.Alias)
	require.Len(t, cfg.Aggregators, 1)
	a := cfg.Aggregators[0]
	require.Equal(t, AggregatorCommon{Period: morse.Duration(time.Minute), Delay: morse.Duration(100 * time.Millisecond),
		Grace: morse.Duration(5 * time.Second), DropOriginal: true, Rename: Rename{NameSuffix: "_count"}, Tags: map[string]string{"agg": "yes"}}, a.Common)
}

func TestLoadProcessingProblems(t *testing.T) {
	_, err := Load(Options{Registry: processingRegistry(t), Sources: []Source{{Name: "p.conf", Data: []byte(`[[processors.tag]]
  colour = "red"
[[processors.nosuch]]
[[aggregators.count]]
  period = "0s"
  delay = "-1s"
[[aggregators.nosuch]]
[[processors.tag]]
`)}}})
	require.EqualError(t, err, ""+
		"p.conf:1: processors.tag.tag: is required\n"+
		"p.conf:2: processors.tag.colour: unknown key\n"+
		"p.conf:3: processors.nosuch: unknown processor plugin\n"+
		"p.conf:5: aggregators.count.period: must be positive, got 0s\n"+
		"p.conf:6: aggregators.count.delay: must not be negative, got -1s\n"+
		"p.conf:7: aggregators.nosuch: unknown aggregator plugin\n"+
		"p.conf:8: processors.tag.tag: is required")
}

// TestCodeBuiltAggregatorIsValidated: Resolve checks a code-built aggregator's window as
// Load checks a file's, with the same words, keyed by the field's path.
func TestCodeBuiltAggregatorIsValidated(t *testing.T) {
	cfg := DefaultConfig()
	ac := cfg.AddAggregator("count", &countAggregator{})
	require.NoError(t, cfg.Resolve(), "AddAggregator's default window is valid")
	ac.Common.Period, ac.Common.Delay, ac.Common.Grace = 0, morse.Duration(-time.Second), morse.Duration(-2*time.Second)
	cfg.Aggregators = append(cfg.Aggregators, &AggregatorConfig{Name: "count", Plugin: &countAggregator{},
		Common: DefaultAggregatorCommon(), Source: "code"})
	cfg.Aggregators[1].Common.Period = morse.Duration(-time.Minute)
	require.EqualError(t, cfg.Resolve(), ""+
		"code: aggregators[0].delay: must not be negative, got -1s\n"+
		"code: aggregators[0].grace: must not be negative, got -2s\n"+
		"code: aggregators[0].period: must be positive, got 0s\n"+
		"code: aggregators[1].period: must be positive, got -1m0s")

	_, err := Load(Options{Registry: processingRegistry(t), Sources: []Source{{Name: "p.conf", Data: []byte(`[[aggregators.count]]
  period = "0s"
  delay = "-1s"
  grace = "-2s"
`)}}})
	require.EqualError(t, err, ""+
		"p.conf:2: aggregators.count.period: must be positive, got 0s\n"+
		"p.conf:3: aggregators.count.delay: must not be negative, got -1s\n"+
		"p.conf:4: aggregators.count.grace: must not be negative, got -2s")
}

// TestCodeBuiltProcessingPluginsAreChecked: a nil processor or aggregator, and an instance
// that two plugins share, are refused as they are for inputs and outputs; the processor's
// own instance after aggregators, as AddProcessor sets it, is not a second use.
func TestCodeBuiltProcessingPluginsAreChecked(t *testing.T) {
	cfg := DefaultConfig()
	shared := &tagProcessor{Tag: "a"}
	cfg.AddProcessor("tag", shared)
	cfg.AddProcessor("tag", shared)
	cfg.AddProcessor("tag", nil)
	cfg.AddProcessor("tag", &tagProcessor{Tag: "b"}).AfterAggregators = shared
	agg := &countAggregator{}
	cfg.AddAggregator("count", agg)
	cfg.AddAggregator("count", agg)
	cfg.AddAggregator("count", nil)
	require.EqualError(t, cfg.Resolve(), ""+ // sorted by path
		"code: aggregators[1]: is the same plugin instance as aggregators[0]: give each one an instance of its own\n"+
		"code: aggregators[2]: the plugin is nil\n"+
		"code: processors[1]: is the same plugin instance as processors[0]: give each one an instance of its own\n"+
		"code: processors[2]: the plugin is nil\n"+
		"code: processors[3].AfterAggregators: is the same plugin instance as processors[0]: give each one an instance of its own")
}

// TestCodeBuiltProcessingFiltersAreCompiled: Resolve compiles the Common.Filter of a
// code-built processor and aggregator, as Load compiles a file's, and refuses a bad pattern
// with its path.
func TestCodeBuiltProcessingFiltersAreCompiled(t *testing.T) {
	cfg := DefaultConfig()
	pc := cfg.AddProcessor("tag", &tagProcessor{Tag: "a"})
	pc.Common.Filter.NamePass = []string{"cpu"}
	ac := cfg.AddAggregator("count", &countAggregator{})
	ac.Common.Filter.NameDrop = []string{"cpu"}
	require.NoError(t, cfg.Resolve())
	cpu := morse.NewMetric("cpu", nil, []morse.Field{{Key: "v", Value: morse.Int(1)}}, time.Unix(0, 0))
	mem := cpu.WithName("mem")
	require.NotNil(t, pc.Filter)
	require.True(t, pc.Filter.Selects(cpu))
	require.False(t, pc.Filter.Selects(mem))
	require.NotNil(t, ac.Filter)
	require.False(t, ac.Filter.Selects(cpu))
	require.True(t, ac.Filter.Selects(mem))

	ac.Common.Filter.NameDrop = []string{"cpu["}
	require.ErrorContains(t, cfg.Resolve(), "code: aggregators[0].namedrop: ")
}
