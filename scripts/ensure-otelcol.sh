#!/usr/bin/env bash
# ensure-otelcol.sh: build the OpenTelemetry Collector's OTLP receiver and otlphttp exporter
# (testdata/otelcol, a module of its own with the collector's published modules at v0.165.0)
# where the tests of outputs.opentelemetry and inputs.opentelemetry look for it
# (internal/testserver/otelcol.go):
#
#   ${MORSE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/morse}/otelcol/0.165.0/otelcol
#
# The tests run it as a child process on free loopback ports; nothing here starts it.
# Idempotent: it builds again only when testdata/otelcol changed since the last build. The
# modules come from the Go module proxy into the Go module cache, outside the repository;
# the first build takes one to two minutes.
set -euo pipefail

VERSION=0.165.0
CACHE="${MORSE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/morse}"
DEST_DIR="$CACHE/otelcol/$VERSION"
DEST="$DEST_DIR/otelcol"
SRC="$(cd "$(dirname "$0")/../testdata/otelcol" && pwd)"

say() { echo "ensure-otelcol: $*" >&2; }

fresh=1
if [ -x "$DEST" ]; then
	for f in "$SRC"/*.go "$SRC"/go.mod "$SRC"/go.sum; do
		if [ "$f" -nt "$DEST" ]; then fresh=0; fi
	done
else
	fresh=0
fi
if [ "$fresh" = 1 ]; then
	say "collector's OTLP receiver $VERSION ready at $DEST"
	exit 0
fi

mkdir -p "$DEST_DIR"
say "building the collector's OTLP receiver $VERSION (first time: one to two minutes)"
(cd "$SRC" && CGO_ENABLED=0 GOFLAGS=-mod=readonly go build -trimpath -o "$DEST.tmp" .)
mv "$DEST.tmp" "$DEST"
say "collector's OTLP receiver $VERSION ready at $DEST"
