package opentelemetry

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"strings"
	"time"

	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/genproto/googleapis/rpc/code"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/throttle"
	"github.com/morse-agent/morse/plugins/common/otlpmetrics"
)

// OTLP/HTTP (https://opentelemetry.io/docs/specs/otlp/#otlphttp): a POST of an export
// request to /v1/metrics, binary protobuf (application/x-protobuf) or OTLP JSON
// (application/json), gzipped or not. The answers are the specification's: 200 with an
// export response, its partial success naming the data points refused; 400 with a
// google.rpc.Status for a body that does not decode; 413 above max_msg_size; 415 for
// another content type or encoding; 405 for another method; 404 for another path. Answers
// are encoded as their request was.

// The content types of OTLP/HTTP.
const (
	contentProtobuf = "application/x-protobuf"
	contentJSON     = "application/json"
)

// httpBodyTimeout bounds the reading of a request, headers and body: a body of
// max_msg_size's default (4 MB) arrives in it at 150 kB/s, and a client that trickles
// slower does not hold a connection for ever.
const httpBodyTimeout = 30 * time.Second

// httpShutdownGrace is how long Stop lets requests in flight finish before it closes them.
const httpShutdownGrace = 5 * time.Second

// jsonIn reads OTLP JSON, whose receivers must ignore the fields they do not know.
var jsonIn = protojson.UnmarshalOptions{DiscardUnknown: true}

// httpServer is the OTLP/HTTP receiver of one input.
type httpServer struct {
	srv  *http.Server
	addr net.Addr
	done chan struct{} // closed when Serve has returned
}

// startHTTP binds http_service_address and serves OTLP/HTTP on it until stop.
func (o *OpenTelemetry) startHTTP(acc morse.Accumulator, tlsCfg *tls.Config) (*httpServer, error) {
	ln, err := net.Listen("tcp", o.HTTPServiceAddress)
	if err != nil {
		return nil, fmt.Errorf("opentelemetry: http_service_address: %w", err)
	}
	h := &httpHandler{schema: o.schema, acc: acc, limit: int64(o.maxMsgSize()), log: o.logger(), refused: throttle.New(time.Minute)}
	mux := http.NewServeMux()
	mux.Handle("/v1/metrics", h)
	s := &httpServer{addr: ln.Addr(), done: make(chan struct{})}
	headerTimeout := time.Duration(o.Timeout)
	if headerTimeout <= 0 {
		headerTimeout = httpBodyTimeout
	}
	s.srv = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: headerTimeout,
		ReadTimeout:       httpBodyTimeout,
		IdleTimeout:       httpBodyTimeout,
		MaxHeaderBytes:    64 << 10,
		// TLS handshake failures and the like are the client's problem: debug level.
		ErrorLog: slog.NewLogLogger(o.logger().Handler(), slog.LevelDebug),
	}
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
	}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			acc.AddError(fmt.Errorf("opentelemetry: serving OTLP/HTTP stopped: %w", err))
		}
	}()
	o.logger().Info("listening", "address", s.addr.String(), "protocol", "OTLP/HTTP", "tls", tlsCfg != nil)
	return s, nil
}

// stop lets requests in flight finish for a few seconds, closes every connection and
// returns once the server's goroutine has ended.
func (s *httpServer) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), httpShutdownGrace)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		_ = s.srv.Close()
	}
	<-s.done
}

// httpHandler answers POST /v1/metrics.
type httpHandler struct {
	schema  otlpmetrics.Schema
	acc     morse.Accumulator
	limit   int64
	log     *slog.Logger
	refused *throttle.Throttle
}

