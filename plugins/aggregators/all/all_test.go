package all_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
	_ "github.com/morse-agent/morse/plugins/aggregators/all"
)

// Every aggregator registers a description and a sample whose options, commented out or
// not, are all its own and valid together.
func TestSamples(t *testing.T) {
	reg := morse.DefaultRegistry()
	names := reg.AggregatorNames()
	require.Equal(t, []string{"basicstats", "final", "merge", "minmax"}, names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			info, _ := reg.Aggregator(name)
			require.NotEmpty(t, info.Description)
			testutil.CheckSample(t, "aggregators", name, info.SampleConfig, func() any { return info.New() })
		})
	}
}
