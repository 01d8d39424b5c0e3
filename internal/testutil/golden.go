package testutil

import (
	"context"
	"flag"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
)

// Update is the one -update flag of the tests: every test binary that imports testutil
// takes it, and `go test ./PKG -update` (make golden: every such package) rewrites the
// golden files that Golden compares with from what the code now produces. Review the diff.
var Update = flag.Bool("update", false, "rewrite the golden files from what the code now produces")

// Golden compares got with the golden file at path, first writing got there under -update
// (Update). It is the one golden-file helper: a golden file that holds more than the output
// (a plugin case's config and in sections) is compared whole, with the output in its place.
func Golden(t testing.TB, path string, got []byte) {
	t.Helper()
	if *Update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -update to create the golden file")
	require.Equal(t, string(want), string(got), "%s (go test -update rewrites it)", path)
}

// UpstreamRelease is the Telegraf release the golden shape lists (plugins/inputs/NAME/testdata/NAME.golden) are
// read from. A list that names another release is out of date.
const UpstreamRelease = "v1.39.3"

// LoadGolden reads a golden shape list that was read from UpstreamRelease, failing the
// test otherwise.
func LoadGolden(t testing.TB, path string) Shapes {
	t.Helper()
	shapes, err := LoadShapes(path)
	require.NoError(t, err)
	require.Equal(t, UpstreamRelease, shapes.Upstream, "%s is read from Telegraf %s", path, UpstreamRelease)
	return shapes
}

// GatherReal decodes config (Telegraf's option names; every key must be taken) into in,
// runs its Validate and Init as the engine would, and gathers n times on this machine.
// It returns what the last gather added. A gather that fails, or that reports an error
// through the accumulator, fails the test.
func GatherReal(t testing.TB, in morse.Input, config string, n int) []morse.Metric {
	t.Helper()
	md, err := toml.Decode(config, in)
	require.NoError(t, err)
	require.Empty(t, md.Undecoded(), "the config uses the plugin's option names")
	if l, ok := in.(morse.LoggerSetter); ok {
		l.SetLogger(slog.New(slog.DiscardHandler))
	}
	if v, ok := in.(morse.Validator); ok {
		require.NoError(t, v.Validate())
	}
	if i, ok := in.(morse.Initializer); ok {
		require.NoError(t, i.Init())
	}
	acc := &Accumulator{}
	for range n {
		acc.Clear()
		require.NoError(t, in.Gather(context.Background(), acc))
		require.Empty(t, acc.Errors())
	}
	require.Zero(t, acc.SkippedFields())
	return acc.Metrics()
}

// CheckGolden compares a real gather with a golden list twice: with the list's config,
// where every item but the machine-dependent ones must appear, and with the plugin's
// defaults, where items that need an option must not. newInput builds the plugin with
// its defaults; gathers is how many gathers a plugin needs before it reports everything
// (2 for rates computed from the previous sample). It returns the metrics of the gather
// with the list's config, for further checks.
func CheckGolden(t testing.TB, path string, newInput func() morse.Input, gathers int) []morse.Metric {
	t.Helper()
	shapes := LoadGolden(t, path)
	ms := GatherReal(t, newInput(), shapes.Config, gathers)
	require.NotEmpty(t, ms)
	require.Empty(t, shapes.Check(ms), "with the golden config %q", shapes.Config)
	def := GatherReal(t, newInput(), "", gathers)
	require.Empty(t, shapes.Defaults().Check(def), "with the plugin's defaults")
	return ms
}
