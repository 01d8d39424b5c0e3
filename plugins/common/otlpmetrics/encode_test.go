package otlpmetrics

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testutil"
)

// encode adds every line of lp to a new encoder and renders the request; errs are the
// errors of Add, in order.
func encode(t *testing.T, lp string, attrs map[string]string) (string, []string) {
	t.Helper()
	e := NewEncoder()
	var errs []string
	for _, m := range testutil.Parse(t, lp, false) {
		if err := e.Add(m); err != nil {
			errs = append(errs, err.Error())
		}
	}
	return render(e.Request(attrs)), errs
}

const libTags = `container.name=42,otel.library.name=My\ Library,otel.library.version=latest,method=post,code=200`

// The cases below are influx2otel's own tests of untyped points (v0.5.12,
// metrics_telegraf_prometheus_v1_test.go and _v2_test.go), the line protocol that Telegraf's
// outputs.opentelemetry reads metrics without a value type as: what the library builds
// is what the encoder must build.
func TestEncodeLibraryCases(t *testing.T) {
	const ts = " 1395066363000000123\n"
	const scope = "resource container.name=42\n scope \"My Library\" \"latest\"\n"
	cases := map[string]struct{ lp, want string }{
		"v1 untyped gauge": {
			"cache_age_seconds," + `container.name=42,otel.library.name=My\ Library,otel.library.version=latest,engine_id=0 gauge=23.9` + ts +
				"cache_age_seconds," + `container.name=42,otel.library.name=My\ Library,otel.library.version=latest,engine_id=1 gauge=11.9` + ts,
			scope + "  gauge cache_age_seconds\n   {engine_id=0} t=1395066363000000123 start=0 23.9\n   {engine_id=1} t=1395066363000000123 start=0 11.9\n"},
		"v1 untyped sum": {
			"http_requests_total," + libTags + " counter=1027" + ts,
			scope + "  sum http_requests_total monotonic=true AGGREGATION_TEMPORALITY_CUMULATIVE\n   {code=200,method=post} t=1395066363000000123 start=0 1027\n"},
		"v1 untyped histogram": {
			"http_request_duration_seconds," + libTags + " count=144320,sum=53423,0.05=24054,0.1=33444,0.2=100392,0.5=129389,1=133988" + ts,
			scope + "  histogram http_request_duration_seconds AGGREGATION_TEMPORALITY_CUMULATIVE\n" +
				"   {code=200,method=post} t=1395066363000000123 start=0 count=144320 sum=53423 bounds=[0.05 0.1 0.2 0.5 1] counts=[24054 9390 66948 28997 4599 10332]\n"},
		"v1 untyped summary": {
			"rpc_duration_seconds," + libTags + " count=2693,sum=17560473,0.01=3102,0.05=3272,0.5=4773,0.9=9001,0.99=76656" + ts,
			scope + "  histogram rpc_duration_seconds AGGREGATION_TEMPORALITY_CUMULATIVE\n" +
				"   {code=200,method=post} t=1395066363000000123 start=0 count=2693 sum=1.7560473e+07 bounds=[0.01 0.05 0.5 0.9 0.99] counts=[3102 170 1501 4228 67655 2693]\n"},
		"v2 untyped gauge": {
			"prometheus," + `container.name=42,otel.library.name=My\ Library,otel.library.version=latest,engine_id=0 cache_age_seconds=23.9` + ts,
			scope + "  gauge cache_age_seconds\n   {engine_id=0} t=1395066363000000123 start=0 23.9\n"},
		"v2 untyped histogram": {
			"prometheus," + libTags + " http_request_duration_seconds_count=144320,http_request_duration_seconds_sum=53423" + ts +
				"prometheus," + libTags + ",le=0.05 http_request_duration_seconds_bucket=24054" + ts +
				"prometheus," + libTags + ",le=0.1 http_request_duration_seconds_bucket=33444" + ts +
				"prometheus," + libTags + ",le=0.2 http_request_duration_seconds_bucket=100392" + ts +
				"prometheus," + libTags + ",le=0.5 http_request_duration_seconds_bucket=129389" + ts +
				"prometheus," + libTags + ",le=1 http_request_duration_seconds_bucket=133988" + ts,
			scope + "  histogram http_request_duration_seconds AGGREGATION_TEMPORALITY_CUMULATIVE\n" +
				"   {code=200,method=post} t=1395066363000000123 start=0 count=144320 sum=53423 bounds=[0.05 0.1 0.2 0.5 1] counts=[24054 9390 66948 28997 4599 10332]\n"},
		"v2 untyped summary": {
			"prometheus," + libTags + " rpc_duration_seconds_count=2693,rpc_duration_seconds_sum=17560473" + ts +
				"prometheus," + libTags + ",quantile=0.01 rpc_duration_seconds=3102" + ts +
				"prometheus," + libTags + ",quantile=0.05 rpc_duration_seconds=3272" + ts +
				"prometheus," + libTags + ",quantile=0.5 rpc_duration_seconds=4773" + ts +
				"prometheus," + libTags + ",quantile=0.9 rpc_duration_seconds=9001" + ts +
				"prometheus," + libTags + ",quantile=0.99 rpc_duration_seconds=76656" + ts,
			scope + "  histogram rpc_duration_seconds AGGREGATION_TEMPORALITY_CUMULATIVE\n" +
				"   {code=200,method=post} t=1395066363000000123 start=0 count=2693 sum=1.7560473e+07 bounds=[0.01 0.05 0.5 0.9 0.99] counts=[3102 3272 4773 9001 76656 2693]\n"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			got, errs := encode(t, c.lp, nil)
			require.Empty(t, errs)
			require.Equal(t, c.want, got)
		})
	}
}

