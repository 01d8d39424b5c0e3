package agent

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/filter"
	"github.com/morse-agent/morse/internal/testutil"
)

// shapeInput adds, per gather, a metric "web" with fields v and w and tags a and b, and a
// metric "db" with the field w alone.
type shapeInput struct{}

func (shapeInput) Gather(_ context.Context, acc morse.Accumulator) error {
	tags := []morse.Tag{{Key: "a", Value: "1"}, {Key: "b", Value: "2"}}
	acc.AddMetric(morse.NewMetric("web", tags, []morse.Field{{Key: "v", Value: morse.Int(1)}, {Key: "w", Value: morse.Int(2)}}, time.Now()))
	acc.AddMetric(morse.NewMetric("db", tags, []morse.Field{{Key: "w", Value: morse.Int(3)}}, time.Now()))
	return nil
}

// shape is a metric's name, tag keys and field keys: "web a,b v,w".
func shape(m morse.Metric) string {
	var tags, fields []string
	for _, t := range m.Tags() {
		tags = append(tags, t.Key)
	}
	for _, f := range m.Fields() {
		fields = append(fields, f.Key)
	}
	return m.Name() + " " + strings.Join(tags, ",") + " " + strings.Join(fields, ",")
}

// shapeAggregator records the shape of every metric it is given and pushes nothing.
type shapeAggregator struct {
	mu   sync.Mutex
	seen []string
}

func (a *shapeAggregator) Add(m morse.Metric) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !slices.Contains(a.seen, shape(m)) {
		a.seen = append(a.seen, shape(m))
	}
}
func (a *shapeAggregator) Push(morse.Accumulator) {}
func (a *shapeAggregator) Reset()                 {}

// TestFiltersTrimWhatProcessorsAndAggregatorsGet: as in Telegraf, the fieldinclude,
// fieldexclude, taginclude and tagexclude of a processor trim the metrics it selects before
// it runs, for everything after it too, and drop one left without a field; those of an
// aggregator trim what the aggregator gets, and the original goes on whole.
func TestFiltersTrimWhatProcessorsAndAggregatorsGet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg, out := processingConfig(t)
		cfg.Agent.Interval = morse.Duration(time.Second)
		cfg.AddInput("in", shapeInput{})
		keepV, err := filter.New(filter.Config{FieldInclude: []string{"v"}, TagExclude: []string{"b"}})
		require.NoError(t, err)
		pc := cfg.AddProcessor("p", &trailProcessor{mark: "p"})
		pc.Filter = keepV
		webOnly, err := filter.New(filter.Config{NamePass: []string{"web"}, TagInclude: []string{"trail"}})
		require.NoError(t, err)
		agg := &shapeAggregator{}
		ac := cfg.AddAggregator("shapes", agg)
		ac.Common.Period, ac.Filter = morse.Duration(time.Minute), webOnly
		a, err := NewAgent(cfg, AgentOptions{Logger: testutil.QuietLogger()})
		require.NoError(t, err)
		stop := runAgent(t, a)
		time.Sleep(3 * time.Second) // three gathers
		require.NoError(t, stop())

		_, written := out.Snapshot()
		var shapes []string
		for _, m := range written {
			if !slices.Contains(shapes, shape(m)) {
				shapes = append(shapes, shape(m))
			}
		}
		require.Equal(t, []string{"web a,trail v"}, shapes, "db had no field the processor's filter keeps")
		agg.mu.Lock()
		defer agg.mu.Unlock()
		require.Equal(t, []string{"web trail v"}, agg.seen)
	})
}
