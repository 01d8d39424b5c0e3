"""Send a few metrics with the OpenTelemetry Python SDK's OTLP exporter, the client of
inputs.opentelemetry's tests (internal/testserver/otelpython.go).

    send.py ENDPOINT

ENDPOINT is host:port of an OTLP/gRPC receiver, without TLS. Prints "ok" once the export
succeeded; exits 1 otherwise.
"""
import sys

from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter
from opentelemetry.metrics import Observation
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource


def main(endpoint):
    exporter = OTLPMetricExporter(endpoint=endpoint, insecure=True, timeout=10)
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
    main(sys.argv[1])
