package opentelemetry

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/url"

	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"golang.org/x/net/proxy"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	_ "google.golang.org/grpc/encoding/gzip" // registers the gzip compressor of compression = "gzip"
	"google.golang.org/grpc/metadata"
)

// userAgent names morse to the receiver.
const userAgent = "morse"

// grpcExporter exports over one gRPC connection, which gRPC dials and redials itself.
type grpcExporter struct {
	conn   *grpc.ClientConn
	client colmetricspb.MetricsServiceClient
	call   []grpc.CallOption
}

func newGRPCExporter(o *OpenTelemetry, tlsCfg *tls.Config) (*grpcExporter, error) {
	creds := insecure.NewCredentials()
	switch {
	case tlsCfg != nil && !o.Disabled():
		creds = credentials.NewTLS(tlsCfg)
	case o.Coralogix != nil:
		creds = credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12})
	}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(creds), grpc.WithUserAgent(userAgent)}
	if o.UseProxy {
		dial, err := socksDialer(o.ProxyURL)
		if err != nil {
			return nil, err
		}
		opts = append(opts, grpc.WithContextDialer(dial))
	}
	conn, err := grpc.NewClient(o.ServiceAddress, opts...)
	if err != nil {
		return nil, fmt.Errorf("opentelemetry: %w", err)
	}
	e := &grpcExporter{conn: conn, client: colmetricspb.NewMetricsServiceClient(conn)}
	if o.Compression == "gzip" {
		e.call = append(e.call, grpc.UseCompressor("gzip"))
	}
	return e, nil
}

func (e *grpcExporter) export(ctx context.Context, req *colmetricspb.ExportMetricsServiceRequest, headers map[string]string) (int64, string, error) {
	if len(headers) > 0 {
		ctx = metadata.NewOutgoingContext(ctx, metadata.New(headers))
	}
	resp, err := e.client.Export(ctx, req, e.call...)
	if err != nil {
		return 0, "", classifyGRPC(err)
	}
	ps := resp.GetPartialSuccess()
	return ps.GetRejectedDataPoints(), ps.GetErrorMessage(), nil
}

func (e *grpcExporter) close() error { return e.conn.Close() }

// checkSocks checks proxy_url: a SOCKS5 proxy, the one kind of Telegraf's TCP proxy that
// morse dials.
func checkSocks(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if u.Scheme != "socks5" && u.Scheme != "socks5h" {
		return fmt.Errorf("use_proxy needs a socks5:// proxy_url, got %q", s)
	}
	return nil
}

// socksDialer dials through the SOCKS5 proxy of proxy_url.
func socksDialer(s string) (func(context.Context, string) (net.Conn, error), error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("proxy_url: %w", err)
	}
	d, err := proxy.FromURL(u, &net.Dialer{})
	if err != nil {
		return nil, fmt.Errorf("proxy_url: %w", err)
	}
	cd, ok := d.(proxy.ContextDialer)
	if !ok {
		return nil, fmt.Errorf("proxy_url: %s cannot dial with a context", u.Scheme)
	}
	return func(ctx context.Context, addr string) (net.Conn, error) { return cd.DialContext(ctx, "tcp", addr) }, nil
}
