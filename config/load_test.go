package config

import (
	"testing"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/filter"
	"github.com/stretchr/testify/require"
)

func loadText(t *testing.T, texts ...string) (*File, error) {
	t.Helper()
	var sources []Source
	for i, text := range texts {
		sources = append(sources, Source{Name: []string{"a.conf", "b.conf", "c.conf"}[i], Data: []byte(text)})
	}
	return Read(Options{Sources: sources, LookupEnv: func(string) (string, bool) { return "", false }})
}

func TestErrorFormat(t *testing.T) {
	tests := []struct {
		err  Error
		want string
	}{
		{Error{File: "f", Line: 3, Key: "agent.interval", Msg: "bad"}, "f:3: agent.interval: bad"},
		{Error{File: "f", Line: 3, Msg: "syntax"}, "f:3: syntax"},
		{Error{File: "f", Msg: "cannot read"}, "f: cannot read"},
		{Error{Key: "k", Msg: "m"}, "k: m"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, tt.err.Error())
	}
	errs := Errors{{File: "b", Line: 1, Msg: "x"}, {File: "a", Line: 9, Msg: "y"}, {File: "a", Line: 2, Msg: "z"}}
	require.Equal(t, "a:2: z\na:9: y\nb:1: x", errs.Error())
	require.NoError(t, Errors(nil).Err())
}

func TestLoadDefaults(t *testing.T) {
	f, err := loadText(t, "")
	require.NoError(t, err)
	require.Equal(t, DefaultAgentConfig(), f.Agent)
	require.Empty(t, f.GlobalTags)
	require.Empty(t, f.Inputs)
	require.Equal(t, []string{"a.conf"}, f.Read)
}

