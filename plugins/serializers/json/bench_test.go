package json_test

import (
	"testing"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
	parser "github.com/morse-agent/morse/plugins/parsers/metricjson"
	"github.com/morse-agent/morse/plugins/serializers/json"
)

// BenchmarkSerializer encodes one metric into a reused buffer: ns and allocations per metric.
func BenchmarkSerializer(b *testing.B) {
	testutil.BenchAppend(b, newSerializer(b, json.Options{TimestampUnits: morse.Duration(time.Nanosecond)}).AppendMetric)
}

// BenchmarkParser reads back one serialized metric per call, as a consumer does per message.
func BenchmarkParser(b *testing.B) {
	s := newSerializer(b, json.Options{TimestampUnits: morse.Duration(time.Nanosecond)})
	testutil.BenchParse(b, s.AppendMetric, (&parser.Parser{TimestampUnits: time.Nanosecond}).Parse)
}
