package msgpack_test

import (
	"testing"

	"github.com/morse-agent/morse/internal/testutil"
	parser "github.com/morse-agent/morse/plugins/parsers/msgpack"
	"github.com/morse-agent/morse/plugins/serializers/msgpack"
)

// BenchmarkSerializer encodes one metric into a reused buffer: ns and allocations per metric.
func BenchmarkSerializer(b *testing.B) {
	testutil.BenchAppend(b, msgpack.New().AppendMetric)
}

// BenchmarkParser reads back one serialized metric per call, as a consumer does per message.
func BenchmarkParser(b *testing.B) {
	testutil.BenchParse(b, msgpack.New().AppendMetric, (&parser.Parser{}).Parse)
}
