package opentelemetry

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
)

// start runs the input on free ports of 127.0.0.1, gRPC and HTTP, with schema.
func start(t *testing.T, schema string) (*OpenTelemetry, *testutil.Accumulator) {
	t.Helper()
	in := New()
	in.ServiceAddress = "127.0.0.1:0"
	in.HTTPServiceAddress = "127.0.0.1:0"
	in.MetricsSchema = schema
	require.NoError(t, in.Init())
	acc := &testutil.Accumulator{}
	require.NoError(t, in.Start(context.Background(), acc))
	t.Cleanup(in.Stop)
	return in, acc
}

// shapes is each metric as line protocol without its time, start_time_unix_nano (both the
// SDK's clock) and service.instance.id (random), sorted, each shape once: the SDK exports
// at its flush and again at its shutdown.
func shapes(ms []morse.Metric) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range ms {
		m = m.WithoutTag("service.instance.id")
		var fields []morse.Field
		for _, f := range m.Fields() {
			if f.Key != "start_time_unix_nano" {
				fields = append(fields, f)
			}
		}
		line := strings.TrimSpace(testutil.Format([]morse.Metric{m.WithFields(fields)}))
		line = line[:strings.LastIndexByte(line, ' ')]
		if !seen[line] {
			seen[line] = true
			out = append(out, line)
		}
	}
	sort.Strings(out)
	return out
}

const sdkTags = "otel.library.name=morse.test,otel.library.version=1.2.3"
const sdkResource = "service.name=morse-test,telemetry.sdk.language=python,telemetry.sdk.name=opentelemetry,telemetry.sdk.version=1.45.2"

// TestPythonSDK receives what the OpenTelemetry Python SDK's OTLP exporters send, a
// counter, an up-down counter, a histogram and a gauge, in both schemas, over gRPC and over
// HTTP/protobuf, plain and gzipped: the shapes of Telegraf's otel2influx, the resource and
// scope as tags, whatever the transport.
func TestPythonSDK(t *testing.T) {
	want := map[string][]string{
		"prometheus-v1": {
			"latency," + sdkTags + ",path=/," + sdkResource + " +Inf=3,0=0,10=2,100=3,1000=3,10000=3,25=2,250=3,2500=3,5=1,50=3,500=3,5000=3,75=3,750=3,7500=3,count=3,max=30,min=3,sum=40",
			"queue_depth," + sdkTags + "," + sdkResource + " gauge=-3i",
			"requests," + sdkTags + ",path=/," + sdkResource + " counter=5i",
			"temperature," + sdkTags + ",room=a," + sdkResource + " gauge=21.5",
		},
		"prometheus-v2": {
			"prometheus,le=+Inf," + sdkTags + ",path=/," + sdkResource + " latency_bucket=3",
			"prometheus,le=0," + sdkTags + ",path=/," + sdkResource + " latency_bucket=0",
			"prometheus,le=10," + sdkTags + ",path=/," + sdkResource + " latency_bucket=2",
			"prometheus,le=5," + sdkTags + ",path=/," + sdkResource + " latency_bucket=1",
			"prometheus," + sdkTags + ",path=/," + sdkResource + " latency_count=3,latency_max=30,latency_min=3,latency_sum=40",
			"prometheus," + sdkTags + ",path=/," + sdkResource + " requests=5i",
			"prometheus," + sdkTags + ",room=a," + sdkResource + " temperature=21.5",
			"prometheus," + sdkTags + "," + sdkResource + " queue_depth=-3i",
		},
	}
	send := map[string]func(t *testing.T, in *OpenTelemetry){
		"grpc": func(t *testing.T, in *OpenTelemetry) { testserver.SendOtelPython(t, in.Addr().String()) },
		"http": func(t *testing.T, in *OpenTelemetry) {
			testserver.SendOtelPythonHTTP(t, "http://"+in.HTTPAddr().String()+"/v1/metrics", false)
		},
		"http-gzip": func(t *testing.T, in *OpenTelemetry) {
			testserver.SendOtelPythonHTTP(t, "http://"+in.HTTPAddr().String()+"/v1/metrics", true)
		},
	}
	for schema, lines := range want {
		for transport, send := range send {
			t.Run(schema+"/"+transport, func(t *testing.T) { checkPython(t, schema, lines, send) })
		}
	}
}

// checkPython runs the input with schema, has send make the SDK export to it, and checks
// that the metrics received are lines.
func checkPython(t *testing.T, schema string, lines []string, send func(*testing.T, *OpenTelemetry)) {
	t.Helper()
	in, acc := start(t, schema)
	send(t, in)
	require.Eventually(t, func() bool { return len(shapes(acc.Metrics())) >= len(lines) }, 10*time.Second, 10*time.Millisecond)
	got := shapes(acc.Metrics())
	if schema == "prometheus-v2" { // the 15 buckets of the SDK's default bounds: check the first ones
		got = keep(got, func(s string) bool {
			return !strings.Contains(s, "le=") || strings.Contains(s, "le=0,") || strings.Contains(s, "le=5,") ||
				strings.Contains(s, "le=10,") || strings.Contains(s, "le=+Inf,")
		})
	}
	require.Equal(t, lines, got)
}

func keep(in []string, ok func(string) bool) []string {
	var out []string
	for _, s := range in {
		if ok(s) {
			out = append(out, s)
		}
	}
	return out
}
