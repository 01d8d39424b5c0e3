package all_test

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/config"
)

// compatDir holds one config per plugin with every option of Telegraf 1.39.3's sample.conf
// set; see its README.
var compatDir = filepath.Join("..", "..", "testdata", "telegraf")

// notCovered are the registered plugins without a file there, and why.
var notCovered = map[string]string{
	"outputs.questdb":        "morse's own: Telegraf has no QuestDB output",
	"processors.cardinality": "morse's own: Telegraf has no cardinality processor",
}

// newPlugin makes a fresh instance of the registered plugin kind.name.
func newPlugin(reg *morse.Registry, kind, name string) (any, bool) {
	switch kind {
	case config.KindInputs:
		if info, ok := reg.Input(name); ok {
			return info.New(), true
		}
	case config.KindOutputs:
		if info, ok := reg.Output(name); ok {
			return info.New(), true
		}
	case config.KindProcessors:
		if info, ok := reg.Processor(name); ok {
			return info.New(), true
		}
	case config.KindAggregators:
		if info, ok := reg.Aggregator(name); ok {
			return info.New(), true
		}
	}
	return nil, false
}

// buildPlugin makes the registered plugin of p and decodes p's table into it through the
// config package, as loading a config does, then lets the plugin validate itself.
func buildPlugin(t *testing.T, reg *morse.Registry, p *config.Plugin) any {
	t.Helper()
	plugin, ok := newPlugin(reg, p.Kind, p.Name)
	require.True(t, ok, "%s is registered", p.ID())
	require.Empty(t, p.Decode(plugin), "%s: every option of Telegraf's sample decodes", p.Source())
	if v, ok := plugin.(morse.Validator); ok {
		require.NoError(t, v.Validate(), "%s: the options are valid", p.Source())
	}
	return plugin
}

// TestTelegrafSampleOptionsLoad loads, for every input, output, processor and aggregator, a
// config that sets every option of Telegraf 1.39.3's sample.conf, and checks that each table
// decodes and validates: an operator's telegraf.conf with these plugins loads in morse. Every
// registered plugin needs such a config unless notCovered says why not.
func TestTelegrafSampleOptionsLoad(t *testing.T) {
	entries, err := os.ReadDir(compatDir)
	require.NoError(t, err)
	reg := morse.DefaultRegistry()
	covered := map[string]bool{}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".conf") {
			continue
		}
		id := strings.TrimSuffix(e.Name(), ".conf")
		t.Run(id, func(t *testing.T) {
			f, err := config.Read(config.Options{
				Files:     []string{filepath.Join(compatDir, e.Name())},
				LookupEnv: func(string) (string, bool) { return "", false },
			})
			require.NoError(t, err)
			plugins := slices.Concat(f.Inputs, f.Outputs, f.Processors, f.Aggregators)
			require.NotEmpty(t, plugins)
			for _, p := range plugins {
				require.Equal(t, id, p.ID(), "a file holds the tables of its own plugin")
				buildPlugin(t, reg, p)
			}
			covered[id] = true
		})
	}
	for kind, names := range map[string][]string{
		config.KindInputs: reg.InputNames(), config.KindOutputs: reg.OutputNames(),
		config.KindProcessors: reg.ProcessorNames(), config.KindAggregators: reg.AggregatorNames(),
	} {
		require.NotEmpty(t, names, "%s are registered", kind)
		for _, name := range names {
			id := kind + "." + name
			if _, skip := notCovered[id]; !skip {
				require.True(t, covered[id], "%s has a config in %s", id, compatDir)
			}
		}
	}
}

// TestUintSupportIsOffByDefault: as in Telegraf, outputs write unsigned fields as clamped
// signed integers unless influx_uint_support is set.
func TestUintSupportIsOffByDefault(t *testing.T) {
	f, err := config.Read(config.Options{Sources: []config.Source{{Name: "uint.conf", Data: []byte(`
[[outputs.file]]
  files = ["stdout"]
[[outputs.influxdb]]
  urls = ["http://127.0.0.1:8086"]
`)}}})
	require.NoError(t, err)
	reg := morse.DefaultRegistry()
	for _, p := range f.Outputs {
		out := buildPlugin(t, reg, p)
		v := reflect.ValueOf(out).Elem().FieldByName("InfluxUintSupport")
		require.True(t, v.IsValid(), "%s has influx_uint_support", p.ID())
		require.False(t, v.Bool(), "%s: influx_uint_support defaults to false", p.ID())
	}
}
