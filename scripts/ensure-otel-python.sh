#!/usr/bin/env bash
# ensure-otel-python.sh: a Python virtual environment with the OpenTelemetry Python SDK and
# its OTLP exporters (gRPC and HTTP/protobuf) from PyPI, for the tests of inputs.opentelemetry,
# which run testdata/otel-python/send.py as the client (internal/testserver/otelpython.go):
#
#   ${MORSE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/morse}/otel-python/1.45.2/bin/python
#
# Idempotent: it installs only when the environment is missing or cannot import the SDK.
set -euo pipefail

VERSION=1.45.2
CACHE="${MORSE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/morse}"
VENV="$CACHE/otel-python/$VERSION"

say() { echo "ensure-otel-python: $*" >&2; }
ok() {
	"$VENV/bin/python" -c 'import opentelemetry.sdk.metrics, opentelemetry.exporter.otlp.proto.grpc.metric_exporter, opentelemetry.exporter.otlp.proto.http.metric_exporter' 2>/dev/null
}

if [ -x "$VENV/bin/python" ] && ok; then
	say "OpenTelemetry Python SDK $VERSION ready in $VENV"
	exit 0
fi
command -v python3 >/dev/null || { say "ERROR: python3 is needed"; exit 1; }
rm -rf "$VENV"
python3 -m venv "$VENV"
"$VENV/bin/pip" install --quiet --disable-pip-version-check \
	"opentelemetry-sdk==$VERSION" "opentelemetry-exporter-otlp==$VERSION"
ok || { say "ERROR: the SDK does not import after installing"; exit 1; }
say "OpenTelemetry Python SDK $VERSION ready in $VENV"
