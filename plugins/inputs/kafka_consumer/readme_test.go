package kafka_consumer_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/config"
	_ "github.com/morse-agent/morse/plugins/all" // every plugin the configs name
)

// TestReadmeTopologyConfigsLoad: the sample config of each tier in the README's scale-out
// section is the one in testdata, and it loads.
func TestReadmeTopologyConfigsLoad(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "..", "README.md"))
	require.NoError(t, err)
	for _, name := range []string{"edge.conf", "aggregator.conf"} {
		t.Run(name, func(t *testing.T) {
			conf, err := os.ReadFile(filepath.Join("testdata", name))
			require.NoError(t, err)
			require.True(t, strings.Contains(string(readme), "```toml\n"+string(conf)+"```\n"), "README shows testdata/%s", name)
			_, err = config.Load(config.Options{
				Sources:   []config.Source{{Name: name, Data: conf}},
				LookupEnv: func(string) (string, bool) { return "t0ken", true },
			})
			require.NoError(t, err)
		})
	}
}
