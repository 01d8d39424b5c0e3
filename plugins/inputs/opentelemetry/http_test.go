package opentelemetry

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// otlpJSON is an export request in OTLP JSON as the specification's example writes it:
// lowerCamelCase keys, 64-bit integers as strings, the enum as a number, and a field this
// receiver does not know, which it must ignore.
const otlpJSON = `{"resourceMetrics":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}]},
"scopeMetrics":[{"scope":{"name":"lib"},"metrics":[
{"name":"hits","sum":{"aggregationTemporality":2,"isMonotonic":true,"dataPoints":[{"asInt":"7","timeUnixNano":"1700000000000000000"}]}},
{"name":"temp","futureField":1,"gauge":{"dataPoints":[{"asDouble":21.5,"timeUnixNano":"1700000000000000000","attributes":[{"key":"room","value":{"stringValue":"a"}}]}]}}]}]}]}`

// post sends body to the input's /v1/metrics (or path) with the content type and encoding
// given, and returns the answer's status, content type and body.
func post(t *testing.T, in *OpenTelemetry, method, path, ct, enc string, body []byte) (int, string, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+in.HTTPAddr().String()+path, bytes.NewReader(body))
	require.NoError(t, err)
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	if enc != "" {
		req.Header.Set("Content-Encoding", enc)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header.Get("Content-Type"), b
}

func gz(t *testing.T, b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	_, err := w.Write(b)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return buf.Bytes()
}

// TestHTTPJSON: an OTLP JSON request is taken, its unknown field ignored, and answered 200
// with an export response in JSON.
func TestHTTPJSON(t *testing.T) {
	in, acc := start(t, "prometheus-v1")
	code, ct, body := post(t, in, http.MethodPost, "/v1/metrics", "application/json", "", []byte(otlpJSON))
	require.Equal(t, http.StatusOK, code, string(body))
	require.Equal(t, "application/json", ct)
	var resp colmetricspb.ExportMetricsServiceResponse
	require.NoError(t, protojson.Unmarshal(body, &resp))
	require.Nil(t, resp.PartialSuccess)
	require.Equal(t, []string{
		"hits,otel.library.name=lib,service.name=svc counter=7i",
		"temp,otel.library.name=lib,room=a,service.name=svc gauge=21.5",
	}, shapes(acc.Metrics()))
	require.Equal(t, int64(1700000000000000000), acc.Metrics()[0].Time().UnixNano())
}

// TestHTTPPartialSuccess: data points with no shape in the schema are refused in a 200's
// partial success, in the request's encoding (protobuf, gzipped here, and JSON), and the
// rest of the request is taken.
func TestHTTPPartialSuccess(t *testing.T) {
	req := &colmetricspb.ExportMetricsServiceRequest{ResourceMetrics: []*metricspb.ResourceMetrics{{ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{
		{Name: "e", Data: &metricspb.Metric_ExponentialHistogram{ExponentialHistogram: &metricspb.ExponentialHistogram{
			DataPoints: []*metricspb.ExponentialHistogramDataPoint{{TimeUnixNano: 1}}}}},
		{Name: "g", Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: []*metricspb.NumberDataPoint{
			{TimeUnixNano: 5, Value: &metricspb.NumberDataPoint_AsInt{AsInt: 2}}}}}},
	}}}}}}
	in, acc := start(t, "prometheus-v1")
	pb, err := proto.Marshal(req)
	require.NoError(t, err)
	code, ct, body := post(t, in, http.MethodPost, "/v1/metrics", "application/x-protobuf", "gzip", gz(t, pb))
	require.Equal(t, http.StatusOK, code, string(body))
	require.Equal(t, "application/x-protobuf", ct)
	var resp colmetricspb.ExportMetricsServiceResponse
	require.NoError(t, proto.Unmarshal(body, &resp))
	require.Equal(t, int64(1), resp.GetPartialSuccess().GetRejectedDataPoints())
	require.Contains(t, resp.GetPartialSuccess().GetErrorMessage(), "exponential histograms are not supported")

	js, err := protojson.Marshal(req)
	require.NoError(t, err)
	code, ct, body = post(t, in, http.MethodPost, "/v1/metrics", "application/json; charset=utf-8", "", js)
	require.Equal(t, http.StatusOK, code, string(body))
	require.Equal(t, "application/json", ct)
	resp.Reset()
	require.NoError(t, protojson.Unmarshal(body, &resp))
	require.Equal(t, int64(1), resp.GetPartialSuccess().GetRejectedDataPoints())
	require.Equal(t, []string{"g gauge=2i"}, shapes(acc.Metrics()))
	require.Len(t, acc.Metrics(), 2)
	require.Len(t, acc.Errors(), 2)
}

