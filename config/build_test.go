package config

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

// cfgTestInput is a fake input with one option of each interesting type and a Validate.
type cfgTestInput struct {
	Count   int               `toml:"count"`
	Label   string            `toml:"label"`
	Timeout morse.Duration    `toml:"timeout"`
	MaxSize morse.Size        `toml:"max_size"`
	Servers []string          `toml:"servers"`
	Mode    string            `toml:"mode"`
	Ratio   float64           `toml:"ratio"`
	Port    uint16            `toml:"port"`
	Labels  map[string]string `toml:"labels"`
	Limits  cfgTestLimits     `toml:"limits"`
}

type cfgTestLimits struct {
	Max   int `toml:"max"`
	Burst int `toml:"burst"`
}

func (*cfgTestInput) Gather(context.Context, morse.Accumulator) error { return nil }

func (in *cfgTestInput) Validate() error {
	var errs []error
	if in.Mode != "fast" && in.Mode != "slow" {
		errs = append(errs, morse.Errorf("mode", "must be \"fast\" or \"slow\", got %q", in.Mode))
	}
	if in.Limits.Max > 0 && in.Limits.Burst > in.Limits.Max {
		errs = append(errs, morse.Errorf("limits.burst", "must not exceed limits.max (%d)", in.Limits.Max))
	}
	if in.Count > 100 {
		errs = append(errs, errors.New("a count above 100 would overload the fake"))
	}
	return errors.Join(errs...)
}

const cfgTestInputSample = `# A fake input for tests.
[[inputs.fake]]
  ## How many metrics to make.
  count = 1
  ## One of "fast" or "slow".
  mode = "fast"
  timeout = "5s"
  # servers = ["a:1"]
`

// cfgQuietInput has no options at all.
type cfgQuietInput struct{}

func (cfgQuietInput) Gather(context.Context, morse.Accumulator) error { return nil }

// cfgTestOutput is a fake output with a required option.
type cfgTestOutput struct {
	URL     string            `toml:"url"`
	Timeout morse.Duration    `toml:"timeout"`
	Retries int               `toml:"retries"`
	Headers map[string]string `toml:"headers"`
}

func (*cfgTestOutput) Connect(context.Context) error               { return nil }
func (*cfgTestOutput) Write(context.Context, []morse.Metric) error { return nil }
func (*cfgTestOutput) Close() error                                { return nil }

func (o *cfgTestOutput) Validate() error {
	var errs []error
	if o.URL == "" {
		errs = append(errs, morse.Errorf("url", "is required"))
	}
	if o.Retries < 0 {
		errs = append(errs, morse.Errorf("retries", "must not be negative"))
	}
	return errors.Join(errs...)
}

const cfgTestOutputSample = `[[outputs.fakeout]]
  ## Where to write.
  url = "http://127.0.0.1:8086"
  # timeout = "5s"
`

// cfgNullOutput has no options and no Validate.
type cfgNullOutput struct{}

func (cfgNullOutput) Connect(context.Context) error               { return nil }
func (cfgNullOutput) Write(context.Context, []morse.Metric) error { return nil }
func (cfgNullOutput) Close() error                                { return nil }

// cfgTestRegistry holds the fake plugins only, so that these tests do not depend on the real
// plugins. quiet and nullout have samples without a header, to test that one is added.
func cfgTestRegistry(t testing.TB) *morse.Registry {
	reg := morse.NewRegistry()
	require.NoError(t, reg.AddInput(morse.InputInfo{
		Name: "fake", Description: "A fake input", SampleConfig: cfgTestInputSample,
		New: func() morse.Input {
			return &cfgTestInput{Count: 1, Mode: "fast", Timeout: morse.Duration(5 * time.Second)}
		},
	}))
	require.NoError(t, reg.AddInput(morse.InputInfo{
		Name: "quiet", Description: "An input without options", SampleConfig: "  # No options.\n",
		New: func() morse.Input { return cfgQuietInput{} },
	}))
	require.NoError(t, reg.AddOutput(morse.OutputInfo{
		Name: "fakeout", Description: "A fake output", SampleConfig: cfgTestOutputSample,
		New: func() morse.Output { return &cfgTestOutput{Timeout: morse.Duration(5 * time.Second)} },
	}))
	require.NoError(t, reg.AddOutput(morse.OutputInfo{
		Name: "nullout", Description: "An output without options",
		New: func() morse.Output { return cfgNullOutput{} },
	}))
	return reg
}

// cfgTestEnv is the environment of the golden tests, so that they never see the real one.
func cfgTestEnv(name string) (string, bool) {
	v, ok := map[string]string{
		"MORSE_TEST_HOST":    "db1",
		"MORSE_TEST_BATCH":   "250",
		"MORSE_TEST_DB":      "telegraf",
		"MORSE_TEST_TOKEN":   `Bearer "quoted" \ back`,
		"MORSE_TEST_SERVERS": `["s1:1", "s2:2"]`,
		"MORSE_TEST_EMPTY":   "",
	}[name]
	return v, ok
}

