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
		"p.conf:2: processors.tag.colour: unknown key\n"+
		"p.conf:3: processors.nosuch: unknown processor plugin\n"+
		"p.conf:5: aggregators.count.period: must be positive, got 0s\n"+
		"p.conf:6: aggregators.count.delay: must not be negative, got -1s\n"+
		"p.conf:7: aggregators.nosuch: unknown aggregator plugin\n"+
		"p.conf:8: processors.tag.tag: is required")
}