func TestAgentValidate(t *testing.T) {
	tests := []struct {
		name string
		text string
		want string
	}{
		{"defaults", "", ""},
		{"all units of precision", `precision = "1us"`, ""},
		{"zero interval", `interval = "0s"`, "a.conf:2: agent.interval: must be greater than zero"},
		{"negative interval", `interval = "-1s"`, "a.conf:2: agent.interval: must not be negative, got -1s"},
		{"zero flush interval", `flush_interval = 0`, "a.conf:2: agent.flush_interval: must be greater than zero"},
		{"flush jitter equal", `flush_jitter = "10s"`, "a.conf:2: agent.flush_jitter: 10s must be smaller than flush_interval (10s)"},
		{"flush jitter below", `flush_jitter = "9s"`, ""},
		{"collection jitter", `collection_jitter = "11s"`, "a.conf:2: agent.collection_jitter: 11s must be smaller than interval (10s)"},
		{"short interval", `interval = "1s"`, ""},
		{
			"collection jitter equal to interval", "interval = \"1s\"\ncollection_jitter = \"1s\"",
			"a.conf:3: agent.collection_jitter: 1s must be smaller than interval (1s)",
		},
		{
			"default buffer below batch, placed on the batch size", "metric_batch_size = 20000",
			"a.conf:2: agent.metric_buffer_limit: 10000 must be at least metric_batch_size (20000)",
		},
		{"batch zero", `metric_batch_size = 0`, "a.conf:2: agent.metric_batch_size: must be at least 1, got 0"},
		{"bad precision", `precision = "1m"`, `a.conf:2: agent.precision: invalid precision "1m": use "ns", "us", "ms" or "s" (or "" for the interval's unit)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadText(t, "[agent]\n"+tt.text+"\n")
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tt.want)
		})
	}
}

func TestPrecision(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"": time.Nanosecond, "0s": time.Nanosecond, "ns": time.Nanosecond, "1ns": time.Nanosecond,
		"us": time.Microsecond, "1us": time.Microsecond, "ms": time.Millisecond, "1ms": time.Millisecond,
		"s": time.Second, "1s": time.Second,
	} {
		var p Precision
		require.NoError(t, p.UnmarshalText([]byte(in)), in)
		require.Equal(t, want, p.Duration(), in)
	}
	var p Precision
	require.Error(t, p.UnmarshalText([]byte("2s")))
}

func TestLoadMerge(t *testing.T) {
	f, err := loadText(t,
		"[global_tags]\n  a = \"1\"\n  b = \"1\"\n[agent]\n  interval = \"20s\"\n  debug = true\n[[inputs.x]]\n[[outputs.y]]\n",
		"[global_tags]\n  b = \"2\"\n[agent]\n  interval = \"30s\"\n[[inputs.x]]\n  alias = \"second\"\n",
	)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"a": "1", "b": "2"}, f.GlobalTags)
	require.Equal(t, morse.Duration(30*time.Second), f.Agent.Interval)
	require.True(t, f.Agent.Debug, "a key that a later text leaves out keeps its earlier value")
	require.Len(t, f.Inputs, 2)
	require.Equal(t, "a.conf:7", f.Inputs[0].Source())
	require.Equal(t, "b.conf:5", f.Inputs[1].Source())
	require.Equal(t, "second", f.Inputs[1].Input.Alias)
	require.Equal(t, 30*time.Second, f.Inputs[0].Interval, "plugins inherit the merged [agent]")
}

func TestLoadPluginOrderFollowsTheFile(t *testing.T) {
	f, err := loadText(t, "[[inputs.zz]]\n[[inputs.aa]]\n[[inputs.zz]]\n[inputs.single]\n")
	require.NoError(t, err)
	var got []string
	for _, p := range f.Inputs {
		got = append(got, p.Source()+" "+p.Name)
	}
	require.Equal(t, []string{"a.conf:1 zz", "a.conf:2 aa", "a.conf:3 zz", "a.conf:4 single"}, got)
}

func TestLoadTopLevelProblems(t *testing.T) {
	_, err := loadText(t, "agent = 1\nglobal_tags = []\ninputs = 5\n[outputs]\n  x = 1\n[[aggregators.minmax]]\n[other]\n")
	require.EqualError(t, err, ""+
		"a.conf:1: agent: expected a table, got an integer\n"+
		"a.conf:2: global_tags: expected a table, got an array\n"+
		"a.conf:3: inputs: expected [[inputs.NAME]] tables, got an integer\n"+
		"a.conf:5: outputs.x: expected [[outputs.x]] tables, got an integer\n"+
		"a.conf:7: other: unknown key")
}

func TestLoadSyntaxErrorAfterFailedSubstitution(t *testing.T) {
	// The failed reference leaves "count = ", which does not parse; only the reference's own
	// message is reported for that line.
	_, err := loadText(t, "[[inputs.x]]\n  count = ${COUNT:?set COUNT}\n")
	require.EqualError(t, err, "a.conf:2: COUNT: set COUNT")

	_, err = loadText(t, "[[inputs.x]]\n  count = = 1\n")
	require.EqualError(t, err, "a.conf:2: syntax error: expected value but found '=' instead")
}

func TestLoadSkipsByteOrderMark(t *testing.T) {
	f, err := loadText(t, "\xef\xbb\xbf[[inputs.x]]\n  alias = \"a\"\n")
	require.NoError(t, err)
	require.Equal(t, 1, f.Inputs[0].Line)
}

func TestLoadPluginFilters(t *testing.T) {
	f, err := Read(Options{
		Sources:     []Source{{Name: "f.conf", Data: []byte("[[inputs.a]]\n[[inputs.b]]\n  interval = \"bad\"\n[[outputs.c]]\n[[outputs.d]]\n")}},
		InputFilter: []string{"a"}, OutputFilter: []string{"d"},
	})
	require.NoError(t, err, "the filtered-out input's problem is not reported")
	require.Len(t, f.Inputs, 1)
	require.Equal(t, "a", f.Inputs[0].Name)
	require.Len(t, f.Outputs, 1)
	require.Equal(t, "d", f.Outputs[0].Name)
}

func TestCommonOptions(t *testing.T) {
	f, err := loadText(t, `
[[inputs.x]]
  interval = "1m"
  alias = "al"
  name_override = "no"
  name_prefix = "p_"
  name_suffix = "_s"
  namepass = ["a*"]
  fieldpass = ["f*"]
  fielddrop = ["g*"]
  own = 1
  [inputs.x.tags]
    t = "v"
  [inputs.x.tagdrop]
    k = ["v1", "v2"]
[[outputs.y]]
  alias = "out"
  tagexclude = ["z"]
  fieldexclude = ["e"]
`)
	require.NoError(t, err)
	in := f.Inputs[0]
	require.Equal(t, InputCommon{
		Interval: morse.Duration(time.Minute), Alias: "al", Rename: Rename{NameOverride: "no", NamePrefix: "p_", NameSuffix: "_s"},
		Tags: map[string]string{"t": "v"},
		Filter: filter.Config{
			NamePass: []string{"a*"}, FieldInclude: []string{"f*"}, FieldExclude: []string{"g*"},
			TagDrop: map[string][]string{"k": {"v1", "v2"}},
		},
	}, in.Input)
	require.Equal(t, map[string]any{"own": int64(1)}, in.rest, "only the plugin's own keys are left")
	out := f.Outputs[0]
	require.Equal(t, "out", out.Output.Alias)
	require.Equal(t, filter.Config{TagExclude: []string{"z"}, FieldExclude: []string{"e"}}, out.Output.Filter)
	require.False(t, out.Output.Filter.IsEmpty())
	require.True(t, filter.Config{}.IsEmpty())
}

func TestOutputSettings(t *testing.T) {
	agent := "[agent]\n  flush_interval = \"10s\"\n  flush_jitter = \"2s\"\n  metric_batch_size = 100\n  metric_buffer_limit = 1000\n"
	tests := []struct {
		name  string
		table string
		want  OutputSettings
		err   string
	}{
		{"inherit", "", OutputSettings{10 * time.Second, 2 * time.Second, 100, 1000}, ""},
		{"override", "flush_interval = \"1m\"\nflush_jitter = \"5s\"\nmetric_batch_size = 5\nmetric_buffer_limit = 50",
			OutputSettings{time.Minute, 5 * time.Second, 5, 50}, ""},
		{"jitter off", `flush_jitter = "0s"`, OutputSettings{10 * time.Second, 0, 100, 1000}, ""},
		{"zero inherits", "flush_interval = 0\nmetric_batch_size = 0", OutputSettings{10 * time.Second, 2 * time.Second, 100, 1000}, ""},
		{"interval under inherited jitter", `flush_interval = "2s"`, OutputSettings{2 * time.Second, 2 * time.Second, 100, 1000},
			"a.conf:7: outputs.o.flush_interval: 2s must be greater than flush_jitter (2s, from [agent])"},
		{"jitter over own interval", "flush_interval = \"3s\"\nflush_jitter = \"4s\"", OutputSettings{3 * time.Second, 4 * time.Second, 100, 1000},
			"a.conf:8: outputs.o.flush_jitter: 4s must be smaller than flush_interval (3s)"},
		{"buffer under inherited batch", `metric_buffer_limit = 10`, OutputSettings{10 * time.Second, 2 * time.Second, 100, 10},
			"a.conf:7: outputs.o.metric_buffer_limit: 10 must be at least metric_batch_size (100, from [agent])"},
		{"negative", `metric_buffer_limit = -1`, OutputSettings{10 * time.Second, 2 * time.Second, 100, 1000},
			"a.conf:7: outputs.o.metric_buffer_limit: must not be negative, got -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := loadText(t, agent+"[[outputs.o]]\n"+tt.table+"\n")
			if tt.err == "" {
				require.NoError(t, err)
			} else {
				require.EqualError(t, err, tt.err)
			}
			require.Equal(t, tt.want, f.Outputs[0].Settings)
		})
	}
}

func TestInputInterval(t *testing.T) {
	f, err := loadText(t, "[agent]\n  collection_jitter = \"5s\"\n[[inputs.a]]\n[[inputs.b]]\n  interval = \"1m\"\n[[inputs.c]]\n  interval = \"5s\"\n")
	require.EqualError(t, err, "a.conf:7: inputs.c.interval: 5s must be greater than collection_jitter (5s, from [agent])")
	require.Equal(t, 10*time.Second, f.Inputs[0].Interval)
	require.Equal(t, time.Minute, f.Inputs[1].Interval)
}

func TestFingerprint(t *testing.T) {
	fp := func(text string) string {
		f, err := loadText(t, text)
		require.NoError(t, err)
		return f.Outputs[0].Fingerprint
	}
	base := fp("[[outputs.o]]\n  a = 1\n  b = [\"x\", \"y\"]\n  [outputs.o.c]\n    d = true\n")
	require.Equal(t, base, fp("# other layout\n[[outputs.o]]\nc = { d = true }\nb = ['x','y']\na = 1\n"))
	require.NotEqual(t, base, fp("[[outputs.o]]\n  a = 2\n  b = [\"x\", \"y\"]\n  [outputs.o.c]\n    d = true\n"))
	require.NotEqual(t, base, fp("[[outputs.o]]\n  a = 1\n  b = [\"y\", \"x\"]\n  [outputs.o.c]\n    d = true\n"))
	require.NotEqual(t, base, fp("[[outputs.o]]\n  a = \"1\"\n  b = [\"x\", \"y\"]\n  [outputs.o.c]\n    d = true\n"))
	require.NotEqual(t, base, fp("[[outputs.p]]\n  a = 1\n  b = [\"x\", \"y\"]\n  [outputs.p.c]\n    d = true\n"))
	require.Len(t, base, 64)
}