// TestEncodeUnknownSchema: a metric whose fields name no shape, as most inputs' metrics,
// is one gauge per numeric field named measurement_field (influx2otel's
// metrics_unknown_schema_test.go); strings and booleans are left out, and the host tag stays a
// data point attribute while host.name is a resource attribute.
func TestEncodeUnknownSchema(t *testing.T) {
	got, errs := encode(t, `cpu,cpu=cpu0,host=h1,host.name=h1 usage_idle=97.5,usage_user=1i,note="x",up=true,big=18446744073709551615u 1000`+"\n", nil)
	require.Empty(t, errs)
	require.Equal(t, `resource host.name=h1
 scope "" ""
  gauge cpu_usage_idle
   {cpu=cpu0,host=h1} t=1000 start=0 97.5
  gauge cpu_usage_user
   {cpu=cpu0,host=h1} t=1000 start=0 1i
  gauge cpu_big
   {cpu=cpu0,host=h1} t=1000 start=0 1.8446744073709552e+19
`, got)
}

// TestEncodeResourceAttributes: semantic-convention keys, and keys under them, are resource
// attributes; a key that only starts like one is not. The attributes table is put into
// every resource, replacing a tag's value of the same key.
func TestEncodeResourceAttributes(t *testing.T) {
	got, errs := encode(t, "m,service.name=a,k8s.pod.name.extra=p,service.namex=n,temporality=delta counter=1i 5\n"+
		"m,service.name=b,temporality=delta counter=2i 5\n", map[string]string{"service.name": "fixed", "env": "prod"})
	require.Empty(t, errs)
	require.Equal(t, `resource k8s.pod.name.extra=p,service.name=fixed,env=prod
 scope "" ""
  sum m monotonic=true AGGREGATION_TEMPORALITY_DELTA
   {service.namex=n} t=5 start=0 1i
resource service.name=fixed,env=prod
 scope "" ""
  sum m monotonic=true AGGREGATION_TEMPORALITY_DELTA
   {} t=5 start=0 2i
`, got)
}

// TestEncodeRefused: a metric without an OTLP form, or whose name is already a metric of
// another type in the request, is refused whole, and the others are kept.
func TestEncodeRefused(t *testing.T) {
	got, errs := encode(t, strings.Join([]string{
		`h count=3,0.5=1`,                // histogram without sum
		`g gauge="text"`,                 // gauge of a string
		`s note="only text"`,             // nothing numeric
		`x counter=1`,                    // x is a sum
		`x gauge=2`,                      // so x as a gauge is refused
		`prometheus,le=1 a_bucket=1,b=2`, // le line of two fields
		`ok gauge=1`,
	}, " 7\n")+" 7\n", nil)
	require.Len(t, errs, 5, "%q", errs)
	require.Contains(t, errs[0], "histogram sum field not found")
	require.Contains(t, errs[1], "unsupported gauge value type")
	require.Contains(t, errs[2], "no numeric field")
	require.Contains(t, errs[3], `value type conflict for metric "x"`)
	require.Contains(t, errs[4], "should have 1 field, found 2")
	require.Equal(t, `resource 
 scope "" ""
  sum x monotonic=true AGGREGATION_TEMPORALITY_CUMULATIVE
   {} t=7 start=0 1
  gauge ok
   {} t=7 start=0 1
`, got)
}

// TestEncodeStatsdStart: the statsd input's RFC 3339 start_time field is a v1 data point's
// start, and no gauge of its own.
func TestEncodeStatsdStart(t *testing.T) {
	got, errs := encode(t, `requests,metric_type=counter counter=4i,start_time="2024-01-02T03:04:05Z" 9`+"\n", nil)
	require.Empty(t, errs)
	require.Contains(t, got, "{metric_type=counter} t=9 start=1704164645000000000 4i")
}
