package defaults

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

func TestGolden(t *testing.T) {
	testutil.RunProcessors(t, "testdata", func(*testutil.Clock) morse.Processor { return &Defaults{} })
}

func TestValidate(t *testing.T) {
	err := (&Defaults{Fields: map[string]any{"t": time.Now()}}).Validate()
	require.ErrorContains(t, err, "fields.t: must be a string, number or boolean")
}

func BenchmarkDefaults(b *testing.B) {
	d := &Defaults{Fields: map[string]any{"status_code": "N/A"}, Tags: map[string]string{"zone": "none"}}
	require.NoError(b, d.Init())
	ms := testutil.Parse(b, "lb,http_method=GET cache_status=\"HIT\",latency=230 1000000000\n", false)
	testutil.BenchProcessor(b, d, ms)
}