// ServeHTTP decodes one export request and answers as the specification says.
func (h *httpHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		h.fail(w, r, "", http.StatusMethodNotAllowed, fmt.Errorf("method %s: OTLP/HTTP takes POST", r.Method))
		return
	}
	ct, err := contentType(r.Header.Get("Content-Type"))
	if err != nil {
		h.fail(w, r, "", http.StatusUnsupportedMediaType, err)
		return
	}
	body, status, err := h.readBody(w, r)
	if err != nil {
		h.fail(w, r, ct, status, err)
		return
	}
	var req colmetricspb.ExportMetricsServiceRequest
	if ct == contentJSON {
		if body, err = jsonIDsToBase64(body); err == nil {
			err = jsonIn.Unmarshal(body, &req)
		}
	} else {
		err = proto.Unmarshal(body, &req)
	}
	if err != nil {
		h.fail(w, r, ct, http.StatusBadRequest, fmt.Errorf("the body is not an OTLP export request: %w", err))
		return
	}
	rejected, err := otlpmetrics.Decode(&req, h.schema, h.acc.AddMetric)
	resp := &colmetricspb.ExportMetricsServiceResponse{}
	if rejected > 0 {
		resp.PartialSuccess = &colmetricspb.ExportMetricsPartialSuccess{RejectedDataPoints: int64(rejected), ErrorMessage: err.Error()}
		h.acc.AddError(fmt.Errorf("opentelemetry: refused %d data points: %w", rejected, err))
	}
	write(w, ct, http.StatusOK, resp)
}

// contentType is the OTLP content type of a request's Content-Type, or an error for
// another.
func contentType(header string) (string, error) {
	mt, _, err := mime.ParseMediaType(header)
	if err == nil && (mt == contentProtobuf || mt == contentJSON) {
		return mt, nil
	}
	return "", fmt.Errorf("unsupported content type %q: send %s or %s", header, contentProtobuf, contentJSON)
}

// readBody reads the body whole, decompressed, up to the limit, which holds for the bytes
// that arrive and for those they decompress to. The error comes with its status code.
func (h *httpHandler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, int, error) {
	var src io.Reader = http.MaxBytesReader(w, r.Body, h.limit)
	switch enc := strings.ToLower(r.Header.Get("Content-Encoding")); enc {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(src)
		if err != nil {
			return nil, readStatus(err), fmt.Errorf("the gzip body: %w", err)
		}
		defer zr.Close()
		src = zr
	default:
		return nil, http.StatusUnsupportedMediaType, fmt.Errorf("unsupported content encoding %q: send identity or gzip", enc)
	}
	var buf bytes.Buffer
	if r.ContentLength > 0 && r.ContentLength <= h.limit {
		buf.Grow(int(r.ContentLength))
	}
	n, err := buf.ReadFrom(io.LimitReader(src, h.limit+1))
	if err != nil {
		return nil, readStatus(err), fmt.Errorf("reading the body: %w", err)
	}
	if n > h.limit {
		return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("the body decompresses to more than max_msg_size (%d bytes)", h.limit)
	}
	return buf.Bytes(), 0, nil
}

// readStatus is the answer to a body that could not be read: 413 past the limit, 400 else.
func readStatus(err error) int {
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusBadRequest
}

// fail answers a refused request with a google.rpc.Status in the request's content type
// (protobuf when it had none of OTLP's), and logs it, throttled.
func (h *httpHandler) fail(w http.ResponseWriter, r *http.Request, ct string, statusCode int, err error) {
	h.refused.Log(h.log, slog.LevelWarn, "refused an OTLP/HTTP request", "status", statusCode, "from", r.RemoteAddr, "error", err)
	if ct == "" {
		ct = contentProtobuf
	}
	c := code.Code_INVALID_ARGUMENT
	if statusCode == http.StatusMethodNotAllowed || statusCode == http.StatusUnsupportedMediaType {
		c = code.Code_UNIMPLEMENTED
	}
	write(w, ct, statusCode, &status.Status{Code: int32(c), Message: err.Error()})
}

// write answers with m encoded in ct.
func write(w http.ResponseWriter, ct string, statusCode int, m proto.Message) {
	var b []byte
	if ct == contentJSON {
		b, _ = protojson.Marshal(m)
	} else {
		b, _ = proto.Marshal(m)
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(statusCode)
	_, _ = w.Write(b)
}
