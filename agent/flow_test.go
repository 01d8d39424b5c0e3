package agent

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/config"
	"github.com/morse-agent/morse/filter"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/selfstat"
)

// pusher is a service input whose accumulator the test drives, as a listener would.
type pusher struct{ acc morse.Accumulator }

func (p *pusher) Start(_ context.Context, acc morse.Accumulator) error { p.acc = acc; return nil }
func (p *pusher) Stop()                                                {}
func (p *pusher) Gather(context.Context, morse.Accumulator) error      { return nil }

func (p *pusher) add(name string, n int) {
	for i := range n {
		p.acc.AddMetric(morse.NewMetric(name, nil, []morse.Field{{Key: "v", Value: morse.Int(int64(i))}}, time.Unix(int64(i), 0)))
	}
}

// blockedOutput is a sink that keeps up (its writes succeed) but takes as long as the test
// says: each write waits for release.
type blockedOutput struct {
	testutil.ScriptOutput
	release chan struct{}
}

func (o *blockedOutput) Write(ctx context.Context, batch []morse.Metric) error {
	select {
	case <-o.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return o.ScriptOutput.Write(ctx, batch)
}

// TestWaitForRoomOnlyForOutputsTheInputFeeds: an output whose namepass takes only "a" holds
// a backlog; the input that sends "a" waits for room, the one that sends "b" does not, and
// under --test (metrics to a printer) nothing waits.
func TestWaitForRoomOnlyForOutputsTheInputFeeds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := config.DefaultConfig()
		cfg.Agent.OmitHostname = true
		pa, pb := &pusher{}, &pusher{}
		cfg.AddInput("pa", pa)
		cfg.AddInput("pb", pb)
		slow := &blockedOutput{release: make(chan struct{})}
		oa := cfg.AddOutput("slow", slow)
		oa.Common.MetricBatchSize, oa.Common.MetricBufferLimit = 10, 100
		f, err := filter.New(filter.Config{NamePass: []string{"a"}})
		require.NoError(t, err)
		oa.Filter = f
		cfg.AddOutput("fast", &testutil.ScriptOutput{})

		a, err := NewAgent(cfg, AgentOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		require.NoError(t, err)
		stop := runAgent(t, a)
		<-a.Ready()

		pb.add("b", 5)
		pa.add("a", 95) // a batch of 10 goes in flight and stays there; 85 wait in the ring
		synctest.Wait()
		require.True(t, a.state.Load().outputs[0].w.HoldsBack())

		require.NoError(t, morse.WaitForRoom(context.Background(), pb.acc), "pb's metrics never reach the slow output")
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		require.ErrorIs(t, morse.WaitForRoom(ctx, pa.acc), context.DeadlineExceeded, "pa feeds the slow output and waits")
		cancel()

		released := make(chan error, 1)
		go func() { released <- morse.WaitForRoom(context.Background(), pa.acc) }()
		synctest.Wait() // it waits before the first batch is released
		// Write batches until the ring is down to the low-water mark and pa is let go.
		for waiting := true; waiting; {
			select {
			case err := <-released:
				require.NoError(t, err)
				waiting = false
			case slow.release <- struct{}{}:
			}
		}
		st := a.state.Load().outputs[0].w.Stats()
		require.LessOrEqual(t, st.BufferSize, 60, "%+v", st)
		require.Zero(t, st.WriteErrors, "pa was let go by the room made, not by a failure")
		close(slow.release)
		require.NoError(t, stop())

		var listeners []selfstat.Sample
		for _, s := range a.stats.Snapshot() {
			if s.Measurement == "internal_listener" {
				listeners = append(listeners, s)
			}
		}
		require.Len(t, listeners, 1, "pb never waited, so it has no internal_listener")
		require.Equal(t, []selfstat.Tag{{Key: selfstat.IDTag, Value: "inputs.pa#1"}, {Key: "input", Value: "pa"}}, listeners[0].Tags)
		require.Equal(t, selfstat.Field{Key: "backpressure_waits", Value: 2}, listeners[0].Fields[0], "both of pa's waits are counted")
	})
}

// TestPrecisionAsTelegraf: gathered metrics are rounded to [agent] precision or to the unit of
// the gather interval, and a service input's own metrics are kept as sent.
func TestPrecisionAsTelegraf(t *testing.T) {
	for _, tc := range []struct {
		name                string
		precision, interval time.Duration
		service             bool
		want                time.Duration
	}{
		{"default interval rounds to the second", 0, 10 * time.Second, false, time.Second},
		{"sub-second interval rounds to the millisecond", 0, 100 * time.Millisecond, false, time.Millisecond},
		{"microsecond interval", 0, 5 * time.Microsecond, false, time.Microsecond},
		{"[agent] precision wins", time.Millisecond, 10 * time.Second, false, time.Millisecond},
		{"a listener's metrics are never rounded", 0, 10 * time.Second, true, time.Nanosecond},
		{"not even with [agent] precision", time.Second, 10 * time.Second, true, time.Nanosecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.DefaultConfig()
			cfg.Agent.Interval = morse.Duration(tc.interval)
			ic := cfg.AddInput("seq", &seqInput{})
			require.NoError(t, cfg.Resolve())
			ri := &runningInput{cfg: ic, agent: &Agent{cfg: cfg}, every: ic.Interval()}
			acc := ri.outputAccumulator()
			if tc.service {
				acc = acc.forService()
			}
			require.Equal(t, tc.want, acc.precision(&agentState{precision: tc.precision}))
		})
	}
}
