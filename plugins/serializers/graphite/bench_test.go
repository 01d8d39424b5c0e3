package graphite_test

import (
	"testing"

	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/plugins/serializers/graphite"
)

// BenchmarkSerialize writes testutil.BenchMetric (four tags, five fields) with the default
// template and with tag support: ns and allocations per metric.
func BenchmarkSerialize(b *testing.B) {
	for _, c := range []struct {
		name string
		o    graphite.Options
	}{{"template", graphite.Options{}}, {"tag_support", graphite.Options{TagSupport: true}}} {
		b.Run(c.name, func(b *testing.B) {
			s, err := graphite.New(c.o)
			if err != nil {
				b.Fatal(err)
			}
			testutil.BenchAppend(b, s.AppendMetric)
		})
	}
}
