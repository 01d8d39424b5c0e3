package defaults

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/plugintest"
)

func TestGolden(t *testing.T) {
	plugintest.RunProcessors(t, "testdata", func(*plugintest.Clock) morse.Processor { return &Defaults{} })
}

func TestValidate(t *testing.T) {
	err := (&Defaults{Fields: map[string]any{"t": time.Now()}}).Validate()
	require.ErrorContains(t, err, "fields.t: must be a string, number or boolean")
}

func BenchmarkDefaults(b *testing.B) {
	d := &Defaults{Fields: map[string]any{"status_code": "N/A"}, Tags: map[string]string{"zone": "none"}}
	require.NoError(b, d.Init())
	ms := plugintest.Parse(b, "lb,http_method=GET cache_status=\"HIT\",latency=230 1000000000\n", false)
	plugintest.BenchProcessor(b, d, ms)
}
