package cardinality

import (
	"testing"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/plugintest"
)

func TestGolden(t *testing.T) {
	plugintest.RunProcessors(t, "testdata", func(clock *plugintest.Clock) morse.Processor {
		g := New()
		g.Now = clock.Now
		return g
	})
}
