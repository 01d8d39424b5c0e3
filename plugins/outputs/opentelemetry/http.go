package opentelemetry

import (
	"bytes"
	"context"
	"crypto/tls"
	"net/http"
	"strings"

	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/morse-agent/morse/plugins/common/httpout"
)

// httpExporter posts each request to the service address, OTLP over HTTP.
type httpExporter struct {
	client   *http.Client
	url      string
	json     bool
	gzip     bool
	body     []byte
	zipped   []byte
	protoOpt proto.MarshalOptions
}

func newHTTPExporter(o *OpenTelemetry, tlsCfg *tls.Config) (*httpExporter, error) {
	if tlsCfg == nil && o.Coralogix != nil {
		tlsCfg = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	opts := httpout.Options{TLS: tlsCfg, NoEnvironmentProxy: !o.UseSystemProxy}
	if !o.UseSystemProxy {
		opts.Proxy = o.HTTPProxyURL
	}
	tr, err := httpout.NewTransport(opts)
	if err != nil {
		return nil, err
	}
	return &httpExporter{client: &http.Client{Transport: tr}, url: o.ServiceAddress,
		json: o.EncodingType == "json", gzip: o.Compression == "gzip"}, nil
}

// answer is what an HTTP export's answer says.
type answer struct {
	rejected int64
	msg      string
	err      error
}

func (e *httpExporter) export(ctx context.Context, req *colmetricspb.ExportMetricsServiceRequest, headers map[string]string) (int64, string, error) {
	var err error
	if e.json {
		e.body, err = protojson.MarshalOptions{UseEnumNumbers: true}.MarshalAppend(e.body[:0], req)
	} else {
		e.body, err = e.protoOpt.MarshalAppend(e.body[:0], req)
	}
	if err != nil {
		return 0, "", err
	}
	body := e.body
	if e.gzip {
		e.zipped = httpout.AppendGzip(e.zipped[:0], e.body)
		body = e.zipped
	}
	a, err := httpout.Send(ctx, e.client, e.url, body, 0, func(r *http.Request) {
		httpout.SetHeaders(r, headers)
		r.Header.Set("Content-Type", e.contentType())
		r.Header.Set("User-Agent", userAgent)
		if e.gzip {
			r.Header.Set("Content-Encoding", "gzip")
		}
	}, e.read)
	if err != nil {
		return 0, "", httpout.Retryable(err, nil)
	}
	return a.rejected, a.msg, a.err
}

func (e *httpExporter) contentType() string {
	if e.json {
		return "application/json"
	}
	return "application/x-protobuf"
}

// read reads an answer: an ExportMetricsServiceResponse on success, a google.rpc.Status
// otherwise, each in the encoding its Content-Type names.
func (e *httpExporter) read(resp *http.Response) answer {
	b := httpout.ReadAnswer(resp.Body, httpout.MaxMessage)
	isJSON := strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json")
	if resp.StatusCode/100 == 2 {
		var r colmetricspb.ExportMetricsServiceResponse
		if unmarshal(b, isJSON, &r) == nil {
			ps := r.GetPartialSuccess()
			return answer{rejected: ps.GetRejectedDataPoints(), msg: ps.GetErrorMessage()}
		}
		return answer{}
	}
	msg := string(bytes.TrimSpace(b))
	var st status.Status
	if unmarshal(b, isJSON, &st) == nil && st.GetMessage() != "" {
		msg = st.GetMessage()
	}
	return answer{err: classifyHTTP(resp.StatusCode, resp.Header, strings.ToValidUTF8(msg, ""))}
}

func unmarshal(b []byte, isJSON bool, m proto.Message) error {
	if isJSON {
		return protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(b, m)
	}
	return proto.Unmarshal(b, m)
}

func (e *httpExporter) close() error {
	e.client.CloseIdleConnections()
	return nil
}
