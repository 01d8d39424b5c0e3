package all_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
	_ "github.com/morse-agent/morse/plugins/processors/all"
)

// Every processor registers a description and a sample whose options, commented out or
// not, are all its own and valid together.
func TestSamples(t *testing.T) {
	reg := morse.DefaultRegistry()
	names := reg.ProcessorNames()
	require.Len(t, names, 10)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			info, _ := reg.Processor(name)
			require.NotEmpty(t, info.Description)
			testutil.CheckSample(t, "processors", name, info.SampleConfig, func() any { return info.New() })
		})
	}
}
