"""Send a few metrics with the OpenTelemetry Python SDK's OTLP exporter, the client of
inputs.opentelemetry's tests (internal/testserver/otelpython.go).

    send.py ENDPOINT [grpc|http] [none|gzip]

ENDPOINT is host:port of an OTLP/gRPC receiver (grpc, the default), or the URL of an
OTLP/HTTP receiver's metrics path, http://host:port/v1/metrics (http: the SDK's
HTTP/protobuf exporter); without TLS either way. The third argument is the exporter's
compression, none by default. Prints "ok" once the export succeeded; exits 1 otherwise.
"""
import sys

import grpc

from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter as GRPCExporter
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter as HTTPExporter
from opentelemetry.metrics import Observation
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource


def exporter_for(endpoint, protocol, compression):
    if protocol == "http":
        return HTTPExporter(endpoint=endpoint, timeout=10,
                            compression=Compression.Gzip if compression == "gzip" else Compression.NoCompression)
    return GRPCExporter(endpoint=endpoint, insecure=True, timeout=10,
                        compression=grpc.Compression.Gzip if compression == "gzip" else None)


def main(endpoint, protocol="grpc", compression="none"):
    exporter = exporter_for(endpoint, protocol, compression)
    reader = PeriodicExportingMetricReader(exporter, export_interval_millis=3600000)
    provider = MeterProvider(resource=Resource.create({"service.name": "morse-test"}), metric_readers=[reader])
    meter = provider.get_meter("morse.test", "1.2.3")
    meter.create_counter("requests").add(5, {"path": "/"})
    meter.create_up_down_counter("queue_depth").add(-3)
    latency = meter.create_histogram("latency", unit="ms")
    for v in (3, 7, 30):
        latency.record(v, {"path": "/"})
    meter.create_observable_gauge("temperature", callbacks=[lambda _: [Observation(21.5, {"room": "a"})]])
    ok = provider.force_flush(timeout_millis=15000)
    provider.shutdown()
    if not ok:
        print("export failed", file=sys.stderr)
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main(*sys.argv[1:4])
