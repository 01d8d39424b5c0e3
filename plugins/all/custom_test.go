package all_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

// Every plugin the default build registers has its own file in its kind's all/ package,
// importing it under the build constraint of Telegraf's custom builds, so that
// `make build PLUGINS=<kind>.<name>` can keep it or leave it out.
func TestEveryRegisteredPluginHasItsTaggedFile(t *testing.T) {
	reg := morse.DefaultRegistry()
	kinds := map[string][]string{
		"inputs":      reg.InputNames(),
		"outputs":     reg.OutputNames(),
		"processors":  reg.ProcessorNames(),
		"aggregators": reg.AggregatorNames(),
	}
	for kind, names := range kinds {
		require.NotEmpty(t, names, kind)
		for _, name := range names {
			b, err := os.ReadFile(filepath.Join("..", kind, "all", name+".go"))
			require.NoError(t, err, "%s.%s has its file", kind, name)
			src := string(b)
			require.Contains(t, src, "\n//go:build !custom || "+kind+" || "+kind+"."+name+"\n", "%s.%s's build tag", kind, name)
			require.Contains(t, src, `import _ "github.com/morse-agent/morse/plugins/`+kind+"/"+name+`"`, "%s.%s's import", kind, name)
		}
	}
}

// A custom build holds the plugins its tags name and no other: the binary built with
// `-tags custom,inputs.cpu,outputs.file` lists exactly those in its sample config.
func TestCustomBuildHasOnlyItsPlugins(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "morse")
	require.NoError(t, testutil.BuildMorse(ctx, bin, "-tags", "custom,inputs.cpu,outputs.file"))
	out, err := exec.CommandContext(ctx, bin, "config").Output()
	require.NoError(t, err)
	header := regexp.MustCompile(`(?m)^#?\s*\[\[(\w+\.\w+)\]\]`)
	var got []string
	for _, m := range header.FindAllStringSubmatch(string(out), -1) {
		got = append(got, m[1])
	}
	require.ElementsMatch(t, []string{"inputs.cpu", "outputs.file"}, got, "plugins in `morse config`:\n%s", strings.Join(got, "\n"))
}
