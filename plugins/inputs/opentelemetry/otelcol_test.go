package opentelemetry

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testserver"
)

// TestCollectorHTTPExporter receives what the OpenTelemetry Collector's otlphttp exporter
// sends, gzipped, in both of its encodings: binary protobuf and OTLP JSON, whose exemplar
// IDs are hex. The metrics are the same either way, and the same as Telegraf's otel2influx
// makes of them.
func TestCollectorHTTPExporter(t *testing.T) {
	const tags = "otel.library.name=morse.test,otel.library.version=1.2.3"
	want := []string{
		"latency," + tags + ",service.name=otelcol-test +Inf=3,10=2,5=1,count=3,sum=40",
		"requests," + tags + ",path=/,service.name=otelcol-test counter=5i",
		"temperature," + tags + ",room=a,service.name=otelcol-test gauge=21.5",
		"temperature_exemplar,span_id=eee19b7ec3c1b174,trace_id=5b8efff798038103d269b633813fc60c gauge=0.5",
	}
	for _, encoding := range []string{"proto", "json"} {
		t.Run(encoding, func(t *testing.T) {
			in, acc := start(t, "prometheus-v1")
			testserver.SendOtelcolHTTP(t, "http://"+in.HTTPAddr().String()+"/v1/metrics", encoding)
			require.Eventually(t, func() bool { return len(acc.Metrics()) >= len(want) }, 10*time.Second, 10*time.Millisecond)
			require.Equal(t, want, shapes(acc.Metrics()))
			require.Equal(t, int64(1_700_000_000_000_000_000), acc.Metrics()[0].Time().UnixNano())
		})
	}
}
