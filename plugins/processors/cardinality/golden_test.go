package cardinality

import (
	"testing"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

func TestGolden(t *testing.T) {
	testutil.RunProcessors(t, "testdata", func(clock *testutil.Clock) morse.Processor {
		g := New()
		g.Now = clock.Now
		return g
	})
}
