// Command otelcol is the OpenTelemetry Collector's own OTLP receiver
// (go.opentelemetry.io/collector/receiver/otlpreceiver), built from its published modules,
// feeding a consumer that appends what it receives to a file as OTLP JSON, one request a
// line: the real OTLP server that morse's outputs.opentelemetry is tested against
// (internal/testserver/otelcol.go). scripts/ensure-otelcol.sh builds it once into the cache.
//
// With -send URL it is a client instead: the collector's otlphttp exporter
// (go.opentelemetry.io/collector/exporter/otlphttpexporter) sends one request of a few
// metrics (send.go) to URL, an OTLP/HTTP receiver's metrics path, in -encoding "proto" or
// "json", gzipped as the exporter does by default, prints "ok" and exits; the real OTLP/HTTP
// client that morse's inputs.opentelemetry is tested against.
//
// -fail makes the consumer refuse requests as the collector's pipeline would:
// "permanent" (consumererror.NewPermanent: gRPC InvalidArgument, HTTP 400) or "retryable"
// (a plain error: gRPC Unavailable, HTTP 503), for the first -fail-count requests (0: all).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configgrpc"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/receiver/receivertest"
)

func main() {
	grpcAddr := flag.String("grpc", "", "gRPC listen address (empty: off)")
	httpAddr := flag.String("http", "", "HTTP listen address (empty: off)")
	out := flag.String("out", "", "file to append received metrics to, as OTLP JSON lines")
	fail := flag.String("fail", "", `refuse requests: "permanent" or "retryable"`)
	failCount := flag.Int("fail-count", 0, "refuse only the first N requests (0: every request)")
	sendURL := flag.String("send", "", "send a few metrics with the otlphttp exporter to this URL and exit")
	encoding := flag.String("encoding", "proto", `the otlphttp exporter's encoding: "proto" or "json"`)
	flag.Parse()
	if *sendURL != "" {
		if err := send(*sendURL, *encoding); err != nil {
			fmt.Fprintln(os.Stderr, "otelcol:", err)
			os.Exit(1)
		}
		fmt.Println("ok")
		return
	}
	if err := run(*grpcAddr, *httpAddr, *out, *fail, *failCount); err != nil {
		fmt.Fprintln(os.Stderr, "otelcol:", err)
		os.Exit(1)
	}
}

func run(grpcAddr, httpAddr, out, fail string, failCount int) error {
	f, err := os.OpenFile(out, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	var mu sync.Mutex
	seen := 0
	next, err := consumer.NewMetrics(func(_ context.Context, md pmetric.Metrics) error {
		mu.Lock()
		defer mu.Unlock()
		seen++
		if fail != "" && (failCount == 0 || seen <= failCount) {
			err := fmt.Errorf("refused request %d on purpose", seen)
			if fail == "permanent" {
				return consumererror.NewPermanent(err)
			}
			return err
		}
		b, err := (&pmetric.JSONMarshaler{}).MarshalMetrics(md)
		if err != nil {
			return consumererror.NewPermanent(err)
		}
		_, err = f.Write(append(b, '\n'))
		return err
	})
	if err != nil {
		return err
	}
	factory := otlpreceiver.NewFactory()
	cfg := factory.CreateDefaultConfig().(*otlpreceiver.Config)
	if grpcAddr == "" {
		cfg.Protocols.GRPC = configoptional.None[configgrpc.ServerConfig]()
	} else {
		g := cfg.Protocols.GRPC.GetOrInsertDefault()
		g.NetAddr.Endpoint = grpcAddr
	}
	if httpAddr == "" {
		cfg.Protocols.HTTP = configoptional.None[otlpreceiver.HTTPConfig]()
	} else {
		h := cfg.Protocols.HTTP.GetOrInsertDefault()
		h.ServerConfig.NetAddr.Endpoint = httpAddr
	}
	set := receivertest.NewNopSettings(component.MustNewType("otlp"))
	rcv, err := factory.CreateMetrics(context.Background(), set, cfg, next)
	if err != nil {
		return err
	}
	if err := rcv.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		return err
	}
	fmt.Println("ready")
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	return errors.Join(rcv.Shutdown(context.Background()), f.Sync())
}