// cfgGoldenOptions loads name, and name's .d directory when there is one, as
// --config and --config-directory would.
func cfgGoldenOptions(t *testing.T, conf string) Options {
	opts := Options{Files: []string{conf}, Registry: cfgTestRegistry(t), LookupEnv: cfgTestEnv}
	dir := strings.TrimSuffix(conf, ".conf") + ".d"
	if st, err := os.Stat(dir); err == nil && st.IsDir() {
		opts.Dirs = []string{dir}
	}
	return opts
}

func checkGolden(t *testing.T, path, got string) {
	t.Helper()
	testutil.Golden(t, path, []byte(got))
}

func TestConfigGoodGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/config/good/*.conf")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, conf := range files {
		t.Run(filepath.Base(conf), func(t *testing.T) {
			cfg, err := Load(cfgGoldenOptions(t, conf))
			require.NoError(t, err)
			checkGolden(t, strings.TrimSuffix(conf, ".conf")+".golden", describeConfig(cfg))
		})
	}
}

func TestConfigBadGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/config/bad/*.conf")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, conf := range files {
		t.Run(filepath.Base(conf), func(t *testing.T) {
			cfg, err := Load(cfgGoldenOptions(t, conf))
			require.Error(t, err)
			require.Nil(t, cfg)
			var errs Errors
			require.ErrorAs(t, err, &errs)
			checkGolden(t, strings.TrimSuffix(conf, ".conf")+".golden", err.Error()+"\n")
		})
	}
}

// describeConfig prints what a loaded config holds, for the golden files.
func describeConfig(cfg *Config) string {
	var b strings.Builder
	fmt.Fprintf(&b, "agent: %+v\n", cfg.Agent)
	fmt.Fprintf(&b, "global_tags: %s\n", describeValue(reflect.ValueOf(cfg.GlobalTags)))
	for _, o := range cfg.Outputs {
		fmt.Fprintf(&b, "output %s at %s: flush_interval=%s flush_jitter=%s batch=%d buffer=%d filter=%t\n",
			o.Name, o.Source, o.Settings().FlushInterval, o.Settings().FlushJitter, o.Settings().BatchSize, o.Settings().BufferLimit, o.Filter != nil)
		fmt.Fprintf(&b, "  common: %s\n  plugin: %s\n",
			describeValue(reflect.ValueOf(o.Common)), describeValue(reflect.ValueOf(o.Plugin)))
	}
	for _, in := range cfg.Inputs {
		fmt.Fprintf(&b, "input %s at %s: interval=%s filter=%t\n", in.Name, in.Source, in.Interval(), in.Filter != nil)
		fmt.Fprintf(&b, "  common: %s\n  plugin: %s\n",
			describeValue(reflect.ValueOf(in.Common)), describeValue(reflect.ValueOf(in.Plugin)))
	}
	return b.String()
}

// describeValue formats a config value on one line, leaving out zero fields and quoting
// strings, so that golden files stay short and show exactly what was decoded.
func describeValue(v reflect.Value) string {
	if v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		v = v.Elem()
	}
	if s, ok := v.Interface().(fmt.Stringer); ok {
		return s.String()
	}
	var parts []string
	switch v.Kind() {
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if !v.Field(i).IsZero() {
				parts = append(parts, v.Type().Field(i).Name+"="+describeValue(v.Field(i)))
			}
		}
		return "{" + strings.Join(parts, " ") + "}"
	case reflect.Map:
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%q:%s", k.String(), describeValue(v.MapIndex(k))))
		}
		return "{" + strings.Join(parts, " ") + "}"
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			parts = append(parts, describeValue(v.Index(i)))
		}
		return "[" + strings.Join(parts, " ") + "]"
	case reflect.String:
		return fmt.Sprintf("%q", v.String())
	}
	return fmt.Sprint(v.Interface())
}

func TestConfigFiltersKeepOnlyNamedPlugins(t *testing.T) {
	src := `
[[outputs.fakeout]]
  url = "http://a"
[[outputs.nullout]]
[[inputs.fake]]
[[inputs.quiet]]
[[inputs.nope]]
  interval = "not even a duration"
`
	// The unknown input and its bad value are never looked at, because the filter skips them.
	cfg, err := Load(Options{
		Sources:  []Source{{Name: "filter.conf", Data: []byte(src)}},
		Registry: cfgTestRegistry(t), InputFilter: []string{"quiet"}, OutputFilter: []string{"nullout"},
	})
	require.NoError(t, err)
	require.Len(t, cfg.Inputs, 1)
	require.Equal(t, "quiet", cfg.Inputs[0].Name)
	require.Len(t, cfg.Outputs, 1)
	require.Equal(t, "nullout", cfg.Outputs[0].Name)
}

func TestConfigFingerprint(t *testing.T) {
	load := func(src string) *Config {
		cfg, err := Load(Options{
			Sources:  []Source{{Name: "fp.conf", Data: []byte(src)}},
			Registry: cfgTestRegistry(t), LookupEnv: cfgTestEnv,
		})
		require.NoError(t, err)
		return cfg
	}
	base := load("[[outputs.fakeout]]\n  url = \"http://db1\"\n  retries = 2\n")
	tests := []struct {
		name  string
		src   string
		equal bool
	}{
		{"same content, other layout", "# comment\n[[outputs.fakeout]]\nretries=2 # two\nurl='http://db1'\n", true},
		{"same after substitution", "[[outputs.fakeout]]\n  url = \"http://${MORSE_TEST_HOST}\"\n  retries = 2\n", true},
		{"other value", "[[outputs.fakeout]]\n  url = \"http://db2\"\n  retries = 2\n", false},
		{"extra key", "[[outputs.fakeout]]\n  url = \"http://db1\"\n  retries = 2\n  timeout = \"5s\"\n", false},
		{"inherited setting changed", "[agent]\n  flush_interval = \"20s\"\n[[outputs.fakeout]]\n  url = \"http://db1\"\n  retries = 2\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := load(tt.src)
			require.Equal(t, tt.equal, got.Outputs[0].Fingerprint == base.Outputs[0].Fingerprint)
		})
	}
}

func TestConfigDefaultAndAddPlugins(t *testing.T) {
	cfg := DefaultConfig()
	require.Empty(t, cfg.Agent.Validate())
	oc := cfg.AddOutput("nullout", cfgNullOutput{})
	ic := cfg.AddInput("quiet", cfgQuietInput{})
	// [agent] settings set after the plugins were added still apply to them.
	cfg.Agent.FlushInterval = morse.Duration(2 * time.Second)
	cfg.Agent.FlushJitter = morse.Duration(time.Second)
	jitterOff := cfg.AddOutput("nullout", cfgNullOutput{})
	off := morse.Duration(0)
	jitterOff.Common.FlushJitter = &off // zero meant: no jitter for this one
	require.NoError(t, cfg.Resolve())
	require.Equal(t, OutputSettings{FlushInterval: 2 * time.Second, FlushJitter: time.Second, BatchSize: 1000, BufferLimit: 10000},
		oc.Settings())
	require.Zero(t, jitterOff.Settings().FlushJitter)
	require.Equal(t, 10*time.Second, ic.Interval())
	require.Equal(t, []*OutputConfig{oc, jitterOff}, cfg.Outputs)
	require.Equal(t, []*InputConfig{ic}, cfg.Inputs)
}

func TestConfigResolveReportsEveryProblem(t *testing.T) {
	cfg := DefaultConfig()
	cfg.AddInput("quiet", cfgQuietInput{})
	oc := cfg.AddOutput("nullout", cfgNullOutput{})
	oc.Common.MetricBatchSize, oc.Common.MetricBufferLimit = 500, 100
	cfg.Agent.CollectionJitter = morse.Duration(time.Minute)
	cfg.Agent.FlushJitter = morse.Duration(time.Minute)
	err := cfg.Resolve()
	require.ErrorContains(t, err, "agent.collection_jitter: ")
	require.ErrorContains(t, err, "agent.flush_jitter: ")
	require.ErrorContains(t, err, "code: outputs[0].metric_buffer_limit: 100 must be at least metric_batch_size (500)")
}

func TestConfigUnreadableSources(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	_, err := Load(Options{
		Files: []string{missing + ".conf"}, Dirs: []string{missing + ".d"}, Registry: cfgTestRegistry(t),
	})
	var errs Errors
	require.ErrorAs(t, err, &errs)
	require.Equal(t, []string{
		missing + ".conf: cannot read the config file: no such file or directory",
		missing + ".d: cannot read the config directory: no such file or directory",
	}, strings.Split(err.Error(), "\n"))
}

func TestErrorsAreSorted(t *testing.T) {
	_, err := Load(cfgGoldenOptions(t, "testdata/config/bad/merge.conf"))
	var errs Errors
	require.ErrorAs(t, err, &errs)
	require.True(t, slices.IsSortedFunc(errs, func(a, b Error) int {
		if a.File != b.File {
			return strings.Compare(a.File, b.File)
		}
		return a.Line - b.Line
	}))
}

// TestCodeBuiltPluginValidates: a plugin built in code validates itself in Resolve, as a
// file's does when it is loaded, each problem under the field's path and all of them in one
// run, with the settings' problems of the same plugin; a file's plugin is not asked again.
func TestCodeBuiltPluginValidates(t *testing.T) {
	cfg := DefaultConfig()
	oc := cfg.AddOutput("fakeout", &cfgTestOutput{Retries: -1})
	oc.Common.MetricBatchSize = -1
	cfg.AddOutput("nullout", cfgNullOutput{})
	cfg.AddOutput("fakeout", &cfgTestOutput{URL: "http://127.0.0.1:8086"})
	err := cfg.Resolve()
	require.Error(t, err)
	msg := err.Error()
	require.Contains(t, msg, "code: outputs[0].url: is required")
	require.Contains(t, msg, "code: outputs[0].retries: must not be negative")
	require.Contains(t, msg, "code: outputs[0].metric_batch_size:")
	require.NotContains(t, msg, "outputs[1]")
	require.NotContains(t, msg, "outputs[2]")

	fixed := DefaultConfig()
	fixed.AddOutput("fakeout", &cfgTestOutput{URL: "http://127.0.0.1:8086"})
	require.NoError(t, fixed.Resolve())
}