// TestHTTPRefusals: the specification's answers to requests the receiver refuses, each with
// a google.rpc.Status that says why, and nothing taken from any of them.
func TestHTTPRefusals(t *testing.T) {
	in, acc := start(t, "prometheus-v1")
	in.Stop()
	in.MaxMsgSize = 1024
	require.NoError(t, in.Start(t.Context(), acc))
	big := bytes.Repeat([]byte(" "), 2048)
	for _, c := range []struct {
		name, method, path, ct, enc string
		body                        []byte
		code                        int
		msg                         string
	}{
		{"protobuf garbage", http.MethodPost, "/v1/metrics", "application/x-protobuf", "", []byte{0xff, 0xff, 0xff}, http.StatusBadRequest, "not an OTLP export request"},
		{"JSON garbage", http.MethodPost, "/v1/metrics", "application/json", "", []byte(`{"resourceMetrics":7}`), http.StatusBadRequest, "not an OTLP export request"},
		{"gzip garbage", http.MethodPost, "/v1/metrics", "application/x-protobuf", "gzip", []byte("not gzip"), http.StatusBadRequest, "gzip"},
		{"content type", http.MethodPost, "/v1/metrics", "text/plain", "", []byte("x"), http.StatusUnsupportedMediaType, "unsupported content type"},
		{"no content type", http.MethodPost, "/v1/metrics", "", "", []byte("x"), http.StatusUnsupportedMediaType, "unsupported content type"},
		{"encoding", http.MethodPost, "/v1/metrics", "application/x-protobuf", "br", []byte("x"), http.StatusUnsupportedMediaType, "unsupported content encoding"},
		{"too large", http.MethodPost, "/v1/metrics", "application/json", "", big, http.StatusRequestEntityTooLarge, ""},
		{"too large unzipped", http.MethodPost, "/v1/metrics", "application/json", "gzip", gz(t, big), http.StatusRequestEntityTooLarge, "max_msg_size"},
		{"method", http.MethodGet, "/v1/metrics", "", "", nil, http.StatusMethodNotAllowed, "takes POST"},
		{"path", http.MethodPost, "/v1/traces", "application/x-protobuf", "", nil, http.StatusNotFound, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, ct, body := post(t, in, c.method, c.path, c.ct, c.enc, c.body)
			require.Equal(t, c.code, code, string(body))
			if c.code == http.StatusNotFound {
				return
			}
			var st status.Status
			if strings.HasPrefix(ct, "application/json") {
				require.NoError(t, protojson.Unmarshal(body, &st))
			} else {
				require.Equal(t, "application/x-protobuf", ct)
				require.NoError(t, proto.Unmarshal(body, &st))
			}
			require.Contains(t, st.GetMessage(), c.msg)
		})
	}
	require.Empty(t, acc.Metrics())
}

// TestHTTPJSONExemplarIDs: the trace and span IDs of an exemplar in OTLP JSON are hex, as
// the specification writes them, and reach the exemplar's tags as sent.
func TestHTTPJSONExemplarIDs(t *testing.T) {
	const body = `{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"lat","gauge":{"dataPoints":[
{"asDouble":1,"timeUnixNano":"1700000000000000000","exemplars":[{"asDouble":0.5,"timeUnixNano":"1700000000000000001",
"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174"}]}]}}]}]}]}`
	in, acc := start(t, "prometheus-v1")
	code, _, b := post(t, in, http.MethodPost, "/v1/metrics", "application/json", "", []byte(body))
	require.Equal(t, http.StatusOK, code, string(b))
	require.Equal(t, []string{
		"lat gauge=1",
		"lat_exemplar,span_id=eee19b7ec3c1b174,trace_id=5b8efff798038103d269b633813fc60c gauge=0.5",
	}, shapes(acc.Metrics()))
}
