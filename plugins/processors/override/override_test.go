package override

import (
	"testing"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

func TestGolden(t *testing.T) {
	testutil.RunProcessors(t, "testdata", func(*testutil.Clock) morse.Processor { return &Override{} })
}

func BenchmarkOverride(b *testing.B) {
	o := &Override{NamePrefix: "p_", Tags: map[string]string{"dc": "eu", "host": "h"}}
	if err := o.Init(); err != nil {
		b.Fatal(err)
	}
	ms := testutil.Parse(b, "cpu,host=a,zone=z usage=1,idle=2 1000000000\n", false)
	testutil.BenchProcessor(b, o, ms)
}
