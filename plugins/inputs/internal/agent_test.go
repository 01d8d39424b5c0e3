package internal

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/agent"
	"github.com/morse-agent/morse/config"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/plugins/outputs/file"
)

// failing emits three metrics, reports one error and then fails the gather.
type failing struct{}

func (failing) Gather(_ context.Context, acc morse.Accumulator) error {
	for i := range 3 {
		acc.AddFields("thing", map[string]any{"n": i}, nil)
	}
	acc.AddError(errors.New("one reading failed"))
	return errors.New("gather failed")
}

// morseOnly are the self-metrics morse adds to Telegraf's (docs/telegraf-compat.md): the
// buffer's bytes and age, and the drops by reason. They are taken out before the golden
// comparison, which is of Telegraf's names.
func morseOnly(ms []morse.Metric) []morse.Metric {
	ms = slices.DeleteFunc(ms, func(m morse.Metric) bool { return m.Name() == "internal_write_dropped" })
	for i, m := range ms {
		if m.Name() == "internal_write" {
			ms[i] = m.WithFields(slices.DeleteFunc(slices.Clone(m.Fields()), func(f morse.Field) bool {
				return f.Key == "buffer_bytes" || f.Key == "buffer_oldest_age_ns"
			}))
		}
	}
	return ms
}

// runOnce runs an agent once over the given outputs, with inputs.internal and an input that
// fails, and returns the plugin, whose registry is the agent's.
func runOnce(t *testing.T, self *Self, outputs ...morse.Output) {
	t.Helper()
	cfg := config.DefaultConfig()
	cfg.AddInput("internal", self)
	cfg.AddInput("failing", failing{}).Common.Alias = "broken"
	for _, o := range outputs {
		cfg.AddOutput("sink", o)
	}
	a, err := agent.NewAgent(cfg, agent.AgentOptions{Logger: testutil.QuietLogger(), Version: "9.8.7"})
	require.NoError(t, err)
	require.NoError(t, a.Once(context.Background()), "refused metrics are dropped and counted, not left unsent")
}

// TestGoldenInsideTheAgent gathers inside a running agent, so that the agent's measurements
// are compared with Telegraf's list too, and checks what each counter counted.
func TestGoldenInsideTheAgent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		shapes, err := testutil.LoadShapes("testdata/internal.golden")
		require.NoError(t, err)
		self := New()
		self.CollectGostats = true
		refuse := &testutil.ScriptOutput{Answer: func(int, []morse.Metric) error {
			return morse.Permanent(morse.ReasonFieldTypeConflict, errors.New("field type conflict"))
		}}
		runOnce(t, self, refuse)

		ms := gather(t, self)
		require.Empty(t, shapes.Check(goldenOnly(t, shapes, morseOnly(slices.Clone(ms)))))
		got := map[string]series{}
		for _, s := range seriesOf(ms) {
			got[s.Name+"/"+s.Tags["input"]+s.Tags["output"]] = s
		}
		// What was gathered: internal's own metrics (memstats, gostats and the series that
		// existed then) and the three of the failing input; all went to the one sink, which
		// refused them.
		gathered := got["internal_gather/internal"].Fields["metrics_gathered"] + 3
		require.Equal(t, series{Name: "internal_agent", Tags: map[string]string{"version": "9.8.7", "go_version": goVersion},
			Fields: map[string]int64{"gather_errors": 1, "gather_timeouts": 0, "metrics_dropped": gathered,
				"metrics_gathered": gathered, "metrics_rejected": gathered, "metrics_written": 0, "write_errors": 1}},
			got["internal_agent/"])
		failed := got["internal_gather/failing"]
		require.Equal(t, map[string]string{"input": "failing", "alias": "broken", "version": "9.8.7"}, failed.Tags)
		require.Equal(t, int64(2), failed.Fields["errors"], "the reported error and the failed gather")
		require.Equal(t, int64(1), failed.Fields["gather_errors"])
		require.Equal(t, int64(3), failed.Fields["metrics_gathered"])
		require.Equal(t, int64(0), failed.Fields["startup_errors"])
		write := got["internal_write/sink"].Fields
		require.Equal(t, gathered, write["metrics_added"])
		require.Equal(t, gathered, write["metrics_rejected"])
		require.Equal(t, int64(1), write["write_errors"])
		require.Equal(t, int64(10000), write["buffer_limit"])
		require.NotContains(t, got, "internal_serializer/", "no output serialized")
	})
}

// TestSerializerStats: outputs.file counts what it serializes in internal_serializer,
// shared by every output of the format and tagged with it, as in Telegraf.
func TestSerializerStats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		shapes, err := testutil.LoadShapes("testdata/internal.golden")
		require.NoError(t, err)
		var a, b bytes.Buffer
		out1, out2 := file.New(), file.New()
		out1.Stdout, out2.Stdout = &a, &b
		self := New()
		runOnce(t, self, out1, out2)
		ms := gather(t, self)
		require.Empty(t, shapes.Defaults().Check(morseOnly(slices.Clone(ms))))
		var ser []series
		for _, s := range seriesOf(ms) {
			if s.Name == "internal_serializer" {
				ser = append(ser, s)
			}
		}
		require.Len(t, ser, 1, "one series for the format")
		require.Equal(t, map[string]string{"type": "influx", "version": "9.8.7"}, ser[0].Tags)
		f := ser[0].Fields
		require.Equal(t, int64(a.Len()+b.Len()), f["bytes_serialized"], "every byte both files got")
		gathered := int64(strings.Count(a.String(), "\n"))
		require.Equal(t, 2*gathered, f["metrics_serialized"])
		require.Zero(t, f["errors"])
		_, timed := f["serialization_time_ns"]
		require.True(t, timed)
	})
}

// TestPerInstanceInsideTheAgent: two outputs of one plugin without an alias are summed into
// one internal_write series by default, and told apart by "_id" with per_instance.
func TestPerInstanceInsideTheAgent(t *testing.T) {
	tests := []struct {
		name        string
		perInstance bool
		want        int // internal_write series
	}{
		{name: "summed", want: 1},
		{name: "per instance", perInstance: true, want: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				self := &Self{PerInstance: tt.perInstance}
				refuse := func(int, []morse.Metric) error {
					return morse.Permanent(morse.ReasonFieldTypeConflict, errors.New("conflict"))
				}
				runOnce(t, self, &testutil.ScriptOutput{Answer: refuse}, &testutil.ScriptOutput{Answer: refuse})
				var writes []series
				for _, s := range seriesOf(gather(t, self)) {
					if s.Name == "internal_write" {
						writes = append(writes, s)
					}
				}
				require.Len(t, writes, tt.want)
				var ids []string
				var errs int64
				for _, w := range writes {
					if id, ok := w.Tags["_id"]; ok {
						ids = append(ids, id)
					}
					errs += w.Fields["write_errors"]
				}
				require.Equal(t, int64(2), errs, "one failed write each")
				if tt.perInstance {
					require.Len(t, ids, 2)
					require.NotEqual(t, ids[0], ids[1])
				} else {
					require.Empty(t, ids)
				}
			})
		})
	}
}
