package agent

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/stretchr/testify/require"
)

// trackedInput is a service input that hands its tracking accumulator to the test.
type trackedInput struct {
	acc chan morse.TrackingAccumulator
}

func (in *trackedInput) Gather(context.Context, morse.Accumulator) error { return nil }
func (in *trackedInput) Start(_ context.Context, acc morse.Accumulator) error {
	in.acc <- acc.(morse.DeliveryTracking).WithTracking(10)
	return nil
}
func (in *trackedInput) Stop() {}

type dropAll struct{}

func (dropAll) Apply([]morse.Metric) []morse.Metric { return nil }

type swallow struct{}

func (swallow) Add(morse.Metric)       {}
func (swallow) Push(morse.Accumulator) {}
func (swallow) Reset()                 {}

type refuser struct{ testutil.ScriptOutput }

func trackingRegistry(t *testing.T, ts *testSinks, accs chan morse.TrackingAccumulator) *morse.Registry {
	reg := ts.registry(t)
	require.NoError(t, reg.AddInput(morse.InputInfo{Name: "tracked", Description: "t", New: func() morse.Input { return &trackedInput{acc: accs} }}))
	require.NoError(t, reg.AddProcessor(morse.ProcessorInfo{Name: "dropall", Description: "d", New: func() morse.Processor { return dropAll{} }}))
	require.NoError(t, reg.AddAggregator(morse.AggregatorInfo{Name: "swallow", Description: "s", New: func() morse.Aggregator { return swallow{} }}))
	require.NoError(t, reg.AddOutput(morse.OutputInfo{Name: "refuser", Description: "r", New: func() morse.Output {
		o := &refuser{}
		o.Answer = func(int, []morse.Metric) error { return morse.Permanent(morse.ReasonPermanent, errors.New("no")) }
		return o
	}}))
	return reg
}

func trackedGroup(n int) []morse.Metric {
	g := make([]morse.Metric, n)
	for i := range g {
		g[i] = morse.NewMetric("m", nil, []morse.Field{{Key: "v", Value: morse.Int(int64(i))}}, time.Unix(1, 0))
	}
	return g
}

// drained returns what Delivered holds now.
func drained(acc morse.TrackingAccumulator) []morse.DeliveryInfo {
	var out []morse.DeliveryInfo
	for {
		select {
		case d := <-acc.Delivered():
			out = append(out, d)
		default:
			return out
		}
	}
}

// TestTrackingReportsGroupsWhenEveryOutputIsDone adds groups through the agent's tracking
// accumulator and checks when each is reported: at once when nothing reaches an output, and
// otherwise only once every output that took a metric of it wrote or dropped it.
func TestTrackingReportsGroupsWhenEveryOutputIsDone(t *testing.T) {
	d := func(id int, ok bool) morse.DeliveryInfo {
		return morse.DeliveryInfo{ID: morse.TrackingID(id), Delivered: ok}
	}
	cases := []struct {
		name      string
		conf      string
		groups    []int // sizes of the groups added, in order
		down      bool  // sink "b" is down until the second check
		now, then []morse.DeliveryInfo
	}{
		{name: "both outputs must write", conf: "[[inputs.tracked]]\n[[outputs.sink]]\n sink = \"a\"\n[[outputs.sink]]\n sink = \"b\"\n",
			groups: []int{3}, down: true, then: []morse.DeliveryInfo{d(1, true)}},
		{name: "empty group", conf: "[[inputs.tracked]]\n[[outputs.sink]]\n sink = \"a\"\n",
			groups: []int{0}, now: []morse.DeliveryInfo{d(1, true)}},
		{name: "input filter takes all", conf: "[[inputs.tracked]]\n namedrop = [\"m\"]\n[[outputs.sink]]\n sink = \"a\"\n",
			groups: []int{2}, now: []morse.DeliveryInfo{d(1, true)}},
		{name: "no output selects", conf: "[[inputs.tracked]]\n[[outputs.sink]]\n sink = \"a\"\n namepass = [\"other\"]\n",
			groups: []int{2}, now: []morse.DeliveryInfo{d(1, true)}},
		{name: "processor drops", conf: "[[inputs.tracked]]\n[[processors.dropall]]\n[[outputs.sink]]\n sink = \"a\"\n",
			groups: []int{2}, now: []morse.DeliveryInfo{d(1, true)}},
		{name: "aggregated with drop_original", conf: "[[inputs.tracked]]\n[[aggregators.swallow]]\n period = \"1h\"\n drop_original = true\n[[outputs.sink]]\n sink = \"a\"\n",
			groups: []int{2}, now: []morse.DeliveryInfo{d(1, true)}},
		{name: "refused for good", conf: "[[inputs.tracked]]\n[[outputs.refuser]]\n",
			groups: []int{2}, now: []morse.DeliveryInfo{d(1, false)}},
		{name: "evicted from a full buffer", conf: "[[inputs.tracked]]\n[[outputs.sink]]\n sink = \"b\"\n metric_buffer_limit = 2\n metric_batch_size = 2\n",
			groups: []int{1, 2}, down: true, now: []morse.DeliveryInfo{d(1, false)}, then: []morse.DeliveryInfo{d(2, true)}},
		{name: "one output of two refuses", conf: "[[inputs.tracked]]\n[[outputs.sink]]\n sink = \"a\"\n[[outputs.refuser]]\n",
			groups: []int{1}, now: []morse.DeliveryInfo{d(1, false)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ts := &testSinks{down: map[string]bool{"b": tc.down}}
				accs := make(chan morse.TrackingAccumulator, 1)
				cfg := loadTestConfig(t, trackingRegistry(t, ts, accs), agentBase+tc.conf)
				a, err := NewAgent(cfg, AgentOptions{Logger: testutil.QuietLogger()})
				require.NoError(t, err)
				stop := runAgent(t, a)
				acc := <-accs
				for _, n := range tc.groups {
					acc.AddTrackingMetricGroup(trackedGroup(n))
				}
				time.Sleep(3 * time.Second) // three flushes
				require.Equal(t, tc.now, drained(acc), "before the outputs are up")
				ts.setDown("b", false)
				time.Sleep(2 * time.Minute) // past the longest retry backoff, 60 s
				require.Equal(t, tc.then, drained(acc), "once they are")
				require.NoError(t, stop())
			})
		})
	}
}

// TestTrackingDiskBufferSettlesOnceStored: a tracked metric that an output's disk buffer has
// taken survives a crash of the process, so its group is done while the sink is still down.
func TestTrackingDiskBufferSettlesOnceStored(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		ts := &testSinks{down: map[string]bool{"b": true}}
		accs := make(chan morse.TrackingAccumulator, 1)
		cfg := loadTestConfig(t, trackingRegistry(t, ts, accs), agentBase+`
[[inputs.tracked]]
[[outputs.sink]]
  sink = "b"
  buffer_strategy = "disk"
  buffer_directory = "`+dir+`"
[[outputs.sink]]
  sink = "a"
`)
		a, err := NewAgent(cfg, AgentOptions{Logger: testutil.QuietLogger()})
		require.NoError(t, err)
		stop := runAgent(t, a)
		acc := <-accs
		acc.AddTrackingMetricGroup(trackedGroup(2))
		time.Sleep(3 * time.Second)
		require.Equal(t, []morse.DeliveryInfo{{ID: 1, Delivered: true}}, drained(acc))
		_, written := outputOf(cfg, 1).Snapshot()
		require.Len(t, written, 2)
		require.NoError(t, stop())
	})
}
